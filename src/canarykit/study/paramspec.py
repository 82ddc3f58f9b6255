"""The schema of params.yaml (``resources/params.schema.yaml``): the resource, its defaults,
and validation of a mapping against it, with errors that name the key.

A leaf: it imports nothing of the package but its errors, so any module may read a
section's defaults from here (``agent.max_turns``, ...) instead of repeating them in code.
:mod:`canarykit.study.config` validates whole files with it and adds the cross-key checks.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

import jsonschema
import yaml

from ..errors import ConfigError, close_match

SCHEMA_RESOURCE = "params.schema.yaml"


@cache
def params_schema() -> dict[str, Any]:
    """The JSON schema of params.yaml (every key has a description and a default)."""
    text = resources.files("canarykit.resources").joinpath(SCHEMA_RESOURCE).read_text("utf-8")
    # libyaml's safe loader when PyYAML has it (the same mapping, ~8x faster: every agent job
    # reads the schema once for its AgentConfig)
    schema: dict[str, Any] = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return schema


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = dict(root["$defs"][ref.split("/")[-1]])
        target.update({k: v for k, v in node.items() if k != "$ref"})
        return target
    return node


def fill_defaults(value: Any, node: dict[str, Any], root: dict[str, Any]) -> Any:
    """``value`` with every absent key of schema ``node`` set to its default (in place, nested)."""
    node = _resolve(node, root)
    if isinstance(value, dict):
        for key, sub in node.get("properties", {}).items():
            sub_r = _resolve(sub, root)
            if key not in value and "default" in sub_r:
                value[key] = copy.deepcopy(sub_r["default"])
            if key in value:
                value[key] = fill_defaults(value[key], sub_r, root)
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        return [fill_defaults(v, node["items"], root) for v in value]
    return value


def _key_path(error: jsonschema.ValidationError) -> str:
    parts: list[str] = []
    for p in error.absolute_path:
        if isinstance(p, int):
            parts.append(f"[{p}]")
        else:
            parts.append(("." if parts else "") + str(p))
    return "".join(parts) or "<root>"


def _unexpected(error: jsonschema.ValidationError) -> list[str]:
    """The keys an ``additionalProperties`` error is about (none for any other error)."""
    if error.validator != "additionalProperties" or not isinstance(error.instance, dict):
        return []
    known = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
    return sorted(str(k) for k in error.instance if k not in known)


def _message(error: jsonschema.ValidationError) -> str:
    if error.validator == "additionalProperties":
        known = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
        extra = sorted(k for k in (error.instance if isinstance(error.instance, dict) else {}) if k not in known)
        hints = [(k, m) for k in extra if (m := close_match(k, known))]
        if len(extra) == 1 and hints:
            hint = f" (did you mean {hints[0][1]!r}?)"
        else:
            hint = f" ({'; '.join(f'{k!r}: did you mean {m!r}?' for k, m in hints)})" if hints else ""
        return f"{error.message}{hint} (see the key descriptions in src/canarykit/resources/{SCHEMA_RESOURCE})"
    if error.validator == "enum" and isinstance(error.instance, str):
        match = close_match(error.instance, [str(v) for v in error.validator_value or []])
        return f"{error.message} (did you mean {match!r}?)" if match else error.message
    return error.message


def raise_schema_errors(schema: Mapping[str, Any], value: Any, source: str, prefix: str = "") -> None:
    """Validate ``value`` against ``schema``; raise one :class:`ConfigError` for all its errors
    (the first names its key, the others follow one line each). ``prefix``: the keys' path
    above ``value`` (``agent.``)."""

    def key(error: jsonschema.ValidationError) -> str:
        path = _key_path(error)
        extra = _unexpected(error)
        if len(extra) == 1:  # the unexpected key itself, so the error points at its line
            path = extra[0] if path == "<root>" else f"{path}.{extra[0]}"
        if not prefix:
            return path
        return prefix.rstrip(".") if path == "<root>" else prefix + path

    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(value), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        first = errors[0]
        lines = [f"{key(e)}: {_message(e)}" for e in errors]
        raise ConfigError(source, key(first), _message(first) + (
            "" if len(lines) == 1 else "\n  also: " + "\n  also: ".join(lines[1:])
        ))


def validate_section(section: str, value: Mapping[str, Any], source: str = "params.yaml") -> dict[str, Any]:
    """One top-level section of params.yaml (e.g. ``agent``) on its own: a copy of ``value``
    with the schema's defaults filled in, validated against that section's schema; an error
    names the key under the section (``params.yaml: agent.concurrency: 0 is less than ...``)."""
    schema = params_schema()
    node = _resolve(schema["properties"][section], schema)
    filled = fill_defaults(copy.deepcopy(dict(value)), node, schema)
    raise_schema_errors({**node, "$defs": schema.get("$defs", {})}, filled, source, prefix=f"{section}.")
    return filled
