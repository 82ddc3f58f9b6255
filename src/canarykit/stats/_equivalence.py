"""The words of ``control_effect``, each a claim with a stated error rate, and the tests behind them.

A control-effect entry compares the first-pick rate of a type's canary (``declared``) with
that of its twin (``control``, arm T), ``delta = canary - control``, paired by (task, seed).
Every word but ``inconclusive`` and ``n/a`` is a claim, and each claim has its own test
(docs/canaries.md, "Reading control_effect"):

=============== ============================================== ============================================
word            claims                                          test (p of the claim's null)
=============== ============================================== ============================================
``lured``       delta > 0: the tell draws the agent, on         ``p``: randomisation test of sides (:mod:`._swap`),
                average over the bank's wordings                exact under "the tell changes nothing", and
                                                                ``p_t``: the interval's t test (tasks, tools and
                                                                wordings crossed), both two-sided
``sensitive``   delta < 0: the tell repels it                   the same tests
``negligible``  delta != 0 and ``|delta| < margin``             ``negligible_p = max(p, p_t, tost_p)`` (intersection-union)
``blind``       ``|delta| < margin`` and the twin's rate        ``blind_p = max(tost_p, control_above_p)``
                above the margin: it takes this look-alike,     (intersection-union)
                and the defect makes no difference
``not drawn``   both rates below the margin                     ``not_drawn_p = max(canary_below_p, control_below_p)``
=============== ============================================== ============================================

Each word's p-values are Holm-adjusted across its family (the models under test x types;
each instrument a family of its own across its types, :mod:`._effects`), so every word's
claims are wrong somewhere in the family with probability at most alpha (``lured`` and
``sensitive`` exactly when the tell changes nothing, by randomisation, and as far as the
interval is calibrated when it changes something that averages out over the bank; the
others as far as the cluster-robust t is calibrated, docs/statistics.md). An
intersection-union test (Berger 1982) needs no correction within an entry: the claim holds
only if every part holds, so it is rejected at alpha when each part is. ``lured`` needs both
tests: the randomisation test is exact but tests "no effect for any task or wording"; the t
test (whose interval is shown) speaks for the bank's average.

``lured`` does **not** require the delta to exceed the margin. The null of ``lured`` is
"canary and twin read alike to the agent", which the randomisation test checks exactly with
any number of tasks, tools and wordings; a test against ``+margin`` has a composite null
whose size rests on the t approximation, the least reliable part with three wordings a
type. A difference shown to lie inside the margin is ``negligible``, never ``lured``; one
that is significant but not shown to be small is ``lured``: its sign is established, its
size is in its interval.

:func:`diagnose` applies the rule, the first row that applies:

- ``n/a``: one side has no runs, or the outcome is not a selection outcome;
- ``inconclusive``: fewer than ``stats.min_clusters`` tasks with a first pick on both sides;
- ``negligible``: ``p_holm < alpha``, ``p_t_holm < alpha`` and ``negligible_p_holm < alpha``;
- ``lured``: ``delta > 0``, ``p_holm < alpha``, ``p_t_holm < alpha`` (so ``lo > 0``);
- ``sensitive``: ``delta < 0``, the same tests (so ``hi < 0``);
- ``blind``: ``blind_p_holm < alpha``;
- ``not drawn``: ``not_drawn_p_holm < alpha``;
- ``inconclusive``: anything else.

One-sided **rate tests** of one side's rate against the margin (:func:`rate_below_p`,
:func:`rate_above_p`) use the rate's cluster-robust t (:func:`~._wald.cluster_robust_rate`).
A rate that is exactly 0 has no spread to estimate a standard error from; its exact
one-sided upper bound over ``C`` clusters is ``1 - alpha^(1/C)``, so its p value against the
margin is ``(1 - margin)^C``: below alpha exactly when that bound is below the margin (29
tasks at the defaults). Why not statsmodels' ``ttost_paired``/``ttost_ind``: they assume
independent observations; ours are ratio means of clustered runs, so the one-sided tests are
taken on the study's cluster-robust standard errors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..types import CANARY_TYPES
from ._crossed import t_p_value, tost_p
from ._intervals import finite
from ._tests import holm

#: The diagnosis words, in reading order.
DIAGNOSES: tuple[str, ...] = ("lured", "sensitive", "negligible", "blind", "not drawn", "inconclusive", "n/a")

#: One line per word (report, table_controls, docs/canaries.md).
DIAGNOSIS_READINGS: dict[str, str] = {
    "lured": "the defect draws it: it takes the canary more often than its healthy twin",
    "sensitive": "it sees the defect and avoids it: it takes the twin more often than the canary",
    "negligible": "the defect makes a difference, shown to be smaller than the margin",
    "blind": "it takes this look-alike, and the defect makes no difference (the paper's typed weakness)",
    "not drawn": "it rarely takes either: nothing to attribute",
    "inconclusive": "too little data to tell (or fewer than min_clusters tasks)",
    "n/a": "no contrast (the type was not offered on both sides, or its defect is invisible at selection)",
}

#: Per type, the word that reads as the type's weakness, fixed before any data: the mirage's
#: weakness is being drawn by a claimed capability (``lured``); every other type's is not
#: seeing a defect the agent should avoid (``blind``: it takes the look-alike whether or not
#: the defect is there).
WEAKNESS: dict[str, str] = {t: "lured" if t == "capability_mirage" else "blind" for t in CANARY_TYPES}

#: The words whose p-values are Holm-adjusted across a family, and the entry keys of the
#: parts each word's intersection-union p takes the larger of (``p``: the test of delta = 0).
WORD_TESTS: dict[str, tuple[str, ...]] = {
    "negligible": ("p", "p_t", "tost_p"),
    "blind": ("tost_p", "control_above_p"),
    "not_drawn": ("canary_below_p", "control_below_p"),
}

#: The outcomes a control-effect entry can be computed on.
SELECTION_OUTCOME = "first_pick"
RECOVERY_OUTCOME = "recovery_after_call"


def rate_below_p(rate: float | None, se: float | None, df: float | None, clusters: int, margin: float) -> float | None:
    """One-sided p of "the rate is below ``margin``" (H0: rate >= margin), the study's
    cluster-robust t (``se`` and ``df`` from :func:`~._wald.cluster_robust_rate`).
    A rate of exactly 0 over C clusters: ``(1 - margin)^C`` (its exact upper bound,
    ``1 - alpha^(1/C)``, is below the margin exactly when this is below alpha)."""
    if rate is None or clusters < 1:
        return None
    if rate == 0.0:
        return float((1.0 - margin) ** clusters)
    if se is None or df is None:
        return None
    return finite(t_p_value(rate, se, df, margin, "less"))


def rate_above_p(rate: float | None, se: float | None, df: float | None, margin: float) -> float | None:
    """One-sided p of "the rate is above ``margin``" (H0: rate <= margin)."""
    if rate is None or se is None or df is None:
        return None
    return finite(t_p_value(rate, se, df, margin, "greater"))


def _lt(p: Any, alpha: float) -> bool:
    return p is not None and p < alpha


def diagnose(entry: Mapping[str, Any], alpha: float, min_clusters: int) -> str:
    """The diagnosis word of one ``control_effect`` entry (module docstring)."""
    canary, control, delta = entry.get("canary"), entry.get("control"), entry.get("delta")
    if entry.get("outcome", SELECTION_OUTCOME) != SELECTION_OUTCOME or canary is None or control is None or delta is None:
        return "n/a"
    if int(entry.get("clusters") or 0) < min_clusters:
        return "inconclusive"
    lo, hi = entry.get("lo"), entry.get("hi")
    up = delta > 0 and lo is not None and lo > 0
    down = delta < 0 and hi is not None and hi < 0
    if _lt(entry.get("p_holm"), alpha) and _lt(entry.get("p_t_holm", entry.get("p_holm")), alpha) and (up or down):
        if _lt(entry.get("negligible_p_holm"), alpha):
            return "negligible"
        return "lured" if up else "sensitive"
    if _lt(entry.get("blind_p_holm"), alpha):
        return "blind"
    if _lt(entry.get("not_drawn_p_holm"), alpha):
        return "not drawn"
    return "inconclusive"


def equivalence_tests(entry: Mapping[str, Any], canary: Mapping[str, Any], control: Mapping[str, Any],
                      margin: float) -> dict[str, Any]:
    """``tost_p``, ``canary_below_p``, ``control_below_p`` and ``control_above_p`` of an
    entry (its paired ``delta``, ``se``, ``df``) and the two sides' rates
    (:func:`~._wald.cluster_robust_rate`: ``estimate``, ``se``, ``df``, ``clusters``)."""
    delta, se, df = entry.get("delta"), entry.get("se"), entry.get("df")
    tost = None if delta is None or se is None or df is None else finite(tost_p(delta, se, df, margin))

    def below(r: Mapping[str, Any]) -> float | None:
        return rate_below_p(r.get("estimate"), r.get("se"), r.get("df"), int(r.get("clusters") or 0), margin)

    return {
        "tost_p": tost,
        "canary_below_p": below(canary),
        "control_below_p": below(control),
        "control_above_p": rate_above_p(control.get("estimate"), control.get("se"), control.get("df"), margin),
    }


def word_tests(entries: Sequence[dict[str, Any]], alpha: float) -> None:
    """Holm across one family (``entries``, in place): ``p_holm`` and ``p_t_holm`` (the two
    tests of delta = 0 behind ``lured`` / ``sensitive``) and, per word of :data:`WORD_TESTS`,
    its intersection-union ``<word>_p`` (the larger of its parts; None when a part is missing)
    and ``<word>_p_holm``; ``significant`` is both Holm-adjusted tests below alpha."""
    for key in ("p", "p_t"):
        tested = [e for e in entries if e.get(key) is not None]
        for e, ph in zip(tested, holm([e[key] for e in tested]), strict=True):
            e[f"{key}_holm"] = float(ph)
    for word, parts in WORD_TESTS.items():
        for e in entries:
            ps = [e.get(k) for k in parts]
            e[f"{word}_p"] = None if any(p is None for p in ps) else float(max(float(p) for p in ps if p is not None))
        live = [e for e in entries if e[f"{word}_p"] is not None]
        for e, ph in zip(live, holm([e[f"{word}_p"] for e in live]), strict=True):
            e[f"{word}_p_holm"] = float(ph)
    for e in entries:
        for key in ("p_holm", "p_t_holm", *(f"{word}_p_holm" for word in WORD_TESTS)):
            e.setdefault(key, None)
        e["significant"] = _lt(e["p_holm"], alpha) and _lt(e["p_t_holm"], alpha)
