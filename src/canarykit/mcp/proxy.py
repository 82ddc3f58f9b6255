"""``canarykit proxy``: canaries planted in front of any MCP server, a trace per client session.

The proxy is an MCP server (stdio, or streamable HTTP on 127.0.0.1) that fronts one or more
upstream MCP servers (:mod:`canarykit.mcp.upstream`). Its ``tools/list`` answers every tool of
the upstreams (names that repeat across upstreams as ``<server>___<name>``; only those of
``--real-tools`` when given; a definition canarykit cannot use for canaries is still offered
as its server sent it when it is a valid MCP tool) plus canaries generated from them at
start-up (:func:`canarykit.canaries.build_pool`: ``--pool``, ``--fit``,
``--types``), or, with ``--controls``, each canary's twin in its place (the canary with
its probed property at its healthy value). Every definition keeps its MCP
metadata: a real tool's title, annotations and outputSchema as its server sent them, a
canary's mirrored from the tool it shadows. The order is a deterministic shuffle of all of
them (``--seed``), as in the study's assembly.

Each client session is told once, on stderr and as an MCP log notification (level
``warning``, logger ``canarykit-proxy``), which offered real tools may change the server's
state (not marked ``readOnlyHint``, or marked ``destructiveHint``) and every real tool not
offered, with its reason (:func:`session_notice`).

A call of a real tool is forwarded to its server and its result returned as it came; a call
of a canary (or control) is answered by its runtime (:func:`canarykit.canaries.run_canary`,
whose real-tool calls go upstream). Every result is capped at
:data:`~canarykit.tools.MAX_RESULT_BYTES` (a longer one becomes one text block ending with a
visible truncation marker, without structured content). A server that fails (exits, stops
answering) is answered as a tool error and recorded as such.

Traces: one JSON-lines file per client session (:mod:`canarykit.mcp.proxytraces`, which gives the
format); ``canarykit diagnose`` reads them (:mod:`canarykit.mcp.diagnose`).
"""

from __future__ import annotations

import contextlib
import json
import random
import socket
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Final

import anyio
import anyio.to_thread
import jsonschema
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
)
from mcp_types import Tool as MCPTool

from ..errors import InputError, ToolEnvironmentError
from ..store.jsonio import canonical_json, content_hash
from ..tools import MAX_RESULT_BYTES, cap_result
from ..types import CANARY_TYPES, ToolResult
from .proxytraces import TRACE_FORMAT, TRACE_FORMAT_VERSION, Traces
from .proxytraces import session_key as _session_key
from .upstream import Hidden, Route, ServerSpec, Upstreams, call_result, result_size, tool_result

__all__ = [
    "TRACE_FORMAT", "TRACE_FORMAT_VERSION", "Catalog", "Offering", "ProxySettings", "build_catalog", "make_server",
    "run_proxy",
]



@dataclass(frozen=True)
class ProxySettings:
    """What the proxy offers: the pool, the fit, the canary types, controls instead of
    canaries, the order's seed, and where its suffixes come from."""

    pool: str = "standard"
    fit: str = "fitted"
    types: tuple[str, ...] = CANARY_TYPES
    controls: bool = False
    seed: int = 0
    suffixes: Mapping[str, str] | None = None
    control_suffixes: Mapping[str, str | None] | None = None
    special_cases: Mapping[str, Mapping[str, Any]] | None = None
    #: canaries only for these real tools (exposed names); None: for every tool
    shadow: tuple[str, ...] | None = None
    #: offer only these real tools (exposed names); None: every tool of every upstream
    real_tools: tuple[str, ...] | None = None

    def describe(self) -> dict[str, Any]:
        from .. import __version__

        return {"canarykit_version": __version__, "pool": self.pool, "fit": self.fit, "types": list(self.types),
                "controls": self.controls, "seed": self.seed, "shadow": list(self.shadow) if self.shadow else None,
                "real_tools": list(self.real_tools) if self.real_tools else None}


@dataclass
class Offering:
    """One tool the proxy lists: a real tool (with its route) or a canary/control (its record)."""

    position: int
    name: str
    kind: str  # real | canary | control
    tool: MCPTool
    route: Route | None = None
    record: dict[str, Any] | None = None
    validator: Any = None

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"position": self.position, "name": self.name, "kind": self.kind}
        if self.route is not None:
            out["server"] = self.route.server
            out["upstream_name"] = self.route.name
        if self.record is not None:
            out["canary_id"] = self.record["id"]
            out["canary_type"] = self.record["type"]
            out["shadows"] = self.record["shadows"]
            up = self.record.get("upstream")
            if isinstance(up, Mapping):
                out["server"] = up.get("server")
                out["upstream_name"] = up.get("name")
        return out


@dataclass
class Catalog:
    """The proxy's tool list, in the order it is offered, and what was not offered."""

    offered: list[Offering]
    skipped: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.by_name = {o.name: o for o in self.offered}
        self.tools = [o.tool for o in self.offered]
        self.tool_list_hash = content_hash([o.tool.model_dump(by_alias=True, mode="json", exclude_none=True)
                                            for o in self.offered])

    def count(self, kind: str) -> int:
        return sum(o.kind == kind for o in self.offered)


def _mcp_tool(d: Mapping[str, Any]) -> MCPTool:
    keep = {k: d[k] for k in ("name", "title", "description", "inputSchema", "outputSchema", "annotations") if k in d}
    return MCPTool.model_validate(keep)


def _validator(schema: Mapping[str, Any]) -> Any:
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def build_catalog(real_tools: Sequence[Mapping[str, Any]], routes: Mapping[str, Route], settings: ProxySettings,
                  hosts: Sequence[Mapping[str, Any]] | None = None) -> Catalog:
    """The offered list: the real tools plus the pool's canaries (or controls), shuffled by
    ``settings.seed`` over stable keys (real names, canary ids), like the study's assembly.
    ``hosts``: the real tools canaries are made from (default: all of ``real_tools``; the
    proxy passes the ones ingestion could use)."""
    from ..canaries import DEFAULT_CONTROL_SUFFIXES, DEFAULT_SUFFIXES, ToolList, build_pool

    suffixes = settings.suffixes if settings.suffixes is not None else DEFAULT_SUFFIXES[settings.pool]
    control_suffixes = (settings.control_suffixes if settings.control_suffixes is not None
                        else DEFAULT_CONTROL_SUFFIXES[settings.pool])
    if settings.shadow is not None:
        names = {str(t["name"]) for t in real_tools}
        missing = [n for n in settings.shadow if n not in names]
        if missing:
            raise InputError("<command line>", "--shadow", f"no upstream tool {missing[0]!r}; the tools are: "
                             f"{', '.join(sorted(names))}")
    real_names = {str(t["name"]) for t in real_tools}
    hosted = [dict(t) for t in (real_tools if hosts is None else hosts)
              if t["name"] in real_names and (settings.shadow is None or t["name"] in settings.shadow)]
    pool = build_pool(
        ToolList(hosted, [], "<upstream tools>", list(range(len(hosted)))),
        settings.pool, suffixes, fit=settings.fit, control_suffixes=control_suffixes, controls=settings.controls,
        special_cases=settings.special_cases, types=settings.types, source="<upstream tools>",
        peers=[dict(t) for t in real_tools],
    )
    entries: dict[str, tuple[str, MCPTool, Route | None, dict[str, Any] | None]] = {}
    for t in real_tools:
        entries[f"real:{t['name']}"] = ("real", _mcp_tool(t), routes.get(str(t["name"])), None)
    if settings.controls:
        records, kind = pool.controls, "control"
    else:
        records, kind = pool.canaries, "canary"
    for rec in records:
        entries[f"{kind}:{rec['id']}"] = (kind, _mcp_tool(rec), None, rec)
    order = sorted(entries)
    random.Random(f"canarykit-proxy|{settings.seed}").shuffle(order)
    offered = []
    for pos, key in enumerate(order):
        kind_, tool, route, record = entries[key]
        offered.append(Offering(pos, tool.name, kind_, tool, route, record, _validator(tool.input_schema)))
    return Catalog(offered, list(pool.skipped))


# ------------------------------------------------------------------------------------ server


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


#: MCP log levels, lowest first (a client's logging/setLevel keeps that level and above).
_LOG_LEVELS: Final = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


def session_notice(offered: Sequence[Mapping[str, Any]], hidden: Sequence[Any]) -> str | None:
    """What a client session is told once (stderr and an MCP log notification): the offered
    real tools that may change the server's state, and every real tool not offered."""
    from .environments import write_tools

    parts = []
    writes = write_tools(offered)
    if writes:
        parts.append(f"{len(writes)} of the {len(offered)} real tools offered may change your server's state (not "
                     f"marked readOnlyHint, or marked destructiveHint): {', '.join(writes)}; their calls go to the "
                     "real server")
    if hidden:
        parts.append(f"{len(hidden)} real tool{'s' if len(hidden) != 1 else ''} not offered: "
                     + "; ".join(h.line() for h in hidden))
    return "canarykit proxy: notice: " + ". ".join(parts) if parts else None


class Proxy:
    """The handlers of the proxy server (a :class:`mcp.server.lowlevel.server.Server`)."""

    def __init__(self, upstreams: Upstreams, catalog: Catalog, traces: Traces | None, notice: str | None = None,
                 log: IO[str] | None = None, transport: str = "stdio") -> None:
        self.up, self.catalog, self.traces = upstreams, catalog, traces
        self.notice, self.log, self.transport = notice, log, transport
        self.noticed: set[str] = set()
        self.levels: dict[str, str] = {}

    async def _tell(self, ctx: Any) -> None:
        """The session's notice, once: on stderr and as an MCP log notification (``warning``)."""
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
        import warnings

        with contextlib.suppress(Exception), warnings.catch_warnings():  # a client that cannot take it still gets its answer
            warnings.simplefilter("ignore")  # the SDK calls log notifications deprecated from protocol 2026-07-28 on
            await ctx.session.send_log_message("warning", self.notice, logger="canarykit-proxy",
                                               related_request_id=getattr(ctx, "request_id", None))

    async def set_level(self, ctx: Any, params: Any) -> Any:
        from mcp_types import EmptyResult

        key, _, _ = _session_key(ctx, self.transport)
        self.levels[key] = str(params.level)
        return EmptyResult()

    async def list_tools(self, ctx: Any, params: PaginatedRequestParams | None) -> ListToolsResult:
        await self._tell(ctx)
        t0 = time.perf_counter()
        result = ListToolsResult(tools=list(self.catalog.tools))
        if self.traces is not None:
            self.traces.for_request(ctx).write({"event": "tools/list", "tools": len(result.tools),
                                                "tool_list_hash": self.catalog.tool_list_hash,
                                                "duration_ms": round((time.perf_counter() - t0) * 1000, 3)})
        return result

    async def _real(self, name: str, args: Any, timings: list[float]) -> ToolResult:
        """A real tool's result for the canary runtime (an upstream refusal is a tool error)."""
        t0 = time.perf_counter()
        try:
            return tool_result(await self.up.call(name, args if isinstance(args, dict) else {}))
        except MCPError as exc:
            return ToolResult(content=json.dumps({"error": exc.message}, ensure_ascii=False), is_error=True)
        except KeyError:
            return ToolResult(content=json.dumps({"error": f"unknown tool {name!r}"}), is_error=True)
        finally:
            timings.append(time.perf_counter() - t0)

    async def call_tool(self, ctx: Any, params: CallToolRequestParams) -> CallToolResult:
        await self._tell(ctx)
        t0 = time.perf_counter()
        name, args = params.name, dict(params.arguments or {})
        offering = self.catalog.by_name.get(name)
        timings: list[float] = []
        status, error, truncated = "ok", None, False
        if offering is None:
            status = "unknown_tool"
            result = _json_error(f"unknown tool {name!r}: it is not among the offered tools")
        else:
            if any(True for _ in offering.validator.iter_errors(args)):
                status = "invalid_arguments"
            try:
                if offering.kind == "real":
                    try:
                        t1 = time.perf_counter()
                        try:
                            upstream = await self.up.call(name, args)
                        finally:
                            timings.append(time.perf_counter() - t1)
                    except MCPError as exc:
                        self._trace_call(ctx, name, args, status, offering, None, exc.message, False, t0, timings,
                                         protocol_error=exc.code)
                        raise
                    result, truncated = _capped(upstream)
                else:
                    result, truncated = await self._canary(offering, args, timings)
            except ToolEnvironmentError as exc:
                error = str(exc)
                result = _json_error(f"the tool's server failed: {exc}")
        self._trace_call(ctx, name, args, status, offering, result, error, truncated, t0, timings)
        return result

    async def _canary(self, offering: Offering, args: dict[str, Any], timings: list[float]) -> tuple[CallToolResult, bool]:
        from ..canaries import run_canary

        assert offering.record is not None
        record = offering.record

        def execute(real_name: str, real_args: Any) -> ToolResult:
            return anyio.from_thread.run(self._real, real_name, real_args, timings)

        # abandoned when the session ends (the client left): the proxy exits without waiting
        answer = await anyio.to_thread.run_sync(run_canary, record, args, execute, abandon_on_cancel=True)
        text, truncated = cap_result(answer.content)
        if truncated:
            answer = ToolResult(content=text, is_error=answer.is_error, data=None)
        return call_result(answer), truncated

    def _trace_call(
        self, ctx: Any, name: str, args: dict[str, Any], status: str, offering: Offering | None,
        result: CallToolResult | None, error: str | None, truncated: bool, t0: float, timings: list[float],
        protocol_error: int | None = None,
    ) -> None:
        if self.traces is None:
            return
        cls = "unknown" if offering is None else offering.kind
        rec = offering.record if offering is not None else None
        route = offering.route if offering is not None and offering.route is not None else None
        if rec is not None and isinstance(rec.get("upstream"), Mapping):
            route = Route(str(rec["upstream"].get("server")), str(rec["upstream"].get("name")))
        event: dict[str, Any] = {
            "event": "tools/call", "name": name, "arguments": args, "status": status, "class": cls,
            "canary_id": rec["id"] if rec else None, "canary_type": rec["type"] if rec else None,
            "shadows": rec["shadows"] if rec else None,
            "upstream": {"server": route.server, "name": route.name} if route else None,
            "result": result.model_dump(by_alias=True, mode="json", exclude_none=True,
                                        include={"content", "structured_content", "is_error"}) if result else None,
            "is_error": bool(result.is_error) if result is not None else True,
            "truncated": truncated, "error": error,
            "duration_ms": round((time.perf_counter() - t0) * 1000, 3),
            "upstream_ms": round(sum(timings) * 1000, 3),
        }
        if protocol_error is not None:
            event["protocol_error"] = {"code": protocol_error, "message": error}
            event["error"] = None
        self.traces.for_request(ctx).write(event)


def make_server(proxy: Proxy, name: str, version: str, instructions: str | None) -> Server[Any]:
    import warnings

    with warnings.catch_warnings():
        # logging/setLevel is deprecated from protocol 2026-07-28 on, but clients of the
        # earlier versions only take log notifications from a server that declares it
        warnings.simplefilter("ignore")
        return Server(name, version=version, instructions=instructions, on_list_tools=proxy.list_tools,
                      on_call_tool=proxy.call_tool, on_set_logging_level=proxy.set_level)


def _identity(upstreams: Upstreams) -> tuple[str, str, str | None]:
    """The proxy's own serverInfo: the upstream's when there is one (a client sees the server
    it expects), else ``canarykit-proxy``."""
    from .. import __version__

    if len(upstreams.servers) == 1:
        s = upstreams.servers[0]
        return s.name, str(s.info.get("version") or __version__), s.instructions
    return "canarykit-proxy", __version__, None


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
    async with Upstreams(specs, timeout_s=timeout_s, call_timeout_s=call_timeout_s, errlog_dir=errlogs,
                         source="<upstream tools>", strict=strict) as up:
        for skip in up.skipped:
            print(f"canarykit proxy: warning: {skip.line()}", file=out, flush=True)
        offered, hidden = narrowed(up.all_tools, up.hidden, settings.real_tools)
        catalog = build_catalog(offered, up.routes, settings, hosts=up.tools)
        transport = "http" if http_port is not None else "stdio"
        traces = Traces(tdir, catalog, up, settings, transport, hidden) if tdir is not None else None
        proxy = Proxy(up, catalog, traces, session_notice(offered, hidden), out, transport)
        name, version, instructions = _identity(up)
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
            if http_port is None:
                async with stdio_server() as (read_stream, write_stream):
                    if ready is not None:
                        ready(None)
                    await server.run(read_stream, write_stream, server.create_initialization_options())
            else:
                await _serve_http(server, http_port, ready, out)
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


def narrowed(tools: Sequence[Mapping[str, Any]], hidden: Sequence[Hidden],
             only: Sequence[str] | None) -> tuple[list[dict[str, Any]], list[Hidden]]:
    """The real tools offered (every one, or only those named by ``--real-tools``) and every
    real tool not offered, with its reason."""
    if only is None:
        return [dict(t) for t in tools], list(hidden)
    names = {str(t["name"]) for t in tools}
    missing = [n for n in only if n not in names]
    if missing:
        raise InputError("<command line>", "--real-tools", f"no upstream tool {missing[0]!r}; the tools are: "
                         f"{', '.join(sorted(names))}")
    keep = [dict(t) for t in tools if t["name"] in only]
    dropped = [Hidden(str(t.get("server")), str(t["name"]), "left out by --real-tools") for t in tools
               if t["name"] not in only]
    return keep, [*hidden, *dropped]


def parse_types(text: str | None) -> tuple[str, ...]:
    """``--types T1,T2`` as canary type ids (every type when empty)."""
    if not text:
        return CANARY_TYPES
    types = tuple(t.strip() for t in text.split(",") if t.strip())
    unknown = [t for t in types if t not in CANARY_TYPES]
    if unknown:
        raise InputError("<command line>", "--types", f"unknown canary type {unknown[0]!r}; expected some of {list(CANARY_TYPES)}")
    return types


def settings_from_params(params_path: str | None, pool: str, fit: str | None, types: tuple[str, ...], controls: bool,
                         seed: int, shadow: tuple[str, ...] | None = None,
                         real_tools: tuple[str, ...] | None = None) -> ProxySettings:
    """The proxy's settings: suffixes, control suffixes, special cases and fit from
    ``canaries`` of a params.yaml (validated) when given, else the defaults."""
    if params_path is None:
        return ProxySettings(pool=pool, fit=fit or "fitted", types=types, controls=controls, seed=seed, shadow=shadow,
                             real_tools=real_tools)
    from ..study.config import load_params

    cfg = load_params(params_path)["canaries"]
    return ProxySettings(pool=pool, fit=fit or cfg["fit"], types=types, controls=controls, seed=seed,
                         suffixes=cfg["suffixes"][pool], control_suffixes=cfg["control_suffixes"][pool],
                         special_cases=cfg["special_cases"] or None, shadow=shadow, real_tools=real_tools)


def canonical_offered(catalog: Catalog) -> str:
    """The offered list as canonical JSON (for tests and reports)."""
    return canonical_json([o.describe() for o in catalog.offered])
