"""The paper's granularity-case derivation (``canaries.fit: paper``), kept verbatim.

Name-based tables (``city`` -> ``Mumbai``, ``path`` -> ``notes.txt``, ``query`` ->
``quarterly earnings report``) fill whatever the schema does not give. These values are
placeholders on foreign servers (issue 12); ``fit: fitted`` draws cases from the schema
instead (:mod:`._cases`). Kept so that ``fit: paper`` reproduces the paper's pool exactly.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from ._cases import resolve as _resolve

#: Plausible string values by parameter name (whole name first, then its last/first token).
STRING_EXAMPLES: Final[Mapping[str, str]] = {
    "city": "Mumbai",
    "location": "Mumbai",
    "place": "Mumbai",
    "town": "Mumbai",
    "country": "India",
    "query": "quarterly earnings report",
    "q": "quarterly earnings report",
    "search": "quarterly earnings report",
    "keywords": "quarterly earnings report",
    "term": "quarterly earnings report",
    "topic": "quarterly earnings report",
    "path": "notes.txt",
    "file": "notes.txt",
    "filename": "notes.txt",
    "filepath": "notes.txt",
    "file_path": "notes.txt",
    "directory": "docs",
    "dir": "docs",
    "folder": "docs",
    "url": "https://example.com",
    "uri": "https://example.com",
    "link": "https://example.com",
    "email": "user@example.com",
    "date": "2024-01-15",
    "from_unit": "mile",
    "to_unit": "km",
    "unit": "mile",
    "from_currency": "USD",
    "to_currency": "JPY",
    "base": "USD",
    "currency": "USD",
    "symbol": "NVDA",
    "ticker": "NVDA",
    "language": "en",
    "lang": "en",
    "locale": "en",
    "expression": "2 + 2",
    "expr": "2 + 2",
    "formula": "2 + 2",
    "sql": "SELECT 1",
    "statement": "SELECT 1",
    "table": "orders",
    "owner": "octocat",
    "org": "octocat",
    "user": "octocat",
    "username": "octocat",
    "repo": "hello-world",
    "repository": "hello-world",
    "channel": "general",
    "message": "Hello",
    "text": "Hello",
    "body": "Hello",
    "content": "Hello",
    "title": "Weekly update",
    "subject": "Weekly update",
}

_FORMAT_EXAMPLES: Final[Mapping[str, str]] = {
    "date": "2024-01-15",
    "date-time": "2024-01-15T03:00:00Z",
    "time": "03:00:00Z",
    "email": "user@example.com",
    "uri": "https://example.com",
    "url": "https://example.com",
    "hostname": "example.com",
    "ipv4": "192.0.2.1",
    "uuid": "00000000-0000-4000-8000-000000000000",
}


def _string_example(param: str, spec: Mapping[str, Any]) -> str:
    fmt = spec.get("format")
    if isinstance(fmt, str) and fmt in _FORMAT_EXAMPLES:
        value = _FORMAT_EXAMPLES[fmt]
    else:
        key = param.lower()
        tokens = [t for t in key.replace("-", "_").split("_") if t]
        value = STRING_EXAMPLES.get(key) or next(
            (STRING_EXAMPLES[t] for t in (tokens[-1:] + tokens[:1]) if t in STRING_EXAMPLES),
            "default",
        )
    min_len, max_len = spec.get("minLength"), spec.get("maxLength")
    if isinstance(min_len, int) and len(value) < min_len:
        value = value + "x" * (min_len - len(value))
    if isinstance(max_len, int) and len(value) > max_len:
        value = value[:max_len]
    return value


#: Plausible numbers by parameter name; any other number is 1 (then clamped to the bounds).
NUMBER_EXAMPLES: Final[Mapping[str, int]] = {"days": 5, "value": 5, "amount": 5}


def _number_example(param: str, spec: Mapping[str, Any], integer: bool) -> int | float:
    value: float = NUMBER_EXAMPLES.get(param.lower(), 1)
    lo, hi = spec.get("minimum"), spec.get("maximum")
    xlo, xhi = spec.get("exclusiveMinimum"), spec.get("exclusiveMaximum")
    if isinstance(lo, int | float) and not isinstance(lo, bool) and value < lo:
        value = lo
    if isinstance(xlo, int | float) and not isinstance(xlo, bool) and value <= xlo:
        value = xlo + 1
    if isinstance(hi, int | float) and not isinstance(hi, bool) and value > hi:
        value = hi
    if isinstance(xhi, int | float) and not isinstance(xhi, bool) and value >= xhi:
        value = xhi - 1
    if integer:
        return int(value)
    return int(value) if float(value).is_integer() else value


def example_value(param: str, spec: Any, root: Mapping[str, Any], depth: int = 0) -> Any:
    """A deterministic value for one parameter: default, first enum, first example, else by type."""
    spec = _resolve(spec, root)
    if not isinstance(spec, dict):
        return "default"
    for key in ("const", "default"):
        if key in spec:
            return copy.deepcopy(spec[key])
    for key in ("enum", "examples"):
        options = spec.get(key)
        if isinstance(options, list) and options:
            return copy.deepcopy(options[0])
    typ = spec.get("type")
    if isinstance(typ, list):
        typ = next((t for t in typ if t != "null"), "null")
    if typ is None:
        typ = "object" if "properties" in spec else "array" if "items" in spec else "string"
    if typ == "string":
        return _string_example(param, spec)
    if typ in ("number", "integer"):
        return _number_example(param, spec, typ == "integer")
    if typ == "boolean":
        return True
    if typ == "null":
        return None
    if typ == "array":
        n = spec.get("minItems", 0)
        items = spec.get("items", {})
        if not isinstance(n, int) or n <= 0 or depth > 8:
            return []
        return [example_value(param, items, root, depth + 1) for _ in range(n)]
    if typ == "object":
        props = spec.get("properties", {})
        req = [r for r in spec.get("required", []) if isinstance(r, str)]
        if not isinstance(props, dict) or depth > 8:
            return {}
        return {r: example_value(r, props.get(r, {}), root, depth + 1) for r in req}
    return "default"





def derive_special_case(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Hardcoded arguments for a granularity trap, derived from the schema.

    Every required parameter gets a value (see :func:`example_value`). A tool with
    parameters but none required gets a value for its first parameter, so that the trap
    is a genuinely narrower variant; a tool without parameters gets ``{}``.
    """
    props = schema.get("properties", {})
    props = props if isinstance(props, dict) else {}
    required = [r for r in schema.get("required", []) if isinstance(r, str)]
    names = required or list(props)[:1]
    return {n: example_value(n, props.get(n, {}), schema) for n in names}
