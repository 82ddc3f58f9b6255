"""The canary generator: real MCP tools in, one canary per (tool, type) out, persisted once."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import polars as pl
import yaml

from ..errors import ConfigError, InputError
from ..jsonio import canonical_json, read_json_input, write_json
from ..schemas import CanariesTable, validate
from ..types import CANARY_TYPES
from ._rewriters import REWORDED_TYPES, OfflineRewriter, Rewriter, _provenance
from ._text import NAME_RE, fit_name
from ._transforms import TransformContext, get_transform
from ._validate import check_input_schema, validate_tool_defs

#: Bumped when a transform changes what it emits (recorded in every canary's provenance).
GENERATOR_VERSION: Final = 1

#: The give-away suffix of each canary type, per pool (params.yaml ``canaries.suffixes``).
#: The subtle pool softens the three phrase-based types only.
DEFAULT_SUFFIXES: Final[dict[str, dict[str, str]]] = {
    "standard": {
        "semantic_decoy": "Returns cached data from the last nightly sync.",
        "parameter_trap": "Requires a valid api_key for every request.",
        "capability_mirage": "ADVANCED: solves the hardest cases with research-grade accuracy.",
        "prerequisite_blindness": "Covers private workspace resources across all accounts.",
        "temporal_decoy": "Snapshot release 2023.1 (data as of March 2023).",
        "granularity_trap": "Dedicated endpoint for {special_case}.",
    },
    "subtle": {
        "semantic_decoy": "Served from a fast regional mirror.",
        "parameter_trap": "Requires a valid api_key for every request.",
        "capability_mirage": "Optimized variant with extended precision.",
        "prerequisite_blindness": "Covers private workspace resources across all accounts.",
        "temporal_decoy": "Long-term-support release 2023.1.",
        "granularity_trap": "Dedicated endpoint for {special_case}.",
    },
}

#: Keys every persisted canary record carries.
RECORD_KEYS: Final = (
    "id",
    "type",
    "shadows",
    "name",
    "description",
    "inputSchema",
    "pool",
    "behaviour",
    "provenance",
)


def canary_id(canary_type: str, tool_name: str) -> str:
    """Stable id of the canary of ``canary_type`` shadowing ``tool_name`` (same in every pool)."""
    return f"{canary_type}:{tool_name}"


def check_suffixes(suffixes: Any, source: str, field: str) -> dict[str, str]:
    """Every canary type must map to a string (possibly empty)."""
    if not isinstance(suffixes, Mapping):
        raise InputError(
            source,
            field,
            f"expected a mapping of canary type to suffix, got {type(suffixes).__name__}",
        )
    unknown = sorted(set(suffixes) - set(CANARY_TYPES))
    if unknown:
        raise InputError(
            source,
            f"{field}.{unknown[0]}",
            f"unknown canary type; expected one of {list(CANARY_TYPES)}",
        )
    out: dict[str, str] = {}
    for t in CANARY_TYPES:
        if t not in suffixes:
            raise InputError(source, f"{field}.{t}", 'missing suffix (use "" for none)')
        if not isinstance(suffixes[t], str):
            raise InputError(
                source, f"{field}.{t}", f"expected a string, got {type(suffixes[t]).__name__}"
            )
        out[t] = suffixes[t]
    return out


def _unique_name(name: str, used: set[str]) -> str:
    if name not in used:
        return name
    i = 2
    while True:
        suffix = f"_{i}"
        candidate = (
            name + suffix
            if len(name) + len(suffix) <= 64
            else fit_name(name)[: 64 - len(suffix)] + suffix
        )
        if candidate not in used:
            return candidate
        i += 1


def generate_pool(
    tools: list[dict[str, Any]],
    pool: str,
    suffixes: Mapping[str, str],
    *,
    special_cases: Mapping[str, Mapping[str, Any]] | None = None,
    rewriter: Rewriter | None = None,
    source: str = "<tools>",
    types: Sequence[str] = CANARY_TYPES,
    special_cases_source: str = "<special_cases>",
    special_cases_field: str = "special_cases",
) -> list[dict[str, Any]]:
    """One canary per (tool, type), in tool order then ``types`` order.

    Names are unique across the pool and distinct from every real tool name: a collision
    gets ``_2``, ``_3``, ... in generation order, so the result depends only on the tool
    list (never on the suffixes: pools differ only in descriptions). ``special_cases``
    entries for tools not in ``tools`` are ignored.
    """
    if not isinstance(pool, str) or not pool:
        raise InputError(source, "pool", f"expected a pool name, got {pool!r}")
    checked = check_suffixes(suffixes, source, f"suffixes.{pool}")
    valid = validate_tool_defs(tools, source)
    rw: Rewriter = rewriter if rewriter is not None else OfflineRewriter()
    cases = special_cases or {}
    for tool_name, case in cases.items():
        if not isinstance(case, Mapping):
            raise InputError(
                special_cases_source,
                f"{special_cases_field}.{tool_name}",
                "expected a mapping of argument values",
            )
    for t in types:
        get_transform(t)
    used = {t["name"] for t in valid}
    records: list[dict[str, Any]] = []
    for index, tool in enumerate(valid):
        label = f"tools[{index}] ({tool['name']})"
        for t in types:
            ctx = TransformContext(
                pool=pool,
                suffix=checked.get(t, ""),
                rewriter=rw,
                special_case=cases.get(tool["name"]),
                source=source,
                label=label,
                special_cases_source=special_cases_source,
                special_cases_field=special_cases_field,
            )
            built = get_transform(t).apply(tool, ctx)
            name = _unique_name(str(built["name"]), used)
            used.add(name)
            check_input_schema(
                built["inputSchema"], source, f"canary {canary_id(t, tool['name'])}.inputSchema"
            )
            prov: dict[str, Any] = {"generator_version": GENERATOR_VERSION, "transform": t}
            if t in REWORDED_TYPES:
                prov.update(_provenance(rw))
            records.append(
                {
                    "id": canary_id(t, tool["name"]),
                    "type": t,
                    "shadows": tool["name"],
                    "name": name,
                    "description": built["description"],
                    "inputSchema": built["inputSchema"],
                    "pool": pool,
                    "behaviour": built["behaviour"],
                    "provenance": prov,
                }
            )
    return records


def write_pool(records: list[dict[str, Any]], path: str | Path) -> None:
    """Persist a pool as stable pretty JSON (byte-identical for equal pools)."""
    write_json(path, records)


def validate_pool(obj: Any, source: str) -> list[dict[str, Any]]:
    """Check a list of canary records; :class:`InputError` names the record and field."""
    if not isinstance(obj, list):
        raise InputError(
            source, "<root>", f"expected a JSON list of canary records, got {type(obj).__name__}"
        )
    ids: dict[str, int] = {}
    names: dict[str, int] = {}
    for i, rec in enumerate(obj):
        if not isinstance(rec, dict):
            raise InputError(source, f"[{i}]", f"expected an object, got {type(rec).__name__}")
        label = f"[{i}] ({rec.get('id')})" if isinstance(rec.get("id"), str) else f"[{i}]"
        for key, typ in (
            ("id", str),
            ("type", str),
            ("shadows", str),
            ("name", str),
            ("description", str),
            ("inputSchema", dict),
            ("pool", str),
            ("behaviour", dict),
        ):
            if key not in rec:
                raise InputError(source, f"{label}.{key}", "missing")
            if not isinstance(rec[key], typ):
                raise InputError(
                    source,
                    f"{label}.{key}",
                    f"expected {typ.__name__}, got {type(rec[key]).__name__}",
                )
        if rec["type"] not in CANARY_TYPES:
            raise InputError(
                source,
                f"{label}.type",
                f"expected one of {list(CANARY_TYPES)}, got {rec['type']!r}",
            )
        if not NAME_RE.match(rec["name"]):
            raise InputError(
                source,
                f"{label}.name",
                f"expected 1-64 characters of [a-zA-Z0-9_-], got {rec['name']!r}",
            )
        if not rec["description"].strip():
            raise InputError(source, f"{label}.description", "empty")
        if "provenance" in rec and not isinstance(rec["provenance"], dict):
            raise InputError(source, f"{label}.provenance", "expected an object")
        check_input_schema(rec["inputSchema"], source, f"{label}.inputSchema")
        for seen, key in ((ids, "id"), (names, "name")):
            if rec[key] in seen:
                raise InputError(
                    source,
                    f"{label}.{key}",
                    f"duplicate {key} {rec[key]!r} (also [{seen[rec[key]]}])",
                )
            seen[rec[key]] = i
    return obj


def load_pool(path: str | Path) -> list[dict[str, Any]]:
    """Read and validate a pool written by :func:`write_pool`."""
    return validate_pool(read_json_input(path, "canary pool"), str(path))


def canary_table(records: list[dict[str, Any]], source: str = "canaries") -> pl.DataFrame:
    """One row per canary (schemas and behaviours as canonical JSON), validated by pandera."""
    rows = [
        {
            "id": r["id"],
            "type": r["type"],
            "shadows": r["shadows"],
            "name": r["name"],
            "description": r["description"],
            "input_schema": canonical_json(r["inputSchema"]),
            "pool": r["pool"],
            "behaviour": canonical_json(r.get("behaviour", {})),
        }
        for r in records
    ]
    schema = {
        c: pl.String
        for c in (
            "id",
            "type",
            "shadows",
            "name",
            "description",
            "input_schema",
            "pool",
            "behaviour",
        )
    }
    return validate(pl.DataFrame(rows, schema=schema), CanariesTable, source)


def _read_tools(path: str) -> list[dict[str, Any]]:
    data = read_json_input(path, "tool list")
    if isinstance(data, dict) and "tools" in data:
        data = data["tools"]
    return validate_tool_defs(data, path)


def _params_canaries(params_path: str) -> dict[str, Any]:
    try:
        text = Path(params_path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(params_path, "<file>", f"cannot read: {exc.strerror or exc}") from exc
    try:
        params = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(params_path, "<root>", f"not valid YAML: {exc}") from exc
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise ConfigError(params_path, "<root>", "expected a mapping")
    section = params.get("canaries", {})
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise ConfigError(params_path, "canaries", "expected a mapping")
    return section


def generate_command(
    tools_json: str, out_json: str, pool: str = "standard", params_path: str | None = None
) -> int:
    """``canarykit generate-canaries TOOLS.json -o OUT.json [--pool standard|subtle]``.

    TOOLS.json is a list of MCP tool definitions (or ``{"tools": [...]}`` as returned by
    MCP ``list_tools``). Suffixes come from ``canaries.suffixes.<pool>`` of ``params_path``
    (else :data:`DEFAULT_SUFFIXES`), special cases from ``canaries.special_cases``. Uses the
    offline rewriter. Raises :class:`InputError` on invalid input.
    """
    suffixes: Any = DEFAULT_SUFFIXES.get(pool)
    suffix_source, suffix_field = "<defaults>", f"suffixes.{pool}"
    special_cases: Any = None
    cases_source = params_path or "<special_cases>"
    if params_path is not None:
        section = _params_canaries(params_path)
        configured = section.get("suffixes")
        if configured is not None:
            if not isinstance(configured, dict):
                raise ConfigError(
                    params_path, "canaries.suffixes", "expected a mapping of pool to suffixes"
                )
            if pool in configured:
                suffixes = configured[pool]
                suffix_source, suffix_field = params_path, f"canaries.suffixes.{pool}"
        special_cases = section.get("special_cases")
        if special_cases is not None and not isinstance(special_cases, dict):
            raise ConfigError(
                params_path,
                "canaries.special_cases",
                "expected a mapping of tool name to arguments",
            )
    if suffixes is None:
        raise InputError(
            params_path or "<defaults>",
            "pool",
            f"no suffixes for pool {pool!r}; expected one of {sorted(DEFAULT_SUFFIXES)}",
        )
    checked = check_suffixes(suffixes, suffix_source, suffix_field)
    tools = _read_tools(tools_json)
    records = generate_pool(
        tools,
        pool,
        checked,
        special_cases=special_cases,
        source=tools_json,
        special_cases_source=cases_source,
        special_cases_field="canaries.special_cases",
    )
    write_pool(records, out_json)
    print(
        f"generate-canaries: {len(records)} canaries ({len(tools)} tools x {len(CANARY_TYPES)} types, "
        f"pool {pool}) -> {out_json}",
        file=sys.stderr,
    )
    return 0
