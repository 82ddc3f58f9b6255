"""Hypothesis tests and effect sizes: pure functions of arrays (no study layout here).

The paper's tests, which treat task-runs (or tool calls) as independent: Pearson chi-square
(:func:`chi2_independence`), Kruskal-Wallis (:func:`kruskal_wallis`), pairwise Fisher exact
tests (:func:`fisher_exact_2x2`) with Holm's correction (:func:`holm`) and Spearman's rho
(:func:`spearman`). The tests that respect the blocked design (the same tasks under every
model): Friedman's test on per-task means (:func:`friedman`), GEE logistic regressions with
an exchangeable working correlation within task and robust (sandwich) covariance
(:func:`gee_group_test`, :func:`gee_association`, statsmodels), and the cluster-robust
contrasts of :mod:`._bootstrap`, and a task-blocked permutation test of trap rates across
models (:func:`permutation_group_test`) that, unlike the logistic GEE, keeps a model that is
never or always trapped. Effect sizes: Cohen's d (:func:`cohens_d`) and, for
proportions, Cohen's h (:func:`cohens_h`).
"""

from __future__ import annotations

import functools
import itertools
import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import special
from scipy import stats as sps

__all__ = [
    "chi2_independence",
    "cohens_d",
    "cohens_h",
    "fisher_exact_2x2",
    "friedman",
    "gee_association",
    "gee_group_test",
    "holm",
    "block_permutations",
    "kruskal_wallis",
    "permutation_group_test",
    "spearman",
]

#: Relative tolerance used to decide which tables are "as or more extreme" (as scipy does).
_FISHER_RTOL = 1e-7


def holm(pvalues: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm step-down adjusted p-values (same order as the input)."""
    p = np.asarray(pvalues, dtype=float)
    m = p.size
    if m == 0:
        return p.copy()
    order = np.argsort(p, kind="stable")
    stepped = (m - np.arange(m)) * p[order]
    adj_sorted = np.minimum(np.maximum.accumulate(stepped), 1.0)
    out = np.empty(m)
    out[order] = adj_sorted
    return out


def chi2_independence(table: np.ndarray) -> dict[str, Any]:
    """Pearson chi-square test of independence (no continuity correction).

    Rows and columns with a zero total are dropped first. Returns ``statistic, dof, p`` (null
    with a ``reason`` when fewer than two rows or columns remain).
    """
    t = np.asarray(table, dtype=float)
    t = t[t.sum(axis=1) > 0]
    if t.size:
        t = t[:, t.sum(axis=0) > 0]
    n = float(t.sum()) if t.size else 0.0
    if t.ndim != 2 or t.shape[0] < 2:
        return {"statistic": None, "dof": None, "p": None, "reason": "fewer than two models with tool calls"}
    if t.shape[1] < 2:
        return {"statistic": None, "dof": None, "p": None, "reason": "no variation: every call falls in one category"}
    expected = np.outer(t.sum(axis=1), t.sum(axis=0)) / n
    stat = float(((t - expected) ** 2 / expected).sum())
    dof = (t.shape[0] - 1) * (t.shape[1] - 1)
    return {"statistic": stat, "dof": int(dof), "p": float(sps.chi2.sf(stat, dof)), "reason": None}


def kruskal_wallis(samples: Sequence[np.ndarray]) -> dict[str, Any]:
    """Kruskal-Wallis H test with the tie correction (empty samples are dropped)."""
    groups = [np.asarray(s, dtype=float) for s in samples if np.asarray(s).size > 0]
    n = int(sum(g.size for g in groups))
    if len(groups) < 2:
        return {"H": None, "p": None, "n": n, "reason": "fewer than two models with a defined csr"}
    pooled = np.concatenate(groups)
    ranks = sps.rankdata(pooled)
    _, counts = np.unique(pooled, return_counts=True)
    tie = 1.0 - float((counts**3 - counts).sum()) / (n**3 - n) if n > 1 else 0.0
    if tie <= 0.0:
        return {"H": None, "p": None, "n": n, "reason": "all values are identical"}
    bounds = np.cumsum([0] + [g.size for g in groups])
    rank_sums = np.add.reduceat(ranks, bounds[:-1])
    sizes = np.diff(bounds)
    h = (12.0 / (n * (n + 1)) * float((rank_sums**2 / sizes).sum()) - 3.0 * (n + 1)) / tie
    return {"H": h, "p": float(sps.chi2.sf(h, len(groups) - 1)), "n": n, "reason": None}


def _log_comb(n: np.ndarray, k: np.ndarray) -> np.ndarray:
    n = np.asarray(n, dtype=float)
    k = np.asarray(k, dtype=float)
    return special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)


def fisher_exact_2x2(tables: np.ndarray) -> np.ndarray:
    """Two-sided Fisher exact p-values of many 2x2 tables at once (shape ``(m, 2, 2)``).

    p = total hypergeometric probability of the tables (same margins) no more likely than the
    observed one, with a relative tolerance of 1e-7 for ties in probability. Vectorised by
    hand because ``scipy.stats.fisher_exact`` takes one table per call (hundreds per study).
    """
    t = np.asarray(tables, dtype=np.int64).reshape(-1, 2, 2)
    if t.shape[0] == 0:
        return np.empty(0)
    a = t[:, 0, 0]
    row1 = t[:, 0].sum(axis=1)
    col1 = t[:, :, 0].sum(axis=1)
    total = t.sum(axis=(1, 2))
    lo = np.maximum(0, row1 + col1 - total)
    hi = np.minimum(row1, col1)
    width = int((hi - lo).max()) + 1
    x = lo[:, None] + np.arange(width)[None, :]
    valid = x <= hi[:, None]
    xs = np.where(valid, x, lo[:, None])

    def logpmf(k: np.ndarray) -> np.ndarray:
        # log C(col1, k) + log C(total - col1, row1 - k) - log C(total, row1)
        r, c, n = row1[:, None], col1[:, None], total[:, None]
        return _log_comb(c, k) + _log_comb(n - c, r - k) - _log_comb(n, r)

    lp = logpmf(xs)
    lp_obs = logpmf(a[:, None])
    keep = valid & (lp <= lp_obs + math.log1p(_FISHER_RTOL))
    p = np.where(keep, np.exp(lp), 0.0).sum(axis=1)
    return np.minimum(p, 1.0)


def cohens_d(a: np.ndarray, b: np.ndarray) -> float | None:
    """``(mean(a) - mean(b)) / pooled SD`` (ddof 1); null when undefined."""
    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    if x.size < 2 or y.size < 2:
        return None
    pooled = ((x.size - 1) * x.var(ddof=1) + (y.size - 1) * y.var(ddof=1)) / (x.size + y.size - 2)
    if pooled <= 0:
        return None
    return float((x.mean() - y.mean()) / math.sqrt(pooled))


def cohens_h(p1: float | None, p2: float | None) -> float | None:
    """Cohen's h of two proportions: ``2 asin(sqrt(p1)) - 2 asin(sqrt(p2))``.

    The effect size for a difference of proportions (d divides by a standard deviation that
    depends on the proportions themselves; h is variance-stabilised)."""
    if p1 is None or p2 is None or not (0.0 <= p1 <= 1.0 and 0.0 <= p2 <= 1.0):
        return None
    return 2.0 * math.asin(math.sqrt(p1)) - 2.0 * math.asin(math.sqrt(p2))


def spearman(x: np.ndarray, y: np.ndarray) -> tuple[float | None, float | None]:
    """Spearman rho with the t-approximation p-value (``scipy.stats.spearmanr``), which
    assumes independent observations; None when fewer than 3 or a constant variable."""
    xv = np.asarray(x, dtype=float)
    yv = np.asarray(y, dtype=float)
    if xv.size < 3 or np.unique(xv).size < 2 or np.unique(yv).size < 2:
        return None, None
    res = sps.spearmanr(xv, yv)
    rho, p = float(res.statistic), float(res.pvalue)
    return (rho if math.isfinite(rho) else None), (p if math.isfinite(p) else None)


def friedman(blocks: np.ndarray) -> dict[str, Any]:
    """Friedman's test across the columns (models) of ``blocks`` (rows: tasks, complete).

    ``scipy.stats.friedmanchisquare`` (ranks within each block, tie-corrected). Needs at least
    three columns and two blocks; a ``reason`` otherwise or when every block is all ties.
    """
    b = np.asarray(blocks, dtype=float)
    n, k = (b.shape if b.ndim == 2 else (0, 0))
    out: dict[str, Any] = {"statistic": None, "dof": None, "p": None, "n_blocks": int(n), "reason": None}
    if k < 3:
        out["reason"] = "fewer than three models: Friedman's test needs three (see the pairwise contrasts)"
        return out
    if n < 2:
        out["reason"] = "fewer than two tasks with a value for every model"
        return out
    if np.all(b == b[:, :1]):
        out["reason"] = "every task ties all models"
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = sps.friedmanchisquare(*b.T)
    stat = float(res.statistic)
    if not math.isfinite(stat):
        out["reason"] = "every task ties all models"
        return out
    out.update(statistic=stat, dof=k - 1, p=float(res.pvalue))
    return out


# --------------------------------------------------------------------------- GEE (statsmodels)


def _gee_fit(
    y: np.ndarray, x: np.ndarray, clusters: np.ndarray, working: str, start: np.ndarray | None = None
) -> tuple[Any, list[str]]:
    """Fit the logistic GEE; ``start`` (optional) are starting values, which spare
    statsmodels its own starting fit (a logistic GLM) when they are known in closed form."""
    import statsmodels.api as sm
    from statsmodels.genmod.cov_struct import Exchangeable, Independence

    _, codes = np.unique(clusters, return_inverse=True)
    order = np.argsort(codes, kind="stable")
    cov = Exchangeable() if working == "exchangeable" else Independence()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = sm.GEE(y[order], x[order], groups=codes[order], family=sm.families.Binomial(), cov_struct=cov)
        res = model.fit(maxiter=100, start_params=start)
    notes = sorted({f"{w.category.__name__}: {str(w.message).splitlines()[0]}" for w in caught})
    return res, notes


def _dependence(res: Any, working: str) -> float | None:
    if working != "exchangeable":
        return None
    dep = np.asarray(res.cov_struct.dep_params, dtype=float).ravel()
    return float(dep[0]) if dep.size and math.isfinite(dep[0]) else None


def gee_group_test(
    y: np.ndarray, groups: np.ndarray, clusters: np.ndarray, *, working: str = "exchangeable"
) -> dict[str, Any]:
    """Do the groups (models) share one rate? A cluster-robust test for 0/1 outcomes.

    GEE logistic regression of ``y`` on group indicators (intercept = the first group), with
    the working correlation ``working`` (``exchangeable``: runs of one cluster (task) share a
    correlation; ``independence``) and robust sandwich covariance; Wald chi-square of every
    group coefficient = 0 (``dof`` = groups - 1). A group whose outcome never varies (never or
    always trapped) has an infinite log-odds and is left out, listed in ``excluded``.
    """
    yv = np.asarray(y, dtype=float)
    g = np.asarray(groups).astype(str)
    c = np.asarray(clusters).astype(str)
    out: dict[str, Any] = {
        "statistic": None, "dof": None, "p": None, "n": 0, "clusters": 0, "groups": [], "excluded": [],
        "working_correlation": working, "dependence": None, "converged": None, "warnings": [], "reason": None,
    }
    names = sorted(set(g.tolist()))
    keep_names: list[str] = []
    for name in names:
        vals = yv[g == name]
        (keep_names if 0.0 < vals.mean() < 1.0 else out["excluded"]).append(name)
    out["groups"] = keep_names
    if len(keep_names) < 2:
        out["reason"] = (
            "fewer than two models whose outcome varies"
            + (f" ({', '.join(out['excluded'])} never or always trapped)" if out["excluded"] else "")
        )
        return out
    mask = np.isin(g, keep_names)
    yv, g, c = yv[mask], g[mask], c[mask]
    x = np.column_stack([np.ones(yv.size)] + [(g == name).astype(float) for name in keep_names[1:]])
    out["n"] = int(yv.size)
    out["clusters"] = int(np.unique(c).size)
    if out["clusters"] < 2:
        out["reason"] = "fewer than two tasks"
        return out
    # Group indicators only: the independence fit (statsmodels' usual start) is the logit of
    # each group's mean, known in closed form.
    logit = np.array([special.logit(float(yv[g == name].mean())) for name in keep_names])
    res, notes = _gee_fit(yv, x, c, working, start=np.concatenate([logit[:1], logit[1:] - logit[0]]))
    k = len(keep_names) - 1
    beta = np.asarray(res.params, dtype=float)[1:]
    cov = np.asarray(res.cov_robust, dtype=float)[1:, 1:]
    try:
        stat = float(beta @ np.linalg.solve(cov, beta))
    except np.linalg.LinAlgError:
        out["reason"] = "singular robust covariance"
        return out
    out.update(
        statistic=stat, dof=k, p=float(sps.chi2.sf(stat, k)), dependence=_dependence(res, working),
        converged=bool(getattr(res, "converged", True)), warnings=notes,
    )
    return out


def gee_association(
    y: np.ndarray, x: np.ndarray, strata: np.ndarray, clusters: np.ndarray, *, working: str = "exchangeable", alpha: float = 0.05
) -> dict[str, Any]:
    """The association of a 0/1 outcome with ``x`` *within* strata (models), clustered.

    GEE logistic regression ``y ~ x + stratum`` (one intercept per stratum, so only
    within-stratum variation of x informs the slope), exchangeable working correlation within
    cluster (task), robust covariance. Returns the slope ``coef`` (log odds per unit of x),
    ``se``, Wald interval ``lo, hi`` at ``1 - alpha``, ``p``, ``odds_ratio``. Strata whose
    outcome never varies carry no within-stratum information (and would make their intercept
    infinite): they are left out, listed in ``excluded``.
    """
    yv = np.asarray(y, dtype=float)
    xv = np.asarray(x, dtype=float)
    s = np.asarray(strata).astype(str)
    c = np.asarray(clusters).astype(str)
    out: dict[str, Any] = {
        "coef": None, "se": None, "lo": None, "hi": None, "p": None, "odds_ratio": None, "n": 0, "clusters": 0,
        "strata": [], "excluded": [], "working_correlation": working, "dependence": None, "converged": None,
        "warnings": [], "reason": None,
    }
    keep: list[str] = []
    for name in sorted(set(s.tolist())):
        vals = yv[s == name]
        (keep if 0.0 < vals.mean() < 1.0 else out["excluded"]).append(name)
    out["strata"] = keep
    mask = np.isin(s, keep)
    yv, xv, s, c = yv[mask], xv[mask], s[mask], c[mask]
    out["n"] = int(yv.size)
    out["clusters"] = int(np.unique(c).size)
    if not keep:
        out["reason"] = "no model whose success varies"
        return out
    if np.unique(xv).size < 2:
        out["reason"] = "csr is constant"
        return out
    if out["clusters"] < 2:
        out["reason"] = "fewer than two tasks"
        return out
    design = np.column_stack([xv] + [(s == name).astype(float) for name in keep])
    res, notes = _gee_fit(yv, design, c, working)
    coef = float(res.params[0])
    se = float(np.sqrt(res.cov_robust[0, 0]))
    z = sps.norm.ppf(1 - alpha / 2)
    out.update(
        coef=coef, se=se, lo=coef - z * se, hi=coef + z * se, p=float(2 * sps.norm.sf(abs(coef / se))) if se > 0 else None,
        odds_ratio=math.exp(coef) if abs(coef) < 700 else None, dependence=_dependence(res, working),
        converged=bool(getattr(res, "converged", True)), warnings=notes,
    )
    return out


# --------------------------------------------------------------------------- permutation test


def _block_sums(y: np.ndarray, groups: np.ndarray, clusters: np.ndarray) -> tuple[list[str], np.ndarray, np.ndarray]:
    names, gi = np.unique(groups, return_inverse=True)
    _, ci = np.unique(clusters, return_inverse=True)
    t, m = int(ci.max()) + 1, names.size
    s = np.bincount(ci * m + gi, weights=y, minlength=t * m).reshape(t, m)
    n = np.bincount(ci * m + gi, minlength=t * m).reshape(t, m).astype(float)
    return [str(x) for x in names], s, n


def _dispersion(s: np.ndarray, n: np.ndarray, pooled: float) -> np.ndarray:
    """Between-group dispersion ``sum_m N_m (r_m - pooled)^2`` of per-group sums and counts
    (last axis: groups); the pooled rate is the same under every permutation."""
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(n > 0, s / np.where(n > 0, n, 1.0), pooled)
    return (n * (r - pooled) ** 2).sum(axis=-1)


#: Up to this many groups, a complete task draws its permutation from the table of all of
#: them (8! = 40,320 rows), which is faster than sorting random keys.
_TABLE_GROUPS = 8


@functools.cache
def _all_permutations(m: int) -> np.ndarray:
    return np.array(list(itertools.permutations(range(m))), dtype=np.int8).reshape(-1, m)


def block_permutations(rng: np.random.Generator, present: np.ndarray, rows: int) -> np.ndarray:
    """``(rows, T, M)``: for each resample and task, the group whose block each group receives.

    Per resample and task a uniformly random permutation of the groups present on the task
    (``present`` ``(T, M)``); an absent group receives itself (nothing). Complete tasks with
    at most eight groups index the table of all permutations; otherwise random keys are
    sorted (absent groups keyed last) and mapped back to the present groups' slots.
    """
    pm = np.asarray(present, dtype=bool)
    t, m = pm.shape
    if pm.all() and m <= _TABLE_GROUPS:
        table = _all_permutations(m)
        # np.take on rows of a small int8 table: much faster than fancy indexing
        return np.take(table, rng.integers(0, table.shape[0], size=(rows, t)), axis=0).astype(np.intp)
    keys = rng.random((rows, t, m)) + np.where(pm, 0.0, 2.0)[None]
    order = np.argsort(keys, axis=-1)  # present groups in random order, then absent ones
    # slot i of task t belongs to its i-th present group: the slot of each group
    slot_of = np.argsort(np.argsort(~pm, axis=1, kind="stable"), axis=1)
    src = np.take_along_axis(order, np.broadcast_to(slot_of[None], order.shape), axis=-1)
    return np.where(pm[None], src, np.arange(m)[None, None, :])


def permutation_group_test(
    y: np.ndarray, groups: np.ndarray, clusters: np.ndarray, *, resamples: int, rng: np.random.Generator,
    chunk_elements: int = 200_000,
) -> dict[str, Any]:
    """Do the groups (models) share one rate? A permutation test blocked by cluster (task).

    The runs of one group on one task form a block (its seeds travel together, as the task
    bootstrap keeps them). Under the null that the groups do not differ, the group labels of
    the blocks of one task are exchangeable: each resample permutes them, independently per
    task, among the groups that have runs on that task (every group keeps its tasks). The
    statistic is the between-group dispersion of the rates, ``sum_m N_m (r_m - r)^2`` (``r``
    the pooled rate, ``N_m`` the group's runs). ``p = (1 + #{T_b >= T}) / (B + 1)`` (exact
    for a Monte Carlo test). Unlike the logistic GEE it needs no finite log-odds: a group
    that is never (or always) trapped stays in. Permutations (:func:`block_permutations`)
    are drawn in chunks of about ``chunk_elements`` (task, group) cells; the chunking does
    not change the stream.

    Returns ``statistic, p, resamples, n, clusters, blocks, groups, rates, reason``.
    """
    yv = np.asarray(y, dtype=float)
    g = np.asarray(groups).astype(str)
    c = np.asarray(clusters).astype(str)
    out: dict[str, Any] = {"statistic": None, "p": None, "resamples": int(resamples), "n": int(yv.size), "clusters": 0,
                           "blocks": 0, "groups": sorted(set(g.tolist())), "rates": {}, "reason": None}
    if yv.size == 0:
        out["reason"] = "no runs"
        return out
    names, s, n = _block_sums(yv, g, c)
    present = n > 0
    out["clusters"] = int(s.shape[0])
    out["blocks"] = int(present.sum())
    tot = n.sum(axis=0)
    out["rates"] = {name: float(s[:, k].sum() / tot[k]) for k, name in enumerate(names)}
    if len(names) < 2:
        out["reason"] = "fewer than two models"
        return out
    pooled = float(s.sum() / n.sum())
    if pooled in (0.0, 1.0):
        out["reason"] = "no variation: " + ("no run" if pooled == 0.0 else "every run") + " is trapped"
        return out
    observed = float(_dispersion(s.sum(axis=0), tot, pooled))
    out["statistic"] = observed
    mixing = present.sum(axis=1) >= 2  # tasks where a permutation can change anything
    if not mixing.any():
        out["reason"] = "no task has runs of two models"
        return out
    s_fix, n_fix = s[~mixing].sum(axis=0), n[~mixing].sum(axis=0)
    sm_, nm_, pm_ = s[mixing], n[mixing], present[mixing]
    t, m = sm_.shape
    packed = (sm_ + 1j * nm_).ravel()  # sums and counts gathered together (exact)
    offset = (np.arange(t) * m)[None, :, None]
    rows = max(1, chunk_elements // max(t * m, 1))
    exceed = 0
    tol = 1e-9 * max(observed, 1.0)
    for start in range(0, resamples, rows):
        src = block_permutations(rng, pm_, min(rows, resamples - start))
        tot_p = np.take(packed, src + offset).sum(axis=1)  # (r, m): permuted sums + 1j * counts
        stat = _dispersion(tot_p.real + s_fix, tot_p.imag + n_fix, pooled)
        exceed += int((stat >= observed - tol).sum())
    out["p"] = (1.0 + exceed) / (resamples + 1.0)
    return out
