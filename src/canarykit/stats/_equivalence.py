"""Diagnoses by equivalence: the words of ``control_effect`` and the tests behind them.

A control-effect entry compares the first-pick rate of a type's canary (``declared``) with
that of its twin (``control``, arm T), ``delta = canary - control``, paired by (task, seed)
and clustered by task. A difference that is not significant is not evidence of no
difference, so "the defect makes no difference" (``blind``) and "it takes neither"
(``not drawn``) are claims of equivalence, tested against a margin
(``stats.equivalence_margin``, default 0.10):

- **TOST** (two one-sided tests) of ``|delta| < margin``: the paired difference's own
  cluster-robust t (the study's standard error, degrees of freedom and skewness correction:
  with ``stats.bootstrap_unit: task_x_item`` two-way CR2 over tasks and canary items with
  Bell-McCaffrey df, :mod:`._crossed`); ``tost_p`` is the larger of the two one-sided p
  values (:func:`~._crossed.tost_p`);
- **one-sided rate tests** of one side's rate against the margin (:func:`rate_below_p`,
  :func:`rate_above_p`) on the rate's cluster-robust t
  (:func:`~._wald.cluster_robust_rate`). A rate that is exactly 0 has no spread to
  estimate a standard error from; its exact one-sided upper bound over ``C`` clusters is
  ``1 - alpha^(1/C)`` (no cluster of C drew it: (1 - p)^C >= alpha for every p below the
  bound), so its p value against the margin is ``(1 - margin)^C``: below alpha exactly
  when that bound is below the margin (29 tasks at the defaults).

Why not statsmodels' ``ttost_paired``/``ttost_ind``: they assume independent observations
(or one pair per unit); ours are ratio means of clustered runs, so the one-sided tests are
taken on the study's cluster-robust standard errors.

:func:`diagnose` applies the rule of design section 4 (docs/canaries.md, "Reading control_effect"),
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

from ._crossed import t_p_value, tost_p
from ._intervals import finite

#: The diagnosis words, in reading order.
DIAGNOSES: tuple[str, ...] = ("lured", "sensitive", "blind", "not drawn", "inconclusive", "n/a")

#: One line per word (report, table_controls, docs/canaries.md).
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


def rate_below_p(rate: float | None, se: float | None, df: float | None, clusters: int, margin: float,
                 skew: float = 0.0) -> float | None:
    """One-sided p of "the rate is below ``margin``" (H0: rate >= margin), the study's
    cluster-robust t (``se``, ``df`` and ``skew`` from :func:`~._wald.cluster_robust_rate`).
    A rate of exactly 0 over C clusters: ``(1 - margin)^C`` (its exact upper bound,
    ``1 - alpha^(1/C)``, is below the margin exactly when this is below alpha)."""
    if rate is None or clusters < 1:
        return None
    if rate == 0.0:
        return float((1.0 - margin) ** clusters)
    if se is None or df is None:
        return None
    return finite(t_p_value(rate, se, df, margin, "less", skew))


def rate_above_p(rate: float | None, se: float | None, df: float | None, margin: float, skew: float = 0.0) -> float | None:
    """One-sided p of "the rate is above ``margin``" (H0: rate <= margin)."""
    if rate is None or se is None or df is None:
        return None
    return finite(t_p_value(rate, se, df, margin, "greater", skew))


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


def equivalence_tests(entry: Mapping[str, Any], canary: Mapping[str, Any], control: Mapping[str, Any],
                      margin: float) -> dict[str, Any]:
    """``tost_p``, ``canary_below_p``, ``control_below_p`` and ``control_above_p`` of an
    entry (its paired ``delta``, ``se``, ``df``, ``skew``) and the two sides' rates
    (:func:`~._wald.cluster_robust_rate`: ``estimate``, ``se``, ``df``, ``skew``, ``clusters``)."""
    delta, se, df = entry.get("delta"), entry.get("se"), entry.get("df")
    tost = None if delta is None or se is None or df is None else finite(tost_p(delta, se, df, margin, entry.get("skew") or 0.0))

    def below(r: Mapping[str, Any]) -> float | None:
        return rate_below_p(r.get("estimate"), r.get("se"), r.get("df"), int(r.get("clusters") or 0), margin,
                            r.get("skew") or 0.0)

    return {
        "tost_p": tost,
        "canary_below_p": below(canary),
        "control_below_p": below(control),
        "control_above_p": rate_above_p(control.get("estimate"), control.get("se"), control.get("df"), margin,
                                        control.get("skew") or 0.0),
    }
