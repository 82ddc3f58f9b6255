"""The dose condition's tool lists (issue 21): for each (task, seed), kind and k, the real
tools plus k look-alikes of the task's first needed real tool.

A kind is a canary type (k canaries of that type: bank entries 1..k,
:func:`~canarykit.canaries.bank_canaries`) or ``distractor`` (k neutral near-duplicates with
the real tool's description and schema that work like it,
:func:`~canarykit.canaries.distractors`: the untyped curve of the tool-overload benchmarks).
k = 0 is the real tools alone, the same list for every kind; it is assembled once per kind
so that every (kind, k) cell of a (task, seed) exists and each curve starts from its own
runs.

The order is the assembler's (:mod:`canarykit.assembly`): the real tools and look-alikes are
shuffled by (seed, task), then the look-alikes of the tool sit all before it or all after it
in the group's own slots; the side is :func:`~canarykit.assembly.canary_first`'s, so
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

from .assembly import Assembly, TaskLike, _order, _stand_in, canary_first, tool_list_hash
from .canaries import bank_canaries, distractors
from .errors import InputError
from .records import OfferedTool
from .types import CANARY_TYPES, DISTRACTOR, DOSE_KINDS, DOSE_LEVELS

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
    """A (task, kind, k) cell the bank could not fill: how many look-alikes it had."""

    task_id: str
    kind: str
    k: int
    available: int


def look_alikes(tool: Mapping[str, Any], kind: str, k: int, taken: Sequence[str], **bank: Any) -> list[dict[str, Any]]:
    """The k look-alikes of ``tool`` for ``kind`` (fewer when the bank runs out)."""
    if kind == DISTRACTOR:
        return distractors(tool, k, taken=taken)
    if kind not in CANARY_TYPES:
        raise InputError("params.yaml", "study.dose.kinds", f"expected kinds among {list(DOSE_KINDS)}, got {kind!r}")
    return bank_canaries(tool, kind, k, taken=taken, **bank)


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
        d, off = _stand_in({**rec, "type": rec.get("type", rec.get("kind"))}, twin=False)
        entries[f"canary:{rec['id']}"] = (d, off)
        keys.append(f"canary:{rec['id']}")
    order = _order(list(entries), seed, task.id, {f"real:{target}": keys}, canary_first(seed, task.id))
    tools = tuple(entries[key][0] for key in order)
    offered = tuple(entries[key][1] for key in order)
    return Assembly(pool, DOSE_CONDITION, int(seed), str(task.id), tools, offered, tool_list_hash(tools), {}, dose_arm(kind, k))


def dose_assemblies(
    tasks: Sequence[TaskLike],
    real_tools: Sequence[Mapping[str, Any]],
    pool: str,
    seeds: Sequence[int],
    *,
    levels: Sequence[int] = DOSE_LEVELS,
    kinds: Sequence[str] = DOSE_KINDS,
    **bank: Any,
) -> tuple[list[Assembly], list[Skipped]]:
    """Every dose list of one pool, in (seed, task, kind, k) order, and the cells skipped.
    ``bank``: :func:`~canarykit.canaries.bank_canaries`' keywords (``suffixes``, ``suite``,
    ``special_cases``, ``fit``); ``pool`` is passed on too."""
    by_name = {str(t["name"]): t for t in real_tools}
    names = list(by_name)
    built: list[Assembly] = []
    skipped: list[Skipped] = []
    top = max(levels, default=0)
    for task in tasks:
        if not task.correct_tools or str(task.correct_tools[0]) not in by_name:
            raise InputError("tasks", f"{task.id}.correct_tools", "the dose condition needs the task's first needed real tool")
        tool = by_name[str(task.correct_tools[0])]
        # the largest k once per kind: the lower levels are its first k (bank entries 1..k)
        pools = {kind: look_alikes(tool, kind, top, names, pool=pool, **bank) if top else [] for kind in kinds}
        for seed in seeds:
            for kind in kinds:
                for k in levels:
                    have = pools[kind][:k]
                    if len(have) < k:
                        if seed == seeds[0]:
                            skipped.append(Skipped(str(task.id), kind, int(k), len(have)))
                        continue
                    built.append(dose_list(task, int(seed), kind, int(k), real_tools, pool, have))
    return built, skipped
