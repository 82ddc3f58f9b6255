"""``canarykit generate-canaries`` (and the ``generate_canaries`` rule): read a tool list and
the params' canary settings, build the pool (:func:`._generator.build_pool`), write it and
say what was built and skipped."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from ..errors import ConfigError, InputError
from ..store.jsonio import read_json_input
from ..types import CANARY_TYPES
from ._banks import DEFAULT_VARIANTS, DEFAULT_WORDING_SEED, style_of
from ._cases import read_task_suite
from ._fit import FIT_MODES
from ._generator import (
    GENERATOR_VERSION,
    build_pool,
    builtin_executor,
    canary_id,
    canary_title,
    generate_pool,
    study_pool,
)
from ._pool import Pool, skipped_counts, write_pool
from ._suffixes import (
    DEFAULT_CONTROL_SUFFIXES,
    DEFAULT_SUFFIXES,
    PAPER_SUFFIXES,
    check_suffixes,
    check_twin_suffixes,
)
from ._validate import TOOL_LIST_MAX_DEPTH, ToolList, ingest_tools


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


_SHORT_REASONS: Final[Mapping[str, str]] = {
    "pure_function": "pure function: nothing to cache, date or keep private",
    "write_tool": "write tool: no cached or dated copy, no hard-coded write",
    "no_parameters": "no parameters to hard-code",
}


def summary_lines(result: Pool, out_json: str) -> list[str]:
    """What ``generate-canaries`` prints: one summary line, then each skip and coincidence."""
    n_tools = len({c["shadows"] for c in result.canaries} | {s.tool for s in result.skipped if s.type in CANARY_TYPES})
    per_type = {t: sum(1 for c in result.canaries if c["type"] == t) for t in CANARY_TYPES}
    counts = ", ".join(f"{t} {n}" for t, n in per_type.items())
    skipped = [s for s in result.skipped if (s.type in CANARY_TYPES or s.type == "*") and not s.task]
    variants = result.variants
    invisible = sorted({c["type"] for c in result.canaries if c.get("selection_visible") is False})
    lines = [
        f"generate-canaries: {len(result.canaries)} canaries ({counts}) for {n_tools} tools, "
        f"pool {result.pool}, fit {result.fit}"
        + (f", {variants} variants" if variants > 1 else "")
        + (f", {len(result.controls)} twins" if result.controls else "")
        + f"; {len(skipped)} skipped -> {out_json}"
    ]
    if invisible:
        lines.append(f"note: {', '.join(invisible)}: canary and twin show the same name, description and schema "
                     "(selection_visible false): only what the agent does after the result can differ")
    for s in result.skipped:
        if s.warning:
            lines.append("warning: " + s.line())
    groups: dict[tuple[str, str], list[str]] = {}
    for s in result.skipped:
        if not s.warning and not s.task:
            reason = _SHORT_REASONS.get(s.code, s.reason)
            groups.setdefault((s.tool, reason), []).append(s.type)
    for (tool, reason), skipped_types in groups.items():
        lines.append(f"skipped: {tool}: {', '.join(skipped_types)}: {reason}")
    for s in result.skipped:
        if s.task:
            lines.append("withheld: " + s.line())
    hits: dict[str, list[str]] = {}
    for c in result.coincidences:
        hits.setdefault(c["canary"], []).append(f"{c['task']} ({c['how']})")
    for canary, tasks in hits.items():
        lines.append(f"warning: {canary}: the hard-coded case serves tasks {', '.join(tasks)}")
    return lines


@dataclass
class _Configured:
    """What ``generate-canaries`` takes from a params file for one pool (the defaults when
    there is none), and where each setting comes from (for error messages)."""

    suffixes: Any
    suffix_source: str
    suffix_field: str
    control_suffixes: Any
    control_source: str
    control_field: str
    special_cases: Any = None
    fit: Any = None
    variants: Any = None
    variants_source: str = "<defaults>"
    wording_seed: Any = None


def _configured(pool: str, params_path: str | None) -> _Configured:
    """``canaries.suffixes.<pool>``, ``canaries.control_suffixes.<pool>``,
    ``canaries.special_cases`` and ``canaries.fit`` of ``params_path`` (else the defaults)."""
    out = _Configured(
        DEFAULT_SUFFIXES.get(pool), "<defaults>", f"suffixes.{pool}",
        DEFAULT_CONTROL_SUFFIXES.get(pool), "<defaults>", f"control_suffixes.{pool}",
    )
    if params_path is None:
        return out
    section = _params_canaries(params_path)
    for key in ("suffixes", "control_suffixes"):
        configured = section.get(key)
        if configured is not None and not isinstance(configured, dict):
            raise ConfigError(params_path, f"canaries.{key}", "expected a mapping of pool to suffixes")
        if isinstance(configured, dict) and pool in configured:
            if key == "suffixes":
                out.suffixes, out.suffix_source, out.suffix_field = configured[pool], params_path, f"canaries.suffixes.{pool}"
            else:
                out.control_suffixes = configured[pool]
                out.control_source, out.control_field = params_path, f"canaries.control_suffixes.{pool}"
    out.special_cases = section.get("special_cases")
    if out.special_cases is not None and not isinstance(out.special_cases, dict):
        raise ConfigError(
            params_path,
            "canaries.special_cases",
            "expected a mapping of tool name to arguments",
        )
    out.fit = section.get("fit")
    if section.get("variants") is not None:
        out.variants, out.variants_source = section.get("variants"), params_path
    seed = section.get("wording_seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise ConfigError(params_path, "canaries.wording_seed", f"expected a whole number, got {seed!r}")
    out.wording_seed = seed
    return out


def _usable_tools(tools_json: str, strict: bool) -> ToolList:
    """The tool list in ``tools_json``; one without a usable tool is an :class:`InputError`."""
    listed = ingest_tools(read_json_input(tools_json, "tool list", max_depth=TOOL_LIST_MAX_DEPTH), tools_json, strict=strict)
    if not listed.tools:
        problem = "no usable tool in the list"
        if listed.skipped:
            problem += f"; first problem: {listed.skipped[0].field}: {listed.skipped[0].reason}"
        raise InputError(tools_json, "tools", problem)
    return listed


def generate_command(
    tools_json: str,
    out_json: str,
    pool: str = "standard",
    params_path: str | None = None,
    *,
    fit: str | None = None,
    controls: bool = False,
    strict: bool = False,
    tasks_json: str | None = None,
    types: Sequence[str] | None = None,
    variants: int | None = None,
) -> int:
    """``canarykit generate-canaries TOOLS.json -o OUT.json [--pool standard|subtle]
    [--fit paper|fitted] [--controls] [--strict] [--tasks TASKS.json] [--types T,...]
    [--variants K]``.

    TOOLS.json is a tool list (see :func:`~._validate.ingest_tools`). Suffixes come from
    ``canaries.suffixes.<pool>`` of ``params_path`` (else :data:`DEFAULT_SUFFIXES`), the
    twins' from ``canaries.control_suffixes.<pool>``, special cases from
    ``canaries.special_cases``, the fit mode from ``--fit``, else ``canaries.fit``, else
    ``fitted``, the number of variants from ``--variants``, else ``canaries.variants``, else
    :data:`~._banks.DEFAULT_VARIANTS`. Writes a pool file (see :mod:`._pool`); prints a
    summary line and every skip to stderr. Uses the offline rewriter. Raises
    :class:`InputError` on invalid input.
    """
    cfg = _configured(pool, params_path)
    if cfg.suffixes is None:
        raise InputError(
            params_path or "<defaults>",
            "pool",
            f"no suffixes for pool {pool!r}; expected one of {sorted(DEFAULT_SUFFIXES)}",
        )
    mode = fit or cfg.fit or "fitted"
    if mode not in FIT_MODES:
        raise InputError(params_path or "<command line>", "canaries.fit" if fit is None else "--fit",
                         f"expected one of {list(FIT_MODES)}, got {mode!r}")
    checked = check_suffixes(cfg.suffixes, cfg.suffix_source, cfg.suffix_field)
    checked_controls = check_suffixes(cfg.control_suffixes, cfg.control_source, cfg.control_field, allow_none=True)
    check_twin_suffixes(checked, checked_controls, style_of(pool, mode), cfg.control_source, cfg.control_field)
    k = variants if variants is not None else cfg.variants if cfg.variants is not None else DEFAULT_VARIANTS
    listed = _usable_tools(tools_json, strict)
    suite = None
    if tasks_json is not None:
        suite = read_task_suite(tasks_json, builtin_executor(listed.tools))
    result = build_pool(
        listed,
        pool,
        checked,
        fit=mode,
        control_suffixes=checked_controls,
        controls=controls,
        special_cases=cfg.special_cases,
        suite=suite,
        strict=strict,
        source=tools_json,
        types=tuple(types) if types else CANARY_TYPES,
        special_cases_source=params_path or "<special_cases>",
        special_cases_field="canaries.special_cases",
        variants=k,
        suffixes_source=cfg.variants_source if variants is None else "<command line>",
        suffixes_field="canaries." if variants is None else "--",
        wording_seed=cfg.wording_seed if cfg.wording_seed is not None else DEFAULT_WORDING_SEED,
    )
    write_pool(result, out_json)
    for line in summary_lines(result, out_json):
        print(line, file=sys.stderr)
    return 0


__all__ = [
    "DEFAULT_CONTROL_SUFFIXES",
    "DEFAULT_SUFFIXES",
    "GENERATOR_VERSION",
    "PAPER_SUFFIXES",
    "build_pool",
    "builtin_executor",
    "canary_id",
    "canary_title",
    "check_suffixes",
    "generate_command",
    "generate_pool",
    "skipped_counts",
    "study_pool",
    "summary_lines",
]
