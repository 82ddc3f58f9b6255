"""The task-blocked permutation test of trap rates across models (``trap_permutation``) and
the choice between it and the logistic GEE (``trap_test``): checked against a plain loop,
for uniform permutations, for its type-I error on simulated studies with task effects, and
on the extreme case GEE cannot fit (a model that is never trapped)."""

from __future__ import annotations

from collections import Counter
from itertools import permutations

import numpy as np
import polars as pl
import pytest
from fakes.runs import make_runs
from scipy import stats as sps

from canarykit import stats
from canarykit.stats._tests import block_permutations


def _design(rng: np.random.Generator, tasks: int = 12, models: int = 4, seeds: int = 3, holes: bool = True) -> dict[str, np.ndarray]:
    """Runs with task effects; with ``holes`` some (task, model) cells have no run."""
    t = np.repeat(np.arange(tasks), models * seeds)
    g = np.tile(np.repeat(np.arange(models), seeds), tasks)
    p = 1 / (1 + np.exp(-(rng.normal(-0.5, 1.2, tasks)[t] + 0.4 * g)))
    y = (rng.random(t.size) < p).astype(float)
    keep = np.ones(t.size, bool)
    if holes:
        keep &= ~((t % 5 == 0) & (g == 1)) & ~((t == 3) & (g >= 2))
    return {"y": y[keep], "g": np.array([f"m{i}" for i in g[keep]]), "t": np.array([f"t{i:02d}" for i in t[keep]])}


def _loop_statistic(y: np.ndarray, g: np.ndarray) -> float:
    rates = {}
    pooled = sum(y) / len(y)
    for name in sorted(set(g)):
        vals = [v for v, h in zip(y, g, strict=True) if h == name]
        rates[name] = (len(vals), sum(vals) / len(vals))
    return sum(n * (r - pooled) ** 2 for n, r in rates.values())


def test_permutation_test_equals_a_plain_loop() -> None:
    """Same permutations, relabelled run by run in a loop: same statistics, same p."""
    d = _design(np.random.default_rng(3))
    b = 300
    got = stats.permutation_group_test(d["y"], d["g"], d["t"], resamples=b, rng=np.random.default_rng(7), chunk_elements=10**9)
    names = sorted(set(d["g"]))
    tasks = sorted(set(d["t"]))
    present = np.array([[np.any((d["t"] == t) & (d["g"] == m)) for m in names] for t in tasks])
    mixing = present.sum(axis=1) >= 2
    src = block_permutations(np.random.default_rng(7), present[mixing], b)  # the permutations the test draws
    mixing_tasks = [t for t, mix in zip(tasks, mixing, strict=True) if mix]
    observed = _loop_statistic(list(d["y"]), list(d["g"]))
    assert got["statistic"] == pytest.approx(observed, rel=1e-12)
    exceed = 0
    for r in range(b):
        labels = list(d["g"])
        for i, (task, model) in enumerate(zip(d["t"], d["g"], strict=True)):
            if task not in mixing_tasks:
                continue
            k = mixing_tasks.index(task)
            # group q receives the block of group src[r, k, q]: a run of `model` is relabelled q
            receivers = [q for q in range(len(names)) if names[src[r, k, q]] == model]
            assert len(receivers) == 1
            labels[i] = names[receivers[0]]
        exceed += _loop_statistic(list(d["y"]), labels) >= observed - 1e-9
    assert got["p"] == pytest.approx((1 + exceed) / (b + 1), abs=1e-15)
    assert got["clusters"] == len(tasks) and got["blocks"] == int(present.sum()) and got["n"] == d["y"].size
    # chunking does not change the stream
    chunked = stats.permutation_group_test(d["y"], d["g"], d["t"], resamples=b, rng=np.random.default_rng(7), chunk_elements=50)
    assert chunked["p"] == got["p"]


@pytest.mark.parametrize("present", [[[True, True, True]], [[True, False, True, True]]], ids=["table", "keys"])
def test_block_permutations_are_uniform_over_the_present_groups(present: list[list[bool]]) -> None:
    pm = np.array(present * 5)
    src = block_permutations(np.random.default_rng(1), pm, 6000)
    here = np.flatnonzero(pm[0])
    for row in src.reshape(-1, pm.shape[1]):
        assert sorted(row[here].tolist()) == here.tolist()  # a permutation of the present groups
        assert all(row[k] == k for k in range(pm.shape[1]) if not pm[0, k])  # absent groups receive nothing
    counts = Counter(tuple(row[here]) for row in src.reshape(-1, pm.shape[1]))
    assert set(counts) == set(permutations(here.tolist()))
    assert sps.chisquare(list(counts.values())).pvalue > 1e-3


def _null_study(rng: np.random.Generator, tasks: int = 30, models: int = 4, seeds: int = 3) -> dict[str, np.ndarray]:
    """No model differs on average, but each (task, model) has its own propensity (models
    disagree task by task) and a model's seeds share it: runs are correlated within blocks."""
    t = np.repeat(np.arange(tasks), models * seeds)
    g = np.tile(np.repeat(np.arange(models), seeds), tasks)
    logit = rng.normal(-1.8, 1.0, tasks)[:, None] + rng.normal(0.0, 1.5, (tasks, models))
    p = 1 / (1 + np.exp(-logit[t, g]))
    y = (rng.random(t.size) < p).astype(float)
    return {"y": y, "g": np.array([f"m{i}" for i in g]), "t": np.array([f"t{i:02d}" for i in t])}


def test_permutation_test_holds_its_level_under_task_correlated_runs() -> None:
    """Type-I error on 400 simulated null studies is alpha within 3 Monte Carlo SE, while
    the paper's chi-square on the same studies (runs as independent) rejects far more often."""
    rng = np.random.default_rng(20261201)
    n_studies, b, alpha = 400, 199, 0.05
    perm_rejects = chi2_rejects = 0
    for _ in range(n_studies):
        d = _null_study(rng)
        res = stats.permutation_group_test(d["y"], d["g"], d["t"], resamples=b, rng=rng)
        perm_rejects += res["p"] <= alpha
        table = np.array([[d["y"][d["g"] == m].sum(), (1 - d["y"][d["g"] == m]).sum()] for m in sorted(set(d["g"]))])
        chi2_rejects += stats.chi2_independence(table)["p"] <= alpha
    se = np.sqrt(alpha * (1 - alpha) / n_studies)
    rate = perm_rejects / n_studies
    print(f"type-I error: permutation {rate:.3f}, chi-square {chi2_rejects / n_studies:.3f} (SE {se:.3f})")
    assert abs(rate - alpha) <= 3 * se
    assert chi2_rejects / n_studies > alpha + 4 * se  # the simulation's correlation is real


def _two_models(trap_b: float, trap_a: float = 0.0, tasks: int = 30) -> pl.DataFrame:
    rows = []
    for i in range(tasks):
        for seed in range(2):
            for m, rate in (("a", trap_a), ("b", trap_b)):
                hit = (i * 2 + seed) % 10 < round(rate * 10)
                rows.append({"model": m, "group": "tested", "task_id": f"t{i:02d}", "seed": seed,
                             "present_semantic_decoy": True, "trapped_semantic_decoy": hit, "trapped": hit,
                             "canary_calls": int(hit), "recovered": False if hit else None})
    return make_runs(rows)


def test_a_never_trapped_model_is_answered_by_the_permutation_test() -> None:
    """Model a never trapped vs model b trapped half the time: GEE leaves a out (p null);
    the permutation test keeps both and finds the difference; trap_test says who answered."""
    r = stats.compute_all(_two_models(0.5), stats.StatsConfig(resamples=999))
    gee, perm, tt = r["gee_trap"]["declared"], r["trap_permutation"]["declared"], r["trap_test"]["declared"]
    assert gee["p"] is None and gee["excluded"] == ["a"]
    assert perm["groups"] == ["a", "b"] and perm["rates"] == {"a": 0.0, "b": 0.5}
    assert perm["p"] == pytest.approx(1 / 1000)  # no permutation is as extreme
    assert tt["test"] == "trap_permutation" and tt["p"] == perm["p"] and "a never or always trapped" in tt["gee_not_used"]
    fam = r["families"]["trap_test.declared"]
    assert fam["answered_by"] == "trap_permutation" and fam["members"] == ["a", "b"] and fam["size"] == 1
    # both models vary: GEE answers, the permutation test is reported beside it
    r2 = stats.compute_all(_two_models(0.5, trap_a=0.2), stats.StatsConfig(resamples=999))
    tt2 = r2["trap_test"]["declared"]
    assert tt2["test"] == "gee_trap" and tt2["gee_not_used"] is None and tt2["p"] == r2["gee_trap"]["declared"]["p"]
    assert r2["trap_permutation"]["declared"]["p"] < 0.05
    # nothing trapped at all (baseline-like): no test applies, and it says so
    r3 = stats.compute_all(_two_models(0.0), stats.StatsConfig(resamples=99))
    assert r3["trap_test"]["declared"]["test"] is None and "no run is trapped" in r3["trap_test"]["declared"]["reason"]


def test_permutation_test_on_the_synthetic_study() -> None:
    """On the synthetic 4-model study, the permutation test agrees with GEE that the models differ."""
    from canarykit.testing.synthetic import synthetic_runs

    r = stats.compute_all(synthetic_runs(n_models=4, seeds=3, tasks=40, seed=3), stats.StatsConfig(resamples=500))
    perm, gee = r["trap_permutation"]["declared"], r["gee_trap"]["declared"]
    assert perm["groups"] == gee["groups"] and perm["resamples"] == 500
    assert perm["p"] <= 0.01 and gee["p"] <= 0.01
    assert r["families"]["trap_permutation.declared"]["members"] == perm["groups"]
