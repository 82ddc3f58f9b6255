"""User tool environments (params.yaml ``environment``): configuration, task validation
against an environment's tools, server failures, and a study whose tools are MCP servers.

The end-to-end test here (slow: two Snakemake runs) uses our own five tool servers as the
"user's" MCP servers (no network): the study must come out exactly as with the built-in
tools. The same with a server installed from PyPI is in test_environment_time.py (slow).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml
from fakes.workflow import copy_workflow, run

from canarykit.canaries import run_canary
from canarykit.errors import ConfigError, InputError, ToolEnvironmentError
from canarykit.study.config import check_study, validate_params
from canarykit.tasks.tasks import ANY_TOOLS, parse_tasks
from canarykit.types import ToolResult

FIXTURES = Path(__file__).parent / "fixtures"
SERVERS = ("weather", "math", "file", "search", "database")
TIME_TOOLS = [
    {"name": "get_current_time", "inputSchema": {"type": "object", "properties": {"timezone": {"type": "string"}},
                                                 "required": ["timezone"]}},
    {"name": "convert_time", "inputSchema": {"type": "object", "properties": {
        "source_timezone": {"type": "string"}, "time": {"type": "string"}, "target_timezone": {"type": "string"}},
        "required": ["source_timezone", "time", "target_timezone"]}},
]


def task(**over: Any) -> dict[str, Any]:
    t = {"id": "t1", "difficulty": "easy", "prompt": "What time is it in Tokyo?", "correct_tools": ["get_current_time"],
         "declared_types": ["semantic_decoy"], "plan": [{"tool": "get_current_time", "args": {"timezone": "Asia/Tokyo"}}],
         "rubric": [{"kind": "text", "label": "zone", "value": "Asia/Tokyo"}]}
    t.update(over)
    return {k: v for k, v in t.items() if v is not None}


def test_tasks_are_checked_against_the_environments_tools() -> None:
    doc = {"version": "1", "tasks": [task()]}
    with pytest.raises(InputError, match=r"tasks\[0\]\.correct_tools\[0\]: unknown tool 'get_current_time'; known: get_weather"):
        parse_tasks(doc, "t.json")  # the built-in tools know no time
    assert parse_tasks(doc, "t.json", TIME_TOOLS)[0].plan[0].tool == "get_current_time"
    bad = {"version": "1", "tasks": [task(plan=[{"tool": "get_current_time", "args": {"tz": "UTC"}}])]}
    with pytest.raises(InputError, match=r"t\.json: tasks\[0\]\.plan\[0\]\.args: invalid arguments for get_current_time: "
                                         r"'timezone' is a required property"):
        parse_tasks(bad, "t.json", TIME_TOOLS)
    assert parse_tasks(bad, "t.json", ANY_TOOLS)[0].id == "t1", "structure only, before the servers are listed"


def test_plans_and_rubrics_are_optional_unless_the_study_needs_them(tmp_path: Path) -> None:
    doc = {"version": "1", "tasks": [task(plan=None, rubric=None)]}
    [t] = parse_tasks(doc, "t.json", TIME_TOOLS)
    assert t.plan == () and t.rubric == () and t.correct_tools == ("get_current_time",)
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps(doc))
    env = {"kind": "mcp", "servers": [{"name": "time", "command": ["mcp-server-time"]}], "stateful": False}
    cfg = validate_params({"study": {"tasks": str(path)}, "environment": env,
                           "models": [{"name": "oracle", "backend": "reference", "agent": "oracle"}]}, "params.yaml")
    with pytest.raises(ConfigError, match=r"params\.yaml: models\[0\]: the reference agent 'oracle' follows each task's plan, "
                                          r"and task 't1' of .*tasks\.json has none"):
        check_study(cfg)
    cfg = validate_params({"study": {"tasks": str(path)}, "environment": env,
                           "models": [{"name": "m", "backend": "litellm", "model": "openai/gpt-4.1"}]}, "params.yaml")
    with pytest.raises(ConfigError, match=r"params\.yaml: judge\.primary\.kind: the rubric judge grades each task's rubric"):
        check_study(cfg)
    cfg = validate_params({"study": {"tasks": str(path)}, "environment": env,
                           "models": [{"name": "m", "backend": "litellm", "model": "openai/gpt-4.1"}],
                           "judge": {"primary": {"kind": "llm", "model": "anthropic/claude-x"}, "cross": {"kind": "tool-coverage"}}},
                          "params.yaml")
    assert [t.id for t in check_study(cfg)] == ["t1"]


@pytest.mark.parametrize(("environment", "key", "text"), [
    ({"kind": "mcp"}, "environment.servers", "needs at least one server"),
    ({"kind": "builtin", "servers": [{"name": "a", "url": "http://127.0.0.1:1/mcp"}]}, "environment.servers", "only with"),
    ({"kind": "mcp", "servers": [{"name": "a"}]}, "environment.servers[0]", "give command"),
    ({"kind": "mcp", "servers": [{"name": "a", "url": "http://127.0.0.1:1/mcp", "pass_env": ["X"]}]},
     "environment.servers[0].pass_env", "only a stdio server"),
    ({"kind": "mcp", "servers": [{"name": "a", "command": ["x"]}, {"name": "a", "command": ["y"]}]},
     "environment.servers[1].name", "duplicate server name"),
    ({"kind": "mcp", "servers": [{"name": "a b", "command": ["x"]}]}, "environment.servers[0].name", "does not match"),
    ({"kind": "mcp", "servers": [{"name": "a", "url": "ftp://x"}]}, "environment.servers[0].url", "does not match"),
    ({"kind": "local"}, "environment.kind", "is not one of"),
])
def test_environment_configuration_errors_name_params_yaml_and_the_key(environment: dict[str, Any], key: str, text: str) -> None:
    with pytest.raises(ConfigError) as err:
        validate_params({"environment": environment}, "params.yaml")
    assert str(err.value).startswith(f"params.yaml: {key}") and text in str(err.value)


def test_a_token_the_shell_lacks_names_its_key(monkeypatch: pytest.MonkeyPatch) -> None:
    from canarykit.mcp.environments import server_specs

    monkeypatch.delenv("CANARYKIT_TEST_TOKEN", raising=False)
    env = {"kind": "mcp", "servers": [{"name": "gh", "command": ["srv"], "pass_env": ["CANARYKIT_TEST_TOKEN"]}],
           "stateful": False}
    with pytest.raises(ConfigError, match=r"params\.yaml: environment\.servers\[0\]\.pass_env\[0\]: environment variable "
                                          r"CANARYKIT_TEST_TOKEN is not set"):
        server_specs(env)
    monkeypatch.setenv("CANARYKIT_TEST_TOKEN", "s3cret")
    assert server_specs(env)[0].env == {"CANARYKIT_TEST_TOKEN": "s3cret"}


def test_a_server_failure_fails_the_run_instead_of_answering_the_agent() -> None:
    """The canary runtime passes a server failure up (it is not the tool's answer)."""
    canary = {"id": "semantic_decoy:x", "type": "semantic_decoy", "shadows": "x", "behaviour": {"kind": "stale_cache"}}

    def dead(name: str, args: Any) -> ToolResult:
        raise ToolEnvironmentError("server 'x' exited")

    with pytest.raises(ToolEnvironmentError):
        run_canary(canary, {}, dead)

    def broken(name: str, args: Any) -> ToolResult:
        raise RuntimeError("bug in an executor")

    assert run_canary(canary, {}, broken).is_error, "any other executor failure stays a tool error"


def test_canary_results_are_written_like_the_real_tools_json() -> None:
    canary = {"id": "temporal_decoy:x", "type": "temporal_decoy", "shadows": "x", "behaviour": {"kind": "snapshot"}}
    payload = {"city": "Zürich", "date": "2026-11-30", "high": 11.5}
    for dumps in ({"indent": 2, "ensure_ascii": False}, {"ensure_ascii": True}, {"ensure_ascii": False, "sort_keys": True}):
        real_text = json.dumps(payload, **dumps)  # type: ignore[arg-type]
        result = run_canary(canary, {}, lambda n, a, t=real_text: ToolResult(t, False, dict(payload)))
        assert json.loads(result.content)["date"].startswith("2023"), result.content
        assert result.content == json.dumps(json.loads(result.content), **dumps)  # type: ignore[arg-type]
    # Sorted keys, as our own tools write them: the markers sort in among the real keys.
    real_text = json.dumps(payload, ensure_ascii=False, sort_keys=True)
    result = run_canary(canary, {}, lambda n, a: ToolResult(real_text, False, dict(payload)))
    keys = list(json.loads(result.content))
    assert keys == sorted(keys) and "snapshot" in keys


def test_a_weekday_beside_a_moved_date_moves_with_it() -> None:
    """A stale or 2023 copy stays self-consistent: its only give-away is its defect."""
    real = {"timezone": "Asia/Tokyo", "datetime": "2026-12-01T17:45:03+09:00", "day_of_week": "Tuesday",
            "days": [{"date": "2026-11-30", "weekday": "Mon"}]}
    for ctype, kind in (("semantic_decoy", "stale_cache"), ("temporal_decoy", "snapshot")):
        canary = {"id": f"{ctype}:now", "type": ctype, "shadows": "now",
                  "behaviour": {"kind": kind, "non_numeric": {"dates": "shift_back" if ctype == "semantic_decoy"
                                                              else "to_snapshot_year"}}}
        out = json.loads(run_canary(canary, {"timezone": "Asia/Tokyo"},
                                    lambda n, a: ToolResult(json.dumps(real), False, json.loads(json.dumps(real)))).content)
        from datetime import datetime

        moved = datetime.fromisoformat(out["datetime"])
        assert moved.date() != datetime.fromisoformat(real["datetime"]).date()
        assert out["day_of_week"] == moved.strftime("%A")
        assert out["days"][0]["weekday"] == datetime.fromisoformat(out["days"][0]["date"]).strftime("%a")


def _records(repo: Path) -> dict[tuple[str, str, int, str, str], list[dict[str, Any]]]:
    index = pl.read_parquet(repo / "results/runs/index.parquet")
    out = {}
    for row in index.iter_rows(named=True):
        rid = row["run_id"]
        rec = json.loads((repo / "results/runs/store" / rid[:2] / f"{rid}.json").read_text())
        events = [{k: v for k, v in e.items() if k not in ("latency_s",)} for e in rec["events"]]
        out[(row["model"], row["condition"], row["seed"], row["pool"], row["task_id"])] = events
    return out


@pytest.mark.slow  # whole workflow invocations: tens of seconds on a loaded machine
def test_an_mcp_environment_plans_the_whole_study(tmp_path: Path) -> None:
    """The workflow parses and plans with an MCP environment (the run itself: the slow test below)."""
    repo = copy_workflow(tmp_path / "repo", per_difficulty=1, models=("oracle",))
    cfg = yaml.safe_load((repo / "params.yaml").read_text())
    cfg["environment"] = {"kind": "mcp", "stateful": False, "servers": [
        {"name": s, "command": [sys.executable, "-m", "canarykit.mcp.toolservers", s]} for s in SERVERS]}
    (repo / "params.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    out = run(repo, "snakemake", "-n", "results/table1.csv", "--quiet", "rules").stdout
    for rule in ("export_tools", "generate_canaries", "assemble", "run_agents", "detect", "judge_primary", "runs_table", "stats"):
        assert rule in out


@pytest.mark.slow
def test_our_servers_as_an_mcp_environment_reproduce_the_builtin_study(tmp_path: Path) -> None:
    """The same small study twice: with the built-in tools, and with the five tools served by
    separate MCP server processes as a user environment. Same canaries, same tool lists, and
    every run's events (tool calls and the results the agent read) byte-identical."""
    models = ("lexical", "planted:semantic_decoy")
    builtin = copy_workflow(tmp_path / "builtin", per_difficulty=1, models=models)
    mcp = copy_workflow(tmp_path / "mcp", per_difficulty=1, models=models)
    cfg = yaml.safe_load((mcp / "params.yaml").read_text())
    cfg["environment"] = {"kind": "mcp", "stateful": False, "servers": [
        {"name": s, "command": [sys.executable, "-m", "canarykit.mcp.toolservers", s]} for s in SERVERS]}
    (mcp / "params.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    for repo in (builtin, mcp):
        run(repo, "snakemake", "--cores", "2", "--scheduler", "greedy", "--", "results/runs/index.parquet")
    doc = json.loads((mcp / "results/tools.json").read_text())
    assert [s["name"] for s in doc["servers"]] == list(SERVERS)
    assert [t["name"] for t in doc["tools"]] == [t["name"] for t in json.loads((builtin / "results/tools.json").read_text())]
    for pool in ("standard", "subtle"):
        a = json.loads((builtin / f"results/canaries/{pool}.json").read_text())["canaries"]
        b = json.loads((mcp / f"results/canaries/{pool}.json").read_text())["canaries"]
        assert [(c["id"], c["name"], c["description"]) for c in a] == [(c["id"], c["name"], c["description"]) for c in b]
    ra, rb = _records(builtin), _records(mcp)
    n_cells = len(cfg["study"]["conditions"]) + 1  # the study's conditions + the ablation cell
    assert ra.keys() == rb.keys() and len(ra) == 3 * n_cells * 2  # tasks x cells x agents
    assert ra == rb
    results = [e for events in rb.values() for e in events if e["kind"] == "tool_result"]
    assert len(results) > 24 and any('"cached": true' in e["content"] for e in results), "real and canary results alike"
    summary = json.loads((mcp / "results/logs/run-summary.json").read_text())
    assert summary["failed"] == 0 and summary["executed"] > 0
    logs = mcp / "results/logs/mcp-servers"
    assert sorted(p.name for p in logs.glob("*.stderr.log")) == sorted(f"{s}.stderr.log" for s in SERVERS)


def _env_cfg(servers: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    env = {"kind": "mcp", "servers": servers, "call_timeout_s": 20, "stateful": False, **more}
    return validate_params({"environment": env})["environment"]


def test_servers_that_changed_since_the_export_stop_the_run_stage() -> None:
    from canarykit.mcp.environments import export_environment, make_environment

    cfg = _env_cfg([{"name": "weather", "command": [sys.executable, "-m", "canarykit.mcp.toolservers", "weather"]}])
    doc = export_environment(cfg)
    assert doc["servers"][0]["server_info"] == {"name": "canarykit-weather", "version": "1"}
    doc["servers"][0]["server_info"]["version"] = "0"
    env = make_environment(cfg, doc)
    try:
        with pytest.raises(InputError, match=r"results/tools\.json: tools: the MCP servers now differ from this export "
                                             r"\(server 'weather': '0' -> '1'\); list them again: snakemake --forcerun export_tools"):
            assert env.check is not None
            env.check()
    finally:
        assert env.close is not None
        env.close()


def test_a_server_that_dies_mid_run_fails_the_run_and_the_next_run_restarts_it(tmp_path: Path) -> None:
    import asyncio

    from canarykit.agents import ChatResponse, RunSpec, ToolCall, run_one
    from canarykit.agents.loop import build_toolset
    from canarykit.mcp.environments import export_environment, make_environment
    from canarykit.store.records import OfferedTool

    # its echo and crash tools carry no readOnlyHint: writes allowed, on a server isolated per job
    cfg = _env_cfg([{"name": "flaky", "command": [sys.executable, str(FIXTURES / "flaky_server.py")], "isolate": "job"}],
                   stateful=True, allow_writes=True)
    doc = export_environment(cfg)
    defs = {t["name"]: t for t in doc["tools"]}
    tools = [{k: defs[n][k] for k in ("name", "description", "inputSchema")} for n in ("crash", "echo")]
    ts = build_toolset(tools, [OfferedTool("crash"), OfferedTool("echo")], "flaky-test", scope="flaky-test")
    env = make_environment(cfg, doc)

    class Script:
        kind, cacheable, provider = "litellm", False, "test"
        cache_scope: dict[str, Any] = {}

        def __init__(self, name: str, args: dict[str, Any]) -> None:
            self.turns = [ChatResponse(content=None, tool_calls=[ToolCall("c1", name, json.dumps(args))],
                                       finish_reason="tool_calls"), ChatResponse(content="done", finish_reason="stop")]

        async def complete(self, request: Any) -> ChatResponse:
            return self.turns.pop(0)

    class Task:
        id, difficulty, prompt, correct_tools, plan = "t", "easy", "go", ("echo",), ()

    model = {"name": "m", "backend": "litellm", "model": "openai/x"}
    try:
        crashed = asyncio.run(run_one(RunSpec(model, Task(), "baseline", "standard", 0, ts, 4, environment=env.identity),
                                      Script("crash", {}), env=env))
        assert crashed.error and crashed.status == "error"
        failure = crashed.events[-1]
        assert failure.kind == "backend_error" and failure.error_type == "ToolServerError"
        assert not any(e.kind == "tool_result" for e in crashed.events), "a dead server is not the tool's answer"
        fine = asyncio.run(run_one(RunSpec(model, Task(), "baseline", "standard", 1, ts, 4, environment=env.identity),
                                   Script("echo", {"text": "hi"}), env=env))
        assert not fine.error and fine.final_answer == "done"
        assert next(e for e in fine.events if e.kind == "tool_result").content == "hi", "the text the server sent"
        assert fine.identity["environment"]["kind"] == "mcp" and fine.identity["environment"]["tools"]
    finally:
        assert env.close is not None
        env.close()
