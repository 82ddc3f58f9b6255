"""Our tool servers over real MCP (stdio): same definitions, same results as execute()."""

from __future__ import annotations

import json
import sys

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from canarykit.errors import InputError
from canarykit.tools import SERVERS, execute, get_tool
from canarykit.tools.mcp_servers import ToolServer, list_mcp_tools

WEATHER = [sys.executable, "-m", "canarykit.tools.mcp_servers", "weather"]


def test_weather_server_lists_our_exact_definitions() -> None:
    listed = list_mcp_tools(WEATHER)
    assert listed == [get_tool(n).to_mcp() for n in SERVERS["weather"]]


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
    assert [(t.name, t.description, t.input_schema) for t in tools] == [
        (n, get_tool(n).description, get_tool(n).input_schema) for n in SERVERS[server]
    ]


def test_unknown_server_is_an_input_error() -> None:
    with pytest.raises(InputError):
        ToolServer("email")
    with pytest.raises(InputError):
        list_mcp_tools([])
