"""``canarykit proxy`` driven by the official MCP client, then ``canarykit diagnose``.

The upstreams are separate MCP server processes: our weather server and a small third-party
style server (tests/fixtures/flaky_server.py: structured output with an outputSchema, a tool
that crashes its server, one with a huge result). The test with a server installed from
PyPI (mcp-server-time) is in test_environment_time.py (slow).
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from fakes.readme import command
from fakes.readme import sh as readme_sh
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolRequest, CallToolRequestParams, CallToolResult

from canarykit.tools import execute

FIXTURES = Path(__file__).parent / "fixtures"
BIN = Path(sys.executable).parent
CLI = shutil.which("canarykit", path=str(BIN)) or "canarykit"
WEATHER = f"{sys.executable} -m canarykit.mcp.toolservers weather"
FLAKY = f"{sys.executable} {FIXTURES / 'flaky_server.py'}"
ENV = {"PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
LIMIT_S = 120


def text(result: Any) -> str:
    return "\n".join(b.text for b in result.content if b.type == "text")


async def with_proxy(args: list[str], body: Callable[[ClientSession], Awaitable[Any]]) -> Any:
    params = StdioServerParameters(command=CLI, args=["proxy", *args], env=ENV)
    with anyio.fail_after(LIMIT_S):
        async with stdio_client(params) as streams, ClientSession(*streams) as session:
            await session.initialize()
            return await body(session)


def header(trace_dir: Path) -> dict[str, Any]:
    files = sorted(trace_dir.glob("*.jsonl"))
    assert len(files) == 1, files
    return json.loads(files[0].read_text().splitlines()[0])


def diagnose(trace_dir: Path, out: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([CLI, "diagnose", str(trace_dir), "-o", str(out)], capture_output=True, text=True, timeout=LIMIT_S)
    assert proc.returncode == 0, proc.stderr
    return proc


def calls_csv(out: Path) -> list[dict[str, str]]:
    with open(out / "calls.csv", newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.slow  # whole workflow invocations: tens of seconds on a loaded machine
def test_proxy_plants_canaries_forwards_real_calls_and_diagnose_classifies_every_call(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    expected: list[tuple[str, str, str | None]] = []  # (name, class, canary type) in call order
    seen: dict[str, Any] = {}

    async def body(s: ClientSession) -> None:
        listed = (await s.list_tools()).tools
        by_name = {t.name: t for t in listed}
        offered = {o["name"]: o for o in header(traces)["offered"]}
        canary = {(o["shadows"], o["canary_type"]): o["name"] for o in offered.values() if o["kind"] == "canary"}
        # Upstream names are kept (no repeats across these two servers) and metadata is mirrored.
        assert {"get_weather", "get_forecast", "lookup_user", "echo"} <= set(by_name)
        assert by_name["get_weather"].title == "Current weather"
        assert by_name["lookup_user"].output_schema is not None and by_name["lookup_user"].annotations is not None
        mirage = by_name[canary[("lookup_user", "capability_mirage")]]
        assert mirage.output_schema == by_name["lookup_user"].output_schema
        assert mirage.annotations is not None and mirage.annotations.read_only_hint is True
        assert mirage.title and mirage.title != "Look up user"

        async def call(name: str, args: dict[str, Any], cls: str, ctype: str | None = None) -> Any:
            result = await s.call_tool(name, args)
            expected.append((name, cls, ctype))
            return result

        r = await call("get_weather", {"city": "Paris"}, "real")
        assert text(r) == execute("get_weather", {"city": "Paris"}).content, "forwarded byte for byte"
        real_user = await call("lookup_user", {"user_id": "u1"}, "real")
        assert real_user.structured_content["logins"] == 1234

        r = await call(canary[("lookup_user", "semantic_decoy")], {"user_id": "u1"}, "canary", "semantic_decoy")
        assert not r.is_error and r.structured_content["cached"] is True  # conforms to the mirrored outputSchema
        assert r.structured_content["last_login"] < real_user.structured_content["last_login"], "a stale copy"
        r = await call(canary[("get_weather", "parameter_trap")], {"city": "Paris"}, "canary", "parameter_trap")
        assert r.is_error and "missing required parameter" in text(r)  # the credential its wording names
        r = await call(canary[("get_forecast", "prerequisite_blindness")], {"city": "Paris", "days": 2}, "canary",
                       "prerequisite_blindness")
        assert r.is_error and "401" in text(r)
        r = await call(canary[("get_forecast", "temporal_decoy")], {"city": "Paris", "days": 2}, "canary", "temporal_decoy")
        assert "2023-" in text(r) and "2026-" not in text(r)
        r = await call(canary[("lookup_user", "capability_mirage")], {"user_id": "u1"}, "canary", "capability_mirage")
        assert r.structured_content["logins"] == 1000, "rounded to one significant figure"
        case = canary[("get_weather", "granularity_trap")]
        r = await call(case, {"city": "Tokyo"}, "canary", "granularity_trap")
        assert json.loads(text(r))["city"] != "Tokyo", "a hard-coded case, whatever was asked"
        r = await call("lookup_user", {"user_id": "u2"}, "real")  # back to the real tool it first fell for
        r = await call("no_such_tool", {}, "unknown")
        assert r.is_error
        seen["offered"] = offered

    anyio.run(with_proxy, ["--trace-dir", str(traces), "--stdio", f"weather={WEATHER}", "--stdio", f"flaky={FLAKY}"], body)

    proc = diagnose(traces, tmp_path / "out")
    rows = calls_csv(tmp_path / "out")
    assert [(r["name"], r["cls"], r["canary_type"] or None) for r in rows] == expected
    doc = json.loads((tmp_path / "out/diagnosis.json").read_text())
    session = doc["sessions"][0]
    assert session["calls"] == {"real": 3, "canary": 6, "control": 0, "unknown": 1, "total": 10}
    assert session["csr"] == pytest.approx(0.6)
    assert session["trapped"] is True and session["recovered"] is True
    assert session["first_trap"] == {"name": expected[2][0], "canary_type": "semantic_decoy", "shadows": "lookup_user"}
    assert set(session["types_trapped"]) == {t for _, c, t in expected if c == "canary"}
    assert doc["overall"]["types"]["semantic_decoy"]["trap_rate"]["k"] == 1
    assert "1 session, 10 tool calls: 3 real, 6 canary, 0 control, 1 unknown" in proc.stdout
    # Every call is traced with its arguments, result and timing.
    events = [json.loads(line) for line in next(traces.glob("*.jsonl")).read_text().splitlines()[1:]]
    calls = [e for e in events if e["event"] == "tools/call"]
    assert [e["name"] for e in calls] == [n for n, _, _ in expected]
    assert calls[0]["arguments"] == {"city": "Paris"} and calls[0]["upstream"] == {"server": "weather", "name": "get_weather"}
    assert all(e["duration_ms"] >= e["upstream_ms"] >= 0 for e in calls)
    assert calls[0]["result"]["content"][0]["text"] == execute("get_weather", {"city": "Paris"}).content
    assert sum(e["event"] == "tools/list" for e in events) == 1
    # The README's commands over the same traces, as printed (from the directory holding traces/)
    assert traces.name == "traces"
    for start in ("canarykit diagnose traces -o diagnosis/", "canarykit diagnose traces -o diagnosis"):
        printed = readme_sh(traces.parent, command(start).text)
        assert "1 session, 10 tool calls: 3 real, 6 canary, 0 control, 1 unknown" in printed.stdout
    assert (traces.parent / "diagnosis/calls.csv").read_text() == (tmp_path / "out/calls.csv").read_text()


def test_controls_are_offered_in_the_canaries_places_and_work(tmp_path: Path) -> None:
    traces = tmp_path / "traces"

    async def body(s: ClientSession) -> list[tuple[str, str]]:
        names = {t.name for t in (await s.list_tools()).tools}
        offered = header(traces)["offered"]
        controls = {(o["shadows"], o["control_type"]): o["name"] for o in offered if o["kind"] == "control"}
        assert controls and not any(o["kind"] == "canary" for o in offered)
        assert ("get_weather", "granularity_trap") in controls, "a granularity twin serves any case: no task needed"
        assert set(controls.values()) <= names
        out = []
        r = await s.call_tool(controls[("get_weather", "semantic_decoy")], {"city": "Paris"})
        assert text(r) == execute("get_weather", {"city": "Paris"}).content, "a control is the real tool"
        out.append((controls[("get_weather", "semantic_decoy")], "semantic_decoy"))
        # The parameter trap's control takes the renamed parameters and needs no api_key.
        name = controls[("get_weather", "parameter_trap")]
        tool = next(t for t in (await s.list_tools()).tools if t.name == name)
        assert "api_key" not in tool.input_schema["properties"]
        param = next(iter(tool.input_schema["properties"]))
        r = await s.call_tool(name, {param: "Paris"})
        assert not r.is_error and json.loads(text(r))["city"] == "Paris"
        out.append((name, "parameter_trap"))
        return out

    called = anyio.run(with_proxy, ["--trace-dir", str(traces), "--controls", "--shadow", "get_weather",
                                    "--", *WEATHER.split()], body)
    assert header(traces)["proxy"]["controls"] is True
    proc = diagnose(traces, tmp_path / "out")
    rows = calls_csv(tmp_path / "out")
    # A twin's row fills control_type and control_id, never canary_type / canary_id (issue 28, item 7).
    assert [(r["name"], r["cls"], r["control_type"]) for r in rows] == [(n, "control", t) for n, t in called]
    assert all(r["canary_type"] == "" and r["canary_id"] == "" and r["control_id"].startswith("control:") for r in rows)
    doc = json.loads((tmp_path / "out/diagnosis.json").read_text())
    s = doc["sessions"][0]
    assert s["csr"] == 0.0 and s["trapped"] is False, "a control call is never a trap"
    assert doc["overall"]["types"]["semantic_decoy"]["control_rate"]["k"] == 1
    assert "2 control" in proc.stdout


@pytest.mark.slow  # a server killed and restarted behind the proxy: seconds of start-up each
def test_a_crashed_server_is_a_traced_failure_and_the_next_call_restarts_it(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    crash_log = tmp_path / "crashes.log"

    async def body(s: ClientSession) -> None:
        await s.list_tools()
        r = await s.call_tool("crash", {})
        assert r.is_error and "server failed" in text(r)
        r = await s.call_tool("echo", {"text": "still here"})
        assert not r.is_error and r.structured_content == {"result": "still here"}
        # A result over 64 KiB is cut with a visible marker (and loses its structured content:
        # read without the SDK's output-schema check, which would refuse that).
        raw = await s.send_request(CallToolRequest(params=CallToolRequestParams(name="big", arguments={"kib": 200})),
                                   CallToolResult)
        body_text = text(raw)
        assert len(body_text.encode()) <= 64 * 1024 and "[canarykit: result truncated" in body_text
        assert raw.structured_content is None

    env_args = ["--env", f"FLAKY_CRASH_LOG={crash_log}"]
    anyio.run(with_proxy, ["--trace-dir", str(traces), *env_args, "--", *FLAKY.split()], body)
    assert len(crash_log.read_text().splitlines()) == 1
    events = [json.loads(line) for line in next(traces.glob("*.jsonl")).read_text().splitlines()[1:]]
    calls = {e["name"]: e for e in events if e["event"] == "tools/call"}
    assert calls["crash"]["error"] and calls["crash"]["is_error"] is True
    assert calls["echo"]["error"] is None and calls["big"]["truncated"] is True
    doc_proc = diagnose(traces, tmp_path / "out")
    assert "1 failed in the server" in doc_proc.stdout


class _Proc:
    """A proxy over HTTP in a subprocess: waits for its 'listening on' line, kills it at exit."""

    def __init__(self, args: list[str]) -> None:
        self.proc = subprocess.Popen([CLI, "proxy", "--http", "0", *args], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, env={**os.environ, **ENV})
        self.lines: list[str] = []
        self.url: str | None = None
        ready = threading.Event()

        def read() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.lines.append(line)
                if "listening on " in line:
                    self.url = line.rsplit("listening on ", 1)[1].strip()
                    ready.set()
            ready.set()

        threading.Thread(target=read, daemon=True).start()
        ready.wait(LIMIT_S)
        assert self.url, "".join(self.lines)

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(20)


@pytest.mark.slow  # whole workflow or server start-ups: over ten seconds on a loaded machine
def test_http_proxy_writes_one_trace_per_client_session(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    proxy = _Proc(["--trace-dir", str(traces), "--types", "parameter_trap,semantic_decoy", "--", *WEATHER.split()])
    try:
        assert proxy.url is not None and proxy.url.startswith("http://127.0.0.1:")

        async def one_session(canary_first: bool) -> None:
            with anyio.fail_after(LIMIT_S):
                async with streamable_http_client(proxy.url) as streams, ClientSession(*streams) as s:  # type: ignore[arg-type]
                    await s.initialize()
                    names = [t.name for t in (await s.list_tools()).tools]
                    assert "get_weather_v2" in names and "fetch_conditions" in names
                    assert not any(n.startswith("advanced_") for n in names), "--types limits the canaries"
                    if canary_first:
                        await s.call_tool("get_weather_v2", {"city": "Paris"})
                    await s.call_tool("get_weather", {"city": "Paris"})

        async def stateless(label: str) -> None:
            # Protocol 2026-07-28 (the SDK's Client in auto mode) has no session id: the URL label
            # keeps each agent's trace apart.
            from mcp import Client

            with anyio.fail_after(LIMIT_S):
                async with Client(f"{proxy.url}/{label}") as c:
                    await c.list_tools()
                    await c.call_tool("fetch_conditions", {"city": "Paris"})

        anyio.run(one_session, True)
        anyio.run(one_session, False)
        anyio.run(stateless, "agent-a")
        anyio.run(stateless, "agent-b")
    finally:
        proxy.close()
    assert len(list(traces.glob("*.jsonl"))) == 4
    proc = diagnose(traces, tmp_path / "out")
    doc = json.loads((tmp_path / "out/diagnosis.json").read_text())
    assert doc["overall"]["sessions"] == 4
    assert sorted(s["trapped"] for s in doc["sessions"]) == [False, True, True, True]
    rate = doc["overall"]["types"]["parameter_trap"]["trap_rate"]
    assert (rate["k"], rate["n"], rate["rate"]) == (1, 4, 0.25)
    assert sorted(s["client"].get("label", "") for s in doc["sessions"]) == ["", "", "agent-a", "agent-b"]
    assert "4 sessions, 5 tool calls: 2 real, 3 canary" in proc.stdout
    assert all(s["transport"] == "http" for s in doc["sessions"])


def test_proxy_and_diagnose_refuse_bad_input_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from canarykit.cli import main

    def run(*args: str) -> tuple[int, str]:
        code = main(list(args))
        return code, capsys.readouterr().err

    code, err = run("proxy", "--trace-dir", str(tmp_path / "t"), "--", "mcp-server-does-not-exist")
    assert code == 2
    assert err.strip().splitlines() == [
        "canarykit: error: <command line>: server 'mcp-server-does-not-exist': cannot start it: command "
        "'mcp-server-does-not-exist' not found (is it installed and on PATH?)"
    ]
    code, err = run("proxy", "--trace-dir", str(tmp_path / "t"))
    assert code == 2 and "give the upstream server" in err
    code, err = run("proxy", "--trace-dir", str(tmp_path / "t"), "--types", "semantic", "--", *WEATHER.split())
    assert code == 2 and "--types: unknown canary type 'semantic'" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    code, err = run("diagnose", str(empty), "-o", str(tmp_path / "o"))
    assert code == 2 and "no proxy traces" in err
    (empty / "x.jsonl").write_text('{"event": "tools/call"}\n')
    code, err = run("diagnose", str(empty), "-o", str(tmp_path / "o"))
    assert code == 2 and "x.jsonl: line 1: not a canarykit proxy trace" in err and "Traceback" not in err


def test_diagnose_skips_an_unfinished_last_line(tmp_path: Path) -> None:
    """A proxy killed while writing leaves half a line: the rest of the session still counts."""
    from canarykit.mcp.diagnose import diagnose as run_diagnose
    from canarykit.mcp.diagnose import read_traces

    head = {"event": "session", "format": "canarykit-proxy-trace", "format_version": 1, "session": "s1",
            "transport": "stdio", "proxy": {"pool": "standard"},
            "offered": [{"position": 0, "name": "get_weather", "kind": "real"},
                        {"position": 1, "name": "fetch_conditions", "kind": "canary", "canary_id": "semantic_decoy:get_weather",
                         "canary_type": "semantic_decoy", "shadows": "get_weather"}]}
    call = {"event": "tools/call", "seq": 0, "name": "fetch_conditions", "arguments": {"city": "Paris"}, "status": "ok",
            "result": {"content": [{"type": "text", "text": "{}"}], "isError": False}, "is_error": False}
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(head) + "\n" + json.dumps(call) + "\n" + '{"event": "tools/call", "seq": 1, "na')
    warnings: list[str] = []
    sessions = read_traces(tmp_path, warn=warnings.append)
    doc, calls = run_diagnose(sessions)
    assert calls.height == 1 and doc["sessions"][0]["trapped"] is True and doc["sessions"][0]["recovered"] is False
    assert len(warnings) == 1 and "line 3" in warnings[0]


def test_upstreams_refuse_a_server_that_does_not_answer_in_time(tmp_path: Path) -> None:
    from canarykit.mcp.toolservers import ListToolsError
    from canarykit.mcp.upstream import ServerSpec, Upstreams

    async def start() -> None:
        async with Upstreams([ServerSpec("mute", command=(sys.executable, "-c", "import time; time.sleep(60)"))],
                             timeout_s=2):
            pass

    with pytest.raises(ListToolsError, match=r"server 'mute' \(|no answer within 2 s"):
        anyio.run(start)


def test_an_http_upstream_is_proxied_too(tmp_path: Path) -> None:
    """Proxy B fronts proxy A over streamable HTTP (A fronts our weather server over stdio)."""
    upstream = _Proc(["--trace-dir", str(tmp_path / "a"), "--types", "semantic_decoy", "--", *WEATHER.split()])
    try:
        async def body(s: ClientSession) -> None:
            names = {t.name for t in (await s.list_tools()).tools}
            assert {"get_weather", "fetch_conditions", "get_weather_v2"} <= names  # A's canary, B's own
            r = await s.call_tool("get_weather", {"city": "Paris"})
            assert text(r) == execute("get_weather", {"city": "Paris"}).content
            r = await s.call_tool("get_weather_v2", {"city": "Paris"})
            assert r.is_error and "missing required parameter" in text(r)  # its drawn wording's credential
            upstream.close()  # A goes away: a refused connection says so, with the host (issue 28, item 7)
            r = await s.call_tool("get_weather", {"city": "Paris"})
            host = upstream.url.split("//", 1)[1].split("/", 1)[0]
            assert r.is_error and f"connection_refused ({host})" in text(r), text(r)

        anyio.run(with_proxy, ["--trace-dir", str(tmp_path / "b"), "--upstream", f"wx={upstream.url}",
                               "--shadow", "get_weather", "--types", "parameter_trap"], body)
    finally:
        upstream.close()
    b = [json.loads(line) for line in next((tmp_path / "b").glob("*.jsonl")).read_text().splitlines()]
    assert b[0]["upstreams"][0]["transport"] == "http" and b[0]["upstreams"][0]["url"] == upstream.url
    assert [e["class"] for e in b if e["event"] == "tools/call"] == ["real", "canary", "real"]
    assert [e["error_kind"] for e in b if e["event"] == "tools/call"] == [None, None, "connection_refused"]
    # A saw B's forwarded call (and nothing of the canary's, which never reached it).
    a = [json.loads(line) for line in next((tmp_path / "a").glob("*.jsonl")).read_text().splitlines()]
    assert [e["name"] for e in a if e["event"] == "tools/call"] == ["get_weather"]
