"""Diagnoses by equivalence: the words of ``control_effect`` and the tests behind them.

A control-effect entry compares the first-pick rate of a type's canary (``declared``) with
that of its twin (``control``, arm T), ``delta = canary - control``, paired by (task, seed)
and clustered by task. A difference that is not significant is not evidence of no
difference, so "the defect makes no difference" (``blind``) and "it takes neither"
(``not drawn``) are claims of equivalence, tested against a margin
(``stats.equivalence_margin``, default 0.10):

- **TOST** (two one-sided tests) of ``|delta| < margin``: the cluster-robust t statistics
  ``(delta + margin) / se`` (upper tail) and ``(delta - margin) / se`` (lower tail) with
  ``clusters - 1`` degrees of freedom; ``tost_p`` is the larger of the two one-sided p
  values (:func:`tost_p`);
- **one-sided rate tests** of one side's rate against the margin (:func:`rate_below_p`,
  :func:`rate_above_p`): the rate's cluster-robust standard error (linearised ratio mean,
  CR1, ``clusters - 1`` degrees of freedom). A rate that is exactly 0 has no spread to
  estimate a standard error from; its exact one-sided upper bound over ``C`` clusters is
  ``1 - alpha^(1/C)`` (no cluster of C drew it: (1 - p)^C >= alpha for every p below the
  bound), so its p value against the margin is ``(1 - margin)^C``: below alpha exactly
  when that bound is below the margin (29 tasks at the defaults).

Why a hand-written TOST: statsmodels' ``ttost_paired``/``ttost_ind`` assume independent
observations (or one pair per unit); ours are ratio means of clustered runs whose standard
error is the cluster-robust one of the rest of the study (:mod:`._bootstrap`), so the two
one-sided t tests are written on that standard error, in a few lines.

:func:`diagnose` applies the rule of design section 4 (README, "Reading control_effect"),
the first row that applies:

- ``n/a``: one side has no runs, or the outcome is not a selection outcome;
- ``inconclusive``: fewer than ``stats.min_clusters`` tasks with a first pick on both sides;
- ``lured``: ``delta > 0``, ``p_holm < alpha`` and ``lo > 0``;
- ``sensitive``: ``delta < 0``, ``p_holm < alpha`` and ``hi < 0``;
- ``blind``: ``tost_p < alpha`` and the twin's rate above the margin (one-sided, alpha);
- ``not drawn``: both rates below the margin (one-sided tests at alpha each);
- ``inconclusive``: anything else.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.stats as sps

#: The diagnosis words, in reading order.
DIAGNOSES: tuple[str, ...] = ("lured", "sensitive", "blind", "not drawn", "inconclusive", "n/a")

#: One line per word (report, table_controls, README).
DIAGNOSIS_READINGS: dict[str, str] = {
    "lured": "the defect draws it: it takes the canary more often than its healthy twin",
    "sensitive": "it sees the defect and avoids it: it takes the twin more often than the canary",
    "blind": "it takes this look-alike, and the defect makes no difference (the paper's typed weakness)",
    "not drawn": "it rarely takes either: nothing to attribute",
    "inconclusive": "too little data to tell (or fewer than min_clusters tasks)",
    "n/a": "no contrast (the type was not offered on both sides, or its defect is invisible at selection)",
}

#: The outcomes a control-effect entry can be computed on.
SELECTION_OUTCOME = "first_pick"
RECOVERY_OUTCOME = "recovery_after_call"


def rate_se(values: np.ndarray, clusters: np.ndarray) -> tuple[float | None, float | None, int]:
    """``(rate, se, C)``: the mean of ``values`` (a ratio of per-cluster sums), its
    cluster-robust standard error (linearised, CR1: ``C / (C - 1) * sum_g e_g^2`` with
    ``e_g = (s_g - rate * n_g) / N``) and the number of clusters ``C``; se None below 2."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return None, None, 0
    labels, codes = np.unique(np.asarray(clusters), return_inverse=True)
    c = int(labels.size)
    s = np.bincount(codes, weights=v, minlength=c)
    n = np.bincount(codes, minlength=c).astype(float)
    total = float(n.sum())
    rate = float(s.sum() / total)
    if c < 2:
        return rate, None, c
    e = (s - rate * n) / total
    return rate, float(np.sqrt(c / (c - 1.0) * np.sum(e**2))), c


def rate_below_p(rate: float | None, se: float | None, clusters: int, margin: float) -> float | None:
    """One-sided p of "the rate is below ``margin``" (H0: rate >= margin). A rate of exactly
    0 over C clusters: ``(1 - margin)^C`` (its exact upper bound, ``1 - alpha^(1/C)``, is
    below the margin exactly when this is below alpha)."""
    if rate is None or clusters < 1:
        return None
    if rate == 0.0:
        return float((1.0 - margin) ** clusters)
    if se is None:
        return None
    if se == 0.0:
        return 0.0 if rate < margin else 1.0
    return float(sps.t.cdf((rate - margin) / se, clusters - 1))


def rate_above_p(rate: float | None, se: float | None, clusters: int, margin: float) -> float | None:
    """One-sided p of "the rate is above ``margin``" (H0: rate <= margin)."""
    if rate is None or se is None or clusters < 2:
        return None
    if se == 0.0:
        return 0.0 if rate > margin else 1.0
    return float(sps.t.sf((rate - margin) / se, clusters - 1))


def tost_p(delta: float | None, se: float | None, clusters: int, margin: float) -> float | None:
    """TOST p of ``|delta| < margin``: the larger of the one-sided p values of
    ``delta > -margin`` and ``delta < margin`` (cluster-robust t, ``clusters - 1`` df)."""
    if delta is None or se is None or clusters < 2:
        return None
    if se == 0.0:
        return 0.0 if abs(delta) < margin else 1.0
    df = clusters - 1
    p_lower = sps.t.sf((delta + margin) / se, df)
    p_upper = sps.t.cdf((delta - margin) / se, df)
    return float(max(p_lower, p_upper))


def _lt(p: Any, alpha: float) -> bool:
    return p is not None and p < alpha


def diagnose(entry: Mapping[str, Any], alpha: float, min_clusters: int) -> str:
    """The diagnosis word of one ``control_effect`` entry (module docstring)."""
    canary, control, delta = entry.get("canary"), entry.get("control"), entry.get("delta")
    if entry.get("outcome", SELECTION_OUTCOME) != SELECTION_OUTCOME or canary is None or control is None or delta is None:
        return "n/a"
    if int(entry.get("clusters") or 0) < min_clusters:
        return "inconclusive"
    p_holm, lo, hi = entry.get("p_holm"), entry.get("lo"), entry.get("hi")
    if delta > 0 and _lt(p_holm, alpha) and lo is not None and lo > 0:
        return "lured"
    if delta < 0 and _lt(p_holm, alpha) and hi is not None and hi < 0:
        return "sensitive"
    if _lt(entry.get("tost_p"), alpha) and _lt(entry.get("control_above_p"), alpha):
        return "blind"
    if _lt(entry.get("canary_below_p"), alpha) and _lt(entry.get("control_below_p"), alpha):
        return "not drawn"
    return "inconclusive"


def equivalence_tests(
    entry: Mapping[str, Any], canary: tuple[np.ndarray, np.ndarray], control: tuple[np.ndarray, np.ndarray], margin: float
) -> dict[str, Any]:
    """``tost_p``, ``canary_below_p``, ``control_below_p`` and ``control_above_p`` of an
    entry (its ``delta``, ``se`` and ``clusters``) and the two sides' ``(values, clusters)``."""
    c_rate, c_se, c_n = rate_se(*canary)
    k_rate, k_se, k_n = rate_se(*control)
    return {
        "tost_p": tost_p(entry.get("delta"), entry.get("se"), int(entry.get("clusters") or 0), margin),
        "canary_below_p": rate_below_p(c_rate, c_se, c_n, margin),
        "control_below_p": rate_below_p(k_rate, k_se, k_n, margin),
        "control_above_p": rate_above_p(k_rate, k_se, k_n, margin),
    }
