"""The default inference (``stats.bootstrap_unit: task_x_item``): tasks, tools and wordings
as crossed random factors, CR2 variances with Bell-McCaffrey degrees of freedom.

Checked against independent computations: a dense-matrix CR2 and Bell-McCaffrey (the
textbook formulas, N x N matrices) on unbalanced clusters, and the whole crossed variance
and its degrees of freedom rebuilt from dense CR2 terms (tasks nested in tools, and crossed
with them); the crossed standard error against a linear mixed model with crossed random
effects for task, tool and wording (statsmodels MixedLM, variance components) on the same
simulated data; the exact bound of a zero rate; and the agreement of every interval with its
own test.
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
        assert other.se()[0] == plain.se()[0] and other.df()[0] == plain.df()[0] and other.tools()[0] == 0
    # one item: one tool and one wording (derived from the id: variant 1), neither a factor
    assert (one.items()[0], one.wordings()[0], blank.items()[0], blank.wordings()[0]) == (1, 1, 0, 0)
    # a twin (control:<id>) is its canary's item; the tool is the real tool, the wording the variant
    assert list(stats.item_key(["control:a:b@v2", "a:b@v2", None])) == ["a:b@v2", "a:b@v2", ""]
    assert list(stats.tool_of(["semantic_decoy:get_weather@v2", "parameter_trap:get_weather", ""])) == [
        "get_weather", "get_weather", ""]
    assert list(stats.wording_of(["semantic_decoy:get_weather@v2", "semantic_decoy:x", ""])) == [
        "semantic_decoy/v2", "semantic_decoy/v1", ""]


# --------------------------------------------------------------------------- three factors, dense


def _design(rng: np.random.Generator, nested: bool) -> tuple[np.ndarray, ...]:
    """Unbalanced runs of two samples (a canary and its twin side) over 10 tasks, 4 tools
    (tasks nested in tools, or crossed with them) and 3 wordings."""
    n = 70
    task = rng.integers(0, 10, n)
    tool = task % 4 if nested else rng.integers(0, 4, n)
    word = rng.integers(0, 3, n)
    side = rng.integers(0, 2, n)
    y = (rng.random(n) < 0.25 + 0.25 * (word == 1) + 0.2 * side).astype(float)
    return task, tool, word, side, y


def _dense_crossed(task: np.ndarray, tool: np.ndarray, word: np.ndarray, side: np.ndarray, y: np.ndarray,
                   c: np.ndarray) -> tuple[float, float]:
    """The crossed variance of ``sum_b c_b ybar_b`` and its df by the textbook formulas, N x N:
    CR2 with sample x wording means for the task/tool part (CGM two-way), the wording
    contrasts' task/tool variance, the one-way CR2 by wording with sample means, and the
    Satterthwaite combination (stats._crossed's docstring)."""
    x = np.column_stack([side == b for b in (0, 1)]).astype(float)
    sub = side * 3 + word
    xs = np.column_stack([sub == j for j in range(6)]).astype(float)
    n_b = x.sum(axis=0)
    pi = xs.sum(axis=0) / n_b[np.arange(6) // 3]
    cs = c[np.arange(6) // 3] * pi

    def two_way(coef: np.ndarray) -> tuple[float, float]:
        vt, dft = _dense_cr2(y, xs, task, coef)
        vo, _ = _dense_cr2(y, xs, tool, coef)
        vc, _ = _dense_cr2(y, xs, task * 4 + tool, coef)
        return vt + vo - vc, dft

    given, _ = two_way(cs)
    _, df_task = _dense_cr2(y, x, task, c)
    _, df_tool = _dense_cr2(y, x, tool, c)
    v_task, _ = _dense_cr2(y, xs, task, cs)
    v_tool_part = given - v_task
    nested = np.unique(task * 4 + tool).size == np.unique(task).size
    df_given = df_tool if nested else given**2 / (v_task**2 / df_task + max(v_tool_part, 0.0) ** 2 / df_tool)
    noise = 0.0
    for w in range(3):
        a = np.array([1 / np.sqrt(1 - pi[b * 3 + w]) for b in (0, 1)])
        zc = np.array([c[b] * a[b] * pi[b * 3 + w] * ((j % 3 == w) - pi[j]) for j in range(6) for b in [j // 3]])
        noise += two_way(zc)[0]
    v_word, df_word = _dense_cr2(y, x, word, c)
    comp = max(v_word - noise, 0.0)
    total = given + comp
    df = total**2 / (given**2 / df_given + (v_word**2 / df_word if comp > 0 else 0.0))
    return total, max(df, 1.0)  # the t quantile's df are floored at 1


@pytest.mark.parametrize("nested", [True, False])
def test_the_crossed_variance_matches_the_dense_formulas(nested: bool) -> None:
    rng = np.random.default_rng(7 if nested else 8)
    for _ in range(4):
        task, tool, word, side, y = _design(rng, nested)
        labels = [f"t{i}" for i in task]
        samples = [stats.Sample(y[side == b], np.asarray(labels)[side == b], None,
                                np.array([f"semantic_decoy:tool{o}@v{w + 1}" for o, w in zip(tool, word, strict=True)])[side == b],
                                np.array([f"semantic_decoy/{w + 1:02d}" for w in word])[side == b]) for b in (0, 1)]
        lin = _resampler(labels).draws(None, samples)
        for c, est in ((np.array([1.0, -1.0]), lin.differences([(0, 1)])), (np.array([1.0, 0.0]), lin.take([0]))):
            v, df = _dense_crossed(task, tool, word, side, y, c)
            assert est.se()[0] ** 2 == pytest.approx(v, rel=1e-9)
            assert est.df()[0] == pytest.approx(df, rel=1e-9)
            assert est.wordings()[0] == 3 and est.tools()[0] == 4


def test_without_a_wording_effect_the_wording_part_is_often_zero_and_never_negative() -> None:
    """The wording component is a positive part: with three wordings and no effect of their
    own it is truncated to 0 in most studies (the spread of three wordings exceeds its noise
    with probability about e^-1), and it is never negative."""
    rng = np.random.default_rng(5)
    zero = 0
    for _ in range(60):
        task, tool, word, side, y = _design(rng, nested=True)
        y = (rng.random(y.size) < 0.3).astype(float)
        labels = np.array([f"t{i}" for i in task])
        s = stats.Sample(y, labels, None, np.array([f"x:tool{o}" for o in tool]), np.array([f"x/{w}" for w in word]))
        lin = _resampler(labels).draws(None, [s])
        share = float(lin.wording_share()[0])
        assert 0.0 <= share < 1.0
        zero += share == 0.0
    assert 15 <= zero <= 50  # P(chi2_2 / 2 < 1) = 0.63: the component is truncated in most studies


# --------------------------------------------------------------------------- against a crossed mixed model


def test_the_crossed_se_agrees_with_a_crossed_random_effects_model() -> None:
    """On data with crossed task, tool and wording effects (36 tasks on 12 tools, 8 wordings,
    each task offered each wording), the standard error of a rate is the mixed model's
    (statsmodels MixedLM, REML variance components for task, tool and wording): within 10%
    in the median over data sets, within 30% in each, while clustering by task alone is far
    too small. The two are different estimators of the same variance (moments and REML), so
    they agree as two estimates do, not to rounding."""
    import statsmodels.api as sm

    rng = np.random.default_rng(3)
    g = np.repeat(np.arange(36), 8)
    s = np.tile(np.arange(8), 36)
    tool, word = g // 3, (s + g) % 8
    tasks = np.array([f"t{i:02d}" for i in g])
    items = np.array([f"semantic_decoy:tool{o}@v{w + 1}" for o, w in zip(tool, word, strict=True)])
    words = np.array([f"semantic_decoy/{w + 1:02d}" for w in word])
    ratios = []
    for _ in range(6):
        a, b, c = rng.normal(0, 0.8, 36), rng.normal(0, 0.5, 12), rng.normal(0, 0.8, 8)
        y = (rng.random(g.size) < special.expit(-0.6 + a[g] + b[tool] + c[word])).astype(float)
        frame = pd.DataFrame({"y": y, "task": tasks, "tool": tool.astype(str), "word": words, "one": 1})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = sm.MixedLM.from_formula("y ~ 1", groups="one", data=frame, vc_formula={
                "task": "0 + C(task)", "tool": "0 + C(tool)", "word": "0 + C(word)"}).fit(reml=True, method=["lbfgs"])
        if not fit.converged:
            continue
        se_mixed = float(fit.bse["Intercept"])
        boot = _resampler(tasks)
        crossed = boot.draws(None, [stats.Sample(y, tasks, None, items, words)])
        by_task = boot.draws(None, [stats.Sample(y, tasks)])
        assert (crossed.tools()[0], crossed.wordings()[0]) == (12, 8)
        ratios.append(float(crossed.se()[0]) / se_mixed)
        assert by_task.se()[0] < 0.75 * se_mixed
    assert len(ratios) >= 4
    assert abs(np.median(ratios) - 1.0) <= 0.10 and all(0.7 <= r <= 1.3 for r in ratios), ratios


# --------------------------------------------------------------------------- intervals and their tests


def test_a_zero_rate_gets_the_exact_cluster_bound() -> None:
    tasks = np.repeat([f"t{i}" for i in range(10)], 3)
    lin = _resampler(tasks).draws(None, [stats.Sample(np.zeros(30), tasks)])
    (lo,), (hi,) = lin.intervals(0.05)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** (1 / 10))
    full = _resampler(tasks).draws(None, [stats.Sample(np.ones(30), tasks)])
    (lo,), (hi,) = full.intervals(0.05)
    assert hi == 1.0 and lo == pytest.approx(0.025 ** (1 / 10))


def test_the_interval_is_the_plain_t_interval_clipped_to_the_possible_range() -> None:
    """No skewness correction (Hall's inflated the size of tests on rare nulls): one trapped
    task in ten gives estimate +- t(df) se, clipped at 0."""
    tasks = np.repeat([f"t{i}" for i in range(10)], 3)
    y = np.zeros(30)
    y[:3] = 1.0
    lin = _resampler(tasks).draws(None, [stats.Sample(y, tasks)])
    (lo,), (hi,) = lin.intervals(0.05)
    assert lo == 0.0 and hi == pytest.approx(0.1 + sps.t.ppf(0.975, lin.df()[0]) * lin.se()[0])


def test_every_interval_agrees_with_its_test() -> None:
    """For deltas and rates the interval at 1 - alpha excludes the null exactly when the
    two-sided t p is below alpha; one-sided and TOST p-values follow the same pivot."""
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
        assert d["few_clusters"] == (n_tasks < 30) and d["clusters"] == n_tasks and d["few_wordings"] is True
        one_sided = float(stats.t_p_value(d["delta"], d["se"], d["df"], 0.0, "greater"))
        assert one_sided == pytest.approx(d["p"] / 2 if d["delta"] > 0 else 1 - d["p"] / 2, abs=1e-9)
        tost = float(stats.tost_p(d["delta"], d["se"], d["df"], 0.3))
        lower = float(stats.t_p_value(d["delta"], d["se"], d["df"], -0.3, "greater"))
        upper = float(stats.t_p_value(d["delta"], d["se"], d["df"], 0.3, "less"))
        assert tost == max(lower, upper)
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
