"""No server left behind (issue 28, item 3), the whole matrix (slow: a process start per case).

A server that ignores stdin EOF and SIGTERM (tests/fixtures/bad_server.py --ignore-eof) stays
behind when its client dies, unless its client makes sure. Each case starts a client of it,
sends the client SIGTERM, SIGINT or SIGKILL, idle or with a call in flight, and waits for the
server to be gone: ``canarykit proxy``, a study's MCP environment (the executor of an agent
job) and ``canarykit serve-tools`` (whose tool worker is the process that must not survive).
Every case prints the seconds the server took to go (the issue asks for 5 s); the tests allow
60 s, as they run on loaded machines.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fakes.rawmcp import RawClient
from test_mcp_border import BAD, CLI, ENV, LIMIT_S, gone, trace_events

from canarykit.mcp.diagnose import diagnose, read_traces

pytestmark = pytest.mark.slow

SIGNALS = [signal.SIGTERM, signal.SIGINT, signal.SIGKILL]
_STUDY = """
import sys
from canarykit.study.config import validate_params
from canarykit.mcp.environments import export_environment, make_environment
cfg = validate_params({"environment": {"kind": "mcp", "stateful": False, "servers": [
    {"name": "bad", "command": sys.argv[1:]}]}}, "params.yaml")["environment"]
doc = export_environment(cfg, warn=lambda m: None)
env = make_environment(cfg, doc)
print("calling", flush=True)
env.execute("sleep", {"seconds": 600})
"""


def _wait_for(predicate: object, what: str) -> None:
    deadline = time.monotonic() + LIMIT_S
    while not predicate():  # type: ignore[operator]
        if time.monotonic() >= deadline:  # a bound on waiting for an event, not a speed check
            pytest.fail(f"never happened: {what}")
        time.sleep(0.05)


def _alive(pidfile: Path) -> int | None:
    try:
        pid = int(pidfile.read_text())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return pid


@pytest.mark.parametrize("in_flight", [False, True], ids=["idle", "in-flight"])
@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_the_proxys_upstream_dies_with_it(tmp_path: Path, sig: signal.Signals, in_flight: bool) -> None:
    traces, pidfile = tmp_path / "traces", tmp_path / "server.pid"
    client = RawClient([CLI, "proxy", "--trace-dir", str(traces), "--", *BAD, "--ignore-eof", "--pidfile", str(pidfile)],
                       ENV)
    try:
        client.initialize()
        client.request(1, method="tools/call", params={"name": "echo", "arguments": {"text": "hi"}})
        server = int(pidfile.read_text())
        if in_flight:
            client.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                    "params": {"name": "sleep", "arguments": {"seconds": 600}}}).encode())
            _wait_for(lambda: any(e.get("event") == "tools/call-begin" and e["name"] == "sleep"
                                  for e in trace_events(traces)), "the call never began")
        client.proc.send_signal(sig)
        took = gone(server)
        client.proc.wait(LIMIT_S)
        assert took is not None, f"the server outlived the proxy ({sig.name})"
        print(f"\nproxy {sig.name} {'in flight' if in_flight else 'idle'}: server gone after {took:.2f} s, proxy exit "
              f"{client.proc.returncode} (load {os.getloadavg()[0]:.1f})")
    finally:
        client.close()
    if in_flight:
        doc, calls = diagnose(read_traces(traces))
        assert calls.filter(calls["name"] == "sleep")["outcome"].to_list() == ["unfinished"], "the call is counted"


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_a_study_environments_server_dies_with_its_agent_job(tmp_path: Path, sig: signal.Signals) -> None:
    pidfile = tmp_path / "server.pid"
    proc = subprocess.Popen([sys.executable, "-c", _STUDY, *BAD, "--ignore-eof", "--only", "echo,sleep", "--pidfile",
                             str(pidfile)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "calling", proc.stderr
        _wait_for(lambda: _alive(pidfile) is not None, "the executor's server never started")
        server = _alive(pidfile)
        assert server is not None
        time.sleep(0.5)  # the call is in flight
        proc.send_signal(sig)
        took = gone(server)
        assert took is not None, f"the server outlived its agent job ({sig.name})"
        print(f"\nstudy environment {sig.name} in flight: server gone after {took:.2f} s (load {os.getloadavg()[0]:.1f})")
    finally:
        proc.kill()
        proc.wait(LIMIT_S)


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_serve_tools_leaves_no_worker_computing(sig: signal.Signals) -> None:
    client = RawClient([CLI, "serve-tools", "database"], ENV)
    try:
        client.initialize()
        # runs for minutes inside one SQLite call (docs/failures.md): only killing its worker stops it
        query = "SELECT instr(hex(zeroblob(30000000)), hex(zeroblob(3000000))||'1')"
        client.send(json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                                "params": {"name": "query_database", "arguments": {"sql": query}}}).encode())
        workers: list[int] = []

        def busy() -> bool:
            out = subprocess.run(["pgrep", "-P", str(client.proc.pid)], capture_output=True, text=True).stdout.split()
            workers[:] = [int(p) for p in out]
            return bool(workers)

        _wait_for(busy, "no tool worker started")
        time.sleep(0.5)
        client.proc.send_signal(sig)
        took = [gone(w) for w in workers]
        assert all(t is not None for t in took), f"a tool worker outlived serve-tools ({sig.name})"
        print(f"\nserve-tools {sig.name} in flight: {len(workers)} worker(s) gone after "
              f"{max(t for t in took if t is not None):.2f} s (load {os.getloadavg()[0]:.1f})")
    finally:
        client.proc.kill()
        client.close()


def test_the_sdks_own_shutdown_of_the_proxy_leaves_no_server(tmp_path: Path) -> None:
    """The official client closes the proxy's stdin, SIGTERM after 2 s, SIGKILL after 2 more."""
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    pidfile = tmp_path / "server.pid"
    params = StdioServerParameters(command=CLI, args=["proxy", "--trace-dir", str(tmp_path / "t"), "--", *BAD,
                                                      "--ignore-eof", "--pidfile", str(pidfile)], env=ENV)

    async def session() -> None:
        async with stdio_client(params) as streams, ClientSession(*streams) as s:
            await s.initialize()
            await s.call_tool("echo", {"text": "hi"})

    anyio.run(session)
    server = int(pidfile.read_text())
    took = gone(server)
    assert took is not None, "the server outlived the SDK's shutdown of the proxy"
    print(f"\nthe SDK's shutdown of the proxy: server gone {took:.2f} s after the client left (load {os.getloadavg()[0]:.1f})")
