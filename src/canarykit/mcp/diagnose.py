"""``canarykit diagnose``: the study's detector and metrics over ``canarykit proxy`` traces.

Each client session of a proxy trace (:mod:`canarykit.mcp.proxy`) is read as a run: its offered
list (the session header) and its ``tools/call`` events become a
:class:`~canarykit.store.records.RunRecord`, and the detector (:mod:`canarykit.detection.detect`) classifies
every call and computes the run's metrics with the study's own definitions: ``csr`` (canary
calls / all tool calls, NULL without calls), ``trapped`` (a canary was called), ``recovered``
(after the first canary call, the real tool it shadows was called; NULL when not trapped),
and ``present_T``/``trapped_T`` per canary type. Nothing is re-defined here.

Controls (a proxy started with ``--controls``) are offered to the detector as twins (as the
study offers them), so they count as tool calls but never as canary calls (a control is not
a trap), and are classified ``control`` in the per-call table with their ``control_type``,
``control_id`` and shadowed tool; per type, ``control_rate`` is the share of sessions offering
a control of that type that called one (the lure of the surface alone, to set against the
canaries' trap rate).

Every call the proxy forwarded counts, however it ended: a call its client cancelled
(``outcome`` ``cancelled``) or one still in flight when the session or the proxy ended
(``unfinished``, also a begun call whose end was never written: a killed proxy) was sent on
and may have acted, so it is a call of its tool like any other; the counts of each outcome
are in the summary, ``diagnosis.json`` and ``calls.csv``. Text of a real tool that reads as
instructions to the model (the proxy's ``instructions_found``) is named in a warning.
Everything written passes through the key scrubber (:mod:`canarykit.store.secrets`).

Unit of analysis: the session (one agent conversation). Overall rates are over sessions
(``csr_mean`` over sessions with at least one call; ``csr_pooled`` is over calls). Intervals
are Wilson score intervals at 95% that treat sessions as independent; sessions of one
agent on the same task are not, so read them as a floor on the uncertainty.

Outputs: ``OUT/diagnosis.json`` (per session and overall), ``OUT/calls.csv`` (one row per
call), and a short summary on stdout. The entry point for traces is :func:`read_traces`
(sessions of proxy traces); :func:`diagnose` takes sessions from any source that builds
:class:`Session` objects, and :func:`write_diagnosis` writes and prints the result.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import pandera.polars as pa
import polars as pl

from ..detection.detect import CALL_COLUMNS, call_event, classify_calls, run_metrics
from ..errors import InputError
from ..store.jsonio import write_json
from ..store.records import (
    CALL_STATUSES,
    Event,
    OfferedTool,
    RunRecord,
    ToolCallEvent,
    ToolErrorEvent,
    ToolResultEvent,
)
from ..store.secrets import scrub, scrub_data
from ..types import CALL_CLASSES, CANARY_TYPES

__all__ = [
    "CALLS_COLUMNS", "OUTCOMES", "DiagnosisCallsTable", "Session", "diagnose", "diagnose_command", "read_traces",
    "write_diagnosis",
]

#: How a traced call ended (``outcome`` of a proxy trace; format version 1 traces only answered).
OUTCOMES: Final = ("answered", "cancelled", "unfinished")

#: Columns of OUT/calls.csv: the detector's per-call columns (``run_id`` is the session id)
#: plus what the proxy recorded about each call.
CALLS_COLUMNS: Final[dict[str, Any]] = {
    **CALL_COLUMNS,
    "trace": pl.String,
    "seq": pl.Int64,
    "time": pl.String,
    "server": pl.String,
    "upstream_name": pl.String,
    "outcome": pl.String,
    "error_kind": pl.String,
    "is_error": pl.Boolean,
    "truncated": pl.Boolean,
    "server_failure": pl.Boolean,
    "duration_ms": pl.Float64,
    "upstream_ms": pl.Float64,
}
CLASSES: Final = CALL_CLASSES


class DiagnosisCallsTable(pa.DataFrameModel):
    """OUT/calls.csv: one row per ``tools/call`` of every session."""

    run_id: str = pa.Field(description="the session id")
    call_idx: int = pa.Field(ge=0)
    name: str = pa.Field(nullable=True)
    status: str = pa.Field(nullable=True, isin=list(CALL_STATUSES))
    cls: str = pa.Field(isin=list(CLASSES))
    canary_type: str = pa.Field(nullable=True, isin=list(CANARY_TYPES))
    control_type: str = pa.Field(nullable=True, isin=list(CANARY_TYPES))
    outcome: str = pa.Field(isin=list(OUTCOMES))
    duration_ms: float = pa.Field(nullable=True, ge=0)

    class Config:
        strict = False


@dataclass
class Session:
    """One client session of a trace file, ready for the detector."""

    trace: str
    header: dict[str, Any]
    calls: list[dict[str, Any]] = field(default_factory=list)
    lists: int = 0

    @property
    def id(self) -> str:
        return str(self.header.get("session"))

    def record(self) -> RunRecord:
        """The session as a run record: offered tools (controls as twins), one ``tool_call``
        event per call followed by its ``tool_result`` or ``tool_error`` (an unknown tool, or a
        call that never got an answer: cancelled or unfinished)."""
        offered: list[OfferedTool] = []
        for o in self.header.get("offered", []):
            if o.get("kind") == "canary":
                offered.append(OfferedTool(o["name"], o.get("canary_id"), o.get("canary_type"), o.get("shadows")))
            elif o.get("kind") == "control":  # format 1 wrote a control's id and type as canary_*
                offered.append(OfferedTool(o["name"], shadows=o.get("shadows"),
                                           control_id=o.get("control_id") or o.get("canary_id"),
                                           control_type=o.get("control_type") or o.get("canary_type")))
            else:
                offered.append(OfferedTool(o["name"]))
        events: list[Event] = []
        for c in self.calls:
            seq = int(c["seq"])
            status = str(c.get("status") or "ok")
            outcome = str(c.get("outcome") or "answered")
            events.append(ToolCallEvent(turn=seq, call_id=str(seq), name=c.get("name"),
                                        arguments=c.get("arguments") if isinstance(c.get("arguments"), dict) else None,
                                        status=status))
            if status == "unknown_tool" or outcome != "answered":
                events.append(ToolErrorEvent(turn=seq, call_id=str(seq), name=c.get("name"),
                                             message="unknown tool" if status == "unknown_tool" else outcome,
                                             status=status))
            else:
                events.append(ToolResultEvent(turn=seq, call_id=str(seq), name=c.get("name"),
                                              content=_result_text(c.get("result")), is_error=bool(c.get("is_error"))))
        proxy = self.header.get("proxy") or {}
        client = self.header.get("client") or {}
        return RunRecord(
            run_id=self.id, identity={}, model=str(client.get("name") or ""), group="proxy", backend="mcp-client",
            condition="control" if proxy.get("controls") else "proxy", pool=str(proxy.get("pool") or ""), seed=int(proxy.get("seed") or 0),
            task_id=self.id, difficulty="", offered=offered, correct_tools=[], events=events, final_answer=None,
            status="completed", error=False,
        )


def _result_text(result: Any) -> str | None:
    if not isinstance(result, Mapping):
        return None
    parts = [b.get("text") for b in result.get("content") or [] if isinstance(b, Mapping) and b.get("type") == "text"]
    return "\n".join(str(p) for p in parts) if parts else None


def _trace_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise InputError(str(path), "<path>", "no such file or directory (expected a proxy's --trace-dir)")
    files = sorted(p for p in path.glob("*.jsonl") if p.is_file())
    if not files:
        raise InputError(str(path), "<dir>", "no proxy traces (*.jsonl) here; run `canarykit proxy --trace-dir` first")
    return files


def read_traces(path: str | Path, warn: Any = None) -> list[Session]:
    """Every session of the trace files at ``path`` (a directory or one file), in file order.

    A file that is not a proxy trace, or a line that is not JSON, is an :class:`InputError`
    naming the file and the line; the one exception is an unfinished LAST line (a proxy
    killed while writing), which is skipped with a warning. A begun call whose end was never
    written is read as an ``unfinished`` call.
    """
    sessions: list[Session] = []
    for file in _trace_files(Path(path)):
        lines = file.read_text(encoding="utf-8", errors="replace").splitlines()
        session: Session | None = None
        begun: dict[int, dict[str, Any]] = {}
        for i, line in enumerate(lines, start=1):
            event = _event(file, i, line, len(lines), warn)
            if event is None:
                continue
            kind = event.get("event")
            if session is None:
                session = Session(str(file), _header(file, event))
                sessions.append(session)
            elif kind == "tools/call":
                if not isinstance(event.get("seq"), int):
                    raise InputError(str(file), f"line {i}.seq", "expected an integer")
                if isinstance(event.get("call"), int):
                    begun.pop(event["call"], None)
                session.calls.append(event)
            elif kind == "tools/call-begin" and isinstance(event.get("call"), int) and isinstance(event.get("seq"), int):
                begun[event["call"]] = event
            elif kind == "tools/list":
                session.lists += 1
        if session is not None and begun:
            session.calls.extend({**b, "event": "tools/call", "status": "ok", "outcome": "unfinished", "result": None,
                                  "is_error": True, "arguments": None} for b in begun.values())
            session.calls.sort(key=lambda c: int(c["seq"]))
    return sessions


def _event(file: Path, i: int, line: str, last: int, warn: Any) -> dict[str, Any] | None:
    if not line.strip():
        return None
    try:
        event = json.loads(line)
    except ValueError:
        if i == last:
            if warn is not None:
                warn(f"{file}: line {i}: unfinished last line skipped (the proxy stopped while writing it)")
            return None
        raise InputError(str(file), f"line {i}", "not a JSON object: not a canarykit proxy trace line") from None
    if not isinstance(event, dict):
        raise InputError(str(file), f"line {i}", "expected a JSON object")
    return event


def _header(file: Path, event: dict[str, Any]) -> dict[str, Any]:
    from .proxytraces import READABLE_VERSIONS, TRACE_FORMAT

    if event.get("event") != "session" or event.get("format") != TRACE_FORMAT:
        raise InputError(str(file), "line 1", f"not a canarykit proxy trace (expected a session header "
                                              f"with format {TRACE_FORMAT!r})")
    if event.get("format_version") not in READABLE_VERSIONS:
        raise InputError(str(file), "line 1.format_version",
                         f"expected one of {list(READABLE_VERSIONS)}, got {event.get('format_version')!r}")
    if not isinstance(event.get("offered"), list) or not all(
        isinstance(o, dict) and isinstance(o.get("name"), str) for o in event["offered"]
    ):
        raise InputError(str(file), "line 1.offered", "expected a list of offered tools with names")
    return event


def _wilson(k: int, n: int) -> tuple[float | None, float | None]:
    if n == 0:
        return None, None
    from statsmodels.stats.proportion import proportion_confint

    lo, hi = proportion_confint(k, n, alpha=0.05, method="wilson")
    return round(float(lo), 4), round(float(hi), 4)


def _rate(k: int, n: int) -> dict[str, Any]:
    lo, hi = _wilson(k, n)
    return {"rate": round(k / n, 4) if n else None, "k": k, "n": n, "lo": lo, "hi": hi}


def diagnose(sessions: Sequence[Session]) -> tuple[dict[str, Any], pl.DataFrame]:
    """The diagnosis document and the per-call table of ``sessions`` (see the module doc)."""
    rows: list[dict[str, Any]] = []
    per_session: list[dict[str, Any]] = []
    for s in sessions:
        record = s.record()
        calls = classify_calls(record)
        metrics = run_metrics(record, calls)
        by_seq = {str(c["seq"]): c for c in s.calls}
        classes = dict.fromkeys(CLASSES, 0)
        outcomes = dict.fromkeys(OUTCOMES, 0)
        for call in calls:
            row = call.to_row()
            raw = by_seq[str(call_event(record, call).call_id)]
            upstream: Mapping[str, Any] = raw["upstream"] if isinstance(raw.get("upstream"), Mapping) else {}
            outcome = str(raw.get("outcome") or "answered")
            row.update(
                trace=Path(s.trace).name, seq=int(raw["seq"]), time=raw.get("time"), server=upstream.get("server"),
                upstream_name=upstream.get("name"), outcome=outcome, error_kind=raw.get("error_kind"),
                is_error=bool(raw.get("is_error")), truncated=bool(raw.get("truncated")),
                server_failure=bool(raw.get("error")), duration_ms=raw.get("duration_ms"),
                upstream_ms=raw.get("upstream_ms"),
            )
            classes[row["cls"]] += 1
            outcomes[outcome if outcome in outcomes else "answered"] += 1
            rows.append(row)
        control_types = {c.control_type for c in calls if c.cls == "control" and c.control_type}
        offered_controls = {o.control_type for o in record.offered if o.control_type}
        proxy = s.header.get("proxy") or {}
        first = next((c for c in calls if c.cls == "canary"), None)
        per_session.append({
            "session": s.id,
            "trace": Path(s.trace).name,
            "started_at": s.header.get("started_at"),
            "client": s.header.get("client") or {},
            "transport": s.header.get("transport"),
            "upstreams": [u.get("name") for u in s.header.get("upstreams") or []],
            "pool": proxy.get("pool"),
            "fit": proxy.get("fit"),
            "controls": bool(proxy.get("controls")),
            "tools_list_requests": s.lists,
            "offered": {k: sum(o.get("kind") == k for o in s.header.get("offered", [])) for k in ("real", "canary", "control")},
            "calls": {**classes, "total": len(calls)},
            "outcomes": outcomes,
            "server_failures": sum(1 for c in s.calls if c.get("error")),
            "csr": metrics["csr"],
            "zero_call": metrics["zero_call"],
            "trapped": metrics["trapped"],
            "first_trap": {"name": first.name, "canary_type": first.canary_type, "shadows": first.shadows} if first else None,
            "recovered": metrics["recovered"],
            "types_offered": [t for t in CANARY_TYPES if metrics[f"present_{t}"]],
            "types_trapped": [t for t in CANARY_TYPES if metrics[f"trapped_{t}"]],
            "control_types_offered": [t for t in CANARY_TYPES if t in offered_controls],
            "control_types_called": [t for t in CANARY_TYPES if t in control_types],
        })
    calls_df = pl.DataFrame(rows, schema=CALLS_COLUMNS)
    from ..store.schemas import validate

    validate(calls_df, DiagnosisCallsTable, "calls.csv")
    doc = _document(per_session, calls_df)
    doc["instructions_found"] = _instructions_found(sessions)
    return doc, calls_df


def _instructions_found(sessions: Sequence[Session]) -> list[dict[str, Any]]:
    seen: dict[tuple[str, str, str], dict[str, Any]] = {}
    for s in sessions:
        for f in s.header.get("instructions_found") or []:
            if isinstance(f, Mapping):
                key = (str(f.get("tool")), str(f.get("where")), str(f.get("text")))
                seen.setdefault(key, {"tool": key[0], "where": key[1], "text": key[2]})
    return list(seen.values())


def _document(per_session: list[dict[str, Any]], calls_df: pl.DataFrame) -> dict[str, Any]:
    with_calls = [s for s in per_session if s["csr"] is not None]
    trapped = [s for s in per_session if s["trapped"]]
    n_calls = calls_df.height
    counts = {k: int((calls_df["cls"] == k).sum()) for k in CLASSES}
    canary_calls_by_type = {t: int(((calls_df["cls"] == "canary") & (calls_df["canary_type"] == t)).sum()) for t in CANARY_TYPES}
    control_calls_by_type = {t: int(((calls_df["cls"] == "control") & (calls_df["control_type"] == t)).sum()) for t in CANARY_TYPES}
    types: dict[str, Any] = {}
    for t in CANARY_TYPES:
        offered = [s for s in per_session if t in s["types_offered"]]
        c_offered = [s for s in per_session if t in s["control_types_offered"]]
        types[t] = {
            "trap_rate": _rate(sum(t in s["types_trapped"] for s in offered), len(offered)),
            "canary_calls": canary_calls_by_type[t],
            "control_rate": _rate(sum(t in s["control_types_called"] for s in c_offered), len(c_offered)),
            "control_calls": control_calls_by_type[t],
        }
    overall = {
        "sessions": len(per_session),
        "sessions_with_calls": len(with_calls),
        "zero_call_sessions": len(per_session) - len(with_calls),
        "calls": {**counts, "total": n_calls},
        "outcomes": {k: int((calls_df["outcome"] == k).sum()) for k in OUTCOMES},
        "server_failures": int(calls_df["server_failure"].sum()) if n_calls else 0,
        "csr_mean": round(sum(s["csr"] for s in with_calls) / len(with_calls), 4) if with_calls else None,
        "csr_pooled": round(counts["canary"] / n_calls, 4) if n_calls else None,
        "trapped": _rate(len(trapped), len(per_session)),
        "recovered": _rate(sum(bool(s["recovered"]) for s in trapped), len(trapped)),
        "types": types,
    }
    return {
        "format": "canarykit-diagnosis",
        "format_version": 1,
        "unit_of_analysis": "session (one client conversation through the proxy); rates are over sessions, "
                            "csr_pooled over calls; intervals: Wilson 95%, sessions treated as independent",
        "definitions": "the study's detector (canarykit.detection.detect): csr = canary calls / all tool calls of a session "
                       "(NULL without calls); trapped = a canary was called; recovered = after the first canary "
                       "call, the real tool it shadows was called (NULL when not trapped); trap_rate of a type = "
                       "share of the sessions offering a canary of that type that called one; control_rate = the "
                       "same for controls (proxy --controls)",
        "overall": overall,
        "sessions": per_session,
    }


def _fmt_rate(r: Mapping[str, Any]) -> str:
    if not r["n"]:
        return "-"
    ci = f" [{r['lo']:.2f}, {r['hi']:.2f}]" if r["lo"] is not None else ""
    return f"{r['k']}/{r['n']} ({r['rate']:.2f}{ci})"


def summary_lines(doc: Mapping[str, Any], out_dir: str | Path) -> list[str]:
    """The readable summary printed by ``canarykit diagnose``."""
    o = doc["overall"]
    c = o["calls"]
    lines = [f"{o['sessions']} session{'s' if o['sessions'] != 1 else ''}, {c['total']} tool calls: "
             f"{c['real']} real, {c['canary']} canary, {c['control']} control, {c['unknown']} unknown"
             + (f"; {o['server_failures']} failed in the server" if o["server_failures"] else "")
             + "".join(f"; {o['outcomes'][k]} {k}" for k in ("cancelled", "unfinished") if o["outcomes"].get(k))]
    for f in doc.get("instructions_found") or []:
        lines.append(f"warning: tool {f['tool']}: its {f['where']} reads as instructions to the model "
                     f"({f['text']!r}); its canaries and twins left it out")
    for s in doc["sessions"]:
        client = s["client"] or {}
        who = " ".join(str(x) for x in (client.get("name"), client.get("version")) if x) or "unknown client"
        calls = s["calls"]
        if s["trapped"]:
            t = s["first_trap"]
            trap = f"trapped by {t['name']} ({t['canary_type']}, shadows {t['shadows']}), " + (
                "recovered" if s["recovered"] else "did not recover")
        else:
            trap = "not trapped"
        csr = "-" if s["csr"] is None else f"{s['csr']:.2f}"
        extra = f", {calls['control']} control" if calls["control"] else ""
        lines.append(f"  session {s['session']} ({who}, {s['transport']}): {calls['total']} calls, "
                     f"{calls['canary']} canary{extra}, csr {csr}; {trap}")
    csr = "-" if o["csr_mean"] is None else f"{o['csr_mean']:.3f}"
    n = o["sessions_with_calls"]
    lines.append(f"overall: csr {csr} (mean over {n} session{'s' if n != 1 else ''} with calls); trapped "
                 f"{_fmt_rate(o['trapped'])}; recovered {_fmt_rate(o['recovered'])}")
    shown = [(t, v) for t, v in o["types"].items() if v["trap_rate"]["n"] or v["control_rate"]["n"]]
    if shown:
        lines.append("per type (sessions offering it): trap rate | control rate")
        for t, v in shown:
            lines.append(f"  {t:<24} {_fmt_rate(v['trap_rate']):<26} | {_fmt_rate(v['control_rate'])}")
    out = Path(out_dir)
    lines.append(f"wrote {out / 'diagnosis.json'} and {out / 'calls.csv'}")
    return lines


def write_diagnosis(doc: Mapping[str, Any], calls_df: pl.DataFrame, out_dir: str | Path) -> list[str]:
    """Write ``OUT/diagnosis.json`` and ``OUT/calls.csv`` (through the key scrubber) and return
    the summary lines."""
    from ..store.jsonio import atomic_write_text

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "diagnosis.json", scrub_data(dict(doc)))
    atomic_write_text(out / "calls.csv", scrub(calls_df.write_csv()))
    return [scrub(line) for line in summary_lines(doc, out)]


def diagnose_command(traces: str | Path, out_dir: str | Path, tools: str | Path | None = None) -> int:
    """``canarykit diagnose TRACE_DIR -o OUT`` (or Inspect logs: :mod:`.inspect_logs`, ``--tools``)."""
    import sys

    from .inspect_logs import is_inspect_path, read_inspect_logs

    def warn(m: str) -> None:
        print(f"canarykit diagnose: warning: {m}", file=sys.stderr)

    if is_inspect_path(traces):
        sessions = [Session(t, h, c) for t, h, c, _ in read_inspect_logs(traces, tools, read_traces, warn)]
    else:
        sessions = read_traces(traces, warn=warn)
    doc, calls_df = diagnose(sessions)
    for line in write_diagnosis(doc, calls_df, out_dir):
        print(line)
    return 0
