"""Inspect AI, live (issue 30, items 1-2): `inspect view` (Inspect's own viewer, in headless
Chromium) shows a trapped run of an exported study with its canary call; and an agent run
by Inspect itself (a scripted model, its tools through `canarykit proxy`) gets the same words
from `canarykit diagnose` on its Inspect log as on the proxy's trace of the same session."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from fakes.readme import command, sh
from fakes.workflow import env
from test_inspect_export import workflow_layout
from test_report import Tab, chromium, make_study  # noqa: F401 - chromium is a fixture

from canarykit import cli
from canarykit.study.layout import slug

pytestmark = pytest.mark.slow  # headless Chromium, a viewer server, an MCP proxy
BIN = Path(sys.executable).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def inspect_view(cwd: Path) -> Iterator[str]:
    """`inspect view` as the page prints it, in ``cwd``, on a free local port; yields its URL."""
    port = _free_port()
    text = command("inspect view --log-dir results/inspect").text
    proc = subprocess.Popen(["bash", "-c", f"exec {text} --port {port}"], cwd=cwd, env=env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(url + "api/logs", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"inspect view did not start: {proc.stderr.read().decode()[-2000:]}") from None
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_inspect_view_shows_a_trapped_runs_canary_call(tmp_path: Path, chromium: Callable[..., Tab]) -> None:  # noqa: F811
    root = tmp_path / "study"
    study = workflow_layout(root, make_study(root, models=("planted:capability_mirage",), per_difficulty=2, seeds=(0,),
                                             conditions=("declared",), ablation=False))
    assert cli.main(["export", "inspect", "--study", str(study.out), "-o", str(study.out / "inspect"),
                     "--tasks", str(root / "tasks.json")]) == 0
    runs = pl.read_parquet(study.out / "runs.parquet").filter(pl.col("trapped")).sort("task_id")
    row = runs.row(0, named=True)
    from canarykit.store.records import read_record, record_path

    record = read_record(record_path(study.store, row["run_id"]))
    canary = next(e.name for e in record.events if e.kind == "tool_call"
                  and any(o.name == e.name and o.kind == "canary" for o in record.offered))
    log = f"{slug(row['model'])}_declared.eval"
    with inspect_view(root) as url:
        tab = chromium(f"{url}#/tasks/{log}/samples/sample/{row['task_id']}/1/")
        tab.wait(f"document.body.innerText.includes({json.dumps(canary)})", timeout=120)
        text = tab.js("document.body.innerText")
    assert f"Sample {row['task_id']} (Epoch 1)" in text
    assert "trapped" in text and "outcome" in text, "canarykit's scores, by name"
    assert canary in text.split("USER", 1)[1], "the canary call, in the conversation after the user's message"


# --------------------------------------------------------------------------- diagnose of an Inspect run


TASK = '''
import json
import sys
from pathlib import Path

from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.solver import solver
from inspect_ai.tool import mcp_connection, mcp_server_stdio

server = mcp_server_stdio(name="proxy", command=sys.argv[1], args=["proxy", "--trace-dir", "traces", "--stdio",
                          f"weather={sys.executable} -m canarykit.mcp.toolservers weather"])


@solver
def agent():  # one MCP session for the whole sample, as Inspect's react agent keeps
    async def solve(state, generate):
        async with mcp_connection([server]):
            state.tools = list(await server.tools())
            return await generate(state, tool_calls="loop")
    return solve


def script(messages, tools, tool_choice, config):
    """First the get_weather mirage the proxy offers (its name is the pool's wording: read from
    the trace's session line), then the real get_weather, then an answer."""
    done = sum(1 for m in messages if m.role == "tool")
    if done == 0:
        head = json.loads(max(Path("traces").glob("*.jsonl"), key=lambda p: p.stat().st_mtime).read_text().splitlines()[0])
        mirage = next(o["name"] for o in head["offered"] if o["kind"] == "canary"
                      and o["canary_type"] == "capability_mirage" and o["shadows"] == "get_weather")
        assert mirage in {t.name for t in tools}, "the model is offered what the trace says"
        out = ModelOutput.for_tool_call("mockllm/model", mirage, {"city": "Paris"})
    elif done == 1:
        out = ModelOutput.for_tool_call("mockllm/model", "get_weather", {"city": "Paris"})
    else:
        out = ModelOutput.from_content("mockllm/model", "It is overcast in Paris.")
    out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)  # mockllm would count tokens with tiktoken, which downloads its encoding
    return out


logs = eval(Task(dataset=[Sample(input="What's the weather in Paris?")], solver=[agent()]),
            model=get_model("mockllm/model", custom_outputs=script), log_dir="logs", display="none")
assert logs[0].status == "success", logs[0].error
'''


def _words(doc: dict[str, Any]) -> list[dict[str, Any]]:
    keys = ("calls", "csr", "zero_call", "trapped", "first_trap", "recovered", "types_offered", "types_trapped")
    return [{k: s[k] for k in keys} for s in doc["sessions"] if s["calls"]["total"]]


def test_diagnose_gives_the_same_words_from_an_inspect_log_as_from_the_proxy_trace(tmp_path: Path) -> None:
    (tmp_path / "task.py").write_text(TASK)
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "INSPECT_LOG_LEVEL": "warning"}
    proc = subprocess.run([sys.executable, "task.py", str(BIN / "canarykit")], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (log,) = sorted((tmp_path / "logs").glob("*.eval"))
    printed = {"log": sh(tmp_path, command("canarykit diagnose logs --tools traces -o diagnosis").text).stdout,
               "trace": sh(tmp_path, "canarykit diagnose traces -o trace").stdout}
    trace, inspected = (json.loads((tmp_path / n / "diagnosis.json").read_text()) for n in ("trace", "diagnosis"))
    assert _words(trace) == _words(inspected) and len(_words(inspected)) == 1
    (words,) = _words(inspected)
    assert words["trapped"] and words["recovered"] and words["csr"] == 0.5
    mirage = words["first_trap"]["name"]
    assert words["first_trap"] == {"name": mirage, "canary_type": "capability_mirage", "shadows": "get_weather"}
    line = f"trapped by {mirage} (capability_mirage, shadows get_weather), recovered"
    assert line in printed["trace"] and line in printed["log"]
    calls = pl.read_csv(tmp_path / "diagnosis" / "calls.csv")
    assert calls.select("name", "cls").rows() == [(mirage, "canary"), ("get_weather", "real")]
