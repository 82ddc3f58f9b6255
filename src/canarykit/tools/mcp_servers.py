"""The five tool servers as real MCP servers, and an MCP client that exports any server's tools.

Each server is an :class:`mcp.server.mcpserver.MCPServer` whose ``tools/list`` answers the
exact definitions of :data:`canarykit.tools.REAL_TOOLS` (same names, descriptions and input
schemas; nothing is re-derived from Python signatures) and whose ``tools/call`` runs
:func:`canarykit.tools.execute`, so an MCP client sees byte-identical results, bounded as
in-process: at most :data:`~canarykit.tools.MAX_RESULT_BYTES` of text with a visible
truncation marker (a cut result carries no structured content).

Run one server over stdio::

    python -m canarykit.tools.mcp_servers weather

Export the tool definitions of any MCP server (ours or a third party's), e.g. to generate
canaries for it::

    list_mcp_tools(["npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp"])
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp_types import CallToolResult, PaginatedRequestParams, TextContent
from mcp_types import Tool as MCPTool

from ..errors import InputError
from . import SERVERS, execute, get_tool
from ._common import cap_result, clip_message

__all__ = ["ToolServer", "build_server", "fetch_tool_definitions", "list_mcp_tools", "main", "serve_stdio"]


class ToolServer(MCPServer[Any]):
    """An MCP server exposing a fixed set of canarykit tools with their declared schemas."""

    def __init__(self, server: str) -> None:
        if server not in SERVERS:
            raise InputError("<command line>", "server", f"unknown server {server!r}; known: {', '.join(SERVERS)}")
        super().__init__(name=f"canarykit-{server}", instructions=f"canarykit {server} tools", version="1")
        self.tool_names: tuple[str, ...] = SERVERS[server]

    async def list_tools(self) -> list[MCPTool]:
        return [
            MCPTool(name=t.name, description=t.description, input_schema=t.input_schema)
            for t in (get_tool(n) for n in self.tool_names)
        ]

    def _tool_input_schema(self, name: str) -> dict[str, Any] | None:
        return get_tool(name).input_schema if name in self.tool_names else None

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult:
        if name not in self.tool_names:
            text = json.dumps(
                {"error": f"unknown tool {clip_message(repr(name), 200)}; this server offers: {', '.join(self.tool_names)}"},
                ensure_ascii=False, sort_keys=True,
            )
            return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
        result = execute(name, arguments)
        text, truncated = cap_result(result.content)  # execute caps already; a guard for the wire
        return CallToolResult(
            content=[TextContent(type="text", text=text)],
            structured_content=result.data if isinstance(result.data, dict) and not truncated else None,
            is_error=result.is_error,
        )


def build_server(server: str) -> ToolServer:
    return ToolServer(server)


def serve_stdio(server: str) -> None:
    """Run the named server (weather, math, file, search, database) over stdio until EOF."""
    build_server(server).run("stdio")


async def fetch_tool_definitions(command: Sequence[str], timeout_s: float = 60.0) -> list[dict[str, Any]]:
    """Start the MCP server ``command`` over stdio and return its tools as MCP definitions.

    Each definition is ``{"name", "description", "inputSchema"}``; pagination is followed.
    """
    if not command or not all(isinstance(c, str) and c for c in command):
        raise InputError("<command>", "command", "expected a non-empty list of non-empty strings")
    params = StdioServerParameters(command=command[0], args=list(command[1:]))
    out: list[dict[str, Any]] = []
    with anyio.fail_after(timeout_s):
        async with stdio_client(params) as streams, ClientSession(*streams) as session:
            await session.initialize()
            cursor: str | None = None
            while True:
                page = await session.list_tools(
                    params=PaginatedRequestParams(cursor=cursor) if cursor else None
                )
                for tool in page.tools:
                    out.append({
                        "name": tool.name,
                        "description": tool.description or "",
                        "inputSchema": dict(tool.input_schema),
                    })
                cursor = page.next_cursor
                if not cursor:
                    break
    return out


def list_mcp_tools(command: Sequence[str], timeout_s: float = 60.0) -> list[dict[str, Any]]:
    """Synchronous wrapper of :func:`fetch_tool_definitions`."""
    return anyio.run(lambda: fetch_tool_definitions(command, timeout_s))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m canarykit.tools.mcp_servers",
                                     description="Run one canarykit tool server over MCP stdio.")
    parser.add_argument("server", choices=sorted(SERVERS))
    ns = parser.parse_args(argv)
    serve_stdio(ns.server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
