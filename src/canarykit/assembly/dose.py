"""The dose condition's tool lists (issue 21): for each (task, seed), kind and k, the real
tools plus k look-alikes of the task's first needed real tool.

A kind is a canary type (k canaries of that type: bank entries 1..k,
:func:`~canarykit.canaries.bank_canaries`) or ``distractor`` (k neutral near-duplicates with
the real tool's description and schema that work like it,
:func:`~canarykit.canaries.distractors`: the untyped curve of the tool-overload benchmarks).
k = 0 is the real tools alone, the same list for every kind; it is assembled once per kind
so that every (kind, k) cell of a (task, seed) exists and each curve starts from its own
runs.

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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..canaries import bank_canaries, distractors
from ..errors import InputError
from ..store.records import OfferedTool
from ..types import CANARY_TYPES, DISTRACTOR, DOSE_KINDS, DOSE_LEVELS
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


def look_alikes(tool: Mapping[str, Any], kind: str, k: int, taken: Sequence[str], **bank: Any) -> list[dict[str, Any]]:
    """The k look-alikes of ``tool`` for ``kind`` (fewer when the bank runs out)."""
    if kind == DISTRACTOR:
        return distractors(tool, k, taken=taken)
    if kind not in CANARY_TYPES:
        raise InputError("params.yaml", "study.dose.kinds", f"expected kinds among {list(DOSE_KINDS)}, got {kind!r}")
    return bank_canaries(tool, kind, k, taken=taken, **bank)


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
    first needed real tools) and kind, up to ``k`` of them, in bank order (``variant`` 1, 2,
    ...), ids prefixed with :data:`DOSE_ID_PREFIX`, ``type`` the kind (``distractor`` for
    the neutral ones). ``bank``: :func:`~canarykit.canaries.bank_canaries`' keywords
    (``suffixes``, ``suite``, ``special_cases``, ``fit``)."""
    by_name = {str(t["name"]): t for t in real_tools}
    names = list(by_name)
    out: list[dict[str, Any]] = []
    for target in dict.fromkeys(str(t) for t in targets):
        if target not in by_name:
            raise InputError("tasks", "correct_tools", f"{target!r} is not a real tool of the environment")
        for kind in kinds:
            for i, rec in enumerate(look_alikes(by_name[target], kind, k, names, pool=pool, **bank) if k else [], start=1):
                out.append({**rec, "id": DOSE_ID_PREFIX + str(rec["id"]), "type": kind, "shadows": target,
                            "variant": i, "pool": pool})
    return out


def dose_list(task: TaskLike, seed: int, kind: str, k: int, real_tools: Sequence[Mapping[str, Any]], pool: str,
              stand_ins: Sequence[Mapping[str, Any]]) -> Assembly:
    """One dose list: the real tools and ``stand_ins`` (look-alikes of the task's first
    needed tool), counterbalanced as in the other conditions (module docstring)."""
    entries: dict[str, tuple[dict[str, Any], OfferedTool]] = {}
    for t in real_tools:
        d = {"name": t["name"], "description": t["description"], "inputSchema": t["inputSchema"]}
        entries[f"real:{t['name']}"] = (d, OfferedTool(name=t["name"]))
    target = str(task.correct_tools[0])
    keys = []
    for rec in stand_ins:
        d, off = stand_in(rec, twin=False)
        entries[f"canary:{rec['id']}"] = (d, off)
        keys.append(f"canary:{rec['id']}")
    order = list_order(list(entries), seed, task.id, {f"real:{target}": keys}, canary_first(seed, task.id))
    tools = tuple(entries[key][0] for key in order)
    offered = tuple(entries[key][1] for key in order)
    return Assembly(pool, DOSE_CONDITION, int(seed), str(task.id), tools, offered, tool_list_hash(tools), {}, dose_arm(kind, k))


def dose_assemblies(
    tasks: Sequence[TaskLike],
    real_tools: Sequence[Mapping[str, Any]],
    records: Sequence[Mapping[str, Any]],
    pool: str,
    seeds: Sequence[int],
    *,
    levels: Sequence[int] = DOSE_LEVELS,
    kinds: Sequence[str] = DOSE_KINDS,
) -> tuple[list[Assembly], list[Skipped]]:
    """Every dose list of one pool, in (seed, task, kind, k) order, from ``records``
    (:func:`dose_records`; the pool file's ``dose`` list), and the cells skipped."""
    names = {str(t["name"]) for t in real_tools}
    by_cell: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for rec in records:
        by_cell.setdefault((str(rec["shadows"]), str(rec["type"])), []).append(rec)
    for recs in by_cell.values():
        recs.sort(key=lambda r: int(r.get("variant", 1)))
    for kind in kinds:
        if kind not in DOSE_KINDS:
            raise InputError("params.yaml", "study.dose.kinds", f"expected kinds among {list(DOSE_KINDS)}, got {kind!r}")
    built: list[Assembly] = []
    skipped: list[Skipped] = []
    for task in tasks:
        if not task.correct_tools or str(task.correct_tools[0]) not in names:
            raise InputError("tasks", f"{task.id}.correct_tools", "the dose condition needs the task's first needed real tool")
        target = str(task.correct_tools[0])
        for seed in seeds:
            for kind in kinds:
                have_all = by_cell.get((target, kind), [])
                for k in levels:
                    if len(have_all) < k:
                        if seed == seeds[0]:
                            skipped.append(Skipped(str(task.id), kind, int(k), len(have_all)))
                        continue
                    built.append(dose_list(task, int(seed), kind, int(k), real_tools, pool, have_all[:k]))
    return built, skipped


def skipped_lines(skipped: Sequence[Skipped], pool: str) -> list[str]:
    """Log lines: the (kind, k) cells some tasks are not offered, with how many tasks."""
    per: dict[tuple[str, int], list[Skipped]] = {}
    for s in skipped:
        per.setdefault((s.kind, s.k), []).append(s)
    return [f"assemble: pool {pool}, dose: {kind} at k={k} not offered to {len(v)} tasks (their tool has "
            f"{min(x.available for x in v)} to {max(x.available for x in v)} such look-alikes): "
            + ", ".join(x.task_id for x in v[:5]) + (", ..." if len(v) > 5 else "")
            for (kind, k), v in sorted(per.items())]
