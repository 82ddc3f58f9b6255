"""The canary generator: real MCP tools in, one canary per fitting (tool, type) out.

:func:`build_pool` returns a :class:`~._pool.Pool` (canaries, controls, skip list,
coincidences); :func:`generate_pool` returns only the canary records.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..errors import InputError
from ..types import CANARY_TYPES, ToolResult
from ._cases import TaskSuite
from ._controls import build_control, withheld_from
from ._fit import FIT_MODES, fit_skip
from ._pool import Pool
from ._rewriters import REWORDED_TYPES, OfflineRewriter, Rewriter, _provenance
from ._text import fit_name, scrub_auth
from ._transforms import TransformContext, TypeSkipped, get_transform
from ._validate import Skip, ToolList, check_input_schema, ingest_tools

#: Bumped when a transform changes what it emits (recorded in every canary's provenance).
#: 2: fit modes, controls, mirrored MCP metadata.
GENERATOR_VERSION: Final = 2

#: The paper's give-away suffixes (Appendix C, section 6.7): ``fit: paper`` with these
#: reproduces the paper's two pools.
PAPER_SUFFIXES: Final[dict[str, dict[str, str]]] = {
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

#: The give-away suffix of each canary type, per pool (params.yaml ``canaries.suffixes``).
#: The subtle pool keeps each tell of the three phrase-based types but softens it: its
#: semantic decoy still says, mildly, that its data may lag (the paper's "fast regional
#: mirror" dropped the tell and added a lure).
DEFAULT_SUFFIXES: Final[dict[str, dict[str, str]]] = {
    "standard": dict(PAPER_SUFFIXES["standard"]),
    "subtle": {
        **PAPER_SUFFIXES["subtle"],
        "semantic_decoy": "Served from a regional mirror; data may lag the source by a day.",
    },
}

#: The controls' suffixes, per pool (params.yaml ``canaries.control_suffixes``): the claim
#: that makes the canary defective, made true or neutral, at about the same length and in
#: the same register. ``None``: the canary's own suffix (its claim is made true by the
#: control's behaviour: a mirage that delivers, a private variant that needs no login).
DEFAULT_CONTROL_SUFFIXES: Final[dict[str, dict[str, str | None]]] = {
    "standard": {
        "semantic_decoy": "Returns live data from the source on every request.",
        "parameter_trap": "Requires valid arguments for every request.",
        "capability_mirage": None,
        "prerequisite_blindness": None,
        "temporal_decoy": "Release 2023.1 (data refreshed on every request).",
        "granularity_trap": None,
    },
    "subtle": {
        "semantic_decoy": "Served from a regional mirror; data matches the source in real time.",
        "parameter_trap": "Requires valid arguments for every request.",
        "capability_mirage": None,
        "prerequisite_blindness": None,
        "temporal_decoy": "Long-term-support release 2023.1 (live data).",
        "granularity_trap": None,
    },
}

Executor = Callable[[str, Any], ToolResult]


def canary_id(canary_type: str, tool_name: str) -> str:
    """Stable id of the canary of ``canary_type`` shadowing ``tool_name`` (same in every pool)."""
    return f"{canary_type}:{tool_name}"


def check_suffixes(
    suffixes: Any, source: str, field: str, *, allow_none: bool = False
) -> dict[str, Any]:
    """Every canary type must map to a string (possibly empty; ``None`` if ``allow_none``)."""
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
    out: dict[str, Any] = {}
    for t in CANARY_TYPES:
        if t not in suffixes:
            raise InputError(source, f"{field}.{t}", 'missing suffix (use "" for none)')
        value = suffixes[t]
        if not (isinstance(value, str) or (allow_none and value is None)):
            raise InputError(
                source, f"{field}.{t}", f"expected a string, got {type(value).__name__}"
            )
        out[t] = value
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


def _lower_first(text: str) -> str:
    words = text.split()
    title_case = all(w[:1].isupper() for w in words if w[:1].isalpha())
    return text if title_case or text[:2].isupper() else text[:1].lower() + text[1:]


def canary_title(title: str, canary_type: str, canary_name: str, special_case: str | None) -> str:
    """The title a canary shows when its real tool has ``title`` (real tools with titles next
    to canaries without would be a give-away)."""
    if canary_type == "semantic_decoy":
        words = canary_name.replace("-", "_").split("_")
        text = " ".join(w for w in words if w)
        return text.title() if title.istitle() else text[:1].upper() + text[1:]
    if canary_type == "parameter_trap":
        return f"{title} (v2)"
    if canary_type == "capability_mirage":
        return f"Advanced {_lower_first(title)}"
    if canary_type == "prerequisite_blindness":
        return scrub_auth(f"Private {_lower_first(title)}")
    if canary_type == "temporal_decoy":
        return f"{title} (2023)"
    return f"{title} ({special_case})" if special_case else title


def _mirrored(
    tool: Mapping[str, Any], canary_type: str, name: str, special_case: str | None
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(tool.get("title"), str):
        out["title"] = canary_title(tool["title"], canary_type, name, special_case)
    if "outputSchema" in tool:
        out["outputSchema"] = copy.deepcopy(tool["outputSchema"])
    if isinstance(tool.get("annotations"), dict):
        ann = copy.deepcopy(tool["annotations"])
        if isinstance(ann.get("title"), str):
            ann["title"] = canary_title(ann["title"], canary_type, name, special_case)
        out["annotations"] = ann
    return out


@dataclass(frozen=True)
class _PoolPlan:
    """What :func:`build_pool` checked once and every (tool, type) uses."""

    pool: str
    fit: str
    suffixes: Mapping[str, str]
    control_suffixes: Mapping[str, str | None]
    special_cases: Mapping[str, Mapping[str, Any]]
    rewriter: Rewriter
    suite: TaskSuite | None
    controls: bool
    strict: bool
    source: str
    special_cases_source: str
    special_cases_field: str

    @property
    def style(self) -> str:
        """The rewriter's wording style: the paper's, else the pool's (standard by default)."""
        return "paper" if self.fit == "paper" else (self.pool if self.pool in ("standard", "subtle") else "standard")

    def context(self, tool: Mapping[str, Any], canary_type: str, label: str) -> TransformContext:
        return TransformContext(
            pool=self.pool,
            suffix=self.suffixes.get(canary_type, ""),
            rewriter=self.rewriter,
            special_case=self.special_cases.get(tool["name"]),
            source=self.source,
            label=label,
            special_cases_source=self.special_cases_source,
            special_cases_field=self.special_cases_field,
            fit=self.fit,
            style=self.style,
            control_suffix=self.control_suffixes.get(canary_type),
            suite=self.suite,
        )


def _checked_special_cases(
    special_cases: Mapping[str, Mapping[str, Any]] | None, source: str, field: str
) -> Mapping[str, Mapping[str, Any]]:
    cases = special_cases or {}
    for tool_name, case in cases.items():
        if not isinstance(case, Mapping):
            raise InputError(source, f"{field}.{tool_name}", "expected a mapping of argument values")
    return cases


def build_pool(
    tools: Any,
    pool: str,
    suffixes: Mapping[str, str],
    *,
    fit: str = "fitted",
    control_suffixes: Mapping[str, str | None] | None = None,
    controls: bool = False,
    special_cases: Mapping[str, Mapping[str, Any]] | None = None,
    rewriter: Rewriter | None = None,
    suite: TaskSuite | None = None,
    strict: bool = False,
    source: str = "<tools>",
    types: Sequence[str] = CANARY_TYPES,
    special_cases_source: str = "<special_cases>",
    special_cases_field: str = "special_cases",
) -> Pool:
    """One canary per fitting (tool, type), in tool order then ``types`` order.

    ``tools`` is a tool list (see :func:`~._validate.ingest_tools`) or an already ingested
    :class:`~._validate.ToolList`. ``fit`` is ``paper`` (every type for every tool, the
    paper's transforms) or ``fitted`` (the fit rules of :mod:`._fit`). Names are unique
    across the pool and distinct from every real tool name: a collision gets ``_2``,
    ``_3``, ... in generation order, so names depend only on the tool list (pools differ
    only in descriptions). A (tool, type) that is not built is listed in
    ``Pool.skipped``; with ``strict`` one whose input is at fault is an
    :class:`InputError` instead. ``suite`` (the task suite) is checked against granularity
    cases. With ``controls`` each canary gets its matched-surface control
    (``control_suffixes``: the pool's :data:`DEFAULT_CONTROL_SUFFIXES` unless given).
    """
    if not isinstance(pool, str) or not pool:
        raise InputError(source, "pool", f"expected a pool name, got {pool!r}")
    if fit not in FIT_MODES:
        raise InputError(source, "fit", f"expected one of {list(FIT_MODES)}, got {fit!r}")
    checked = check_suffixes(suffixes, source, f"suffixes.{pool}")
    if control_suffixes is None:
        control_suffixes = DEFAULT_CONTROL_SUFFIXES.get(pool, {t: None for t in CANARY_TYPES})
    control_sfx = check_suffixes(control_suffixes, source, f"control_suffixes.{pool}", allow_none=True)
    listed = tools if isinstance(tools, ToolList) else ingest_tools(tools, source, strict=strict)
    plan = _PoolPlan(
        pool, fit, checked, control_sfx,
        _checked_special_cases(special_cases, special_cases_source, special_cases_field),
        rewriter if rewriter is not None else OfflineRewriter(),
        suite, controls, strict, source, special_cases_source, special_cases_field,
    )
    for t in types:
        get_transform(t)
    used = {t["name"] for t in listed.tools}
    out = Pool(pool, fit, [], [], list(listed.skipped), [], GENERATOR_VERSION)
    for index, tool in enumerate(listed.tools):
        label = listed.label(index)
        for t in types:
            _offer(out, plan, tool, t, label, used)
    return out


def _offer(
    out: Pool, plan: _PoolPlan, tool: Mapping[str, Any], canary_type: str, label: str, used: set[str]
) -> None:
    """Add the canary of ``canary_type`` for ``tool`` to ``out`` (with its control, its
    coincidences and the tasks it is withheld from), or the reason it is not built."""
    skip = fit_skip(tool, canary_type, "fitted" if plan.fit == "fitted" else "paper")
    if skip is not None:
        out.skipped.append(Skip(tool["name"], canary_type, skip[0], skip[1], False))
        return
    ctx = plan.context(tool, canary_type, label)
    cid = canary_id(canary_type, tool["name"])
    built = _transformed(tool, canary_type, ctx, cid, plan, out.skipped)
    if built is None:
        return
    name = _unique_name(str(built["name"]), used)
    used.add(name)
    record = _canary_record(tool, canary_type, cid, name, built, plan)
    out.canaries.append(record)
    out.coincidences.extend({"canary": cid, **c.to_dict()} for c in ctx.notes)
    if canary_type == "granularity_trap" and plan.suite is not None:
        out.skipped.extend(_withheld(tool, plan.suite))
    if plan.controls:
        _add_control(out, tool, canary_type, cid, record, built, plan.source)


def _transformed(
    tool: Mapping[str, Any], canary_type: str, ctx: TransformContext, cid: str, plan: _PoolPlan,
    skipped: list[Skip],
) -> dict[str, Any] | None:
    """The transform's output for ``tool``, or None when the tool cannot host the type (the
    reason appended to ``skipped``; with ``strict``, input at fault raises instead)."""
    source = plan.source
    try:
        built = get_transform(canary_type).apply(tool, ctx)
        check_input_schema(built["inputSchema"], source, f"canary {cid}.inputSchema")
    except TypeSkipped as exc:
        if exc.warning and plan.strict:
            raise InputError(source, exc.field or f"{ctx.label}.inputSchema", f"{canary_type}: {exc.reason}") from exc
        skipped.append(Skip(tool["name"], canary_type, exc.code, exc.reason, exc.warning, exc.field))
        return None
    except InputError as exc:
        if exc.file != source:  # a configuration error (special case): always raised
            raise
        if plan.strict:
            raise
        skipped.append(Skip(tool["name"], canary_type, "unsatisfiable_schema", exc.problem, True, exc.field))
        return None
    return built


def _canary_record(
    tool: Mapping[str, Any], canary_type: str, cid: str, name: str, built: Mapping[str, Any], plan: _PoolPlan
) -> dict[str, Any]:
    """The canary record (see the package docstring) of a transform's output."""
    prov: dict[str, Any] = {"generator_version": GENERATOR_VERSION, "transform": canary_type, "fit": plan.fit}
    if canary_type in REWORDED_TYPES:
        prov.update(_provenance(plan.rewriter))
    record: dict[str, Any] = {
        "id": cid,
        "type": canary_type,
        "shadows": tool["name"],
        "name": name,
        "description": built["description"],
        "inputSchema": built["inputSchema"],
        "pool": plan.pool,
        "behaviour": built["behaviour"],
        "provenance": prov,
    }
    record.update(_mirrored(tool, canary_type, name, built.get("special_case")))
    if "server" in tool:
        record["upstream"] = {"server": tool["server"], "name": tool.get("mcp_name", tool["name"])}
    return record


def _withheld(tool: Mapping[str, Any], suite: TaskSuite) -> list[Skip]:
    """The tasks of ``suite`` whose plan uses ``tool`` but not with exactly one case: its
    granularity canary (and control) is withheld from them."""
    out: list[Skip] = []
    for task in suite.tasks:
        if tool["name"] not in task.tools and all(s[0] != tool["name"] for s in task.steps):
            continue
        held = withheld_from(task, str(tool["name"]), tool["inputSchema"])
        if held is not None:
            out.append(Skip(tool["name"], "granularity_trap", held[0], held[1], False, task=task.id))
    return out


def _add_control(
    out: Pool, tool: Mapping[str, Any], canary_type: str, cid: str, record: Mapping[str, Any],
    built: Mapping[str, Any], source: str,
) -> None:
    """Add the matched-surface control of ``record`` (or say that its transform builds none)."""
    part = built.get("control")
    if not isinstance(part, Mapping):
        out.skipped.append(Skip(tool["name"], canary_type, "no_control",
                                f"the {canary_type} transform builds no control", True))
        return
    control = build_control(record, part)
    template = control["behaviour"].get("template")
    if isinstance(template, dict) and isinstance(tool.get("title"), str):
        template["title_base"] = tool["title"]
    check_input_schema(control["inputSchema"], source, f"control of {cid}.inputSchema")
    out.controls.append(control)


def study_pool(
    tools: ToolList,
    tasks: Sequence[Any],
    pool: str,
    *,
    fit: str,
    suffixes: Mapping[str, str],
    control_suffixes: Mapping[str, str | None],
    special_cases: Mapping[str, Mapping[str, Any]] | None,
    generator: str = "offline",
    llm: Mapping[str, Any] | None = None,
    retries: Mapping[str, Any] | None = None,
    job: str | None = None,
    source: str = "<tools>",
    tasks_source: str = "<tasks>",
) -> Pool:
    """One pool of a study, as the workflow's ``generate_canaries`` rule builds it: with
    controls, the rewriter of ``canaries.generator``, and the granularity cases checked
    against ``tasks`` (validated :class:`canarykit.tasks.Task` objects; their evidence too
    when the tools are canarykit's own, which :func:`builtin_executor` can run). The other
    arguments are params.yaml's ``canaries`` settings for ``pool`` (``retries``: the study's
    ``agent.retries``, and ``job``, the pool job's name in the spend ledger, go to an llm
    rewriter: :func:`make_rewriter`); a configured special
    case that a task needs is an :class:`InputError` naming ``params.yaml``. Tests that
    need the study's pools call this, so they see what a study sees."""
    from ._cases import suite_from_tasks
    from ._rewriters import make_rewriter

    suite = suite_from_tasks(tasks, tasks_source, builtin_executor(tools.tools))
    return build_pool(
        tools,
        pool,
        suffixes,
        fit=fit,
        control_suffixes=control_suffixes,
        controls=True,
        special_cases=special_cases,
        rewriter=make_rewriter(generator, llm, retries=retries, job=job),
        suite=suite,
        source=source,
        special_cases_source="params.yaml",
        special_cases_field="canaries.special_cases",
    )


def generate_pool(
    tools: Any,
    pool: str,
    suffixes: Mapping[str, str],
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """The canary records of :func:`build_pool` (same arguments; ``fit`` defaults to
    ``fitted``, the configuration's default)."""
    return build_pool(tools, pool, suffixes, **kwargs).canaries


def builtin_executor(tools: Sequence[Mapping[str, Any]]) -> Executor | None:
    """canarykit's own tool executor, when every tool of the list is one of its built-in
    tools with the same input schema (then the task suite's evidence can be checked)."""
    from .. import tools as builtin

    known = {t.name: t.input_schema for t in builtin.REAL_TOOLS}
    if tools and all(t.get("name") in known and t.get("inputSchema") == known[t["name"]] for t in tools):
        return builtin.execute
    return None
