"""The task suite: shape, rubric soundness, regeneration, and loader error reporting."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import canarykit
from canarykit import tools
from canarykit.errors import InputError
from canarykit.tasks.suite import task_map
from canarykit.tasks.taskgen import build_suite
from canarykit.tasks.tasks import (
    Fact,
    Task,
    check_rubric,
    compose_answer,
    execute_plan,
    extract_numbers,
    load_tasks,
    task_hash,
    tasks_table,
)
from canarykit.types import CANARY_TYPES, ToolResult

ROOT = Path(__file__).resolve().parents[1]
TASKS = ROOT / "data" / "tasks.json"
PLACEHOLDERS = re.compile(r"result here|lorem ipsum|\bsample\b|\btodo\b|placeholder|\bfoo\b|\bdummy\b", re.I)


@pytest.fixture(scope="module")
def suite() -> list[Task]:
    return load_tasks(TASKS)


@pytest.fixture(scope="module")
def executed(suite: list[Task]) -> dict[str, list[tuple[Any, ToolResult]]]:
    return {t.id: execute_plan(t) for t in suite}


def test_suite_shape(suite: list[Task]) -> None:
    assert len(suite) == 120
    assert Counter(t.difficulty for t in suite) == {"easy": 40, "medium": 40, "hard": 40}
    for t in suite:
        n = len(t.plan)
        assert {"easy": n == 1, "medium": n == 2, "hard": 3 <= n <= 4}[t.difficulty], t.id
        assert t.correct_tools == tuple(dict.fromkeys(s.tool for s in t.plan))
        assert 1 <= len(t.declared_types) <= 3 and set(t.declared_types) <= set(CANARY_TYPES)
        assert 1 <= len(t.rubric) <= 3 and t.rubric[0].kind == "number"
        if t.difficulty == "hard":
            servers = {tools.get_tool(s.tool).server for s in t.plan}
            assert 1 < len(servers) <= 3, t.id
    used = Counter(name for t in suite for name in t.correct_tools)
    assert set(used) == set(tools.tool_names())
    assert min(used.values()) >= 5
    declared = Counter(ct for t in suite for ct in t.declared_types)
    assert all(declared[ct] >= 20 for ct in CANARY_TYPES), declared


def test_prompts_never_contain_the_key_answer(suite: list[Task]) -> None:
    for t in suite:
        key = t.rubric[0]
        assert not any(abs(n - float(key.value)) <= key.tolerance for n in extract_numbers(t.prompt)), t.id


def test_plans_replay_without_errors_or_placeholders(executed: dict[str, list[tuple[Any, ToolResult]]]) -> None:
    for task_id, steps in executed.items():
        for _, result in steps:
            assert not result.is_error, (task_id, result.content)
            assert not PLACEHOLDERS.search(result.content), (task_id, result.content[:200])


def test_reference_answers_pass_and_perturbed_answers_fail(
    suite: list[Task], executed: dict[str, list[tuple[Any, ToolResult]]]
) -> None:
    def perturb(text: str) -> str:
        # Every figure of the last result becomes a distinct large negative number.
        return re.sub(r"(?<![\w.])-?\d+(?:\.\d+)?",
                      lambda m: f"{-(abs(float(m.group())) * 7.77 + 1234567.89):.2f}", text)

    for t in suite:
        steps = [(s.tool, s.args, r) for s, r in executed[t.id]]
        assert check_rubric(t, compose_answer(steps)).passed, t.id
        tool, args, last = steps[-1]
        bad = steps[:-1] + [(tool, args, ToolResult(content=perturb(last.content)))]
        result = check_rubric(t, compose_answer(bad))
        assert not result.passed, t.id
        assert result.facts[0][1] is False


def test_empty_answers_fail(suite: list[Task]) -> None:
    for answer in (None, "", "   "):
        r = check_rubric(suite[0], answer)
        assert not r.passed and all(not ok for _, ok in r.facts)


def test_number_parsing_and_text_facts() -> None:
    assert extract_numbers("1,234.5 and -3 and 1e3 and 12.5% and −7") == pytest.approx(
        [1234.5, 1, 234.5, -3, 1000, 12.5, 0.125, -7])
    task = Task("t-1", "easy", "p", ("calculate",), ("semantic_decoy",), (),
                (Fact("number", "total", 1515.828, 7.58), Fact("text", "city", "Mumbai")))
    assert check_rubric(task, "The total is $1,515.83 for MUMBAI.").passed
    assert not check_rubric(task, "The total is $1,515.83 for Delhi.").passed
    assert not check_rubric(task, "The total is $1,600 for Mumbai.").passed
    # Facts must be in the final answer; the trace does not count.
    assert not check_rubric(task, "Done.", trace_text="1515.828 Mumbai").passed


def test_regeneration_is_byte_identical(tmp_path: Path) -> None:
    # The README's command, run as a user runs it, rewrites the shipped suite byte for byte.
    out = tmp_path / "tasks.json"
    src = str(Path(canarykit.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.run([sys.executable, "-m", "canarykit.tasks.taskgen", str(out)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stderr == ""
    assert proc.stdout == f"wrote 120 tasks (easy: 40, medium: 40, hard: 40) to {out}\n"
    assert out.read_bytes() == TASKS.read_bytes()
    assert build_suite() == json.loads(TASKS.read_text(encoding="utf-8"))


def test_generator_usage_and_suite_check(capsys: pytest.CaptureFixture[str]) -> None:
    from canarykit.tasks.taskgen import check_suite, main

    assert main([]) == 2
    assert "usage: python -m canarykit.tasks.taskgen OUTPUT.json" in capsys.readouterr().err
    task = _base()["tasks"][0]
    assert [t.id for t in check_suite({"version": "1", "tasks": [task]})] == [task["id"]]
    # A drafted key figure the plan does not deliver, or a plan the loader refuses, stops the build.
    wrong = {**task, "rubric": [{**task["rubric"][0], "value": task["rubric"][0]["value"] + 1000}]}
    with pytest.raises(RuntimeError, match=f"{task['id']}: the reference plan does not satisfy the rubric"):
        check_suite({"version": "1", "tasks": [wrong]})
    unknown = {**task, "correct_tools": ["no_such_tool"], "plan": [{"tool": "no_such_tool", "args": {}}]}
    with pytest.raises(InputError, match=r"tasks\[0\]\.correct_tools\[0\]"):
        check_suite({"version": "1", "tasks": [unknown]})


def test_table_and_hash(suite: list[Task]) -> None:
    df = tasks_table(suite)
    assert df.height == 120 and df["n_steps"].max() == 4
    assert df.filter(df["id"] == "easy-016")["correct_tools"].to_list() == [["convert_units"]]
    assert len({task_hash(t) for t in suite}) == 120
    assert task_hash(suite[0]) == task_hash(load_tasks(TASKS)[0])


# ------------------------------------------------------------------ malformed files


def _base() -> dict[str, Any]:
    return json.loads(TASKS.read_text(encoding="utf-8"))


def _write(tmp_path: Path, obj: Any) -> Path:
    p = tmp_path / "bad_tasks.json"
    p.write_text(obj if isinstance(obj, str) else json.dumps(obj), encoding="utf-8")
    return p


def _mutate(path: str, value: Any = None, delete: bool = False) -> dict[str, Any]:
    doc = _base()
    node: Any = doc
    keys: list[Any] = [int(k) if k.isdigit() else k for k in re.findall(r"\w+", path)]
    for k in keys[:-1]:
        node = node[k]
    if delete:
        del node[keys[-1]]
    else:
        node[keys[-1]] = value
    return doc


@pytest.mark.parametrize(
    ("doc", "field", "problem"),
    [
        (_mutate("tasks[17].plan[0].tool", "foo"), "tasks[17].plan[0].tool", "unknown tool 'foo'"),
        (_mutate("tasks[3].difficulty", "extreme"), "tasks[3].difficulty", "extreme"),
        (_mutate("tasks[5].prompt", delete=True), "tasks[5].prompt", "prompt"),
        (_mutate("tasks[9].id", "easy-001"), "tasks[9].id", "duplicate"),
        (_mutate("tasks[0].plan[0].args", {"value": "five", "from_unit": "mi", "to_unit": "km"}),
         "tasks[0].plan[0].args", "invalid arguments"),
        (_mutate("tasks[2].plan[0].args", {"city": "Paris", "api_key": "k"}), "tasks[2].plan[0].args", "api_key"),
        (_mutate("tasks[4].declared_types", ["semantic_decoy", "wrong_type"]), "tasks[4].declared_types[1]",
         "wrong_type"),
        (_mutate("tasks[6].correct_tools", ["calculate"]), "tasks[6].correct_tools", "distinct tools"),
        (_mutate("tasks[7].correct_tools", ["get_forecast_mumbai"]), "tasks[7].correct_tools[0]", "unknown tool"),
        (_mutate("tasks[8].rubric[0].value", "many"), "tasks[8].rubric[0].value", "number"),
        (_mutate("tasks[1].extra", 1), "tasks[1].extra", "extra"),
        (_mutate("version", "2"), "version", "'1'"),
        ({"version": "1", "tasks": []}, "tasks", "non-empty"),
    ],
)
def test_malformed_task_files_name_file_and_field(tmp_path: Path, doc: Any, field: str, problem: str) -> None:
    path = _write(tmp_path, doc)
    with pytest.raises(InputError) as info:
        load_tasks(path)
    assert info.value.file == str(path)
    assert info.value.field == field
    assert problem.lower() in info.value.problem.lower() or problem.lower() in str(info.value).lower()


@pytest.mark.parametrize("text", ["{not json", "", "[1, 2", '{"version": "1", "tasks": [], "version": "1"}'])
def test_not_json_is_an_input_error(tmp_path: Path, text: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(InputError) as info:
        load_tasks(path)
    assert info.value.file == str(path) and "JSON" in info.value.problem


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        load_tasks(tmp_path / "nope.json")
    assert "not found" in info.value.problem


def test_user_suites_need_not_be_balanced(tmp_path: Path) -> None:
    doc = _base()
    doc["tasks"] = [t for t in doc["tasks"] if t["difficulty"] == "hard"][:3]
    assert [t.difficulty for t in load_tasks(_write(tmp_path, doc))] == ["hard"] * 3


def test_task_map_from_a_file_a_mapping_or_a_list(tmp_path: Path) -> None:
    doc = _base()
    doc["tasks"] = doc["tasks"][:3]
    doc["tasks"][0]["plan"][0]["tool"] = doc["tasks"][0]["correct_tools"][0] = "a_tool_of_some_mcp_server"
    path = _write(tmp_path, doc)
    with pytest.raises(InputError):
        load_tasks(path)  # the built-in tools do not have it
    by_id = task_map(path)  # structure only: the tool names were checked where the tools are known
    assert list(by_id) == [t["id"] for t in doc["tasks"]]
    assert by_id[doc["tasks"][0]["id"]].correct_tools[0] == "a_tool_of_some_mcp_server"
    tasks = list(by_id.values())
    assert task_map(tasks) == by_id == task_map(by_id)
    assert task_map(str(path)) == by_id
    with pytest.raises(InputError):
        task_map(tmp_path / "missing.json")


def test_plans_are_checked_against_the_environments_own_schemas(tmp_path: Path) -> None:
    """A suite for another tool environment: a plan step's arguments are checked against that
    environment's tool schema and refused in the real tools' words, naming the step."""
    doc = _base()
    task = doc["tasks"][0]
    tools = [{"name": s["tool"], "inputSchema": {"type": "object"}} for s in task["plan"]]
    tools[0]["inputSchema"] = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    task["plan"][0]["args"] = {"n": "five"}
    with pytest.raises(InputError) as info:
        load_tasks(_write(tmp_path, {"version": doc["version"], "tasks": [task]}), tools=tools)
    assert info.value.field == "tasks[0].plan[0].args"
    assert info.value.problem == f"invalid arguments for {task['plan'][0]['tool']}: 'five' is not of type 'integer' (at n)"
