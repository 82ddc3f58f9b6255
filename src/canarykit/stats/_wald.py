"""Cluster-robust Wald tests of means and their differences: CR1 by task (or by run) for the
``task`` and ``run`` units, and the one-rate summary every unit gives (:func:`cluster_robust_rate`,
the ingredients of one-sided and equivalence tests). The ``task_x_item`` unit's two-way CR2
variances are in :mod:`._crossed`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats as sps

from ._crossed import FEW_CLUSTERS, CrossedResampler, t_p_value
from ._intervals import finite
from ._sample import Sample


def cluster_robust_contrasts(
    sums: np.ndarray, counts: np.ndarray, pairs: Sequence[tuple[int, int]]
) -> dict[str, np.ndarray]:
    """Differences of ratio means ``r_a - r_b`` with their cluster-robust (CR1) standard errors.

    ``sums``/``counts`` are per-cluster sums and counts ``(G, K)`` of ``K`` samples;
    ``r_k = sums[:, k].sum() / counts[:, k].sum()``. The variance is the linearised
    (sandwich) variance of the difference: with influence ``e_gk = (s_gk - r_k n_gk) / N_k``,
    ``Var = G / (G - 1) * sum_g (e_ga - e_gb)^2`` over the ``G`` clusters with data. This is
    the cluster-robust variance of the slope of an OLS regression of the run value on an
    indicator of sample a (statsmodels ``cov_type="cluster"`` without its ``(N-1)/(N-K)``
    factor). p-values are two-sided from Student's t with ``G - 1`` degrees of freedom.
    Returns arrays ``delta, se, p, clusters`` (one entry per pair; NaN where undefined).
    """
    s = np.asarray(sums, dtype=float)
    n = np.asarray(counts, dtype=float)
    tot_s = s.sum(axis=0)
    tot_n = n.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(tot_n > 0, tot_s / np.where(tot_n > 0, tot_n, 1.0), np.nan)
        e = (s - r[None, :] * n) / np.where(tot_n > 0, tot_n, 1.0)[None, :]
    ia = np.array([a for a, _ in pairs], dtype=int)
    ib = np.array([b for _, b in pairs], dtype=int)
    if ia.size == 0:
        empty = np.empty(0)
        return {"delta": empty, "se": empty, "p": empty, "clusters": empty}
    used = (n[:, ia] + n[:, ib]) > 0
    g = used.sum(axis=0).astype(float)
    diff = e[:, ia] - e[:, ib]
    ss = np.where(used, diff**2, 0.0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.where(g > 1, g / (g - 1.0) * ss, np.nan)
        delta = r[ia] - r[ib]
        se = np.sqrt(var)
        t = delta / se
    p = np.where(np.isfinite(t), 2.0 * sps.t.sf(np.abs(t), np.maximum(g - 1.0, 1.0)), np.nan)
    # no variability at all: a zero difference is p = 1, a constant non-zero one p = 0
    flat = np.isfinite(delta) & (var == 0)
    p = np.where(flat, np.where(np.abs(delta) > 0, 0.0, 1.0), p)
    return {"delta": delta, "se": se, "p": p, "clusters": g}


def _cr1_pairs(boot: Any, samples: Sequence[Sample], pairs: Sequence[tuple[int, int]]) -> dict[str, np.ndarray]:
    """:func:`cluster_robust_contrasts` of ``pairs`` of ``samples`` with ``df`` (clusters - 1)."""
    s, n = boot.cluster_sums(samples)
    cr = cluster_robust_contrasts(s, n, pairs)
    cr["df"] = np.where(cr["clusters"] > 1, cr["clusters"] - 1.0, np.nan)
    for key in ("items", "tools", "wordings"):
        cr[key] = np.zeros(len(pairs), dtype=np.int64)
    return cr


def cr1_wald(boot: Any, samples: Sequence[Sample], coef: np.ndarray) -> dict[str, np.ndarray]:
    """Linear combinations (rows of ``coef`` ``(K, B)``) of the means of ``samples`` with their
    CR1 standard errors over ``boot``'s clusters (tasks; runs with the run unit) and
    ``clusters - 1`` degrees of freedom: ``estimate, se, df, clusters``."""
    s, n = boot.cluster_sums(samples)
    c = np.atleast_2d(np.asarray(coef, dtype=float))
    tot_s, tot_n = s.sum(axis=0), n.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(tot_n > 0, tot_s / np.where(tot_n > 0, tot_n, 1.0), np.nan)
        e = (s - np.nan_to_num(r)[None, :] * n) / np.where(tot_n > 0, tot_n, 1.0)[None, :]
    used = c != 0
    g = ((n @ used.T.astype(float)) > 0).sum(axis=0).astype(float)
    est = np.where((used & ~np.isfinite(r)[None, :]).any(axis=1), np.nan, (c * np.nan_to_num(r)[None, :]).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.where(g > 1, g / (g - 1.0) * ((e @ c.T) ** 2).sum(axis=0), np.nan)
    return {"estimate": est, "se": np.sqrt(var), "df": np.where(g > 1, g - 1.0, np.nan), "clusters": g}


def cluster_robust_rate(boot: Any, sample: Sample) -> dict[str, Any]:
    """One rate's ``estimate, se, df, clusters, items, tools, wordings, few_clusters`` with the study's unit:
    the ingredients of a one-sided or an equivalence test (:func:`~._crossed.t_p_value`,
    :func:`~._crossed.tost_p`).

    ``task_x_item``: tasks, tools and wordings crossed, CR2 and Bell-McCaffrey df; ``task``: CR1 by task with
    ``clusters - 1`` df; ``run``: every run its own cluster.
    """
    if sample.n == 0:
        return {"estimate": None, "se": None, "df": None, "clusters": 0, "items": 0, "tools": 0, "wordings": 0,
                "few_clusters": True}
    it = to = wo = 0
    if isinstance(boot, CrossedResampler):
        d = boot.draws(None, [sample])
        est, se, df = d.estimate[0], d.se()[0], d.df()[0]
        it, to, wo = int(d.items()[0]), int(d.tools()[0]), int(d.wordings()[0])
    else:
        w = cr1_wald(boot, [sample], np.ones((1, 1)))
        est, se, df = w["estimate"][0], w["se"][0], w["df"][0]
    return {"estimate": finite(est), "se": finite(se), "df": finite(df), "clusters": sample.clusters,
            "items": it, "tools": to, "wordings": wo, "few_clusters": bool(sample.clusters < FEW_CLUSTERS)}


def rate_p_value(rate: dict[str, Any], null: float, alternative: str = "greater") -> float | None:
    """p of :func:`cluster_robust_rate`'s rate against ``null`` (one-sided by default)."""
    if rate.get("estimate") is None or rate.get("se") is None or rate.get("df") is None:
        return None
    return finite(t_p_value(rate["estimate"], rate["se"], rate["df"], null, alternative))  # type: ignore[arg-type]


def rate_tests(boot: Any, samples: Sequence[Sample], null: float, alternative: str = "greater") -> np.ndarray:
    """:func:`rate_p_value` of many rates at once (one linearization, or one CR1 product)."""
    if not samples:
        return np.zeros(0)
    if isinstance(boot, CrossedResampler):
        return boot.draws(None, samples).p_values(null, alternative)  # type: ignore[arg-type]
    w = cr1_wald(boot, samples, np.eye(len(samples)))
    return t_p_value(w["estimate"], w["se"], w["df"], null, alternative)  # type: ignore[arg-type]
