"""Run records: the full trace of one (model, condition, pool, seed, task) run as typed events.

A record is written once, atomically, as JSON (``RunRecord.to_dict``) and read back with
:func:`RunRecord.from_dict`, which checks every field and names the file and field on error.
Flattening to tables (:func:`events_table`) is declarative and validated by pandera.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandera.polars as pa
import polars as pl

from .errors import InputError
from .jsonio import atomic_write_text, pretty_json, read_json_input

RECORD_SCHEMA_VERSION = 1

EventKind = Literal["model_turn", "tool_call", "tool_result", "tool_error", "backend_error", "final_answer"]
EVENT_KINDS: tuple[str, ...] = (
    "model_turn",
    "tool_call",
    "tool_result",
    "tool_error",
    "backend_error",
    "final_answer",
)

#: How a tool call was received. ``malformed_arguments``: not a JSON object (unparseable);
#: ``invalid_arguments``: a JSON object that fails the offered tool's schema (still a call of
#: that tool: a parameter-trap canary called without its api_key is a sprung trap);
#: ``unknown_tool``: a name that was not offered.
CallStatus = Literal["ok", "invalid_arguments", "malformed_arguments", "unknown_tool"]
CALL_STATUSES: tuple[str, ...] = ("ok", "invalid_arguments", "malformed_arguments", "unknown_tool")

#: How a run ended: a final answer (``completed``), cut off by ``agent.max_turns`` without a
#: final answer (``truncated``), or a backend error that outlived the retries (``error``).
RunStatus = Literal["completed", "truncated", "error"]
RUN_STATUSES: tuple[str, ...] = ("completed", "truncated", "error")
#: Earlier versions called a truncated run ``turn_limit``: such records read as ``truncated``.
LEGACY_STATUSES: dict[str, str] = {"turn_limit": "truncated"}


def normalise_status(status: str) -> str:
    """A run status in today's vocabulary (``turn_limit`` -> ``truncated``)."""
    return LEGACY_STATUSES.get(status, status)


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens


@dataclass
class Event:
    """One trace event. ``kind`` discriminates; fields not used by a kind stay ``None``.

    - ``model_turn``: ``content`` (text, may be None), ``n_tool_calls``, ``finish_reason``,
      ``usage``, ``latency_s``, ``cached`` (served from the response cache), ``cost_usd``.
    - ``tool_call``: ``call_id``, ``name``, ``arguments`` (parsed dict or None),
      ``raw_arguments`` (the text received), ``status`` (:data:`CallStatus`).
    - ``tool_result``: ``call_id``, ``name``, ``content``, ``is_error`` (the tool itself
      answered with an error, e.g. an unknown city or a canary's auth error).
    - ``tool_error``: ``call_id``, ``name``, ``message``, ``status``: the loop refused the
      call (malformed or invalid arguments, tool not offered) and answered this error.
    - ``backend_error``: ``message``, ``error_type``, ``status_code``, ``attempts``.
    - ``final_answer``: ``content``.
    """

    kind: str
    turn: int
    call_id: str | None = None
    name: str | None = None
    arguments: dict[str, Any] | None = None
    raw_arguments: str | None = None
    status: str | None = None
    content: str | None = None
    is_error: bool | None = None
    message: str | None = None
    error_type: str | None = None
    status_code: int | None = None
    attempts: int | None = None
    n_tool_calls: int | None = None
    finish_reason: str | None = None
    usage: Usage | None = None
    latency_s: float | None = None
    cached: bool | None = None
    cost_usd: float | None = None

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in asdict(self).items() if v is not None}
        return d


@dataclass
class OfferedTool:
    """A tool in the assembled list, with what the detector needs to classify calls of it.

    A real tool has only ``name``. A canary has ``canary_id``, ``canary_type`` and
    ``shadows`` (the real tool it shadows). A matched-surface control (condition
    ``control``) stands in a canary's slot: it has ``control_id``
    (``control:<type>:<real tool>``), ``control_type`` (the type of the canary it controls)
    and ``shadows``, and never a ``canary_id``/``canary_type``: a call of a control is not a
    canary call. Records written before controls existed simply lack the two fields.
    """

    name: str
    canary_id: str | None = None
    canary_type: str | None = None
    shadows: str | None = None
    control_id: str | None = None
    control_type: str | None = None

    @property
    def kind(self) -> str:
        """``real``, ``canary`` or ``control``."""
        if self.control_id is not None or self.control_type is not None:
            return "control"
        if self.canary_id is not None or self.canary_type is not None:
            return "canary"
        return "real"


def canary_before_real(offered: Sequence[OfferedTool]) -> bool | None:
    """True when every canary (or control) of the list sits before the real tool it shadows,
    False when every one sits after it, None when there is none (or the list mixes both
    orders, or a shadowed tool is not offered: lists canarykit's assembler never builds)."""
    real_pos = {o.name: i for i, o in enumerate(offered) if o.kind == "real"}
    sides: set[bool] = set()
    for i, o in enumerate(offered):
        if o.kind == "real":
            continue
        j = real_pos.get(o.shadows) if o.shadows is not None else None
        if j is None:
            return None
        sides.add(i < j)
    return next(iter(sides)) if len(sides) == 1 else None


@dataclass
class RunRecord:
    run_id: str
    identity: dict[str, Any]
    model: str
    group: str
    backend: str
    condition: str
    pool: str
    seed: int
    task_id: str
    difficulty: str
    offered: list[OfferedTool]
    correct_tools: list[str]
    events: list[Event]
    final_answer: str | None
    status: str  # RunStatus
    error: bool
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None
    latency_s: float = 0.0
    n_model_calls: int = 0
    n_cached_calls: int = 0
    code_version: str = ""
    created_at: str = ""
    schema_version: int = RECORD_SCHEMA_VERSION

    @property
    def truncated(self) -> bool:
        """Cut off by the turn limit without a final answer (its own outcome, not a failure)."""
        return not self.error and normalise_status(self.status) == "truncated"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["events"] = [e.to_dict() for e in self.events]
        d["offered"] = [{k: v for k, v in asdict(o).items() if v is not None} for o in self.offered]
        return d

    @classmethod
    def from_dict(cls, d: Any, source: str = "<record>") -> RunRecord:
        if not isinstance(d, dict):
            raise InputError(source, "<root>", "a run record must be a JSON object")
        required = {
            "run_id": str, "identity": dict, "model": str, "group": str, "backend": str,
            "condition": str, "pool": str, "seed": int, "task_id": str, "difficulty": str,
            "offered": list, "correct_tools": list, "events": list, "status": str, "error": bool,
        }
        for key, typ in required.items():
            if key not in d:
                raise InputError(source, key, "missing")
            if not isinstance(d[key], typ) or (typ is int and isinstance(d[key], bool)):
                raise InputError(source, key, f"expected {typ.__name__}, got {type(d[key]).__name__}")
        if d.get("schema_version", RECORD_SCHEMA_VERSION) != RECORD_SCHEMA_VERSION:
            raise InputError(source, "schema_version", f"expected {RECORD_SCHEMA_VERSION}, got {d.get('schema_version')!r}")
        events: list[Event] = []
        for i, e in enumerate(d["events"]):
            if not isinstance(e, dict) or e.get("kind") not in EVENT_KINDS:
                raise InputError(source, f"events[{i}].kind", f"expected one of {EVENT_KINDS}")
            e = dict(e)
            if isinstance(e.get("usage"), dict):
                e["usage"] = Usage(**e["usage"])
            try:
                events.append(Event(**e))
            except TypeError as exc:
                raise InputError(source, f"events[{i}]", str(exc)) from exc
        offered = []
        for i, o in enumerate(d["offered"]):
            if not isinstance(o, dict) or not isinstance(o.get("name"), str):
                raise InputError(source, f"offered[{i}].name", "expected a tool name")
            try:
                offered.append(OfferedTool(**o))
            except TypeError as exc:
                raise InputError(source, f"offered[{i}]", str(exc)) from exc
        return cls(
            run_id=d["run_id"], identity=d["identity"], model=d["model"], group=d["group"],
            backend=d["backend"], condition=d["condition"], pool=d["pool"], seed=d["seed"],
            task_id=d["task_id"], difficulty=d["difficulty"], offered=offered,
            correct_tools=list(d["correct_tools"]), events=events,
            final_answer=d.get("final_answer"), status=normalise_status(d["status"]), error=d["error"],
            usage=Usage(**d.get("usage", {})), cost_usd=d.get("cost_usd"),
            latency_s=float(d.get("latency_s", 0.0)), n_model_calls=int(d.get("n_model_calls", 0)),
            n_cached_calls=int(d.get("n_cached_calls", 0)), code_version=d.get("code_version", ""),
            created_at=d.get("created_at", ""), schema_version=d.get("schema_version", RECORD_SCHEMA_VERSION),
        )


def write_record(path: str | Path, record: RunRecord) -> None:
    """Atomically write a record: a crash leaves the old file or none, never half a record."""
    atomic_write_text(path, pretty_json(record.to_dict()))


def read_record(path: str | Path) -> RunRecord:
    return RunRecord.from_dict(read_json_input(path, "run record"), str(path))


class EventsTable(pa.DataFrameModel):
    """Flattened trace events: one row per event of every run."""

    run_id: str
    idx: int = pa.Field(ge=0)
    kind: str = pa.Field(isin=list(EVENT_KINDS))
    turn: int = pa.Field(ge=0)
    call_id: str = pa.Field(nullable=True)
    name: str = pa.Field(nullable=True)
    status: str = pa.Field(nullable=True, isin=list(CALL_STATUSES))
    is_error: bool = pa.Field(nullable=True)
    arguments: str = pa.Field(nullable=True, description="canonical JSON of parsed arguments")

    class Config:
        strict = False


def events_table(records: list[RunRecord]) -> pl.DataFrame:
    """Flatten records to one row per event (validated by :class:`EventsTable`)."""
    from .jsonio import canonical_json
    from .schemas import validate

    rows = [
        {
            "run_id": r.run_id,
            "idx": i,
            "kind": e.kind,
            "turn": e.turn,
            "call_id": e.call_id,
            "name": e.name,
            "status": e.status,
            "is_error": e.is_error,
            "arguments": None if e.arguments is None else canonical_json(e.arguments),
        }
        for r in records
        for i, e in enumerate(r.events)
    ]
    schema = {
        "run_id": pl.String, "idx": pl.Int64, "kind": pl.String, "turn": pl.Int64,
        "call_id": pl.String, "name": pl.String, "status": pl.String, "is_error": pl.Boolean,
        "arguments": pl.String,
    }
    return validate(pl.DataFrame(rows, schema=schema), EventsTable, "events")
