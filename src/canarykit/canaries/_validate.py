"""Validation of MCP tool definitions (hostile input: every error names the tool and field)."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Iterable
from typing import Any

from jsonschema.exceptions import SchemaError
from jsonschema.validators import validator_for

from ..errors import InputError
from ._text import MCP_NAME_RE


def _where(path: Iterable[Any]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def schema_validator_class(schema: dict[str, Any]) -> Any:
    """The jsonschema validator class for ``schema`` (latest draft when ``$schema`` is unknown)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return validator_for(schema)


def check_input_schema(schema: Any, source: str, field: str) -> None:
    """Raise :class:`InputError` unless ``schema`` is a valid JSON Schema of ``type: object``."""
    if not isinstance(schema, dict):
        raise InputError(
            source, field, f"expected a JSON Schema object, got {type(schema).__name__}"
        )
    if "$schema" in schema and not isinstance(schema["$schema"], str):
        raise InputError(source, f"{field}.$schema", "expected a meta-schema URI string")
    try:
        schema_validator_class(schema).check_schema(schema)
    except SchemaError as exc:
        raise InputError(
            source, field + _where(exc.absolute_path), f"not a valid JSON Schema: {exc.message}"
        ) from exc
    if schema.get("type") != "object":
        raise InputError(
            source,
            f"{field}.type",
            f'a tool\'s inputSchema must have type "object", got {schema.get("type")!r}',
        )
    props = schema.get("properties", {})
    if not isinstance(props, dict):  # pragma: no cover - check_schema rejects this already
        raise InputError(source, f"{field}.properties", "expected an object")


def validate_tool_defs(obj: Any, source: str = "<tools>") -> list[dict[str, Any]]:
    """Check a list of MCP tool definitions and return normalized deep copies.

    Each returned dict has exactly ``name``, ``description`` and ``inputSchema`` (other
    keys such as ``annotations`` or ``outputSchema`` are ignored).

    Rules (decisions documented here):

    - ``obj`` must be a list of objects (a ``{"tools": [...]}`` wrapper is unwrapped by
      :func:`~canarykit.canaries.generate_command`, not here);
    - ``name``: required, an MCP tool name ``^[A-Za-z0-9_.-]{1,128}$``, unique in the list
      (canary names are always in the function-calling charset ``^[a-zA-Z0-9_-]{1,64}$``);
    - ``description``: optional in MCP, so a missing one is read as ``""``; when present it
      must be a string. An empty description is allowed: canary descriptions are then
      built from the tool's name, so they are never empty;
    - ``inputSchema``: required (MCP requires it, so a missing one is an error rather
      than a guessed empty schema), a valid JSON Schema for its draft, with
      ``type: "object"``.
    """
    if not isinstance(obj, list):
        raise InputError(
            source,
            "tools",
            f"expected a JSON list of MCP tool definitions, got {type(obj).__name__}",
        )
    seen: dict[str, int] = {}
    out: list[dict[str, Any]] = []
    for i, tool in enumerate(obj):
        if not isinstance(tool, dict):
            raise InputError(
                source, f"tools[{i}]", f"expected an object, got {type(tool).__name__}"
            )
        name = tool.get("name")
        if name is None:
            raise InputError(source, f"tools[{i}].name", "missing (every tool needs a name)")
        if not isinstance(name, str) or not MCP_NAME_RE.match(name):
            raise InputError(
                source,
                f"tools[{i}].name",
                f"expected an MCP tool name (1-128 characters of A-Z a-z 0-9 _ - .), got {name!r}",
            )
        label = f"tools[{i}] ({name})"
        if name in seen:
            raise InputError(
                source, f"{label}.name", f"duplicate tool name (also tools[{seen[name]}])"
            )
        seen[name] = i
        description = tool.get("description", "")
        if description is None:
            description = ""
        if not isinstance(description, str):
            raise InputError(
                source,
                f"{label}.description",
                f"expected a string, got {type(description).__name__}",
            )
        if "inputSchema" not in tool:
            raise InputError(
                source, f"{label}.inputSchema", "missing (MCP requires an inputSchema object)"
            )
        schema = tool["inputSchema"]
        check_input_schema(schema, source, f"{label}.inputSchema")
        out.append({"name": name, "description": description, "inputSchema": copy.deepcopy(schema)})
    return out
