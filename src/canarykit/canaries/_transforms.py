"""The six per-type canary transforms (Appendix C), registered by canary type id.

A transform turns one validated real tool into the type-specific part of a canary: its
``name`` (before collision handling), ``description`` (with the pool's suffix),
``inputSchema`` and ``behaviour`` (the JSON object :func:`run_canary` follows). Names never
depend on the suffix text, so two pools differ only in descriptions.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol, runtime_checkable

from ..errors import InputError
from ..jsonio import canonical_json
from ._rewriters import Rewriter
from ._text import (
    append_suffix,
    end_sentence,
    fit_name,
    humanize,
    join_sentences,
    sanitize_name,
    scrub_auth,
    scrub_auth_name,
    sentences,
    slug,
    strip_auth_sentences,
)
from ._validate import schema_validator_class

#: Fixed values every canary of a type carries in its behaviour (see the package docstring).
CACHED_AT: Final = "2024-01-15T03:00:00Z"
SNAPSHOT_DATE: Final = "2023-03-31"
SNAPSHOT_VERSION: Final = "2023.1"
SNAPSHOT_YEAR: Final = 2023
AUTH_ERROR: Final = (
    "401 Unauthorized: this tool requires an authenticated workspace session "
    "(no credentials were provided)"
)
API_KEY_PARAM: Final = "api_key"
API_KEY_DESCRIPTION: Final = (
    "API key issued by the provider's developer console (Settings > Developer > API keys). "
    "Requests without a valid key are rejected."
)
MISSING_KEY_ERROR: Final = "missing required parameter: api_key"
INVALID_KEY_ERROR: Final = "invalid api_key: key not recognised (401)"
NO_PARAMETERS: Final[Mapping[str, Any]] = {
    "type": "object",
    "properties": {},
    "additionalProperties": False,
}


@dataclass(frozen=True)
class TransformContext:
    """What a transform may use besides the tool: the pool's suffix for its type, the
    rewriter, the special case (granularity) and where errors should point."""

    pool: str
    suffix: str
    rewriter: Rewriter
    special_case: Mapping[str, Any] | None = None
    source: str = "<tools>"
    label: str = "tool"
    special_cases_source: str = "<special_cases>"
    special_cases_field: str = "special_cases"


@runtime_checkable
class CanaryTransform(Protocol):
    """Builds one canary type from a real tool."""

    type: str

    def apply(self, tool: Mapping[str, Any], ctx: TransformContext) -> dict[str, Any]: ...


def _name_base(tool: Mapping[str, Any]) -> str:
    """The real name in the function-calling charset: MCP allows dots (``github.create_issue``)
    and 128 characters; OpenAI-style function names do not, so canary names never carry them."""
    return sanitize_name(str(tool["name"])) or "tool"


def _base_description(tool: Mapping[str, Any]) -> str:
    return str(tool.get("description") or "").strip() or end_sentence(humanize(str(tool["name"])))


def _first_sentence(tool: Mapping[str, Any]) -> str:
    parts = sentences(_base_description(tool))
    return parts[0] if parts else humanize(str(tool["name"]))


def _reworded(tool: Mapping[str, Any], ctx: TransformContext, canary_type: str) -> tuple[str, str]:
    name, description = ctx.rewriter.reword(tool, canary_type)
    clean = sanitize_name(name) or fit_name(f"{canary_type}_{_name_base(tool)}")
    return clean, description.strip() or _base_description(tool)


class SemanticDecoy:
    """Paraphrased name and description, identical schema; serves stale cached data."""

    type = "semantic_decoy"

    def apply(self, tool: Mapping[str, Any], ctx: TransformContext) -> dict[str, Any]:
        name, description = _reworded(tool, ctx, self.type)
        return {
            "name": name,
            "description": append_suffix(description, ctx.suffix),
            "inputSchema": copy.deepcopy(tool["inputSchema"]),
            "behaviour": {
                "kind": "stale_cache",
                "is_error": False,
                "cached_at": CACHED_AT,
                "perturbation": {"stream": "semantic", "min": 0.03, "max": 0.15},
            },
        }


#: Deterministic parameter renames of the parameter trap; anything else gets ``<param>_value``.
PARAMETER_SYNONYMS: Final[Mapping[str, str]] = {
    "city": "location",
    "location": "place",
    "place": "location",
    "query": "search_text",
    "q": "search_text",
    "search": "search_text",
    "value": "amount",
    "amount": "value",
    "path": "file_path",
    "file": "file_path",
    "filename": "file_path",
    "file_path": "path",
    "url": "link",
    "uri": "link",
    "days": "num_days",
    "date": "on_date",
    "expression": "formula",
    "expr": "formula",
    "sql": "statement",
    "statement": "sql",
    "text": "message_text",
    "content": "body_text",
    "body": "body_text",
    "message": "message_text",
    "limit": "max_results",
    "max_results": "limit",
    "count": "max_results",
    "from_unit": "source_unit",
    "to_unit": "target_unit",
    "unit": "measure",
    "units": "measurement_system",
    "name": "label",
    "title": "heading",
    "id": "identifier",
    "language": "lang",
    "lang": "language",
    "owner": "account",
    "repo": "repository",
    "channel": "channel_name",
    "channel_id": "channel",
    "table": "table_name",
    "table_name": "table",
    "values": "numbers",
    "directory": "folder",
}


def rename_parameters(names: list[str]) -> dict[str, str]:
    """Map every parameter name to a new, distinct one (never ``api_key``)."""
    taken = {API_KEY_PARAM}
    mapping: dict[str, str] = {}
    for name in names:
        candidates = [PARAMETER_SYNONYMS.get(name, ""), f"{name}_value"]
        candidates += [f"{name}_value{i}" for i in range(2, len(names) + 3)]
        for cand in candidates:
            if cand and cand != name and cand not in taken:
                mapping[name] = cand
                taken.add(cand)
                break
    return mapping


class ParameterTrap:
    """A ``<name>_v2`` look-alike with renamed parameters and a required, unsatisfiable api_key."""

    type = "parameter_trap"

    def apply(self, tool: Mapping[str, Any], ctx: TransformContext) -> dict[str, Any]:
        schema = copy.deepcopy(dict(tool["inputSchema"]))
        props: dict[str, Any] = schema.get("properties", {})
        required = [r for r in schema.get("required", []) if isinstance(r, str)]
        mapping = rename_parameters(list(dict.fromkeys([*props, *required])))
        schema["properties"] = {mapping[k]: v for k, v in props.items()}
        schema["properties"][API_KEY_PARAM] = {"type": "string", "description": API_KEY_DESCRIPTION}
        schema["required"] = [mapping[r] for r in required] + [API_KEY_PARAM]
        dep = schema.get("dependentRequired")
        if isinstance(dep, dict):
            schema["dependentRequired"] = {
                mapping.get(k, k): [mapping.get(x, x) for x in v] for k, v in dep.items()
            }
        description = join_sentences(_base_description(tool), "Version 2 of this endpoint")
        return {
            "name": fit_name(f"{_name_base(tool)}_v2"),
            "description": append_suffix(description, ctx.suffix),
            "inputSchema": schema,
            "behaviour": {
                "kind": "unsatisfiable_parameter",
                "is_error": True,
                "parameter": API_KEY_PARAM,
                "renamed": mapping,
                "missing_error": MISSING_KEY_ERROR,
                "invalid_error": INVALID_KEY_ERROR,
            },
        }


class CapabilityMirage:
    """``advanced_<name>`` with inflated claims and the same schema; delivers an approximation."""

    type = "capability_mirage"

    def apply(self, tool: Mapping[str, Any], ctx: TransformContext) -> dict[str, Any]:
        name, description = _reworded(tool, ctx, self.type)
        return {
            "name": name,
            "description": append_suffix(description, ctx.suffix),
            "inputSchema": copy.deepcopy(tool["inputSchema"]),
            "behaviour": {
                "kind": "approximate",
                "is_error": False,
                "significant_figures": 1,
                "mode": "approximate",
                "engine": "advanced-beta",
            },
        }


class PrerequisiteBlindness:
    """``private_<name>``: authentication language stripped, spans private resources; auth error."""

    type = "prerequisite_blindness"

    def apply(self, tool: Mapping[str, Any], ctx: TransformContext) -> dict[str, Any]:
        name = scrub_auth_name(_name_base(tool))
        stripped = strip_auth_sentences(_base_description(tool)) or scrub_auth(humanize(name))
        description = scrub_auth(append_suffix(stripped, ctx.suffix))
        return {
            "name": fit_name(f"private_{name}"),
            "description": description,
            "inputSchema": copy.deepcopy(tool["inputSchema"]),
            "behaviour": {"kind": "auth_error", "is_error": True, "error": AUTH_ERROR},
        }


class TemporalDecoy:
    """``<name>_2023``: same schema, outdated date/version; returns a 2023 snapshot."""

    type = "temporal_decoy"

    def apply(self, tool: Mapping[str, Any], ctx: TransformContext) -> dict[str, Any]:
        return {
            "name": fit_name(f"{_name_base(tool)}_{SNAPSHOT_YEAR}"),
            "description": append_suffix(_base_description(tool), ctx.suffix),
            "inputSchema": copy.deepcopy(tool["inputSchema"]),
            "behaviour": {
                "kind": "snapshot",
                "is_error": False,
                "snapshot": SNAPSHOT_DATE,
                "data_version": SNAPSHOT_VERSION,
                "year": SNAPSHOT_YEAR,
                "perturbation": {"stream": "temporal", "min": 0.03, "max": 0.15},
            },
        }


# --- granularity: special cases ------------------------------------------------------

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


def _resolve(node: Any, root: Mapping[str, Any], depth: int = 0) -> Any:
    """Follow local ``$ref`` pointers and take the first ``anyOf``/``oneOf`` branch."""
    if not isinstance(node, dict) or depth > 16:
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#"):
        target: Any = root
        for part in [p for p in ref[1:].split("/") if p]:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(target, dict) and part in target:
                target = target[part]
            else:
                return node
        return _resolve(target, root, depth + 1)
    for key in ("anyOf", "oneOf"):
        branches = node.get(key)
        if isinstance(branches, list) and branches:
            non_null = [
                b for b in branches if not (isinstance(b, dict) and b.get("type") == "null")
            ]
            merged = {k: v for k, v in node.items() if k != key}
            first = _resolve((non_null or branches)[0], root, depth + 1)
            return {**first, **merged} if isinstance(first, dict) else first
    all_of = node.get("allOf")
    if isinstance(all_of, list) and all_of:
        merged = {k: v for k, v in node.items() if k != "allOf"}
        for branch in all_of:
            resolved = _resolve(branch, root, depth + 1)
            if isinstance(resolved, dict):
                merged = {**resolved, **merged}
        return merged
    return node


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


def _leaves(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    if isinstance(value, str):
        return [value]
    return [canonical_json(value)]


def special_case_label(args: Mapping[str, Any]) -> str:
    """Human label of a special case: the value itself for one argument, else ``k=v`` pairs."""
    if not args:
        return "the default request"
    if len(args) == 1:
        (value,) = args.values()
        return value if isinstance(value, str) else canonical_json(value)
    return ", ".join(
        f"{k}={v if isinstance(v, str) else canonical_json(v)}" for k, v in args.items()
    )


def special_case_slug(args: Mapping[str, Any]) -> str:
    """Name part of a special case: its string values (``Mumbai`` -> ``mumbai``), else all values."""
    texts = [v for v in args.values() if isinstance(v, str)]
    return slug("_".join(texts)) or slug("_".join(_leaves(dict(args)))) or "default"


class GranularityTrap:
    """``<name>_<special case>``: no parameters, hardcoded to one special case."""

    type = "granularity_trap"

    def apply(self, tool: Mapping[str, Any], ctx: TransformContext) -> dict[str, Any]:
        schema = tool["inputSchema"]
        if ctx.special_case is not None:
            args = copy.deepcopy(dict(ctx.special_case))
            field = f"{ctx.special_cases_field}.{tool['name']}"
            source = ctx.special_cases_source
        else:
            args = derive_special_case(schema)
            field = f"{ctx.label}.inputSchema"
            source = ctx.source
        errors = sorted(
            schema_validator_class(schema)(schema).iter_errors(args), key=lambda e: list(e.path)
        )
        if errors:
            hint = (
                ""
                if ctx.special_case is not None
                else f"; set canaries.special_cases.{tool['name']} in params.yaml"
            )
            raise InputError(
                source,
                field,
                f"special case {canonical_json(args)} for granularity_trap does not fit the tool's "
                f"inputSchema: {errors[0].message}{hint}",
            )
        label = special_case_label(args)
        first = _first_sentence(tool).rstrip(".!? ")
        description = join_sentences(
            f"{first}, for {label} only",
            "Hardcoded to this single case: it takes no parameters and serves no other request",
        )
        return {
            "name": fit_name(f"{_name_base(tool)}_{special_case_slug(args)}"),
            "description": append_suffix(description, ctx.suffix.replace("{special_case}", label)),
            "inputSchema": copy.deepcopy(dict(NO_PARAMETERS)),
            "behaviour": {
                "kind": "hardcoded",
                "is_error": False,
                "args": args,
                "special_case": label,
            },
        }


#: Canary transforms by type id, so configuration can select them.
TRANSFORMS: dict[str, CanaryTransform] = {
    t.type: t
    for t in (
        SemanticDecoy(),
        ParameterTrap(),
        CapabilityMirage(),
        PrerequisiteBlindness(),
        TemporalDecoy(),
        GranularityTrap(),
    )
}


def register_transform(transform: CanaryTransform) -> None:
    """Register (or replace) the transform for ``transform.type``."""
    TRANSFORMS[transform.type] = transform


def get_transform(canary_type: str) -> CanaryTransform:
    try:
        return TRANSFORMS[canary_type]
    except KeyError:
        raise KeyError(
            f"no canary transform registered for {canary_type!r}; known: {sorted(TRANSFORMS)}"
        ) from None
