"""The dose-response statistics (issue 21): the known-answer curves of the ``uniform`` and
``planted:<type>`` agents on synthetic dose runs, the logistic fit against statsmodels, and
the table. Synthetic tables only: each test takes well under a second."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
import statsmodels.api as sm

from canarykit.errors import InputError
from canarykit.stats import DOSE_KINDS, dose_markdown, dose_response, dose_runs, dose_table
from canarykit.stats._dose import _holm, logit_fit
from canarykit.store.schemas import DoseRunsTable, validate
from canarykit.testing.synthetic import synthetic_dose_runs
from canarykit.types import CANARY_TYPES

LEVELS = (0, 1, 2, 4, 8)


@pytest.fixture(scope="module")
def result() -> dict:
    runs = synthetic_dose_runs(["uniform", "planted:temporal_decoy"], tasks=24, seed=7)
    validate(runs, DoseRunsTable, "synthetic dose runs")
    return dose_response(runs)


def _misses(block: dict) -> list[tuple[str, int]]:
    return [(kind, k) for kind in DOSE_KINDS
            for k, lo, hi in zip(block[kind]["levels"], block[kind]["lo"], block[kind]["hi"], strict=True)
            if not lo <= k / (k + 1) <= hi]


def test_uniform_agent_every_level_interval_holds_k_over_k_plus_one() -> None:
    """35 intervals (7 kinds x 5 levels): at a family-wise 95% (Bonferroni) every one holds
    k / (k + 1); at the nominal 95% a few may miss, as 95% intervals do (P(> 5 of 35) < 1%)."""
    runs = synthetic_dose_runs(["uniform"], tasks=24, seed=7)
    cells = len(DOSE_KINDS) * len(LEVELS)
    assert _misses(dose_response(runs, alpha=0.05 / cells)["uniform"]) == []
    block = dose_response(runs)["uniform"]
    assert len(_misses(block)) <= 5
    for kind in DOSE_KINDS:
        assert block[kind]["levels"] == list(LEVELS) and block[kind]["n"] == [24 * 3] * len(LEVELS)
        assert block[kind]["rate"][0] == 0.0 and block[kind]["lo"][0] == block[kind]["hi"][0] == 0.0
        assert block[kind]["slope_lo"] > 0  # the curve rises


def test_uniform_agent_typed_slopes_equal_the_distractor_slope(result: dict) -> None:
    for t in CANARY_TYPES:
        vs = result["uniform"][t]["vs_distractor"]
        assert vs["lo"] <= 0.0 <= vs["hi"], (t, vs)
        assert vs["p_holm"] > 0.05


def test_planted_agent_own_type_like_distractor_other_types_below(result: dict) -> None:
    block = result["planted:temporal_decoy"]
    own = block["temporal_decoy"]["vs_distractor"]
    assert own["lo"] <= 0.0 <= own["hi"]
    assert block["distractor"]["slope_lo"] > 0
    for t in CANARY_TYPES:
        if t == "temporal_decoy":
            continue
        assert block[t]["rate"] == [0.0] * len(LEVELS)
        assert block[t]["slope"] == 0.0  # an all-zero curve is flat, not an unfitted separation
        vs = block[t]["vs_distractor"]
        assert vs["hi"] < 0 and vs["p_holm"] < 0.05, (t, vs)


def test_other_outcomes_per_level(result: dict) -> None:
    b = result["uniform"]["distractor"]["outcomes"]
    assert b["truncated"]["rate"] == [0.0] * len(LEVELS)
    assert b["trapped"]["rate"] == result["uniform"]["distractor"]["rate"]  # one pick per synthetic run
    tsr = b["tsr"]
    assert tsr["rate"][0] == 1.0 and tsr["rate"][-1] < tsr["rate"][1]  # a trapped run fails half the time


def test_fit_without_prior_is_statsmodels_cluster_robust_glm() -> None:
    rng = np.random.default_rng(3)
    tasks = np.repeat(np.arange(15), 40)
    x = np.log2(rng.choice([1, 2, 4, 8], size=tasks.size) + 1.0)
    y = (rng.random(tasks.size) < 1 / (1 + np.exp(-(-1.0 + 0.8 * x + 0.3 * rng.normal(size=15)[tasks])))).astype(float)
    fit = logit_fit(x, y, tasks, 15, prior=0.0)
    ref = sm.GLM(y, sm.add_constant(x), family=sm.families.Binomial()).fit(cov_type="cluster", cov_kwds={"groups": tasks})
    assert np.allclose(fit.coef, ref.params, atol=1e-6)
    g, n = 15, tasks.size
    cov = g / (g - 1) * (n - 1) / (n - 2) * fit.bread @ (fit.scores.T @ fit.scores) @ fit.bread
    assert np.allclose(cov, ref.cov_params(), rtol=1e-5)


def test_holm_adjusts_in_order_and_keeps_missing() -> None:
    assert _holm([0.01, None, 0.04, 0.03]) == pytest.approx([0.03, None, 0.06, 0.06])


def test_table_and_markdown_have_a_row_per_level() -> None:
    runs = synthetic_dose_runs(["uniform"], tasks=6, seeds=(0,), seed=1)
    table = dose_table(dose_response(runs))
    assert table.height == len(DOSE_KINDS) * len(LEVELS)
    assert table.filter(pl.col("kind") == "distractor")["delta_slope"].is_null().all()
    md = dose_markdown(table)
    assert "| uniform | distractor | 0.00 |" in md and "k=8" in md


def test_a_trapped_run_at_dose_zero_breaks_the_contract() -> None:
    runs = synthetic_dose_runs(["uniform"], tasks=2, seeds=(0,), seed=1)
    bad = runs.with_columns(trapped=pl.when(pl.col("dose") == 0).then(True).otherwise(pl.col("trapped")))
    with pytest.raises(Exception, match="no_look_alike_at_dose_zero"):
        validate(bad, DoseRunsTable, "bad.parquet")


def test_a_type_with_missing_levels_is_compared_on_its_own_cells() -> None:
    """The bank fills a granularity trap at k <= 1 only on most tools: its slope spans fewer
    levels, so the distractor slope it is compared with must span the same ones."""
    runs = synthetic_dose_runs(["uniform"], tasks=30, seed=11)
    thin = runs.filter((pl.col("kind") != "granularity_trap") | (pl.col("dose") <= 1))
    vs = dose_response(thin)["uniform"]["granularity_trap"]["vs_distractor"]
    assert vs["lo"] <= 0.0 <= vs["hi"], vs
    full = dose_response(thin)["uniform"]["distractor"]["slope"]
    assert abs(vs["delta_slope"]) < abs(dose_response(thin)["uniform"]["granularity_trap"]["slope"] - full)


def test_an_all_zero_curve_is_flat_whatever_its_levels_sizes() -> None:
    runs = synthetic_dose_runs(["planted:semantic_decoy"], tasks=20, seed=5)
    # fewer runs at the higher levels, as when the bank thins out a granularity curve
    thin = runs.filter((pl.col("kind") != "granularity_trap") | (pl.col("dose") <= 1)
                       | ((pl.col("dose") == 2) & (pl.col("task_id") < "t-008")))
    block = dose_response(thin)["planted:semantic_decoy"]["granularity_trap"]
    assert block["n"] == [60, 60, 24, 0, 0] and block["rate"][:3] == [0.0, 0.0, 0.0]
    assert block["slope"] == 0.0 and -0.5 < block["slope_lo"] < 0.0 < block["slope_hi"] < 0.5
    assert block["vs_distractor"]["hi"] < 0


def test_dose_runs_read_kind_dose_and_first_pick_from_runs_and_calls() -> None:
    runs = pl.DataFrame({
        "run_id": ["r1", "r2", "r3", "r4"], "model": ["m"] * 4, "condition": ["dose", "dose", "dose", "declared"],
        "seed": [0, 0, 1, 0], "task_id": ["t1", "t1", "t1", "t1"], "arm": ["distractor@2", "semantic_decoy@0", "distractor@1", ""],
        "trapped": [True, False, False, False], "success": [True, None, True, True], "truncated": [False, False, True, False],
        "error": [False, False, False, False],
    })
    calls = pl.DataFrame({
        "run_id": ["r1", "r1", "r2", "r3", "r3"], "call_idx": [1, 0, 0, 0, 1],
        "name": ["get_weather", "get_weather_alt", "web_search", "web_search", "get_weather"],
        "cls": ["real", "canary", "real", "real", "real"], "shadows": [None, "get_weather", None, None, None],
    })
    got = dose_runs(runs, calls, {"t1": "get_weather"})
    assert got.select("kind", "dose", "first_pick").rows() == [
        ("distractor", 2, True), ("semantic_decoy", 0, None), ("distractor", 1, False)]  # by seed, then kind
    with pytest.raises(InputError, match="arm: a dose run's arm must read <kind>@<k>"):
        dose_runs(runs.with_columns(arm=pl.lit("stale@2")), calls, {"t1": "get_weather"}, "runs.parquet")


def test_the_study_statistics_leave_dose_runs_to_the_curves() -> None:
    """compute_all (stats.json's other blocks) ignores dose runs: they would read as a sixth
    condition; their statistic is dose_response."""
    from canarykit import stats
    from canarykit.testing.synthetic import synthetic_runs

    df = synthetic_runs(n_models=1, seeds=1, tasks=6, conditions=("baseline", "declared"), ablation=False)
    dose = df.filter(pl.col("condition") == "declared").with_columns(condition=pl.lit("dose"))
    cfg = stats.StatsConfig(resamples=50)
    with_dose = stats.compute_all(pl.concat([df, dose]), cfg)
    assert set(with_dose["counts"]) == {"baseline", "declared"}
    assert with_dose["counts"] == stats.compute_all(df, cfg)["counts"]
