"""Hand-built per-run tables (the runs.parquet contract) for the statistics tests."""

from __future__ import annotations

from typing import Any

import polars as pl

from canarykit.types import CANARY_TYPES


def make_runs(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """A per-run table from partial rows (defaults fill the rest)."""
    full: list[dict[str, Any]] = []
    for i, r in enumerate(rows):
        row: dict[str, Any] = {
            "model": "m1", "group": "g1", "condition": "declared", "pool": "standard", "seed": 0,
            "task_id": f"t{i}", "difficulty": "easy", "tool_calls": 2, "canary_calls": 0,
            "trapped": False, "recovered": None, "success": True, "error": False,
        }
        row.update(r)
        if "csr" not in r:
            row["csr"] = row["canary_calls"] / row["tool_calls"] if row["tool_calls"] else None
        for t in CANARY_TYPES:
            row.setdefault(f"present_{t}", False)
            row.setdefault(f"trapped_{t}", False)
        full.append(row)
    schema: dict[str, Any] = {
        "model": pl.String, "group": pl.String, "condition": pl.String, "pool": pl.String,
        "seed": pl.Int64, "task_id": pl.String, "difficulty": pl.String, "tool_calls": pl.Int64,
        "canary_calls": pl.Int64, "csr": pl.Float64, "trapped": pl.Boolean, "recovered": pl.Boolean,
        "success": pl.Boolean, "error": pl.Boolean,
    }
    for t in CANARY_TYPES:
        schema[f"present_{t}"] = pl.Boolean
        schema[f"trapped_{t}"] = pl.Boolean
    return pl.DataFrame(full, schema=schema, orient="row")
