"""Data contracts: one pandera (polars) model per intermediate table.

Every table is validated where it is written and where it is read, with ``lazy=True`` so a
failure lists every broken column and row at once (:func:`validate`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import pandera.polars as pa
import polars as pl
from pandera.errors import SchemaError, SchemaErrors

from ..errors import InputError
from ..types import (
    CALL_CLASSES,
    CALL_STATUSES,
    CANARY_TYPES,
    CONDITIONS,
    DIFFICULTIES,
    DOSE_KINDS,
    LEGACY_STATUSES,
    POOLS,
    RUN_STATUSES,
    VERDICT_STATUSES,
)

_TYPES = list(CANARY_TYPES)


class ToolsTable(pa.DataFrameModel):
    """The real tools of the environment (one row per tool)."""

    server: str = pa.Field(isin=["weather", "math", "file", "search", "database"])
    name: str = pa.Field(unique=True, str_matches=r"^[a-zA-Z0-9_-]{1,64}$")
    description: str = pa.Field(str_length={"min_value": 1})
    input_schema: str = pa.Field(description="canonical JSON of the inputSchema")

    class Config:
        strict = False


class CanariesTable(pa.DataFrameModel):
    """One row per canary of one pool."""

    id: str = pa.Field(unique=True)
    type: str = pa.Field(isin=_TYPES)
    shadows: str
    name: str = pa.Field(unique=True, str_matches=r"^[a-zA-Z0-9_-]{1,64}$")
    description: str = pa.Field(str_length={"min_value": 1})
    input_schema: str
    pool: str = pa.Field(isin=list(POOLS))

    class Config:
        strict = False


class TasksTable(pa.DataFrameModel):
    """One row per task of the suite."""

    id: str = pa.Field(unique=True)
    difficulty: str = pa.Field(isin=list(DIFFICULTIES))
    prompt: str = pa.Field(str_length={"min_value": 1})
    n_steps: int = pa.Field(ge=0, description="steps of the reference plan (0: the task has none)")

    class Config:
        strict = False


class AssemblyTable(pa.DataFrameModel):
    """One row per offered tool per (pool, condition, seed, task, arm), in the order offered."""

    pool: str = pa.Field(isin=list(POOLS))
    condition: str = pa.Field(isin=list(CONDITIONS))
    seed: int = pa.Field(ge=0)
    task_id: str
    #: The type whose twin a ``control`` list offers (one list per offered type); "" in the
    #: other conditions. Optional: tables written before arms lack it (read as "").
    arm: Optional[str]  # noqa: UP045
    position: int = pa.Field(ge=0)
    tool_name: str
    canary_id: str = pa.Field(nullable=True)
    canary_type: str = pa.Field(nullable=True, isin=[*_TYPES, "distractor"])
    shadows: str = pa.Field(nullable=True)
    tool_list_hash: str = pa.Field(str_length={"min_value": 16})
    #: A matched-surface control in its canary's slot (condition ``control`` only): its id,
    #: the type of the canary it controls and its behaviour (canonical JSON; a granularity
    #: control's carries the task's case). Optional: tables written before controls lack them.
    control_id: Optional[str] = pa.Field(nullable=True)  # noqa: UP045
    control_type: Optional[str] = pa.Field(nullable=True, isin=_TYPES)  # noqa: UP045
    behaviour: Optional[str] = pa.Field(nullable=True)  # noqa: UP045
    #: False for a canary or twin whose canary and twin read alike (the defect cannot be seen
    #: before calling), true for every other stand-in, null for a real tool. Optional.
    selection_visible: Optional[bool] = pa.Field(nullable=True)  # noqa: UP045

    class Config:
        strict = False

    @pa.dataframe_check
    def baseline_has_no_canary(cls, data: Any) -> Any:  # type: ignore[misc]  # noqa: N805
        return data.lazyframe.select(
            ~((pl.col("condition") == "baseline") & pl.col("canary_id").is_not_null())
        )

    @pa.dataframe_check
    def control_lists_have_an_arm(cls, data: Any) -> Any:  # type: ignore[misc]  # noqa: N805
        """A control list names its arm, and every twin it offers is of the arm's type."""
        if "arm" not in data.lazyframe.collect_schema().names():
            return data.lazyframe.select(pl.col("condition") != "control")
        ctl_type = pl.col("control_type") if "control_type" in data.lazyframe.collect_schema().names() else pl.lit(None)
        return data.lazyframe.select(
            (pl.col("condition") != "control")
            | ((pl.col("arm") != "") & (ctl_type.is_null() | (ctl_type == pl.col("arm"))))
        )

    @pa.dataframe_check
    def controls_only_in_the_control_condition(cls, data: Any) -> Any:  # type: ignore[misc]  # noqa: N805
        """Twins are offered in ``control`` lists and in ``dose`` lists of a ``twin:T`` kind."""
        if "control_id" not in data.lazyframe.collect_schema().names():
            return data.lazyframe.select(pl.lit(True))
        return data.lazyframe.select(
            pl.col("condition").is_in(["control", "dose"]) | pl.col("control_id").is_null()
        )


class RunsTable(pa.DataFrameModel):
    """The per-run table (``results/runs.parquet``): one row per (model, condition, pool, seed,
    task, arm).

    Other tools rely on these column names. Per canary type T there are two more columns,
    ``present_T`` and ``trapped_T`` (checked by :func:`check_runs_type_columns`).

    Optional extras (run tables from other tools may lack them; canarykit writes them):
    ``arm`` (the type whose twin a ``control`` run was offered; "" otherwise; absent: "");
    ``first_pick_T``/``item_T``/``recovered_T``/``selection_visible_T`` per type (see
    :mod:`canarykit.detection.detect`); ``wording_T`` per type (the wording id of the type-T
    canary or twin offered, String, null when none: :mod:`canarykit.detection.runs_table`); ``truncated``; ``control_calls`` (calls of matched-surface controls, never counted in
    ``canary_calls``) with ``control_present_T``/``control_called_T`` per type (the control
    of a type-T canary was offered / called: only in the ``control`` condition); and
    ``canary_before_real`` (every canary of the list, or in the ``control`` condition every
    control, sits before the real tool it shadows: true; every one after it: false; null
    when the list has none, or mixes both orders, which canarykit's assembler never does).
    """

    model: str
    group: str
    condition: str = pa.Field(isin=list(CONDITIONS))
    pool: str = pa.Field(isin=list(POOLS))
    seed: int = pa.Field(ge=0)
    task_id: str
    difficulty: str = pa.Field(isin=list(DIFFICULTIES))
    tool_calls: int = pa.Field(ge=0)
    canary_calls: int = pa.Field(ge=0)
    csr: float = pa.Field(nullable=True, in_range={"min_value": 0.0, "max_value": 1.0})
    trapped: bool
    recovered: bool = pa.Field(nullable=True)
    success: bool = pa.Field(nullable=True)
    error: bool
    #: Extra column (after the interface columns): the run reached agent.max_turns without a
    #: final answer. Optional for run tables from other tools; never null when present.
    truncated: Optional[bool] = pa.Field(nullable=False)  # noqa: UP045
    arm: Optional[str]  # noqa: UP045
    control_calls: Optional[int] = pa.Field(ge=0)  # noqa: UP045
    canary_before_real: Optional[bool] = pa.Field(nullable=True)  # noqa: UP045
    #: ``wording_<T>`` per canary type (optional): the wording (bank entry id) offered, null when none.
    wording: Optional[str] = pa.Field(nullable=True, alias="^wording_", regex=True)  # noqa: UP045

    class Config:
        strict = False
        # Run tables from other tools may carry Int32 counts or Float32 rates: accept any
        # type that casts losslessly to the contract's.
        coerce = True

    @pa.dataframe_check
    def canary_calls_within_calls(cls, data: Any) -> Any:  # type: ignore[misc]  # noqa: N805
        return data.lazyframe.select(pl.col("canary_calls") <= pl.col("tool_calls"))

    @pa.dataframe_check
    def recovered_only_when_trapped(cls, data: Any) -> Any:  # type: ignore[misc]  # noqa: N805
        return data.lazyframe.select(pl.col("trapped") | pl.col("recovered").is_null())

    @pa.dataframe_check
    def error_runs_are_not_truncated(cls, data: Any) -> Any:  # type: ignore[misc]  # noqa: N805
        if "truncated" not in data.lazyframe.collect_schema().names():
            return data.lazyframe.select(pl.lit(True))
        return data.lazyframe.select(~(pl.col("error") & pl.col("truncated")))

    @pa.dataframe_check
    def calls_add_up(cls, data: Any) -> Any:  # type: ignore[misc]  # noqa: N805
        """Canary and control calls are disjoint parts of the tool calls."""
        if "control_calls" not in data.lazyframe.collect_schema().names():
            return data.lazyframe.select(pl.lit(True))
        return data.lazyframe.select(pl.col("canary_calls") + pl.col("control_calls") <= pl.col("tool_calls"))


class RunIndexTable(pa.DataFrameModel):
    """The runner's index (``results/runs/index.parquet``): one row per run of the grid."""

    model: str
    group: str
    backend: str = pa.Field(isin=["reference", "litellm", "ollama", "local"])
    provider: str = pa.Field(nullable=True)
    condition: str = pa.Field(isin=list(CONDITIONS))
    pool: str = pa.Field(isin=list(POOLS))
    seed: int = pa.Field(ge=0)
    task_id: str
    arm: Optional[str]  # noqa: UP045 - absent in indexes written before arms: ""
    difficulty: str = pa.Field(isin=list(DIFFICULTIES))
    run_id: str = pa.Field(unique=True)
    # and the names earlier versions gave (turn_limit: truncated, read as truncated)
    status: str = pa.Field(isin=[*RUN_STATUSES, *LEGACY_STATUSES])
    error: bool
    # (indexes written before issue 29 also have ``executed``: history, now in the job summary log)

    class Config:
        strict = False

    @pa.dataframe_check
    def error_iff_error_status(cls, data: Any) -> Any:  # type: ignore[misc]  # noqa: N805
        return data.lazyframe.select(pl.col("error") == (pl.col("status") == "error"))


class CallsTable(pa.DataFrameModel):
    """The detector's verdict on every tool call (``results/judge/calls.parquet``)."""

    run_id: str
    idx: int = pa.Field(ge=0)
    call_idx: int = pa.Field(ge=0)
    name: str = pa.Field(nullable=True)
    status: str = pa.Field(isin=list(CALL_STATUSES))
    cls: str = pa.Field(isin=list(CALL_CLASSES))
    canary_id: str = pa.Field(nullable=True)
    canary_type: str = pa.Field(nullable=True, isin=[*_TYPES, "distractor"])
    shadows: str = pa.Field(nullable=True)
    control_id: Optional[str] = pa.Field(nullable=True)  # noqa: UP045
    control_type: Optional[str] = pa.Field(nullable=True, isin=_TYPES)  # noqa: UP045
    arm: Optional[str]  # noqa: UP045

    class Config:
        strict = False

    @pa.dataframe_check
    def canary_calls_are_typed(cls, data: Any) -> Any:  # type: ignore[misc]  # noqa: N805
        return data.lazyframe.select((pl.col("cls") != "canary") | pl.col("canary_type").is_not_null())

    @pa.dataframe_check
    def control_calls_are_typed(cls, data: Any) -> Any:  # type: ignore[misc]  # noqa: N805
        if "control_type" not in data.lazyframe.collect_schema().names():
            return data.lazyframe.select(pl.lit(True))
        return data.lazyframe.select(
            (pl.col("cls") != "control") | (pl.col("control_type").is_not_null() & pl.col("canary_type").is_null())
        )


class VerdictsTable(pa.DataFrameModel):
    """One judge's verdict per run (``results/judge/verdicts/<primary|cross>.parquet``)."""

    run_id: str = pa.Field(unique=True)
    judge: Optional[str]  # noqa: UP045 - pandera reads Optional as "column may be absent"
    success: bool = pa.Field(nullable=True)
    status: str = pa.Field(isin=[*VERDICT_STATUSES, "skipped"])  # skipped: a backend-error run, not judged
    reason: Optional[str] = pa.Field(nullable=True)  # noqa: UP045
    attempts: Optional[int] = pa.Field(ge=0)  # noqa: UP045

    class Config:
        strict = False

    @pa.dataframe_check
    def only_ok_verdicts_decide(cls, data: Any) -> Any:  # type: ignore[misc]  # noqa: N805
        return data.lazyframe.select((pl.col("status") == "ok") | pl.col("success").is_null())


RUNS_KEY = ["model", "condition", "pool", "seed", "task_id", "arm"]


#: Optional per-type columns of the control condition (all six or none).
CONTROL_TYPE_PREFIXES: tuple[str, ...] = ("control_present_", "control_called_")


def check_runs_type_columns(df: pl.DataFrame, source: str) -> None:
    """The per-type flag columns must all exist and be boolean (the control flags
    ``control_present_T``/``control_called_T`` are optional, but all or none)."""
    for t in CANARY_TYPES:
        for prefix in ("present_", "trapped_"):
            col = prefix + t
            if col not in df.columns:
                raise InputError(source, col, "missing column (one per canary type is required)")
            if df.schema[col] != pl.Boolean:
                raise InputError(source, col, f"expected Boolean, got {df.schema[col]}")
    control_cols = [p + t for t in CANARY_TYPES for p in CONTROL_TYPE_PREFIXES]
    have = [c for c in control_cols if c in df.columns]
    if have:
        for col in control_cols:
            if col not in df.columns:
                raise InputError(source, col, "missing column (the control flags come one per canary type, all or none)")
            if df.schema[col] != pl.Boolean:
                raise InputError(source, col, f"expected Boolean, got {df.schema[col]}")
    key = [c for c in RUNS_KEY if c in df.columns]  # a table without ``arm``: every arm is ""
    dup = df.group_by(key).len().filter(pl.col("len") > 1)
    if dup.height:
        first = dup.row(0, named=True)
        raise InputError(source, ",".join(key), f"duplicate run key {first}")


class DoseRunsTable(pa.DataFrameModel):
    """The dose study's runs (``dose_runs.parquet``; :mod:`canarykit.stats._dose`): one row per
    (model, task, seed, kind, dose). ``kind``: a canary type, ``twin:<type>`` or ``distractor``; ``dose``: k, the
    look-alikes of the task's first needed real tool; ``first_pick``: the run's first call into
    that tool's family went to a look-alike (null: no call into the family)."""

    model: str
    task_id: str
    seed: int = pa.Field(ge=0)
    kind: str = pa.Field(isin=list(DOSE_KINDS))
    dose: int = pa.Field(ge=0, le=8)
    first_pick: bool = pa.Field(nullable=True)
    trapped: bool
    success: bool = pa.Field(nullable=True)
    truncated: bool
    error: bool

    class Config:
        strict = False
        coerce = True

    @pa.dataframe_check
    def no_look_alike_at_dose_zero(cls, data: Any) -> Any:  # type: ignore[misc]  # noqa: N805
        """A list without look-alikes cannot be trapped."""
        return data.lazyframe.select((pl.col("dose") > 0) | (~pl.col("trapped") & (pl.col("first_pick").is_null() | ~pl.col("first_pick"))))


def read_table(path: str | Path, missing: str) -> pl.DataFrame:
    """A parquet table given as input: :class:`InputError` naming the file when it is absent
    (with ``missing`` as the message) or unreadable."""
    p = Path(path)
    if not p.is_file():
        raise InputError(str(p), "-", missing)
    try:
        return pl.read_parquet(p)
    except Exception as exc:  # polars raises several error types for a broken file
        raise InputError(str(p), "-", f"not a readable parquet file: {exc}") from exc


def validate(df: pl.DataFrame, model: type[pa.DataFrameModel], source: str | Path) -> pl.DataFrame:
    """Validate ``df`` lazily; on failure raise :class:`InputError` naming the source and fields.

    Missing required columns are reported first, all at once: the cross-column checks
    cannot run without them (polars would raise a bare ColumnNotFoundError).
    """
    required = [name for name, col in model.to_schema().columns.items() if col.required]
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise InputError(
            str(source), ", ".join(missing),
            f"missing column{'s' if len(missing) > 1 else ''} of the {model.__name__} contract",
        )
    try:
        return model.validate(df, lazy=True)
    except SchemaErrors as exc:
        cases = exc.failure_cases
        fields: list[str] = []
        lines: list[str] = []
        try:
            rows = cases.head(20).to_dicts() if hasattr(cases, "to_dicts") else []
        except Exception:  # pragma: no cover - defensive
            rows = []
        for row in rows:
            col = str(row.get("column") or row.get("schema_context") or "?")
            if col not in fields:
                fields.append(col)
            lines.append(f"  {col}: {row.get('check')} failed for {row.get('failure_case')!r}")
        detail = "\n".join(lines) if lines else str(exc)
        raise InputError(str(source), ", ".join(fields) or model.__name__, f"{model.__name__} validation failed:\n{detail}") from exc
    except SchemaError as exc:  # pragma: no cover - lazy=True raises SchemaErrors
        raise InputError(str(source), model.__name__, str(exc)) from exc
