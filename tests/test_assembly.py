"""The assembler: which tools each (condition, seed, task) offers, in which order."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl
import pytest

from canarykit.assembly import (
    assemble,
    build_assemblies,
    canary_index,
    load_assemblies,
    write_assemblies,
)
from canarykit.errors import InputError
from canarykit.types import CANARY_TYPES


@dataclass(frozen=True)
class _Task:
    id: str
    correct_tools: tuple[str, ...]
    declared_types: tuple[str, ...]
    plan: tuple[dict, ...] = ()


REAL = [
    {"name": n, "description": f"{n} does its job.", "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}}}
    for n in ("get_weather", "convert_units", "web_search", "read_file")
]


def _pool(pool: str = "standard", suffix: str = "ADVANCED") -> list[dict]:
    out = []
    for t in REAL:
        for ctype in CANARY_TYPES:
            out.append({
                "id": f"{ctype}:{t['name']}", "type": ctype, "shadows": t["name"],
                "name": f"{ctype[:4]}_{t['name']}", "pool": pool,
                "description": f"{t['description']} {suffix if ctype == 'capability_mirage' else ''}".strip(),
                "inputSchema": {"type": "object", "properties": {}},
            })
    return out


TASKS = [
    _Task("t1", ("get_weather", "convert_units"), ("capability_mirage", "parameter_trap"),
          ({"tool": "get_weather", "args": {"x": "Oslo"}}, {"tool": "convert_units", "args": {"x": "5 km"}})),
    _Task("t2", ("web_search",), ("semantic_decoy",)),
    _Task("t3", ("read_file",), ("temporal_decoy", "granularity_trap")),
]


def test_baseline_never_offers_a_canary():
    for seed in range(5):
        a = assemble(TASKS[0], "baseline", seed, REAL, canary_index(_pool()), "standard")
        assert all(o.canary_id is None for o in a.offered)
        assert sorted(t["name"] for t in a.tools) == sorted(t["name"] for t in REAL)


def test_declared_offers_declared_types_shadowing_correct_tools_only():
    a = assemble(TASKS[0], "declared", 0, REAL, canary_index(_pool()), "standard")
    canaries = {(o.shadows, o.canary_type) for o in a.offered if o.canary_id}
    assert canaries == {(s, t) for s in ("get_weather", "convert_units") for t in ("capability_mirage", "parameter_trap")}


def test_full_offers_all_six_types_per_correct_tool():
    a = assemble(TASKS[0], "full", 0, REAL, canary_index(_pool()), "standard")
    assert len([o for o in a.offered if o.canary_id]) == 12
    assert len(a.tools) == len(REAL) + 12


def test_order_is_stable_for_a_seed_and_differs_across_seeds():
    idx = canary_index(_pool())
    first = assemble(TASKS[0], "full", 1, REAL, idx, "standard")
    again = assemble(TASKS[0], "full", 1, REAL, idx, "standard")
    assert first == again
    orders = {tuple(t["name"] for t in assemble(TASKS[0], "full", s, REAL, idx, "standard").tools) for s in range(3)}
    assert len(orders) == 3


def test_pools_share_order_and_suffix_change_touches_only_its_type():
    std = canary_index(_pool("standard", "ADVANCED: research-grade"))
    sub = canary_index(_pool("subtle", "optimized variant"))
    for task in TASKS:
        for cond in ("baseline", "declared", "full"):
            a = assemble(task, cond, 0, REAL, std, "standard")
            b = assemble(task, cond, 0, REAL, sub, "subtle")
            assert [t["name"] for t in a.tools] == [t["name"] for t in b.tools]
            holds_mirage = any(o.canary_type == "capability_mirage" for o in a.offered)
            assert (a.tool_list_hash != b.tool_list_hash) == holds_mirage


def test_table_roundtrip_is_byte_identical(tmp_path):
    assemblies = build_assemblies(TASKS, REAL, _pool(), "standard", ["baseline", "declared", "full"], [0, 1, 2])
    assert len(assemblies) == 3 * 3 * len(TASKS)
    p1, p2 = tmp_path / "a.parquet", tmp_path / "b.parquet"
    df = write_assemblies(assemblies, p1)
    write_assemblies(assemblies, p2)
    assert p1.read_bytes() == p2.read_bytes()
    assert df.filter(pl.col("condition") == "baseline")["canary_id"].null_count() == df.filter(pl.col("condition") == "baseline").height
    loaded = load_assemblies(p1)
    for a in assemblies:
        assert loaded[(a.condition, a.seed, a.task_id)] == a


def test_edited_assembly_is_detected(tmp_path):
    assemblies = build_assemblies(TASKS, REAL, _pool(), "standard", ["declared"], [0])
    p = tmp_path / "a.parquet"
    df = write_assemblies(assemblies, p)
    df.with_columns(pl.lit("tampered").alias("description")).write_parquet(p)
    with pytest.raises(InputError, match="tool_list_hash"):
        load_assemblies(p)


def test_unknown_correct_tool_is_an_input_error():
    bad = [_Task("t9", ("no_such_tool",), ())]
    with pytest.raises(InputError, match=r"tasks\[0\].correct_tools"):
        build_assemblies(bad, REAL, _pool(), "standard", ["declared"], [0])
