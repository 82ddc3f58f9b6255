"""The trap detector and the per-run metrics (paper section 4, "Trap detector and metrics").

Every ``tool_call`` event of a run record is classified as

- ``real``: a call of an offered real tool;
- ``canary``: a call of an offered canary (with its id, type and the real tool it shadows);
- ``control``: a call of an offered twin (condition ``control``, arm T: T's canary with its
  defect set to the healthy value, in the canary's slot, working like the real tool). **A
  twin call is not a canary call**: it never counts in ``canary_calls``, ``csr``,
  ``trapped`` or ``trapped_T``; it counts in ``control_calls`` and ``control_called_T`` (T:
  the type of the canary it controls), and, like any call, in ``tool_calls``;
- ``unknown``: a name that was not offered, or arguments that were not a JSON object
  (status ``malformed_arguments``; the loop could not tell what was asked for).

Decisions (each is a place where the paper is silent or ambiguous):

- **Invalid arguments are still calls of the tool.** A call whose arguments are a JSON object
  that fails the offered tool's schema (status ``invalid_arguments``) is classified by its
  name: a parameter-trap canary called without its ``api_key`` is a sprung trap.
- **Unknown calls count as tool calls.** ``tool_calls`` counts every ``tool_call`` event,
  ``unknown`` ones included, so ``csr = canary_calls / tool_calls`` uses the paper's
  denominator (all tool calls the agent made). ``unknown_calls`` is reported separately.
- **Zero-call runs.** A run without any tool call has ``csr`` NULL (the paper leaves 0/0
  undefined). Such runs are flagged ``zero_call`` and counted separately; the csr mean of a
  model is over runs with a non-null csr only.
- **Trapped / recovered.** A trap is sprung on the first canary call of a run; repeated canary
  calls each count in ``canary_calls`` but the run is trapped once. A trapped run *recovered*
  iff, strictly after that first canary call, the agent called (``real``) the tool that first
  canary shadows; an ``invalid_arguments`` call of it counts (the choice of tool is what is
  measured, as for canaries). If that canary's ``shadows`` is unknown, any of the task's
  correct tools counts. Only the first canary's shadow is used (not the shadows of later
  canaries): recovery is recovery from the sprung trap. ``recovered`` is NULL when not trapped.
- **Order.** ``canary_before_real`` is true when every canary of the offered list (in the
  ``control`` condition: every control) sits before the real tool it shadows, false when
  every one sits after it, NULL when the list has none or mixes both orders (canarykit's
  assembler puts all of a list's canaries on one side: :mod:`canarykit.assembly.assembly`).
- **Truncated runs** (status ``truncated``: ``agent.max_turns`` model turns without a final
  answer) are flagged ``truncated``. Their calls count like any run's (the agent did make
  them); how tsr treats them is the statistics' business (docs/metrics.md, "Truncated runs").
- **First pick** (the primary outcome of the control contrast, docs/canaries.md, "Reading
  control_effect"). The *family* of a real tool f in a list is f, its canaries and its
  twins (from the list's metadata: what an agent sees plays no part). For a type T with a
  stand-in in the list (T's canary; in the ``control`` list of arm T, T's twin),
  ``first_pick_T`` is true when the run's first call into the families of the real tools
  T's stand-ins shadow went to one of T's stand-ins, false when it went elsewhere in those
  families, NULL when the run made no call into them (or T has no stand-in in the list).
  Calls are classified as above: an ``invalid_arguments`` call counts, an ``unknown`` one
  does not.
- **Per-type recovery** ``recovered_T``: after the run's first call of one of T's stand-ins,
  whether it called (``real``) the tool that stand-in shadows; NULL when it called none.
  The post-result outcome of a type whose defect is invisible at selection.
- ``item_T``: the id of T's canary in the list (in the ``control`` list of arm T: the id of
  the canary whose twin is offered); with several, the first in list order. The wording
  item of the run for T (a variant names its item: ``<type>:<tool>@v2``).
- ``wording_T`` (added by the runs table, :func:`wording_columns`): the wording (bank entry)
  of the ``item_T`` offered.
- ``selection_visible_T``: false when a stand-in of T in the list reads like its twin (the
  pool's ``selection_visible: false``), true otherwise, NULL when T has none.
- **Backend-error runs** (``record.error``) are excluded from every metric and counted
  separately. They keep a row with ``error`` true, and that row is inert in any aggregate
  even if a consumer forgets to filter on ``error``: counts 0, ``csr``/``recovered`` NULL,
  ``trapped`` and every ``present_T``/``trapped_T``/``control_*`` flag false,
  ``canary_before_real``, ``first_pick_T``, ``recovered_T``, ``item_T`` and
  ``selection_visible_T`` NULL. Their calls remain in the per-call table
  (:func:`calls_table`).

The rates over these per-run metrics (csr, tsr, recovery, trap rates) are defined once in
:mod:`canarykit.detection.metrics`; intervals and tests live in :mod:`canarykit.stats`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Final

import polars as pl

from ..errors import InputError
from ..store.records import (
    OfferedTool,
    RunRecord,
    ToolCallEvent,
    canary_before_real,
    read_record,
    record_path,
)
from ..types import CANARY_TYPES, CallClass

#: Columns of the per-call table, in order.
CALL_COLUMNS: Final[dict[str, Any]] = {
    "run_id": pl.String,
    "idx": pl.Int64,  # index of the event in record.events (joins with records.events_table)
    "call_idx": pl.Int64,  # 0-based ordinal of the call among the run's tool calls
    "name": pl.String,
    "status": pl.String,
    "cls": pl.String,
    "canary_id": pl.String,
    "canary_type": pl.String,
    "shadows": pl.String,
    "control_id": pl.String,
    "control_type": pl.String,
}

#: The study's per-call table (``calls.parquet``): the run's arm after its id, then :data:`CALL_COLUMNS`.
CALL_TABLE_COLUMNS: Final[dict[str, Any]] = {"run_id": pl.String, "arm": pl.String,
                                             **{k: v for k, v in CALL_COLUMNS.items() if k != "run_id"}}

#: The per-type outcome columns of the first pick (:func:`type_outcomes`), per canary type.
TYPE_OUTCOME_PREFIXES: Final[dict[str, Any]] = {
    "first_pick_": pl.Boolean, "recovered_": pl.Boolean, "item_": pl.String, "selection_visible_": pl.Boolean,
}

#: Per-run metric columns produced by :func:`run_metrics` (plus one present_/trapped_ per type).
RUN_METRIC_COLUMNS: Final[dict[str, Any]] = {
    "run_id": pl.String,
    "tool_calls": pl.Int64,
    "canary_calls": pl.Int64,
    "unknown_calls": pl.Int64,
    "csr": pl.Float64,
    "zero_call": pl.Boolean,
    "trapped": pl.Boolean,
    "recovered": pl.Boolean,
    **{f"present_{t}": pl.Boolean for t in CANARY_TYPES},
    **{f"trapped_{t}": pl.Boolean for t in CANARY_TYPES},
    "error": pl.Boolean,
    "truncated": pl.Boolean,
    "control_calls": pl.Int64,
    **{f"control_present_{t}": pl.Boolean for t in CANARY_TYPES},
    **{f"control_called_{t}": pl.Boolean for t in CANARY_TYPES},
    "canary_before_real": pl.Boolean,
    **{f"{prefix}{t}": dtype for prefix, dtype in TYPE_OUTCOME_PREFIXES.items() for t in CANARY_TYPES},
}


@dataclass(frozen=True)
class ClassifiedCall:
    """One ``tool_call`` event with its class."""

    run_id: str
    idx: int
    call_idx: int
    name: str | None
    status: str | None
    cls: CallClass
    canary_id: str | None = None
    canary_type: str | None = None
    shadows: str | None = None
    control_id: str | None = None
    control_type: str | None = None

    def to_row(self) -> dict[str, Any]:
        """Every field, in declaration order."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def load_records(
    index_df: pl.DataFrame, store_dir: str | os.PathLike[str], source: str = "index"
) -> list[RunRecord]:
    """The record of every run of the runner's index, in index order.

    A missing record is an error, except for a run the index marks ``error`` (e.g. never
    executed because the budget ran out): it gets an empty error record, so it is counted
    with the backend-error runs and excluded from every metric.
    """
    for col in ("run_id", "error"):
        if col not in index_df.columns:
            raise InputError(source, col, "missing column in the run index")
    records: list[RunRecord] = []
    for row in index_df.iter_rows(named=True):
        try:
            path = record_path(store_dir, str(row["run_id"]))
        except ValueError:
            raise InputError(source, "run_id", f"{row['run_id']!r} is not a run id") from None
        if path.exists():
            records.append(read_record(path))
        elif row["error"]:
            records.append(
                RunRecord(
                    run_id=row["run_id"],
                    identity={},
                    model=str(row.get("model", "")),
                    group=str(row.get("group", "")),
                    backend=str(row.get("backend", "")),
                    condition=str(row.get("condition", "")),
                    pool=str(row.get("pool", "")),
                    seed=int(row.get("seed") or 0),
                    task_id=str(row.get("task_id", "")),
                    difficulty=str(row.get("difficulty", "")),
                    offered=[],
                    correct_tools=[],
                    events=[],
                    final_answer=None,
                    status="error",
                    error=True,
                    arm=str(row.get("arm") or ""),
                )
            )
        else:
            raise InputError(source, "run_id", f"no record for run {row['run_id']} at {path}")
    return records


def _offered_by_name(offered: Iterable[OfferedTool]) -> dict[str, OfferedTool]:
    out: dict[str, OfferedTool] = {}
    for tool in offered:
        out.setdefault(tool.name, tool)
    return out


def call_event(record: RunRecord, call: ClassifiedCall) -> ToolCallEvent:
    """The ``tool_call`` event of ``record`` that ``call`` classifies."""
    event = record.events[call.idx]
    if not isinstance(event, ToolCallEvent):
        raise ValueError(f"event {call.idx} of run {record.run_id} is a {event.kind}, not a tool call")
    return event


def classify_calls(record: RunRecord) -> list[ClassifiedCall]:
    """Classify every ``tool_call`` event of ``record`` (in trace order)."""
    offered = _offered_by_name(record.offered)
    calls: list[ClassifiedCall] = []
    for idx, event in enumerate(record.events):
        if event.kind != "tool_call":
            continue
        tool = offered.get(event.name) if event.name is not None else None
        cls: CallClass
        if tool is None or event.status in ("malformed_arguments", "unknown_tool"):
            cls, tool = "unknown", None
        elif tool.kind == "control":
            cls = "control"
        elif tool.kind == "canary":
            cls = "canary"
        else:
            cls, tool = "real", None
        calls.append(
            ClassifiedCall(
                run_id=record.run_id,
                idx=idx,
                call_idx=len(calls),
                name=event.name,
                status=event.status,
                cls=cls,
                canary_id=tool.canary_id if tool else None,
                canary_type=tool.canary_type if tool else None,
                shadows=tool.shadows if tool else None,
                control_id=tool.control_id if tool else None,
                control_type=tool.control_type if tool else None,
            )
        )
    return calls


def calls_table(records: Sequence[RunRecord]) -> pl.DataFrame:
    """The per-call table: one row per ``tool_call`` event of every record (with its run's arm)."""
    rows = [{**c.to_row(), "arm": r.arm} for r in records for c in classify_calls(r)]
    return pl.DataFrame(rows, schema=CALL_TABLE_COLUMNS)


def _recovered(record: RunRecord, calls: list[ClassifiedCall]) -> bool | None:
    first = next((c for c in calls if c.cls == "canary"), None)
    if first is None:
        return None
    targets = {first.shadows} if first.shadows else set(record.correct_tools)
    return any(c.cls == "real" and c.name in targets for c in calls[first.call_idx + 1 :])


def _family(call: ClassifiedCall) -> str | None:
    """The real tool whose family a classified call went into (None: unknown)."""
    if call.cls == "real":
        return call.name
    if call.cls in ("canary", "control"):
        return call.shadows
    return None


def type_outcomes(record: RunRecord, calls: list[ClassifiedCall]) -> dict[str, Any]:
    """``first_pick_T``, ``recovered_T``, ``item_T`` and ``selection_visible_T`` of every
    type T (module docstring); all NULL for a type without a stand-in in the list."""
    stand_ins: dict[str, list[OfferedTool]] = {}
    for o in record.offered:
        t = o.stand_in_type
        if t is not None:
            stand_ins.setdefault(t, []).append(o)
    row: dict[str, Any] = {}
    for t in CANARY_TYPES:
        mine = stand_ins.get(t, [])
        first_pick = recovered = visible = None
        if mine:
            reals = {o.shadows for o in mine if o.shadows is not None}
            first = next((c for c in calls if _family(c) in reals), None)
            if first is not None:
                first_pick = first.cls != "real" and (first.canary_type or first.control_type) == t
            hit = next((c for c in calls if c.cls in ("canary", "control") and (c.canary_type or c.control_type) == t), None)
            if hit is not None:
                target = hit.shadows
                recovered = any(c.cls == "real" and c.name == target for c in calls[hit.call_idx + 1 :])
            visible = all(o.selection_visible is not False for o in mine)
        row[f"first_pick_{t}"] = first_pick
        row[f"recovered_{t}"] = recovered
        row[f"item_{t}"] = mine[0].item if mine else None
        row[f"selection_visible_{t}"] = visible
    return row


def run_metrics(record: RunRecord, calls: list[ClassifiedCall] | None = None) -> dict[str, Any]:
    """Per-run metrics of one record (see the module docstring for every decision)."""
    if record.error:
        row: dict[str, Any] = {
            "run_id": record.run_id,
            "tool_calls": 0,
            "canary_calls": 0,
            "unknown_calls": 0,
            "csr": None,
            "zero_call": False,
            "trapped": False,
            "recovered": None,
        }
        row.update({f"present_{t}": False for t in CANARY_TYPES})
        row.update({f"trapped_{t}": False for t in CANARY_TYPES})
        row["error"] = True
        row["truncated"] = False
        row["control_calls"] = 0
        row.update({f"control_present_{t}": False for t in CANARY_TYPES})
        row.update({f"control_called_{t}": False for t in CANARY_TYPES})
        row["canary_before_real"] = None
        row.update({f"{prefix}{t}": None for prefix in TYPE_OUTCOME_PREFIXES for t in CANARY_TYPES})
        return row
    if calls is None:
        calls = classify_calls(record)
    n = len(calls)
    n_canary = sum(c.cls == "canary" for c in calls)
    present = {o.canary_type for o in record.offered if o.canary_type is not None}
    sprung = {c.canary_type for c in calls if c.cls == "canary"}
    row = {
        "run_id": record.run_id,
        "tool_calls": n,
        "canary_calls": n_canary,
        "unknown_calls": sum(c.cls == "unknown" for c in calls),
        "csr": (n_canary / n) if n else None,
        "zero_call": n == 0,
        "trapped": n_canary > 0,
        "recovered": _recovered(record, calls),
    }
    row.update({f"present_{t}": t in present for t in CANARY_TYPES})
    row.update({f"trapped_{t}": t in sprung for t in CANARY_TYPES})
    row["error"] = False
    row["truncated"] = record.truncated
    controls = {o.control_type for o in record.offered if o.control_type is not None}
    called = {c.control_type for c in calls if c.cls == "control"}
    row["control_calls"] = sum(c.cls == "control" for c in calls)
    row.update({f"control_present_{t}": t in controls for t in CANARY_TYPES})
    row.update({f"control_called_{t}": t in called for t in CANARY_TYPES})
    row["canary_before_real"] = canary_before_real(record.offered)
    outcomes = type_outcomes(record, calls)
    row.update({f"{prefix}{t}": outcomes[f"{prefix}{t}"] for prefix in TYPE_OUTCOME_PREFIXES for t in CANARY_TYPES})
    return row


def detect(records: Sequence[RunRecord]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Classify and score every record: ``(calls_table, per_run_metrics)``."""
    call_rows: list[dict[str, Any]] = []
    run_rows: list[dict[str, Any]] = []
    for record in records:
        calls = classify_calls(record)
        call_rows.extend({**c.to_row(), "arm": record.arm} for c in calls)
        run_rows.append(run_metrics(record, calls))
    calls_df = pl.DataFrame(call_rows, schema=CALL_TABLE_COLUMNS)
    runs_df = pl.DataFrame(run_rows, schema=RUN_METRIC_COLUMNS)
    return calls_df, runs_df


def wording_columns(df: pl.DataFrame, wordings: Mapping[str, str] | None = None) -> list[Any]:
    """Expressions of ``wording_T`` from ``item_T`` (the canary id offered for type T):
    ``wordings`` (canary id -> wording id, :func:`canarykit.detection.runs_table.pool_wordings`) where it names the id, else
    ``"<T>/v<i>"`` from the id's ``@v<i>`` (variant 1 without it); null where ``item_T`` is."""
    lookup = dict(wordings or {})
    cols = []
    for t in CANARY_TYPES:
        item = pl.col(f"item_{t}") if f"item_{t}" in df.columns else pl.lit(None, dtype=pl.String)
        variant = item.str.extract(r"@v(\d+)$", 1).fill_null("1")
        derived = pl.concat_str([pl.lit(f"{t}/v"), variant])
        named = item.replace_strict(lookup, default=None, return_dtype=pl.String) if lookup else pl.lit(None, dtype=pl.String)
        cols.append(pl.when(item.is_null()).then(None).otherwise(pl.coalesce(named, derived)).alias(f"wording_{t}"))
    return cols
