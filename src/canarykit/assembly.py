"""The assembler: the tool list an agent sees for each (pool, condition, seed, task).

For a task, the offered list is every real tool plus the canaries of the condition's types
that shadow the task's correct tools (``baseline``: none; ``declared``: the task's declared
types; ``full``: all six), shuffled deterministically by (seed, task). The shuffle permutes
stable keys (real tool names and canary ids), never descriptions, so

- the same assembly is byte-identical for every model and every rerun;
- the standard and subtle pools offer the same tools in the same order (only descriptions
  differ), so the ablation compares like with like;
- editing one canary type's suffix changes exactly the tool lists that hold a canary of that
  type (their ``tool_list_hash``), and nothing else.

A (tool, type) the pool has no canary for (``canaries.fit: fitted`` skips types whose
defect means nothing for the tool) is simply not offered; :func:`unoffered_canaries`
counts them and the assembler logs the counts.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import polars as pl

from .errors import InputError
from .jsonio import canonical_json, content_hash
from .records import OfferedTool
from .schemas import AssemblyTable, validate
from .types import CANARY_TYPES


class TaskLike(Protocol):
    id: str
    correct_tools: Sequence[str]
    declared_types: Sequence[str]


@dataclass(frozen=True)
class Assembly:
    """One assembled tool list, in the order the agent sees it."""

    pool: str
    condition: str
    seed: int
    task_id: str
    tools: tuple[dict[str, Any], ...]
    offered: tuple[OfferedTool, ...]
    tool_list_hash: str


def condition_types(condition: str, task: TaskLike) -> tuple[str, ...]:
    """Canary types injected for ``task`` under ``condition``."""
    if condition == "baseline":
        return ()
    if condition == "declared":
        return tuple(t for t in CANARY_TYPES if t in set(task.declared_types))
    if condition == "full":
        return CANARY_TYPES
    raise ValueError(f"unknown condition {condition!r}")


def tool_list_hash(tools: Iterable[Mapping[str, Any]]) -> str:
    """Hash of the full ordered tool definitions an agent is sent."""
    return content_hash([{"name": t["name"], "description": t["description"], "inputSchema": t["inputSchema"]} for t in tools])


def _order(keys: list[str], seed: int, task_id: str) -> list[str]:
    ordered = sorted(keys)
    random.Random(f"canarykit-assembly|{seed}|{task_id}").shuffle(ordered)
    return ordered


def assemble(
    task: TaskLike,
    condition: str,
    seed: int,
    real_tools: Sequence[Mapping[str, Any]],
    canaries: Mapping[tuple[str, str], Mapping[str, Any]],
    pool: str,
) -> Assembly:
    """Assemble one tool list. ``canaries`` maps (shadowed tool, type) to a canary record."""
    entries: dict[str, tuple[dict[str, Any], OfferedTool]] = {}
    for t in real_tools:
        d = {"name": t["name"], "description": t["description"], "inputSchema": t["inputSchema"]}
        entries[f"real:{t['name']}"] = (d, OfferedTool(name=t["name"]))
    for shadowed in dict.fromkeys(task.correct_tools):
        for ctype in condition_types(condition, task):
            c = canaries.get((shadowed, ctype))
            if c is None:
                continue
            d = {"name": c["name"], "description": c["description"], "inputSchema": c["inputSchema"]}
            entries[f"canary:{c['id']}"] = (
                d,
                OfferedTool(name=c["name"], canary_id=c["id"], canary_type=c["type"], shadows=c["shadows"]),
            )
    order = _order(list(entries), seed, task.id)
    tools = tuple(entries[k][0] for k in order)
    offered = tuple(entries[k][1] for k in order)
    return Assembly(pool, condition, seed, task.id, tools, offered, tool_list_hash(tools))


def canary_index(pool_records: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], Mapping[str, Any]]:
    return {(c["shadows"], c["type"]): c for c in pool_records}


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


def build_assemblies(
    tasks: Sequence[TaskLike],
    real_tools: Sequence[Mapping[str, Any]],
    pool_records: Sequence[Mapping[str, Any]],
    pool: str,
    conditions: Sequence[str],
    seeds: Sequence[int],
) -> list[Assembly]:
    """Every assembly of one pool, in (condition, seed, task) order."""
    index = canary_index(pool_records)
    real_names = {t["name"] for t in real_tools}
    for i, task in enumerate(tasks):
        for name in task.correct_tools:
            if name not in real_names:
                raise InputError("tasks", f"tasks[{i}].correct_tools", f"{name!r} is not a real tool of the environment")
    missing = unoffered_canaries(tasks, pool_records, conditions)
    for cond, per in missing.items():
        listed = ", ".join(f"{t} {n}" for t, n in sorted(per.items()))
        print(f"assemble: pool {pool}, {cond}: {sum(per.values())} (task, tool, type) canaries not offered "
              f"(none in the pool: skipped by the fit rules): {listed}", file=sys.stderr)
    return [assemble(task, cond, seed, real_tools, index, pool) for cond in conditions for seed in seeds for task in tasks]


_TABLE_SCHEMA = {
    "pool": pl.String, "condition": pl.String, "seed": pl.Int64, "task_id": pl.String,
    "position": pl.Int64, "tool_name": pl.String, "canary_id": pl.String, "canary_type": pl.String,
    "shadows": pl.String, "description": pl.String, "input_schema": pl.String, "tool_list_hash": pl.String,
}


def assemblies_table(assemblies: Sequence[Assembly], source: str = "assemblies") -> pl.DataFrame:
    """One row per offered tool, validated by :class:`~canarykit.schemas.AssemblyTable`."""
    cols: dict[str, list[Any]] = {k: [] for k in _TABLE_SCHEMA}
    for a in assemblies:
        for pos, (tool, off) in enumerate(zip(a.tools, a.offered, strict=True)):
            cols["pool"].append(a.pool)
            cols["condition"].append(a.condition)
            cols["seed"].append(a.seed)
            cols["task_id"].append(a.task_id)
            cols["position"].append(pos)
            cols["tool_name"].append(tool["name"])
            cols["canary_id"].append(off.canary_id)
            cols["canary_type"].append(off.canary_type)
            cols["shadows"].append(off.shadows)
            cols["description"].append(tool["description"])
            cols["input_schema"].append(canonical_json(tool["inputSchema"]))
            cols["tool_list_hash"].append(a.tool_list_hash)
    return validate(pl.DataFrame(cols, schema=_TABLE_SCHEMA), AssemblyTable, source)


def write_assemblies(assemblies: Sequence[Assembly], path: str | Path) -> pl.DataFrame:
    """Write the assembly table as Parquet (atomically, deterministic bytes)."""
    import io

    from .jsonio import atomic_write_bytes

    df = assemblies_table(assemblies, str(path))
    buf = io.BytesIO()
    df.write_parquet(buf, compression="zstd", statistics=False)
    atomic_write_bytes(path, buf.getvalue())
    return df


def load_assemblies(path: str | Path) -> dict[tuple[str, int, str], Assembly]:
    """Read an assembly table back, keyed by (condition, seed, task_id)."""
    p = Path(path)
    if not p.exists():
        raise InputError(str(p), "<file>", "assembly table not found; run `snakemake` to assemble")
    df = validate(pl.read_parquet(p), AssemblyTable, str(p)).sort(["condition", "seed", "task_id", "position"])
    out: dict[tuple[str, int, str], Assembly] = {}
    for (pool, cond, seed, task_id), g in df.group_by(["pool", "condition", "seed", "task_id"], maintain_order=True):
        tools = tuple(
            {"name": n, "description": d, "inputSchema": json.loads(s)}
            for n, d, s in zip(g["tool_name"], g["description"], g["input_schema"], strict=True)
        )
        offered = tuple(
            OfferedTool(name=n, canary_id=ci, canary_type=ct, shadows=sh)
            for n, ci, ct, sh in zip(g["tool_name"], g["canary_id"], g["canary_type"], g["shadows"], strict=True)
        )
        h = g["tool_list_hash"][0]
        if tool_list_hash(tools) != h:
            raise InputError(str(p), f"tool_list_hash[{cond},{seed},{task_id}]", "does not match the stored tools (the file was edited or corrupted)")
        out[(str(cond), int(seed), str(task_id))] = Assembly(str(pool), str(cond), int(seed), str(task_id), tools, offered, h)
    return out
