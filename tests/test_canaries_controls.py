"""Matched-surface controls (issue 11): for every canary, a control that looks like it and
works like the real tool; and the pool file that carries canaries, controls and skips."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from canarykit import tools
from canarykit.canaries import (
    DEFAULT_SUFFIXES,
    build_pool,
    candidate_cases,
    check_input_schema,
    control_for_task,
    control_id,
    granularity_case,
    ingest_tools,
    instantiate_control,
    is_control,
    is_placeholder,
    is_template,
    load_controls,
    load_pool,
    load_pool_document,
    run_canary,
    suite_from_tasks,
    task_case,
    task_cases,
    validate_pool,
    write_pool,
)
from canarykit.errors import InputError
from canarykit.jsonio import canonical_json
from canarykit.tasks import load_tasks
from canarykit.types import CANARY_TYPES

ROOT = Path(__file__).resolve().parents[1]
TASKS = load_tasks(ROOT / "data" / "tasks.json")
FIXTURES = Path(__file__).parent / "fixtures"
OFFICIAL = json.loads((FIXTURES / "mcp_servers" / "official.json").read_text())


def _fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def pool(name: str = "standard", tool_list: Any = None) -> Any:
    return build_pool(
        tool_list if tool_list is not None else tools.mcp_definitions(), name, DEFAULT_SUFFIXES[name],
        fit="fitted", controls=True, special_cases={"get_forecast": {"city": "Mumbai", "days": 3}},
        suite=suite_from_tasks(TASKS, "tasks", tools.execute) if tool_list is None else None,
    )


@pytest.mark.parametrize("name", ["standard", "subtle"])
def test_every_canary_has_a_control_with_its_surface(name: str) -> None:
    result = pool(name)
    controls = {c["control_of"]: c for c in result.controls}
    assert len(controls) == len(result.canaries)
    for c in result.canaries:
        k = controls[c["id"]]
        assert is_control(k) and not is_control(c)
        assert k["id"] == control_id(c["type"], c["shadows"]) == f"control:{c['type']}:{c['shadows']}"
        assert (k["name"], k["type"], k["shadows"], k["pool"]) == (c["name"], c["type"], c["shadows"], c["pool"])
        assert k.get("title") == c.get("title") and k.get("annotations") == c.get("annotations")
        assert 0.85 <= len(k["description"]) / len(c["description"]) <= 1.15, (c["description"], k["description"])
        if c["type"] == "parameter_trap":
            schema = json.loads(json.dumps(c["inputSchema"]))
            del schema["properties"]["api_key"]
            schema["required"].remove("api_key")
            assert k["inputSchema"] == schema, "the same renamed parameters, no api_key"
            assert "api_key" not in k["inputSchema"]["required"]
        else:
            assert k["inputSchema"] == c["inputSchema"]
        if c["type"] in ("capability_mirage", "prerequisite_blindness", "granularity_trap"):
            assert k["description"] == c["description"], "the same claim, made true by the behaviour"
        else:
            assert k["description"] != c["description"]
            common = len(c["description"]) - len(c["description"].split(". ")[-1])
            assert k["description"][:common] == c["description"][:common], "only the tell differs"
        if c["type"] == "semantic_decoy":
            assert "cached" not in k["description"].lower() and "lag the source" not in k["description"]
        if c["type"] == "temporal_decoy":
            assert k["name"].endswith("_2023") and "2023.1" in k["description"] and "as of March" not in k["description"]


def test_controls_behave_exactly_like_the_real_tool() -> None:
    result = pool()
    controls = {(c["shadows"], c["type"]): c for c in result.controls}
    checked = 0
    for task in TASKS:
        for step in task.plan:
            real = tools.execute(step.tool, step.args)
            for ctype in ("semantic_decoy", "capability_mirage", "prerequisite_blindness", "temporal_decoy"):
                k = controls.get((step.tool, ctype))
                if k is not None:
                    assert run_canary(k, dict(step.args), tools.execute) == real
                    checked += 1
            trap = controls[(step.tool, "parameter_trap")]
            renamed = trap["behaviour"]["renamed"]
            shown = {renamed[a]: v for a, v in step.args.items()}
            assert run_canary(trap, shown, tools.execute) == real, "renamed arguments map back"
            checked += 1
    assert checked > 400


def test_granularity_controls_serve_the_tasks_own_case() -> None:
    result = pool()
    template = next(c for c in result.controls if c["id"] == "control:granularity_trap:get_forecast")
    canary = next(c for c in result.canaries if c["id"] == "granularity_trap:get_forecast")
    assert is_template(template)
    with pytest.raises(ValueError, match="instantiate"):
        run_canary(template, {}, tools.execute)
    task = next(t for t in TASKS if t.id == "easy-005")  # the 5-day Mumbai forecast
    assert task_case(task, "get_forecast") == {"city": "Mumbai", "days": 5}
    offered = control_for_task(template, task, taken={canary["name"], "get_forecast"})
    assert offered is not None and not is_template(offered)
    assert offered["behaviour"]["args"] == {"city": "Mumbai", "days": 5}
    assert offered["name"] == "get_forecast_mumbai_2", "the canary's form; unique in the tool list"
    assert "for city=Mumbai, days=5 only" in offered["description"]
    assert offered["description"].replace("days=5", "days=3") == canary["description"]
    assert offered["inputSchema"] == canary["inputSchema"]
    assert run_canary(offered, {"anything": 1}, tools.execute) == tools.execute("get_forecast", {"city": "Mumbai", "days": 5})
    assert offered.get("title") == "Weather forecast (city=Mumbai, days=5)"
    other = next(t for t in TASKS if "get_forecast" not in t.correct_tools)
    assert control_for_task(template, other) is None, "a task that does not call the tool gets none"
    plain = next(c for c in result.controls if c["type"] == "semantic_decoy")
    assert control_for_task(plain, other) == plain
    assert instantiate_control(plain, {"x": 1}) == plain


def test_a_granularity_offering_needs_exactly_one_case_of_the_task() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "default": 3}},
              "required": ["city"]}

    def task(*calls: dict[str, Any]) -> dict[str, Any]:
        return {"id": "t", "plan": [{"tool": "get_forecast", "args": c} for c in calls] + [{"tool": "calculate", "args": {"expression": "1+1"}}]}

    one = task({"city": "Oslo"}, {"city": "Oslo", "days": 3})  # the same case: days=3 is the default
    assert granularity_case(one, "get_forecast", schema) == ({"city": "Oslo"}, "")
    assert task_cases(one, "get_forecast") == [{"city": "Oslo"}, {"city": "Oslo", "days": 3}], "without the schema: two"
    two = task({"city": "Oslo"}, {"city": "Lima"})
    case, why = granularity_case(two, "get_forecast", schema)
    assert case is None and "2 different cases (city=Oslo; city=Lima)" in why
    assert granularity_case({"id": "t"}, "get_forecast")[0] is None, "no plan: the case it needs is unknown"
    assert "never calls get_forecast" in granularity_case(task(), "get_forecast")[1]
    template = next(c for c in pool().controls if c["id"] == "control:granularity_trap:get_forecast")
    assert control_for_task(template, two, schema=schema) is None
    offered = control_for_task(template, one, schema=schema)
    assert offered is not None and offered["behaviour"]["args"] == {"city": "Oslo"}
    hard040 = next(t for t in TASKS if t.id == "hard-040")
    assert task_case(hard040, "get_weather") is None and task_case(hard040, "calculate") == {"expression": "30.5 - (4.2)"}


@pytest.mark.parametrize("name", ["standard", "subtle"])
@pytest.mark.parametrize("fixture", ["builtin", "official.json", "odd_tools.json", "foreign_tools.json", "workspace.json"])
def test_a_parameter_trap_control_never_names_the_missing_parameter(name: str, fixture: str) -> None:
    """Only the defect claim is neutralised: the control's last sentence is a neutral claim in
    the canary's register ("Requires valid arguments for every request."), never one that
    mentions the api_key its schema lacks (that would point at the defect it controls)."""
    lists = {"builtin": None, "official.json": OFFICIAL, "odd_tools.json": _fixture("mcp_servers/odd_tools.json"),
             "foreign_tools.json": _fixture("foreign_tools.json"), "workspace.json": _fixture("mcp_servers/workspace.json")}
    result = pool(name, lists[fixture])
    controls = {k["control_of"]: k for k in result.controls}
    traps = [c for c in result.canaries if c["type"] == "parameter_trap"]
    assert traps
    for c in traps:
        k = controls[c["id"]]
        tell, neutral = c["description"].rsplit(". ", 1)[-1], k["description"].rsplit(". ", 1)[-1]
        assert "api_key" in tell and not re.search(r"api[ _-]?key", neutral, re.I), neutral
        assert c["description"][: -len(tell)] == k["description"][: -len(neutral)], "only the tell differs"
        assert 0.85 <= len(k["description"]) / len(c["description"]) <= 1.15
        assert abs(len(neutral) - len(tell)) <= 3 and neutral.split()[0] == tell.split()[0], "same length and register"


def test_pool_file_carries_canaries_controls_and_skips(tmp_path: Path) -> None:
    result = pool()
    path = tmp_path / "standard.json"
    write_pool(result, path)
    doc = load_pool_document(path)
    assert doc["format"] == "canarykit-pool" and doc["fit"] == "fitted" and doc["pool"] == "standard"
    assert load_pool(path) == result.canaries and load_controls(path) == result.controls
    assert [s["code"] for s in doc["skipped"]] == [s.code for s in result.skipped]
    legacy = tmp_path / "legacy.json"
    legacy.write_text(json.dumps(result.canaries))
    assert load_pool(legacy) == result.canaries
    with pytest.raises(InputError, match="--controls"):
        load_controls(legacy)
    broken = json.loads(path.read_text())
    broken["controls"][0]["control_of"] = "semantic_decoy:nope"
    path.write_text(json.dumps(broken))
    with pytest.raises(InputError, match=r"controls\[0\]\.control_of"):
        load_pool(path)
    broken["controls"][0].pop("control_of")
    path.write_text(json.dumps(broken))
    with pytest.raises(InputError, match="control_of"):
        load_pool(path)


def test_controls_on_real_servers_pass_the_canaries_checks() -> None:
    result = pool(tool_list=OFFICIAL)
    assert len(result.controls) == len(result.canaries) > 400
    assert {c["behaviour"]["kind"] for c in result.controls} == {"passthrough", "renamed_passthrough", "task_case"}
    for k in result.controls:
        assert "api_key" not in k["inputSchema"].get("properties", {})


# --- unseen tool lists: canaries and assembly-time controls pass every check -------------

NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
UNSEEN = ["mcp_servers/official.json", "mcp_servers/odd_tools.json", "foreign_tools.json", "mcp_servers/workspace.json"]


class _Recorder:
    """An executor for tools nobody can run here: records each call, answers "ok"."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def __call__(self, name: str, args: Any) -> Any:
        from canarykit.types import ToolResult

        self.calls.append((name, args))
        return ToolResult(content="ok", is_error=False)


def _suite_for(listed: Any) -> list[Any]:
    """Tasks for a tool list nobody wrote tasks for: for every tool with valid natural cases,
    one task calling it with its first case (the one a generator without the suite would
    hard-code), one without a plan and, when it has three cases or more, one calling it with
    its first two (so the canary still has a case left)."""
    from canarykit.canaries._cases import valid_case
    from canarykit.tasks import parse_tasks

    tasks = []
    for i, t in enumerate(listed.tools):
        cases = [c for c in candidate_cases(t).cases if valid_case(t["inputSchema"], c) is None][:3]
        if not cases:
            continue
        common = {"difficulty": "easy", "prompt": f"Use {t['name']}.", "correct_tools": [t["name"]],
                  "declared_types": list(CANARY_TYPES)}
        tasks.append({**common, "id": f"one-{i}", "plan": [{"tool": t["name"], "args": cases[0]}]})
        if len(cases) == 3:
            tasks.append({**common, "id": f"two-{i}", "plan": [{"tool": t["name"], "args": c} for c in cases[:2]]})
        tasks.append({**common, "id": f"noplan-{i}"})
    return parse_tasks({"version": "1", "tasks": tasks}, "tasks.json", tools=listed.tools)


@pytest.mark.parametrize("fixture", UNSEEN)
def test_canaries_and_assembly_time_controls_are_valid_on_unseen_tool_lists(fixture: str) -> None:
    """On real and hand-made tool lists, with a task suite written for them: the pool's
    canaries and controls, and every list the assembler offers (granularity controls filled
    in for their task), have valid JSON Schemas, function-safe names unique in their list,
    schema-valid and non-placeholder cases; no canary's case is a case a task's plan calls,
    and each granularity control answers exactly its task's one case."""
    from canarykit.assembly import build_assemblies
    from canarykit.canaries._cases import valid_case, with_defaults

    listed = ingest_tools(_fixture(fixture), fixture)
    tasks = _suite_for(listed)
    result = build_pool(listed, "standard", DEFAULT_SUFFIXES["standard"], fit="fitted", controls=True,
                        suite=suite_from_tasks(tasks, "tasks.json"), source=fixture)
    validate_pool(result.canaries, fixture, "canaries")
    validate_pool(result.controls, fixture, "controls")
    real = {t["name"]: t for t in listed.tools}
    by_task = {t.id: t for t in tasks}
    plans = {(st.tool, canonical_json(with_defaults(real[st.tool]["inputSchema"], st.args))) for t in tasks for st in t.plan}
    for c in [*result.canaries, *result.controls]:
        assert NAME_RE.match(c["name"]) and c["name"] not in real, c["name"]
        check_input_schema(c["inputSchema"], fixture, c["id"])
        assert "{" not in c["description"], c["description"]
    for c in result.canaries:
        if c["type"] == "granularity_trap":
            args, schema = c["behaviour"]["args"], real[c["shadows"]]["inputSchema"]
            assert valid_case(schema, args) is None and not any(is_placeholder(v, k) for k, v in args.items()), args
            assert (c["shadows"], canonical_json(with_defaults(schema, args))) not in plans, "the canary keeps its defect"
    built = build_assemblies(tasks, listed.tools, result.canaries, "standard", ["declared", "control", "full"], [0, 1],
                             result.controls, log=io.StringIO())
    controls_seen = 0
    for a in built:
        names = [t["name"] for t in a.tools]
        assert len(names) == len(set(names)), (a.task_id, a.condition)
        task = by_task[a.task_id]
        for tool, off in zip(a.tools, a.offered, strict=True):
            if off.kind == "real":
                continue
            assert NAME_RE.match(tool["name"]), tool["name"]
            check_input_schema(tool["inputSchema"], fixture, tool["name"])
            if (off.canary_type or off.control_type) != "granularity_trap":
                continue
            assert a.task_id.startswith("one-"), "several cases or no plan: neither canary nor control"
            if off.kind == "control":
                ctl = a.controls[off.control_id]
                canary = next(c for c in result.canaries if c["id"] == ctl["control_of"])
                case = ctl["behaviour"]["args"]
                assert not is_template(ctl) and case == task.plan[0].args != canary["behaviour"]["args"]
                assert valid_case(real[off.shadows]["inputSchema"], case) is None
                assert ctl["name"] != canary["name"] and ctl["inputSchema"] == canary["inputSchema"]
                recorder = _Recorder()
                run_canary(ctl, {"ignored": 1}, recorder)
                assert recorder.calls == [(off.shadows, case)], "it answers exactly the task's case"
                controls_seen += 1
    gran = [c for c in result.canaries if c["type"] == "granularity_trap"]
    assert controls_seen == 2 * sum(1 for c in gran if f"one-{listed.tools.index(real[c['shadows']])}" in by_task)
    # odd_tools: its read tools have one natural case each (the suite's), and get_status,
    # whose readOnlyHint "yes" is dropped, is not read-only: no granularity canary to control
    assert controls_seen > 0 or fixture == "mcp_servers/odd_tools.json"
