"""Our tool servers over real MCP (stdio): same definitions, same results as execute()."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from canarykit.cli import _appended, main
from canarykit.errors import InputError
from canarykit.mcp.toolservers import ListToolsError, ToolServer, list_mcp_tools
from canarykit.tools import SERVERS, execute, get_tool

WEATHER = [sys.executable, "-m", "canarykit.mcp.toolservers", "weather"]
FIXTURES = Path(__file__).parent / "fixtures"
OFFICIAL = FIXTURES / "mcp_servers" / "official.json"
REPLAY = [sys.executable, str(FIXTURES / "replay_server.py"), str(OFFICIAL)]
CLI = shutil.which("canarykit", path=str(Path(sys.executable).parent)) or "canarykit"


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300, env=env)


def test_weather_server_lists_our_exact_definitions() -> None:
    """Over the wire, every tool's whole MCP definition: title and annotations included (a
    proxy or a client that shows titles sees ours, not a bare name)."""
    listed = list_mcp_tools(WEATHER)
    assert [{k: v for k, v in t.items() if k != "server"} for t in listed] == [
        get_tool(n).to_mcp() for n in SERVERS["weather"]
    ]
    assert all(t["title"] and t["annotations"]["readOnlyHint"] is True for t in listed)
    assert {t["server"] for t in listed} == {"canarykit-weather"}, "the name the server gives itself"
    assert {t["server"] for t in list_mcp_tools(WEATHER, server_name="wx")} == {"wx"}


def test_calls_through_mcp_match_execute() -> None:
    async def run() -> list[tuple[str, bool]]:
        params = StdioServerParameters(command=WEATHER[0], args=WEATHER[1:])
        out = []
        async with stdio_client(params) as streams, ClientSession(*streams) as session:
            await session.initialize()
            for name, args in (("get_weather", {"city": "Mumbai"}),
                               ("get_forecast", {"city": "Tokyo", "days": 3}),
                               ("get_weather", {"city": "Atlantis"}),
                               ("get_weather", {"city": 7})):
                r = await session.call_tool(name, args)
                text = r.content[0].text  # type: ignore[union-attr]
                out.append((text, bool(r.is_error)))
        return out

    got = anyio.run(run)
    expected = [execute("get_weather", {"city": "Mumbai"}), execute("get_forecast", {"city": "Tokyo", "days": 3}),
                execute("get_weather", {"city": "Atlantis"}), execute("get_weather", {"city": 7})]
    assert got == [(e.content, e.is_error) for e in expected]
    assert [e for _, e in got] == [False, False, True, True]
    assert json.loads(got[0][0])["city"] == "Mumbai"


@pytest.mark.parametrize("server", sorted(SERVERS))
def test_every_server_object_lists_declared_schemas(server: str) -> None:
    tools = anyio.run(ToolServer(server).list_tools)
    assert [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools] == [
        get_tool(n).to_mcp() for n in SERVERS[server]
    ]


def test_unknown_server_is_an_input_error() -> None:
    with pytest.raises(InputError):
        ToolServer("email")
    with pytest.raises(InputError):
        list_mcp_tools([])


# --- list-mcp-tools: the client ------------------------------------------------------------


def test_export_keeps_title_annotations_output_schema_and_the_server() -> None:
    """What a real server sends (here: the recorded time and filesystem servers) is kept."""
    recorded = [t for t in json.loads(OFFICIAL.read_text()) if t["server"] == "filesystem"]
    listed = list_mcp_tools([*REPLAY, "--server", "filesystem"], server_name="filesystem")
    assert listed == recorded
    assert all("title" in t and "outputSchema" in t and "annotations" in t for t in listed)


def test_cli_passes_the_callers_environment_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "tools.json"
    monkeypatch.setenv("CANARY_TEST_TOKEN", "tok-123")
    server = [*REPLAY, "--server", "time", "--require-env", "CANARY_TEST_TOKEN"]
    assert main(["list-mcp-tools", "-o", str(out), "--", *server]) == 2 and not out.exists()
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert "exited before answering" in err and "CANARY_TEST_TOKEN is not set" in err
    for flags in (["--env", "CANARY_TEST_TOKEN"], ["--inherit-env"]):
        assert main(["list-mcp-tools", "-o", str(out), *flags, "--", *server]) == 0, capsys.readouterr().err
        tools = json.loads(out.read_text())
        assert tools[0]["description"].endswith("[env: tok-123]") and tools[0]["server"] == "replay-fixture"
    assert main(["list-mcp-tools", "--env", "NOT_SET_ANYWHERE_123", "--", *server]) == 2
    assert "NOT_SET_ANYWHERE_123 is not set" in capsys.readouterr().err


def test_only_the_first_double_dash_separates(tmp_path: Path) -> None:
    """``--`` after the first belongs to the server command (argparse-style servers use it)."""
    script = tmp_path / "argv_server.py"
    script.write_text(
        "import sys, json\n"
        "assert sys.argv[1:] == ['--', '--server', 'time'], sys.argv\n"
        f"sys.argv = [sys.argv[0], {str(OFFICIAL)!r}, '--server', 'time']\n"
        f"exec(open({str(FIXTURES / 'replay_server.py')!r}).read())\n"
    )
    proc = cli("list-mcp-tools", "--server", "t", "--", sys.executable, str(script), "--", "--server", "time")
    assert proc.returncode == 0, proc.stderr
    assert [t["name"] for t in json.loads(proc.stdout)] == ["get_current_time", "convert_time"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--", "no-such-mcp-server-binary"], "command 'no-such-mcp-server-binary' not found"),
        (["--", sys.executable, "-c", "import sys; print('cannot start: bad config', file=sys.stderr); sys.exit(3)"],
         "exited before answering (its last stderr line: cannot start: bad config)"),
        (["--timeout", "2", "--", sys.executable, "-c", "import time; time.sleep(60)"], "no answer within 2 s"),
        (["--", sys.executable, "-c", "print('hello, not json-rpc', flush=True); import time; time.sleep(60)"],
         "not MCP"),
        ([], "give the server command after --"),
        (["--url", "http://127.0.0.1:9/mcp", "--", "cmd"], "either --url or a server command"),
    ],
)
def test_every_failure_is_one_line_and_exit_2(args: list[str], expected: str) -> None:
    proc = cli("list-mcp-tools", *args)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert expected in proc.stderr, proc.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_http_server_via_url() -> None:
    port = _free_port()
    proc = subprocess.Popen([*REPLAY, "--server", "time", "--http", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("the fixture HTTP server did not start")
                time.sleep(0.2)
        listed = list_mcp_tools(url=url, server_name="time", timeout_s=60)
        assert [t["name"] for t in listed] == ["get_current_time", "convert_time"]
        assert all(t["server"] == "time" and "outputSchema" in t for t in listed)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    with pytest.raises(ListToolsError, match=r"connection_refused \(127\.0\.0\.1:\d+\)"):
        list_mcp_tools(url=url, timeout_s=10)


def test_append_builds_one_multi_server_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "tools.json"
    for server in ("time", "fetch"):
        assert main(["list-mcp-tools", "--server", server, "-o", str(out), "--append", "--", *REPLAY, "--server", server]) == 0
    assert "3 tools (fetch, time)" in capsys.readouterr().err
    listed = json.loads(out.read_text())
    assert [(t["server"], t["name"]) for t in listed] == [
        ("time", "get_current_time"), ("time", "convert_time"), ("fetch", "fetch")
    ]
    again = [dict(listed[0], description="newer")]
    assert [t["description"] for t in _appended(str(out), again) if t["server"] == "time"] == ["newer"], (
        "listing a server again replaces its earlier export"
    )
    assert main(["list-mcp-tools", "--append", "--", *REPLAY, "--server", "time"]) == 2
    assert "--append" in capsys.readouterr().err
