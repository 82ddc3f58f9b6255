"""The proxy's traces: one JSON-lines file per client session of ``canarykit proxy``.

One JSON-lines file per client session in ``--trace-dir``
(``<UTC time>-<session id>.jsonl``), written as events happen (flushed per line). A
session is a stdio connection (one per proxy process), an HTTP session (``Mcp-Session-Id``),
or, for stateless HTTP requests (protocol 2026-07-28, which has no session), one per URL
label (``http://127.0.0.1:PORT/mcp/<label>``: give each agent its own) and otherwise one
per client name and version. Lines (``event`` discriminates)::

    {"event": "session", "format": "canarykit-proxy-trace", "format_version": 1,
     "session": "...", "started_at": "...", "transport": "stdio"|"http",
     "client": {"name", "version", "label"?}, "protocol_version": "...",
     "proxy": {"canarykit_version", "pool", "fit", "types", "controls", "seed", "shadow", "real_tools"},
     "upstreams": [{"name", "transport", "url"?, "server_info": {...}, "tools"}],
     "tool_list_hash": "...",
     "offered": [{"position", "name", "kind": "real"|"canary"|"control", "server"?,
                  "upstream_name"?, "canary_id"?, "canary_type"?, "shadows"?}, ...],
     "hidden": [{"server", "name", "reason"}, ...]}
    {"event": "tools/list", "seq", "time", "tools": N, "tool_list_hash", "duration_ms"}
    {"event": "tools/call", "seq", "time", "name", "arguments", "status", "class",
     "canary_id", "canary_type", "shadows", "upstream": {"server", "name"} | null,
     "result": {"content": [...], "structuredContent"?, "isError"}, "is_error",
     "truncated", "error": null | "why the tool environment failed",
     "duration_ms", "upstream_ms"}

``status`` is the detector's (``ok``, ``invalid_arguments``: an object that fails the
offered schema, still a call of that tool; ``unknown_tool``: a name that was not offered);
``class`` is ``real``, ``canary``, ``control`` or ``unknown``. ``canarykit diagnose`` reads
these files (:mod:`canarykit.mcp.diagnose`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from .proxy import Catalog, ProxySettings
    from .upstream import Hidden, Upstreams

__all__ = ["TRACE_FORMAT", "TRACE_FORMAT_VERSION", "Trace", "Traces", "session_key"]

TRACE_FORMAT: Final = "canarykit-proxy-trace"
TRACE_FORMAT_VERSION: Final = 1


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Trace:
    """One client session's JSON-lines trace file (header written with the first event)."""

    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        self.path = path
        self.header = header
        self.seq = 0
        self._fh: IO[str] | None = None

    def write(self, event: dict[str, Any]) -> None:
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()
            self._fh.write(json.dumps(self.header, ensure_ascii=False) + "\n")
        event = {"event": event.pop("event"), "seq": self.seq, "time": _now(), **event}
        self.seq += 1
        self._fh.write(json.dumps(event, ensure_ascii=False) + "\n")
        self._fh.flush()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


class Traces:
    """The sessions seen so far: session key -> trace."""

    def __init__(self, trace_dir: Path, catalog: Catalog, upstreams: Upstreams, settings: ProxySettings, transport: str,
                 hidden: Sequence[Hidden] = ()) -> None:
        self.dir = trace_dir
        self.catalog, self.upstreams, self.settings, self.transport = catalog, upstreams, settings, transport
        self.hidden = list(hidden)
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
            }
            trace = Trace(self.dir / f"{started.strftime('%Y%m%dT%H%M%S')}-{sid}.jsonl", header)
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
