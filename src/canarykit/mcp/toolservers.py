"""The five tool servers as real MCP servers, and an MCP client that exports any server's tools.

Each server is an :class:`mcp.server.mcpserver.MCPServer` whose ``tools/list`` answers the
exact definitions of :data:`canarykit.tools.REAL_TOOLS` (same names, titles, descriptions,
input schemas, output schemas and annotations; nothing is re-derived from Python signatures) and whose ``tools/call`` runs
:func:`canarykit.tools.execute`, so an MCP client sees byte-identical results, bounded as
in-process: at most :data:`~canarykit.tools.MAX_RESULT_BYTES` of text with a visible
truncation marker (a cut result carries no structured content).

Run one server over stdio::

    python -m canarykit.mcp.toolservers weather

Export the tool definitions of any MCP server (ours or a third party's, over stdio or
streamable HTTP), e.g. to generate canaries for it::

    list_mcp_tools(["npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp"])
    list_mcp_tools(url="http://127.0.0.1:8000/mcp", server_name="docs")
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import logging
import os
import re
import shlex
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO, cast

import anyio
import anyio.to_thread
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp_types import CallToolResult, PaginatedRequestParams, TextContent
from mcp_types import Tool as MCPTool

from ..errors import CanaryKitError, InputError
from ..tools import SERVERS, cap_result, clip_message, execute, get_tool, shutdown_workers

__all__ = [
    "TOOL_KEYS", "ListToolsError", "ListingTap", "ToolServer", "build_server", "fetch_tool_definitions", "list_mcp_tools",
    "list_raw_tools", "main", "serve_stdio", "server_environment", "tool_entry",
]


class ToolServer(MCPServer[Any]):
    """An MCP server exposing a fixed set of canarykit tools with their declared schemas."""

    def __init__(self, server: str) -> None:
        if server not in SERVERS:
            raise InputError("<command line>", "server", f"unknown server {server!r}; known: {', '.join(SERVERS)}")
        super().__init__(name=f"canarykit-{server}", instructions=f"canarykit {server} tools", version="1")
        self.tool_names: tuple[str, ...] = SERVERS[server]

    async def list_tools(self) -> list[MCPTool]:
        """Each tool's full MCP definition: name, title, description, input schema, output
        schema and annotations, exactly as :meth:`~canarykit.types.ToolDef.to_mcp` gives it."""
        return [MCPTool.model_validate(get_tool(n).to_mcp()) for n in self.tool_names]

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
        # In a thread, so that this server keeps reading its client while the call runs (a
        # client that leaves ends the server at once: serve_stdio). The call's own hard limit
        # stops it in any case (canarykit.tools.CALL_TIME_LIMIT_S).
        result = await anyio.to_thread.run_sync(execute, name, arguments, abandon_on_cancel=True)
        text, truncated = cap_result(result.content)  # execute caps already; a guard for the wire
        return CallToolResult(
            content=[TextContent(type="text", text=text)],
            structured_content=result.data if isinstance(result.data, dict) and not truncated else None,
            is_error=result.is_error,
        )


    async def run_stdio_async(self) -> None:
        """Serve over stdio through canarykit's guarded transport: a request the SDK could not
        read (nested too deep, a lone surrogate, not UTF-8, not JSON) is answered at once with a
        JSON-RPC error naming the limit (:mod:`canarykit.mcp.wire`)."""
        from .wire import guarded_stdio_server

        server = self._lowlevel_server
        async with guarded_stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())


def build_server(server: str) -> ToolServer:
    return ToolServer(server)


def serve_stdio(server: str) -> None:
    """Run the named server (weather, math, file, search, database) over stdio until its
    client goes away (stdin closed); then stop every call still running (its worker process
    is killed) and return."""
    try:
        build_server(server).run("stdio")
    finally:
        shutdown_workers()


#: Seconds a server that wrote something that is not MCP has to start answering in MCP.
NOT_MCP_GRACE_S = 5.0


class ListToolsError(CanaryKitError):
    """Listing a server's tools failed: the message is one line naming the server and why."""


def _root_causes(exc: BaseException) -> list[BaseException]:
    """The leaf exceptions of an exception group (anyio task groups wrap every failure)."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _root_causes(sub)]
    return [exc]


def _last_line(path: str) -> str:
    try:
        lines = [ln.strip() for ln in Path(path).read_text(encoding="utf-8", errors="replace").splitlines()]
    except OSError:
        return ""
    lines = [ln for ln in lines if ln]
    return lines[-1][:300] if lines else ""


def server_environment(
    env_keys: Sequence[str] = (), *, inherit: bool = False, source: str = "--env"
) -> dict[str, str]:
    """The environment given to a stdio server on top of the SDK's safe defaults (HOME,
    PATH, ...): every variable of the caller with ``inherit``, and each ``KEY`` (the
    caller's value) or ``KEY=VALUE`` of ``env_keys``. A ``KEY`` the caller has not set is
    an error (a server that needs a token would otherwise fail obscurely)."""
    env: dict[str, str] = dict(os.environ) if inherit else {}
    for item in env_keys:
        key, sep, value = item.partition("=")
        if not key or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise InputError("<command line>", source, f"expected KEY or KEY=VALUE, got {item!r}")
        if sep:
            env[key] = value
        elif key in os.environ:
            env[key] = os.environ[key]
        else:
            raise InputError("<command line>", source, f"environment variable {key} is not set in this shell")
    return env


#: The keys of a tool definition a tool list keeps, in this order (others are ignored).
TOOL_KEYS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")


def tool_entry(definition: Mapping[str, Any], server: str | None) -> dict[str, Any]:
    """A tool-list entry: the definition's MCP keys as the server sent them, and the server."""
    entry: dict[str, Any] = {k: definition[k] for k in TOOL_KEYS if k in definition and definition[k] is not None}
    if server:
        entry["server"] = server
    return entry


class ListingTap:
    """The read stream of an MCP client connection, keeping every ``tools/list`` result as the
    server sent it (a :class:`mcp.shared._stream_protocols.ReadStream`, duck-typed).

    The SDK validates a whole ``tools/list`` page at once: one definition it cannot parse (no
    ``inputSchema``, a bad annotation) fails the page, and on protocol 2026-07-28 it drops
    tools silently. Listing through the tap gives every definition as sent, so that our
    ingestion judges each one alone (:func:`canarykit.canaries.ingest_tools`).
    """

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.pages: list[dict[str, Any]] = []

    def _keep(self, item: Any) -> Any:
        message = getattr(item, "message", None)
        result = getattr(message, "result", None)
        if isinstance(result, dict) and isinstance(result.get("tools"), list):
            self.pages.append(result)
        return item

    @property
    def last_context(self) -> Any:
        return getattr(self.stream, "last_context", None)

    async def receive(self) -> Any:
        return self._keep(await self.stream.receive())

    async def aclose(self) -> None:
        await self.stream.aclose()

    def __aiter__(self) -> ListingTap:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def __aenter__(self) -> ListingTap:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


async def list_raw_tools(session: ClientSession, tap: ListingTap) -> list[dict[str, Any]]:
    """Every tool definition of an initialized session, as the server sent it (pagination
    followed; a page the SDK refuses is read from the tap; an entry that is not an object is
    kept as it is, for ingestion to name)."""
    import pydantic
    from mcp_types import ListToolsRequest, ListToolsResult

    out: list[Any] = []
    cursor: str | None = None
    while True:
        seen = len(tap.pages)
        request = ListToolsRequest(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
        with contextlib.suppress(pydantic.ValidationError):  # one bad definition: the page as sent is in the tap
            await session.send_request(request, ListToolsResult)
        if len(tap.pages) <= seen:
            raise RuntimeError("the server answered tools/list without a list of tools")
        page = tap.pages[-1]
        out.extend(page["tools"])
        cursor = page.get("nextCursor") if isinstance(page.get("nextCursor"), str) else None
        if not cursor:
            return out


async def _list_session(session: ClientSession, tap: ListingTap, server_name: str | None) -> list[Any]:
    init = await session.initialize()
    server = server_name or (init.server_info.name if init.server_info else None)
    return [tool_entry(t, server) if isinstance(t, dict) else t for t in await list_raw_tools(session, tap)]


def usable_tools(raw: Sequence[Any], source: str, *, strict: bool = False, warn: Any = None) -> list[dict[str, Any]]:
    """The definitions of ``raw`` that canarykit can use, each in :data:`TOOL_KEYS` order with
    its server; every other one is skipped with a warning naming it (``warn``, default
    stderr), or, with ``strict``, refused (:class:`~canarykit.errors.InputError`)."""
    from ..canaries import ingest_tools

    say = warn if warn is not None else (lambda m: print(m, file=sys.stderr))
    listed = ingest_tools(list(raw), source, strict=strict)
    for skip in listed.skipped:
        what = "skipped" if skip.type == "*" else "kept"
        say(f"warning: {source}: tool {skip.tool} {what}: {skip.reason}" + (f" [{skip.field}]" if skip.field else ""))
    order = (*TOOL_KEYS, "server", "mcp_name")
    return [{k: t[k] for k in order if k in t} for t in listed.tools]


async def fetch_tool_definitions(
    command: Sequence[str] | None = None,
    timeout_s: float = 60.0,
    *,
    url: str | None = None,
    env: Mapping[str, str] | None = None,
    server_name: str | None = None,
    strict: bool = False,
    warn: Any = None,
) -> list[dict[str, Any]]:
    """Connect to an MCP server and return its tools as a tool list.

    Over stdio, ``command`` is started with the SDK's safe environment plus ``env``; with
    ``url``, a streamable-HTTP server is reached. Each entry is the MCP definition
    (``name``, ``title``, ``description``, ``inputSchema``, ``outputSchema``,
    ``annotations``, as the server sends them) and ``server``: ``server_name``, else the
    name the server gives in its ``initialize`` answer. Pagination is followed. Every
    failure (a command that does not exist, a server that exits, no answer within
    ``timeout_s``, an unreachable URL) is a :class:`ListToolsError` with one line. One
    definition canarykit cannot use never aborts the list (:func:`usable_tools`: skipped with
    a warning through ``warn``; refused with ``strict``).
    """
    if (command is None) == (url is None):
        raise InputError("<command line>", "command", "give either a server command (after --) or --url")
    if command is not None and (not command or not all(isinstance(c, str) and c for c in command)):
        raise InputError("<command>", "command", "expected a non-empty list of non-empty strings")
    if not (isinstance(timeout_s, int | float) and timeout_s > 0):
        raise InputError("<command line>", "--timeout", f"expected a positive number of seconds, got {timeout_s!r}")
    shown = shlex.join(command) if command is not None else ""
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    what = f"server {shown!r}" if command is not None else f"server at {url}"
    captured = CapturedLog().attach()
    with tempfile.NamedTemporaryFile("w+", prefix="canarykit-mcp-stderr-", suffix=".log", delete=False) as errlog:
        errlog_path = errlog.name
        try:
            with anyio.fail_after(timeout_s), anyio.CancelScope() as garbage:
                captured.scope = garbage  # a server that answers something that is not MCP: stop now
                if command is not None:
                    from .spawn import (  # the same guarded start as the proxy's
                        Launch,
                        stdio_upstream,
                    )

                    launch = Launch(list(command), dict(env or {}), secrets=_handed_on(env or {}))
                    async with stdio_upstream(launch, cast(TextIO, errlog), captured.noticed) as (read, write):
                        tap = ListingTap(read)
                        async with ClientSession(tap, write) as session:
                            raw = await _list_session(session, tap, server_name)
                else:
                    assert url is not None
                    async with streamable_http_client(url) as (read, write):
                        tap = ListingTap(read)
                        async with ClientSession(tap, write) as session:
                            raw = await _list_session(session, tap, server_name)
            if garbage.cancelled_caught:
                raise RuntimeError("the server's output is not MCP")
        except BaseException as exc:  # noqa: BLE001 - every failure becomes one line
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            errlog.flush()
            line = failure_line(what, exc, timeout_s, errlog_path, command)
            if captured.messages:
                line = f"{what}: it answered with something that is not MCP: {captured.messages[0]}"
            raise ListToolsError(line) from None
        finally:
            captured.detach()
            with contextlib.suppress(OSError):
                os.unlink(errlog_path)
    return usable_tools(raw, what, strict=strict, warn=warn)


def _handed_on(env: Mapping[str, str]) -> list[str]:
    from ..store.secrets import handed_on_secrets

    return handed_on_secrets(env)


class CapturedLog(logging.Handler):
    """Keeps the SDK's complaints about a server's output (one line each)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []
        self.scope: anyio.CancelScope | None = None
        self._saved: tuple[bool, int] = (True, logging.NOTSET)

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage().strip().splitlines()
        detail = ""
        if record.exc_info and record.exc_info[1] is not None:
            exc_text = str(record.exc_info[1]).strip().splitlines()
            detail = next((ln.strip() for ln in exc_text if "input_value=" in ln), exc_text[-1].strip() if exc_text else "")
        line = f"{text[0] if text else record.levelname}{': ' + detail[:200] if detail else ''}"
        if "parse" in record.getMessage().lower():
            self.noticed(line)
        else:
            self.messages.append(line)

    def attach(self) -> CapturedLog:
        """Take the SDK's log (it logs tracebacks for bad server output: we say it in one line)."""
        sdk_log = logging.getLogger("mcp")
        self._saved = (sdk_log.propagate, sdk_log.level)
        sdk_log.addHandler(self)
        sdk_log.propagate = False
        sdk_log.setLevel(logging.WARNING)
        return self

    def detach(self) -> None:
        """Give the SDK's log back as it was."""
        sdk_log = logging.getLogger("mcp")
        sdk_log.removeHandler(self)
        sdk_log.propagate, level = self._saved
        sdk_log.setLevel(level)

    def noticed(self, line: str) -> None:
        """A line of the server's stdout that is not MCP: some servers print a banner on stdout
        and then speak MCP, so give them a moment (:data:`NOT_MCP_GRACE_S`), no more."""
        self.messages.append(line)
        if self.scope is not None:
            self.scope.deadline = min(self.scope.deadline, anyio.current_time() + NOT_MCP_GRACE_S)


def failure_line(
    what: str, exc: BaseException, timeout_s: float, errlog: str, command: Sequence[str] | None
) -> str:
    causes = _root_causes(exc)
    stderr = _last_line(errlog)
    tail = f" (its last stderr line: {stderr})" if stderr else ""
    for cause in causes:
        if isinstance(cause, TimeoutError | anyio.get_cancelled_exc_class()):
            return f"{what}: no answer within {timeout_s:g} s (raise --timeout){tail}"
    for cause in causes:
        if isinstance(cause, FileNotFoundError) and command is not None:
            return f"{what}: cannot start it: command {command[0]!r} not found (is it installed and on PATH?)"
        if isinstance(cause, PermissionError) and command is not None:
            return f"{what}: cannot start it: {command[0]!r} is not executable"
        if isinstance(cause, OSError) and command is not None:
            return f"{what}: cannot start it: {cause.strerror or cause}"
    for cause in causes:
        name = type(cause).__name__
        text = str(cause).strip().splitlines()[0] if str(cause).strip() else name
        if command is None and ("Connect" in name or "connect" in text.lower()):
            refused = "refused" in text.lower() or "connecterror" in name.lower() or "all connection attempts" in text.lower()
            host = what.rsplit("://", 1)[-1].split("/", 1)[0] if "://" in what else ""
            label = f"connection_refused ({host})" if refused and host else "cannot connect"
            return f"{what}: {label}: {text}"
        if command is not None and ("closed" in text.lower() or isinstance(cause, anyio.EndOfStream | anyio.BrokenResourceError | anyio.ClosedResourceError)):
            return f"{what}: the server exited before answering{tail or ' (it wrote nothing to stderr)'}"
    first = causes[0] if causes else exc
    text = str(first).strip().splitlines()[0] if str(first).strip() else type(first).__name__
    return f"{what}: {type(first).__name__}: {text}{tail}"


def list_mcp_tools(command: Sequence[str] | None = None, timeout_s: float = 60.0, **options: Any) -> list[dict[str, Any]]:
    """Synchronous wrapper of :func:`fetch_tool_definitions` (the same arguments)."""
    return anyio.run(functools.partial(fetch_tool_definitions, command, timeout_s, **options))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m canarykit.mcp.toolservers",
                                     description="Run one canarykit tool server over MCP stdio.")
    parser.add_argument("server", choices=sorted(SERVERS))
    ns = parser.parse_args(argv)
    serve_stdio(ns.server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
