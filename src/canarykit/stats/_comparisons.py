"""Comparisons across the models under test, per condition: the paper's tests (chi-square,
Kruskal-Wallis, Fisher-Holm, Spearman), the blocked tests (Friedman, GEE, the task-blocked
permutation test and which of them answers), the pairwise trap-rate contrasts and the
association of csr with success."""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np

from ..types import CANARY_TYPES
from ._bootstrap import derive_rng, finite
from ._cells import N_TYPES, Cell, Study
from ._crossed import FEW_CLUSTERS
from ._rates import TrapDraws
from ._tests import (
    chi2_independence,
    cohens_h,
    fisher_exact_2x2,
    friedman,
    gee_association,
    gee_group_test,
    holm,
    kruskal_wallis,
    permutation_group_test,
    spearman,
)

# --------------------------------------------------------------------------- the paper's tests


def chi2_test(st: Study, c: str) -> dict[str, Any]:
    models = st.tested_in(c)
    table = np.array(
        [[st.cell(c, m).canary_calls.sum(), st.cell(c, m).calls.sum() - st.cell(c, m).canary_calls.sum()] for m in models],
        dtype=float,
    ).reshape(-1, 2)
    res = chi2_independence(table)
    res["n_calls"] = int(table.sum())
    res["n_models"] = int((table.sum(axis=1) > 0).sum())
    res["models"] = models
    return res


def kruskal_test(st: Study, c: str) -> dict[str, Any]:
    models = st.tested_in(c)
    samples = [st.cell(c, m).csr_sample().values for m in models]
    res = kruskal_wallis(samples)
    res["n_models"] = sum(1 for s in samples if s.size)
    res["models"] = models
    return res


def fisher_holm_test(st: Study, c: str) -> dict[str, Any]:
    models = st.tested_in(c)
    meta: list[dict[str, Any]] = []
    tables: list[list[list[int]]] = []
    trap = {(m, j): st.cell(c, m).trap_sample(j) for m in models for j in range(N_TYPES)}
    for j, t in enumerate(CANARY_TYPES):
        for a, b in combinations(models, 2):
            sa, sb = trap[(a, j)], trap[(b, j)]
            if sa.n == 0 and sb.n == 0:
                continue
            a_k, b_k = int(sa.values.sum()), int(sb.values.sum())
            meta.append({"type": t, "model_a": a, "model_b": b, "a_trapped": a_k, "a_n": sa.n, "b_trapped": b_k, "b_n": sb.n})
            tables.append([[a_k, sa.n - a_k], [b_k, sb.n - b_k]])
    reason = None
    if len(models) < 2:
        reason = "fewer than two models under test"
    elif not meta:
        reason = "no canary type was present"
    p = fisher_exact_2x2(np.array(tables, dtype=np.int64).reshape(-1, 2, 2))
    p_holm = holm(p)
    for entry, pv, ph in zip(meta, p, p_holm, strict=True):
        entry.update(p=float(pv), p_holm=float(ph), significant=bool(ph < st.config.alpha))
    return {
        "alpha": st.config.alpha, "n_contrasts": len(meta), "n_significant": int(sum(e["significant"] for e in meta)),
        "reason": reason, "models": models, "contrasts": meta,
    }


def spearman_test(st: Study, c: str, models: list[str], label: tuple[str, ...], *, inferential: bool = True) -> dict[str, Any]:
    """Spearman's rho of csr and success over the runs of ``models`` with its interval;
    ``p`` (independent runs, the paper's) and ``p_bootstrap`` (the smallest alpha whose
    interval excludes 0) only when ``inferential`` (models under test)."""
    xs, ys, ts = [], [], []
    for m in models:
        cell = st.cell(c, m)
        keep = np.isfinite(cell.csr) & np.isfinite(cell.success)
        xs.append(cell.csr[keep])
        ys.append(cell.success[keep])
        ts.append(cell.tasks[keep])
    x = np.concatenate(xs) if xs else np.zeros(0)
    y = np.concatenate(ys) if ys else np.zeros(0)
    tasks = np.concatenate(ts) if ts else np.zeros(0, str)
    entry: dict[str, Any] = {"rho": None, "p": None, "p_bootstrap": None, "lo": None, "hi": None, "n": int(x.size),
                             "clusters": int(np.unique(tasks).size), "reason": None}
    entry["few_clusters"] = entry["clusters"] < FEW_CLUSTERS
    if x.size < 3:
        entry["reason"] = "fewer than three runs with both csr and a verdict"
    elif np.unique(x).size < 2 or np.unique(y).size < 2:
        entry["reason"] = "csr or success is constant"
    else:
        rho, p = spearman(x, y)
        entry["rho"] = rho
        d = st.boot.spearman(label, x, y, tasks)
        lo, hi = d.intervals(st.config.alpha)
        entry["lo"], entry["hi"] = finite(lo[0]), finite(hi[0])
        if inferential:
            entry["p"] = p
            entry["p_bootstrap"] = finite(d.p_values()[0])
    return entry


def spearman_by_model(st: Study, c: str) -> dict[str, Any]:
    """Spearman within each model: rho and its interval for every model; the p-values only
    for the models under test, Holm-adjusted across them (``p_bootstrap_holm``)."""
    tested = set(st.tested_in(c))
    out = {m: spearman_test(st, c, [m], ("spearman", c, m), inferential=m in tested) for m in st.models[c]}
    family = [m for m in sorted(tested) if out[m]["p_bootstrap"] is not None]
    adj = holm([out[m]["p_bootstrap"] for m in family])
    for m, e in out.items():
        e["tested"] = m in tested
        e["p_bootstrap_holm"] = None
        e["significant"] = None
    for m, ph in zip(family, adj, strict=True):
        out[m]["p_bootstrap_holm"] = float(ph)
        out[m]["significant"] = bool(ph < st.config.alpha)
    return out


# --------------------------------------------------------------------------- blocked tests


def _per_task_means(cell: Cell, values: np.ndarray) -> dict[str, float]:
    keep = np.isfinite(values)
    if not keep.any():
        return {}
    tasks, inv = np.unique(cell.tasks[keep], return_inverse=True)
    sums = np.bincount(inv, weights=values[keep])
    cnt = np.bincount(inv)
    return dict(zip(tasks.tolist(), (sums / cnt).tolist(), strict=True))


def friedman_test(st: Study, c: str) -> dict[str, Any]:
    tested = st.tested_in(c)
    means = {m: _per_task_means(st.cell(c, m), st.cell(c, m).csr) for m in tested}
    models = [m for m in tested if means[m]]  # a model with no csr at all (never called a tool) has no block
    all_tasks = sorted(set().union(*[set(means[m]) for m in models])) if models else []
    complete = [t for t in all_tasks if all(t in means[m] for m in models)]
    blocks = np.array([[means[m][t] for m in models] for t in complete], dtype=float).reshape(len(complete), len(models))
    res = friedman(blocks)
    res.update(n_models=len(models), models=models, excluded=[m for m in tested if not means[m]],
               dropped_tasks=len(all_tasks) - len(complete))
    return res


def _trapped_runs(st: Study, c: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``trapped`` (0/1), model and task of the runs of the models under test that made a
    tool call (the trap rate's denominator rule)."""
    ys, gs, ts = [], [], []
    for m in st.tested_in(c):
        cell = st.cell(c, m)
        keep = cell.calls > 0
        ys.append(cell.trapped[keep].astype(float))
        gs.append(np.full(int(keep.sum()), m))
        ts.append(cell.tasks[keep])
    if not ys:
        return np.zeros(0), np.zeros(0, str), np.zeros(0, str)
    return np.concatenate(ys), np.concatenate(gs), np.concatenate(ts)


def gee_trap_test(st: Study, c: str) -> dict[str, Any]:
    return gee_group_test(*_trapped_runs(st, c))


def trap_permutation_test(st: Study, c: str) -> dict[str, Any]:
    y, g, t = _trapped_runs(st, c)
    return permutation_group_test(y, g, t, resamples=st.config.resamples,
                                  rng=derive_rng(st.config.seed, "trap_permutation", c))


def trap_test(gee: dict[str, Any], perm: dict[str, Any], tested: list[str]) -> dict[str, Any]:
    """Which omnibus test of trap rates across the models under test answers, and why.

    The logistic GEE answers when it fits: it keeps every model under test that made a tool
    call, it converged and gave a p-value. Otherwise (a model never or always trapped has an
    infinite log-odds and GEE leaves it out; no convergence; a singular covariance) the
    task-blocked permutation test answers: it keeps every model.
    """
    why: str | None = None
    if gee.get("excluded"):
        why = (f"{', '.join(gee['excluded'])} never or always trapped: infinite log-odds, left out of GEE "
               "(the permutation test keeps every model)")
    elif gee.get("p") is None:
        why = gee.get("reason") or "GEE gave no p-value"
    elif gee.get("converged") is False:
        why = "GEE did not converge"
    if why is None:
        test, src = "gee_trap", gee
    else:
        test, src = "trap_permutation", perm
    answered = src.get("p") is not None
    return {
        "test": test if answered else None, "p": src.get("p"), "statistic": src.get("statistic"),
        "models": src.get("groups", []), "tested_models": tested, "gee_not_used": why,
        "reason": None if answered else (src.get("reason") or "no test applies"),
    }


# --------------------------------------------------------------------------- pairwise contrasts and the csr-success association


def contrasts(st: Study, c: str, td: TrapDraws) -> dict[str, Any]:
    """Pairwise model contrasts of each type's trap rate, task-clustered, Holm across all."""
    models = st.tested_in(c)
    rows: list[dict[str, Any]] = []
    skipped = 0
    for j, t in enumerate(CANARY_TYPES):
        have = [m for m in models if (c, m, j) in td.samples]
        pairs = [(a, b) for a, b in combinations(models, 2)]
        skipped += sum(1 for a, b in pairs if a not in have or b not in have)
        pairs = [(a, b) for a, b in pairs if a in have and b in have]
        if not pairs:
            continue
        idx = {m: i for i, m in enumerate(have)}
        assert td.draws is not None
        ipairs = [(idx[a], idx[b]) for a, b in pairs]
        diffs = td.draws.take([td.column[(c, m, j)] for m in have]).differences(ipairs)
        cr = st.boot.wald([td.samples[(c, m, j)] for m in have], ipairs, diffs)
        lo_all, hi_all = diffs.intervals(st.config.alpha)
        for k, (a, b) in enumerate(pairs):
            sa, sb = td.samples[(c, a, j)], td.samples[(c, b, j)]
            lo, hi = finite(lo_all[k]), finite(hi_all[k])
            ra, rb = sa.mean(), sb.mean()
            rows.append({
                "type": t, "model_a": a, "model_b": b, "a": ra, "b": rb, "delta": finite(cr["delta"][k]), "lo": lo, "hi": hi,
                "se": finite(cr["se"][k]), "p": finite(cr["p"][k]), "cohens_h": cohens_h(ra, rb), "a_n": sa.n, "b_n": sb.n,
                "clusters": int(cr["clusters"][k]), "df": finite(cr["df"][k]), "few_clusters": bool(cr["clusters"][k] < FEW_CLUSTERS),
            })
    tested = [r for r in rows if r["p"] is not None]
    adj = holm([r["p"] for r in tested])
    for r, ph in zip(tested, adj, strict=True):
        r["p_holm"] = float(ph)
        r["significant"] = bool(ph < st.config.alpha)
    for r in rows:
        r.setdefault("p_holm", None)
        r.setdefault("significant", False)
    reason = None
    if len(models) < 2:
        reason = "fewer than two models under test"
    elif not rows:
        reason = "no canary type was present for two models"
    elif not tested:
        reason = "no contrast is testable (fewer than two tasks)"
    return {
        "alpha": st.config.alpha, "unit": st.boot.unit, "n_contrasts": len(tested),
        "n_significant": int(sum(r["significant"] for r in rows)), "skipped_pairs": skipped, "reason": reason,
        "models": models, "contrasts": rows,
    }


# --------------------------------------------------------------------------- too few models under test


def _few_tested(st: Study, c: str, need: int = 2) -> str | None:
    """The reason a test across models cannot run: too few models under test."""
    n = len(st.tested_in(c))
    if n >= need:
        return None
    untested = [m for m in st.models.get(c, []) if m not in set(st.tested)]
    why = f"{n} model(s) under test in {c}, {need} needed"
    if untested:
        why += (f"; {len(untested)} model(s) of groups {sorted({st.groups.get(m, '?') for m in untested})} are described, "
                "not tested (stats.test_groups)")
    return why


def with_family_reason(st: Study, c: str, res: dict[str, Any], key: str = "reason", need: int = 2) -> dict[str, Any]:
    why = _few_tested(st, c, need)
    if why is not None:
        res[key] = why
    return res


def association_test(st: Study, c: str) -> dict[str, Any]:
    ys, xs, ss, ts = [], [], [], []
    for m in st.tested_in(c):
        cell = st.cell(c, m)
        keep = np.isfinite(cell.csr) & np.isfinite(cell.success)
        ys.append(cell.success[keep])
        xs.append(cell.csr[keep])
        ss.append(np.full(int(keep.sum()), m))
        ts.append(cell.tasks[keep])
    if not ys:
        return gee_association(np.zeros(0), np.zeros(0), np.zeros(0, str), np.zeros(0, str), alpha=st.config.alpha)
    return gee_association(np.concatenate(ys), np.concatenate(xs), np.concatenate(ss), np.concatenate(ts), alpha=st.config.alpha)
