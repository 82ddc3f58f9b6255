"""Run records: the full trace of one (model, condition, pool, seed, task, arm) run as typed events
(one frozen class per event kind, :data:`Event` their union, read by :func:`event_from_dict`).

A record is written once, atomically, as JSON (``RunRecord.to_dict``) and read back with
:func:`RunRecord.from_dict`, which checks every field and names the file and field on error.
Flattening to tables (:func:`events_table`) is declarative and validated by pandera.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, TypeAlias, cast, get_args

import pandera.polars as pa
import polars as pl

from ..errors import InputError
from ..types import CALL_STATUSES, LEGACY_STATUSES, RUN_STATUSES, RunStatus
from .castore import ContentStore
from .jsonio import atomic_write_text, pretty_json, read_json_input

RECORD_SCHEMA_VERSION = 1
#: A twin's id is this prefix and its canary's id (``control:<canary id>``).
CONTROL_ID_PREFIX = "control:"

def normalise_status(status: str) -> str:
    """A run status in today's vocabulary (``turn_limit`` -> ``truncated``)."""
    return LEGACY_STATUSES.get(status, status)


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(cls))
    return names


def _set_fields(obj: Any) -> dict[str, Any]:
    """``obj``'s fields that are set (not ``None``), in declaration order, values shared
    (no deep copy: ``dataclasses.asdict`` would cost more than the rest of a reference run)."""
    out: dict[str, Any] = {}
    for name in _field_names(type(obj)):
        v = getattr(obj, name)
        if v is not None:
            out[name] = v.to_dict() if isinstance(v, Usage) else v
    return out


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens

    def to_dict(self) -> dict[str, int]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens}


# --------------------------------------------------------------------------- trace events
# One frozen class per event kind, ``kind`` its discriminator (``event.kind == "tool_call"``
# narrows an :data:`Event` to a :class:`ToolCallEvent`). A field left ``None`` is not written.


class _EventBase:
    def to_dict(self) -> dict[str, Any]:
        """The event's JSON object: ``kind``, ``turn`` and the fields that are set."""
        return _set_fields(self)


@dataclass(frozen=True, kw_only=True)
class ModelTurnEvent(_EventBase):
    """A model reply: ``content`` (text, may be None), ``n_tool_calls``, ``finish_reason``,
    ``usage``, ``latency_s``, ``cached`` (served from the response cache), ``cost_usd``."""

    kind: Literal["model_turn"] = field(default="model_turn", init=False)
    turn: int
    content: str | None = None
    n_tool_calls: int | None = None
    finish_reason: str | None = None
    usage: Usage | None = None
    latency_s: float | None = None
    cached: bool | None = None
    cost_usd: float | None = None


@dataclass(frozen=True, kw_only=True)
class ToolCallEvent(_EventBase):
    """A tool call as received: ``arguments`` (parsed object or None), ``raw_arguments``
    (the text received), ``status`` (:data:`~canarykit.types.CallStatus`)."""

    kind: Literal["tool_call"] = field(default="tool_call", init=False)
    turn: int
    call_id: str | None = None
    name: str | None = None
    arguments: dict[str, Any] | None = None
    raw_arguments: str | None = None
    status: str | None = None


@dataclass(frozen=True, kw_only=True)
class ToolResultEvent(_EventBase):
    """The tool's answer to a call: ``content``, ``is_error`` (the tool itself answered with
    an error, e.g. an unknown city or a canary's auth error). ``executed``: the real calls
    (``{"name", "arguments"}``) an environment that keeps state per run (BFCL) ran on that
    state to answer it: the call itself, a twin's call as its real tool's, none for a canary."""

    kind: Literal["tool_result"] = field(default="tool_result", init=False)
    turn: int
    call_id: str | None = None
    name: str | None = None
    content: str | None = None
    is_error: bool | None = None
    executed: list[dict[str, Any]] | None = None


@dataclass(frozen=True, kw_only=True)
class ToolErrorEvent(_EventBase):
    """The loop refused the call (malformed or invalid arguments, tool not offered) and
    answered ``message``; ``status`` says why (:data:`~canarykit.types.CallStatus`)."""

    kind: Literal["tool_error"] = field(default="tool_error", init=False)
    turn: int
    call_id: str | None = None
    name: str | None = None
    status: str | None = None
    message: str | None = None


@dataclass(frozen=True, kw_only=True)
class BackendErrorEvent(_EventBase):
    """A backend failure that outlived the retries: ``message``, ``error_type``,
    ``status_code``, ``attempts``."""

    kind: Literal["backend_error"] = field(default="backend_error", init=False)
    turn: int
    message: str | None = None
    error_type: str | None = None
    status_code: int | None = None
    attempts: int | None = None


@dataclass(frozen=True, kw_only=True)
class FinalAnswerEvent(_EventBase):
    """The run's final answer, ``content``. A task of several user turns has one per user
    turn the agent answered, in order (the last one is the run's ``final_answer``)."""

    kind: Literal["final_answer"] = field(default="final_answer", init=False)
    turn: int
    content: str | None = None


#: One trace event (its class is decided by ``kind``).
Event: TypeAlias = ModelTurnEvent | ToolCallEvent | ToolResultEvent | ToolErrorEvent | BackendErrorEvent | FinalAnswerEvent
_EVENT_CLASSES: dict[str, type[Event]] = {cls.kind: cls for cls in get_args(Event)}
#: The event kinds, in trace-table order (each defined once, by its class's discriminator).
EVENT_KINDS: tuple[str, ...] = tuple(_EVENT_CLASSES)


def event_from_dict(d: Any, source: str = "<record>", where: str = "event") -> Event:
    """The event of JSON object ``d`` (the class its ``kind`` names); errors name ``where``."""
    kind = d.get("kind") if isinstance(d, dict) else None
    cls = _EVENT_CLASSES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise InputError(source, f"{where}.kind", f"expected one of {EVENT_KINDS}")
    values = {k: v for k, v in d.items() if k != "kind"}
    try:
        if isinstance(values.get("usage"), dict):
            values["usage"] = Usage(**values["usage"])
        return cls(**values)
    except TypeError as exc:
        raise InputError(source, where, str(exc)) from exc


@dataclass
class OfferedTool:
    """A tool in the assembled list, with what the detector needs to classify calls of it.

    A real tool has only ``name``. A canary has ``canary_id``, ``canary_type`` and
    ``shadows`` (the real tool it shadows). A twin (the control of a canary, condition
    ``control``) stands in its canary's slot: it has ``control_id`` (``control:<canary
    id>``), ``control_type`` (the type of the canary it controls) and ``shadows``, and never a
    ``canary_id``/``canary_type``: a call of a twin is not a canary call. Records written
    before controls existed simply lack the two fields. ``selection_visible`` is ``False``
    for a stand-in whose canary and twin read alike (the pool's record says so: its defect
    cannot be seen before calling), and unset otherwise.
    """

    name: str
    canary_id: str | None = None
    canary_type: str | None = None
    shadows: str | None = None
    control_id: str | None = None
    control_type: str | None = None
    selection_visible: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return _set_fields(self)

    @property
    def stand_in_type(self) -> str | None:
        """The canary type this tool stands in for (a canary's type, a twin's canary's)."""
        return self.canary_type if self.canary_type is not None else self.control_type

    @property
    def item(self) -> str | None:
        """The canary this tool is or is the twin of (its id): the wording item it carries."""
        if self.canary_id is not None:
            return self.canary_id
        if self.control_id is not None:
            return self.control_id.removeprefix(CONTROL_ID_PREFIX)
        return None

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
    status: RunStatus
    error: bool
    #: the type whose twin a ``control`` list offers; ``""`` in every other condition (and in
    #: records written before arms existed)
    arm: str = ""
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
        """The record's JSON object (the one serialisation of a record: :func:`record_json`).
        Its values are the record's own, not copies: serialise it, do not change it."""
        d = {name: getattr(self, name) for name in _field_names(RunRecord)}
        d["usage"] = self.usage.to_dict()
        d["events"] = [e.to_dict() for e in self.events]
        d["offered"] = [o.to_dict() for o in self.offered]
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
        if not isinstance(d.get("arm", ""), str):
            raise InputError(source, "arm", f"expected str, got {type(d['arm']).__name__}")
        if d.get("schema_version", RECORD_SCHEMA_VERSION) != RECORD_SCHEMA_VERSION:
            raise InputError(source, "schema_version", f"expected {RECORD_SCHEMA_VERSION}, got {d.get('schema_version')!r}")
        events = [event_from_dict(e, source, f"events[{i}]") for i, e in enumerate(d["events"])]
        status = normalise_status(d["status"])
        if status not in RUN_STATUSES:
            raise InputError(source, "status", f"expected one of {RUN_STATUSES}, got {d['status']!r}")
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
            final_answer=d.get("final_answer"), status=cast(RunStatus, status), error=d["error"], arm=d.get("arm", ""),
            usage=Usage(**d.get("usage", {})), cost_usd=d.get("cost_usd"),
            latency_s=float(d.get("latency_s", 0.0)), n_model_calls=int(d.get("n_model_calls", 0)),
            n_cached_calls=int(d.get("n_cached_calls", 0)), code_version=d.get("code_version", ""),
            created_at=d.get("created_at", ""), schema_version=d.get("schema_version", RECORD_SCHEMA_VERSION),
        )


def record_json(record: RunRecord) -> str:
    """The text of a record file (stable, pretty JSON of :meth:`RunRecord.to_dict`)."""
    return pretty_json(record.to_dict())


def write_record(path: str | Path, record: RunRecord) -> None:
    """Atomically write a record: a crash leaves the old file or none, never half a record."""
    atomic_write_text(path, record_json(record))


def record_store(store_dir: str | os.PathLike[str]) -> ContentStore:
    """The records of a run store, by run id: ``store_dir/<run_id[:2]>/<run_id>.json``."""
    return ContentStore(store_dir)


def record_path(store_dir: str | os.PathLike[str], run_id: str) -> Path:
    """Where the run store ``store_dir`` keeps the record of ``run_id`` (``ValueError`` if
    ``run_id`` is not a content key)."""
    return record_store(store_dir).path(run_id)


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

    rows = []
    for r in records:
        for i, e in enumerate(r.events):
            d = e.to_dict()  # the fields this kind has and sets
            args = d.get("arguments")
            rows.append({
                "run_id": r.run_id, "idx": i, "kind": e.kind, "turn": e.turn, "call_id": d.get("call_id"),
                "name": d.get("name"), "status": d.get("status"), "is_error": d.get("is_error"),
                "arguments": None if args is None else canonical_json(args),
            })
    schema = {
        "run_id": pl.String, "idx": pl.Int64, "kind": pl.String, "turn": pl.Int64,
        "call_id": pl.String, "name": pl.String, "status": pl.String, "is_error": pl.Boolean,
        "arguments": pl.String,
    }
    return validate(pl.DataFrame(rows, schema=schema), EventsTable, "events")
