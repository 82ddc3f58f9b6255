"""The design of a study as its assembled lists give it: per canary type, the (task, seed,
canary item) pairs the control contrast compares and the runs the trap rate counts, with the
run, call and token counts that ``canarykit plan`` prices (:mod:`canarykit.study.plan`) and the
power simulation reads (:mod:`canarykit.study.power`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..types import CANARY_TYPES

#: Tokens assumed for what the tool lists do not tell: a tool call, a tool result, a final
#: answer, a judge's verdict; characters per token of the measured texts.
CALL_TOKENS, RESULT_TOKENS, ANSWER_TOKENS, VERDICT_TOKENS, CHARS_PER_TOKEN = 40, 200, 150, 200, 4

@dataclass
class TypeDesign:
    """One canary type's opportunities in the primary pool: the control-effect pairs (task,
    seed, canary item) and the trap-rate runs (task, seed, item) of ``declared``."""

    pairs: list[tuple[str, int, str]] = field(default_factory=list)
    runs: list[tuple[str, int, str]] = field(default_factory=list)


@dataclass
class Design:
    """What :func:`study_design` measured on the assembled lists."""

    lists: int
    runs_per_model: int
    calls: int
    calls_max: int
    input_tokens: int
    output_tokens: int
    judge_input_tokens: int
    grid: dict[str, list[str]]
    tasks: int
    seeds: list[int]
    types: dict[str, TypeDesign]
    notes: list[str]


def _tools(cfg: Mapping[str, Any]) -> Any:
    from ..canaries import ingest_tools
    from ..mcp.environments import is_mcp
    from ..store.jsonio import read_json_input
    from ..tools import mcp_definitions

    if cfg["environment"]["kind"] == "bfcl":  # BFCL's functions, annotated as the export does
        from ..bfcl.entries import task_suite

        return ingest_tools(task_suite(cfg["environment"]["categories"]).annotated_tools(), "bfcl-eval", strict=True)
    if not is_mcp(cfg["environment"]):
        return ingest_tools(mcp_definitions(), "builtin tools", strict=True)
    path = Path(cfg["study"]["output_dir"]) / "tools.json"
    if not path.is_file():
        raise InputError("params.yaml", "environment.kind", f"mcp: plan reads the listed tools from {path}; list them first "
                         "(snakemake --cores 1 " + str(path) + ")")
    from ..mcp.environments import tools_of

    return ingest_tools(tools_of(read_json_input(path, "tools file"), str(path)), str(path), strict=True)


def study_design(cfg: Mapping[str, Any]) -> Design:
    """Build every tool list of the study with the workflow's code and measure it."""
    from ..agents.loop import SYSTEM_PROMPT
    from ..assembly.assembly import build_assemblies
    from ..assembly.dose import DOSE_CONDITION, dose_assemblies, dose_records
    from ..canaries import builtin_executor, study_pool, suite_from_tasks
    from ..tasks.tasks import load_tasks, select_tasks
    from .config import run_grid, turns_needed

    notes: list[str] = []
    tools = _tools(cfg)
    if cfg["environment"]["kind"] == "bfcl":  # the suite is BFCL's entries (canarykit.bfcl)
        from ..bfcl.entries import task_suite
        from ..tasks.tasks import parse_tasks

        suite: list[Any] = parse_tasks(task_suite(cfg["environment"]["categories"]).document, "bfcl-eval", tools.tools)
    else:
        suite = load_tasks(cfg["study"]["tasks"], tools=tools.tools)
    tasks: list[Any] = select_tasks(suite, cfg["study"]["limit_tasks"])
    by_id = {t.id: t for t in tasks}
    can = cfg["canaries"]
    if can["generator"] != "offline":
        notes.append(f"canaries.generator {can['generator']}: planned with the offline wording (same tools, lengths close)")
    grid = run_grid(dict(cfg))
    seeds = [int(s) for s in cfg["study"]["seeds"]]
    max_turns = int(cfg["agent"]["max_turns"])
    base = len(SYSTEM_PROMPT) // CHARS_PER_TOKEN
    d = Design(0, 0, 0, 0, 0, 0, 0, grid, len(tasks), seeds, {t: TypeDesign() for t in CANARY_TYPES}, notes)
    primary = can["pool"]
    quiet = _Null()
    for pool, conditions in grid.items():
        if not conditions:
            continue
        doc = study_pool(tools, tasks, pool, fit=can["fit"], suffixes=can["suffixes"][pool],
                         control_suffixes=can["control_suffixes"][pool], special_cases=can["special_cases"],
                         variants=int(can.get("variants") or 1), wording_seed=can.get("wording_seed"),
                         generator="offline", source="plan", tasks_source=cfg["study"]["tasks"])
        rest = [c for c in conditions if c != DOSE_CONDITION]
        lists = build_assemblies(tasks, tools.tools, doc.canaries, pool, rest, seeds, doc.controls, log=quiet) if rest else []
        if DOSE_CONDITION in conditions:  # the dose lists (docs/dose.md), from the look-alikes the pool file would hold
            dose = cfg["study"]["dose"]
            # built from the whole suite, as the workflow's pool file is (granularity cases are checked against it)
            records = dose_records(tools.tools, [t.correct_tools[0] for t in suite if t.correct_tools], pool,
                                   k=max(dose["levels"]), kinds=dose["kinds"], fit=can["fit"], suffixes=can["suffixes"][pool],
                                   special_cases=can["special_cases"],
                                   suite=suite_from_tasks(suite, cfg["study"]["tasks"], builtin_executor(tools.tools)))
            lists += dose_assemblies(tasks, tools.tools, records, pool, seeds, levels=dose["levels"], kinds=dose["kinds"])[0]
        for a in lists:
            task = by_id[a.task_id]
            n = min(turns_needed(task), max_turns)
            fixed = base + len(task.prompt) // CHARS_PER_TOKEN + len(json.dumps(list(a.tools))) // CHARS_PER_TOKEN
            d.lists += 1
            d.calls += n
            d.calls_max += max_turns
            d.input_tokens += n * fixed + (CALL_TOKENS + RESULT_TOKENS) * n * (n - 1) // 2
            d.output_tokens += CALL_TOKENS * (n - 1) + ANSWER_TOKENS
            d.judge_input_tokens += len(task.prompt) // CHARS_PER_TOKEN + (CALL_TOKENS + RESULT_TOKENS) * (n - 1) + ANSWER_TOKENS
            if pool == primary:
                _opportunities(d, a)
    d.runs_per_model = d.lists
    for t, td in d.types.items():
        # one run per (task, seed) (a list may hold two canaries of a type: its first is the item)
        first = {(g, s): i for g, s, i in reversed(td.runs)}
        td.runs = sorted((g, s, i) for (g, s), i in first.items())
        twins = {(g, s) for g, s, _ in td.pairs}
        td.pairs = [(g, s, i) for g, s, i in td.runs if (g, s) in twins]
        if td.runs and "control" in grid.get(primary, []) and not td.pairs:
            notes.append(f"{t}: offered, but never as a twin too: no control effect")
    return d


class _Null:
    def write(self, _: str) -> int:
        return 0


def _opportunities(d: Design, a: Any) -> None:
    """Record the per-type opportunities of one primary-pool list (declared: canaries;
    control: twins, keyed by (task, seed) until :func:`study_design` pairs them)."""
    for o in a.offered:
        if a.condition == "declared" and o.canary_type in d.types:
            d.types[o.canary_type].runs.append((a.task_id, int(a.seed), str(o.canary_id)))
        elif a.condition == "control" and getattr(o, "control_type", None) in d.types:
            d.types[o.control_type].pairs.append((a.task_id, int(a.seed), str(o.control_id)))
