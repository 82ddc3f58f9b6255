"""The per-run table (``results/runs.parquet``): its columns, joined and validated.

:func:`build_runs_table` joins the runner's index (current config labels: ``model``,
``group``, ``backend``), the trap detector's per-run metrics (:mod:`canarykit.detection.detect`) and the
judges' verdicts. Columns, in order: the :class:`canarykit.store.schemas.RunsTable` interface
(``model, group, condition, pool, seed, task_id, difficulty, tool_calls, canary_calls, csr,
trapped, recovered, success, error``, then ``present_T`` and ``trapped_T`` for the six types)
and the extras ``run_id, arm, backend, unknown_calls, zero_call, success_cross, judge_status,
truncated, control_calls, canary_before_real``, ``control_present_T``/``control_called_T``
and ``first_pick_T``/``recovered_T``/``item_T``/``selection_visible_T`` for the six types, then
``wording_T`` for the six types (``arm``: the type whose twin a ``control`` run was offered, ""
otherwise; the first-pick columns: :mod:`canarykit.detection.detect`; ``wording_T``: the
wording, i.e. the bank entry id ``"<type>/<nn>"`` of the pool record, of the type-T canary or
twin offered, null when none; from a pool whose records carry no ``wording``, ``"<type>/v<i>"``
from the canary's ``variant``, :func:`~canarykit.detection.detect.wording_columns`; ``judge_status``: ``ok | unparseable | error`` from the primary judge,
``skipped`` for a backend-error run; ``truncated``: the run reached ``agent.max_turns`` without
a final answer, never null, false for backend-error runs; the control and order columns: see
:mod:`canarykit.detection.detect` and docs/canaries.md, "Weakness or lure: controls and position").

The workflow builds it from the per-model detector and judge outputs
(:func:`canarykit.study.pipeline.build_runs`); :func:`canarykit.judging.detect_and_judge` runs
detection and judging of a whole study in one call. The DVC metrics summary of the table is
:func:`canarykit.detection.metrics.metrics_json`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Final

import polars as pl

from ..errors import InputError
from ..store.jsonio import read_json_input
from ..store.records import RunRecord
from ..store.schemas import (
    RunIndexTable,
    RunsTable,
    VerdictsTable,
    check_runs_type_columns,
    validate,
)
from ..tasks.suite import task_map
from ..types import CANARY_TYPES
from .detect import TYPE_OUTCOME_PREFIXES, detect, load_records, wording_columns

INTERFACE_COLUMNS: Final[tuple[str, ...]] = (
    "model",
    "group",
    "condition",
    "pool",
    "seed",
    "task_id",
    "difficulty",
    "tool_calls",
    "canary_calls",
    "csr",
    "trapped",
    "recovered",
    "success",
    "error",
    *(f"present_{t}" for t in CANARY_TYPES),
    *(f"trapped_{t}" for t in CANARY_TYPES),
)
EXTRA_COLUMNS: Final[tuple[str, ...]] = (
    "run_id",
    "arm",
    "backend",
    "unknown_calls",
    "zero_call",
    "success_cross",
    "judge_status",
    "truncated",
    "control_calls",
    "canary_before_real",
    *(f"control_present_{t}" for t in CANARY_TYPES),
    *(f"control_called_{t}" for t in CANARY_TYPES),
    *(f"{prefix}{t}" for prefix in TYPE_OUTCOME_PREFIXES for t in CANARY_TYPES),
    *(f"wording_{t}" for t in CANARY_TYPES),
)
RUNS_COLUMNS: Final[tuple[str, ...]] = INTERFACE_COLUMNS + EXTRA_COLUMNS

INDEX_COLUMNS: Final[tuple[str, ...]] = (
    "model",
    "group",
    "backend",
    "condition",
    "pool",
    "seed",
    "task_id",
    "difficulty",
    "run_id",
    "error",
)


def pool_wordings(pools: Iterable[str | os.PathLike[str]]) -> dict[str, str]:
    """Canary id -> wording id over the records of pool files (canaries and twins: a twin
    carries its canary's ``wording``; a record without one gets ``"<type>/v<variant>"``). A
    file that cannot be read is an :class:`InputError` naming it."""
    out: dict[str, str] = {}
    for path in pools:
        doc = read_json_input(path, str(path))
        records = doc if isinstance(doc, list) else [*doc.get("canaries", []), *doc.get("controls", [])]
        for rec in records:
            if not isinstance(rec, dict) or not isinstance(rec.get("id"), str) or "control_of" in rec:
                continue
            wording = rec.get("wording")
            out[rec["id"]] = (str(wording) if isinstance(wording, str) and wording
                              else f"{rec.get('type')}/v{int(rec.get('variant') or 1)}")
    return out


def read_index(index_path: str | os.PathLike[str]) -> pl.DataFrame:
    """The runner's index (``results/runs/index.parquet``), checked for the columns used here
    (an index written before arms reads as arm ``""``)."""
    try:
        df = pl.read_parquet(Path(index_path))
    except (OSError, pl.exceptions.ComputeError) as exc:
        raise InputError(str(index_path), "<file>", f"cannot read the run index: {exc}") from exc
    if "arm" not in df.columns:
        df = df.with_columns(pl.lit("", dtype=pl.String).alias("arm"))
    for col in INDEX_COLUMNS:
        if col not in df.columns:
            raise InputError(str(index_path), col, "missing column in the run index")
    return validate(df, RunIndexTable, str(index_path))


def _verdicts(v: pl.DataFrame | str | os.PathLike[str] | None, source: str) -> pl.DataFrame | None:
    if v is None:
        return None
    df = v if isinstance(v, pl.DataFrame) else pl.read_parquet(Path(v))
    for col in ("run_id", "success", "status"):
        if col not in df.columns:
            raise InputError(source, col, "missing column in the verdicts table")
    return validate(df, VerdictsTable, source)


def assemble_runs_table(
    index_df: pl.DataFrame,
    records: Sequence[RunRecord],
    primary: pl.DataFrame,
    cross: pl.DataFrame | None = None,
    source: str = "runs table",
    metrics: pl.DataFrame | None = None,
    wordings: Mapping[str, str] | None = None,
) -> pl.DataFrame:
    """Join index, detector metrics and verdicts; validate; return the columns in order.

    ``metrics`` is :func:`~canarykit.detection.detect.detect`'s per-run table when the caller has it;
    ``wordings`` maps canary ids to their pool records' wording ids (:func:`pool_wordings`).
    """
    if metrics is None:
        _, metrics = detect(records)
    idx = index_df.select(
        pl.col("model").cast(pl.String),
        pl.col("group").cast(pl.String),
        pl.col("backend").cast(pl.String),
        pl.col("condition").cast(pl.String),
        pl.col("pool").cast(pl.String),
        pl.col("seed").cast(pl.Int64),
        pl.col("task_id").cast(pl.String),
        pl.col("difficulty").cast(pl.String),
        pl.col("run_id").cast(pl.String),
        (pl.col("arm").cast(pl.String).fill_null("") if "arm" in index_df.columns else pl.lit("", dtype=pl.String)).alias("arm"),
    )
    prim = primary.select(
        "run_id",
        pl.col("success").cast(pl.Boolean),
        pl.col("status").cast(pl.String).alias("judge_status"),
    )
    missing = idx.join(prim, on="run_id", how="anti")
    if missing.height:
        raise InputError(
            source,
            "success",
            f"no primary verdict for run {missing['run_id'][0]} ({missing.height} runs)",
        )
    df = idx.join(metrics, on="run_id", how="left", maintain_order="left").join(
        prim, on="run_id", how="left", maintain_order="left"
    )
    if cross is not None:
        df = df.join(
            cross.select("run_id", pl.col("success").cast(pl.Boolean).alias("success_cross")),
            on="run_id",
            how="left",
            maintain_order="left",
        )
    else:
        df = df.with_columns(pl.lit(None, dtype=pl.Boolean).alias("success_cross"))
    df = df.with_columns(
        # backend-error runs are never judged: no verdict counts for them
        pl.when(pl.col("error")).then(None).otherwise(pl.col("success")).alias("success"),
        pl.when(pl.col("error"))
        .then(None)
        .otherwise(pl.col("success_cross"))
        .alias("success_cross"),
        pl.when(pl.col("error"))
        .then(pl.lit("skipped"))
        .otherwise(pl.col("judge_status"))
        .alias("judge_status"),
    )
    df = df.with_columns(wording_columns(df, wordings)).select(RUNS_COLUMNS)
    df = validate(df, RunsTable, source)
    check_runs_type_columns(df, source)
    return df


def build_runs_table(
    index_path: str | os.PathLike[str],
    store_dir: str | os.PathLike[str],
    tasks_path: str | os.PathLike[str] | None,
    primary_verdicts: pl.DataFrame | str | os.PathLike[str],
    cross_verdicts: pl.DataFrame | str | os.PathLike[str] | None = None,
    source: str = "results/runs.parquet",
) -> pl.DataFrame:
    """The validated per-run table from the index, the record store and the verdicts.

    ``tasks_path`` (optional) checks that every run's task is in the suite.
    """
    index_df = read_index(index_path)
    records = load_records(index_df, store_dir, str(index_path))
    if tasks_path is not None:
        known = task_map(tasks_path)
        unknown = index_df.filter(~pl.col("task_id").is_in(list(known)) & ~pl.col("error"))
        if unknown.height:
            raise InputError(
                str(index_path), "task_id", f"task {unknown['task_id'][0]!r} is not in {tasks_path}"
            )
    primary = _verdicts(primary_verdicts, "primary verdicts")
    assert primary is not None
    return assemble_runs_table(
        index_df, records, primary, _verdicts(cross_verdicts, "cross verdicts"), source
    )
