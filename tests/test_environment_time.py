"""A third-party MCP server installed from PyPI (mcp-server-time, its own venv, cached; see
fakes/mcp_time.py) driven end to end: through ``canarykit proxy`` with the official MCP
client, then ``canarykit diagnose``; and as the tool environment of a whole study.

Slow: the first run installs the server from PyPI; the study runs Snakemake twice.
"""

from __future__ import annotations

import csv
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import polars as pl
import pytest
import yaml
from fakes.mcp_time import time_server
from fakes.readme import command, shown
from fakes.readme import sh as readme_sh
from fakes.readme import text as pages_text
from fakes.workflow import copy_workflow, run
from fakes.workflow import env as workflow_env
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
CLI = shutil.which("canarykit", path=str(BIN)) or "canarykit"
LIMIT_S = 180

#: Conversions from UTC into zones without daylight saving time: the same answer on any date.
TIME_TASKS = {
    "version": "1",
    "tasks": [
        {"id": "tokyo-noon", "difficulty": "easy",
         "prompt": "It is 12:00 UTC. What time is it in Tokyo (Asia/Tokyo)?",
         "correct_tools": ["convert_time"], "declared_types": ["semantic_decoy", "capability_mirage", "parameter_trap"],
         "plan": [{"tool": "convert_time", "args": {"source_timezone": "Etc/UTC", "time": "12:00",
                                                    "target_timezone": "Asia/Tokyo"}}],
         "rubric": [{"kind": "text", "label": "time in Tokyo", "value": "21:00"}]},
        {"id": "kolkata-now", "difficulty": "medium",
         "prompt": "Convert 09:30 UTC to Indian time (Asia/Kolkata), and tell me the current time there.",
         "correct_tools": ["convert_time", "get_current_time"],
         "declared_types": ["semantic_decoy", "temporal_decoy", "prerequisite_blindness"],
         "plan": [{"tool": "convert_time", "args": {"source_timezone": "Etc/UTC", "time": "09:30",
                                                    "target_timezone": "Asia/Kolkata"}},
                  {"tool": "get_current_time", "args": {"timezone": "Asia/Kolkata"}}],
         "rubric": [{"kind": "text", "label": "09:30 UTC in Kolkata", "value": "15:00"},
                    {"kind": "text", "label": "zone", "value": "Asia/Kolkata"}]},
        {"id": "two-offices", "difficulty": "hard",
         "prompt": "Our call is at 06:00 UTC. What time is that in Tokyo (Asia/Tokyo) and in Brisbane "
                   "(Australia/Brisbane)? Also give the current UTC time.",
         "correct_tools": ["convert_time", "get_current_time"],
         "declared_types": ["semantic_decoy", "granularity_trap"],
         "plan": [{"tool": "convert_time", "args": {"source_timezone": "Etc/UTC", "time": "06:00",
                                                    "target_timezone": "Asia/Tokyo"}},
                  {"tool": "convert_time", "args": {"source_timezone": "Etc/UTC", "time": "06:00",
                                                    "target_timezone": "Australia/Brisbane"}},
                  {"tool": "get_current_time", "args": {"timezone": "Etc/UTC"}}],
         "rubric": [{"kind": "text", "label": "Tokyo", "value": "15:00"},
                    {"kind": "text", "label": "Brisbane", "value": "16:00"}]},
    ],
}


@pytest.fixture(scope="module")
def time_exe() -> Path:
    return time_server()


def text(result: Any) -> str:
    return "\n".join(b.text for b in result.content if b.type == "text")


def test_proxy_in_front_of_mcp_server_time_and_diagnose(tmp_path: Path, time_exe: Path) -> None:
    traces = tmp_path / "traces"
    expected: list[tuple[str, str, str | None]] = []

    async def body() -> None:
        params = StdioServerParameters(command=CLI, args=["proxy", "--trace-dir", str(traces), "--",
                                                          str(time_exe), "--local-timezone", "Etc/UTC"])
        with anyio.fail_after(LIMIT_S):
            async with stdio_client(params) as streams, ClientSession(*streams) as s:
                init = await s.initialize()
                assert init.server_info.name == "mcp-time", "the proxy presents itself as its one upstream"
                tools = {t.name: t for t in (await s.list_tools()).tools}
                head = json.loads(next(traces.glob("*.jsonl")).read_text().splitlines()[0])
                canary = {(o["shadows"], o["canary_type"]): o["name"] for o in head["offered"] if o["kind"] == "canary"}
                assert {"get_current_time", "convert_time"} <= set(tools)
                assert tools[canary[("get_current_time", "semantic_decoy")]].output_schema == tools["get_current_time"].output_schema
                assert tools[canary[("get_current_time", "semantic_decoy")]].annotations == tools["get_current_time"].annotations

                async def call(name: str, args: dict[str, Any], cls: str, ctype: str | None = None) -> Any:
                    r = await s.call_tool(name, args)  # the SDK checks structured results against outputSchema
                    expected.append((name, cls, ctype))
                    return r

                tokyo = {"source_timezone": "Etc/UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
                real = await call("convert_time", tokyo, "real")
                assert real.structured_content["target"]["datetime"].endswith("T21:00:00+09:00")
                now = await call("get_current_time", {"timezone": "Asia/Tokyo"}, "real")
                stale = await call(canary[("get_current_time", "semantic_decoy")], {"timezone": "Asia/Tokyo"},
                                   "canary", "semantic_decoy")
                assert stale.structured_content["datetime"] < now.structured_content["datetime"], "a stale copy"
                assert text(stale).startswith("{\n  "), "written like the server's own (indented) JSON"
                old = await call(canary[("get_current_time", "temporal_decoy")], {"timezone": "Asia/Tokyo"},
                                 "canary", "temporal_decoy")
                assert old.structured_content["datetime"].startswith("2023-")
                trap = await call(canary[("convert_time", "parameter_trap")], {}, "canary", "parameter_trap")
                assert trap.is_error and "missing required parameter" in text(trap)  # the credential its wording names
                denied = await call(canary[("get_current_time", "prerequisite_blindness")], {"timezone": "Asia/Tokyo"},
                                    "canary", "prerequisite_blindness")
                assert denied.is_error and "401" in text(denied)
                case = next(name for (tool, t), name in canary.items() if t == "granularity_trap")
                await call(case, {}, "canary", "granularity_trap")
                await call("convert_time", tokyo, "real")

    anyio.run(body)
    proc = subprocess.run([CLI, "diagnose", str(traces), "-o", str(tmp_path / "out")], capture_output=True, text=True,
                          timeout=LIMIT_S)
    assert proc.returncode == 0, proc.stderr
    with open(tmp_path / "out/calls.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["name"], r["cls"], r["canary_type"] or None) for r in rows] == expected
    doc = json.loads((tmp_path / "out/diagnosis.json").read_text())
    s = doc["sessions"][0]
    assert s["trapped"] is True and s["first_trap"]["canary_type"] == "semantic_decoy"
    assert s["recovered"] is False, "the real get_current_time was not called after the first canary"
    assert s["calls"] == {"real": 3, "canary": 5, "control": 0, "unknown": 0, "total": 8}
    assert "1 session, 8 tool calls: 3 real, 5 canary" in proc.stdout


def test_study_in_a_user_environment_of_mcp_server_time(tmp_path: Path, time_exe: Path) -> None:
    repo = copy_workflow(tmp_path / "repo", models=("oracle", "planted:semantic_decoy"))
    (repo / "data/time_tasks.json").write_text(json.dumps(TIME_TASKS, indent=1))
    cfg = yaml.safe_load((repo / "params.yaml").read_text())
    cfg["study"]["tasks"] = "data/time_tasks.json"
    cfg["environment"] = {"kind": "mcp", "stateful": False,
                          "servers": [{"name": "time", "command": [str(time_exe), "--local-timezone", "Etc/UTC"]}]}
    cfg["canaries"]["special_cases"] = {}
    for m in cfg["models"]:
        if m["name"] == "planted:semantic_decoy":
            m.update(take_prob=1.0, backoff_prob=0.0)
    (repo / "params.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))

    run(repo, "snakemake", "--cores", "2", "--scheduler", "greedy")
    doc = json.loads((repo / "results/tools.json").read_text())
    assert doc["format"] == "canarykit-tools" and doc["servers"][0]["name"] == "time"
    assert doc["servers"][0]["server_info"]["name"] == "mcp-time"
    assert [t["name"] for t in doc["tools"]] == ["get_current_time", "convert_time"]
    assert all(t["server"] == "time" and "outputSchema" in t for t in doc["tools"])

    runs = pl.read_parquet(repo / "results/runs.parquet")
    oracle = runs.filter(pl.col("model") == "oracle")
    # one run per assembled list: the study's conditions and the ablation cell, a control list per type offered
    lists = pl.concat([pl.read_parquet(p) for p in sorted((repo / "results/assembly").glob("*/seed-*.parquet"))],
                      how="diagonal_relaxed").select("pool", "condition", "seed", "task_id", "arm").unique().height
    assert oracle.height == lists and oracle["success"].all(), "the oracle solves every task through the real server"
    assert (oracle["csr"] == 0).all()
    # get_current_time has stale copies; convert_time, a pure function, has none (the fit rules)
    pool = json.loads((repo / "results/canaries/standard.json").read_text())
    decoyed = {c["shadows"] for c in pool["canaries"] if c["type"] == "semantic_decoy"}
    assert decoyed == {"get_current_time"}
    needs = [t["id"] for t in TIME_TASKS["tasks"] if decoyed & {s["tool"] for s in t["plan"]}]
    planted = runs.filter((pl.col("model") == "planted:semantic_decoy") & pl.col("present_semantic_decoy"))
    # where the decoy is the only look-alike it accepts (no twin in the list), it always takes it
    lured = planted.filter(pl.col("task_id").is_in(needs) & (pl.col("condition") != "control"))
    assert lured.height > 0 and lured["trapped_semantic_decoy"].all(), "take_prob 1: trapped wherever its tool is needed"
    # in its own control arm the twin stands in, and it takes the twin just the same (blind to staleness)
    arm = runs.filter((pl.col("model") == "planted:semantic_decoy") & pl.col("task_id").is_in(needs)
                      & (pl.col("arm") == "semantic_decoy"))
    assert arm.height > 0 and arm["control_called_semantic_decoy"].all() and not arm["trapped_semantic_decoy"].any()
    assert planted.filter(pl.col("task_id") == "tokyo-noon")["success"].all(), "the conversion it needs has no stale copy"

    # The record holds what the real server answered.
    index = pl.read_parquet(repo / "results/runs/index.parquet")
    rid = index.filter((pl.col("model") == "oracle") & (pl.col("task_id") == "tokyo-noon"))["run_id"][0]
    record = json.loads((repo / "results/runs/store" / rid[:2] / f"{rid}.json").read_text())
    result = next(e for e in record["events"] if e["kind"] == "tool_result")
    assert "T21:00:00+09:00" in result["content"] and '"timezone": "Asia/Tokyo"' in result["content"]
    assert record["identity"]["environment"]["kind"] == "mcp"

    # Reruns are exact: nothing to do, and a forced run stage reuses every run.
    dry = run(repo, "snakemake", "--cores", "2", "-n")
    assert any(s in dry.stdout + dry.stderr for s in ("nothing to do: every output is up to date", "Nothing to be done"))
    run(repo, "snakemake", "--cores", "2", "--forcerun", "run_agents", "--", "results/runs/index.parquet")
    summary = json.loads((repo / "results/logs/run-summary.json").read_text())
    assert summary["executed"] == 0 and summary["reused"] == summary["total"]
    # environment.revision re-executes them against an environment that changed unseen.
    cfg["environment"]["revision"] = "2026-12-02"
    (repo / "params.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    run(repo, "snakemake", "--cores", "2", "--", "results/runs/index.parquet")
    summary = json.loads((repo / "results/logs/run-summary.json").read_text())
    assert summary["executed"] > 0 and summary["failed"] == 0


def test_tasks_naming_tools_the_environment_lacks_are_refused(tmp_path: Path, time_exe: Path) -> None:
    repo = copy_workflow(tmp_path / "repo", models=("oracle",))
    bad = json.loads(json.dumps(TIME_TASKS))
    bad["tasks"][1]["plan"][1]["tool"] = "get_time"
    bad["tasks"][1]["correct_tools"] = ["convert_time", "get_time"]
    (repo / "data/time_tasks.json").write_text(json.dumps(bad))
    cfg = yaml.safe_load((repo / "params.yaml").read_text())
    cfg["study"]["tasks"] = "data/time_tasks.json"
    cfg["environment"] = {"kind": "mcp", "stateful": False, "servers": [{"name": "time", "command": [str(time_exe)]}]}
    cfg["canaries"]["special_cases"] = {}
    (repo / "params.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    proc = run(repo, "snakemake", "--cores", "1", "assemblies", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "data/time_tasks.json: tasks[1].correct_tools[1]: unknown tool 'get_time'; known: get_current_time, convert_time" in out
    assert "Traceback" not in out
    assert (repo / "results/tools.json").exists(), "what was computed is kept"


def _python_block(after: str) -> str:
    """The docs' (README or docs/) ```python block that follows the line containing ``after``."""
    text = pages_text()
    start = text.index("```python\n", text.index(after)) + len("```python\n")
    return text[start:text.index("```", start)]


def _banner(cwd: Path, text: str, e: dict[str, str], lines: int) -> list[str]:
    """Start a long-running README command, read its first ``lines`` stderr lines (within
    LIMIT_S), stop it."""
    proc = subprocess.Popen(["bash", "-c", f"exec {text}"], cwd=cwd, env=e, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    got: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [got.put(line.rstrip("\n")) for line in proc.stderr], daemon=True).start()  # type: ignore[union-attr]
    try:
        return [got.get(timeout=LIMIT_S) for _ in range(lines)]
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)


def test_the_readme_walkthrough_with_mcp_server_time_as_printed(tmp_path: Path) -> None:
    """"Diagnose your own server or agent", line by line as printed: the server installed into
    ~/.venvs/mcp-time (HOME is a temporary directory), the proxy on stdio and on HTTP, the
    scripted SDK session, the diagnosis; and the export of an npm server (npm registry)."""
    home = tmp_path / "home"
    home.mkdir()
    e = {**workflow_env(), "HOME": str(home)}
    for start in ("python3.11 -m venv ~/.venvs/mcp-time", "~/.venvs/mcp-time/bin/pip install --quiet mcp-server-time==2026.10.19"):
        readme_sh(tmp_path, command(start).text, env=e, timeout=900)
    stdio = command("canarykit proxy --trace-dir traces -- ~/.venvs/mcp-time/bin/mcp-server-time")
    assert _banner(tmp_path, stdio.text, e, 1) == list(shown(stdio.text))
    http = command("canarykit proxy --http 8931 --trace-dir traces")
    assert _banner(tmp_path, http.text, e, 2) == list(shown(http.text))
    shutil.rmtree(tmp_path / "traces", ignore_errors=True)  # the two starts above made no session

    (tmp_path / "agent_session.py").write_text(_python_block("a scripted session with the official SDK"))
    session = readme_sh(tmp_path, command("python agent_session.py").text, env=e, timeout=LIMIT_S)
    printed = session.stdout.splitlines()
    want = shown("python agent_session.py")
    assert printed[0] == want[0], "the ten tools the proxy offers, in its order"
    assert printed[1].startswith("fetch_current_time -> {'timezone': 'Asia/Tokyo', 'datetime': ")
    assert "'cached': True" in printed[1] and "'cached'" not in printed[2]
    assert session.stderr.strip().splitlines()[-1] == want[-1]

    diagnosis = readme_sh(tmp_path, command("canarykit diagnose traces -o diagnosis").text, env=e).stdout.splitlines()
    want = shown("canarykit diagnose traces -o diagnosis")
    assert diagnosis[0] == want[0] and diagnosis[2:] == list(want[2:]), diagnosis
    assert diagnosis[1].split("):")[1] == want[1].split("):")[1], "the session line, its id aside"


def test_the_readme_exports_an_npm_server_as_printed(tmp_path: Path) -> None:
    if shutil.which("npx") is None:
        pytest.skip("npx (Node.js) is not installed")
    ping = subprocess.run(["npm", "ping"], capture_output=True, text=True, timeout=60)
    if ping.returncode != 0:
        pytest.skip(f"the npm registry does not answer: {ping.stderr.strip()[-200:]}")
    readme_sh(tmp_path, command("canarykit list-mcp-tools --server weather -o tools.json").text)
    readme_sh(tmp_path, command("canarykit list-mcp-tools --server files -o tools.json --append").text, timeout=600)
    tools = json.loads((tmp_path / "tools.json").read_text())
    servers = [t["server"] for t in tools]
    assert servers[:3] == ["weather"] * 3 and servers.count("files") > 5, "the second server appended to the first"
    assert {"get_weather", "read_text_file", "list_directory"} <= {t["name"] for t in tools}
