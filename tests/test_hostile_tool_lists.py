"""One bad tool definition never aborts a list, and the proxy offers every real tool (issue 22,
items 9, 5 and the proxy's half of 2): a definition nested 80 deep, one without an
inputSchema and one that is not JSON are skipped with a warning naming them (``--strict``
refuses) in the ingestion, ``list-mcp-tools``, the generator and the proxy; the proxy still
offers every real tool a client can take, narrows only with ``--real-tools``, and tells each
session once, on stderr and as an MCP log notification, which tools may write and which are
not offered."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from canarykit.canaries import ingest_tools
from canarykit.errors import InputError

FIXTURES = Path(__file__).parent / "fixtures"
BIN = Path(sys.executable).parent
CLI = shutil.which("canarykit", path=str(BIN)) or "canarykit"
LIMIT_S = 120


def nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


def hostile_tools() -> list[dict[str, Any]]:
    return [
        {"name": "search_notes", "description": "Search the notes for a phrase.",
         "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
         "annotations": {"readOnlyHint": True}},
        {"name": "nested_lookup", "description": "Look up a nested record.", "inputSchema": nested(80),
         "annotations": {"readOnlyHint": True}},
        {"name": "no_schema", "description": "A tool without an input schema."},
        {"name": "nan_default", "description": "A tool whose schema holds NaN.", "annotations": {"readOnlyHint": True},
         "inputSchema": {"type": "object", "properties": {"x": {"type": "number", "default": float("nan")}}}},
        {"name": "delete_note", "description": "Delete a note by its id.",
         "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
         "annotations": {"readOnlyHint": False, "destructiveHint": True}},
    ]


@pytest.fixture
def raw_server(tmp_path: Path) -> list[str]:
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(hostile_tools()))  # NaN as Python writes it: what a careless server sends
    return [sys.executable, str(FIXTURES / "raw_tools_server.py"), str(path)]


def test_ingestion_skips_each_bad_definition_naming_it_and_strict_refuses() -> None:
    listed = ingest_tools(hostile_tools(), "tools.json")
    assert [t["name"] for t in listed.tools] == ["search_notes", "delete_note"]
    assert [s.line() for s in listed.skipped] == [
        "nested_lookup: all types: nested more than 32 levels deep (the limit for one tool definition) "
        "[tools[1] (nested_lookup)]",
        "no_schema: all types: missing (MCP requires an inputSchema object) [tools[2] (no_schema).inputSchema]",
        "nan_default: all types: cannot be written as JSON: Out of range float values are not JSON compliant "
        "[tools[3] (nan_default)]",
    ]
    with pytest.raises(InputError, match=r"^tools\.json: tools\[1\] \(nested_lookup\): nested more than 32 levels"):
        ingest_tools(hostile_tools(), "tools.json", strict=True)
    odd = [{"name": "obj", "description": "d", "inputSchema": {"type": "object", "default": object()}}]
    assert ingest_tools(odd, "x").skipped[0].reason.startswith("cannot be written as JSON: Object of type object")


def test_list_mcp_tools_skips_each_bad_definition_with_a_warning_and_strict_refuses(tmp_path: Path,
                                                                                   raw_server: list[str]) -> None:
    out = tmp_path / "tools.json"
    proc = subprocess.run([CLI, "list-mcp-tools", "-o", str(out), "--", *raw_server], capture_output=True, text=True,
                          timeout=LIMIT_S)
    assert proc.returncode == 0, proc.stderr
    assert [t["name"] for t in json.loads(out.read_text())] == ["search_notes", "delete_note"]
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning: ")]
    assert [w.split(": tool ")[1].split(" ")[0] for w in warnings] == ["nested_lookup", "no_schema", "nan_default"]
    assert "missing (MCP requires an inputSchema object) [tools[2] (no_schema).inputSchema]" in warnings[1]
    strict = subprocess.run([CLI, "list-mcp-tools", "--strict", "-o", str(tmp_path / "strict.json"), "--", *raw_server],
                            capture_output=True, text=True, timeout=LIMIT_S)
    assert strict.returncode == 2 and not (tmp_path / "strict.json").exists()
    assert strict.stderr.count("\n") == 1 and "tools[1] (nested_lookup): nested more than 32 levels" in strict.stderr


def test_the_generator_skips_each_bad_definition_with_a_warning_and_strict_refuses(tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([t for t in hostile_tools() if t["name"] != "nan_default"]))  # NaN is not JSON
    proc = subprocess.run([CLI, "generate-canaries", str(tools), "-o", str(tmp_path / "pool.json")], capture_output=True,
                          text=True, timeout=LIMIT_S)
    assert proc.returncode == 0, proc.stderr
    assert "warning: nested_lookup: all types: nested more than 32 levels deep" in proc.stdout + proc.stderr
    assert "warning: no_schema: all types: missing (MCP requires an inputSchema object)" in proc.stdout + proc.stderr
    shadowed = {c["shadows"] for c in json.loads((tmp_path / "pool.json").read_text())["canaries"]}
    assert shadowed == {"search_notes", "delete_note"}
    strict = subprocess.run([CLI, "generate-canaries", str(tools), "--strict", "-o", str(tmp_path / "strict.json")],
                            capture_output=True, text=True, timeout=LIMIT_S)
    assert strict.returncode == 2 and not (tmp_path / "strict.json").exists()
    assert "tools[1] (nested_lookup): nested more than 32 levels deep" in strict.stderr


async def _session(args: list[str], errlog: Path, body: Any) -> Any:
    logs: list[Any] = []

    async def on_log(params: Any) -> None:
        logs.append(params)

    params = StdioServerParameters(command=CLI, args=["proxy", *args])
    with anyio.fail_after(LIMIT_S), open(errlog, "w") as err:
        async with stdio_client(params, errlog=err) as (read, write), \
                ClientSession(read, write, logging_callback=on_log) as session:
            await session.initialize()
            out = await body(session)
    return out, logs


def test_the_proxy_offers_every_real_tool_and_tells_the_session_once_what_writes_and_what_is_hidden(
        tmp_path: Path, raw_server: list[str]) -> None:
    traces = tmp_path / "traces"

    async def body(s: ClientSession) -> dict[str, Any]:
        names = {t.name for t in (await s.list_tools()).tools}
        called = await s.call_tool("nested_lookup", {})
        await s.list_tools()
        return {"names": names, "called": json.loads(called.content[0].text)}  # type: ignore[union-attr]

    got, logs = anyio.run(_session, ["--trace-dir", str(traces), "--", *raw_server], tmp_path / "stderr.log", body)
    head = json.loads(next(traces.glob("*.jsonl")).read_text().splitlines()[0])
    real = {o["name"] for o in head["offered"] if o["kind"] == "real"}
    assert real == {"search_notes", "nested_lookup", "nan_default", "delete_note"}, "every tool a client can take"
    assert {o["shadows"] for o in head["offered"] if o["kind"] == "canary"} == {"search_notes", "delete_note"}
    assert real <= got["names"] and "no_schema" not in got["names"]
    assert got["called"] == {"called": "nested_lookup", "arguments": {}}, "forwarded as its server sent it"
    assert head["hidden"] == [{"server": "raw-tools", "name": "no_schema",
                               "reason": "not a valid MCP tool (inputSchema: Field required)"}]
    assert len(logs) == 1, "once per session"
    (log,) = logs
    assert log.level == "warning" and log.logger == "canarykit-proxy"
    assert log.data == ("canarykit proxy: notice: 1 of the 4 real tools offered may change your server's state (not "
                        "marked readOnlyHint, or marked destructiveHint): delete_note; their calls go to "
                        "the real server. 1 real tool not offered: no_schema (raw-tools): not a valid MCP tool "
                        "(inputSchema: Field required)")
    stderr = (tmp_path / "stderr.log").read_text()
    assert stderr.count(log.data) == 1
    assert "offering 4 real tools + " in stderr and "1 real tool not offered (named in each session's notice)" in stderr


def test_the_proxy_narrows_only_when_asked_and_names_every_tool_left_out(tmp_path: Path, raw_server: list[str]) -> None:
    async def body(s: ClientSession) -> tuple[set[str], Any]:
        names = {t.name for t in (await s.list_tools()).tools}
        return names, await s.call_tool("delete_note", {"id": "n1"})

    (names, refused), logs = anyio.run(_session, ["--trace-dir", str(tmp_path / "t"), "--real-tools", "search_notes",
                                                  "--", *raw_server], tmp_path / "stderr.log", body)
    assert "search_notes" in names and not names & {"delete_note", "nested_lookup", "nan_default", "no_schema"}
    assert refused.is_error and "unknown tool 'delete_note'" in refused.content[0].text  # type: ignore[union-attr]
    (log,) = logs
    assert log.data.startswith("canarykit proxy: notice: 4 real tools not offered: ")
    for left in ("nested_lookup (raw-tools): left out by --real-tools", "delete_note (raw-tools): left out by "
                 "--real-tools", "no_schema (raw-tools): not a valid MCP tool"):
        assert left in log.data
