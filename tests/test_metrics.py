"""The study's rates, defined once: each rate's runs and value, and the statistics and the DVC
metrics agreeing on them."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest

from canarykit import stats
from canarykit.detection.metrics import (
    RECOVERY,
    TSR,
    TSR_JUDGED,
    TSR_TRUNCATED_AS_FAILURE,
    csr_by,
    metrics_json,
    rate_by,
    recovery_rates,
    tsr_by,
    type_trap_rates,
)
from canarykit.testing.synthetic import synthetic_runs
from canarykit.types import CANARY_TYPES


def _runs_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    full = []
    for r in rows:
        base = {
            "model": "m",
            "condition": "full",
            "tool_calls": 0 if r.get("csr") is None else 2,
            "csr": None,
            "trapped": False,
            "recovered": None,
            "success": None,
            "truncated": False,
            "error": False,
        }
        base.update({f"present_{t}": False for t in CANARY_TYPES})
        base.update({f"trapped_{t}": False for t in CANARY_TYPES})
        base.update(r)
        full.append(base)
    return pl.DataFrame(full)


def test_metric_definitions() -> None:
    df = _runs_frame(
        [
            {
                "csr": 0.5,
                "trapped": True,
                "recovered": True,
                "success": True,
                "present_parameter_trap": True,
                "trapped_parameter_trap": True,
            },
            {"csr": 0.0, "success": False, "present_parameter_trap": True},
            {"csr": None, "success": None},  # zero-call run, unparseable verdict
            {
                "csr": 1.0,
                "trapped": True,
                "recovered": False,
                "success": False,
                "present_semantic_decoy": True,
                "trapped_semantic_decoy": True,
            },
            {"error": True, "csr": None, "success": None},
        ]
    )
    c = csr_by(df).row(0, named=True)
    assert c["csr"] == pytest.approx(0.5) and c["n"] == 3 and c["zero_call_runs"] == 1 and c["error_runs"] == 1
    rates = {r["canary_type"]: (r["rate"], r["n"], r["trapped"]) for r in type_trap_rates(df).iter_rows(named=True)}
    assert rates == {"parameter_trap": (0.5, 2, 1), "semantic_decoy": (1.0, 1, 1)}
    rec = recovery_rates(df).row(0, named=True)
    assert rec["recovery"] == 0.5 and rec["n"] == 2
    t = tsr_by(df).row(0, named=True)
    assert t["tsr"] == pytest.approx(1 / 3) and t["n"] == 3 and t["unjudged"] == 1


def test_recovery_rate_without_trapped_runs_is_null() -> None:
    r = recovery_rates(_runs_frame([{"csr": 0.0}])).row(0, named=True)
    assert r["recovery"] is None and r["n"] == 0


def test_a_zero_call_run_is_outside_the_trap_rate_and_an_unknown_recovery_is_no_recovery() -> None:
    df = _runs_frame([
        {"csr": 1.0, "present_parameter_trap": True, "trapped_parameter_trap": True, "trapped": True, "recovered": None},
        {"csr": None, "present_parameter_trap": True},  # offered the canary, called no tool
        {"csr": 0.0, "present_parameter_trap": True, "trapped": True, "recovered": True},
    ])
    (row,) = type_trap_rates(df).iter_rows(named=True)
    assert (row["canary_type"], row["rate"], row["n"]) == ("parameter_trap", 0.5, 2)
    assert rate_by(df, RECOVERY).row(0, named=True) == {"model": "m", "recovery": 0.5, "n": 2}


def test_the_three_treatments_of_a_truncated_run() -> None:
    df = _runs_frame([
        {"csr": 0.0, "success": True},
        {"csr": 0.0, "success": True, "truncated": True},
        {"csr": 0.0, "success": None, "truncated": True},  # cut off and unjudged
        {"csr": 0.0, "success": False},
    ])
    got = {r.name: rate_by(df, r).row(0, named=True) for r in (TSR, TSR_TRUNCATED_AS_FAILURE)}
    assert (got["tsr"]["tsr"], got["tsr"]["n"]) == (0.5, 2)
    assert (got["tsr_truncated_as_failure"]["tsr_truncated_as_failure"], got["tsr_truncated_as_failure"]["n"]) == (0.25, 4)
    judged = rate_by(df, TSR_JUDGED).row(0, named=True)
    assert (judged["tsr"], judged["n"]) == (pytest.approx(2 / 3), 3)


def test_the_tables_and_the_dvc_metrics_report_the_same_rates() -> None:
    """The statistics' csr, tsr (truncated as judged) and recovery per (condition, model) are
    the DVC metrics' numbers, from one definition each."""
    df = synthetic_runs(n_models=3, seeds=2, tasks=24, ablation=False, seed=5)
    df = df.with_columns((pl.int_range(pl.len()) % 17 == 0).alias("truncated") & ~pl.col("error"))
    df = stats.validate_runs(df)
    result = stats.compute_all(df, stats.StatsConfig(resamples=50), validate=False)
    dvc = metrics_json(df)
    checked = 0
    for cond, per_model in result["csr_ci"].items():
        for model, entry in per_model.items():
            m = dvc[cond]["standard"][model]
            assert m["csr"] == pytest.approx(entry["csr"], abs=1e-6)
            assert m["recovery"] == pytest.approx(result["recovery"][cond][model]["rate"], abs=1e-6)
            assert m["recovery_n"] == result["recovery"][cond][model]["n"]
            assert m["truncated_runs"] == entry["n_truncated"] > 0
            sub = df.filter((pl.col("condition") == cond) & (pl.col("model") == model) & (pl.col("pool") == "standard"))
            assert m["tsr"] == pytest.approx(rate_by(sub, TSR_JUDGED).item(0, "tsr"), abs=1e-6)
            assert result["tsr"][cond][model] == pytest.approx(rate_by(sub, TSR).item(0, "tsr"))
            assert m["tsr"] != pytest.approx(result["tsr"][cond][model]), "the headline leaves truncated runs out"
            checked += 1
    assert checked == 9
