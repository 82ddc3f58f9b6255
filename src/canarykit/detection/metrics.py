"""The study's rates, defined once: what each averages per run, and over which runs.

Every rate is the mean of a per-run value over the runs it is defined over; a backend-error
run is never one of them (:meth:`Rate.per_run`). The statistics (:mod:`canarykit.stats`:
intervals, tests, tables, figure data) read these definitions as the per-run arrays of a
cell, and the DVC metrics (:func:`metrics_json`, ``results/metrics/``) as group means
(:func:`rate_by`), so the two can never disagree on what a rate is.

- **csr**: the run's csr, over runs with one (a zero-call run has no csr).
- **tsr**: the verdict (``success``), over judged runs; a run cut off by the turn limit
  (``truncated``) is left out (:data:`TSR`, the headline), counted as a failure
  (:data:`TSR_TRUNCATED_AS_FAILURE`) or counted as judged (:data:`TSR_JUDGED`, the DVC
  metrics). An unparseable verdict (null) counts neither as success nor as failure.
- **recovery**: ``recovered``, over trapped runs; a trapped run whose recovery is unknown
  counts as not recovered.
- **trap rate** of type T (:func:`trap_rate`): ``trapped_T``, over runs offered T that made a
  tool call; :data:`TRAPPED` pools the types (runs offered any canary).
- **control rate** of type T (:func:`control_rate`): ``control_called_T``, over runs offered
  the type-T twin that made a tool call (the trap rate's counterpart).
- **first-pick rate** of type T (:func:`first_pick_rate`, the primary outcome of the control
  contrast): ``first_pick_T``, over runs whose calls went into the families of the real tools
  T's stand-ins shadow (:mod:`canarykit.detection.detect`): the share whose first such call went to
  T's stand-in (its canary; in the ``control`` list of arm T, its twin). A run that never
  called into those families has no first pick, exactly as a zero-call run has no csr.
- **recovery after call** of type T (:func:`recovery_after_call_rate`): ``recovered_T``,
  over runs that called one of T's stand-ins: the share that then called the real tool it
  shadows (the outcome of a type whose defect is invisible at selection).

The group functions (:func:`csr_by`, :func:`tsr_by`, :func:`recovery_rates`,
:func:`type_trap_rates`) return one row per group of ``by`` over a runs table (columns as in
:class:`canarykit.store.schemas.RunsTable`); intervals and tests live in :mod:`canarykit.stats`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import polars as pl

from ..store.jsonio import finite_or_none
from ..types import CANARY_TYPES


@dataclass(frozen=True)
class Rate:
    """A rate: the mean of ``value`` over the non-error runs where ``over`` holds."""

    name: str
    value: pl.Expr
    over: pl.Expr

    def per_run(self) -> pl.Expr:
        """The run's value (Float64) where the rate is defined over it, else null; named ``name``."""
        return pl.when(~pl.col("error") & self.over).then(self.value.cast(pl.Float64)).otherwise(None).alias(self.name)


_CALLED = pl.col("tool_calls") > 0

CSR = Rate("csr", pl.col("csr"), pl.col("csr").is_not_null())

Truncated = Literal["exclude", "failure", "judged"]


def verdict_rate(column: str = "success", truncated: Truncated = "exclude", name: str | None = None) -> Rate:
    """The success rate of the verdicts in ``column``: over judged runs, a truncated run left
    out (``exclude``), counted as a failure (``failure``) or counted as judged (``judged``)."""
    verdict = pl.col(column)
    judged = verdict.is_not_null()
    if truncated == "exclude":
        return Rate(name or "tsr", verdict, judged & ~pl.col("truncated"))
    if truncated == "failure":
        cut = pl.col("truncated")
        return Rate(name or "tsr_truncated_as_failure", pl.when(cut).then(pl.lit(0.0)).otherwise(verdict.cast(pl.Float64)),
                    cut | judged)
    return Rate(name or "tsr", verdict, judged)


TSR = verdict_rate()
TSR_TRUNCATED_AS_FAILURE = verdict_rate(truncated="failure")
TSR_JUDGED = verdict_rate(truncated="judged")

RECOVERY = Rate("recovery", pl.col("recovered").cast(pl.Float64).fill_null(0.0), pl.col("trapped"))


def trap_rate(canary_type: str) -> Rate:
    """The trap rate of one canary type."""
    return Rate(f"trap_rate_{canary_type}", pl.col(f"trapped_{canary_type}"), pl.col(f"present_{canary_type}") & _CALLED)


def control_rate(canary_type: str) -> Rate:
    """The call rate of one canary type's matched-surface controls."""
    return Rate(f"control_rate_{canary_type}", pl.col(f"control_called_{canary_type}"),
                pl.col(f"control_present_{canary_type}") & _CALLED)


def first_pick_rate(canary_type: str) -> Rate:
    """The first-pick rate of one canary type (over runs with a first call into its families)."""
    pick = pl.col(f"first_pick_{canary_type}")
    return Rate(f"first_pick_{canary_type}", pick, pick.is_not_null())


def recovery_after_call_rate(canary_type: str) -> Rate:
    """The share of runs that called one of the type's stand-ins and then its real tool."""
    rec = pl.col(f"recovered_{canary_type}")
    return Rate(f"recovery_after_call_{canary_type}", rec, rec.is_not_null())


TRAPPED = Rate("trap_rate", pl.col("trapped"), pl.any_horizontal([pl.col(f"present_{t}") for t in CANARY_TYPES]) & _CALLED)


# --------------------------------------------------------------------------- group means


def rate_by(df: pl.DataFrame, rate: Rate, by: Sequence[str] = ("model",)) -> pl.DataFrame:
    """``*by, <rate.name>, n``: the rate per group of the non-error runs of ``df`` and the
    runs it is over (a group without any has the rate null and ``n`` 0)."""
    keys = list(by)
    per_run = rate.per_run()
    return (
        df.filter(~pl.col("error"))
        .group_by(keys)
        .agg(per_run.mean(), per_run.is_not_null().sum().cast(pl.Int64).alias("n"))
        .sort(keys)
    )


def csr_by(df: pl.DataFrame, by: Sequence[str] = ("model",)) -> pl.DataFrame:
    """Per-task csr (:data:`CSR`). Columns: ``*by, csr, n`` (runs in the mean),
    ``zero_call_runs``, ``error_runs``."""
    keys = list(by)
    counts = df.group_by(keys).agg(
        pl.col("error").sum().cast(pl.Int64).alias("error_runs"),
        (~pl.col("error") & pl.col("csr").is_null()).sum().cast(pl.Int64).alias("zero_call_runs"),
    )
    return (
        counts.join(rate_by(df, CSR, keys), on=keys, how="left", nulls_equal=True)
        .with_columns(pl.col("n").fill_null(0))
        .select(*keys, "csr", "n", "zero_call_runs", "error_runs")
        .sort(keys)
    )


def tsr_by(df: pl.DataFrame, by: Sequence[str] = ("model",), column: str = "success") -> pl.DataFrame:
    """Task success rate of the verdicts in ``column`` over judged runs, truncated ones
    included (:data:`TSR_JUDGED`). Columns: ``*by, tsr, n`` (non-null verdicts), ``unjudged``
    (null verdicts of non-error runs)."""
    keys = list(by)
    unjudged = df.filter(~pl.col("error")).group_by(keys).agg(pl.col(column).is_null().sum().cast(pl.Int64).alias("unjudged"))
    return rate_by(df, verdict_rate(column, "judged"), keys).join(unjudged, on=keys, how="left", nulls_equal=True).sort(keys)


def recovery_rates(df: pl.DataFrame, by: Sequence[str] = ("model",)) -> pl.DataFrame:
    """Recovery rate among trapped runs (:data:`RECOVERY`), with its denominator:
    ``*by, recovery, n``. Groups without a trapped run have ``recovery`` NULL and ``n`` 0."""
    return rate_by(df, RECOVERY, by)


def type_trap_rates(df: pl.DataFrame, by: Sequence[str] = ("model",)) -> pl.DataFrame:
    """Type-specific trap rate (:func:`trap_rate`) of every type a group's runs were offered.
    Long format: ``*by, canary_type, rate, n, trapped``."""
    keys = list(by)
    valid = df.filter(~pl.col("error"))
    parts = []
    for t in CANARY_TYPES:
        per_run = trap_rate(t).per_run()
        parts.append(
            valid.group_by(keys)
            .agg(
                pl.lit(t).alias("canary_type"),
                per_run.mean().alias("rate"),
                per_run.is_not_null().sum().cast(pl.Int64).alias("n"),
                per_run.sum().cast(pl.Int64).alias("trapped"),
            )
            .filter(pl.col("n") > 0)
        )
    out = pl.concat(parts)
    order = pl.DataFrame({"canary_type": list(CANARY_TYPES), "_o": range(len(CANARY_TYPES))})
    return out.join(order, on="canary_type").sort([*keys, "_o"]).drop("_o")


# --------------------------------------------------------------------------- the DVC metrics


def _r(x: Any) -> float | None:
    value = finite_or_none(x)
    return None if value is None else round(value, 6)


def metrics_json(df: pl.DataFrame) -> dict[str, Any]:
    """``{condition: {pool: {model: {csr, tsr, recovery, recovery_n, runs, error_runs,
    zero_call_runs, truncated_runs}}}}`` for a DVC metrics file (numbers rounded to 6 digits;
    every aggregate excludes backend-error runs, which are counted in ``error_runs``; ``runs``
    counts all; ``tsr`` is over every judged run, truncated ones included: the headline tsr
    treatment of truncated runs is the statistics' (``results/stats.json``))."""
    keys = ["condition", "pool", "model"]
    truncated = pl.col("truncated") if "truncated" in df.columns else pl.lit(False)
    base = df.group_by(keys).agg(
        pl.len().cast(pl.Int64).alias("runs"),
        truncated.fill_null(False).sum().cast(pl.Int64).alias("truncated_runs"),
    )
    table = (
        base.join(csr_by(df, keys), on=keys, how="left")
        .join(tsr_by(df, keys).select(*keys, "tsr"), on=keys, how="left")
        .join(recovery_rates(df, keys).rename({"n": "recovery_n"}), on=keys, how="left")
        .with_columns(pl.col("recovery_n", "zero_call_runs").fill_null(0))
        .sort(keys)
    )
    out: dict[str, Any] = {}
    for row in table.iter_rows(named=True):
        out.setdefault(row["condition"], {}).setdefault(row["pool"], {})[row["model"]] = {
            "csr": _r(row["csr"]),
            "tsr": _r(row["tsr"]),
            "recovery": _r(row["recovery"]),
            "recovery_n": int(row["recovery_n"]),
            "runs": int(row["runs"]),
            "error_runs": int(row["error_runs"]),
            "zero_call_runs": int(row["zero_call_runs"]),
            "truncated_runs": int(row["truncated_runs"]),
        }
    return out
