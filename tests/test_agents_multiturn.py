"""Tasks of several user turns (issue 30, item 3): the loop feeds the follow-ups one by one, a
held-back tool is neither offered nor callable before its turn (nor are its look-alikes), a
per-run environment gets each run its own state, and the task file says all of it."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from fakes.world import FAKE_ENV, FakeTask, Step, toolset
from test_agents_loop import MODEL, Scripted, calls, final

from canarykit.agents import RunSpec, run_one
from canarykit.agents.loop import SYSTEM_PROMPT, Environment
from canarykit.agents.protocol import make_backend
from canarykit.errors import InputError
from canarykit.study.config import turns_needed
from canarykit.tasks.tasks import PlanStep, parse_tasks
from canarykit.types import ToolResult


@dataclasses.dataclass(frozen=True)
class Turned(FakeTask):
    """A task of three user turns: weather, then a sum, then nothing to do."""

    id: str = "mt1"
    prompt: str = "What is the weather in Paris?"
    plan: tuple[Any, ...] = (Step("get_weather", {"city": "Paris"}),)
    follow_ups: tuple[str, ...] = ("Now add 2 and 3.", "Thanks.")
    tools_from: tuple[tuple[str, int], ...] = (("add", 1),)

    @property
    def user_turns(self) -> tuple[str, ...]:
        return (self.prompt, *self.follow_ups)


def test_follow_ups_are_fed_one_by_one_and_a_held_back_tool_waits_for_its_turn() -> None:
    backend = Scripted([calls(("c1", "add", '{"a": 1, "b": 1}')), calls(("c2", "get_weather", '{"city": "Paris"}')),
                        final("18.5 C"), calls(("c3", "add", '{"a": 2, "b": 3}')), final("5"), final("you're welcome")])
    spec = RunSpec(MODEL, Turned(), "declared", "standard", 0, toolset(), 4)
    rec = asyncio.run(run_one(spec, backend, env=FAKE_ENV))
    assert rec.status == "completed" and rec.final_answer == "you're welcome"
    assert [e.content for e in rec.events if e.kind == "final_answer"] == ["18.5 C", "5", "you're welcome"]
    # user turn 0: neither `add` nor anything else is offered before turn 1; a call of it is refused as unknown
    first = {t["function"]["name"] for t in backend.requests[0].tools}
    assert "add" not in first and "get_weather" in first
    assert [(e.name, e.status) for e in rec.events if e.kind == "tool_call"] == [
        ("add", "unknown_tool"), ("get_weather", "ok"), ("add", "ok")]
    assert "add" in {t["function"]["name"] for t in backend.requests[3].tools}
    # the conversation goes on: the previous answer, then the next user message
    assert backend.requests[3].messages[-2:] == [{"role": "assistant", "content": "18.5 C"},
                                                 {"role": "user", "content": "Now add 2 and 3."}]
    assert backend.requests[0].messages[0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert [e.turn for e in rec.events if e.kind == "model_turn"] == [0, 1, 2, 3, 4, 5]


def test_max_turns_bounds_each_user_turn_and_a_cut_off_turn_ends_the_run() -> None:
    spin = [calls((f"c{i}", "get_weather", '{"city": "Paris"}')) for i in range(3)]
    backend = Scripted([calls(("c0", "get_weather", '{"city": "Paris"}')), final("18.5 C"), *spin])
    rec = asyncio.run(run_one(RunSpec(MODEL, Turned(), "declared", "standard", 0, toolset(), 3), backend, env=FAKE_ENV))
    assert rec.status == "truncated" and not rec.error
    assert sum(e.kind == "final_answer" for e in rec.events) == 1 and len(backend.requests) == 5


def test_a_per_run_environment_gets_each_run_its_own_state_and_says_what_it_ran() -> None:
    made: list[list[Any]] = []

    def for_run(spec: Any) -> Environment:
        log: list[Any] = []
        made.append(log)

        def execute(name: str, args: Any) -> ToolResult:
            log.append({"name": name, "arguments": args})
            return ToolResult(json.dumps({"n": len(log)}))

        def executed() -> list[Any]:
            out = list(log)
            log.clear()
            return out

        return dataclasses.replace(FAKE_ENV, execute=execute, executed=executed)

    env = dataclasses.replace(FAKE_ENV, for_run=for_run)
    oracle = make_backend({"name": "oracle", "backend": "reference", "agent": "oracle"}, {})
    task = dataclasses.replace(Turned(), plan=(PlanStep("get_weather", {"city": "Paris"}), PlanStep("add", {"a": 2, "b": 3}, 1)))
    spec = RunSpec({"name": "oracle", "backend": "reference", "agent": "oracle"}, task, "declared", "standard", 0, toolset(), 4)
    for _ in range(2):
        rec = asyncio.run(run_one(spec, oracle, env=env))
        assert rec.status == "completed"
        assert [e.executed for e in rec.events if e.kind == "tool_result"] == [
            [{"name": "get_weather", "arguments": {"city": "Paris"}}], [{"name": "add", "arguments": {"a": 2, "b": 3}}]]
        # the oracle answers each user turn once its steps are done: a call per turn, then the answers
        assert [e.name for e in rec.events if e.kind == "tool_call"] == ["get_weather", "add"]
        assert sum(e.kind == "final_answer" for e in rec.events) == 3
    assert len(made) == 2, "a fresh environment per run"


def _doc(**extra: Any) -> dict[str, Any]:
    task = {"id": "mt-1", "difficulty": "medium", "prompt": "Weather in Paris?", "correct_tools": ["get_weather", "calculate"],
            "declared_types": ["parameter_trap"], "plan": [{"tool": "get_weather", "args": {"city": "Paris"}},
                                                          {"tool": "calculate", "args": {"expression": "2+3"}, "turn": 1}],
            "follow_ups": ["And 2 + 3?"], **extra}
    return {"version": "1", "tasks": [task]}


def test_the_task_file_carries_the_turns_and_refuses_what_does_not_fit(tmp_path: Path) -> None:
    (task,) = parse_tasks(_doc(tools_from={"calculate": 1}, setup={"anything": [1]}), "t.json")
    assert task.user_turns == ("Weather in Paris?", "And 2 + 3?") and task.offered_from("calculate") == 1
    assert task.to_dict()["plan"][1] == {"tool": "calculate", "args": {"expression": "2+3"}, "turn": 1}
    assert parse_tasks({"version": "1", "tasks": [task.to_dict()]}, "again.json") == [task]
    assert turns_needed(task) == 2, "max_turns bounds each user turn: one call + the answer"
    bad = [
        (_doc(tools_from={"calculate": 2}), "tasks[0].tools_from.calculate", "user turn 2, but the task has 2 user turn(s)"),
        (_doc(tools=["get_weather"]), "tasks[0].correct_tools[1]", "'calculate' is not among the task's tools"),
        (_doc(tools_from={"get_weather": 1}), "tasks[0].plan[0].turn", "'get_weather' is offered from user turn 1 on"),
    ]
    for doc, field, words in bad:
        with pytest.raises(InputError) as exc:
            parse_tasks(doc, "t.json")
        assert exc.value.field == field and words in str(exc.value)
    doc = _doc()
    doc["tasks"][0]["plan"][1]["turn"] = 3
    with pytest.raises(InputError, match=r"tasks\[0\]\.plan\[1\]\.turn: user turn 3"):
        parse_tasks(doc, "t.json")
