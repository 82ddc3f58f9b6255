"""The dose condition's lists (issue 21 item 1): k look-alikes of the task's first needed
real tool, of one canary type or neutral distractors, counterbalanced like every condition."""

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
    parse_dose_arm,
)
from canarykit.errors import InputError
from canarykit.tasks.tasks import load_tasks
from canarykit.types import DOSE_KINDS, DOSE_LEVELS

ROOT = Path(__file__).resolve().parents[1]
REAL = tools.mcp_definitions()


@pytest.fixture(scope="module")
def built():
    tasks = [t for t in load_tasks(ROOT / "data" / "tasks.json") if t.correct_tools[0] == "get_forecast"][:2]
    records = dose_records(REAL, [t.correct_tools[0] for t in tasks], "standard")
    return tasks, *dose_assemblies(tasks, REAL, records, "standard", [0, 1])


def test_records_are_the_bank_and_the_distractors_under_their_own_ids() -> None:
    records = dose_records(REAL, ["get_forecast", "get_forecast"], "standard", kinds=("capability_mirage", "distractor"))
    assert [r["id"] for r in records if r["type"] == "distractor"] == [
        f"{DOSE_ID_PREFIX}distractor:get_forecast@{i}" for i in range(1, 9)]
    mirage = [r for r in records if r["type"] == "capability_mirage"]
    assert [r["variant"] for r in mirage] == list(range(1, 9))
    assert mirage[1]["id"] == f"{DOSE_ID_PREFIX}capability_mirage:get_forecast@v2"
    assert len({r["name"] for r in records if r["type"] == "capability_mirage"}) == 8


def test_each_list_offers_k_look_alikes_of_the_first_needed_tool_on_one_side(built) -> None:
    tasks, lists, _ = built
    assert {a.condition for a in lists} == {"dose"}
    for a in lists:
        kind, k = parse_dose_arm(a.arm)
        stand_ins = [o for o in a.offered if o.kind != "real"]
        assert len(stand_ins) == k and len(a.tools) == len(REAL) + k
        assert {o.shadows for o in stand_ins} <= {"get_forecast"}
        assert {o.canary_type for o in stand_ins} <= {kind}
        assert len({o.name for o in a.offered}) == len(a.offered)
        if k:  # every look-alike on the side canary_first gives the (task, seed)
            real_pos = next(i for i, o in enumerate(a.offered) if o.name == "get_forecast")
            sides = {i < real_pos for i, o in enumerate(a.offered) if o.kind != "real"}
            assert sides == {canary_first(a.seed, a.task_id)}
    for task in tasks:  # consecutive seeds put the look-alikes on opposite sides
        assert canary_first(0, task.id) != canary_first(1, task.id)


def test_levels_nest_and_kinds_differ(built) -> None:
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
    assert len(set(eight)) == len(eight) >= 6, "each kind offers its own look-alikes"


def test_cells_the_bank_cannot_fill_are_skipped_and_named(built) -> None:
    """A granularity trap's k wordings reword one case (issue 27), so the bank fills every
    cell of a tool that hosts the type; a cell it could not fill would be skipped and named."""
    _, lists, skipped = built
    assert not skipped and all(s.kind == "granularity_trap" and s.available < s.k for s in skipped)
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
