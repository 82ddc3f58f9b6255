"""Issue 11, study side: the control and mirrored conditions, counterbalanced order, and what
the detector, the loop and the reference agents do with a control."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import pytest

from canarykit import tools
from canarykit.agents import RunSpec, make_backend, run_one
from canarykit.agents.loop import execute_call, toolset_from_assembly
from canarykit.assembly.assembly import (
    build_assemblies,
    canary_first,
    load_assemblies,
    position_balance,
    tool_list_hash,
    withheld_granularity,
    write_assemblies,
)
from canarykit.canaries import (
    DEFAULT_SUFFIXES,
    build_pool,
    run_canary,
    suite_from_tasks,
    summary_lines,
)
from canarykit.detection.detect import classify_calls, run_metrics
from canarykit.errors import InputError
from canarykit.store.records import (
    Event,
    OfferedTool,
    RunRecord,
    ToolCallEvent,
    ToolResultEvent,
    canary_before_real,
)
from canarykit.tasks.tasks import load_tasks
from canarykit.types import CANARY_TYPES

ROOT = Path(__file__).resolve().parents[1]
TASKS = load_tasks(ROOT / "data" / "tasks.json")
CONDITIONS = ["baseline", "declared", "full", "control", "mirrored"]
SEEDS = [0, 1, 2]


@pytest.fixture(scope="module")
def pool() -> Any:
    return build_pool(tools.mcp_definitions(), "standard", DEFAULT_SUFFIXES["standard"], controls=True,
                      suite=suite_from_tasks(TASKS, "tasks", tools.execute))


@pytest.fixture(scope="module")
def built(pool: Any) -> dict[tuple[str, int, str], Any]:
    log = io.StringIO()
    out = build_assemblies(TASKS, tools.mcp_definitions(), pool.canaries, "standard", CONDITIONS, SEEDS, pool.controls, log=log)
    assert "canary before its real tool" in log.getvalue()
    return {a.key: a for a in out}


def _slots(a: Any) -> dict[str, tuple[int, int]]:
    """Each stand-in's (position, position of the real tool it shadows)."""
    real = {o.name: i for i, o in enumerate(a.offered) if o.kind == "real"}
    return {(o.canary_id or o.control_id): (i, real[o.shadows]) for i, o in enumerate(a.offered) if o.kind != "real"}


def test_seeds_alternate_the_side_of_every_canary(built: dict) -> None:
    kept = total = 0
    for task in TASKS:
        sides = [_slots(built[("declared", s, task.id, "")]) for s in SEEDS]
        for cid in sides[0]:
            total += 1
            kept += len({i < j for i, j in (side[cid] for side in sides)}) == 1
        for s in SEEDS:
            a = built[("declared", s, task.id, "")]
            # one side per list, as canary_first says
            assert a.canary_before_real in (None, canary_first(s, task.id))
            if sides[0]:
                assert a.canary_before_real is not None
    assert total > 300 and kept == 0  # independent shuffles kept about a quarter on one side


def test_mirrored_lists_trade_each_canary_and_its_real_tool(built: dict) -> None:
    for task in TASKS:
        for s in SEEDS:
            d, m = built[("declared", s, task.id, "")], built[("mirrored", s, task.id, "")]
            assert sorted(t["name"] for t in d.tools) == sorted(t["name"] for t in m.tools)
            if d.canary_before_real is None:
                assert d.tool_list_hash == m.tool_list_hash
                continue
            assert m.canary_before_real is (not d.canary_before_real)
            # tools outside the canaries' groups keep their slots; a group keeps its slots
            group = {o.shadows for o in d.offered if o.kind == "canary"}
            for i, (a, b) in enumerate(zip(d.offered, m.offered, strict=True)):
                if a.kind == "real" and a.name not in group:
                    assert b.name == a.name, (task.id, s, i)
            single = [o.shadows for o in d.offered if o.kind == "canary"]
            for real in {r for r in single if single.count(r) == 1}:
                c = next(o.name for o in d.offered if o.shadows == real and o.kind == "canary")
                pos_d = {o.name: i for i, o in enumerate(d.offered)}
                pos_m = {o.name: i for i, o in enumerate(m.offered)}
                assert (pos_m[c], pos_m[real]) == (pos_d[real], pos_d[c])  # an exact swap


def test_declared_and_mirrored_together_put_half_of_every_type_first(built: dict) -> None:
    balance = position_balance(a for a in built.values() if a.condition in ("declared", "mirrored"))
    for t in CANARY_TYPES:
        d, m = balance["declared"][t], balance["mirrored"][t]
        assert d["slots"] == m["slots"] > 0
        assert d["before_real"] + m["before_real"] == pytest.approx(1.0)


def test_a_control_list_per_offered_type_swaps_that_type_alone(built: dict) -> None:
    """One control list per (task, seed) and type the declared list offers (its arm): the
    declared list with only that type's canaries swapped for their twins, in their slots;
    every other canary stays. The twin's name carries the healthy value where the canary's
    name carries the property, and no twin reads exactly like its canary."""
    # the twin's name is its canary's where the name is not the tell, else its entry's name part differs
    names = {"semantic_decoy": "same", "parameter_trap": "same", "capability_mirage": "prefix",
             "prerequisite_blindness": "prefix", "temporal_decoy": "tail", "granularity_trap": "tail"}
    arms_seen: dict[str, int] = {}
    for task in TASKS:
        for s in SEEDS:
            d = built[("declared", s, task.id, "")]
            offered = [t for t in CANARY_TYPES if any(o.canary_type == t for o in d.offered)]
            arms = sorted(k[3] for k in built if k[:3] == ("control", s, task.id))
            assert arms == sorted(offered), (task.id, s)
            for arm in arms:
                c = built[("control", s, task.id, arm)]
                arms_seen[arm] = arms_seen.get(arm, 0) + 1
                assert c.arm == arm and c.canary_before_real == d.canary_before_real
                for a, b in zip(d.offered, c.offered, strict=True):
                    if a.kind == "canary" and a.canary_type == arm:
                        assert b.kind == "control" and b.control_type == arm and b.shadows == a.shadows
                        assert b.control_id == f"control:{a.canary_id}" and b.item == a.canary_id
                        form = names[arm]
                        assert b.name == a.name if form == "same" else (b.name != a.name and all(
                            n.endswith("_" + a.shadows) if form == "prefix" else n.startswith(a.shadows + "_")
                            for n in (a.name, b.name))), (a.name, b.name)
                    else:
                        assert b == a
                assert c.tool_list_hash != d.tool_list_hash
                assert any(x != y for x, y in zip(d.tools, c.tools, strict=True)), "a twin never reads like its canary"
    assert set(arms_seen) == set(CANARY_TYPES)


def test_only_a_control_list_has_an_arm(pool: Any) -> None:
    from canarykit.assembly.assembly import assemble, canary_index

    task = next(t for t in TASKS if "semantic_decoy" in t.declared_types)
    with pytest.raises(ValueError, match="arm"):
        assemble(task, "control", 0, tools.mcp_definitions(), canary_index(pool.canaries), "standard", {})
    with pytest.raises(ValueError, match="arm"):
        assemble(task, "declared", 0, tools.mcp_definitions(), canary_index(pool.canaries), "standard", arm="semantic_decoy")


def test_granularity_canary_and_control_are_a_pair_for_the_tasks_one_case(built: dict, pool: Any) -> None:
    """Every task of the suite that declares granularity_trap: the declared, mirrored and
    control lists offer a granularity canary and its twin for exactly the same tools (those
    its plan calls), in the same slot; the twin answers every case the task's plan calls the
    tool with, the canary another case that no task's plan calls, also for a task whose plan
    calls the tool with two different cases (hard-040: Singapore, then Toronto)."""
    plans = {(st.tool, json.dumps(st.args, sort_keys=True)) for t in TASKS for st in t.plan}
    canaries = {c["shadows"]: c for c in pool.canaries if c["type"] == "granularity_trap"}
    checked = 0
    for task in (t for t in TASKS if "granularity_trap" in t.declared_types):
        for s in SEEDS:
            gran = {cond: {o.shadows: i for i, o in enumerate(built.get((cond, s, task.id, _arm(cond)), EMPTY).offered)
                           if (o.canary_type or o.control_type) == "granularity_trap"}
                    for cond in ("declared", "mirrored", "control")}
            assert set(gran["declared"]) == set(gran["mirrored"]) == set(gran["control"]), task.id
            assert gran["control"] == gran["declared"], "the control takes its canary's slot"
            for tool in task.correct_tools:
                cases = {json.dumps(st.args, sort_keys=True) for st in task.plan if st.tool == tool}
                assert (tool in gran["declared"]) == (tool in canaries and len(cases) >= 1), (task.id, tool)
            a = built.get(("control", s, task.id, "granularity_trap"), EMPTY)
            for tool in gran["control"]:
                ctl = a.controls[f"control:granularity_trap:{tool}"]
                canary_case = canaries[tool]["behaviour"]["args"]
                assert (tool, json.dumps(canary_case, sort_keys=True)) not in plans, "the canary keeps its defect"
                for step in (st for st in task.plan if st.tool == tool):
                    assert step.args != canary_case
                    assert run_canary(ctl, dict(step.args), tools.execute) == tools.execute(tool, step.args)
                checked += 1
    assert checked > 60
    for cond in ("declared", "control", "mirrored", "full"):
        for s in SEEDS:
            offered = built[(cond, s, "hard-040", _arm(cond))].offered
            assert [o for o in offered if (o.canary_type or o.control_type) == "granularity_trap" and o.shadows == "get_weather"]


def _arm(cond: str) -> str:
    return "granularity_trap" if cond == "control" else ""


class _Empty:
    offered: tuple = ()
    controls: dict = {}


EMPTY = _Empty()


def test_withheld_granularity_offerings_are_logged_and_in_the_skip_list(pool: Any) -> None:
    """Only a task whose plan never calls the tool is withheld (none in our suite)."""
    from types import SimpleNamespace

    log = io.StringIO()
    build_assemblies(TASKS, tools.mcp_definitions(), pool.canaries, "standard", ["declared", "control"], [0],
                     pool.controls, log=log)
    assert "granularity_trap offerings withheld" not in log.getvalue()
    assert not [s for s in pool.skipped if s.task] and "withheld:" not in "\n".join(summary_lines(pool, "pool.json"))
    step = SimpleNamespace(tool="calculate", args={"expression": "1 + 1"})
    task = SimpleNamespace(id="t-7", correct_tools=["get_weather"], declared_types=["granularity_trap"], plan=[step])
    held = withheld_granularity([task], pool.canaries, ["control"], tools.mcp_definitions())
    assert [(t, tool) for t, tool, _ in held["control"]] == [("t-7", "get_weather")]
    assert "never calls get_weather" in held["control"][0][2]


def test_control_hash_covers_behaviour_and_round_trips(built: dict, tmp_path: Path) -> None:
    a = next(a for a in built.values() if a.condition == "control" and a.arm == "granularity_trap")
    plain = tool_list_hash(a.tools)
    assert plain != a.tool_list_hash
    base = built[("baseline", a.seed, a.task_id, "")]
    assert base.tool_list_hash == tool_list_hash(base.tools)  # lists without controls hash as before
    path = tmp_path / "asm.parquet"
    write_assemblies([x for x in built.values() if x.task_id == a.task_id], path)
    back = load_assemblies(path)[("control", a.seed, a.task_id, "granularity_trap")]
    assert back.tool_list_hash == a.tool_list_hash and back.offered == a.offered
    gran = [k for k, r in a.controls.items() if r["type"] == "granularity_trap"]
    for k in gran:
        assert back.controls[k]["behaviour"] == a.controls[k]["behaviour"]


def test_control_condition_needs_controls(pool: Any) -> None:
    with pytest.raises(InputError) as err:
        build_assemblies(TASKS[:3], tools.mcp_definitions(), pool.canaries, "standard", ["control"], [0], [], source="pool.json")
    assert err.value.file == "pool.json" and err.value.field == "controls" and "--controls" in str(err.value)


def test_seeds_of_one_parity_are_flagged(pool: Any) -> None:
    log = io.StringIO()
    build_assemblies(TASKS[:2], tools.mcp_definitions(), pool.canaries, "standard", ["declared"], [0, 2], log=log)
    assert "WARNING" in log.getvalue() and "alternate" in log.getvalue()


# --------------------------------------------------------------------------- detector


def _record(offered: list[OfferedTool], calls: list[str], condition: str = "control") -> RunRecord:
    events = []
    for i, name in enumerate(calls):
        events.append(ToolCallEvent(turn=i, call_id=f"c{i}", name=name, status="ok", arguments={}))
        events.append(ToolResultEvent(turn=i, call_id=f"c{i}", name=name, content="ok", is_error=False))
    return RunRecord(run_id="r1", identity={}, model="m", group="g", backend="reference", condition=condition,
                     pool="standard", seed=0, task_id="t", difficulty="easy", offered=offered,
                     correct_tools=["get_weather"], events=events, final_answer="x", status="completed", error=False)


CTL = OfferedTool("get_weather_v2", shadows="get_weather", control_id="control:parameter_trap:get_weather",
                  control_type="parameter_trap")
CAN = OfferedTool("get_weather_v2", canary_id="parameter_trap:get_weather", canary_type="parameter_trap", shadows="get_weather")
REAL = OfferedTool("get_weather")


def test_a_control_call_is_a_control_call_not_a_canary_call() -> None:
    rec = _record([CTL, REAL], ["get_weather_v2", "get_weather"])
    calls = classify_calls(rec)
    assert [c.cls for c in calls] == ["control", "real"]
    assert calls[0].control_type == "parameter_trap" and calls[0].canary_type is None
    m = run_metrics(rec, calls)
    assert (m["canary_calls"], m["control_calls"], m["tool_calls"], m["csr"], m["trapped"]) == (0, 1, 2, 0.0, False)
    assert m["control_present_parameter_trap"] and m["control_called_parameter_trap"]
    assert not m["present_parameter_trap"] and not m["trapped_parameter_trap"] and m["recovered"] is None
    assert m["canary_before_real"] is True
    canary = run_metrics(_record([REAL, CAN], ["get_weather_v2"], "declared"))
    assert (canary["canary_calls"], canary["control_calls"], canary["canary_before_real"]) == (1, 0, False)
    assert not canary["control_present_parameter_trap"]


def test_canary_before_real_is_null_without_canaries_or_when_mixed() -> None:
    other = OfferedTool("advanced_calc", canary_id="capability_mirage:calculate", canary_type="capability_mirage", shadows="calculate")
    assert canary_before_real([REAL]) is None
    assert canary_before_real([CAN, REAL, OfferedTool("calculate"), other]) is None  # mixed
    assert canary_before_real([CAN, other, REAL, OfferedTool("calculate")]) is True
    assert canary_before_real([CAN]) is None  # the shadowed tool is not offered


# --------------------------------------------------------------------------- loop and agents


def _task(task_id: str) -> Any:
    return next(t for t in TASKS if t.id == task_id)


def test_the_loop_refuses_a_controls_invalid_arguments_like_a_real_tools(built: dict, pool: Any) -> None:
    records = {str(c["id"]): c for c in [*pool.canaries, *pool.controls]}
    key = next(k for k, a in built.items() if k[0] == "control" and any(o.control_type == "parameter_trap" for o in a.offered))
    ctl_list, can_list = built[key], built[("declared", key[1], key[2], "")]
    name = next(o.name for o in ctl_list.offered if o.control_type == "parameter_trap")
    for a, kind in ((ctl_list, "tool_error"), (can_list, "tool_result")):
        ts = toolset_from_assembly(a, records, scope="t")
        events: list[Event] = []
        execute_call(ts, _default_env(), 0, "c0", name, '{"no_such_parameter": 1}', events, [])
        assert events[0].status == "invalid_arguments" and events[1].kind == kind


def _default_env() -> Any:
    from canarykit.agents.loop import default_environment

    return default_environment()


def _run(model: dict[str, Any], a: Any, pool: Any) -> RunRecord:
    records = {str(c["id"]): c for c in [*pool.canaries, *pool.controls]}
    ts = toolset_from_assembly(a, records, scope=f"test-{a.condition}")
    spec = RunSpec(model, _task(a.task_id), a.condition, "standard", a.seed, ts, 12, arm=a.arm)
    return asyncio.run(run_one(spec, make_backend(model)))


def test_reference_agents_choose_by_text_and_slot_not_by_metadata(built: dict, pool: Any) -> None:
    """Reference agents read only text. A planted agent taking every look-alike it accepts
    calls, among the canaries of a declared list, only those of its own type (the others'
    text shows their defect). The surface agent's draws depend on the list it is shown and on
    nothing else: the same list run twice goes to the same slots, and (issue 27 item 5) a
    list and its twin list draw independently, so over the lists they do not always agree."""
    surface = {"name": "s", "backend": "reference", "agent": "surface", "take_prob": 1.0, "backoff_prob": 1.0, "group": "planted"}
    lists = [a for (c, s, _t, _arm), a in built.items() if c == "control" and s == 0 and a.controls][:12]
    own = agree = 0
    for a in lists:
        dec = built[("declared", a.seed, a.task_id, "")]
        for t in {o.canary_type for o in dec.offered if o.canary_type}:
            planted = {"name": "p", "backend": "reference", "agent": "planted", "canary_type": t, "take_prob": 1.0,
                       "backoff_prob": 0.0, "group": "planted"}
            taken = {c.canary_type for c in classify_calls(_run(planted, dec, pool)) if c.cls == "canary"}
            assert taken <= {t}, (a.task_id, t, taken)
            own += taken == {t}
        firsts = []
        for lst in (dec, a, a):
            rec = _run(surface, lst, pool)
            assert rec.status == "completed"
            slot = {o.name: i for i, o in enumerate(lst.offered)}
            shadows = {o.name: o.shadows or o.name for o in lst.offered}
            first: dict[str, int] = {}
            for e in rec.events:
                if e.kind == "tool_call" and e.name in slot:
                    first.setdefault(str(shadows[e.name]), slot[e.name])
            firsts.append(first)
        assert firsts[1] == firsts[2], a.task_id  # one list, one set of draws
        agree += firsts[0] == firsts[1]
    assert own >= 10
    assert agree < len(lists), "a list and its twin list share no random numbers"
