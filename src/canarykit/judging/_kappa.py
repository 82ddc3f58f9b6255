"""A task-clustered interval for Cohen's kappa of two judges.

Two judges grade the same runs, and runs of one task are correlated (the same prompt, the
same evidence), so the interval resamples tasks, not runs: kappa is linearized (its
influence function over the 2 x 2 table of verdicts) and the mean of the pseudo-values
``kappa + psi_i`` gets the study's default interval (:mod:`canarykit.stats._crossed`: CR2
cluster-robust t by task with Bell-McCaffrey degrees of freedom), clipped to [-1, 1]. With ``p_o`` the agreement, ``p_e`` the chance agreement
and ``p_A``, ``p_B`` the judges' success rates::

    psi_i = (1[a_i = b_i] - p_o) / (1 - p_e)
            + (p_o - 1) / (1 - p_e)^2 * ((2 p_B - 1)(a_i - p_A) + (2 p_A - 1)(b_i - p_B))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def kappa_interval(
    a: Sequence[bool | None], b: Sequence[bool | None], tasks: Sequence[Any], alpha: float = 0.05
) -> dict[str, Any]:
    """``kappa_lo``, ``kappa_hi`` (at ``1 - alpha``), ``clusters`` (tasks) and ``few_clusters``
    over the runs where both verdicts are defined. No interval (None) without two tasks, or
    when kappa has no sampling variability to show (every run agrees, or one label only)."""
    # imported here: canarykit.stats loads scipy.stats (seconds), which a judging job, importing
    # canarykit.judging for its judges, never needs (only the validation report does)
    from ..stats import FEW_CLUSTERS, CrossedResampler, Sample, TaskBootstrap

    pairs = [(bool(x), bool(y), str(t)) for x, y, t in zip(a, b, tasks, strict=True) if x is not None and y is not None]
    out: dict[str, Any] = {"kappa_lo": None, "kappa_hi": None, "clusters": len({t for *_, t in pairs}), "few_clusters": True}
    out["few_clusters"] = out["clusters"] < FEW_CLUSTERS
    if out["clusters"] < 2:
        return out
    xa = np.array([p[0] for p in pairs], dtype=float)
    xb = np.array([p[1] for p in pairs], dtype=float)
    task = np.array([p[2] for p in pairs], dtype=str)
    pa, pb = xa.mean(), xb.mean()
    po = float((xa == xb).mean())
    pe = pa * pb + (1.0 - pa) * (1.0 - pb)
    if pe >= 1.0 - 1e-12:
        return out
    kappa = (po - pe) / (1.0 - pe)
    psi = (((xa == xb).astype(float) - po) / (1.0 - pe)
           + (po - 1.0) / (1.0 - pe) ** 2 * ((2 * pb - 1) * (xa - pa) + (2 * pa - 1) * (xb - pb)))
    est = CrossedResampler(TaskBootstrap(np.unique(task), 10, 0)).draws(None, [Sample(kappa + psi, task)])
    if not est.se()[0] > 0:
        return out
    lo, hi = est.intervals(alpha)
    out["kappa_lo"], out["kappa_hi"] = float(max(lo[0], -1.0)), float(min(hi[0], 1.0))
    return out
