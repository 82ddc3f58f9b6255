"""``canarykit proxy``: canaries planted in front of any MCP server, a trace per client session.

The proxy is an MCP server (stdio, or streamable HTTP on 127.0.0.1) that fronts one or more
upstream MCP servers (:mod:`canarykit.mcp.upstream`). Its ``tools/list`` answers every tool of
the upstreams plus canaries generated from them at start-up, or, with ``--controls``, each
canary's twin in its place (:mod:`canarykit.mcp.catalog`).

Each client session is told once, on stderr and as an MCP log notification (level
``warning``, logger ``canarykit-proxy``), which offered real tools may change the server's
state and every real tool not offered (:func:`~canarykit.mcp.catalog.session_notice`); the same
notice ends the proxy's ``instructions``, which every protocol version carries (2026-07-28
delivers a log message only to a request that asked for it).

A call of a real tool is forwarded to its server and its result returned as it came; a call
of a canary (or control) is answered by its runtime (:func:`canarykit.canaries.run_canary`,
whose real-tool calls go upstream), in the form of the real answer it was made from (its
images, resources and links kept: :func:`~canarykit.mcp.results.in_real_form`). Every result
is capped at :data:`~canarykit.tools.MAX_RESULT_BYTES` (a longer one becomes one text block
ending with a visible truncation marker, without structured content). A server that fails
(exits, stops answering, answers what cannot be read) is answered as a tool error for that
call only and recorded as such; a server that exited is started again on the next call.
Everything else the protocol carries between client and server (sampling, elicitation,
roots, progress, logs, cancellation) is passed through (:mod:`canarykit.mcp.forward`).

Every request is answered: one the proxy cannot read (nested too deep, a lone surrogate, not
UTF-8, not JSON) gets a JSON-RPC error naming the limit (:mod:`canarykit.mcp.wire`). The
upstreams die with the proxy, however it ends (:mod:`canarykit.mcp.spawn`); SIGTERM, SIGINT
and SIGHUP end it in order (calls in flight traced as ``unfinished``, upstreams stopped).

Traces: one JSON-lines file per client session (:mod:`canarykit.mcp.proxytraces`, which gives the
format); ``canarykit diagnose`` reads them (:mod:`canarykit.mcp.diagnose`).
"""

from __future__ import annotations

import contextlib
import inspect
import json
import secrets
import signal
import socket
import sys
import threading
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, Final

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup
from mcp.server.lowlevel.server import Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    InputRequiredResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
)

from ..errors import InputError, ToolEnvironmentError
from ..tools import MAX_RESULT_BYTES, cap_result
from .catalog import (
    Catalog,
    Offering,
    ProxySettings,
    build_catalog,
    canonical_offered,
    narrowed,
    parse_types,
    session_notice,
    settings_from_params,
)
from .forward import Flight, Relay, was_cancelled
from .proxytraces import TRACE_FORMAT, TRACE_FORMAT_VERSION, Traces
from .proxytraces import session_key as _session_key
from .results import in_real_form, result_size, tool_result
from .upstream import ServerSpec, Upstreams
from .wire import guarded_stdio_server

__all__ = [
    "TRACE_FORMAT", "TRACE_FORMAT_VERSION", "Catalog", "Offering", "Proxy", "ProxySettings", "build_catalog",
    "canonical_offered", "make_server", "narrowed", "parse_types", "run_proxy", "session_notice",
    "settings_from_params",
]

#: MCP log levels, lowest first (a client's logging/setLevel keeps that level and above).
_LOG_LEVELS: Final = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


def _json_error(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=json.dumps({"error": message}, ensure_ascii=False))],
                          is_error=True)


def _capped(result: CallToolResult) -> tuple[CallToolResult, bool]:
    """``result`` if it fits in :data:`MAX_RESULT_BYTES`, else one text block cut with a
    visible marker (no structured content)."""
    if result_size(result) <= MAX_RESULT_BYTES:
        return result, False
    flat = tool_result(result)  # its text, capped
    text, _ = cap_result(flat.content)
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=result.is_error), True


class Proxy:
    """The handlers of the proxy server (a :class:`mcp.server.lowlevel.server.Server`)."""

    def __init__(self, upstreams: Upstreams, catalog: Catalog, traces: Traces | None, notice: str | None = None,
                 log: IO[str] | None = None, transport: str = "stdio", relay: Relay | None = None) -> None:
        self.up, self.catalog, self.traces = upstreams, catalog, traces
        self.notice, self.log, self.transport = notice, log, transport
        self.relay = relay if relay is not None else Relay(float(getattr(upstreams, "call_timeout_s", 120.0)))
        # an upstream stand-in (tests) may offer only call(name, args)
        self._progress = "progress" in inspect.signature(upstreams.call).parameters
        self.noticed: set[str] = set()
        self.levels: dict[str, str] = {}
        self.tg: TaskGroup | None = None  # the background calls of 2026-07-28 clients
        self.waiting: dict[str, Flight] = {}  # requestState -> the call waiting for its client's answers

    async def _tell(self, ctx: Any) -> None:
        """The session's notice, once: on stderr and as an MCP log notification (``warning``)."""
        self.relay.seen(ctx)
        if self.notice is None:
            return
        key, client, _ = _session_key(ctx, self.transport)
        if key in self.noticed:
            return
        self.noticed.add(key)
        who = " ".join(str(v) for v in (client.get("name"), client.get("version"), client.get("label")) if v) or key
        print(f"{self.notice} [session: {who}]", file=self.log or sys.stderr, flush=True)
        level = self.levels.get(key, "debug")
        if _LOG_LEVELS.index(level) > _LOG_LEVELS.index("warning"):
            return
        with contextlib.suppress(Exception), warnings.catch_warnings():  # a client that cannot take it still gets its answer
            warnings.simplefilter("ignore")  # the SDK calls log notifications deprecated from protocol 2026-07-28 on
            await ctx.session.send_log_message("warning", self.notice, logger="canarykit-proxy",
                                               related_request_id=getattr(ctx, "request_id", None))

    async def set_level(self, ctx: Any, params: Any) -> Any:
        """A client's logging/setLevel: kept for its session and passed to every upstream."""
        from mcp_types import EmptyResult

        key, _, _ = _session_key(ctx, self.transport)
        self.levels[key] = str(params.level)
        self.relay.seen(ctx)
        for server in self.up.servers:
            if server.session is not None:
                with contextlib.suppress(Exception), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    await server.session.set_logging_level(params.level)
        return EmptyResult()

    async def roots_changed(self, ctx: Any, params: Any) -> None:
        """A client's notifications/roots/list_changed, passed to every upstream."""
        self.relay.seen(ctx)
        await self.up.broadcast("notifications/roots/list_changed")

    async def list_tools(self, ctx: Any, params: PaginatedRequestParams | None) -> ListToolsResult:
        await self._tell(ctx)
        t0 = time.perf_counter()
        result = ListToolsResult(tools=list(self.catalog.tools))
        if self.traces is not None:
            self.traces.for_request(ctx).write({"event": "tools/list", "tools": len(result.tools),
                                                "tool_list_hash": self.catalog.tool_list_hash,
                                                "duration_ms": round((time.perf_counter() - t0) * 1000, 3)})
        return result

    # ------------------------------------------------------------------ calls

    async def call_tool(self, ctx: Any, params: CallToolRequestParams) -> CallToolResult | InputRequiredResult:
        await self._tell(ctx)
        if params.request_state is not None:  # a 2026-07-28 client's retry, with the answers its call waits for
            flight = self.waiting.pop(params.request_state, None)
            if flight is None:
                raise MCPError(INVALID_PARAMS, "canarykit proxy: this call is no longer in flight (it ended, or its "
                                               "client took too long to answer)")
            flight.ctx = ctx
            flight.answer(params.input_responses)
            return await self._round(flight)
        flight = self.relay.begin(ctx)
        name, args = params.name, dict(params.arguments or {})
        if not flight.modern or self.tg is None:
            try:
                return await self._run(flight, name, args)
            finally:
                self.relay.finish(flight)
        self.tg.start_soon(self._background, flight, name, args)
        return await self._round(flight)

    async def _background(self, flight: Flight, name: str, args: dict[str, Any]) -> None:
        """A 2026-07-28 client's call: it may outlive the request that started it (module doc of
        :mod:`canarykit.mcp.forward`)."""
        outcome: Any
        with anyio.CancelScope() as scope:
            flight.scope = scope
            if flight.stopped:  # its client cancelled it before it began
                scope.cancel()
            try:
                outcome = await self._run(flight, name, args)
            except MCPError as exc:
                outcome = exc
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                flight.events.send_nowait(("done", outcome))
        self.relay.finish(flight)
        for token in [t for t, f in self.waiting.items() if f is flight]:
            self.waiting.pop(token, None)

    async def _round(self, flight: Flight) -> CallToolResult | InputRequiredResult:
        """Wait for the call's result, or for questions for its client (an ``input_required`` result)."""
        try:
            while True:
                try:
                    kind, value = ("done", flight.done.pop()) if flight.done else await flight.inbox.receive()
                except anyio.EndOfStream:
                    raise MCPError(INVALID_PARAMS, "canarykit proxy: the call ended without an answer") from None
                if kind == "done":
                    if isinstance(value, MCPError):
                        raise value
                    result: CallToolResult = value
                    return result
                if value in flight.asks:
                    asks = {value: flight.asks[value].request, **flight.pending()}
                    token = secrets.token_urlsafe(18)
                    self.waiting[token] = flight
                    return InputRequiredResult(input_requests=asks, request_state=token)
        except anyio.get_cancelled_exc_class():
            flight.stop("cancelled" if was_cancelled(flight.ctx) else "unfinished")
            raise

    async def _run(self, flight: Flight, name: str, args: dict[str, Any]) -> CallToolResult:
        """Answer one call and trace it (begun, then answered, failed, cancelled or unfinished)."""
        t0 = time.perf_counter()
        offering = self.catalog.by_name.get(name)
        timings: list[float] = []
        status, error, kind, truncated = "ok", None, None, False
        trace = self.traces.for_request(flight.ctx) if self.traces is not None else None
        if trace is not None:
            trace.write({"event": "tools/call-begin", "call": flight.number, "name": name,
                         "class": offering.kind if offering is not None else "unknown"})
        result: CallToolResult | None = None
        try:
            if offering is None:
                status = "unknown_tool"
                result = _json_error(f"unknown tool {name!r}: it is not among the offered tools")
            else:
                if any(True for _ in offering.validator.iter_errors(args)):
                    status = "invalid_arguments"
                try:
                    if offering.kind == "real":
                        result, truncated = await self._forward(flight, offering, name, args, timings)
                    else:
                        result, truncated = await self._canary(flight, offering, args, timings)
                except ToolEnvironmentError as exc:
                    error, kind = str(exc), getattr(exc, "kind", "server_failure")
                    result = _json_error(f"the tool's server failed: {exc}")
        except MCPError as exc:
            self._trace_call(flight, name, args, status, offering, None, exc.message, None, False, t0, timings,
                             protocol_error=exc.code)
            raise
        except anyio.get_cancelled_exc_class():
            end = flight.end if flight.modern else ("cancelled" if was_cancelled(flight.ctx) else "unfinished")
            self._trace_call(flight, name, args, status, offering, None, None, None, False, t0, timings, outcome=end)
            raise
        self._trace_call(flight, name, args, status, offering, result, error, kind, truncated, t0, timings)
        return result

    async def _forward(self, flight: Flight, offering: Offering, name: str, args: dict[str, Any],
                       timings: list[float]) -> tuple[CallToolResult, bool]:
        assert offering.route is not None
        flight.servers.add(offering.route.server)
        t1 = time.perf_counter()
        try:
            upstream = await self._up_call(flight, name, args)
        finally:
            timings.append(time.perf_counter() - t1)
        return _capped(upstream)

    async def _up_call(self, flight: Flight, name: str, args: dict[str, Any]) -> CallToolResult:
        if self._progress:
            return await self.up.call(name, args, progress=self.relay.progress(flight))
        return await self.up.call(name, args)

    async def _real(self, flight: Flight, name: str, args: Any, timings: list[float],
                    reals: list[CallToolResult]) -> Any:
        """A real tool's result for the canary runtime (its text blocks; an upstream refusal is
        a tool error); the raw result is kept in ``reals`` for the look-alike's answer."""
        from ..types import ToolResult

        route = self.up.routes.get(name) if isinstance(getattr(self.up, "routes", None), dict) else None
        if route is not None:
            flight.servers.add(route.server)
        t0 = time.perf_counter()
        try:
            raw = await self._up_call(flight, name, args if isinstance(args, dict) else {})
        except MCPError as exc:
            return ToolResult(content=json.dumps({"error": exc.message}, ensure_ascii=False), is_error=True)
        except KeyError:
            return ToolResult(content=json.dumps({"error": f"unknown tool {name!r}"}), is_error=True)
        finally:
            timings.append(time.perf_counter() - t0)
        reals.append(raw)
        return tool_result(raw, describe_blocks=False)

    async def _canary(self, flight: Flight, offering: Offering, args: dict[str, Any],
                      timings: list[float]) -> tuple[CallToolResult, bool]:
        from ..canaries import run_canary
        from ..types import ToolResult

        assert offering.record is not None
        record = offering.record
        reals: list[CallToolResult] = []

        def execute(real_name: str, real_args: Any) -> ToolResult:
            return anyio.from_thread.run(self._real, flight, real_name, real_args, timings, reals)

        # abandoned when the session ends (the client left): the proxy exits without waiting
        answer = await anyio.to_thread.run_sync(run_canary, record, args, execute, abandon_on_cancel=True)
        text, truncated = cap_result(answer.content)
        if truncated:
            answer = ToolResult(content=text, is_error=answer.is_error, data=None)
        result, cut = _capped(in_real_form(answer, reals[-1] if reals else None))
        return result, truncated or cut

    def _trace_call(
        self, flight: Flight, name: str, args: dict[str, Any], status: str, offering: Offering | None,
        result: CallToolResult | None, error: str | None, kind: str | None, truncated: bool, t0: float,
        timings: list[float], protocol_error: int | None = None, outcome: str = "answered",
    ) -> None:
        if self.traces is None:
            return
        from .proxytraces import call_event

        event = call_event(flight.number, name, args, status, offering, result, error, kind, truncated,
                           (time.perf_counter() - t0) * 1000, sum(timings) * 1000, protocol_error, outcome)
        self.traces.for_request(flight.ctx).write(event)


def make_server(proxy: Proxy, name: str, version: str, instructions: str | None) -> Server[Any]:
    with warnings.catch_warnings():
        # logging/setLevel and roots/list_changed are deprecated from protocol 2026-07-28 on, but
        # clients of the earlier versions use them (and take log notifications only from a
        # server that declares logging)
        warnings.simplefilter("ignore")
        server: Server[Any] = Server(name, version=version, instructions=instructions, on_list_tools=proxy.list_tools,
                                     on_call_tool=proxy.call_tool, on_set_logging_level=proxy.set_level,
                                     on_roots_list_changed=proxy.roots_changed)
    # a 2026-07-28 client's retry echoes the state of its call: sealed, so it cannot be forged
    server.middleware.append(RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience=name))
    return server


def _identity(upstreams: Upstreams, notice: str | None) -> tuple[str, str, str | None]:
    """The proxy's own serverInfo: the upstream's when there is one (a client sees the server
    it expects), else ``canarykit-proxy``; its instructions end with the session notice."""
    from .. import __version__

    name, version, instructions = "canarykit-proxy", __version__, None
    if len(upstreams.servers) == 1:
        s = upstreams.servers[0]
        name, version, instructions = s.name, str(s.info.get("version") or __version__), s.instructions
    if notice is not None:
        instructions = f"{instructions}\n\n{notice}" if instructions else notice
    return name, version, instructions


async def _stop_on_signals(scope: anyio.CancelScope, out: IO[str]) -> None:
    """SIGTERM, SIGINT and SIGHUP end the proxy in order (calls in flight traced, upstreams stopped)."""
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
        async for signum in signals:
            print(f"canarykit proxy: {signal.Signals(signum).name}: stopping", file=out, flush=True)
            scope.cancel()
            return


async def run_proxy(
    specs: Sequence[ServerSpec],
    settings: ProxySettings,
    *,
    trace_dir: str | Path | None,
    http_port: int | None = None,
    timeout_s: float = 60.0,
    call_timeout_s: float = 120.0,
    ready: Any = None,
    log: IO[str] | None = None,
    strict: bool = False,
) -> None:
    """Start the upstreams, build the catalog and serve until stdin closes (stdio) or the
    process is stopped (HTTP). ``ready(url_or_None)`` is called once serving. ``strict``: a
    definition ingestion cannot use stops the proxy instead of a warning."""
    out = log if log is not None else sys.stderr
    tdir = Path(trace_dir) if trace_dir is not None else None
    errlogs = tdir / "upstream-logs" if tdir is not None else None
    relay = Relay(call_timeout_s)
    async with Upstreams(specs, timeout_s=timeout_s, call_timeout_s=call_timeout_s, errlog_dir=errlogs,
                         source="<upstream tools>", strict=strict, callbacks=relay.callbacks) as up:
        for skip in up.skipped:
            print(f"canarykit proxy: warning: {skip.line()}", file=out, flush=True)
        offered, hidden = narrowed(up.all_tools, up.hidden, settings.real_tools)
        catalog = build_catalog(offered, up.routes, settings, hosts=up.tools)
        for line in catalog.warnings():
            print(f"canarykit proxy: warning: {line}", file=out, flush=True)
        transport = "http" if http_port is not None else "stdio"
        secrets_ = [v for spec in specs for v in spec.secrets()]
        traces = Traces(tdir, catalog, up, settings, transport, hidden, secrets_) if tdir is not None else None
        notice = session_notice(offered, hidden)
        proxy = Proxy(up, catalog, traces, notice, out, transport, relay)
        name, version, instructions = _identity(up, notice)
        server = make_server(proxy, name, version, instructions)
        what = "controls" if settings.controls else "canaries"
        summary = (f"canarykit proxy: {len(up.servers)} upstream{'s' if len(up.servers) != 1 else ''} "
                   f"({', '.join(f'{s.name}: {len(s.tools)} tools' for s in up.servers)}); offering "
                   f"{catalog.count('real')} real tools + {len(catalog.offered) - catalog.count('real')} {what} "
                   f"({settings.pool} pool, {settings.fit}); traces: {tdir if tdir is not None else 'off'}"
                   + (f"; {len(hidden)} real tool{'s' if len(hidden) != 1 else ''} not offered (named in each "
                      "session's notice)" if hidden else ""))
        print(summary, file=out, flush=True)
        try:
            async with anyio.create_task_group() as tg:
                proxy.tg = tg
                if threading.current_thread() is threading.main_thread():
                    tg.start_soon(_stop_on_signals, tg.cancel_scope, out)
                try:
                    if http_port is None:
                        async with guarded_stdio_server(out) as (read_stream, write_stream):
                            if ready is not None:
                                ready(None)
                            await server.run(read_stream, write_stream, server.create_initialization_options())
                    else:
                        await _serve_http(server, http_port, ready, out)
                finally:
                    tg.cancel_scope.cancel()
        finally:
            if traces is not None:
                traces.close()


async def _serve_http(server: Server[Any], port: int, ready: Any, out: IO[str]) -> None:
    import uvicorn
    from starlette.routing import Route as HTTPRoute

    app = server.streamable_http_app(host="127.0.0.1")
    # /mcp/<label>: the same endpoint, with a label that names the session (stateless clients
    # of protocol 2026-07-28 have no session id; a label per agent keeps their traces apart).
    endpoint = next(r.endpoint for r in app.routes if isinstance(r, HTTPRoute) and r.path == "/mcp")
    app.router.routes.append(HTTPRoute("/mcp/{label:str}", endpoint=endpoint))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        sock.close()
        raise InputError("<command line>", "--http", f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from None
    bound = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    userver = uvicorn.Server(config)
    url = f"http://127.0.0.1:{bound}/mcp"

    async def announce() -> None:
        while not userver.started:
            await anyio.sleep(0.02)
        print(f"canarykit proxy: listening on {url}", file=out, flush=True)
        if ready is not None:
            ready(url)

    with contextlib.closing(sock):
        async with anyio.create_task_group() as tg:
            tg.start_soon(announce)
            await userver.serve(sockets=[sock])


