"""Issue 10's statistics, each checked against an independent computation (statsmodels,
scipy or a plain loop), and the issue 9/16 counting rules (failed, zero-call, truncated runs)."""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from fakes import stats_loops as loops
from fakes.runs import make_runs
from scipy import stats as sps
from scipy.special import expit
from statsmodels.stats.multitest import multipletests

from canarykit import stats
from canarykit.errors import InputError
from canarykit.testing.synthetic import synthetic_runs
from canarykit.types import CANARY_TYPES

B = 200
SEED = 20261130


def cfg(**kw: Any) -> stats.StatsConfig:
    """The task bootstrap (BCa) unless a test names another unit: these tests replay its draws."""
    kw.setdefault("bootstrap_unit", "task")
    return stats.StatsConfig(resamples=kw.pop("resamples", B), **kw)


@pytest.fixture(scope="module")
def small() -> pl.DataFrame:
    return synthetic_runs(n_models=4, seeds=3, tasks=40, seed=3)


@pytest.fixture(scope="module")
def small_result(small: pl.DataFrame) -> dict[str, Any]:
    return stats.compute_all(small, cfg())


def _decl(df: pl.DataFrame, model: str | None = None) -> pl.DataFrame:
    out = df.filter(~pl.col("error") & (pl.col("pool") == "standard") & (pl.col("condition") == "declared"))
    return out if model is None else out.filter(pl.col("model") == model)


def _loop_task_draws(study_tasks: np.ndarray, resamples: int, stat) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Plain loop of the study's task bootstrap: ``stat(picked task labels)`` per resample."""
    labels = np.unique(study_tasks)
    rng = stats.derive_rng(SEED, "tasks")
    return np.array([stat(labels[rng.integers(0, labels.size, size=labels.size)]) for _ in range(resamples)])


def _stack(frame: pl.DataFrame, picked: np.ndarray, col: str) -> np.ndarray:
    tasks = frame.get_column("task_id").to_numpy().astype(str)
    vals = frame.get_column(col).cast(pl.Float64).to_numpy()
    return np.concatenate([vals[tasks == t] for t in picked])


# --------------------------------------------------------------------------- resampling primitives


def test_task_weights_do_not_depend_on_chunking(monkeypatch: pytest.MonkeyPatch) -> None:
    tasks = np.array([f"t{i}" for i in range(30)])
    kept = np.concatenate(list(stats.TaskBootstrap(tasks, 500, 1).task_weights()))
    monkeypatch.setattr(stats._bootstrap, "CHUNK_ELEMENTS", 30 * 7)
    monkeypatch.setattr(stats._bootstrap, "KEEP_ELEMENTS", 10)  # re-drawn chunk by chunk
    redrawn = np.concatenate(list(stats.TaskBootstrap(tasks, 500, 1).task_weights()))
    np.testing.assert_array_equal(kept, redrawn)
    assert kept.shape == (500, 30) and (kept.sum(axis=1) == 30).all()


def test_paired_delta_task_unit_equals_plain_loop() -> None:
    rng = np.random.default_rng(4)
    tasks = np.repeat([f"t{i}" for i in range(25)], 3)
    effect = rng.random(25)
    a = stats.Sample((rng.random(75) < np.repeat(effect, 3)).astype(float), tasks)
    b = stats.Sample((rng.random(75) < np.repeat(effect * 0.5, 3)).astype(float), tasks)
    boot = stats.TaskBootstrap(tasks, 300, SEED)
    got = stats.paired_delta(boot, a, b, label=("x",))

    def stat(picked: np.ndarray) -> float:
        va = np.concatenate([a.values[tasks == t] for t in picked])
        vb = np.concatenate([b.values[tasks == t] for t in picked])
        return va.mean() - vb.mean()

    lo, hi = loops.bca(_loop_task_draws(tasks, 300, stat), a.values.mean() - b.values.mean(), loops.task_jackknife(tasks, stat))
    assert got["lo"] == pytest.approx(lo, rel=1e-12) and got["hi"] == pytest.approx(hi, rel=1e-12)
    assert got["delta"] == pytest.approx(a.values.mean() - b.values.mean())
    assert got["cohens_h"] == pytest.approx(2 * np.arcsin(np.sqrt(a.values.mean())) - 2 * np.arcsin(np.sqrt(b.values.mean())))


def test_cluster_robust_contrasts_match_statsmodels_ols_cluster() -> None:
    """delta and its CR1 variance = the slope of OLS(y ~ is_a) with cluster-robust errors."""
    rng = np.random.default_rng(8)
    g = 30
    ta = rng.integers(0, g, 150)
    tb = rng.integers(0, g, 130)
    u = rng.normal(size=g)
    ya = (rng.random(150) < expit(u[ta])).astype(float)
    yb = (rng.random(130) < expit(u[tb] - 0.7)).astype(float)
    sa = stats.Sample(ya, np.array([f"t{i:02d}" for i in ta]))
    sb = stats.Sample(yb, np.array([f"t{i:02d}" for i in tb]))
    boot = stats.TaskBootstrap(np.array([f"t{i:02d}" for i in range(g)]), 10, 0)
    s, n = boot.cluster_sums([sa, sb])
    got = stats.cluster_robust_contrasts(s, n, [(0, 1)])
    y = np.concatenate([ya, yb])
    x = sm.add_constant(np.concatenate([np.ones(150), np.zeros(130)]))
    groups = np.concatenate([ta, tb])
    ols = sm.OLS(y, x).fit(cov_type="cluster", cov_kwds={"groups": groups, "use_correction": False})
    n_groups = np.unique(groups).size
    assert got["delta"][0] == pytest.approx(ols.params[1], rel=1e-12)
    assert got["se"][0] ** 2 == pytest.approx(ols.cov_params()[1, 1] * n_groups / (n_groups - 1), rel=1e-9)
    t = ols.params[1] / got["se"][0]
    assert got["p"][0] == pytest.approx(2 * sps.t.sf(abs(t), n_groups - 1), rel=1e-9)


# --------------------------------------------------------------------------- blocked tests


def _friedman_loop(blocks: np.ndarray) -> float:
    n, k = blocks.shape
    ranks = np.empty_like(blocks)
    ties = 0.0
    for i in range(n):
        ranks[i] = sps.rankdata(blocks[i])
        _, counts = np.unique(blocks[i], return_counts=True)
        ties += float((counts**3 - counts).sum())
    r = ranks.sum(axis=0)
    stat = 12.0 / (n * k * (k + 1)) * float((r**2).sum()) - 3.0 * n * (k + 1)
    return stat / (1.0 - ties / (n * k * (k * k - 1)))


def test_friedman_on_per_task_means_matches_a_plain_loop(small: pl.DataFrame, small_result: dict[str, Any]) -> None:
    d = _decl(small).filter(pl.col("csr").is_not_null())
    per_task = d.group_by("task_id", "model").agg(pl.col("csr").mean()).pivot("model", index="task_id", values="csr")
    models = sorted(small_result["friedman"]["declared"]["models"])
    blocks = per_task.drop_nulls().select(models).to_numpy()
    got = small_result["friedman"]["declared"]
    assert got["n_blocks"] == blocks.shape[0] and got["n_models"] == 4
    assert got["statistic"] == pytest.approx(_friedman_loop(blocks), rel=1e-10)
    assert got["p"] == pytest.approx(sps.chi2.sf(_friedman_loop(blocks), 3), rel=1e-8)
    assert stats.friedman(blocks[:, :2])["reason"]  # two models: not applicable, says why


def _logit_sandwich(y: np.ndarray, x: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Logistic MLE by Newton's method and its cluster-robust sandwich covariance (numpy)."""
    beta = np.zeros(x.shape[1])
    for _ in range(50):
        mu = expit(x @ beta)
        step = np.linalg.solve(x.T @ (x * (mu * (1 - mu))[:, None]), x.T @ (y - mu))
        beta += step
        if np.abs(step).max() < 1e-12:
            break
    mu = expit(x @ beta)
    bread = np.linalg.inv(x.T @ (x * (mu * (1 - mu))[:, None]))
    scores = np.array([x[groups == g].T @ (y - mu)[groups == g] for g in np.unique(groups)])
    return beta, bread @ (scores.T @ scores) @ bread


def test_gee_trap_test_against_statsmodels_formula_and_a_numpy_sandwich(small: pl.DataFrame, small_result: dict[str, Any]) -> None:
    d = _decl(small).filter(pl.col("tool_calls") > 0)
    y = d.get_column("trapped").cast(pl.Float64).to_numpy()
    g = d.get_column("model").to_numpy().astype(str)
    t = d.get_column("task_id").to_numpy().astype(str)
    got = small_result["gee_trap"]["declared"]
    assert got["n"] == d.height and got["dof"] == 3 and got["clusters"] == 40 and got["excluded"] == []
    # the same model through statsmodels' formula interface (exchangeable, robust covariance)
    frame = pd.DataFrame({"y": y, "g": g, "t": t})
    res = smf.gee("y ~ C(g)", groups="t", data=frame, family=sm.families.Binomial(), cov_struct=sm.cov_struct.Exchangeable()).fit()
    beta = np.asarray(res.params)[1:]
    wald = float(beta @ np.linalg.solve(np.asarray(res.cov_robust)[1:, 1:], beta))
    assert got["statistic"] == pytest.approx(wald, rel=1e-5)
    # with an independence working correlation, GEE is logistic MLE with a sandwich: check by hand
    ind = stats.gee_group_test(y, g, t, working="independence")
    names = sorted(set(g))
    x = np.column_stack([np.ones(y.size)] + [(g == n).astype(float) for n in names[1:]])
    b, cov = _logit_sandwich(y, x, t)
    assert ind["statistic"] == pytest.approx(float(b[1:] @ np.linalg.solve(cov[1:, 1:], b[1:])), rel=1e-6)
    # a model that is never trapped has an infinite log-odds: left out and listed
    y2 = np.where(g == names[0], 0.0, y)
    assert stats.gee_group_test(y2, g, t)["excluded"] == [names[0]]


def test_gee_association_within_models(small: pl.DataFrame, small_result: dict[str, Any]) -> None:
    d = _decl(small).filter(pl.col("csr").is_not_null() & pl.col("success").is_not_null())
    y = d.get_column("success").cast(pl.Float64).to_numpy()
    x = d.get_column("csr").to_numpy()
    g = d.get_column("model").to_numpy().astype(str)
    t = d.get_column("task_id").to_numpy().astype(str)
    got = small_result["association"]["declared"]
    frame = pd.DataFrame({"y": y, "x": x, "g": g, "t": t})
    res = smf.gee("y ~ x + C(g) - 1", groups="t", data=frame, family=sm.families.Binomial(), cov_struct=sm.cov_struct.Exchangeable()).fit()
    assert got["coef"] == pytest.approx(float(res.params["x"]), rel=1e-5)
    ix = list(res.params.index).index("x")
    assert got["se"] == pytest.approx(float(np.sqrt(res.cov_robust[ix, ix])), rel=1e-5)
    assert got["coef"] < 0 and got["hi"] < 0  # canaries predict failure within models too
    ind = stats.gee_association(y, x, g, t, working="independence")
    names = sorted(set(g))
    design = np.column_stack([x] + [(g == n).astype(float) for n in names])
    b, cov = _logit_sandwich(y, design, t)
    assert ind["coef"] == pytest.approx(b[0], rel=1e-6) and ind["se"] == pytest.approx(np.sqrt(cov[0, 0]), rel=1e-6)


def test_pairwise_contrasts_cluster_robust_and_holm(small: pl.DataFrame, small_result: dict[str, Any]) -> None:
    co = small_result["contrasts"]["declared"]
    models = sorted(small_result["model_groups"])
    assert co["n_contrasts"] == len(co["contrasts"]) == 6 * 6
    assert {(r["type"], r["model_a"], r["model_b"]) for r in co["contrasts"]} == {
        (t, a, b) for t in CANARY_TYPES for a, b in combinations(models, 2)}
    # Holm over the whole declared family
    p = [r["p"] for r in co["contrasts"]]
    rej, p_holm, _, _ = multipletests(p, alpha=0.05, method="holm")
    np.testing.assert_allclose([r["p_holm"] for r in co["contrasts"]], p_holm, rtol=1e-12)
    assert co["n_significant"] == int(rej.sum())
    # one contrast: OLS with cluster-robust errors, and the interval by a plain loop
    row = max(co["contrasts"], key=lambda r: abs(r["delta"]))
    t, a, b = row["type"], row["model_a"], row["model_b"]
    sub = _decl(small).filter(pl.col(f"present_{t}") & (pl.col("tool_calls") > 0) & pl.col("model").is_in([a, b]))
    y = sub.get_column(f"trapped_{t}").cast(pl.Float64).to_numpy()
    is_a = (sub.get_column("model") == a).cast(pl.Float64).to_numpy()
    groups = sub.get_column("task_id").to_numpy()
    ols = sm.OLS(y, sm.add_constant(is_a)).fit(cov_type="cluster", cov_kwds={"groups": groups, "use_correction": False})
    n_g = np.unique(groups).size
    assert row["delta"] == pytest.approx(ols.params[1], rel=1e-12)
    assert row["se"] ** 2 == pytest.approx(ols.cov_params()[1, 1] * n_g / (n_g - 1), rel=1e-9)
    fa, fb = sub.filter(pl.col("model") == a), sub.filter(pl.col("model") == b)
    study_tasks = small.filter(~pl.col("error")).get_column("task_id").to_numpy().astype(str)

    def stat(picked: np.ndarray) -> float:
        va, vb = _stack(fa, picked, f"trapped_{t}"), _stack(fb, picked, f"trapped_{t}")
        return (va.mean() if va.size else np.nan) - (vb.mean() if vb.size else np.nan)

    draws = _loop_task_draws(study_tasks, B, stat)
    lo, hi = loops.bca(draws, row["a"] - row["b"], loops.task_jackknife(study_tasks, stat))
    assert (row["lo"], row["hi"]) == (pytest.approx(lo, rel=1e-12), pytest.approx(hi, rel=1e-12))
    # Cohen's h of the two trap rates, from the raw runs
    ra, rb = fa[f"trapped_{t}"].cast(pl.Float64).mean(), fb[f"trapped_{t}"].cast(pl.Float64).mean()
    assert (row["a"], row["b"]) == (pytest.approx(ra), pytest.approx(rb))
    assert row["cohens_h"] == pytest.approx(2 * np.arcsin(np.sqrt(ra)) - 2 * np.arcsin(np.sqrt(rb)), rel=1e-12)
    for r in co["contrasts"]:
        assert r["cohens_h"] == pytest.approx(2 * np.arcsin(np.sqrt(r["a"])) - 2 * np.arcsin(np.sqrt(r["b"])), abs=1e-12)


def test_spearman_within_each_model(small: pl.DataFrame) -> None:
    r = stats.compute_all(small, cfg(resamples=60))
    d = _decl(small, "frontier-2").filter(pl.col("csr").is_not_null() & pl.col("success").is_not_null())
    x, y = d.get_column("csr").to_numpy(), d.get_column("success").cast(pl.Float64).to_numpy()
    got = r["spearman_by_model"]["declared"]["frontier-2"]
    ref = sps.spearmanr(x, y)
    assert got["rho"] == pytest.approx(ref.statistic, rel=1e-10) and got["n"] == d.height
    study_tasks = small.filter(~pl.col("error")).get_column("task_id").to_numpy().astype(str)

    def stat(picked: np.ndarray) -> float:
        return float(sps.spearmanr(_stack(d, picked, "csr"), _stack(d, picked, "success")).statistic)

    lo, hi = loops.bca(_loop_task_draws(study_tasks, 60, stat), ref.statistic, loops.task_jackknife(study_tasks, stat))
    assert (got["lo"], got["hi"]) == (pytest.approx(lo, rel=1e-9), pytest.approx(hi, rel=1e-9))


# --------------------------------------------------------------------------- families


def test_reference_and_planted_are_described_but_never_tested(small: pl.DataFrame) -> None:
    relabel = {"frontier-1": "reference", "frontier-2": "planted"}
    df = small.with_columns(group=pl.col("model").replace_strict(relabel, default=pl.col("group")))
    r = stats.compute_all(df, cfg(resamples=50))
    tested = ["frontier-3", "mid-1"]
    assert r["meta"]["tested_models"] == tested and r["meta"]["untested_models"] == ["frontier-1", "frontier-2"]
    for key in ("chi2", "kruskal", "fisher_holm", "friedman", "contrasts"):
        assert (r["replication"] if key in r["replication"] else r)[key]["declared"]["models"] == tested, key
    assert {m for c in r["replication"]["fisher_holm"]["declared"]["contrasts"] for m in (c["model_a"], c["model_b"])} == set(tested)
    assert r["gee_trap"]["declared"]["groups"] == tested
    fam = r["families"]["fisher_holm.declared"]
    assert fam["members"] == tested and fam["size"] == 6 and fam["correction"] == "holm"
    assert r["families"]["contrasts.declared"]["size"] == r["contrasts"]["declared"]["n_contrasts"]
    # described: every model keeps its row in the tables and per-model blocks
    assert set(r["csr_ci"]["declared"]) == set(r["trap_rates"]["declared"]) == set(small["model"].unique())
    assert r["replication"]["spearman"]["declared"]["n"] == _decl(df).filter(
        pl.col("model").is_in(tested) & pl.col("csr").is_not_null() & pl.col("success").is_not_null()).height
    # stats.test_groups overrides the default
    r2 = stats.compute_all(df, cfg(resamples=50, test_groups=("reference", "planted", "frontier", "mid")))
    assert r2["replication"]["chi2"]["declared"]["models"] == sorted(small["model"].unique())
    assert r2["meta"]["test_groups"] == ["reference", "planted", "frontier", "mid"]
    # and the instruments' p-values appear only then
    instruments = {"frontier-1", "frontier-2"}
    assert not _instrument_p_values(r, instruments)
    assert _instrument_p_values(r2, instruments)


#: Blocks that give every model a p-value on purpose: the known-answer checks of issue 11.
_WITHIN_MODEL = ("control_effect", "position_effect")


def _instrument_p_values(result: dict[str, Any], instruments: set[str]) -> list[str]:
    """Paths of every non-null p-value (a key ``p`` or ``p_*``, or ``significant``) that
    concerns an instrument model: under a key naming it, or in a record whose model fields
    (``model_a``, ``model_b``, ``models``, ``groups``, ``strata``) name one."""
    found: list[str] = []

    def names(node: dict[str, Any]) -> set[str]:
        out = {node.get("model_a"), node.get("model_b")}
        for k in ("models", "groups", "strata"):
            if isinstance(node.get(k), list):
                out |= set(node[k])
        return {n for n in out if isinstance(n, str)}

    def walk(node: Any, path: tuple[str, ...], about: set[str]) -> None:
        if isinstance(node, dict):
            here = about | names(node)
            for k, v in node.items():
                key_about = here | ({k} if k in instruments else set())
                is_p = k == "p" or k.startswith("p_") or k == "significant"
                if is_p and v not in (None, False) and key_about & instruments:
                    found.append(".".join((*path, k)))
                walk(v, (*path, k), key_about)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, (*path, str(i)), about)

    for key, block in result.items():
        if key in _WITHIN_MODEL or key in ("families", "meta", "model_groups", "stability"):
            continue
        walk(block, (key,), set())
    return found


def test_no_p_value_for_an_instrument_unless_test_groups_asks(small: pl.DataFrame) -> None:
    relabel = {"frontier-1": "reference", "frontier-2": "planted"}
    df = small.with_columns(group=pl.col("model").replace_strict(relabel, default=pl.col("group")))
    r = stats.compute_all(df, cfg(resamples=100))
    assert _instrument_p_values(r, {"frontier-1", "frontier-2"}) == []
    # instruments keep their descriptive rho and interval within a model, no p-value
    for m in ("frontier-1", "frontier-2"):
        e = r["spearman_by_model"]["declared"][m]
        assert e["rho"] is not None and e["lo"] <= e["rho"] <= e["hi"]
        assert (e["p"], e["p_bootstrap"], e["p_bootstrap_holm"], e["significant"], e["tested"]) == (None, None, None, None, False)
    # the tested models form one Holm family over p_bootstrap
    tested = ["frontier-3", "mid-1"]
    by = r["spearman_by_model"]["declared"]
    fam = r["families"]["spearman_by_model.declared"]
    assert fam["members"] == tested and fam["size"] == 2 and fam["correction"] == "holm"
    ref = multipletests([by[m]["p_bootstrap"] for m in tested], method="holm")[1]
    np.testing.assert_allclose([by[m]["p_bootstrap_holm"] for m in tested], ref, rtol=1e-12)
    assert all(by[m]["tested"] for m in tested)
    # the within-model effects include every model on purpose, and say so
    assert r["families"]["position_effect"]["includes_instruments"] is True
    for key in _WITHIN_MODEL:
        assert "known-answer" in r["families"][key]["note"]
    # the control effect: Holm across the models under test x types, each instrument across its own types
    ce = r["families"]["control_effect"]
    assert ce["correction"] == "holm across the models under test x types" and "instruments" in ce
    assert ce["instruments"]["correction"] == "holm across the canary types within each instrument (a family per instrument)"


# --------------------------------------------------------------------------- counting rules


def test_zero_call_runs_leave_trap_rate_denominators_and_are_counted() -> None:
    cm = "capability_mirage"
    df = make_runs([
        {f"present_{cm}": True, f"trapped_{cm}": True, "canary_calls": 1, "trapped": True, "recovered": False},
        {f"present_{cm}": True},
        {f"present_{cm}": True, "tool_calls": 0, "canary_calls": 0, "success": False},  # under-calling
    ])
    r = stats.compute_all(df, cfg())
    assert r["trap_rates"]["declared"]["m1"][cm] == pytest.approx(0.5)
    e = r["trap_rate_ci"]["declared"]["m1"][cm]
    assert (e["n"], e["trapped"], e["n_zero_call"]) == (2, 1, 1)
    assert r["recovery"]["declared"]["m1"]["n"] == 1
    assert r["counts"]["declared"]["m1"]["zero_call"] == 1


def test_truncated_runs_leave_tsr_and_are_reported_both_ways(tmp_path: Any) -> None:
    rows = [{"success": True}, {"success": True}, {"success": False}, {"success": False, "truncated": True},
            {"success": None, "truncated": True}]
    df = make_runs(rows).with_columns(pl.Series("truncated", [bool(r.get("truncated")) for r in rows]))
    r = stats.compute_all(df, cfg())
    assert r["tsr"]["declared"]["m1"] == pytest.approx(2 / 3)
    assert r["tsr_truncated_as_failure"]["declared"]["m1"] == pytest.approx(2 / 5)
    assert r["counts"]["declared"]["m1"]["truncated"] == 2 and r["tsr_ci"]["declared"]["m1"]["n_truncated"] == 2
    assert r["csr_ci"]["declared"]["m1"]["n"] == 5  # truncated runs keep their csr
    stats.write_outputs(r, tmp_path)
    t1 = pl.read_csv(tmp_path / "table1.csv")
    assert t1["truncated_runs"].to_list() == [2] and t1["tsr_truncated_as_failure"].to_list() == [pytest.approx(0.4)]
    # a table without the column (another tool's) has no truncated run
    assert stats.compute_all(make_runs(rows), cfg())["tsr"]["declared"]["m1"] == pytest.approx(2 / 4)
    with pytest.raises(InputError, match="truncated"):
        stats.compute_all(df.with_columns(truncated=pl.lit(None, dtype=pl.Boolean)), cfg())


def test_a_model_whose_runs_all_failed_keeps_its_rows(tmp_path: Any) -> None:
    df = make_runs(
        [{"model": "ok", "canary_calls": 1, "trapped": True, "recovered": True}, {"model": "ok"}]
        + [{"model": "down", "group": "g2", "error": True, "success": None, "tool_calls": 0} for _ in range(3)]
    )
    r = stats.compute_all(df, cfg())
    assert r["counts"]["declared"]["down"] == {"runs": 0, "failed": 3, "zero_call": 0, "truncated": 0, "judged": 0}
    e = r["csr_ci"]["declared"]["down"]
    assert (e["csr"], e["n_runs"], e["n_failed"]) == (None, 0, 3)
    assert r["tsr"]["declared"]["down"] is None and r["trap_rates"]["declared"]["down"]["semantic_decoy"] is None
    stats.write_outputs(r, tmp_path)
    for name in ("table1", "table2"):
        t = pl.read_csv(tmp_path / f"{name}.csv")
        row = t.filter(pl.col("model") == "down")
        assert row.height == 1 and row["failed_runs"].to_list() == [3] and row["runs"].to_list() == [0], name
    assert "| down |" in (tmp_path / "table1.md").read_text()


# --------------------------------------------------------------------------- stability and ablation


def test_per_seed_stability_recomputed_by_hand(small: pl.DataFrame, small_result: dict[str, Any]) -> None:
    st = small_result["stability"]
    assert st["seeds"] == [0, 1, 2] and st["n_findings"] == len(st["findings"])
    order = [f for f in st["findings"] if f["kind"] == "csr_order" and f["condition"] == "declared"]
    assert order
    f = order[0]
    a, b = f["finding"].split(": ")[1].split(" < ")
    d = _decl(small).filter(pl.col("csr").is_not_null())
    for s in (0, 1, 2):
        ca = d.filter((pl.col("model") == a) & (pl.col("seed") == s))["csr"].mean()
        cb = d.filter((pl.col("model") == b) & (pl.col("seed") == s))["csr"].mean()
        assert f["per_seed"][str(s)] == pytest.approx(cb - ca)
    assert f["survives"] == all(v > 0 for v in f["per_seed"].values())
    kinds = {x["kind"] for x in st["findings"]}
    assert {"csr_order", "csr_ranking", "tsr_delta", "contrast"} <= kinds
    assert "fisher" not in kinds  # the paper's Fisher tests assume independent runs: replication only
    one = stats.compute_all(small.filter(pl.col("seed") == 0), cfg(resamples=20))["stability"]
    assert one["note"] and all(x["survives"] is None for x in one["findings"])


def test_per_type_ablation_paired_by_task(small: pl.DataFrame, small_result: dict[str, Any]) -> None:
    cm = "capability_mirage"
    e = small_result["ablation_by_type"]["frontier-2"][cm]
    ok = small.filter(~pl.col("error") & (pl.col("condition") == "declared") & (pl.col("model") == "frontier-2")
                      & pl.col(f"present_{cm}") & (pl.col("tool_calls") > 0))
    std, sub = ok.filter(pl.col("pool") == "standard"), ok.filter(pl.col("pool") == "subtle")
    assert e["standard"] == pytest.approx(std[f"trapped_{cm}"].mean()) and e["subtle"] == pytest.approx(sub[f"trapped_{cm}"].mean())
    assert e["delta"] == pytest.approx(e["subtle"] - e["standard"]) and e["lo"] <= e["delta"] <= e["hi"]
    study_tasks = small.filter(~pl.col("error")).get_column("task_id").to_numpy().astype(str)

    def stat(picked: np.ndarray) -> float:
        va, vb = _stack(sub, picked, f"trapped_{cm}"), _stack(std, picked, f"trapped_{cm}")
        return (va.mean() if va.size else np.nan) - (vb.mean() if vb.size else np.nan)

    draws = _loop_task_draws(study_tasks, B, stat)
    lo, hi = loops.bca(draws, e["delta"], loops.task_jackknife(study_tasks, stat))
    assert (e["lo"], e["hi"]) == (pytest.approx(lo, rel=1e-12), pytest.approx(hi, rel=1e-12))
    m = small_result["ablation"]["models"]["frontier-2"]
    assert m["lo"] <= m["delta"] <= m["hi"]


# --------------------------------------------------------------------------- configuration


def test_config_bounds_and_mapping() -> None:
    with pytest.raises(InputError, match="bootstrap_resamples"):
        stats.StatsConfig(resamples=10**9)
    with pytest.raises(InputError, match="bootstrap_unit"):
        stats.StatsConfig(bootstrap_unit="cluster")  # type: ignore[arg-type]
    c = stats.StatsConfig.from_mapping({"bootstrap_unit": "run", "test_groups": ["frontier"]}, primary_pool="subtle")
    assert (c.bootstrap_unit, c.test_groups, c.primary_pool) == ("run", ("frontier",), "subtle")
    assert c.tested("frontier") and not c.tested("mid")
    assert stats.StatsConfig().tested("mid") and not stats.StatsConfig().tested("planted")


def test_paired_delta_as_the_readme_shows_for_later_effects(small: pl.DataFrame, small_result: dict[str, Any]) -> None:
    """The public path a later effect (control_effect, position_effect) takes gives the
    study's own numbers: here the per-type ablation, standard vs subtle pool."""
    t = "capability_mirage"
    st = stats.build_study(stats.validate_runs(small), cfg())
    runs = small.filter(~pl.col("error") & (pl.col("condition") == "declared") & (pl.col("model") == "frontier-2")
                        & pl.col(f"present_{t}") & (pl.col("tool_calls") > 0))
    e = stats.paired_delta(st.boot, stats.sample_of(runs.filter(pl.col("pool") == "subtle"), f"trapped_{t}"),
                           stats.sample_of(runs.filter(pl.col("pool") == "standard"), f"trapped_{t}"),
                           label=("control_effect", "frontier-2", t), alpha=0.05)
    ref = small_result["ablation_by_type"]["frontier-2"][t]
    assert (e["a"], e["b"], e["delta"], e["lo"], e["hi"], e["n_pairs"]) == (
        pytest.approx(ref["subtle"]), pytest.approx(ref["standard"]), pytest.approx(ref["delta"]), ref["lo"], ref["hi"], ref["n_pairs"])
    assert 0.0 <= e["p"] <= 1.0 and e["clusters"] > 1
    assert stats.holm([e["p"], 0.5]).tolist()[0] == pytest.approx(min(1.0, 2 * e["p"]))


# --------------------------------------------------------------------------- BCa intervals


def test_bca_matches_scipy_bootstrap_given_its_draws() -> None:
    """scipy.stats.bootstrap(method="BCa") resampling whole tasks (paired per-task sums): our
    interval from scipy's own bootstrap distribution and our closed-form jackknife equals
    scipy's interval (scipy recomputes the statistic on every leave-one-out sample)."""
    rng = np.random.default_rng(12)
    g = 40
    n = rng.integers(1, 6, g).astype(float)
    s = rng.binomial(n.astype(int), rng.beta(0.7, 1.5, g)).astype(float)
    n[:3] = 0.0  # tasks without a run of this rate
    s[:3] = 0.0

    def ratio(sv: np.ndarray, nv: np.ndarray, axis: int = -1) -> np.ndarray:
        return sv.sum(axis=axis) / nv.sum(axis=axis)

    for alpha in (0.05, 0.2):
        res = sps.bootstrap((s, n), ratio, paired=True, vectorized=True, method="BCa", n_resamples=2000,
                            confidence_level=1 - alpha, random_state=np.random.default_rng(5))
        jack = (s.sum() - s) / (n.sum() - n)
        lo, hi = stats.bca_ci(res.bootstrap_distribution, s.sum() / n.sum(), jack, alpha)
        assert (lo, hi) == (pytest.approx(res.confidence_interval.low, rel=1e-10),
                            pytest.approx(res.confidence_interval.high, rel=1e-10))
    # and the study's jackknife is that one: a TaskBootstrap over the same tasks
    tasks = np.array([f"t{i:02d}" for i in range(g)])
    runs_t = np.repeat(tasks, n.astype(int))
    values = np.concatenate([np.r_[np.ones(int(k)), np.zeros(int(m - k))] for k, m in zip(s, n, strict=True)])
    d = stats.TaskBootstrap(tasks, 50, 1).draws(("x",), [stats.Sample(values, runs_t)])
    np.testing.assert_allclose(d.jackknife[:, 0], jack, rtol=1e-12)


def test_column_quantiles_are_numpys_and_bca_falls_back_when_undefined() -> None:
    rng = np.random.default_rng(0)
    d = rng.normal(size=(501, 4))
    d[::7, 2] = np.nan
    lev = np.array([[0.025] * 4, [0.975] * 4])
    q = stats.column_quantiles(d, lev)
    for k in range(4):
        col = d[:, k][np.isfinite(d[:, k])]
        np.testing.assert_allclose(q[:, k], np.quantile(col, [0.025, 0.975]), rtol=1e-14)
    # every draw above the estimate: BCa is undefined, the percentile interval is given
    draws = rng.normal(5, 1, size=(400, 1))
    levels = stats.bca_levels(draws, np.array([-1.0]), rng.normal(size=(30, 1)), 0.05)
    np.testing.assert_allclose(levels[:, 0], [0.025, 0.975])


def _bisect_p(draws: np.ndarray, est: float, jack: np.ndarray | None) -> float:
    """The smallest alpha whose interval (plain-loop BCa, or percentile) excludes 0, by bisection."""
    def excludes(alpha: float) -> bool:
        lo, hi = loops.bca(draws, est, jack, alpha) if jack is not None else np.quantile(draws, [alpha / 2, 1 - alpha / 2])
        return lo > 0 or hi < 0
    a, b = 1e-9, 1.0
    if not excludes(b - 1e-9):
        return 1.0
    for _ in range(60):
        mid = (a + b) / 2
        a, b = (a, mid) if excludes(mid) else (mid, b)
    return b


def test_p_bootstrap_inverts_the_interval() -> None:
    rng = np.random.default_rng(4)
    for mean in (0.05, 0.2, -0.3, 0.45):
        draws = rng.normal(mean, 0.2, 2000) + 0.05 * rng.exponential(size=2000)
        jack = rng.normal(0, 0.01, 60) + 0.002 * rng.exponential(size=60)
        est = float(np.median(draws)) + 0.01
        got = stats.bootstrap_p(draws, est, jack[:, None])[0]
        assert got == pytest.approx(_bisect_p(draws, est, jack), abs=3 / 2000), mean
        pct = stats.bootstrap_p(draws)[0]
        assert pct == pytest.approx(_bisect_p(draws, est, None), abs=3 / 2000), mean
    assert stats.bootstrap_p(np.full(50, 0.3))[0] == 0.0  # every draw on one side
    assert stats.bootstrap_p(np.zeros(50))[0] == 1.0


def test_p_bootstrap_of_spearman_within_a_tested_model(small: pl.DataFrame) -> None:
    """compute_all's p_bootstrap is the smallest alpha whose (BCa) interval excludes 0, with
    draws and jackknife replayed by plain loops."""
    r = stats.compute_all(small, cfg(resamples=200))
    study_tasks = small.filter(~pl.col("error")).get_column("task_id").to_numpy().astype(str)
    checked = 0
    for m, got in r["spearman_by_model"]["declared"].items():
        if got["p_bootstrap"] is None:
            continue
        d = _decl(small, m).filter(pl.col("csr").is_not_null() & pl.col("success").is_not_null())

        def stat(picked: np.ndarray, d: pl.DataFrame = d) -> float:
            x, y = _stack(d, picked, "csr"), _stack(d, picked, "success")
            return float(sps.spearmanr(x, y).statistic) if np.unique(x).size > 1 and np.unique(y).size > 1 else np.nan

        draws = _loop_task_draws(study_tasks, 200, stat)
        jack = loops.task_jackknife(study_tasks, stat)
        assert got["p_bootstrap"] == pytest.approx(_bisect_p(draws, got["rho"], jack), abs=3 / 200), m
        checked += 1
    assert checked == 4


# --------------------------------------------------------------------------- the other interval paths


def test_trap_rate_and_recovery_intervals_replay_a_plain_loop(small: pl.DataFrame, small_result: dict[str, Any]) -> None:
    study_tasks = small.filter(~pl.col("error")).get_column("task_id").to_numpy().astype(str)
    t = "temporal_decoy"
    for m in ("frontier-1", "mid-1"):
        runs = _decl(small, m)
        offered = runs.filter(pl.col(f"present_{t}") & (pl.col("tool_calls") > 0))
        v, vt = offered.get_column(f"trapped_{t}").cast(pl.Float64).to_numpy(), offered.get_column("task_id").to_numpy().astype(str)
        trapped = runs.filter(pl.col("trapped"))
        w = trapped.get_column("recovered").fill_null(False).cast(pl.Float64).to_numpy()
        wt = trapped.get_column("task_id").to_numpy().astype(str)
        for got, values, tasks, rate_key in ((small_result["trap_rate_ci"]["declared"][m][t], v, vt, "rate"),
                                             (small_result["recovery"]["declared"][m], w, wt, "rate")):
            def stat(picked: np.ndarray, values: np.ndarray = values, tasks: np.ndarray = tasks) -> float:
                return loops.mean_or_nan(loops.stack(values, tasks, picked))

            lo, hi = loops.bca(_loop_task_draws(study_tasks, B, stat), values.mean(), loops.task_jackknife(study_tasks, stat))
            assert got[rate_key] == pytest.approx(values.mean())
            assert (got["lo"], got["hi"]) == (pytest.approx(lo, rel=1e-12), pytest.approx(hi, rel=1e-12)), (m, rate_key)
            assert got["clusters"] == np.unique(tasks).size and got["n"] == values.size


# --------------------------------------------------------------------------- per-seed stability, by hand


def test_stability_tsr_delta_and_contrasts_per_seed_by_hand(small: pl.DataFrame, small_result: dict[str, Any]) -> None:
    st = small_result["stability"]
    ok = small.filter(~pl.col("error") & (pl.col("pool") == "standard"))

    def tsr(cond: str, m: str, s: int) -> float:
        f = ok.filter((pl.col("condition") == cond) & (pl.col("model") == m) & (pl.col("seed") == s) & pl.col("success").is_not_null())
        return float(f["success"].cast(pl.Float64).mean())

    deltas = [f for f in st["findings"] if f["kind"] == "tsr_delta"]
    assert {(f["condition"], f["finding"].split(": ")[1]) for f in deltas} == {
        (c, m) for c in ("declared", "full") for m in small_result["meta"]["tested_models"]}
    for f in deltas:
        c, m = f["condition"], f["finding"].split(": ")[1]
        per = {str(s): tsr("baseline", m, s) - tsr(c, m, s) for s in (0, 1, 2)}
        assert f["per_seed"] == pytest.approx(per)
        assert f["estimate"] == pytest.approx(small_result["tsr_delta"][c][m]["delta"])
        assert f["survives"] == all(np.sign(v) == np.sign(f["estimate"]) and v != 0 for v in per.values())

    def rate(c: str, m: str, t: str, s: int) -> float:
        f = ok.filter((pl.col("condition") == c) & (pl.col("model") == m) & (pl.col("seed") == s)
                      & pl.col(f"present_{t}") & (pl.col("tool_calls") > 0))
        return float(f[f"trapped_{t}"].cast(pl.Float64).mean())

    for kind, family in (("contrast", "contrasts"),):
        found = [f for f in st["findings"] if f["kind"] == kind]
        significant = [(c, row) for c in small_result["meta"]["conditions"] for row in small_result[family][c]["contrasts"]
                       if row["significant"]]
        assert len(found) == len(significant) > 0, kind
        for f, (c, row) in zip(found, significant, strict=True):
            a, b, t = row["model_a"], row["model_b"], row["type"]
            assert f["finding"] == f"{t} trap rate {c}: {a} vs {b}" and f["family"] == f"{family}.{c}"
            per = {str(s): rate(c, a, t, s) - rate(c, b, t, s) for s in (0, 1, 2)}
            assert f["per_seed"] == pytest.approx(per)
            assert f["survives"] == all(np.sign(v) == np.sign(f["estimate"]) for v in per.values())
    assert st["n_surviving"] == sum(1 for f in st["findings"] if f["survives"])
