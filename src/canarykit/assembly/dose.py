"""The dose condition's tool lists (issue 21, 27): for each (task, seed), kind and k, the real
tools plus k look-alikes of the task's first needed real tool.

A kind is a canary type T (k canaries of T), ``twin:T`` (k twins of T: the same wordings
without T's tell, the type's crowding baseline) or ``distractor`` (k neutral near-duplicates
with the real tool's description and schema that work like it,
:func:`~canarykit.canaries.distractors`: the untyped curve of the tool-overload benchmarks).
k = 0 is the real tools alone, the same list for every kind; it is assembled once per kind
so that every (kind, k) cell of a (task, seed) exists and each curve starts from its own
runs.

**Wordings are drawn, not taken in bank order.** The pool file's ``dose`` list holds every
entry of each type's bank (:func:`~canarykit.canaries.bank_pairs`) for each first needed
tool. For each (task, seed) and type, a random order of the entries the tool has is drawn
from a generator seeded by ``study.dose.seed``, the task and the seed (:func:`wording_draw`);
the level-k list offers its first k entries, so the levels of one (task, seed) nest, and
each level's k wordings are a uniform random k-subset of the bank. T and ``twin:T`` of one
(task, seed) share the draw: the typed list and its twin list offer the same wordings, and
differ only in T's tell. What was drawn is in the assembly table (each offered look-alike's
``canary_id`` / ``control_id`` names its bank entry, ``@v<i>``) and in
:func:`draw_lines` (the log). Distractors have no wordings: their name tails go in order.

The order is the assembler's (:mod:`canarykit.assembly.assembly`): the real tools and look-alikes are
shuffled by (seed, task), then the look-alikes of the tool sit all before it or all after it
in the group's own slots; the side is :func:`~canarykit.assembly.assembly.canary_first`'s, so
consecutive seeds alternate it as in every other condition.

A list is keyed like every other assembly, with ``condition = "dose"`` and ``arm =
"<kind>@<k>"`` (:func:`dose_arm`, :func:`parse_dose_arm`). A (task, kind, k) the bank cannot
fill (a granularity trap has as many look-alikes as its tool has distinct natural cases; a
type that does not fit the tool has none) is not offered: :func:`dose_assemblies` returns
what it skipped so the caller can log it, and that task is simply absent from that cell.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..canaries import bank_pairs, control_for_task, distractors
from ..errors import InputError
from ..store.jsonio import content_hash
from ..store.records import OfferedTool
from ..types import DISTRACTOR, DOSE_KINDS, DOSE_LEVELS, TWIN_PREFIX
from .assembly import Assembly, TaskLike, canary_first, list_order, stand_in, tool_list_hash

#: The condition's name in assembly tables and runs.
DOSE_CONDITION: Final = "dose"


def dose_arm(kind: str, k: int) -> str:
    """The arm of a dose list: ``<kind>@<k>``."""
    return f"{kind}@{int(k)}"


def parse_dose_arm(arm: str, source: str = "runs") -> tuple[str, int]:
    """``(kind, k)`` of a dose arm; InputError naming ``source`` when it is not one."""
    kind, sep, k = str(arm).rpartition("@")
    if not sep or kind not in DOSE_KINDS or not k.isdigit():
        raise InputError(source, "arm", f"expected <kind>@<k> with kind one of {list(DOSE_KINDS)}, got {arm!r}")
    return kind, int(k)


@dataclass(frozen=True)
class Skipped:
    """A (task, kind, k) cell the records cannot fill: how many look-alikes there are."""

    task_id: str
    kind: str
    k: int
    available: int


#: Prefix of a dose look-alike's id: its records live beside the pool's own canaries (the
#: pool file's ``dose`` list) and must never share an id with one of them.
DOSE_ID_PREFIX: Final = "dose:"


def _kind_type(kind: str) -> str:
    """The canary type of a typed or twin kind (``twin:T`` -> T)."""
    return kind.removeprefix(TWIN_PREFIX)


def _check_kinds(kinds: Sequence[str]) -> None:
    for kind in kinds:
        if kind not in DOSE_KINDS:
            raise InputError("params.yaml", "study.dose.kinds", f"expected kinds among {list(DOSE_KINDS)}, got {kind!r}")


def dose_records(
    real_tools: Sequence[Mapping[str, Any]],
    targets: Sequence[str],
    pool: str,
    *,
    k: int = max(DOSE_LEVELS),
    kinds: Sequence[str] = DOSE_KINDS,
    **bank: Any,
) -> list[dict[str, Any]]:
    """The look-alikes the dose lists draw from: for each tool of ``targets`` (the tasks'
    first needed real tools), every entry of each typed kind's bank (its canaries; for
    ``twin:T`` their twins), and ``k`` distractors; ids prefixed with
    :data:`DOSE_ID_PREFIX`, ``kind`` the kind, ``type`` the canary type (``distractor`` for
    the neutral ones), ``variant`` the bank entry and ``wording`` its label. ``bank``:
    :func:`~canarykit.canaries.bank_canaries`' keywords (``suffixes``, ``suite``,
    ``special_cases``, ``fit``)."""
    _check_kinds(kinds)
    by_name = {str(t["name"]): t for t in real_tools}
    names = list(by_name)
    out: list[dict[str, Any]] = []
    for target in dict.fromkeys(str(t) for t in targets):
        if target not in by_name:
            raise InputError("tasks", "correct_tools", f"{target!r} is not a real tool of the environment")
        pairs: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
        for kind in kinds:
            if kind == DISTRACTOR:
                recs = [{**r, "type": DISTRACTOR} for r in distractors(by_name[target], k, taken=names)] if k else []
            else:
                ctype = _kind_type(kind)
                if ctype not in pairs:
                    pairs[ctype] = bank_pairs(by_name[target], ctype, taken=names, pool=pool, **bank)
                recs = [twin if kind.startswith(TWIN_PREFIX) else canary for canary, twin in pairs[ctype]]
            for rec in recs:
                out.append({**rec, "id": DOSE_ID_PREFIX + str(rec["id"]), "kind": kind, "shadows": target, "pool": pool})
    return out


def wording_draw(draw_seed: int, task_id: str, seed: int, canary_type: str, variants: Sequence[int]) -> list[int]:
    """The order in which a (task, seed) is offered the bank entries ``variants`` of
    ``canary_type``: a permutation from a generator seeded by (``draw_seed``, task, seed,
    type). Level k offers the first k."""
    order = sorted(int(v) for v in variants)
    random.Random(content_hash(["canarykit-dose-wordings", int(draw_seed), str(task_id), int(seed), canary_type])).shuffle(order)
    return order


def dose_list(task: TaskLike, seed: int, kind: str, k: int, real_tools: Sequence[Mapping[str, Any]], pool: str,
              stand_ins: Sequence[Mapping[str, Any]]) -> Assembly:
    """One dose list: the real tools and ``stand_ins`` (look-alikes of the task's first
    needed tool; twins for a ``twin:T`` kind, offered as twins), counterbalanced as in the
    other conditions (module docstring)."""
    entries: dict[str, tuple[dict[str, Any], OfferedTool, Mapping[str, Any] | None]] = {}
    for t in real_tools:
        d = {"name": t["name"], "description": t["description"], "inputSchema": t["inputSchema"]}
        entries[f"real:{t['name']}"] = (d, OfferedTool(name=t["name"]), None)
    twin = kind.startswith(TWIN_PREFIX)
    target = str(task.correct_tools[0])
    keys = []
    for rec in stand_ins:
        entries[f"canary:{rec['id']}"] = (*stand_in(rec, twin=twin), rec if twin else None)
        keys.append(f"canary:{rec['id']}")
    order = list_order(list(entries), seed, task.id, {f"real:{target}": keys}, canary_first(seed, task.id))
    tools = tuple(entries[key][0] for key in order)
    offered = tuple(entries[key][1] for key in order)
    twins = {str(r["id"]): r for key in order if (r := entries[key][2]) is not None}
    behaviours = [r["behaviour"] if (r := entries[key][2]) is not None else None for key in order]
    return Assembly(pool, DOSE_CONDITION, int(seed), str(task.id), tools, offered,
                    tool_list_hash(tools, behaviours if twins else None), twins, dose_arm(kind, k))


def _offered_twins(task: TaskLike, recs: Sequence[Mapping[str, Any]],
                   real_tools: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]] | None:
    """The twins as offered to ``task`` (a granularity twin takes the task's one case), or
    None when one cannot be offered to it (:func:`~canarykit.canaries.control_for_task`)."""
    names = [str(t["name"]) for t in real_tools]
    schemas = {str(t["name"]): t.get("inputSchema") for t in real_tools}
    out: list[Mapping[str, Any]] = []
    for rec in recs:
        ctl = control_for_task(rec, task, taken=names, schema=schemas.get(str(rec["shadows"])))
        if ctl is None:
            return None
        out.append(ctl)
    return out


def dose_assemblies(
    tasks: Sequence[TaskLike],
    real_tools: Sequence[Mapping[str, Any]],
    records: Sequence[Mapping[str, Any]],
    pool: str,
    seeds: Sequence[int],
    *,
    levels: Sequence[int] = DOSE_LEVELS,
    kinds: Sequence[str] = DOSE_KINDS,
    draw_seed: int = 0,
) -> tuple[list[Assembly], list[Skipped]]:
    """Every dose list of one pool, in (seed, task, kind, k) order, from ``records``
    (:func:`dose_records`; the pool file's ``dose`` list), and the cells skipped. Each
    (task, seed, type) draws its wordings (:func:`wording_draw`, seeded by ``draw_seed``)."""
    _check_kinds(kinds)
    names = {str(t["name"]) for t in real_tools}
    by_cell: dict[tuple[str, str], dict[int, Mapping[str, Any]]] = {}
    for rec in records:  # a pool file from before twins has no ``kind``: its ``type`` is the kind
        by_cell.setdefault((str(rec["shadows"]), str(rec.get("kind", rec["type"]))), {})[int(rec.get("variant", 1))] = rec
    built: list[Assembly] = []
    skipped: list[Skipped] = []
    for task in tasks:
        if not task.correct_tools or str(task.correct_tools[0]) not in names:
            raise InputError("tasks", f"{task.id}.correct_tools", "the dose condition needs the task's first needed real tool")
        target = str(task.correct_tools[0])
        for seed in seeds:
            for kind in kinds:
                have = by_cell.get((target, kind), {})
                if kind == DISTRACTOR:
                    order = sorted(have)
                else:  # T and twin:T share the draw; over the entries both have when both are offered
                    order = wording_draw(draw_seed, str(task.id), int(seed), _kind_type(kind), list(have))
                chosen: list[Mapping[str, Any]] | None = [have[v] for v in order]
                if chosen and kind.startswith(TWIN_PREFIX):
                    chosen = _offered_twins(task, chosen, real_tools)
                for k in levels:
                    if chosen is None or len(chosen) < k:
                        if seed == seeds[0]:
                            skipped.append(Skipped(str(task.id), kind, int(k), len(chosen or [])))
                        continue
                    built.append(dose_list(task, int(seed), kind, int(k), real_tools, pool, chosen[:k]))
    return built, skipped


def draw_lines(lists: Sequence[Assembly], pool: str, draw_seed: int) -> list[str]:
    """Log lines: how the wordings were drawn, and how often each bank entry was offered at
    k = 1 per type (a uniform draw offers each about equally often)."""
    counts: dict[str, dict[str, int]] = {}
    for a in lists:
        kind, k = parse_dose_arm(a.arm)
        if k != 1 or kind == DISTRACTOR or kind.startswith(TWIN_PREFIX):
            continue
        for o in a.offered:
            if o.canary_id is not None:
                entry = o.canary_id.rpartition("@v")[2] if "@v" in o.canary_id else "1"
                per = counts.setdefault(kind, {})
                per[entry] = per.get(entry, 0) + 1
    head = f"assemble: pool {pool}, dose: wordings drawn at random per (task, seed) from each bank (study.dose.seed {draw_seed})"
    return [head] + [f"assemble: pool {pool}, dose: {kind} at k=1 offered entries " +
                     ", ".join(f"{e}: {n}" for e, n in sorted(per.items(), key=lambda x: int(x[0])))
                     for kind, per in sorted(counts.items())]


def skipped_lines(skipped: Sequence[Skipped], pool: str) -> list[str]:
    """Log lines: the (kind, k) cells some tasks are not offered, with how many tasks."""
    per: dict[tuple[str, int], list[Skipped]] = {}
    for s in skipped:
        per.setdefault((s.kind, s.k), []).append(s)
    return [f"assemble: pool {pool}, dose: {kind} at k={k} not offered to {len(v)} tasks (their tool has "
            f"{min(x.available for x in v)} to {max(x.available for x in v)} such look-alikes): "
            + ", ".join(x.task_id for x in v[:5]) + (", ..." if len(v) > 5 else "")
            for (kind, k), v in sorted(per.items())]
