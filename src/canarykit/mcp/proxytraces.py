"""The proxy's traces: one JSON-lines file per client session of ``canarykit proxy``.

One JSON-lines file per client session in ``--trace-dir``
(``<UTC time>-<session id>.jsonl``), written as events happen (flushed per line). A
session is a stdio connection (one per proxy process), an HTTP session (``Mcp-Session-Id``),
or, for stateless HTTP requests (protocol 2026-07-28, which has no session), one per URL
label (``http://127.0.0.1:PORT/mcp/<label>``: give each agent its own) and otherwise one
per client name and version. Lines (``event`` discriminates)::

    {"event": "session", "format": "canarykit-proxy-trace", "format_version": 2,
     "session": "...", "started_at": "...", "transport": "stdio"|"http",
     "client": {"name", "version", "label"?}, "protocol_version": "...",
     "proxy": {"canarykit_version", "pool", "fit", "types", "controls", "seed", "shadow", "real_tools"},
     "upstreams": [{"name", "transport", "url"?, "server_info": {...}, "tools"}],
     "tool_list_hash": "...",
     "offered": [{"position", "name", "kind": "real"|"canary"|"control", "server"?,
                  "upstream_name"?, "canary_id"?, "canary_type"?, "control_id"?, "control_type"?,
                  "shadows"?}, ...],
     "hidden": [{"server", "name", "reason"}, ...],
     "instructions_found": [{"tool", "where", "text"}, ...]}
    {"event": "tools/list", "seq", "time", "tools": N, "tool_list_hash", "duration_ms"}
    {"event": "tools/call-begin", "seq", "time", "call": N, "name", "class"}
    {"event": "tools/call", "seq", "time", "call": N, "name", "arguments", "status", "outcome",
     "class", "canary_id", "canary_type", "control_id", "control_type", "shadows",
     "upstream": {"server", "name"} | null,
     "result": {"content": [...], "structuredContent"?, "isError"} | null, "is_error",
     "truncated", "error": null | "why the tool environment failed", "error_kind": null | "...",
     "duration_ms", "upstream_ms", "arguments_truncated"?: {"bytes": N}}

``status`` is the detector's (``ok``, ``invalid_arguments``: an object that fails the
offered schema, still a call of that tool; ``unknown_tool``: a name that was not offered);
``outcome`` says how the call ended: ``answered``, ``cancelled`` (its client cancelled it:
it was forwarded and may have acted) or ``unfinished`` (the session or the proxy ended while
it was in flight); a ``tools/call-begin`` without its ``tools/call`` (the proxy was killed)
is read as ``unfinished`` too. ``class`` is ``real``, ``canary``, ``control`` or ``unknown``;
``error_kind`` names a server failure (``timeout``, ``malformed_reply``, ``server_exited``,
``connection_lost``, ``connection_refused``, ``restart_failed``). Arguments over
:data:`~canarykit.tools.MAX_RESULT_BYTES` of JSON are kept as that much of their JSON text,
cut with the tool outputs' marker (``arguments_truncated`` gives their size); results are
capped as the client got them. Every line passes through the key scrubber
(:func:`canarykit.store.secrets.scrub_data`, with the values handed to the upstreams). Format
version 1 (no ``outcome``, no begin lines, controls with ``canary_*`` keys) is still read.
``canarykit diagnose`` reads these files (:mod:`canarykit.mcp.diagnose`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final

from ..store.secrets import scrub_data
from ..tools import MAX_RESULT_BYTES, cap_result

if TYPE_CHECKING:
    from mcp_types import CallToolResult

    from .catalog import Catalog, Offering, ProxySettings
    from .upstream import Hidden, Upstreams

__all__ = ["READABLE_VERSIONS", "TRACE_FORMAT", "TRACE_FORMAT_VERSION", "Trace", "Traces", "call_event", "session_key"]

TRACE_FORMAT: Final = "canarykit-proxy-trace"
TRACE_FORMAT_VERSION: Final = 2
#: Format versions ``canarykit diagnose`` reads.
READABLE_VERSIONS: Final = (1, 2)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Trace:
    """One client session's JSON-lines trace file (header written with the first event)."""

    def __init__(self, path: Path, header: dict[str, Any], secrets: Sequence[str] = ()) -> None:
        self.path = path
        self.header = header
        self.secrets = list(secrets)
        self.seq = 0
        self._fh: IO[str] | None = None

    def write(self, event: dict[str, Any]) -> None:
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()
            self._fh.write(json.dumps(scrub_data(self.header, self.secrets), ensure_ascii=False) + "\n")
        event = {"event": event.pop("event"), "seq": self.seq, "time": _now(), **event}
        self.seq += 1
        self._fh.write(json.dumps(scrub_data(event, self.secrets), ensure_ascii=False) + "\n")
        self._fh.flush()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


class Traces:
    """The sessions seen so far: session key -> trace."""

    def __init__(self, trace_dir: Path, catalog: Catalog, upstreams: Upstreams, settings: ProxySettings, transport: str,
                 hidden: Sequence[Hidden] = (), secrets: Sequence[str] = ()) -> None:
        self.dir = trace_dir
        self.catalog, self.upstreams, self.settings, self.transport = catalog, upstreams, settings, transport
        self.hidden = list(hidden)
        self.secrets = list(secrets)
        self.by_key: dict[str, Trace] = {}

    def for_request(self, ctx: Any) -> Trace:
        key, client, protocol = session_key(ctx, self.transport)
        trace = self.by_key.get(key)
        if trace is None:
            started = datetime.now(UTC)
            sid = uuid.uuid4().hex[:12]
            header: dict[str, Any] = {
                "event": "session", "format": TRACE_FORMAT, "format_version": TRACE_FORMAT_VERSION, "session": sid,
                "started_at": started.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), "transport": self.transport,
                "client": client, "protocol_version": protocol, "proxy": self.settings.describe(),
                "upstreams": [s.describe() for s in self.upstreams.servers],
                "tool_list_hash": self.catalog.tool_list_hash,
                "offered": [o.describe() for o in self.catalog.offered],
                "hidden": [{"server": h.server, "name": h.name, "reason": h.reason} for h in self.hidden],
                "instructions_found": list(self.catalog.instructions_found),
            }
            trace = Trace(self.dir / f"{started.strftime('%Y%m%dT%H%M%S')}-{sid}.jsonl", header, self.secrets)
            self.by_key[key] = trace
        return trace

    def close(self) -> None:
        for t in self.by_key.values():
            t.close()


def session_key(ctx: Any, transport: str) -> tuple[str, dict[str, Any], str | None]:
    """(key, client info, protocol version) of a request's session (see the module doc)."""
    session = getattr(ctx, "session", None)
    params = getattr(session, "client_params", None)
    info = getattr(params, "client_info", None)
    client = {"name": getattr(info, "name", None), "version": getattr(info, "version", None)} if info else {}
    protocol = getattr(ctx, "protocol_version", None)
    request = getattr(ctx, "request", None)
    headers = getattr(request, "headers", None)
    if headers is not None:
        label = (getattr(request, "path_params", None) or {}).get("label") or ""
        if label:
            client = {**client, "label": label}
        sid = headers.get("mcp-session-id")
        if sid:
            return f"http:{sid}", client, protocol
        if label:
            return f"http-label:{label}", client, protocol
        return f"http-stateless:{client.get('name')}:{client.get('version')}", client, protocol
    return transport, client, protocol


def _clip(text: str, limit: int = 2000) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... [{len(text) - limit:,} more characters]"


def _capped_arguments(args: Mapping[str, Any]) -> tuple[Any, dict[str, int] | None]:
    """``args``, or, over :data:`MAX_RESULT_BYTES` of JSON, that much of their JSON text cut
    with the tool outputs' marker (and the size it had)."""
    text = json.dumps(args, ensure_ascii=False)
    size = len(text.encode("utf-8"))
    if size <= MAX_RESULT_BYTES:
        return dict(args), None
    return cap_result(text)[0], {"bytes": size}


def call_event(call: int, name: str, args: Mapping[str, Any], status: str, offering: Offering | None,
               result: CallToolResult | None, error: str | None, kind: str | None, truncated: bool,
               duration_ms: float, upstream_ms: float, protocol_error: int | None = None,
               outcome: str = "answered") -> dict[str, Any]:
    """A ``tools/call`` line (module doc)."""
    cls = "unknown" if offering is None else offering.kind
    rec = offering.record if offering is not None else None
    route = offering.route if offering is not None else None
    upstream: dict[str, Any] | None = {"server": route.server, "name": route.name} if route is not None else None
    if rec is not None and isinstance(rec.get("upstream"), Mapping):
        upstream = {"server": rec["upstream"].get("server"), "name": rec["upstream"].get("name")}
    control = cls == "control"
    arguments, cut = _capped_arguments(args)
    event: dict[str, Any] = {
        "event": "tools/call", "call": call, "name": name, "arguments": arguments, "status": status,
        "outcome": outcome, "class": cls,
        "canary_id": rec["id"] if rec and not control else None, "canary_type": rec["type"] if rec and not control else None,
        "control_id": rec["id"] if rec and control else None, "control_type": rec["type"] if rec and control else None,
        "shadows": rec["shadows"] if rec else None, "upstream": upstream,
        "result": result.model_dump(by_alias=True, mode="json", exclude_none=True,
                                    include={"content", "structured_content", "is_error"}) if result else None,
        "is_error": bool(result.is_error) if result is not None else True,
        "truncated": truncated, "error": _clip(error) if error else None, "error_kind": kind,
        "duration_ms": round(duration_ms, 3), "upstream_ms": round(upstream_ms, 3),
    }
    if cut is not None:
        event["arguments_truncated"] = cut
    if protocol_error is not None:
        event["protocol_error"] = {"code": protocol_error, "message": _clip(error or "")}
        event["error"] = None
    return event
