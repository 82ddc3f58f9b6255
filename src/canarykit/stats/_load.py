"""Reading the per-run table: validated against its contract, optional columns filled in."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from ..errors import InputError
from ..store import schemas
from ..types import CANARY_TYPES


def validate_runs(df: pl.DataFrame, source: str | Path = "runs table") -> pl.DataFrame:
    """Validate against :class:`schemas.RunsTable` and the per-type flag columns.

    ``truncated`` (a run cut off by ``agent.max_turns`` without a final answer) is optional:
    a table without it (from other tools) is read as having no truncated run.
    """
    out = schemas.validate(df, schemas.RunsTable, source)
    schemas.check_runs_type_columns(out, str(source))
    out = with_optional_columns(out)
    if "truncated" not in out.columns:
        return out.with_columns(pl.lit(False).alias("truncated"))
    try:
        trunc = out.get_column("truncated").cast(pl.Boolean)
    except pl.exceptions.PolarsError as exc:
        raise InputError(str(source), "truncated", f"expected booleans: {exc}") from exc
    if trunc.null_count():
        raise InputError(str(source), "truncated", f"{trunc.null_count()} null values (expected true/false for every run)")
    return out.with_columns(trunc.alias("truncated"))


def with_optional_columns(df: pl.DataFrame) -> pl.DataFrame:
    """A table from another tool may lack the control and order columns: no control was
    offered or called (``control_*`` false, ``control_calls`` 0), no order is known
    (``canary_before_real`` null), every run has the arm ``""`` and no first pick is known
    (``first_pick_T``, ``recovered_T``, ``item_T``, ``selection_visible_T`` null). A table
    without ``wording_T`` (before wordings were recorded) gets it from ``item_T``
    (``"<T>/v<i>"``, :func:`canarykit.detection.detect.wording_columns`)."""
    from ..detection.detect import TYPE_OUTCOME_PREFIXES, wording_columns

    add = []
    if "arm" not in df.columns:
        add.append(pl.lit("", dtype=pl.String).alias("arm"))
    for prefix, dtype in TYPE_OUTCOME_PREFIXES.items():
        for t in CANARY_TYPES:
            if prefix + t not in df.columns:
                add.append(pl.lit(None, dtype=dtype).alias(prefix + t))
    if "control_calls" not in df.columns:
        add.append(pl.lit(0, dtype=pl.Int64).alias("control_calls"))
    for t in CANARY_TYPES:
        for prefix in schemas.CONTROL_TYPE_PREFIXES:
            if prefix + t not in df.columns:
                add.append(pl.lit(False).alias(prefix + t))
    if "canary_before_real" not in df.columns:
        add.append(pl.lit(None, dtype=pl.Boolean).alias("canary_before_real"))
    out = df.with_columns(add) if add else df
    missing = [f"wording_{t}" for t in CANARY_TYPES if f"wording_{t}" not in out.columns]
    if missing:
        out = out.with_columns(c for c in wording_columns(out) if c.meta.output_name() in missing)
    return out


def load_runs(path: str | Path) -> pl.DataFrame:
    """Read and validate ``results/runs.parquet`` (InputError naming the file on failure)."""
    return validate_runs(schemas.read_table(path, "runs table not found"), Path(path))
