"""Tool arguments against a tool's JSON Schema, in the words canarykit's real tools use
(``invalid arguments for <name>: <message> (at <path>)``): the real tools, the task suite's
reference plans and the canaries' twins all say it so."""

from __future__ import annotations

import warnings
from typing import Any, Final

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from jsonschema.validators import validator_for

from .definitions import REAL_TOOLS


def schema_validator_class(schema: dict[str, Any]) -> Any:
    """The jsonschema validator class for ``schema`` (latest draft when ``$schema`` is unknown)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return validator_for(schema)


def schema_problem(name: object, validator: Any, args: Any) -> str | None:
    """The most relevant way ``args`` fails ``validator`` (``None`` when it does not), as
    ``invalid arguments for <name>: <message> (at <path>)``."""
    err = best_match(validator.iter_errors(args))
    if err is None:
        return None
    where = "/".join(str(p) for p in err.absolute_path)
    return f"invalid arguments for {name}: {err.message}" + (f" (at {where})" if where else "")


def not_an_object(name: object, args: Any) -> str | None:
    """The refusal of arguments that are not a JSON object (``None`` when they are one)."""
    if isinstance(args, dict):
        return None
    return f"arguments for {name} must be a JSON object, got {type(args).__name__}"


_VALIDATORS: Final[dict[str, Draft202012Validator]] = {
    t.name: Draft202012Validator(t.input_schema) for t in REAL_TOOLS
}
for _t in REAL_TOOLS:
    Draft202012Validator.check_schema(_t.input_schema)




def validation_error(name: str, args: Any) -> str | None:
    """Why ``args`` is not a valid argument object for real tool ``name`` (``None`` when it is)."""
    return not_an_object(name, args) or schema_problem(name, _VALIDATORS[name], args)
