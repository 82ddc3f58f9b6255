"""The assembler: the tool list an agent sees for each (pool, condition, seed, task).

For a task, the offered list is every real tool (or the real tools the task names: a BFCL
entry is offered its classes' functions, :func:`task_tools`) plus the canaries of the
condition's types that shadow the task's correct tools (``baseline``: none; ``declared``, ``control`` and
``mirrored``: the task's declared types; ``full``: all six), in a deterministic order per
(seed, task). The order permutes stable keys (real tool names and canary ids), never
descriptions, so

- the same assembly is byte-identical for every model and every rerun;
- the standard and subtle pools offer the same tools in the same order (only descriptions
  differ), so the ablation compares like with like;
- editing one canary type's suffix changes exactly the tool lists that hold a canary of that
  type (their ``tool_list_hash``), and nothing else.

**Order: a shuffle, then a counterbalanced position.** The keys are shuffled by (seed,
task); then, for each real tool with canaries, the slots the tool and its canaries occupy
are refilled so that the canaries sit either all *before* the real tool or all *after* it
(keeping their shuffled order among themselves). Which one is fixed per (task, seed): a
hash of the task id picks the side for even seeds, and odd seeds take the other side, so
consecutive seeds (0, 1, 2, ...) alternate and no canary keeps the same side of its real
tool over all seeds (with independent shuffles a quarter of them did, over three seeds).
Every canary of one list is on the same side, so a run has one ``canary_before_real``.

**Controls** (condition ``control``): one list per (seed, task) and per canary type T the
``declared`` list of that (seed, task) offers, ``arm = T``: the ``declared`` list with only
T's canary (canaries, when T shadows several correct tools) replaced by T's twin (its
control record, :mod:`canarykit.canaries`), in the canary's slot; every other canary stays.
The contrast for T pairs that run with the ``declared`` run of the same (task, seed), so
the lists of a pair differ in T's stand-in alone: swapping every canary at once let the
types that share a real tool contaminate each other (after a 401 from a ``private_``
canary an agent may try ``advanced_``; in an all-twins list the working ``private_`` twin
ends the search instead). A granularity twin goes through
:func:`~canarykit.canaries.control_for_task`. The twin's behaviour is part of the list's
``tool_list_hash``: a twin may read like its canary while it works like the real tool, and
the run identity must tell the two apart. Every other condition has ``arm = ""``.

**Wording variants.** A pool may hold several variants of the canary of one (tool, type)
(records with ``variant`` i, 1-based; ids ``<type>:<tool>`` and ``<type>:<tool>@v<i>``).
Each (task, seed) is offered ONE variant, the same for every type and every condition, so
the ``declared`` and ``control`` runs of a pair see the same wording
(:func:`assign_variants`: balanced within a seed, rotating over consecutive seeds). A pool
with one variant per (tool, type) gives the lists it always gave.

**Mirrored** (condition ``mirrored``): the ``declared`` list of the same (seed, task) with
each real tool and its canaries trading sides in the same slots: a canary that sat before
its real tool sits after it (with one canary per tool, the two swap slots). So every
(task, seed) is offered both orders, and the effect of order on trap rates is estimated
paired (``position_effect`` in stats.json).

A (tool, type) the pool has no canary for (``canaries.fit: fitted`` skips types whose
defect means nothing for the tool) is simply not offered; :func:`unoffered_canaries`
counts them and the assembler logs the counts.

**Granularity offerings need the task's one case.** A granularity canary (in every
condition) and its twin (in ``control``) are offered to a task only when its plan calls
the shadowed tool with exactly one case (:func:`canarykit.canaries.granularity_case`): the
control is then hard-coded to exactly that case and the canary to another one. A task
whose plan calls the tool with several different cases (hard-040: the weather in Singapore
and in Toronto), or that has no plan, gets neither (any one hard-coded case would be a
trap for the other calls, and a canary without its control would be unpaired);
:func:`withheld_granularity` lists them and the assembler logs them.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import polars as pl

from ..canaries import control_for_task, granularity_case
from ..errors import InputError
from ..store.jsonio import canonical_json, content_hash
from ..store.records import OfferedTool, canary_before_real
from ..store.schemas import AssemblyTable, validate
from ..types import CANARY_TYPES

#: Conditions whose lists are the ``declared`` list rearranged (``mirrored``) or with
#: stand-ins for the canaries (``control``).
_DECLARED_LIKE = ("declared", "control", "mirrored")


class TaskLike(Protocol):
    id: str
    correct_tools: Sequence[str]
    declared_types: Sequence[str]


@dataclass(frozen=True)
class Assembly:
    """One assembled tool list, in the order the agent sees it.

    ``controls`` maps the id of each offered twin to its record as offered (a granularity
    twin instantiated for the task); empty outside the ``control`` condition. ``arm``: the
    type whose twin the list offers (``control``), ``""`` in every other condition.
    """

    pool: str
    condition: str
    seed: int
    task_id: str
    tools: tuple[dict[str, Any], ...]
    offered: tuple[OfferedTool, ...]
    tool_list_hash: str
    controls: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    arm: str = ""

    @property
    def key(self) -> tuple[str, int, str, str]:
        """``(condition, seed, task_id, arm)``: what identifies the list within its pool."""
        return (self.condition, self.seed, self.task_id, self.arm)

    @property
    def canary_before_real(self) -> bool | None:
        """Whether the list's canaries (controls in ``control``) sit before the real tools
        they shadow: see :func:`canary_before_real`."""
        return canary_before_real(self.offered)


def condition_types(condition: str, task: TaskLike) -> tuple[str, ...]:
    """Canary types injected (or, for ``control``, controlled) for ``task`` under ``condition``."""
    if condition == "baseline":
        return ()
    if condition in _DECLARED_LIKE:
        return tuple(t for t in CANARY_TYPES if t in set(task.declared_types))
    if condition == "full":
        return CANARY_TYPES
    raise ValueError(f"unknown condition {condition!r}")


def tool_list_hash(
    tools: Iterable[Mapping[str, Any]], behaviours: Sequence[Mapping[str, Any] | None] | None = None
) -> str:
    """Hash of the full ordered tool definitions an agent is sent.

    ``behaviours`` (one entry per tool, None for real tools and canaries) adds what a
    stand-in control does: a control may read exactly like its canary, so the definitions
    alone would not tell the two lists apart. Lists without controls hash as before.
    """
    entries = [{"name": t["name"], "description": t["description"], "inputSchema": t["inputSchema"]} for t in tools]
    if behaviours is not None:
        for e, b in zip(entries, behaviours, strict=True):
            if b is not None:
                e["control"] = dict(b)
    return content_hash(entries)


def canary_first(seed: int, task_id: str) -> bool:
    """Whether the canaries of the (seed, task) ``declared`` list sit before their real tools.

    A hash of the task id picks the side for even seeds; odd seeds take the other side, so
    consecutive seeds alternate (``mirrored`` lists take the side the ``declared`` list does not).
    """
    base = content_hash(["canarykit-position", str(task_id)], 8)
    return (int(base, 16) % 2 == 0) != (int(seed) % 2 == 1)


def list_order(keys: list[str], seed: int, task_id: str, groups: Mapping[str, Sequence[str]], before: bool) -> list[str]:
    """The shuffled keys, then each group (a real tool's key and its canaries' keys) laid out
    in the group's own slots with the canaries all before (``before``) or all after the tool."""
    ordered = sorted(keys)
    random.Random(f"canarykit-assembly|{seed}|{task_id}").shuffle(ordered)
    pos = {k: i for i, k in enumerate(ordered)}
    for real_key, stand_ins in groups.items():
        if not stand_ins:
            continue
        slots = sorted(pos[k] for k in (real_key, *stand_ins))
        inner = sorted(stand_ins, key=pos.__getitem__)
        layout = [*inner, real_key] if before else [real_key, *inner]
        for slot, key in zip(slots, layout, strict=True):
            ordered[slot] = key
    return ordered


def stand_in(record: Mapping[str, Any], *, twin: bool) -> tuple[dict[str, Any], OfferedTool]:
    """The tool definition and the offered entry of a canary (or of a twin, ``twin``)."""
    d = {"name": record["name"], "description": record["description"], "inputSchema": record["inputSchema"]}
    visible = False if record.get("selection_visible") is False else None
    if twin:
        return d, OfferedTool(name=record["name"], shadows=record["shadows"], control_id=record["id"],
                              control_type=record["type"], selection_visible=visible)
    return d, OfferedTool(name=record["name"], canary_id=record["id"], canary_type=record["type"], shadows=record["shadows"],
                          selection_visible=visible)


def offered_types(task: TaskLike, real_tools: Sequence[Mapping[str, Any]],
                  canaries: Mapping[tuple[str, str], Mapping[str, Any]]) -> tuple[str, ...]:
    """The canary types the ``declared`` list of ``task`` offers (the arms of its ``control``
    lists), in :data:`~canarykit.types.CANARY_TYPES` order."""
    schemas = {str(t["name"]): t.get("inputSchema") for t in real_tools}
    present = {str(c["type"]) for c in _chosen(task, "declared", canaries, schemas)}
    return tuple(t for t in CANARY_TYPES if t in present)


def _chosen(task: TaskLike, condition: str, canaries: Mapping[tuple[str, str], Mapping[str, Any]],
            schemas: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The canaries the condition offers the task, per correct tool then type."""
    return [
        c for shadowed in dict.fromkeys(task.correct_tools) for ctype in condition_types(condition, task)
        if (c := canaries.get((shadowed, ctype))) is not None
        and (ctype != "granularity_trap" or granularity_case(task, shadowed, schemas.get(shadowed))[0] is not None)
    ]


def assemble(
    task: TaskLike,
    condition: str,
    seed: int,
    real_tools: Sequence[Mapping[str, Any]],
    canaries: Mapping[tuple[str, str], Mapping[str, Any]],
    pool: str,
    controls: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    arm: str = "",
) -> Assembly:
    """Assemble one tool list. ``canaries`` maps (shadowed tool, type) to a canary record
    (one variant: :func:`variant_index`); ``controls`` maps a canary id to its twin record
    (needed for ``control`` only); ``arm`` is the type whose canaries the ``control`` list
    swaps for their twins (one of :func:`offered_types`), ``""`` in every other condition."""
    if (condition == "control") != bool(arm):
        raise ValueError(f"condition {condition!r} with arm {arm!r}: the control lists have one arm per offered type, "
                         "every other condition the arm ''")
    entries: dict[str, tuple[dict[str, Any], OfferedTool, Mapping[str, Any] | None]] = {}
    groups: dict[str, list[str]] = {}
    for t in real_tools:
        d = {"name": t["name"], "description": t["description"], "inputSchema": t["inputSchema"]}
        entries[f"real:{t['name']}"] = (d, OfferedTool(name=t["name"]), None)
    real_names = [str(t["name"]) for t in real_tools]
    schemas = {str(t["name"]): t.get("inputSchema") for t in real_tools}
    chosen = _chosen(task, condition, canaries, schemas)
    if arm and arm not in {str(c["type"]) for c in chosen}:
        raise ValueError(f"arm {arm!r}: the declared list of task {task.id!r} offers no canary of that type")
    # names a granularity twin must not take: the real tools and the list's canaries
    # (a twin of another arm would carry its canary's slot, never a name of this list)
    taken = [*real_names, *(str(c["name"]) for c in chosen)]
    for c in chosen:
        key = f"canary:{c['id']}"  # a twin keeps its canary's key, hence its canary's slot
        if c["type"] == arm:
            template = (controls or {}).get(str(c["id"]))
            if template is None:
                raise InputError("canary pool", "controls", f"no control for canary {c['id']!r}: generate the pool with --controls")
            ctl = control_for_task(template, task, taken=[n for n in taken if n != c["name"]],
                                   schema=schemas.get(str(c["shadows"])))
            if ctl is None:  # pragma: no cover - granularity offerings without a task case are withheld above
                raise InputError("canary pool", "controls", f"control {template['id']!r} has no case for task {task.id!r}")
            entries[key] = (*stand_in(ctl, twin=True), ctl)
        else:
            entries[key] = (*stand_in(c, twin=False), None)
        groups.setdefault(f"real:{c['shadows']}", []).append(key)
    # a control list keeps its declared list's keys, hence the declared order slot for slot
    before = canary_first(seed, task.id)
    if condition == "mirrored":
        before = not before
    order = list_order(list(entries), seed, task.id, groups, before)
    tools = tuple(entries[k][0] for k in order)
    offered = tuple(entries[k][1] for k in order)
    stand_ins = [entries[k][2] for k in order]
    behaviours = [r["behaviour"] if r is not None else None for r in stand_ins]
    ctl_records = {str(r["id"]): r for r in stand_ins if r is not None}
    return Assembly(pool, condition, seed, task.id, tools, offered,
                    tool_list_hash(tools, behaviours if ctl_records else None), ctl_records, arm)


def _variant(record: Mapping[str, Any]) -> int:
    v = record.get("variant", 1)
    return v if isinstance(v, int) and not isinstance(v, bool) else 1


def canary_variants(pool_records: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], list[Mapping[str, Any]]]:
    """(shadowed tool, type) -> its canaries by wording variant (``variant`` 1, 2, ...)."""
    out: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for c in pool_records:
        out.setdefault((str(c["shadows"]), str(c["type"])), []).append(c)
    for recs in out.values():
        recs.sort(key=_variant)
    return out


def canary_index(pool_records: Iterable[Mapping[str, Any]], variant: int = 1) -> dict[tuple[str, str], Mapping[str, Any]]:
    """(shadowed tool, type) -> the canary of wording variant ``variant`` (1-based; a (tool,
    type) with fewer variants takes ``variant`` modulo its own count)."""
    return {k: recs[(variant - 1) % len(recs)] for k, recs in canary_variants(pool_records).items()}


def variant_count(pool_records: Iterable[Mapping[str, Any]]) -> int:
    """K: the most wording variants any (tool, type) of the pool has (1 for a pool without variants)."""
    return max((len(recs) for recs in canary_variants(pool_records).values()), default=1)


def assign_variants(task_ids: Sequence[str], seed: int, k: int) -> dict[str, int]:
    """The wording variant (1-based) each task is offered in seed ``seed``, out of ``k``.

    Tasks are ranked once by a hash of their id (a fixed, seeded permutation: no task's rank
    depends on the seed), and a task of rank r gets variant ``(r + seed) mod k + 1``. So within
    a seed the variants are balanced (their counts differ by at most one), and over ``k``
    consecutive seeds every task is offered every variant once. Every type and every
    condition of a (task, seed) get the same variant.
    """
    ranked = sorted(dict.fromkeys(str(t) for t in task_ids), key=lambda t: (content_hash(["canarykit-variant", t], 16), t))
    return {t: (r + int(seed)) % max(int(k), 1) + 1 for r, t in enumerate(ranked)}


def unoffered_canaries(
    tasks: Sequence[TaskLike],
    pool_records: Sequence[Mapping[str, Any]],
    conditions: Sequence[str],
) -> dict[str, dict[str, int]]:
    """Per condition and type, the (task, correct tool) pairs the condition would shadow
    with a canary of that type but the pool has none for (the generator's fit rules skipped
    it): these are simply not offered."""
    index = canary_index(pool_records)
    out: dict[str, dict[str, int]] = {}
    for cond in conditions:
        for task in tasks:
            for shadowed in dict.fromkeys(task.correct_tools):
                for ctype in condition_types(cond, task):
                    if (shadowed, ctype) not in index:
                        per = out.setdefault(cond, {})
                        per[ctype] = per.get(ctype, 0) + 1
    return out


def withheld_granularity(
    tasks: Sequence[TaskLike],
    pool_records: Sequence[Mapping[str, Any]],
    conditions: Sequence[str],
    real_tools: Sequence[Mapping[str, Any]] = (),
) -> dict[str, list[tuple[str, str, str]]]:
    """Per condition, the (task, tool, why) granularity offerings the pool has a canary for
    but that are withheld because the task's plan does not call the tool with exactly one
    case (:func:`canarykit.canaries.granularity_case`): neither the canary nor its control
    is offered to that task."""
    index = canary_index(pool_records)
    schemas = {str(t["name"]): t.get("inputSchema") for t in real_tools}
    out: dict[str, list[tuple[str, str, str]]] = {}
    for cond in conditions:
        for task in tasks:
            if "granularity_trap" not in condition_types(cond, task):
                continue
            for shadowed in dict.fromkeys(task.correct_tools):
                if (shadowed, "granularity_trap") not in index:
                    continue
                case, why = granularity_case(task, shadowed, schemas.get(shadowed))
                if case is None:
                    out.setdefault(cond, []).append((task.id, shadowed, why))
    return out


def task_tools(task: TaskLike, real_tools: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The real tools a task is offered: those it names (``tools``: a BFCL entry's classes),
    else every tool of the environment."""
    names = getattr(task, "tools", None)
    if names is None:
        return list(real_tools)
    wanted = set(names)
    return [t for t in real_tools if t["name"] in wanted]


def build_assemblies(
    tasks: Sequence[TaskLike],
    real_tools: Sequence[Mapping[str, Any]],
    pool_records: Sequence[Mapping[str, Any]],
    pool: str,
    conditions: Sequence[str],
    seeds: Sequence[int],
    controls: Sequence[Mapping[str, Any]] | None = None,
    *,
    source: str = "canary pool",
    log: Any = None,
) -> list[Assembly]:
    """Every assembly of one pool, in (condition, seed, task, arm) order.

    ``controls`` are the pool's control records (:func:`canarykit.canaries.load_controls`),
    needed when ``conditions`` holds ``control`` (one list per offered type: ``arm``). Each
    (task, seed) is offered one wording variant (:func:`assign_variants`). Logs (stderr, or
    ``log``) what is not offered, the control lists per arm and, per condition and type, how
    often canaries sit before their real tool.
    """
    out = log if log is not None else sys.stderr
    k = variant_count(pool_records)
    indexes = {v: canary_index(pool_records, v) for v in range(1, k + 1)}
    real_names = {t["name"] for t in real_tools}
    for i, task in enumerate(tasks):
        for name in task.correct_tools:
            if name not in real_names:
                raise InputError("tasks", f"tasks[{i}].correct_tools", f"{name!r} is not a real tool of the environment")
    by_canary: dict[str, Mapping[str, Any]] = {}
    if "control" in conditions:
        by_canary = {str(c["control_of"]): c for c in (controls or [])}
        lacking = sorted(str(c["id"]) for c in pool_records if str(c["id"]) not in by_canary)
        if lacking:
            what = "has no controls" if not by_canary else f"has no control for {len(lacking)} canaries ({', '.join(lacking[:3])}, ...)"
            raise InputError(source, "controls", f"the condition 'control' needs every canary's control, and this pool {what}; "
                             "generate the pool with --controls (the workflow always does)")
    if len({int(s) % 2 for s in seeds}) == 1 and len(seeds) > 1:
        print(f"assemble: WARNING: seeds {list(seeds)} are all {'even' if int(seeds[0]) % 2 == 0 else 'odd'}: canaries keep "
              "the same side of their real tool in every seed (consecutive seeds alternate it; the condition "
              "'mirrored' offers the other side)", file=out)
    missing = unoffered_canaries(tasks, pool_records, conditions)
    for cond, per in missing.items():
        listed = ", ".join(f"{t} {n}" for t, n in sorted(per.items()))
        print(f"assemble: pool {pool}, {cond}: {sum(per.values())} (task, tool, type) canaries not offered "
              f"(none in the pool: skipped by the fit rules): {listed}", file=out)
    for cond, held in withheld_granularity(tasks, pool_records, conditions, real_tools).items():
        shown = ", ".join(f"{t} ({tool})" for t, tool, _ in held[:8]) + (", ..." if len(held) > 8 else "")
        print(f"assemble: pool {pool}, {cond}: {len(held)} granularity_trap offerings withheld, canary and control "
              f"(the task's plan does not call the tool with exactly one case): {shown}; first: {held[0][2]}", file=out)
    built: list[Assembly] = []
    for cond in conditions:
        for seed in seeds:
            variant_of = assign_variants([t.id for t in tasks], int(seed), k)
            for task in tasks:
                index = indexes[variant_of[str(task.id)]]
                mine = task_tools(task, real_tools)
                arms = offered_types(task, mine, index) if cond == "control" else ("",)
                built.extend(assemble(task, cond, seed, mine, index, pool, by_canary, arm=arm) for arm in arms)
    if k > 1:
        print(f"assemble: pool {pool}: {k} wording variants, one per (task, seed) (balanced within each seed)", file=out)
    arms_count: dict[str, int] = {}
    for a in built:
        if a.arm:
            arms_count[a.arm] = arms_count.get(a.arm, 0) + 1
    if arms_count:
        shown = ", ".join(f"{t} {arms_count[t]}" for t in CANARY_TYPES if t in arms_count)
        print(f"assemble: pool {pool}, control: {sum(arms_count.values())} lists, one per (task, seed) and type its "
              f"declared list offers (arm): {shown}", file=out)
    for line in position_lines(built, pool):
        print(line, file=out)
    return built


def position_balance(assemblies: Iterable[Assembly]) -> dict[str, dict[str, dict[str, float | int]]]:
    """Per condition and type: the canary slots (in ``control``: the twins' slots) offered
    and the share of them that sit before the real tool they shadow."""
    counts: dict[str, dict[str, list[int]]] = {}
    for a in assemblies:
        real_pos = {o.name: i for i, o in enumerate(a.offered) if o.kind == "real"}
        for i, o in enumerate(a.offered):
            t = o.control_type if a.condition == "control" else o.canary_type
            if t is None or o.shadows not in real_pos:
                continue
            c = counts.setdefault(a.condition, {}).setdefault(t, [0, 0])
            c[0] += 1
            c[1] += int(i < real_pos[o.shadows])
    return {
        cond: {t: {"slots": n, "before_real": b / n} for t in CANARY_TYPES if t in per for n, b in [per[t]]}
        for cond, per in counts.items()
    }


def position_lines(assemblies: Sequence[Assembly], pool: str) -> list[str]:
    """Log lines: per condition, the share of canary slots before their real tool, by type."""
    lines = []
    for cond, per in position_balance(assemblies).items():
        shown = ", ".join(f"{t} {v['before_real']:.0%} of {v['slots']}" for t, v in per.items())
        what = "twin" if cond == "control" else "canary"
        lines.append(f"assemble: pool {pool}, {cond}: {what} before its real tool: {shown}")
    return lines


_TABLE_SCHEMA = {
    "pool": pl.String, "condition": pl.String, "seed": pl.Int64, "task_id": pl.String, "arm": pl.String,
    "position": pl.Int64, "tool_name": pl.String, "canary_id": pl.String, "canary_type": pl.String,
    "shadows": pl.String, "description": pl.String, "input_schema": pl.String, "tool_list_hash": pl.String,
    "control_id": pl.String, "control_type": pl.String, "behaviour": pl.String, "selection_visible": pl.Boolean,
}


def assemblies_table(assemblies: Sequence[Assembly], source: str = "assemblies") -> pl.DataFrame:
    """One row per offered tool, validated by :class:`~canarykit.store.schemas.AssemblyTable`."""
    cols: dict[str, list[Any]] = {k: [] for k in _TABLE_SCHEMA}
    for a in assemblies:
        for pos, (tool, off) in enumerate(zip(a.tools, a.offered, strict=True)):
            cols["pool"].append(a.pool)
            cols["condition"].append(a.condition)
            cols["seed"].append(a.seed)
            cols["task_id"].append(a.task_id)
            cols["arm"].append(a.arm)
            cols["position"].append(pos)
            cols["tool_name"].append(tool["name"])
            cols["canary_id"].append(off.canary_id)
            cols["canary_type"].append(off.canary_type)
            cols["shadows"].append(off.shadows)
            cols["description"].append(tool["description"])
            cols["input_schema"].append(canonical_json(tool["inputSchema"]))
            cols["tool_list_hash"].append(a.tool_list_hash)
            cols["control_id"].append(off.control_id)
            cols["control_type"].append(off.control_type)
            ctl = a.controls.get(off.control_id) if off.control_id is not None else None
            cols["behaviour"].append(canonical_json(ctl.get("behaviour", {})) if ctl is not None else None)
            cols["selection_visible"].append(None if off.kind == "real" else off.selection_visible is not False)
    return validate(pl.DataFrame(cols, schema=_TABLE_SCHEMA), AssemblyTable, source)


def write_assemblies(assemblies: Sequence[Assembly], path: str | Path) -> pl.DataFrame:
    """Write the assembly table as Parquet (atomically, deterministic bytes)."""
    import io

    from ..store.jsonio import atomic_write_bytes

    df = assemblies_table(assemblies, str(path))
    buf = io.BytesIO()
    df.write_parquet(buf, compression="zstd", statistics=False)
    atomic_write_bytes(path, buf.getvalue())
    return df


def load_assemblies(path: str | Path) -> dict[tuple[str, int, str, str], Assembly]:
    """Read an assembly table back, keyed by (condition, seed, task_id, arm) (a table
    written before arms reads as arm ``""``).

    An offered control comes back as the part of its record the list fixes (``id``,
    ``type``, ``shadows``, ``name``, ``description``, ``inputSchema``, ``behaviour``); the
    runner completes it from the pool (:func:`control_records`).
    """
    p = Path(path)
    if not p.exists():
        raise InputError(str(p), "<file>", "assembly table not found; run `snakemake` to assemble")
    raw = pl.read_parquet(p)
    for col in ("control_id", "control_type", "behaviour"):  # tables written before controls
        if col not in raw.columns:
            raw = raw.with_columns(pl.lit(None, dtype=pl.String).alias(col))
    if "arm" not in raw.columns:  # tables written before arms
        raw = raw.with_columns(pl.lit("", dtype=pl.String).alias("arm"))
    if "selection_visible" not in raw.columns:
        raw = raw.with_columns(pl.lit(None, dtype=pl.Boolean).alias("selection_visible"))
    df = validate(raw, AssemblyTable, str(p)).sort(["condition", "seed", "task_id", "arm", "position"])
    out: dict[tuple[str, int, str, str], Assembly] = {}
    for (pool, cond, seed, task_id, arm), g in df.group_by(["pool", "condition", "seed", "task_id", "arm"], maintain_order=True):
        tools = tuple(
            {"name": n, "description": d, "inputSchema": json.loads(s)}
            for n, d, s in zip(g["tool_name"], g["description"], g["input_schema"], strict=True)
        )
        offered = tuple(
            OfferedTool(name=n, canary_id=ci, canary_type=ct, shadows=sh, control_id=oi, control_type=ot,
                        selection_visible=False if sv is False else None)
            for n, ci, ct, sh, oi, ot, sv in zip(g["tool_name"], g["canary_id"], g["canary_type"], g["shadows"],
                                                 g["control_id"], g["control_type"], g["selection_visible"], strict=True)
        )
        behaviours: list[dict[str, Any] | None] = [None if b is None else json.loads(b) for b in g["behaviour"]]
        controls: dict[str, Mapping[str, Any]] = {}
        for tool, off, b in zip(tools, offered, behaviours, strict=True):
            if off.control_id is None:
                continue
            if b is None:
                raise InputError(str(p), f"behaviour[{cond},{seed},{task_id},{arm}]", f"control {off.control_id!r} has no behaviour")
            controls[off.control_id] = {"id": off.control_id, "type": off.control_type, "shadows": off.shadows,
                                        "name": tool["name"], "description": tool["description"],
                                        "inputSchema": tool["inputSchema"], "behaviour": b}
        h = g["tool_list_hash"][0]
        if tool_list_hash(tools, behaviours if controls else None) != h:
            raise InputError(str(p), f"tool_list_hash[{cond},{seed},{task_id},{arm}]", "does not match the stored tools (the file was edited or corrupted)")
        out[(str(cond), int(seed), str(task_id), str(arm))] = Assembly(str(pool), str(cond), int(seed), str(task_id), tools,
                                                                       offered, h, controls, str(arm))
    return out


def control_records(
    assembly: Assembly, pool_controls: Mapping[str, Mapping[str, Any]], source: str = "canary pool"
) -> dict[str, dict[str, Any]]:
    """The full record of every control ``assembly`` offers: the pool's record (by control
    id) with what the list fixed (name, description, schema, behaviour: a granularity
    control's case) on top. InputError when the pool lacks one (re-run the assembly)."""
    out: dict[str, dict[str, Any]] = {}
    for cid, rec in assembly.controls.items():
        base = pool_controls.get(cid)
        if base is None:
            raise InputError(source, "controls", f"the assembly offers control {cid!r}, which the pool does not hold; re-run the assembly stage")
        out[cid] = {**base, **{k: rec[k] for k in ("name", "description", "inputSchema", "behaviour")}}
    return out
