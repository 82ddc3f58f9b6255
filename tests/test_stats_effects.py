"""The control-effect diagnosis and the optional control/order columns of a runs table."""

from __future__ import annotations

import polars as pl
import pytest

from canarykit import stats
from canarykit.errors import InputError
from canarykit.stats import diagnose
from canarykit.synthetic import synthetic_runs

ALPHA = 0.05


@pytest.mark.parametrize(
    ("entry", "word"),
    [
        ({"canary": 0.5, "control": 0.0, "delta": 0.5, "lo": 0.4, "hi": 0.6, "p_holm": 0.001}, "weakness"),
        # significant by p, but the interval touches 0: not called a weakness
        ({"canary": 0.5, "control": 0.0, "delta": 0.5, "lo": 0.0, "hi": 0.6, "p_holm": 0.01}, "inconclusive"),
        ({"canary": 0.3, "control": 0.3, "delta": 0.0, "lo": -0.1, "hi": 0.1, "p_holm": 1.0}, "surface attraction"),
        # the control called more than the canary, significantly: the surface, not the claim
        ({"canary": 0.1, "control": 0.6, "delta": -0.5, "lo": -0.6, "hi": -0.4, "p_holm": 0.001}, "surface attraction"),
        ({"canary": 0.4, "control": 0.3, "delta": 0.1, "lo": -0.05, "hi": 0.25, "p_holm": 0.4}, "surface attraction"),
        ({"canary": 0.1, "control": 0.0, "delta": 0.1, "lo": 0.0, "hi": 0.2, "p_holm": 0.3}, "inconclusive"),
        ({"canary": 0.0, "control": 0.0, "delta": 0.0, "lo": 0.0, "hi": 0.0, "p_holm": 1.0}, "no attraction"),
        ({"canary": 0.2, "control": None, "delta": None, "lo": None, "hi": None, "p_holm": None}, "n/a"),
    ],
)
def test_diagnosis_words(entry: dict, word: str) -> None:
    assert diagnose(entry, ALPHA) == word


def test_a_table_without_control_or_order_columns_has_no_such_effects() -> None:
    df = synthetic_runs(n_models=2, seeds=2, tasks=20, ablation=False)
    assert "control_calls" not in df.columns and "canary_before_real" not in df.columns
    r = stats.compute_all(df, stats.StatsConfig(resamples=200))
    assert r["control_effect"] == {} and r["position_balance"] == {}
    for m, e in r["position_effect"].items():  # order unknown: nothing to compare
        assert e["trapped"]["delta"] is None and e["trapped"]["n_before"] == 0, m
    assert "control" not in r["tsr_delta"]


def test_the_control_flags_come_all_or_none() -> None:
    df = synthetic_runs(n_models=1, seeds=1, tasks=5, ablation=False).with_columns(
        pl.lit(False).alias("control_present_semantic_decoy")
    )
    with pytest.raises(InputError) as err:
        stats.validate_runs(df, "mine.parquet")
    assert err.value.file == "mine.parquet" and err.value.field.startswith("control_")
