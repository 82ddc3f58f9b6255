"""``canarykit diagnose`` over Inspect AI logs: each sample (one epoch of it) is a session.

An Inspect user whose agent got its tools through the canary proxy (``canarykit proxy``,
e.g. as Inspect's ``mcp_server_stdio``) or from a canarykit tool list gets canarykit's
words for it from the ``.eval`` logs Inspect already writes. What a name is (a real tool, a
canary of some type shadowing some tool, a twin) is read from:

- the samples themselves when canarykit wrote them (``canarykit export inspect``: each
  sample's ``metadata.offered`` and ``metadata.canaries``);
- else ``--tools``: the proxy's traces (each session header's offered list, ``--trace-dir``)
  or a canarykit pool file (``canarykit generate-canaries``: its canaries, its twins and the
  real tools they shadow; a parameter trap and its twin share a name, and the description the
  model was given tells which one it was; every other name is a real tool).

The offered list of a sample is the tools its model was given (the ``tools`` of its model
events, in order), else the list ``--tools`` gives. Every tool call of the sample's messages
is a call of the session, answered by its tool message: ``ok``; ``invalid_arguments`` when
Inspect refused the arguments against the schema (such a call never reaches the proxy, so a
proxy trace lacks it: the log has it, and it counts as a call of the tool the model chose, as
in the study's loop); ``malformed_arguments`` when they did not parse; ``unknown_tool`` for a
name not offered. The rest is :mod:`canarykit.mcp.diagnose`'s, unchanged (this module hands it plain sessions,
and is handed its trace reader: neither imports the other at load).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from ..errors import InputError

__all__ = ["LOG_SUFFIXES", "InspectSession", "is_inspect_path", "read_inspect_logs", "tool_kinds"]

#: One sample as :class:`~canarykit.mcp.diagnose.Session` takes it: the log file, the session
#: header (its ``offered`` list), the ``tools/call`` events, the offered twins by name.
InspectSession = tuple[str, dict[str, Any], list[dict[str, Any]], dict[str, dict[str, Any]]]
#: ``read_traces(path)`` of :mod:`canarykit.mcp.diagnose` (its sessions' ``header`` and ``trace``).
TraceReader = Callable[[Path], Sequence[Any]]

#: File suffixes of Inspect logs.
LOG_SUFFIXES: Final = (".eval",)


def is_inspect_path(path: str | Path) -> bool:
    """True for an Inspect log, or a directory holding some (and no proxy trace)."""
    p = Path(path)
    if p.is_file():
        return p.suffix in LOG_SUFFIXES
    return p.is_dir() and any(p.glob("*.eval")) and not any(p.glob("*.jsonl"))


def tool_kinds(source: str | Path, read_traces: TraceReader) -> dict[str, list[dict[str, Any]]]:
    """Name -> the offered entries it may be (``name``, ``kind``, ``canary_id``,
    ``canary_type``, ``shadows``; from a pool file also ``description``: a parameter trap and
    its twin share a name, and only the description tells which one a client was offered),
    from proxy traces or a canarykit pool file (module docstring), canaries first."""
    p = Path(source)
    out: dict[str, list[dict[str, Any]]] = {}
    if p.is_dir() or p.suffix == ".jsonl":
        for s in read_traces(p):
            for o in s.header.get("offered", []):
                known = out.setdefault(o["name"], [dict(o)])[0]
                if known.get("kind") != o.get("kind") or known.get("canary_id") != o.get("canary_id"):
                    raise InputError(str(s.trace), "offered", f"{o['name']!r} is a {o.get('kind')} here and a "
                                     f"{known.get('kind')} in another session: give the traces of one proxy setting")
        return out
    from ..canaries import load_pool_document

    doc = load_pool_document(p)
    for kind, records in (("canary", doc.get("canaries", [])), ("control", doc.get("controls", []))):
        for r in records:
            out.setdefault(r["shadows"], [{"name": r["shadows"], "kind": "real"}])
            out.setdefault(r["name"], []).append({"name": r["name"], "kind": kind, "canary_id": r.get("control_of", r["id"]),
                                                  "canary_type": r["type"], "shadows": r["shadows"],
                                                  "description": r.get("description")})
    return out


def _resolve(name: str, description: str | None, kinds: Mapping[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The offered entry of ``name``: the one whose description the client was given, else
    the first (a canary before its same-named twin); a name nobody lists is a real tool."""
    options = kinds.get(name) or [{"name": name, "kind": "real"}]
    chosen = next((o for o in options if description is not None and o.get("description") == description), options[0])
    return {k: v for k, v in chosen.items() if k != "description"}


def _own_kinds(sample: Any) -> dict[str, list[dict[str, Any]]] | None:
    """What a sample canarykit exported says of its offered list (None: it says nothing)."""
    meta = sample.metadata or {}
    if not isinstance(meta.get("offered"), list) or not isinstance(meta.get("canaries"), list):
        return None
    out = {str(n): [{"name": str(n), "kind": "real"}] for n in meta["offered"]}
    for c in meta["canaries"]:
        out[str(c["name"])] = [{"name": c["name"], "kind": c["kind"], "canary_type": c.get("type"),
                                "shadows": c.get("shadows"), "canary_id": str(c.get("item") or "")}]
    return out


def _offered(sample: Any) -> dict[str, str | None]:
    """The tools the sample's model was given (name -> description), in order."""
    tools: dict[str, str | None] = {}
    for e in sample.events or []:
        for t in getattr(e, "tools", None) or []:
            tools.setdefault(str(t.name), getattr(t, "description", None))
    return tools


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(str(getattr(c, "text", "")) for c in content or [] if getattr(c, "type", None) == "text")


def _calls(sample: Any, offered: set[str]) -> list[dict[str, Any]]:
    """The sample's tool calls as the proxy traces them (``tools/call`` events)."""
    answers = {m.tool_call_id: m for m in sample.messages if m.role == "tool"}
    calls: list[dict[str, Any]] = []
    for m in sample.messages:
        for c in getattr(m, "tool_calls", None) or []:
            answer = answers.get(c.id)
            error = getattr(answer, "error", None)
            status = "ok"
            if c.parse_error:
                status = "malformed_arguments"
            elif c.function not in offered:
                status = "unknown_tool"
            elif error is not None and error.type == "parsing":
                status = "invalid_arguments"
            text = _text(answer.content) if answer is not None else ""
            if error is not None and not text:
                text = json.dumps({"error": error.message}, ensure_ascii=False)
            calls.append({"event": "tools/call", "seq": len(calls), "name": c.function, "arguments": dict(c.arguments or {}),
                          "status": status, "result": {"content": [{"type": "text", "text": text}]},
                          "is_error": error is not None, "time": None, "upstream": {}})
    return calls


def read_inspect_logs(path: str | Path, tools: str | Path | None, read_traces: TraceReader,
                      warn: Any = None) -> list[InspectSession]:
    """Every sample of the Inspect logs at ``path`` (a ``.eval`` file or a directory of
    them) as a session for :mod:`canarykit.mcp.diagnose` (module docstring); ``read_traces``
    reads ``tools`` when it is a proxy's trace directory."""
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise InputError(str(path), "<file>", "reading Inspect logs needs the inspect-ai package: "
                                              "pip install -e '.[inspect]'") from None
    p = Path(path)
    files = [p] if p.is_file() else sorted(f for f in p.glob("*.eval") if f.is_file())
    if not files:
        raise InputError(str(p), "<dir>", "no Inspect logs (*.eval) here")
    given = tool_kinds(tools, read_traces) if tools is not None else None
    sessions: list[InspectSession] = []
    for f in files:
        try:
            log = read_eval_log(str(f))
        except Exception as exc:  # a file Inspect cannot read is bad input, named
            raise InputError(str(f), "<file>", f"not an Inspect log Inspect can read: {type(exc).__name__}: {exc}") from None
        for sample in log.samples or []:
            kinds = _own_kinds(sample) or given
            if kinds is None:
                raise InputError(str(f), f"samples[{sample.id}]", "which tools are canaries? give --tools (the proxy's "
                                 "trace dir, or the canarykit pool file the tools came from)")
            given_tools = _offered(sample) or dict.fromkeys(kinds)
            names = list(given_tools)
            offered = [{"position": i, **_resolve(n, d, kinds)} for i, (n, d) in enumerate(given_tools.items())]
            header: dict[str, Any] = {
                "session": f"{f.stem}:{sample.id}:{sample.epoch}", "started_at": sample.started_at,
                "transport": "inspect", "client": {"name": log.eval.model, "version": log.eval.task},
                "proxy": {"controls": any(o["kind"] == "control" for o in offered)}, "upstreams": [], "offered": offered,
            }
            controls = {o["name"]: o for o in offered if o["kind"] == "control"}
            sessions.append((str(f), header, _calls(sample, set(names)), controls))
    if not sessions and warn is not None:
        warn(f"{p}: the Inspect logs hold no samples")
    return sessions
