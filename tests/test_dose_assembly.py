"""The dose condition's lists (issue 21 item 1, issue 27 item 7): k look-alikes of the task's
first needed real tool (canaries of one type, their twins, or neutral distractors),
counterbalanced like every condition, the wordings drawn at random per (task, seed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from canarykit import tools
from canarykit.assembly.assembly import canary_first
from canarykit.assembly.dose import (
    DOSE_ID_PREFIX,
    dose_arm,
    dose_assemblies,
    dose_records,
    draw_lines,
    parse_dose_arm,
    wording_draw,
)
from canarykit.canaries import bank_size, part_ids
from canarykit.errors import InputError
from canarykit.tasks.tasks import load_tasks
from canarykit.types import CANARY_TYPES, DOSE_KINDS, DOSE_LEVELS, TWIN_PREFIX

ROOT = Path(__file__).resolve().parents[1]
REAL = tools.mcp_definitions()


@pytest.fixture(scope="module")
def built():
    tasks = [t for t in load_tasks(ROOT / "data" / "tasks.json") if t.correct_tools[0] == "get_forecast"][:2]
    records = dose_records(REAL, [t.correct_tools[0] for t in tasks], "standard")
    return tasks, *dose_assemblies(tasks, REAL, records, "standard", [0, 1])


def test_records_are_the_whole_bank_with_twins_and_the_distractors_under_their_own_ids() -> None:
    kinds = ("capability_mirage", "twin:capability_mirage", "distractor")
    records = dose_records(REAL, ["get_forecast", "get_forecast"], "standard", kinds=kinds)
    assert [r["id"] for r in records if r["kind"] == "distractor"] == [
        f"{DOSE_ID_PREFIX}distractor:get_forecast@{i}" for i in range(1, 9)]
    mirage = [r for r in records if r["kind"] == "capability_mirage"]
    twins = [r for r in records if r["kind"] == "twin:capability_mirage"]
    assert [r["variant"] for r in mirage] == list(range(1, bank_size("capability_mirage") + 1))
    assert mirage[1]["id"] == f"{DOSE_ID_PREFIX}capability_mirage:get_forecast@v2"
    assert [r["wording"] for r in mirage] == list(part_ids("capability_mirage"))  # the held-back entries, in order
    assert [t["id"] for t in twins] == [f"{DOSE_ID_PREFIX}control:{m['id'].removeprefix(DOSE_ID_PREFIX)}" for m in mirage]
    assert all(t["type"] == "capability_mirage" and t["wording"] == m["wording"] for t, m in zip(twins, mirage, strict=True))
    assert len({r["name"] for r in mirage}) == len(mirage)


def test_each_list_offers_k_look_alikes_of_the_first_needed_tool_on_one_side(built) -> None:
    tasks, lists, _ = built
    assert {a.condition for a in lists} == {"dose"}
    for a in lists:
        kind, k = parse_dose_arm(a.arm)
        stand_ins = [o for o in a.offered if o.kind != "real"]
        assert len(stand_ins) == k and len(a.tools) == len(REAL) + k
        assert {o.shadows for o in stand_ins} <= {"get_forecast"}
        if kind.startswith(TWIN_PREFIX):  # twins are offered as twins: a call of one is not a canary call
            assert {o.kind for o in stand_ins} <= {"control"} and {o.control_type for o in stand_ins} <= {kind[len(TWIN_PREFIX):]}
            assert set(a.controls) == {o.control_id for o in stand_ins}
        else:
            assert {o.canary_type for o in stand_ins} <= {kind}
        assert len({o.name for o in a.offered}) == len(a.offered)
        if k:  # every look-alike on the side canary_first gives the (task, seed)
            real_pos = next(i for i, o in enumerate(a.offered) if o.name == "get_forecast")
            sides = {i < real_pos for i, o in enumerate(a.offered) if o.kind != "real"}
            assert sides == {canary_first(a.seed, a.task_id)}
    for task in tasks:  # consecutive seeds put the look-alikes on opposite sides
        assert canary_first(0, task.id) != canary_first(1, task.id)


def _entries(a) -> list[str]:
    """The bank entries a list offers (from its look-alikes' ids), in the list's order."""
    ids = [o.canary_id or o.control_id for o in a.offered if o.kind != "real"]
    return sorted(i.rpartition("@v")[2] if "@v" in i else "1" for i in ids)


def test_levels_nest_kinds_differ_and_a_type_and_its_twins_share_the_wordings(built) -> None:
    _, lists, _ = built
    by = {(a.seed, a.task_id, a.arm): a for a in lists}
    a = next(iter(lists))
    for kind in DOSE_KINDS:
        names = [{o.name for o in by[(a.seed, a.task_id, dose_arm(kind, k))].offered if o.kind != "real"}
                 for k in DOSE_LEVELS if (a.seed, a.task_id, dose_arm(kind, k)) in by]
        assert all(x <= y for x, y in zip(names, names[1:], strict=False)), kind  # the first k of the next level
    zero = {by[(a.seed, a.task_id, dose_arm(kind, 0))].tool_list_hash for kind in DOSE_KINDS}
    assert len(zero) == 1, "k = 0 is the real tools alone, whatever the kind"
    eight = [by[key].tool_list_hash for kind in DOSE_KINDS if (key := (a.seed, a.task_id, dose_arm(kind, 8))) in by]
    assert len(set(eight)) == len(eight) >= 11, "each kind offers its own look-alikes (granularity stops early)"
    for key, lst in by.items():
        kind, k = parse_dose_arm(lst.arm)
        if kind in CANARY_TYPES and k:
            twin = by.get((key[0], key[1], dose_arm(TWIN_PREFIX + kind, k)))
            assert twin is None or _entries(twin) == _entries(lst), key


def test_wordings_are_drawn_at_random_per_task_and_seed_from_the_whole_bank(built) -> None:
    """Level k offers a random k-subset of the bank, not entries 1..k: at k = 1 the
    (task, seed) cells see several entries; the draw is reproducible and moves with the seed."""
    tasks, lists, _ = built
    firsts = {_entries(a)[0] for a in lists if a.arm == dose_arm("semantic_decoy", 1)}
    assert len(firsts) >= 3, firsts
    entries = list(range(1, bank_size("semantic_decoy") + 1))
    order = wording_draw(0, tasks[0].id, 0, "semantic_decoy", entries)
    assert sorted(order) == entries and order == wording_draw(0, tasks[0].id, 0, "semantic_decoy", entries)
    others = [wording_draw(s, tasks[0].id, 0, "semantic_decoy", entries) for s in range(1, 6)]
    assert any(o != order for o in others)
    lines = draw_lines(lists, "standard", 0)
    assert "study.dose.seed 0" in lines[0] and any("semantic_decoy at k=1 offered entries" in x for x in lines[1:])


def test_cells_the_bank_cannot_fill_are_skipped_and_named(built) -> None:
    """A granularity trap's k wordings reword one case (issue 27), so the bank fills every
    cell of a tool that hosts the type; a cell it could not fill would be skipped and named."""
    _, lists, skipped = built
    assert not skipped and all(s.kind in ("granularity_trap", "twin:granularity_trap") and s.available < s.k for s in skipped)
    offered = {(a.task_id, a.arm) for a in lists}
    assert not {(s.task_id, dose_arm(s.kind, s.k)) for s in skipped} & offered
    assert {a.arm for a in lists} >= {dose_arm("granularity_trap", k) for k in DOSE_LEVELS if k}


def test_bad_arms_and_kinds_are_refused() -> None:
    assert parse_dose_arm("distractor@4") == ("distractor", 4)
    with pytest.raises(InputError, match="arm: expected <kind>@<k>"):
        parse_dose_arm("stale@2", "runs.parquet")
    with pytest.raises(InputError, match="study.dose.kinds"):
        dose_records(REAL, ["get_forecast"], "standard", kinds=("stale",))
    with pytest.raises(InputError, match="study.dose.kinds"):
        dose_assemblies(load_tasks(ROOT / "data" / "tasks.json")[:1], REAL, [], "standard", [0], kinds=("stale",))
