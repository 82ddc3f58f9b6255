"""The dose-response statistics (issues 21, 27): the known-answer curves of the ``uniform``
and ``planted:<type>`` agents on synthetic dose runs, the growth estimand (Firth's fit over
k >= 1: no shrinkage bias on rare curves, a flat curve's growth covers 0), its CR2 sandwich
against statsmodels, and the table. Synthetic data only: the whole file takes a few seconds."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
import statsmodels.api as sm
from scipy.special import expit

from canarykit.errors import InputError
from canarykit.stats import (
    DOSE_KINDS,
    dose_markdown,
    dose_metrics,
    dose_response,
    dose_runs,
    dose_table,
)
from canarykit.stats._dose import _holm
from canarykit.stats._dose_fit import combine, firth_logit, fit_curve
from canarykit.store.schemas import DoseRunsTable, validate
from canarykit.testing.synthetic import synthetic_dose_runs
from canarykit.types import CANARY_TYPES, TWIN_KINDS

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
    """65 intervals (13 kinds x 5 levels): at a family-wise 95% (Bonferroni) every one holds
    k / (k + 1); at the nominal 95% a few may miss, as 95% intervals do (P(> 8 of 65) < 1%)."""
    runs = synthetic_dose_runs(["uniform"], tasks=24, seed=7)
    cells = len(DOSE_KINDS) * len(LEVELS)
    assert _misses(dose_response(runs, alpha=0.05 / cells)["uniform"]) == []
    block = dose_response(runs)["uniform"]
    assert len(_misses(block)) <= 8
    for kind in DOSE_KINDS:
        assert block[kind]["levels"] == list(LEVELS) and block[kind]["n"] == [24 * 3] * len(LEVELS)
        assert block[kind]["rate"][0] == 0.0 and block[kind]["lo"][0] == block[kind]["hi"][0] == 0.0  # none offered
        assert block[kind]["level"]["rate"] == block[kind]["rate"][1]


def test_uniform_agent_grows_by_log_2_per_doubling_on_every_kind() -> None:
    """k / (k + 1) has log-odds ln k: exactly logistic in log2 k, growth ln 2 = 0.69 per
    doubling, level 1/2 at k = 1, on every kind; its typed curves are its twin curves."""
    fam = dose_response(synthetic_dose_runs(["uniform"], tasks=24, seed=7), alpha=0.05 / len(DOSE_KINDS))["uniform"]
    for kind in DOSE_KINDS:
        g = fam[kind]["growth"]
        assert g["lo"] <= math.log(2) <= g["hi"] and g["lo"] > 0, (kind, g)
        assert g["levels"] == [1, 2, 4, 8] and g["n"] == 24 * 3 * 4
        assert fam[kind]["level"]["lo"] <= 0.5 <= fam[kind]["level"]["hi"]


def test_uniform_agent_typed_curves_are_its_twin_and_distractor_curves(result: dict) -> None:
    for t in CANARY_TYPES:
        for contrast in ("vs_twin", "vs_distractor"):
            for estimand in ("growth", "level"):
                e = result["uniform"][t][contrast][estimand]
                assert e["lo"] <= 0.0 <= e["hi"] and e["p_holm"] > 0.05, (t, contrast, estimand, e)


def test_planted_agent_differs_in_level_at_one_look_alike_never_in_growth(result: dict) -> None:
    """planted:T takes what it cannot tell from the real tool (T's canaries, every twin, the
    distractors) half the time from k = 1 on, and no other type's canary: every curve is flat
    from k = 1 (growth covers 0, the interaction too); the other types sit below their twins
    at k = 1 (the property's effect), T does not."""
    block = result["planted:temporal_decoy"]
    runs = synthetic_dose_runs(["planted:temporal_decoy"], tasks=24, seed=7)
    familywise = dose_response(runs, alpha=0.05 / len(DOSE_KINDS))["planted:temporal_decoy"]  # 13 growth intervals
    for kind in DOSE_KINDS:
        g = familywise[kind]["growth"]
        assert g["lo"] <= 0.0 <= g["hi"], (kind, g)
    own = block["temporal_decoy"]["vs_twin"]
    assert own["level"]["lo"] <= 0.0 <= own["level"]["hi"]
    for t in CANARY_TYPES:
        assert block[t]["vs_twin"]["growth"]["p_holm"] > 0.05, t  # no property x density interaction
        if t == "temporal_decoy":
            continue
        assert block[t]["rate"] == [0.0] * len(LEVELS)
        assert block[t]["growth"]["estimate"] == pytest.approx(0.0, abs=1e-9)  # an all-zero curve is flat
        lv = block[t]["vs_twin"]["level"]
        assert lv["hi"] < 0 and lv["p_holm"] < 0.05 and lv["estimate"] == pytest.approx(-0.5, abs=0.15), (t, lv)


def test_a_curve_flat_from_one_look_alike_has_growth_covering_zero() -> None:
    """The issue's flat curve (0, .5, .5, .5, .5): the old slope on log2(k + 1) read 0.61 (the
    0 -> 1 step); growth over k >= 1 is 0, its interval holds 0, and over 300 simulated flat
    curves (30 tasks x 2 seeds) it holds 0 about 95% of the time."""
    tasks, seeds = 32, 2
    # half the tasks trapped at each k >= 1 (both seeds), a different half at each level:
    # the curve is exactly (0, .5, .5, .5, .5) and the tasks differ
    trapped = {(t, k): k > 0 and (t >> int(math.log2(k))) & 1 == 0 for t in range(tasks) for k in LEVELS}
    rows = [{"model": "m", "task_id": f"t{t:02d}", "seed": s, "kind": "distractor", "dose": k,
             "first_pick": trapped[(t, k)], "trapped": trapped[(t, k)], "success": True,
             "truncated": False, "error": False} for t in range(tasks) for s in range(seeds) for k in LEVELS]
    block = dose_response(pl.DataFrame(rows))["m"]["distractor"]
    assert block["rate"] == [0.0, 0.5, 0.5, 0.5, 0.5]
    g = block["growth"]
    assert g["estimate"] == pytest.approx(0.0, abs=1e-9) and g["lo"] < -0.1 and g["hi"] > 0.1, g
    rng = np.random.default_rng(5)
    x = np.tile(np.log2([1, 2, 4, 8]).repeat(seeds), tasks)
    codes = np.repeat(np.arange(tasks), 4 * seeds)
    covered = 0
    for _ in range(300):
        fit = fit_curve(x, (rng.random(x.size) < 0.5).astype(float), codes)
        lo, hi = combine([fit], [[0.0, 1.0]], tasks).interval(0.05)
        covered += lo <= 0.0 <= hi
    assert 0.91 <= covered / 300 <= 0.99, covered


def _projection(rates: np.ndarray, x: np.ndarray) -> float:
    """The growth a curve of ``rates`` has in the limit of many runs (the logistic fit to the
    rates themselves): the estimand on a curve that is not exactly logistic."""
    return float(firth_logit(x, rates, weights=np.full(x.size, 1e6), penalty=0.0)[0][1])


def test_growth_is_not_biased_on_rare_curves() -> None:
    """(0, .02, .03, .05, .08) at 30 runs per level (the issue's rare curve): Firth's mean
    growth is within 10% of the truth over 2,000 simulated curves; the half/half prior the
    curves used before shrinks it by a quarter, and plain maximum likelihood (when it exists)
    is far from it. Grouped binomial fits (the same as run by run: checked below)."""
    x = np.log2([1.0, 2.0, 4.0, 8.0])
    rates, n = np.array([0.02, 0.03, 0.05, 0.08]), 30
    truth = _projection(rates, x)
    draws = np.random.default_rng(11).binomial(n, rates, size=(2000, 4))
    firth = np.array([firth_logit(x, s / n, weights=np.full(4, n))[0][1] for s in draws])
    prior = np.array([firth_logit(x, (s + 0.5) / (n + 1), weights=np.full(4, n + 1), penalty=0.0)[0][1] for s in draws])
    assert abs(firth.mean() / truth - 1) < 0.10, (firth.mean(), truth)
    assert prior.mean() / truth - 1 < -0.15, (prior.mean(), truth)
    mle = np.array([firth_logit(x, s / n, weights=np.full(4, n), penalty=0.0)[0][1] for s in draws[:300] if s.sum()])
    assert abs(np.mean(mle[np.abs(mle) < 20]) / truth - 1) > 0.10 or np.mean(np.abs(mle) >= 20) > 0.01


def test_grouped_and_run_by_run_fits_agree_and_firth_matches_firthmodels() -> None:
    from firthmodels import FirthLogisticRegression

    rng = np.random.default_rng(2)
    x = np.log2(rng.choice([1, 2, 4, 8], size=200).astype(float))
    y = (rng.random(200) < expit(-2.5 + 0.4 * x)).astype(float)
    coef = firth_logit(x, y)[0]
    ref = FirthLogisticRegression(gtol=1e-10, xtol=1e-10, max_iter=100).fit(x[:, None], y)
    assert np.allclose(coef, [ref.intercept_, ref.coef_[0]], atol=1e-5)
    levels = np.unique(x)
    counts = np.array([(x == v).sum() for v in levels])
    grouped = firth_logit(levels, np.array([y[x == v].sum() for v in levels]) / counts, weights=counts)[0]
    assert np.allclose(coef, grouped, atol=1e-8)


def test_plain_fit_and_sandwich_are_statsmodels_cluster_robust_glm_on_balanced_tasks() -> None:
    """Without Firth's penalty the fit is the maximum likelihood of statsmodels' GLM; with
    every task offering the same runs, CR2 is CR1's G / (G - 1) (statsmodels adds
    (N - 1) / (N - p)) and the Bell-McCaffrey df is G - 1."""
    rng = np.random.default_rng(3)
    g = 15
    tasks = np.repeat(np.arange(g), 40)
    x = np.tile(np.log2(np.repeat([1.0, 2.0, 4.0, 8.0], 10)), g)
    y = (rng.random(tasks.size) < expit(-1.0 + 0.8 * x + 0.5 * rng.normal(size=g)[tasks])).astype(float)
    fit = fit_curve(x, y, tasks, penalty=0.0)
    ref = sm.GLM(y, sm.add_constant(x), family=sm.families.Binomial()).fit(cov_type="cluster", cov_kwds={"groups": tasks})
    assert np.allclose(fit.coef, ref.params, atol=1e-6)
    est = combine([fit], [[0.0, 1.0]], g)
    n = tasks.size
    assert est.se**2 == pytest.approx(ref.cov_params()[1, 1] * (n - 2) / (n - 1), rel=1e-5)
    assert est.df == pytest.approx(g - 1)
    unbalanced = fit_curve(x[40:], y[40:], np.where(tasks[40:] == 1, 1, tasks[40:] // 3), penalty=0.0)
    assert combine([unbalanced], [[0.0, 1.0]], g).df < g - 1


def test_holm_adjusts_in_order_and_keeps_missing() -> None:
    assert _holm([0.01, None, 0.04, 0.03]) == pytest.approx([0.03, None, 0.06, 0.06])


def test_table_markdown_and_metrics() -> None:
    runs = synthetic_dose_runs(["uniform"], tasks=6, seeds=(0,), seed=1)
    result = dose_response(runs)
    table = dose_table(result)
    assert table.height == len(DOSE_KINDS) * len(LEVELS)
    assert table.filter(pl.col("kind").is_in(["distractor", *TWIN_KINDS]))["vs_twin_growth"].is_null().all()
    assert table.filter(pl.col("kind") == "semantic_decoy")["vs_twin_growth"].is_not_null().all()
    md = dose_markdown(table)
    assert "| uniform | distractor | 0.00 |" in md and "k=8" in md and "| uniform | twin:semantic_decoy |" in md
    metrics = dose_metrics(result)["uniform"]
    assert set(metrics["semantic_decoy"]) >= {"growth", "level", "k1", "vs_twin_growth", "vs_twin_growth_p_holm",
                                             "vs_distractor_level"}
    assert "vs_twin_growth" not in metrics["distractor"]


def test_a_trapped_run_at_dose_zero_breaks_the_contract() -> None:
    runs = synthetic_dose_runs(["uniform"], tasks=2, seeds=(0,), seed=1)
    bad = runs.with_columns(trapped=pl.when(pl.col("dose") == 0).then(True).otherwise(pl.col("trapped")))
    with pytest.raises(Exception, match="no_look_alike_at_dose_zero"):
        validate(bad, DoseRunsTable, "bad.parquet")


def test_a_type_with_missing_levels_is_compared_on_its_own_cells() -> None:
    """The bank fills a granularity trap at k <= 2 only on most tools: its growth spans fewer
    levels, so the curves it is compared with must span the same ones."""
    runs = synthetic_dose_runs(["uniform"], tasks=30, seed=11)
    thin = runs.filter((pl.col("kind") != "granularity_trap") | (pl.col("dose") <= 2))
    block = dose_response(thin)["uniform"]["granularity_trap"]
    assert block["growth"]["levels"] == [1, 2, 4, 8] and block["growth"]["n"] == 30 * 3 * 2
    for contrast in ("vs_twin", "vs_distractor"):
        g = block[contrast]["growth"]
        assert g["lo"] <= 0.0 <= g["hi"], (contrast, g)
    only_one = runs.filter((pl.col("kind") != "granularity_trap") | (pl.col("dose") <= 1))
    assert dose_response(only_one)["uniform"]["granularity_trap"]["growth"]["estimate"] is None  # one level: no growth


def test_a_constant_curve_gets_honest_intervals() -> None:
    """An all-zero curve (thinned as a granularity curve is) has growth 0 with the
    model-based interval, not [0, 0], and each level the exact interval for its tasks."""
    runs = synthetic_dose_runs(["planted:semantic_decoy"], tasks=20, seed=5)
    thin = runs.filter((pl.col("kind") != "granularity_trap") | (pl.col("dose") <= 1)
                       | ((pl.col("dose") == 2) & (pl.col("task_id") < "t-008")))
    block = dose_response(thin)["planted:semantic_decoy"]["granularity_trap"]
    assert block["n"] == [60, 60, 24, 0, 0] and block["rate"][:3] == [0.0, 0.0, 0.0]
    assert block["lo"][1] == 0.0 and block["hi"][1] == pytest.approx(1 - 0.025 ** (1 / 20))
    g = block["growth"]
    assert abs(g["estimate"]) < 0.5 and g["lo"] < -0.5 and g["hi"] > 0.5 and g["events"] == 0
    assert block["vs_twin"]["level"]["hi"] < 0


def test_dose_runs_read_kind_dose_and_first_pick_from_runs_and_calls() -> None:
    runs = pl.DataFrame({
        "run_id": ["r1", "r2", "r3", "r4", "r5"], "model": ["m"] * 5, "condition": ["dose", "dose", "dose", "declared", "dose"],
        "seed": [0, 0, 1, 0, 0], "task_id": ["t1"] * 5,
        "arm": ["distractor@2", "semantic_decoy@0", "distractor@1", "", "twin:semantic_decoy@1"],
        "trapped": [True, False, False, False, False], "success": [True, None, True, True, True],
        "truncated": [False, False, True, False, False], "error": [False] * 5,
    })
    calls = pl.DataFrame({
        "run_id": ["r1", "r1", "r2", "r3", "r3", "r5"], "call_idx": [1, 0, 0, 0, 1, 0],
        "name": ["get_weather", "get_weather_alt", "web_search", "web_search", "get_weather", "fetch_weather"],
        "cls": ["real", "canary", "real", "real", "real", "control"], "shadows": [None, "get_weather", None, None, None, "get_weather"],
    })
    got = dose_runs(runs, calls, {"t1": "get_weather"})
    assert got.select("kind", "dose", "first_pick", "trapped").rows() == [
        ("distractor", 2, True, True), ("semantic_decoy", 0, None, False), ("twin:semantic_decoy", 1, True, True),
        ("distractor", 1, False, False)]  # by seed, then kind; a twin is a look-alike
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
