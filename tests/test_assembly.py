"""The assembler: which tools each (condition, seed, task) offers, in which order."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl
import pytest

from canarykit.assembly.assembly import (
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
        assert loaded[a.key] == a


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


# --------------------------------------------------------------------------- wording variants


def _variants(k: int) -> tuple[list[dict], list[dict]]:
    """A pool with ``k`` wording variants of every canary (ids ``<type>:<tool>@v<i>`` after
    the first) and their twins."""
    canaries, twins = [], []
    for c in _pool():
        for i in range(1, k + 1):
            v = {**c, "variant": i, "id": c["id"] if i == 1 else f"{c['id']}@v{i}", "name": f"{c['name']}_{i}"}
            canaries.append(v)
            twins.append({**v, "id": f"control:{v['id']}", "control_of": v["id"], "name": f"twin_{v['name']}",
                          "behaviour": {"kind": "passthrough"}})
    return canaries, twins


MANY = [_Task(f"m{i:02d}", ("get_weather", "web_search"), ("semantic_decoy", "capability_mirage"),
              ({"tool": "get_weather", "args": {"x": "Oslo"}}, {"tool": "web_search", "args": {"x": "q"}}))
        for i in range(30)]


def _variant_of(a) -> set[int]:  # type: ignore[no-untyped-def]
    ids = [o.item for o in a.offered if o.item is not None]
    return {int(i.split("@v")[1]) if "@v" in i else 1 for i in ids}


def test_one_variant_per_task_and_seed_balanced_and_rotating() -> None:
    canaries, twins = _variants(3)
    built = build_assemblies(MANY, REAL, canaries, "standard", ["declared", "full", "control"], [0, 1, 2], twins)
    per: dict[tuple[int, str], set[int]] = {}
    for a in built:
        per.setdefault((a.seed, a.task_id), set()).update(_variant_of(a))
    assert all(len(v) == 1 for v in per.values()), "every type and condition of a (task, seed): one variant"
    for seed in (0, 1, 2):
        counts = [sum(1 for (s, _), v in per.items() if s == seed and v == {i}) for i in (1, 2, 3)]
        assert counts == [10, 10, 10], (seed, counts)
    for task in MANY:  # consecutive seeds rotate: every task sees every variant once over three seeds
        assert {next(iter(per[(s, task.id)])) for s in (0, 1, 2)} == {1, 2, 3}
    # the control list of a (task, seed) offers the twin of the declared list's canary
    decl = {(a.seed, a.task_id): a for a in built if a.condition == "declared"}
    for a in (a for a in built if a.condition == "control"):
        twin = next(o for o in a.offered if o.kind == "control")
        assert twin.item in {o.canary_id for o in decl[(a.seed, a.task_id)].offered}


def test_one_variant_per_key_gives_the_lists_it_always_gave() -> None:
    plain = build_assemblies(MANY, REAL, _pool(), "standard", ["baseline", "declared", "full", "mirrored"], [0, 1])
    marked = build_assemblies(MANY, REAL, [{**c, "variant": 1} for c in _pool()], "standard",
                              ["baseline", "declared", "full", "mirrored"], [0, 1])
    assert [a.tool_list_hash for a in plain] == [a.tool_list_hash for a in marked]
    assert all(a.arm == "" for a in plain)


def test_a_table_written_before_arms_reads_as_arm_empty(tmp_path) -> None:  # type: ignore[no-untyped-def]
    built = build_assemblies(TASKS, REAL, _pool(), "standard", ["declared"], [0])
    p = tmp_path / "a.parquet"
    write_assemblies(built, p)
    pl.read_parquet(p).drop("arm", "selection_visible").write_parquet(p)
    assert {k[3] for k in load_assemblies(p)} == {""}
    assert [load_assemblies(p)[a.key] for a in built] == built
