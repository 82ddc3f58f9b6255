"""The canary generator: real MCP tools in, the canaries of each fitting (tool, type) out,
one per wording drawn from the type's bank (``variants`` of them: :mod:`._banks`), with
their twins.

:func:`build_pool` returns a :class:`~._pool.Pool` (canaries, twins, skip list,
coincidences); :func:`generate_pool` returns only the canary records.

:func:`build_pool` turns a tool list (any MCP server's; see :func:`ingest_tools`) into a
:class:`Pool`: per (tool, type) that fits, one canary per wording variant (``variants``: K
entries of the type's bank drawn with ``wording_seed``, :mod:`._banks`), in tool order, then
:data:`~canarykit.types.CANARY_TYPES` order, then variant order; their twins
(``controls=True``: each canary with its probed property set to the healthy value,
:mod:`._controls`) and the list of what was skipped and why. ``fit="paper"`` offers every type for every tool
with the paper's transforms (it reproduces the paper's 72 canaries for our 12 tools);
``fit="fitted"`` (the default) offers a type only where its defect means something for the
tool (:func:`fit_skip`), draws granularity cases from the schema (never placeholders) and
checks them against the task suite (:class:`TaskSuite`). :func:`generate_pool` returns the
canary records only.

Canary record (one JSON object; pool files: :mod:`._pool`)::

    id           "<type>:<real tool>", "<type>:<real tool>@v<i>" for variant i >= 2
                 (stable across pools and reruns)
    type         one of the six canary types
    shadows      the real tool's name as offered (disambiguated: "<server>___<name>")
    name         unique in the pool, never a real tool's name, ^[a-zA-Z0-9_-]{1,64}$
    title        when the real tool has one ("Weather forecast (Mumbai)")
    description  ends with the pool's give-away suffix
    inputSchema  a valid JSON Schema of type object
    outputSchema, annotations   the real tool's, mirrored (annotation titles retitled)
    pool         "standard" | "subtle"
    behaviour    the JSON object run_canary follows (kind, ...)
    provenance   generator_version, transform, fit, rewriter (and model)
    upstream     {"server", "name"}: where the real tool lives (tools with a server)
    variant      1..K within the pool
    wording      the bank entry's id, "<type>/<nn>" (the same for every tool given it)
    tell         {"name", "description": [...]}: where the probed property shows
                 (audited by :func:`audit_pool`, ``canarykit audit-twins``)
    selection_visible   false when the canary and its twin show the same name,
                 description and input schema (a tell in behaviour only)

Twin (control) record: the same keys, with ``id`` ``"control:<canary id>"``,
``control_of`` (the canary's id), and the twin's own name, title, description, schema and
``behaviour`` (``passthrough`` or ``renamed_passthrough``; see :mod:`._controls`). The
assembler offers each twin in its canary's slot. A task gets a granularity canary and twin
only when its plan calls the tool (:func:`granularity_case`; with a task suite, the others
are listed in the skip list). :func:`bank_canaries` and :func:`distractors` build the dose
condition's look-alikes (:mod:`._dose`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ..errors import InputError
from ..types import CANARY_TYPES, ToolResult
from ._banks import (
    DEFAULT_PART,
    DEFAULT_WORDING_SEED,
    Entry,
    entry_by_id,
    resolve_wordings,
    style_of,
)
from ._cases import TaskSuite
from ._controls import build_control, withheld_from
from ._fit import FIT_MODES, fit_skip
from ._injection import without_instructions
from ._pool import Pool
from ._rewriters import REWORDED_TYPES, OfflineRewriter, Rewriter, _provenance
from ._suffixes import (
    DEFAULT_CONTROL_SUFFIXES,
    DEFAULT_SUFFIXES,
    PAPER_CONTROL_SUFFIXES,
    PAPER_SUFFIXES,
    check_suffixes,
    check_twin_suffixes,
    phrasing,
)
from ._text import fit_name, scrub_auth
from ._transforms import TransformContext, TypeSkipped, get_transform
from ._validate import Skip, ToolList, check_input_schema, ingest_tools

#: Bumped when a transform changes what it emits (recorded in every canary's provenance).
#: 2: fit modes, controls, mirrored MCP metadata. 3: twins that flip one property, variants.
#: 4: wordings drawn from the banks, twins that differ in the tell only (undated, no sameness
#: statement, the canary's breadth, derived from the canary's own text), declared tells.
GENERATOR_VERSION: Final = 4

__all__ = ["DEFAULT_CONTROL_SUFFIXES", "DEFAULT_SUFFIXES", "PAPER_CONTROL_SUFFIXES", "PAPER_SUFFIXES", "check_suffixes"]

Executor = Callable[[str, Any], ToolResult]


def canary_id(canary_type: str, tool_name: str, variant: int = 1) -> str:
    """Stable id of the canary of ``canary_type`` shadowing ``tool_name`` (same in every
    pool): ``<type>:<tool>`` for variant 1, ``<type>:<tool>@v<i>`` after."""
    return f"{canary_type}:{tool_name}" + (f"@v{variant}" if variant > 1 else "")


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


def canary_title(title: str, canary_type: str, canary_name: str, special_case: str | None,
                 wording: Entry, *, twin: bool = False, variant: int = 1) -> str:
    """The title a canary (or, ``twin``, its twin) of the bank entry ``wording`` (variant
    ``variant``) shows when its real tool has ``title`` (real tools with titles next to
    canaries without would be a give-away): the name part that carries the tell, in words."""
    if canary_type == "semantic_decoy":
        words = canary_name.replace("-", "_").split("_")
        text = " ".join(w for w in words if w)
        return text.title() if title.istitle() else text[:1].upper() + text[1:]
    if canary_type == "parameter_trap":
        return f"{title} (v{variant + 1})"
    part = (wording.twin_name if twin else wording.canary_name).replace("_", " ")
    if canary_type in ("capability_mirage", "prerequisite_blindness"):
        text = f"{part.replace(' ', '-').capitalize()} {_lower_first(title)}"
        return scrub_auth(text) if canary_type == "prerequisite_blindness" else text
    if canary_type == "granularity_trap" and not twin:
        part = part.replace("{case}", special_case or "").strip()
    return f"{title} ({part})" if part else title


def _mirrored(
    tool: Mapping[str, Any], canary_type: str, name: str, special_case: str | None, wording: Entry,
    variant: int = 1, twin: bool = False,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(tool.get("title"), str):
        out["title"] = canary_title(tool["title"], canary_type, name, special_case, wording, twin=twin, variant=variant)
    if "outputSchema" in tool:
        out["outputSchema"] = copy.deepcopy(tool["outputSchema"])
    if isinstance(tool.get("annotations"), dict):
        ann = copy.deepcopy(tool["annotations"])
        if isinstance(ann.get("title"), str):
            ann["title"] = canary_title(ann["title"], canary_type, name, special_case, wording, twin=twin,
                                        variant=variant)
        out["annotations"] = ann
    return out


@dataclass(frozen=True)
class _PoolPlan:
    """What :func:`build_pool` checked once and every (tool, type, variant) uses."""

    pool: str
    fit: str
    suffixes: Mapping[str, Any]
    control_suffixes: Mapping[str, Any]
    special_cases: Mapping[str, Mapping[str, Any]]
    rewriter: Rewriter
    suite: TaskSuite | None
    controls: bool
    strict: bool
    source: str
    special_cases_source: str
    special_cases_field: str
    variants: int = 1
    #: the whole tool list the hosts come from (the local-state rule reads their servers)
    peers: tuple[Mapping[str, Any], ...] = ()
    #: per type, the bank entry of each variant (variant i: the i-th)
    wordings: Mapping[str, tuple[Entry, ...]] = field(default_factory=dict)

    @property
    def style(self) -> str:
        """The rewriter's wording style: the paper's, else the pool's (standard by default)."""
        return "paper" if self.fit == "paper" else style_of(self.pool, self.fit)

    def context(self, tool: Mapping[str, Any], canary_type: str, label: str, variant: int,
                memo: dict[str, Any]) -> TransformContext:
        wording = self.wordings[canary_type][variant - 1]
        suffix, twin = phrasing(self.suffixes, self.control_suffixes, canary_type, variant,
                                style_of(self.pool, self.fit), wording)
        return TransformContext(
            pool=self.pool,
            suffix=suffix,
            rewriter=self.rewriter,
            special_case=self.special_cases.get(tool["name"]),
            source=self.source,
            label=label,
            special_cases_source=self.special_cases_source,
            special_cases_field=self.special_cases_field,
            fit=self.fit,
            style=self.style,
            control_suffix=twin,
            suite=self.suite,
            variant=variant,
            memo=memo,
            wording=wording,
        )


@dataclass
class _Built:
    """One (tool, type, variant) the transform built, before its name is settled."""

    tool: Mapping[str, Any]
    canary_type: str
    variant: int
    cid: str
    built: dict[str, Any]
    wording: str
    notes: list[Any] = field(default_factory=list)
    name: str = ""


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
    suffixes: Mapping[str, Any],
    *,
    fit: str = "fitted",
    control_suffixes: Mapping[str, Any] | None = None,
    controls: bool = False,
    special_cases: Mapping[str, Mapping[str, Any]] | None = None,
    rewriter: Rewriter | None = None,
    suite: TaskSuite | None = None,
    strict: bool = False,
    source: str = "<tools>",
    types: Sequence[str] = CANARY_TYPES,
    special_cases_source: str = "<special_cases>",
    special_cases_field: str = "special_cases",
    variants: int = 1,
    taken: Sequence[str] = (),
    suffixes_source: str | None = None,
    suffixes_field: str = "",
    peers: Sequence[Mapping[str, Any]] | None = None,
    wording_seed: int | None = None,
    wordings: Mapping[str, Sequence[str]] | None = None,
    wording_part: str = DEFAULT_PART,
) -> Pool:
    """The canaries of each fitting (tool, type), one per wording of the type, in tool order,
    then ``types`` order, then variant order.

    The wordings: ``wordings`` (per type, bank entry ids, variant i the i-th) when given;
    else with ``fit: paper`` the paper's (entry 01, then 02, ... for ``variants`` > 1); else
    ``variants`` entries per type drawn from ``wording_part`` of the bank with
    ``wording_seed`` (:func:`~._banks.draw_wordings`; default
    :data:`~._banks.DEFAULT_WORDING_SEED`). The pool records the seed and the draw.

    ``tools`` is a tool list (see :func:`~._validate.ingest_tools`) or an already ingested
    :class:`~._validate.ToolList`. ``fit`` is ``paper`` (every type for every tool, the
    paper's transforms) or ``fitted`` (the fit rules of :mod:`._fit`). ``suffixes`` and
    ``control_suffixes`` are one pool's phrasings (:mod:`._suffixes`: a string or a list per
    type; the twins' default to :data:`DEFAULT_CONTROL_SUFFIXES`, or
    :data:`PAPER_CONTROL_SUFFIXES` with ``fit: paper``), checked and named as
    ``<suffixes_field>suffixes.<pool>`` in ``suffixes_source`` (default ``source``). Names
    are unique across the pool's canaries and twins (a twin may carry its own canary's name)
    and distinct from every real tool name and from ``taken``: a collision gets ``_2``,
    ``_3``, ... (variant 1's canaries first, then variant 2's, ..., then the twins; a twin
    takes its canary's), so names depend only on the tool list and the wordings. A
    (tool, type) that is not built is listed in ``Pool.skipped``; with ``strict`` one whose
    input is at fault is an :class:`InputError` instead. ``suite`` (the task suite) is checked against granularity cases. With ``controls`` each
    canary's twin is written too (every record carries ``variant`` and ``selection_visible``).
    ``peers`` is the whole tool list the tools come from when only some of them host
    canaries (the proxy's ``--shadow``): the local-state fit rule reads their servers.
    """
    if not isinstance(pool, str) or not pool:
        raise InputError(source, "pool", f"expected a pool name, got {pool!r}")
    if fit not in FIT_MODES:
        raise InputError(source, "fit", f"expected one of {list(FIT_MODES)}, got {fit!r}")
    where = suffixes_source or source
    for t in types:
        get_transform(t)
    seed = DEFAULT_WORDING_SEED if wording_seed is None else wording_seed
    drawn = resolve_wordings(types, variants, fit=fit, seed=seed, wordings=wordings, part=wording_part,
                             source=where, field=f"{suffixes_field}variants")
    checked = check_suffixes(suffixes, where, f"{suffixes_field}suffixes.{pool}")
    if control_suffixes is None:
        defaults = PAPER_CONTROL_SUFFIXES if fit == "paper" else DEFAULT_CONTROL_SUFFIXES
        control_suffixes = defaults.get(pool, {t: None for t in CANARY_TYPES})
    control_sfx = check_suffixes(control_suffixes, where, f"{suffixes_field}control_suffixes.{pool}", allow_none=True)
    check_twin_suffixes(checked, control_sfx, style_of(pool, fit), where, f"{suffixes_field}control_suffixes.{pool}")
    listed = tools if isinstance(tools, ToolList) else ingest_tools(tools, source, strict=strict)
    plan = _PoolPlan(
        pool, fit, checked, control_sfx,
        _checked_special_cases(special_cases, special_cases_source, special_cases_field),
        rewriter if rewriter is not None else OfflineRewriter(),
        suite, controls, strict, source, special_cases_source, special_cases_field, variants,
        peers=tuple(peers) if peers is not None else tuple(listed.tools),
        wordings={t: tuple(entry_by_id(w) for w in ids) for t, ids in drawn.items()},
    )
    out = Pool(pool, fit, [], [], list(listed.skipped), [], GENERATOR_VERSION,
               wording_seed=seed if wordings is None and fit != "paper" else None,
               wordings={t: list(ids) for t, ids in drawn.items()})
    items: list[_Built] = []
    for index, real in enumerate(listed.tools):
        label = listed.label(index)
        tool = _without_instructions(real, out, label)
        for t in types:
            items.extend(_offer(out, plan, tool, t, label))
    used = {t["name"] for t in listed.tools} | set(taken)
    for v in range(1, max((len(ids) for ids in drawn.values()), default=0) + 1):
        for item in items:
            if item.variant == v:
                item.name = _unique_name(str(item.built["name"]), used)
                used.add(item.name)
    records = [_canary_record(item, plan) for item in items]
    by_variant = sorted(range(len(items)), key=lambda i: items[i].variant)  # stable: variant 1's twins first
    named = {i: _twin_record(items[i], records[i], used) for i in by_variant}
    twins = [named[i] for i in range(len(items))]
    for record, twin in zip(records, twins, strict=True):
        visible = any(record[k] != twin[k] for k in ("name", "description", "inputSchema"))
        record["selection_visible"] = twin["selection_visible"] = visible
    out.canaries.extend(records)
    for item in items:
        out.coincidences.extend({"canary": item.cid, **c.to_dict()} for c in item.notes)
    if controls:
        for item, twin in zip(items, twins, strict=True):
            check_input_schema(twin["inputSchema"], source, f"control of {item.cid}.inputSchema")
            out.controls.append(twin)
    return out


def _without_instructions(tool: Mapping[str, Any], out: Pool, label: str) -> Mapping[str, Any]:
    """``tool``, or the copy its canaries are made from when its description holds text that
    reads as instructions to the model (:mod:`._injection`: left out, with a warning)."""
    clean, dropped = without_instructions(tool)
    for where, text in dropped:
        shown = text if len(text) <= 120 else text[:117] + "..."
        out.skipped.append(Skip(tool["name"], "instructions", "instructions_dropped",
                                f"its text reads as instructions to the model ({shown!r}): left out of its canaries "
                                "and twins", True, f"{label}.{where}"))
    return clean if dropped else tool


def _offer(out: Pool, plan: _PoolPlan, tool: Mapping[str, Any], canary_type: str, label: str) -> list[_Built]:
    """The canaries of ``canary_type`` for ``tool`` (variants 1..K), or the reason none is
    built (in ``out.skipped``); the tasks a granularity offering is withheld from too."""
    skip = fit_skip(tool, canary_type, "fitted" if plan.fit == "fitted" else "paper", plan.peers)
    if skip is not None:
        out.skipped.append(Skip(tool["name"], canary_type, skip[0], skip[1], False))
        return []
    memo: dict[str, Any] = {}
    found: list[_Built] = []
    for variant in range(1, len(plan.wordings[canary_type]) + 1):
        ctx = plan.context(tool, canary_type, label, variant, memo)
        cid = canary_id(canary_type, tool["name"], variant)
        built = _transformed(tool, canary_type, ctx, cid, plan, out.skipped if variant == 1 else None)
        if built is None:
            break
        found.append(_Built(tool, canary_type, variant, cid, built, plan.wordings[canary_type][variant - 1].id,
                            list(ctx.notes)))
    if found and canary_type == "granularity_trap" and plan.suite is not None:
        out.skipped.extend(_withheld(tool, plan.suite))
    return found


def _transformed(
    tool: Mapping[str, Any], canary_type: str, ctx: TransformContext, cid: str, plan: _PoolPlan,
    skipped: list[Skip] | None,
) -> dict[str, Any] | None:
    """The transform's output for ``tool``, or None when the tool cannot host the type (the
    reason appended to ``skipped``; with ``strict``, input at fault raises instead) or the
    later variant fails where the first did not (``skipped`` None)."""
    source = plan.source
    try:
        built = get_transform(canary_type).apply(tool, ctx)
        check_input_schema(built["inputSchema"], source, f"canary {cid}.inputSchema")
    except TypeSkipped as exc:
        if skipped is None:
            return None
        if exc.warning and plan.strict:
            raise InputError(source, exc.field or f"{ctx.label}.inputSchema", f"{canary_type}: {exc.reason}") from exc
        skipped.append(Skip(tool["name"], canary_type, exc.code, exc.reason, exc.warning, exc.field))
        return None
    except InputError as exc:
        if exc.file != source:  # a configuration error (special case): always raised
            raise
        if plan.strict and skipped is not None:
            raise
        if skipped is not None:
            skipped.append(Skip(tool["name"], canary_type, "unsatisfiable_schema", exc.problem, True, exc.field))
        return None
    return built


def _canary_record(item: _Built, plan: _PoolPlan) -> dict[str, Any]:
    """The canary record (see the module docstring) of a transform's output."""
    tool, canary_type, built = item.tool, item.canary_type, item.built
    prov: dict[str, Any] = {"generator_version": GENERATOR_VERSION, "transform": canary_type, "fit": plan.fit}
    if canary_type in REWORDED_TYPES:
        prov.update(_provenance(plan.rewriter, canary_type))
    record: dict[str, Any] = {
        "id": item.cid,
        "type": canary_type,
        "shadows": tool["name"],
        "name": item.name,
        "description": built["description"],
        "inputSchema": built["inputSchema"],
        "pool": plan.pool,
        "behaviour": built["behaviour"],
        "provenance": prov,
    }
    record.update(_mirrored(tool, canary_type, item.name, built.get("special_case"), entry_by_id(item.wording),
                            item.variant))
    if built["behaviour"].get("kind") == "preview":
        # a preview that applies nothing cannot return what the real outputSchema describes (the
        # entities created, the file written): a strict client refuses a result that does not
        # conform, so the schema goes; its twin, built from this record, goes without it too (the
        # pair differs in the probed claim only) and answers the real structured content
        record.pop("outputSchema", None)
    if "server" in tool:
        record["upstream"] = {"server": tool["server"], "name": tool.get("mcp_name", tool["name"])}
    record["variant"] = item.variant
    record["wording"] = item.wording
    record["tell"] = copy.deepcopy(built["tell"])
    return record


def _twin_record(item: _Built, record: Mapping[str, Any], used: set[str]) -> dict[str, Any]:
    """The twin of ``record``: named as its transform says (its canary's own name, or a
    name unique in the pool), with its own title."""
    part = dict(item.built["control"])
    name, built_name = str(part["name"]), str(item.built["name"])
    if name != built_name:
        # a canary renamed for a collision (``_2``) passes its tail on: the pair differs in the tell only
        tail = item.name[len(built_name):] if item.name.startswith(built_name) else ""
        name = _unique_name(fit_name(name + tail) if tail else name, used)
        used.add(name)
    else:
        name = str(record["name"])
    part["name"] = name
    mirrored = _mirrored(item.tool, item.canary_type, name, item.built.get("special_case"), entry_by_id(item.wording),
                         item.variant, twin=True)
    return build_control(record, part, mirrored)


def _withheld(tool: Mapping[str, Any], suite: TaskSuite) -> list[Skip]:
    """The tasks of ``suite`` that name ``tool`` but whose plan never calls it: its
    granularity canaries (and twins) are withheld from them."""
    out: list[Skip] = []
    for task in suite.tasks:
        if tool["name"] not in task.tools and all(s[0] != tool["name"] for s in task.steps):
            continue
        held = withheld_from(task, str(tool["name"]), tool["inputSchema"])
        if held is not None:
            out.append(Skip(tool["name"], "granularity_trap", held[0], held[1], False, task=task.id))
    return out


def study_pool(
    tools: ToolList,
    tasks: Sequence[Any],
    pool: str,
    *,
    fit: str,
    suffixes: Mapping[str, Any],
    control_suffixes: Mapping[str, Any],
    special_cases: Mapping[str, Mapping[str, Any]] | None,
    generator: str = "offline",
    llm: Mapping[str, Any] | None = None,
    retries: Mapping[str, Any] | None = None,
    job: str | None = None,
    source: str = "<tools>",
    tasks_source: str = "<tasks>",
    variants: int = 1,
    wording_seed: int | None = None,
    wordings: Mapping[str, Sequence[str]] | None = None,
    wording_part: str = DEFAULT_PART,
) -> Pool:
    """One pool of a study, as the workflow's ``generate_canaries`` rule builds it: with
    twins, the rewriter of ``canaries.generator``, ``variants`` bank entries per (tool,
    type), and the granularity cases checked against ``tasks`` (validated
    :class:`canarykit.tasks.tasks.Task` objects; their evidence too when the tools are canarykit's
    own, which :func:`builtin_executor` can run), ``variants`` wordings per type drawn with
    ``wording_seed`` (or ``wordings``). The other arguments are params.yaml's
    ``canaries`` settings for ``pool`` (``retries``: the study's ``agent.retries``, and
    ``job``, the pool job's name in the spend ledger, go to an llm rewriter:
    :func:`make_rewriter`); a configured special case that a task needs, or a bad suffix,
    is an :class:`InputError` naming ``params.yaml``. Tests that need the study's pools call
    this, so they see what a study sees."""
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
        variants=variants,
        suffixes_source="params.yaml",
        suffixes_field="canaries.",
        wording_seed=wording_seed,
        wordings=wordings,
        wording_part=wording_part,
    )


def generate_pool(
    tools: Any,
    pool: str,
    suffixes: Mapping[str, Any],
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
