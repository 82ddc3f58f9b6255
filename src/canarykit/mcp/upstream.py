"""Live MCP client connections to one or more servers (stdio or streamable HTTP).

Two parts of canarykit talk to servers that are not ours: ``canarykit proxy`` (its upstreams)
and a study whose ``environment`` is a list of MCP servers (the agents' real tools). Both go
through :class:`Upstreams`:

- each server is started (a stdio command, with the SDK's safe environment plus what the
  caller passes, through :func:`canarykit.mcp.spawn.stdio_upstream`: every line checked, a
  watchdog, a scrubbed stderr log, the sandbox for an isolated one) or reached (a
  streamable-HTTP URL), initialized with the MCP handshake and
  its tools listed (pagination followed), every step within ``timeout_s``; a failure is one
  line (:class:`~canarykit.mcp.toolservers.ListToolsError`) naming the server and why;
- every server has a name: the one given, else the name it gives itself in ``initialize``
  (``-2``, ``-3`` appended when two servers call themselves the same);
- every definition is read as the server sent it (:class:`~canarykit.mcp.toolservers.ListingTap`:
  the SDK would refuse a whole page for one bad definition) and the joined list goes through
  the generator's ingestion (:func:`canarykit.canaries.ingest_tools`): a name that more than
  one server offers is exposed as ``<server>___<name>`` (the MCP documentation's rule for
  clients), an unusable definition is skipped with a warning (:attr:`Upstreams.tools`: what
  a study and the canary generator use). :attr:`Upstreams.all_tools` is every tool a
  client can still be offered (the proxy offers them all), :attr:`Upstreams.hidden` the
  rest with their reasons; :attr:`Upstreams.routes` maps each exposed name to its server
  and its name there;
- :meth:`Upstreams.call` forwards a ``tools/call`` and returns the server's result as it came
  (no client-side output-schema check: a proxy passes results through). A JSON-RPC error
  of the server is raised as :class:`mcp.shared.exceptions.MCPError` (the tool refused the
  call: an answer). A server that exited, stopped answering within ``call_timeout_s``,
  answered what cannot be read or cannot be reached is an :class:`UpstreamFailure` (a
  :class:`~canarykit.errors.ToolEnvironmentError`: not the agent's doing) naming its kind;
  the next call starts (or reconnects to) it again. The client side of each connection is
  what the caller's ``callbacks`` declare (the proxy passes its client's:
  :mod:`canarykit.mcp.forward`).

Each connection lives in its own task (entered and left there, as anyio requires), so a
server that dies takes only its own connection down.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shlex
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import anyio
from anyio.abc import TaskGroup, TaskStatus
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CONNECTION_CLOSED,
    REQUEST_TIMEOUT,
    CallToolRequest,
    CallToolRequestParams,
    CallToolResult,
)

from ..errors import InputError, ToolEnvironmentError
from ..store.secrets import handed_on_secrets
from .results import call_result, result_size, tool_result
from .spawn import Launch, stdio_upstream
from .toolservers import (
    CapturedLog,
    ListingTap,
    ListToolsError,
    failure_line,
    list_raw_tools,
    tool_entry,
)
from .wire import MALFORMED_REPLY

__all__ = [
    "ConnectedServer", "Hidden", "Route", "ServerSpec", "UpstreamFailure", "Upstreams", "call_result", "failure_kind",
    "result_size", "tool_result",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServerSpec:
    """How to reach one MCP server: a stdio ``command`` or a streamable-HTTP ``url``.

    ``env`` is added to the SDK's safe default environment of a stdio server (HOME, PATH,
    ...); ``where`` prefixes every error about this server (``params.yaml:
    environment.servers[0]``, ``--upstream``).
    """

    name: str | None = None
    command: tuple[str, ...] | None = None
    url: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    where: str = "<command line>"
    #: run in the sandbox with this directory its only writable path (:mod:`canarykit.mcp.sandbox`)
    workdir: str | None = None
    #: names of ``env`` passed by name (``--env KEY``, ``pass_env``): their values are secrets
    secret_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if (self.command is None) == (self.url is None):
            raise InputError(self.where, "server", "give either a command (stdio) or a url (streamable HTTP)")
        if self.command is not None and (not self.command or not all(isinstance(c, str) and c for c in self.command)):
            raise InputError(self.where, "command", "expected a non-empty list of non-empty strings")

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"

    def secrets(self) -> list[str]:
        """The values this server is handed that no file may hold (traces, logs)."""
        return handed_on_secrets(self.env, self.secret_names)

    def launch(self) -> Launch:
        assert self.command is not None
        return Launch(self.command, dict(self.env), self.cwd, self.workdir, self.secrets())

    def shown(self) -> str:
        """``server 'cmd args'`` or ``server at URL`` (for messages)."""
        if self.command is not None:
            text = shlex.join(self.command)
            return f"server {text if len(text) <= 80 else text[:77] + '...'!r}"
        return f"server at {self.url}"


@dataclass(frozen=True)
class Route:
    """Where an exposed tool name lives: its server and its name there."""

    server: str
    name: str


@dataclass(frozen=True)
class Hidden:
    """A tool of a server that a client is not offered, and why."""

    server: str
    name: str
    reason: str

    def line(self) -> str:
        return f"{self.name} ({self.server}): {self.reason}"


@dataclass
class ConnectedServer:
    """One upstream: its spec, its name, what it said about itself, its tools."""

    spec: ServerSpec
    index: int
    name: str = ""
    info: dict[str, Any] = field(default_factory=dict)
    tools: list[dict[str, Any]] = field(default_factory=list)
    session: ClientSession | None = None
    stop: anyio.Event | None = None
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    restarts: int = 0
    errlog_path: str = ""
    instructions: str | None = None

    def describe(self) -> dict[str, Any]:
        """For traces and reports: name, transport, what the server says it is."""
        out: dict[str, Any] = {"name": self.name, "transport": self.spec.transport}
        if self.spec.url is not None:
            out["url"] = self.spec.url
        out["server_info"] = dict(self.info)
        out["tools"] = len(self.tools)
        return out


class Upstreams:
    """Connections to several MCP servers, their joined tool list and call routing.

    Use as ``async with Upstreams(specs) as up:``; see the module docstring.
    """

    def __init__(
        self,
        specs: Sequence[ServerSpec],
        *,
        timeout_s: float = 60.0,
        call_timeout_s: float = 60.0,
        errlog_dir: str | Path | None = None,
        source: str = "<servers>",
        strict: bool = False,
        callbacks: Callable[[ConnectedServer], Mapping[str, Any]] | None = None,
    ) -> None:
        """``callbacks(server)``: the keyword arguments of each server's
        :class:`~mcp.client.session.ClientSession` (its sampling, elicitation, roots, logging and
        message callbacks: what the client side declares and answers; the proxy passes its
        client's, :mod:`canarykit.mcp.forward`)."""
        if not specs:
            raise InputError(source, "servers", "no MCP server given")
        for what, value in (("timeout", timeout_s), ("call timeout", call_timeout_s)):
            if not (isinstance(value, int | float) and value > 0):
                raise InputError(source, what, f"expected a positive number of seconds, got {value!r}")
        self.specs = list(specs)
        self.timeout_s = float(timeout_s)
        self.call_timeout_s = float(call_timeout_s)
        self.errlog_dir = Path(errlog_dir) if errlog_dir is not None else None
        self.source = source
        self.strict = strict
        self.callbacks = callbacks
        self.servers: list[ConnectedServer] = []
        self.by_name: dict[str, ConnectedServer] = {}
        self.routes: dict[str, Route] = {}
        self.tools: list[dict[str, Any]] = []
        self.skipped: list[Any] = []
        self.all_tools: list[dict[str, Any]] = []
        self.hidden: list[Hidden] = []
        self._tg: TaskGroup | None = None
        self._stack: contextlib.AsyncExitStack | None = None
        self._errlogs: list[IO[str]] = []

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Upstreams:
        from ..canaries import ingest_tools

        self._stack = contextlib.AsyncExitStack()
        await self._stack.__aenter__()
        try:
            self._tg = await self._stack.enter_async_context(anyio.create_task_group())
            self._stack.callback(self._close_errlogs)
            for i, spec in enumerate(self.specs):
                server = ConnectedServer(spec, i)
                await self._start(server)  # one at a time: a failure names its server
                server.name = self._unique_name(spec.name or str(server.info.get("name") or f"server{i + 1}"))
                self._name_errlog(server)
                for entry in server.tools:
                    if isinstance(entry, dict):
                        entry["server"] = server.name
                self.servers.append(server)
                self.by_name[server.name] = server
            listed = ingest_tools([t for s in self.servers for t in s.tools], self.source, strict=self.strict)
        except BaseException:
            await self.aclose()
            raise
        self.tools = listed.tools
        self.skipped = list(listed.skipped)
        self.routes = {t["name"]: Route(str(t["server"]), str(t.get("mcp_name", t["name"]))) for t in self.tools}
        self._passthrough()
        return self

    def _passthrough(self) -> None:
        """:attr:`all_tools`: every tool of every server a client can be offered. A usable
        tool as ingested; one that ingestion skipped (nested too deep, a schema canarykit
        cannot read) as its server sent it, when it is still a valid MCP tool definition
        (routed like the others, ``<server>___<name>`` when its name is taken); the rest in
        :attr:`hidden`, each with its reason."""
        from mcp_types import Tool as MCPTool
        from pydantic import ValidationError

        from ..canaries import server_prefix

        usable = {(t["server"], t.get("mcp_name", t["name"])): t for t in self.tools}
        taken = {t["name"] for t in self.tools}
        placed: set[tuple[str, str]] = set()
        for server in self.servers:
            for raw in server.tools:
                name = raw.get("name") if isinstance(raw, dict) else None
                if not isinstance(name, str):
                    self.hidden.append(Hidden(server.name, str(name) if name is not None else "?",
                                              "not a tool definition with a name"))
                    continue
                if (server.name, name) in placed:
                    self.hidden.append(Hidden(server.name, name, "a second tool of the same name on its server"))
                    continue
                placed.add((server.name, name))
                if (server.name, name) in usable:
                    self.all_tools.append(usable[(server.name, name)])
                    continue
                try:
                    MCPTool.model_validate({k: v for k, v in raw.items() if k != "server"})
                except ValidationError as exc:
                    first = exc.errors()[0]
                    where = ".".join(str(p) for p in first.get("loc", ()))
                    self.hidden.append(Hidden(server.name, name, f"not a valid MCP tool ({where}: {first.get('msg')})"))
                    continue
                exposed = name if name not in taken else f"{server_prefix(server.name)}___{name}"
                if exposed in taken:
                    self.hidden.append(Hidden(server.name, name, f"its name {exposed!r} is taken"))
                    continue
                taken.add(exposed)
                self.routes[exposed] = Route(server.name, name)
                entry = {**raw, "name": exposed, "server": server.name}
                if exposed != name:
                    entry["mcp_name"] = name
                self.all_tools.append(entry)

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        for server in self.servers:
            if server.stop is not None:
                server.stop.set()
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()

    def _close_errlogs(self) -> None:
        for fh in self._errlogs:
            with contextlib.suppress(OSError):
                fh.close()
            if self.errlog_dir is None:
                with contextlib.suppress(OSError):
                    os.unlink(fh.name)
        self._errlogs.clear()

    def _unique_name(self, name: str) -> str:
        if name not in self.by_name:
            return name
        n = 2
        while f"{name}-{n}" in self.by_name:
            n += 1
        return f"{name}-{n}"

    def _name_errlog(self, server: ConnectedServer) -> None:
        """Name a kept stderr log after its server, once the server is named."""
        if self.errlog_dir is None or not server.errlog_path:
            return
        target = self.errlog_dir / f"{server_file_name(server.name)}.stderr.log"
        if Path(server.errlog_path) != target:
            with contextlib.suppress(OSError):
                os.replace(server.errlog_path, target)
                server.errlog_path = str(target)

    def _errlog(self, server: ConnectedServer) -> IO[str]:
        if self.errlog_dir is not None:
            self.errlog_dir.mkdir(parents=True, exist_ok=True)
            path = self.errlog_dir / f".upstream-{server.index + 1}-{os.getpid()}.stderr.log"
            fh: IO[str] = open(path, "a", encoding="utf-8", errors="replace")  # noqa: SIM115 - closed by aclose
        else:
            fh = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed and removed by aclose
                "w+", prefix="canarykit-upstream-", suffix=".log", delete=False, encoding="utf-8", errors="replace"
            )
        self._errlogs.append(fh)
        server.errlog_path = fh.name
        return fh

    async def _start(self, server: ConnectedServer) -> None:
        """Start (or restart) ``server``'s connection in its own task; raise one line on failure."""
        assert self._tg is not None
        captured = CapturedLog().attach()
        errlog = self._errlog(server) if not server.errlog_path else _reopen(server.errlog_path, self._errlogs)
        try:
            await self._tg.start(self._hold, server, errlog, captured)
        except BaseException as exc:  # noqa: BLE001 - every failure becomes one line
            if isinstance(exc, KeyboardInterrupt | SystemExit | ToolEnvironmentError):
                raise
            errlog.flush()
            line = failure_line(server.spec.shown(), exc, self.timeout_s, server.errlog_path,
                                 list(server.spec.command) if server.spec.command else None)
            if captured.messages:
                line = f"{server.spec.shown()}: it answered with something that is not MCP: {captured.messages[0]}"
            raise ListToolsError(f"{server.spec.where}: {line}") from None
        finally:
            captured.detach()

    async def _hold(
        self, server: ConnectedServer, errlog: IO[str], captured: CapturedLog, *, task_status: TaskStatus[None]
    ) -> None:
        """The connection's task: connect, initialize, list, report started, then wait for
        the stop event. Whatever ends the connection later marks the server broken."""
        spec = server.spec
        stop = anyio.Event()
        started = False
        try:
            async with contextlib.AsyncExitStack() as stack:
                # Contexts that hold task groups are entered outside any timeout scope (anyio
                # scopes must nest); the waits that can hang are bounded below.
                if spec.command is not None:
                    streams: Any = await stack.enter_async_context(stdio_upstream(spec.launch(), errlog, captured.noticed))
                else:
                    assert spec.url is not None
                    streams = await stack.enter_async_context(streamable_http_client(spec.url))
                tap = ListingTap(streams[0])
                callbacks = dict(self.callbacks(server)) if self.callbacks is not None else {}
                callbacks["message_handler"] = self._transport_watch(server, callbacks.get("message_handler"))
                session = await stack.enter_async_context(ClientSession(tap, streams[1], **callbacks))
                tools: list[Any] = []
                with anyio.fail_after(self.timeout_s), anyio.CancelScope() as garbage:
                    captured.scope = garbage  # an answer that is not MCP: stop after a short grace
                    init = await session.initialize()
                    info = init.server_info
                    server.instructions = init.instructions
                    server.info = {k: v for k, v in (("name", info.name), ("version", info.version),
                                                     ("title", info.title)) if v} if info else {}
                    tools = [tool_entry(t, None) if isinstance(t, dict) else t for t in await list_raw_tools(session, tap)]
                if garbage.cancelled_caught:
                    raise RuntimeError("the server's output is not MCP")
                captured.scope = None
                if server.tools and _definitions(server.tools) != _definitions(tools):
                    raise ToolEnvironmentError(
                        f"{spec.where}: {spec.shown()} restarted with a different tool list; restart the run"
                    )
                if not server.tools:
                    server.tools = tools
                server.session, server.stop = session, stop
                started = True
                task_status.started()
                await stop.wait()
        except BaseException as exc:
            if not started:
                raise
            if not isinstance(exc, anyio.get_cancelled_exc_class()):
                log.warning("%s: connection ended: %s", spec.shown(), type(exc).__name__)
        finally:
            if server.stop is stop:
                server.session = None

    def _transport_watch(self, server: ConnectedServer, inner: Any) -> Any:
        """The session's message handler: a transport failure (an HTTP server that went away)
        ends the connection at once, so the calls waiting on it fail now (and the next call
        reconnects) instead of at their timeout; everything else goes to ``inner``."""

        async def handle(message: Any) -> None:
            if isinstance(message, Exception):
                if server.spec.url is not None and server.session is not None:
                    log.warning("%s: transport failed: %s", server.spec.shown(), type(message).__name__)
                    self._broken(server, server.session)
                return
            if inner is not None:
                await inner(message)

        return handle

    # ------------------------------------------------------------------ calls

    def route(self, name: str) -> Route | None:
        return self.routes.get(name)

    async def _session(self, server: ConnectedServer) -> ClientSession:
        async with server.lock:
            if server.session is None:
                server.restarts += 1
                try:
                    await self._start(server)
                except ListToolsError as exc:
                    kind = "connection_refused" if "connection_refused" in str(exc) else "restart_failed"
                    raise UpstreamFailure(kind, f"{exc} (restarting it after it went away)") from None
            assert server.session is not None
            return server.session

    async def call(self, name: str, arguments: Mapping[str, Any] | None, progress: Any = None) -> CallToolResult:
        """Forward a call of exposed tool ``name`` to its server (see the module docstring);
        ``progress(progress, total, message)`` receives the server's progress notifications.
        A server failure is an :class:`UpstreamFailure` naming its kind."""
        route = self.routes.get(name)
        if route is None:
            raise KeyError(name)
        server = self.by_name[route.server]
        session = await self._session(server)
        request = CallToolRequest(params=CallToolRequestParams(name=route.name, arguments=dict(arguments or {})))
        what = f"{server.spec.where}: {server.spec.shown()}"
        try:
            with anyio.fail_after(self.call_timeout_s):
                return await session.send_request(request, CallToolResult, progress_callback=progress)
        except TimeoutError:
            raise UpstreamFailure("timeout", f"{what}: tool {route.name!r} gave no answer within "
                                             f"{self.call_timeout_s:g} s") from None
        except MCPError as exc:
            if exc.code == MALFORMED_REPLY:
                raise UpstreamFailure("malformed_reply", f"{what}: {exc.message} (calling {route.name!r})") from None
            if exc.code in (CONNECTION_CLOSED, REQUEST_TIMEOUT):
                self._broken(server, session)
                kind = failure_kind(server.spec, None)
                raise UpstreamFailure(kind, f"{what}: {_kind_text(kind, server.spec)}{exc.message} "
                                            f"(calling {route.name!r})") from None
            raise
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError) as exc:
            self._broken(server, session)
            kind = failure_kind(server.spec, exc)
            raise UpstreamFailure(kind, f"{what}: {_kind_text(kind, server.spec)}connection lost calling "
                                        f"{route.name!r}: {type(exc).__name__}") from None

    async def broadcast(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification to every connected server (a client's roots/list_changed)."""
        for server in self.servers:
            if server.session is not None:
                with contextlib.suppress(Exception):
                    await server.session.send_notification(_notification(method, params))

    def _broken(self, server: ConnectedServer, session: ClientSession) -> None:
        if server.session is session:
            server.session = None
            if server.stop is not None:
                server.stop.set()


class UpstreamFailure(ToolEnvironmentError):
    """A server failed a call (not the tool's answer): ``kind`` is ``timeout``,
    ``malformed_reply`` (its reply could not be read: the connection carries on),
    ``connection_refused`` (nothing accepts connections at its URL), ``connection_lost``,
    ``server_exited`` (the next call starts or reaches it again) or ``restart_failed`` (it
    could not be started again)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def failure_kind(spec: ServerSpec, exc: BaseException | None) -> str:
    """``connection_refused`` for a URL server nothing listens at now, ``server_exited`` for a
    stdio server, else ``connection_lost``."""
    if spec.url is not None:
        return "connection_refused" if _refused(spec.url) else "connection_lost"
    return "server_exited" if exc is None or isinstance(exc, anyio.EndOfStream | anyio.BrokenResourceError) \
        else "connection_lost"


def _refused(url: str) -> bool:
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", port), timeout=2):
            return False
    except OSError:
        return True


def url_host(url: str) -> str:
    """``host:port`` of a URL (for messages)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port or (443 if parts.scheme == 'https' else 80)}"


def _kind_text(kind: str, spec: ServerSpec) -> str:
    if kind == "connection_refused" and spec.url is not None:
        return f"connection_refused ({url_host(spec.url)}): "
    return ""


def _notification(method: str, params: Mapping[str, Any] | None) -> Any:
    import mcp_types as types

    data = {"method": method, **({"params": dict(params)} if params else {})}
    return types.client_notification_adapter.validate_python(data, by_name=False)


def server_file_name(name: str) -> str:
    """A server name as a file name."""
    import re

    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "server"


def _reopen(path: str, keep: list[IO[str]]) -> IO[str]:
    fh: IO[str] = open(path, "a", encoding="utf-8", errors="replace")  # noqa: SIM115 - closed by aclose
    keep.append(fh)
    return fh


def _definitions(tools: Sequence[Mapping[str, Any]]) -> str:
    return json.dumps([{k: v for k, v in t.items() if k != "server"} for t in tools], sort_keys=True)
