"""Tests of canarykit.stats against independent computations and hand-built tables."""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from fakes import stats_loops as loops
from fakes.runs import make_runs
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from canarykit import stats
from canarykit.errors import InputError
from canarykit.testing.synthetic import (
    RECOVERED_SUCCESS,
    STUCK_SUCCESS,
    synthetic_profiles,
    synthetic_runs,
)
from canarykit.types import CANARY_TYPES

RESAMPLES = 1000


# --------------------------------------------------------------------------- helpers


def cfg(**kw: Any) -> stats.StatsConfig:
    """The task bootstrap (BCa) unless a test names another unit: these tests replay its draws."""
    kw.setdefault("bootstrap_unit", "task")
    return stats.StatsConfig(resamples=kw.pop("resamples", RESAMPLES), **kw)


@pytest.fixture(scope="module")
def synth() -> pl.DataFrame:
    return synthetic_runs(seed=7)


@pytest.fixture(scope="module")
def synth_result(synth: pl.DataFrame) -> dict[str, Any]:
    return stats.compute_all(synth, cfg())


@pytest.fixture(scope="module")
def synth_300(synth: pl.DataFrame) -> dict[str, Any]:
    """300 resamples: few enough to replay with a plain loop over resampled tasks."""
    return stats.compute_all(synth, cfg(resamples=300))


@pytest.fixture(scope="module")
def synth_run_unit(synth: pl.DataFrame) -> dict[str, Any]:
    return stats.compute_all(synth, cfg(bootstrap_unit="run"))


def _prim(df: pl.DataFrame, condition: str) -> pl.DataFrame:
    return df.filter(~pl.col("error") & (pl.col("pool") == "standard") & (pl.col("condition") == condition))


# --------------------------------------------------------------------------- metric definitions


def test_csr_mean_excludes_null_and_counts_zero_call() -> None:
    df = make_runs([
        {"tool_calls": 4, "canary_calls": 1, "trapped": True, "recovered": True},  # 0.25
        {"tool_calls": 2, "canary_calls": 1, "trapped": True, "recovered": False},  # 0.5
        {"tool_calls": 0, "canary_calls": 0, "success": False},  # undefined csr
        {"tool_calls": 3, "canary_calls": 0},  # 0.0
    ])
    r = stats.compute_all(df, cfg())
    e = r["csr_ci"]["declared"]["m1"]
    assert e["csr"] == pytest.approx(0.75 / 3)
    assert e["n"] == 3 and e["n_zero_call"] == 1 and e["n_runs"] == 4
    assert r["tsr"]["declared"]["m1"] == pytest.approx(0.75)
    rec = r["recovery"]["declared"]["m1"]
    assert (rec["rate"], rec["n"]) == (0.5, 2) and rec["lo"] <= 0.5 <= rec["hi"]


def test_recovery_denominator_and_zero_trapped(tmp_path: Path) -> None:
    df = make_runs(
        [{"model": "a", "canary_calls": 1, "trapped": True, "recovered": r} for r in (True, True, False, None)]
        + [{"model": "b", "group": "g2"} for _ in range(3)]
    )
    r = stats.compute_all(df, cfg())
    # a trapped run whose recovery is unknown counts in n but not as recovered
    assert {k: r["recovery"]["declared"]["a"][k] for k in ("rate", "n")} == {"rate": 0.5, "n": 4}
    assert r["recovery"]["declared"]["b"] == {"rate": None, "n": 0, "lo": None, "hi": None, "clusters": 0, "few_clusters": True}
    stats.write_outputs(r, tmp_path)
    md = (tmp_path / "table1.md").read_text()
    b_line = next(line for line in md.splitlines() if line.startswith("| b "))
    assert "n/a (0)" in b_line
    t1 = pl.read_csv(tmp_path / "table1.csv")
    assert t1.columns[:9] == ["model", "tier", "csr", "csr_lo", "csr_hi", "tsr", "recovery", "recovery_n", "runs"]
    assert {"failed_runs", "zero_call_runs", "truncated_runs", "tsr_truncated_as_failure"} <= set(t1.columns)
    assert t1.get_column("csr").to_list() == sorted(t1.get_column("csr").to_list())
    assert t1.filter(pl.col("model") == "b").get_column("recovery").to_list() == [None]


def test_trap_rate_denominators_and_never_present_type(tmp_path: Path) -> None:
    sd, pt = "semantic_decoy", "parameter_trap"
    df = make_runs([
        {f"present_{sd}": True, f"trapped_{sd}": True, "canary_calls": 1, "trapped": True, "recovered": False},
        {f"present_{sd}": True},
        {f"present_{sd}": True, f"present_{pt}": True},
        {f"present_{pt}": True},
        {},  # nothing present: in no denominator
    ])
    r = stats.compute_all(df, cfg())
    rates = r["trap_rates"]["declared"]["m1"]
    assert rates[sd] == pytest.approx(1 / 3)
    assert rates[pt] == 0.0
    for t in CANARY_TYPES[2:]:
        assert rates[t] is None
    stats.write_outputs(r, tmp_path)
    t2 = pl.read_csv(tmp_path / "table2.csv")
    assert t2.get_column("temporal_decoy").null_count() == t2.height
    assert "n/a" in (tmp_path / "table2.md").read_text()


def test_error_rows_excluded_and_counted() -> None:
    df = make_runs([
        {"tool_calls": 2, "canary_calls": 2, "trapped": True, "recovered": False},
        {"tool_calls": 2, "canary_calls": 0},
        {"tool_calls": 0, "canary_calls": 0, "error": True, "success": None},
        {"tool_calls": 5, "canary_calls": 5, "error": True, "trapped": True, "recovered": False},
    ])
    r = stats.compute_all(df, cfg())
    assert r["excluded_error_runs"] == 2
    assert r["meta"]["n_runs"] == 2
    assert r["csr_ci"]["declared"]["m1"]["csr"] == pytest.approx(0.5)
    assert r["recovery"]["declared"]["m1"]["n"] == 1


def test_group_averages_default_and_named(synth: pl.DataFrame, synth_result: dict[str, Any]) -> None:
    assert set(synth_result["trap_rate_averages"]["declared"]) == {"frontier", "mid", "small"}
    r2 = stats.compute_all(synth, cfg(resamples=10, group_averages={"hosted": ["frontier", "mid"], "small": ["small"]}))
    avg = r2["trap_rate_averages"]["declared"]["hosted"]
    rates = r2["trap_rates"]["declared"]
    assert len(avg["models"]) == 6
    cm = "capability_mirage"
    assert avg["rates"][cm] == pytest.approx(np.mean([rates[m][cm] for m in avg["models"]]))


# --------------------------------------------------------------------------- tests vs scipy / statsmodels


def test_chi2_matches_scipy(synth: pl.DataFrame, synth_result: dict[str, Any]) -> None:
    d = _prim(synth, "declared").group_by("model").agg(pl.col("canary_calls").sum(), pl.col("tool_calls").sum()).sort("model")
    table = np.column_stack([d["canary_calls"], d["tool_calls"] - d["canary_calls"]])
    ref = sps.chi2_contingency(table, correction=False)
    got = synth_result["replication"]["chi2"]["declared"]
    assert got["statistic"] == pytest.approx(ref.statistic, rel=1e-10)
    assert got["dof"] == ref.dof == 7
    assert got["p"] == pytest.approx(ref.pvalue, rel=1e-6, abs=1e-300)
    assert got["n_calls"] == int(table.sum())
    rng = np.random.default_rng(3)
    for _ in range(20):
        t = rng.integers(1, 60, size=(rng.integers(2, 6), 2))
        ref = sps.chi2_contingency(t, correction=False)
        got = stats.chi2_independence(t)
        assert got["statistic"] == pytest.approx(ref.statistic) and got["p"] == pytest.approx(ref.pvalue)


def test_kruskal_matches_scipy_with_ties(synth: pl.DataFrame, synth_result: dict[str, Any]) -> None:
    d = _prim(synth, "declared").filter(pl.col("csr").is_not_null())
    samples = [g.get_column("csr").to_numpy() for _, g in d.group_by("model", maintain_order=True)]
    ref = sps.kruskal(*samples)  # csr has many ties (zeros)
    got = synth_result["replication"]["kruskal"]["declared"]
    assert got["H"] == pytest.approx(ref.statistic, rel=1e-10)
    assert got["p"] == pytest.approx(ref.pvalue, rel=1e-6, abs=1e-300)
    assert got["n"] == d.height
    heavy = [np.array([1, 1, 2, 2, 2]), np.array([2, 3, 3]), np.array([1, 3, 3, 3, 4])]
    got2 = stats.kruskal_wallis(heavy)
    ref2 = sps.kruskal(*heavy)
    assert got2["H"] == pytest.approx(ref2.statistic) and got2["p"] == pytest.approx(ref2.pvalue)


def test_fisher_exact_matches_scipy() -> None:
    rng = np.random.default_rng(11)
    tables = [rng.integers(0, 40, size=(2, 2)) for _ in range(150)]
    tables += [np.array([[0, 0], [3, 5]]), np.array([[5, 5], [5, 5]]), np.array([[0, 10], [10, 0]]),
               np.array([[1, 359], [30, 330]]), np.array([[0, 0], [0, 7]])]
    got = stats.fisher_exact_2x2(np.stack(tables))
    ref = [sps.fisher_exact(t).pvalue for t in tables]
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-14)


def test_holm_matches_statsmodels() -> None:
    rng = np.random.default_rng(5)
    for m in (1, 2, 7, 168):
        p = rng.random(m) ** 3
        p[: m // 3] = p[0]  # ties
        np.testing.assert_allclose(stats.holm(p), multipletests(p, method="holm")[1], rtol=1e-12)


def test_fisher_holm_contrasts(synth: pl.DataFrame, synth_result: dict[str, Any]) -> None:
    fh = synth_result["replication"]["fisher_holm"]["declared"]
    assert fh["n_contrasts"] == 6 * 28
    d = _prim(synth, "declared")
    some = fh["contrasts"][::17]
    for c in some:
        t = c["type"]
        counts = []
        for m in (c["model_a"], c["model_b"]):
            sub = d.filter((pl.col("model") == m) & pl.col(f"present_{t}") & (pl.col("tool_calls") > 0))
            k = int(sub.get_column(f"trapped_{t}").sum())
            counts.append([k, sub.height - k])
        assert [c["a_trapped"], c["a_n"] - c["a_trapped"]] == counts[0]
        assert [c["b_trapped"], c["b_n"] - c["b_trapped"]] == counts[1]
        assert c["p"] == pytest.approx(sps.fisher_exact(counts).pvalue, rel=1e-9)
    p = [c["p"] for c in fh["contrasts"]]
    rej, p_holm, _, _ = multipletests(p, alpha=0.05, method="holm")
    np.testing.assert_allclose([c["p_holm"] for c in fh["contrasts"]], p_holm, rtol=1e-12)
    assert fh["n_significant"] == int(rej.sum())
    pairs = {(c["type"], c["model_a"], c["model_b"]) for c in fh["contrasts"]}
    models = sorted(synth_result["model_groups"])
    assert pairs == {(t, a, b) for t in CANARY_TYPES for a, b in combinations(models, 2)}


def test_fisher_skips_pairs_where_type_absent_for_both() -> None:
    sd = "semantic_decoy"
    df = make_runs(
        [{"model": "a", f"present_{sd}": True, f"trapped_{sd}": True, "canary_calls": 1, "trapped": True, "recovered": False}]
        + [{"model": "b", f"present_{sd}": True}, {"model": "c"}, {"model": "d"}]
    )
    fh = stats.compute_all(df, cfg())["replication"]["fisher_holm"]["declared"]
    pairs = {(c["type"], c["model_a"], c["model_b"]) for c in fh["contrasts"]}
    # only semantic decoy was ever present; (c, d) never saw it
    assert pairs == {(sd, a, b) for a, b in combinations("abcd", 2)} - {(sd, "c", "d")}
    ac = next(c for c in fh["contrasts"] if (c["model_a"], c["model_b"]) == ("a", "c"))
    assert (ac["a_trapped"], ac["a_n"], ac["b_trapped"], ac["b_n"], ac["p"]) == (1, 1, 0, 0, 1.0)


def test_spearman_matches_scipy(synth: pl.DataFrame, synth_result: dict[str, Any]) -> None:
    d = _prim(synth, "declared").filter(pl.col("csr").is_not_null() & pl.col("success").is_not_null())
    ref = sps.spearmanr(d["csr"].to_numpy(), d["success"].cast(pl.Float64).to_numpy())
    got = synth_result["replication"]["spearman"]["declared"]
    assert got["rho"] == pytest.approx(ref.statistic, rel=1e-10)
    assert got["p"] == pytest.approx(ref.pvalue, rel=1e-6)
    assert got["n"] == d.height and got["clusters"] == 120
    assert got["lo"] < got["rho"] < got["hi"]


def test_cluster_bootstrap_equals_plain_loop() -> None:
    rng = np.random.default_rng(2)
    n = 300
    clusters = rng.integers(0, 25, n)
    x = np.round(rng.random(n) * 4) / 4 + clusters * 0.01 * (rng.random(n) < 0.3)
    y = (rng.random(n) < 0.3 + 0.4 * (x < 0.5)).astype(float)
    b = 60
    fast = stats.cluster_bootstrap_spearman(x, y, clusters, b, np.random.default_rng(9))
    # plain loop: the same draws, one resample at a time, stacking whole clusters
    labels = np.unique(clusters)
    loop_rng = np.random.default_rng(9)
    slow = []
    for _ in range(b):
        pick = labels[loop_rng.integers(0, labels.size, size=labels.size)]
        idx = np.concatenate([np.flatnonzero(clusters == c) for c in pick])
        slow.append(sps.spearmanr(x[idx], y[idx]).statistic)
    np.testing.assert_allclose(fast, slow, rtol=1e-9, atol=1e-12)


def _loop_bootstrap_means(values: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    out = np.empty(resamples)
    for b in range(resamples):
        idx = rng.integers(0, values.size, size=values.size)
        out[b] = sum(values[i] for i in idx) / values.size
    return out


def test_bootstrap_vectorised_equals_plain_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    values = np.random.default_rng(0).random(37)
    fast = stats.bootstrap_means(values, 500, np.random.default_rng(42))
    slow = _loop_bootstrap_means(values, 500, np.random.default_rng(42))
    np.testing.assert_allclose(fast, slow, rtol=1e-12)
    # chunking does not change the stream
    monkeypatch.setattr(stats._bootstrap, "CHUNK_ELEMENTS", 37 * 7)
    chunked = stats.bootstrap_means(values, 500, np.random.default_rng(42))
    np.testing.assert_allclose(chunked, slow, rtol=1e-12)
    # a different seed agrees within Monte Carlo error
    other = stats.bootstrap_means(values, 4000, np.random.default_rng(1))
    assert other.std() == pytest.approx(slow.std(), rel=0.15)


def _task_loop_means(samples: list[tuple[np.ndarray, np.ndarray]], tasks: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """Plain loop of the task bootstrap: per resample draw G task indices (the study's stream),
    stack every run of each drawn task (with multiplicity) and take each sample's mean."""
    labels = np.unique(tasks)
    rng = stats.derive_rng(seed, "tasks")
    out = np.empty((resamples, len(samples)))
    for b in range(resamples):
        pick = labels[rng.integers(0, labels.size, size=labels.size)]
        for k, (values, vt) in enumerate(samples):
            stacked = np.concatenate([values[vt == t] for t in pick])
            out[b, k] = stacked.mean() if stacked.size else np.nan
    return out


def test_csr_ci_task_unit_reproduces_plain_loop(synth: pl.DataFrame, synth_result: dict[str, Any], synth_300: dict[str, Any]) -> None:
    d = _prim(synth, "declared").filter((pl.col("model") == "mid-2") & pl.col("csr").is_not_null())
    v = d.get_column("csr").to_numpy()
    tasks = synth.filter(~pl.col("error")).get_column("task_id").to_numpy().astype(str)
    vt = d.get_column("task_id").to_numpy().astype(str)
    draws = _task_loop_means([(v, vt)], tasks, 300, 20261130)[:, 0]
    # BCa: the jackknife leaves out one study task at a time
    jack = loops.task_jackknife(tasks, lambda keep: loops.stack(v, vt, keep).mean())
    lo, hi = loops.bca(draws, v.mean(), jack)
    e = synth_300["csr_ci"]["declared"]["mid-2"]
    assert e["lo"] == pytest.approx(lo, rel=1e-12) and e["hi"] == pytest.approx(hi, rel=1e-12)
    assert e["csr"] == pytest.approx(v.mean())
    # same seed -> same numbers
    again = stats.compute_all(synth, cfg())
    assert again["csr_ci"] == synth_result["csr_ci"] and again["replication"]["spearman"] == synth_result["replication"]["spearman"]


def test_csr_ci_run_unit_reproduces_the_papers_run_level_loop(synth: pl.DataFrame, synth_run_unit: dict[str, Any]) -> None:
    d = _prim(synth, "declared").filter((pl.col("model") == "mid-2") & pl.col("csr").is_not_null())
    v = d.get_column("csr").to_numpy()
    draws = _loop_bootstrap_means(v, RESAMPLES, stats.derive_rng(20261130, "csr", "declared", "mid-2"))
    lo, hi = np.percentile(draws, [2.5, 97.5])
    e = synth_run_unit["csr_ci"]["declared"]["mid-2"]
    assert e["lo"] == pytest.approx(lo, rel=1e-12) and e["hi"] == pytest.approx(hi, rel=1e-12)


def test_tsr_delta_and_effect_sizes(
    synth: pl.DataFrame, synth_result: dict[str, Any], synth_300: dict[str, Any], synth_run_unit: dict[str, Any]
) -> None:
    base = _prim(synth, "baseline").filter((pl.col("model") == "small-1") & pl.col("success").is_not_null())
    cond = _prim(synth, "full").filter((pl.col("model") == "small-1") & pl.col("success").is_not_null())
    a = base.get_column("success").cast(pl.Float64).to_numpy()
    b = cond.get_column("success").cast(pl.Float64).to_numpy()
    e = synth_result["tsr_delta"]["full"]["small-1"]
    assert e["delta"] == pytest.approx(a.mean() - b.mean())
    sp = np.sqrt(((a.size - 1) * a.var(ddof=1) + (b.size - 1) * b.var(ddof=1)) / (a.size + b.size - 2))
    assert e["cohens_d"] == pytest.approx((a.mean() - b.mean()) / sp)
    assert e["cohens_h"] == pytest.approx(2 * np.arcsin(np.sqrt(a.mean())) - 2 * np.arcsin(np.sqrt(b.mean())))
    assert (e["n_base"], e["n_cond"]) == (a.size, b.size)
    keys_a = set(zip(base["task_id"], base["seed"], strict=True))
    assert e["n_pairs"] == len(keys_a & set(zip(cond["task_id"], cond["seed"], strict=True)))
    assert set(synth_result["tsr_delta"]) == {"declared", "full"}
    # task unit: both sides resampled with the same tasks (paired), as a plain loop does it
    tasks = synth.filter(~pl.col("error")).get_column("task_id").to_numpy().astype(str)
    ta, tb = base["task_id"].to_numpy().astype(str), cond["task_id"].to_numpy().astype(str)
    loop = _task_loop_means([(a, ta), (b, tb)], tasks, 300, 20261130)
    jack = loops.task_jackknife(tasks, lambda keep: loops.stack(a, ta, keep).mean() - loops.stack(b, tb, keep).mean())
    lo, hi = loops.bca(loop[:, 0] - loop[:, 1], a.mean() - b.mean(), jack)
    e300 = synth_300["tsr_delta"]["full"]["small-1"]
    assert (e300["lo"], e300["hi"]) == (pytest.approx(lo, rel=1e-12), pytest.approx(hi, rel=1e-12))
    # run unit: the paper's independent resampling of each condition
    rng = stats.derive_rng(20261130, "tsr_delta", "full", "small-1")
    draws = _loop_bootstrap_means(a, RESAMPLES, rng) - _loop_bootstrap_means(b, RESAMPLES, rng)
    lo, hi = np.percentile(draws, [2.5, 97.5])
    er = synth_run_unit["tsr_delta"]["full"]["small-1"]
    assert (er["lo"], er["hi"]) == (pytest.approx(lo), pytest.approx(hi))


# --------------------------------------------------------------------------- edge cases


def test_single_model_tests_not_applicable() -> None:
    df = make_runs([{"canary_calls": k % 2, "trapped": bool(k % 2), "recovered": False if k % 2 else None,
                     "present_semantic_decoy": True, "trapped_semantic_decoy": bool(k % 2), "success": k < 3} for k in range(6)])
    r = stats.compute_all(df, cfg())
    for key in ("chi2", "kruskal", "fisher_holm"):
        assert r["replication"][key]["declared"]["reason"], key
    assert r["replication"]["chi2"]["declared"]["statistic"] is None
    assert r["replication"]["kruskal"]["declared"]["H"] is None
    assert r["replication"]["fisher_holm"]["declared"]["contrasts"] == []
    assert r["replication"]["spearman"]["declared"]["rho"] is not None  # pooled over runs: still defined


def test_baseline_constant_csr_reported_not_applicable(synth_result: dict[str, Any]) -> None:
    assert synth_result["replication"]["chi2"]["baseline"]["statistic"] is None
    assert synth_result["replication"]["kruskal"]["baseline"]["reason"] == "all values are identical"
    assert synth_result["replication"]["spearman"]["baseline"]["rho"] is None
    assert synth_result["replication"]["fisher_holm"]["baseline"]["n_contrasts"] == 0


def test_absent_conditions_and_subtle_pool(synth: pl.DataFrame) -> None:
    only = synth.filter((pl.col("condition") == "declared") & (pl.col("pool") == "standard"))
    r = stats.compute_all(only, cfg(resamples=50))
    assert list(r["csr_ci"]) == ["declared"]
    assert r["tsr_delta"]["declared"]["mid-2"]["delta"] is None
    assert r["ablation"]["models"] == {} and "subtle" in r["ablation"]["note"]
    assert "declared+full" in r["recovery_outcome"]


def test_ablation_values(synth: pl.DataFrame, synth_result: dict[str, Any]) -> None:
    ab = synth_result["ablation"]
    assert ab["note"] is None
    sub = synth.filter(~pl.col("error") & (pl.col("condition") == "declared") & (pl.col("pool") == "subtle") & (pl.col("model") == "mid-2"))
    e = ab["models"]["mid-2"]
    assert e["subtle"] == pytest.approx(sub.get_column("csr").mean())
    assert e["delta"] == pytest.approx(e["subtle"] - e["standard"])
    assert ab["groups"]["small"]["standard"] == pytest.approx(np.mean([ab["models"][m]["standard"] for m in ("small-1", "small-2")]))


def test_invalid_table_names_file_and_column(tmp_path: Path) -> None:
    df = make_runs([{}]).drop("trapped_granularity_trap")
    path = tmp_path / "runs.parquet"
    df.write_parquet(path)
    with pytest.raises(InputError) as err:
        stats.stats_command(str(path), str(tmp_path / "out"), resamples=10)
    assert err.value.field == "trapped_granularity_trap" and str(path) in str(err.value)
    bad = make_runs([{"condition": "bogus"}])
    with pytest.raises(InputError, match="condition"):
        stats.compute_all(bad, cfg())


# --------------------------------------------------------------------------- known answers and end to end


def test_known_answer_synthetic_recovers_planted_rates(synth_result: dict[str, Any], synth: pl.DataFrame) -> None:
    covered = 0
    for p in synthetic_profiles(8):
        for c in ("declared", "full"):
            e = synth_result["csr_ci"][c][p.model]
            q = p.planted_csr(c)
            covered += e["lo"] <= q <= e["hi"]
            width = e["hi"] - e["lo"]
            assert abs(e["csr"] - q) < 1.5 * width + 0.01, (p.model, c)
            rec = synth_result["recovery"][c][p.model]
            if rec["n"] >= 30:
                se = np.sqrt(p.recovery[c] * (1 - p.recovery[c]) / rec["n"])
                assert abs(rec["rate"] - p.recovery[c]) < 4 * se + 1e-9, (p.model, c)
    assert covered >= 14  # of 16 nominal-95% intervals
    pooled = synth_result["recovery_outcome"]["declared+full"]["__pooled__"]
    assert pooled["recovered"]["success_rate"] == pytest.approx(RECOVERED_SUCCESS, abs=0.06)
    assert pooled["not_recovered"]["success_rate"] == pytest.approx(STUCK_SUCCESS, abs=0.04)
    assert synth_result["replication"]["spearman"]["declared"]["hi"] < 0  # canaries predict failure
    assert synth_result["excluded_error_runs"] == int(synth.get_column("error").sum())


STATS_KEYS = {
    "csr_ci", "replication", "tsr_delta", "csr_by_difficulty",
    "recovery_outcome", "ablation", "trap_rates", "recovery", "tsr", "excluded_error_runs", "meta",
    # issue 10 / 16 / 9
    "counts", "tsr_ci", "tsr_truncated_as_failure", "trap_rate_ci", "friedman", "gee_trap", "contrasts",
    "spearman_by_model", "association", "ablation_by_type", "stability", "families",
    # issue 20
    "primary", "items", "judge_sensitivity",
}


def test_stats_command_end_to_end(tmp_path: Path, synth: pl.DataFrame) -> None:
    path = tmp_path / "runs.parquet"
    synth.write_parquet(path)
    out = tmp_path / "stats"
    assert stats.stats_command(str(path), str(out), resamples=200, group_averages={"hosted": ["frontier", "mid"]}) == 0
    names = {p.name for p in out.iterdir()}
    expected = {"stats.json", *(f"{t}.{ext}" for t in stats.TABLE_FILES for ext in ("csv", "md")), *stats.FIGURE_DATA_FILES.values()}
    assert expected <= names
    data = json.loads((out / "stats.json").read_text(), parse_constant=lambda c: pytest.fail(f"non-finite {c}"))
    assert set(data) >= STATS_KEYS
    assert data["meta"] == {**data["meta"], "resamples": 200, "seed": 20261130, "alpha": 0.05, "primary_pool": "standard", "n_runs": synth.filter(~pl.col("error")).height}
    assert set(data["csr_ci"]) == {"baseline", "declared", "full"}
    assert set(data["recovery_outcome"]) == {"baseline", "declared", "full", "declared+full"}
    e = data["csr_ci"]["declared"]["frontier-1"]
    assert set(e) >= {"csr", "lo", "hi", "n"}
    assert set(data["tsr_delta"]["declared"]["frontier-1"]) >= {"delta", "lo", "hi", "cohens_d", "cohens_h", "n_base", "n_cond"}
    assert set(data["ablation"]) >= {"models", "groups"}
    assert set(data["csr_by_difficulty"]["declared"]["mid-1"]) == {"easy", "medium", "hard"}
    t2 = pl.read_csv(out / "table2.csv")
    assert t2.get_column("model").to_list()[-1] == "hosted"
    assert t2.columns[2:8] == list(CANARY_TYPES)
    assert t2.columns[8:] == ["runs", "failed_runs", "zero_call_runs", "truncated_runs"]
    t3 = pl.read_csv(out / "table3.csv")
    assert t3.height == 8
    md = (out / "table1.md").read_text()
    assert "[" in md and "(" in md
    fig2 = pl.read_csv(out / "fig2_csr.csv")
    assert fig2.height == 8 and {"model", "group", "csr", "lo", "hi"} <= set(fig2.columns)
    # deterministic: a second run writes byte-identical stats.json
    stats.stats_command(str(path), str(tmp_path / "again"), resamples=200, group_averages={"hosted": ["frontier", "mid"]})
    assert (tmp_path / "again" / "stats.json").read_bytes() == (out / "stats.json").read_bytes()


def test_config_from_params_mapping() -> None:
    c = stats.StatsConfig.from_mapping({"bootstrap_resamples": 123, "seed": 1, "alpha": 0.1, "group_averages": {"x": ["g"]}})
    assert (c.resamples, c.seed, c.alpha, c.group_averages) == (123, 1, 0.1, {"x": ["g"]})
    with pytest.raises(InputError):
        stats.StatsConfig(alpha=2.0)
