"""The default inference (``stats.bootstrap_unit: task_x_item``): tasks and canary items as
crossed random factors, CR2 variances with Bell-McCaffrey degrees of freedom.

Checked against independent computations: a dense-matrix CR2 and Bell-McCaffrey (the
textbook formulas, N x N matrices) on unbalanced clusters; the two-way variance against a
linear mixed model with crossed random effects for task and item (statsmodels MixedLM,
variance components) on the same simulated data; the exact bound of a zero rate; and the
agreement of every interval with its own test.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pytest
from fakes.runs import make_runs
from scipy import linalg, special
from scipy import stats as sps

from canarykit import stats
from canarykit.testing.synthetic import synthetic_runs
from canarykit.types import CANARY_TYPES


def _resampler(tasks: Any) -> stats.CrossedResampler:
    boot = stats.make_resampler("task_x_item", np.unique(np.asarray(tasks)), 10, 1)
    assert isinstance(boot, stats.CrossedResampler)
    return boot


# --------------------------------------------------------------------------- CR2 and Bell-McCaffrey, dense


def _dense_cr2(y: np.ndarray, x: np.ndarray, clusters: np.ndarray, c: np.ndarray) -> tuple[float, float]:
    """CR2 variance of ``c'beta`` and its Bell-McCaffrey df, with explicit N x N matrices
    (Bell & McCaffrey 2002; Pustejovsky & Tipton 2018, eq. 11 and the Satterthwaite df)."""
    n = y.size
    m = np.linalg.pinv(x.T @ x)
    hat = x @ m @ x.T
    resid = y - hat @ y
    imh = np.eye(n) - hat
    v = 0.0
    gmat = []
    for g in np.unique(clusters):
        idx = np.flatnonzero(clusters == g)
        w, u = linalg.eigh(imh[np.ix_(idx, idx)])
        inv_sqrt = u @ np.diag(np.where(w > 1e-10, 1.0 / np.sqrt(np.maximum(w, 1e-300)), 0.0)) @ u.T
        p_g = inv_sqrt @ x[idx] @ m @ c
        v += float(p_g @ resid[idx]) ** 2
        gmat.append(imh[:, idx] @ p_g)
    gm = np.column_stack(gmat)
    gamma = gm.T @ gm
    return v, float(np.trace(gamma) ** 2 / np.sum(gamma**2))


def test_cr2_and_bell_mccaffrey_match_the_dense_formulas() -> None:
    rng = np.random.default_rng(4)
    # two samples (e.g. canary and twin runs) over 9 unbalanced tasks, some tasks on one side only
    sizes_a = [1, 2, 5, 3, 0, 4, 2, 1, 6]
    sizes_b = [2, 0, 3, 3, 4, 1, 2, 5, 1]
    tasks_a = np.repeat([f"t{i}" for i in range(9)], sizes_a)
    tasks_b = np.repeat([f"t{i}" for i in range(9)], sizes_b)
    ya = (rng.random(tasks_a.size) < 0.4).astype(float)
    yb = (rng.random(tasks_b.size) < 0.25).astype(float)
    a, b = stats.Sample(ya, tasks_a), stats.Sample(yb, tasks_b)
    est = _resampler(np.concatenate([tasks_a, tasks_b])).draws(None, [a, b])
    y = np.concatenate([ya, yb])
    x = np.zeros((y.size, 2))
    x[: ya.size, 0] = 1.0
    x[ya.size :, 1] = 1.0
    clusters = np.concatenate([tasks_a, tasks_b])
    for k, (c, got) in enumerate(((np.array([1.0, -1.0]), est.differences([(0, 1)])), (np.array([1.0, 0.0]), est.take([0])))):
        v, df = _dense_cr2(y, x, clusters, c)
        assert got.se()[0] ** 2 == pytest.approx(v, rel=1e-9), k
        assert got.df()[0] == pytest.approx(df, rel=1e-9), k
        assert got.clusters()[0] == (9 if k == 0 else 8)
    # balanced clusters, one sample: CR2 is CR1 (G/(G-1)) and the df are G - 1
    bal = stats.Sample((rng.random(30) < 0.3).astype(float), np.repeat([f"t{i}" for i in range(10)], 3))
    lin = _resampler(bal.tasks).draws(None, [bal])
    cr1 = stats.cr1_wald(stats.make_resampler("task", np.unique(bal.tasks), 10, 1), [bal], np.ones((1, 1)))
    assert lin.se()[0] == pytest.approx(cr1["se"][0], rel=1e-12) and lin.df()[0] == pytest.approx(9.0)


def test_one_item_or_none_is_clustering_by_task() -> None:
    rng = np.random.default_rng(1)
    tasks = np.repeat([f"t{i}" for i in range(12)], 3)
    y = (rng.random(tasks.size) < 0.3).astype(float)
    boot = _resampler(tasks)
    plain = boot.draws(None, [stats.Sample(y, tasks)])
    one = boot.draws(None, [stats.Sample(y, tasks, None, np.full(tasks.size, "semantic_decoy:get_weather"))])
    blank = boot.draws(None, [stats.Sample(y, tasks, None, np.full(tasks.size, ""))])
    for other in (one, blank):
        assert other.se()[0] == plain.se()[0] and other.df()[0] == plain.df()[0] and other.items()[0] == 0
    # a twin (control:<id>) is its canary's item
    assert list(stats._sample.item_key(["control:a:b@v2", "a:b@v2", None])) == ["a:b@v2", "a:b@v2", ""]


# --------------------------------------------------------------------------- against a crossed mixed model


def test_two_way_se_agrees_with_a_crossed_random_effects_model() -> None:
    """On data with crossed task and item effects, the two-way CR2 standard error of a rate is
    the mixed model's within 10% on every data set, while clustering by task alone
    misses the item variance (about 35% too small here)."""
    import statsmodels.api as sm

    rng = np.random.default_rng(3)
    n_tasks, n_items = 30, 12
    g, h = (m.ravel() for m in np.meshgrid(np.arange(n_tasks), np.arange(n_items), indexing="ij"))
    tasks = np.array([f"t{i:02d}" for i in g])
    items = np.array([f"semantic_decoy:tool{j:02d}@v1" for j in h])
    for _ in range(3):
        a, b = rng.normal(0, 1.0, n_tasks), rng.normal(0, 1.0, n_items)
        y = (rng.random(g.size) < special.expit(-0.6 + a[g] + b[h])).astype(float)
        frame = pd.DataFrame({"y": y, "task": tasks, "item": items, "one": 1})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = sm.MixedLM.from_formula("y ~ 1", groups="one", vc_formula={"task": "0 + C(task)", "item": "0 + C(item)"},
                                          data=frame).fit(reml=True)
        assert fit.converged
        se_mixed = float(fit.bse["Intercept"])
        boot = _resampler(tasks)
        crossed = boot.draws(None, [stats.Sample(y, tasks, None, items)])
        by_task = boot.draws(None, [stats.Sample(y, tasks)])
        assert crossed.items()[0] == n_items
        assert crossed.se()[0] == pytest.approx(se_mixed, rel=0.10)
        assert by_task.se()[0] < 0.8 * se_mixed


# --------------------------------------------------------------------------- intervals and their tests


def test_a_zero_rate_gets_the_exact_cluster_bound() -> None:
    tasks = np.repeat([f"t{i}" for i in range(10)], 3)
    lin = _resampler(tasks).draws(None, [stats.Sample(np.zeros(30), tasks)])
    (lo,), (hi,) = lin.intervals(0.05)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** (1 / 10))
    full = _resampler(tasks).draws(None, [stats.Sample(np.ones(30), tasks)])
    (lo,), (hi,) = full.intervals(0.05)
    assert hi == 1.0 and lo == pytest.approx(0.025 ** (1 / 10))


def test_a_skewed_rate_interval_stays_bounded() -> None:
    """One trapped task in ten: Hall's correction lifts the upper bound, capped near the
    exact bound for one positive cluster of ten (0.445), never near 1."""
    tasks = np.repeat([f"t{i}" for i in range(10)], 3)
    y = np.zeros(30)
    y[:3] = 1.0
    lin = _resampler(tasks).draws(None, [stats.Sample(y, tasks)])
    (lo,), (hi,) = lin.intervals(0.05)
    plain = 0.1 + sps.t.ppf(0.975, 9) * lin.se()[0]
    assert lo == 0.0 and plain < hi < 0.55


def test_every_interval_agrees_with_its_test() -> None:
    """For deltas and rates the interval at 1 - alpha excludes the null exactly when the
    two-sided p is below alpha (Hall's pivot for both); one-sided and TOST p-values follow
    the same pivot."""
    rng = np.random.default_rng(8)
    for k in range(40):
        n_tasks = int(rng.integers(6, 40))
        tasks = np.repeat([f"t{i}" for i in range(n_tasks)], 3)
        items = np.array([f"x:tool{i % 4}@v{1 + (i % 3)}" for i in range(tasks.size)])
        a = stats.Sample((rng.random(tasks.size) < rng.uniform(0.05, 0.6)).astype(float), tasks, None, items)
        b = stats.Sample((rng.random(tasks.size) < rng.uniform(0.05, 0.6)).astype(float), tasks, None, items)
        d = stats.paired_delta(_resampler(tasks), a, b, label=("d",), alpha=0.1)
        if d["lo"] is None or d["se"] == 0:
            continue
        excludes = d["lo"] > 0 or d["hi"] < 0
        assert excludes == (d["p"] < 0.1), (k, d)
        assert d["few_clusters"] == (n_tasks < 30) and d["clusters"] == n_tasks
        one_sided = float(stats.t_p_value(d["delta"], d["se"], d["df"], 0.0, "greater", d["skew"]))
        pivot = float(stats.hall(d["delta"] / d["se"], d["skew"]))
        assert one_sided == pytest.approx(d["p"] / 2 if pivot > 0 else 1 - d["p"] / 2, abs=1e-9)
        tost = float(stats.tost_p(d["delta"], d["se"], d["df"], 0.3, d["skew"]))
        lower = float(stats.t_p_value(d["delta"], d["se"], d["df"], -0.3, "greater", d["skew"]))
        upper = float(stats.t_p_value(d["delta"], d["se"], d["df"], 0.3, "less", d["skew"]))
        assert tost == max(lower, upper)
    # without skew the p-values are Student's t
    assert float(stats.t_p_value(0.2, 0.1, 9)) == pytest.approx(2 * sps.t.sf(2.0, 9))
    assert float(stats.tost_p(0.0, 0.05, 9, 0.1)) == pytest.approx(sps.t.sf(2.0, 9))


def test_cluster_robust_rate_is_the_tost_ingredient() -> None:
    tasks = np.repeat([f"t{i}" for i in range(20)], 3)
    y = (np.random.default_rng(2).random(60) < 0.3).astype(float)
    s = stats.Sample(y, tasks)
    got = stats.cluster_robust_rate(_resampler(tasks), s)
    lin = _resampler(tasks).draws(None, [s])
    assert got["estimate"] == pytest.approx(y.mean()) and got["se"] == pytest.approx(lin.se()[0])
    assert got["df"] == pytest.approx(19.0) and got["clusters"] == 20 and got["few_clusters"] is True
    task = stats.cluster_robust_rate(stats.make_resampler("task", np.unique(tasks), 10, 1), s)
    assert task["se"] == pytest.approx(lin.se()[0]) and task["df"] == 19.0  # balanced: CR1 = CR2


# --------------------------------------------------------------------------- the study


def _with_items(df: pl.DataFrame, variants: int = 3) -> pl.DataFrame:
    task = pl.col("task_id").rank("dense").cast(pl.Int64)
    variant = ((pl.col("seed") + task) % variants + 1)
    suffix = pl.when(variant == 1).then(pl.lit("")).otherwise(pl.concat_str([pl.lit("@v"), variant.cast(pl.String)]))
    cols = [pl.when(pl.col(f"present_{t}")).then(pl.concat_str([pl.lit(f"{t}:tool"), (task % 5).cast(pl.String), suffix]))
            .otherwise(None).alias(f"item_{t}") for t in CANARY_TYPES]
    return df.with_columns(cols)


@pytest.fixture(scope="module")
def crossed() -> tuple[pl.DataFrame, dict[str, Any]]:
    df = _with_items(synthetic_runs(n_models=3, seeds=3, tasks=24, seed=5))
    flip = (pl.int_range(pl.len()) % 7) == 0
    df = df.with_columns(pl.when(flip).then(~pl.col("success")).otherwise(pl.col("success")).alias("success_cross"))
    return df, stats.compute_all(df, stats.StatsConfig(resamples=100))


def test_per_type_rates_are_item_crossed_and_items_are_tabled(crossed: tuple[pl.DataFrame, dict[str, Any]], tmp_path: Any) -> None:
    df, r = crossed
    assert r["meta"]["bootstrap_unit"] == "task_x_item" and r["meta"]["interval_method"] == "cr2_t"
    e = r["trap_rate_ci"]["declared"]["frontier-1"]["semantic_decoy"]
    assert e["items"] >= 2 and e["few_clusters"] is True and e["lo"] <= e["rate"] <= e["hi"]
    # the per-item table: each item's rate over its own runs, variants named by the id
    d = df.filter((pl.col("condition") == "declared") & (pl.col("pool") == "standard") & (pl.col("model") == "frontier-1")
                  & ~pl.col("error") & pl.col("present_semantic_decoy") & (pl.col("tool_calls") > 0))
    per = r["items"]["frontier-1"]["semantic_decoy"]
    assert sum(v["n"] for v in per.values()) == d.height
    for item, v in per.items():
        sel = d.filter(pl.col("item_semantic_decoy") == item)
        assert v["n"] == sel.height and v["rate"] == pytest.approx(sel["trapped_semantic_decoy"].cast(pl.Float64).mean())
        assert v["variant"] == (int(item.rsplit("@v", 1)[1]) if "@v" in item else 1) and v["condition"] == "declared"
    written = stats.write_outputs(r, tmp_path)
    table = pl.read_csv(tmp_path / "table_items.csv")
    assert (tmp_path / "table_items.md") in written and table.height == sum(len(p) for m in r["items"].values() for p in m.values())
    assert set(table.columns) >= {"model", "type", "item", "variant", "condition", "rate", "n", "tasks"}


def test_items_change_the_interval_not_the_estimate(crossed: tuple[pl.DataFrame, dict[str, Any]]) -> None:
    df, r = crossed
    plain = stats.compute_all(df.drop([f"item_{t}" for t in CANARY_TYPES]), stats.StatsConfig(resamples=100))
    a, b = r["trap_rate_ci"]["declared"]["frontier-2"], plain["trap_rate_ci"]["declared"]["frontier-2"]
    for t in CANARY_TYPES:
        assert a[t]["rate"] == b[t]["rate"] and b[t]["items"] is None
    assert any(a[t]["hi"] - a[t]["lo"] != b[t]["hi"] - b[t]["lo"] for t in CANARY_TYPES if a[t]["lo"] is not None)
    assert plain["items"] == {}


def test_primary_families_holm_across_models_and_types(crossed: tuple[pl.DataFrame, dict[str, Any]]) -> None:
    _, r = crossed
    prim = r["primary"]
    assert prim["families"] == ["control_effect", "trap_rate"]
    fam = prim["trap_rate"]
    members = [m.split("/") for m in fam["members"]]
    assert {m for m, _ in members} == set(r["meta"]["tested_models"]) and fam["size"] == len(members) > 6
    ps = [fam["results"][m][t]["p"] for m, t in members]
    adjusted = stats.holm(ps)
    for (m, t), ph in zip(members, adjusted, strict=True):
        e = fam["results"][m][t]
        assert e["p_holm"] == pytest.approx(ph) and e["significant"] == (ph < 0.05)
        # one-sided: the rate exceeds the margin
        assert (e["p"] < 0.5) == (e["rate"] > fam["margin"]) or e["p"] in (0.0, 1.0)
    roles = {name: f["role"] for name, f in r["families"].items()}
    assert roles["control_effect"] == "primary" and roles["contrasts.declared"] == "secondary"
    assert roles["fisher_holm.declared"] == roles["chi2.full"] == "replication"


def test_judge_sensitivity_recomputes_tsr_under_the_cross_judge(crossed: tuple[pl.DataFrame, dict[str, Any]], tmp_path: Any) -> None:
    df, r = crossed
    sens = r["judge_sensitivity"]
    assert sens["available"] is True
    assert "truncated" not in df.columns  # no truncated run: tsr is over every judged run
    d = df.filter((pl.col("condition") == "full") & (pl.col("pool") == "standard") & (pl.col("model") == "frontier-2") & ~pl.col("error"))
    cross = d["success_cross"].drop_nulls().cast(pl.Float64).mean()
    assert sens["tsr"]["full"]["frontier-2"] == pytest.approx(cross)
    assert sens["difference"]["full"]["frontier-2"] == pytest.approx(r["tsr"]["full"]["frontier-2"] - cross)
    assert set(sens) >= {"tsr_ci", "tsr_delta", "spearman_by_model", "association", "recovery_outcome"}
    stats.write_outputs(r, tmp_path)
    table = pl.read_csv(tmp_path / "table_judge_sensitivity.csv")
    assert set(table["judge"]) == {"primary", "cross"}
    row = table.filter((pl.col("condition") == "full") & (pl.col("model") == "frontier-2") & (pl.col("judge") == "cross"))
    assert row["tsr"][0] == pytest.approx(cross)
    # no cross verdicts: said, not invented
    alone = stats.compute_all(df.drop("success_cross"), stats.StatsConfig(resamples=50))["judge_sensitivity"]
    assert alone["available"] is False and "success_cross" in alone["note"]


def test_ablation_unchanged_is_an_equivalence_test() -> None:
    df = make_runs(
        [{"model": "m1", "pool": pool, "task_id": f"t{i}", "seed": s, "tool_calls": 4, "canary_calls": c, "trapped": c > 0,
          "recovered": None if c == 0 else True}
         for i in range(40) for s in range(3) for pool, c in (("standard", int((i + s) % 3 == 0)), ("subtle", int((i + s) % 3 == 0)))]
    )
    r = stats.compute_all(df, stats.StatsConfig(resamples=50, test_groups=("g1",)))
    e = r["ablation"]["models"]["m1"]
    # identical pools: delta 0 without variance, shown within any margin
    assert e["delta"] == 0 and e["tost_p"] == 0.0 and e["verdict"] == "unchanged" and e["margin"] == 0.1
    g = r["ablation"]["groups"]["g1"]
    assert g["standard"] == pytest.approx(e["standard"]) and g["standard_lo"] <= g["standard"] <= g["standard_hi"]
    assert stats.verdict(0.01, 0.2, 0.05) == "changed" and stats.verdict(0.01, 0.01, 0.05) == "changed, within margin"
    assert stats.verdict(0.3, 0.01, 0.05) == "unchanged" and stats.verdict(0.3, 0.2, 0.05) == "inconclusive"


def test_a_difference_far_from_zero_keeps_a_small_p_under_the_skewness_correction() -> None:
    """Hall's cubic flattens at t = -1/a: a careful agent that never takes the canary and takes
    its twin in 76% of 38 tasks (t = -12 at 3.5 df) read p = 0.03 there, and Holm made it
    'inconclusive'. Beyond the point the intervals are calibrated to, the pivot moves one for
    one with t: the correction stays monotone and invertible, and a far difference stays far."""
    t = np.linspace(-40.0, 40.0, 4001)
    for skew in (-1.2, -0.3, 0.0, 0.3, 1.2):
        g = stats.hall(t, skew)
        assert np.all(np.diff(g) > 0), skew
        np.testing.assert_allclose(stats.hall_inverse(g, skew), t, atol=1e-9)
    p = float(stats.t_p_value(-0.763, 0.0617, 3.51, 0.0, "two-sided", 0.3))
    assert p < 0.002
    # further out, smaller still
    assert float(stats.t_p_value(-1.5, 0.0617, 3.51, 0.0, "two-sided", 0.3)) < p
