"""Plain-loop replays of the study's task bootstrap, for tests of ``canarykit.stats``.

Each function does one resample (or one left-out task) at a time with ordinary Python and
numpy calls, so a test can compare the vectorised statistics with a computation that shares
nothing with them but the random stream (``derive_rng(seed, "tasks")``, as documented).
"""

from __future__ import annotations

from collections.abc import Callable
from statistics import NormalDist

import numpy as np

from canarykit import stats

SEED = 20261130


def task_draws(study_tasks: np.ndarray, resamples: int, stat: Callable[[np.ndarray], float], seed: int = SEED) -> np.ndarray:
    """``stat(picked task labels)`` for each resample of the study's task bootstrap."""
    labels = np.unique(np.asarray(study_tasks, dtype=str))
    rng = stats.derive_rng(seed, "tasks")
    return np.array([stat(labels[rng.integers(0, labels.size, size=labels.size)]) for _ in range(resamples)], dtype=float)


def task_jackknife(study_tasks: np.ndarray, stat: Callable[[np.ndarray], float]) -> np.ndarray:
    """``stat(every study task but one)`` for each task, in sorted order."""
    labels = np.unique(np.asarray(study_tasks, dtype=str))
    return np.array([stat(np.delete(labels, i)) for i in range(labels.size)], dtype=float)


def bca(draws: np.ndarray, estimate: float, jackknife: np.ndarray, alpha: float = 0.05) -> tuple[float, float]:
    """The BCa interval by its textbook formula (Efron & Tibshirani 1993, 14.3), one scalar
    at a time: bias from the share of finite draws below the estimate (ties half), the
    acceleration from the jackknife, then numpy's quantiles at the adjusted levels."""
    d = np.asarray(draws, dtype=float)
    d = d[np.isfinite(d)]
    share = (float(np.sum(d < estimate)) + float(np.sum(d <= estimate))) / (2 * d.size)
    norm = NormalDist()
    z0 = norm.inv_cdf(share)
    j = [float(v) for v in jackknife if np.isfinite(v)]
    mean = sum(j) / len(j)
    num = sum((mean - v) ** 3 for v in j)
    den = sum((mean - v) ** 2 for v in j)
    a = num / (6 * den**1.5) if den > 0 else 0.0
    levels = []
    for q in (alpha / 2, 1 - alpha / 2):
        z = norm.inv_cdf(q)
        levels.append(norm.cdf(z0 + (z0 + z) / (1 - a * (z0 + z))))
    lo, hi = np.quantile(d, levels)
    return float(lo), float(hi)


def stack(values: np.ndarray, tasks: np.ndarray, picked: np.ndarray) -> np.ndarray:
    """The values of every picked task (with multiplicity), in pick order."""
    t = np.asarray(tasks, dtype=str)
    return np.concatenate([values[t == p] for p in picked]) if len(picked) else np.zeros(0)


def mean_or_nan(v: np.ndarray) -> float:
    return float(v.mean()) if v.size else float("nan")
