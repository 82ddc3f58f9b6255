"""Paired differences between conditions and pools: the tsr delta of each condition against
the baseline, and the subtlety ablation (subtle minus standard pool).

**Is the ablation's csr "unchanged"?** Only an equivalence test can say so: each model's (and
each group's) subtle - standard difference gets the two one-sided tests of ``|delta| <
stats.equivalence_margin`` (TOST, the same cluster-robust t as its interval) besides the
two-sided test of ``delta = 0``, and a ``verdict``: ``changed`` (the difference is
significant and not shown to lie within the margin), ``changed, within margin`` (both),
``unchanged`` (within the margin and not significant) or ``inconclusive`` (neither). The
group means (an average over the group's models) get intervals, paired like the models'.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..types import CANARY_TYPES, POOLS
from ._bootstrap import Linearized, Sample, cr1_wald, finite, paired_deltas
from ._cells import N_TYPES, Study
from ._crossed import FEW_CLUSTERS, t_p_value, tost_p
from ._tests import cohens_d


def verdict(p: float | None, tost: float | None, alpha: float) -> str:
    """``changed``, ``changed, within margin``, ``unchanged`` or ``inconclusive`` (module docstring)."""
    changed = p is not None and p < alpha
    within = tost is not None and tost < alpha
    if changed:
        return "changed, within margin" if within else "changed"
    return "unchanged" if within else "inconclusive"


def equivalence(row: dict[str, Any], margin: float, alpha: float, tested: bool = True) -> dict[str, Any]:
    """``tost_p``, ``margin`` and ``verdict`` of a :func:`paired_deltas` row (an instrument,
    ``tested`` false, gets neither test: ``verdict`` ``not tested``)."""
    if not tested:
        return {"tost_p": None, "margin": margin, "verdict": "not tested"}
    tp = None
    if row.get("delta") is not None and row.get("se") is not None and row.get("df") is not None:
        tp = finite(tost_p(row["delta"], row["se"], row["df"], margin))
    return {"tost_p": tp, "margin": margin, "verdict": verdict(row.get("p"), tp, alpha)}


def linear_estimates(st: Study, label: Sequence[str], samples: list[Sample], coef: np.ndarray) -> list[dict[str, Any]]:
    """Linear combinations (rows of ``coef``) of the samples' means with the study's interval,
    ``se``, ``df`` and two-sided ``p`` of ``= 0`` (group means and their differences)."""
    alpha = st.config.alpha
    draws = st.boot.draws(label, samples).combine(coef)
    lo, hi = draws.intervals(alpha)
    if isinstance(draws, Linearized):
        se, df, p = draws.se(), draws.df(), draws.p_values()
        clusters = draws.clusters()
    else:
        w = cr1_wald(st.boot, samples, coef)
        se, df = w["se"], w["df"]
        p, clusters = t_p_value(draws.estimate, se, df), w["clusters"]
    return [{"estimate": finite(draws.estimate[k]), "lo": finite(lo[k]), "hi": finite(hi[k]), "se": finite(se[k]),
             "df": finite(df[k]), "p": finite(p[k]), "clusters": int(clusters[k]),
             "few_clusters": bool(clusters[k] < FEW_CLUSTERS)} for k in range(coef.shape[0])]


def tsr_delta(st: Study) -> dict[str, Any]:
    """Per condition other than baseline: baseline tsr minus the condition's (``control``:
    do working stand-ins cost success? ``mirrored``: does order?)."""
    out: dict[str, Any] = {}
    for c in st.conds:
        if c == "baseline":
            continue
        out[c] = {}
        models = sorted(set(st.models.get("baseline", [])) | set(st.models[c]))
        sides = [(st.cell("baseline", m).tsr_sample(), st.cell(c, m).tsr_sample()) for m in models]
        got = paired_deltas(st.boot, [(("tsr_delta", c, m), base, cond) for m, (base, cond) in zip(models, sides, strict=True)],
                            alpha=st.config.alpha)
        for m, (base, cond), d in zip(models, sides, got, strict=True):
            out[c][m] = {
                "delta": d["delta"], "lo": d["lo"], "hi": d["hi"], "cohens_d": cohens_d(base.values, cond.values),
                "cohens_h": d["cohens_h"], "n_base": base.n, "n_cond": cond.n, "n_pairs": d["n_pairs"],
                "clusters": d["clusters"], "few_clusters": d["few_clusters"],
            }
    return out


def ablation(st: Study) -> tuple[dict[str, Any], dict[str, Any]]:
    cfg = st.config
    other = next(p for p in POOLS if p != cfg.primary_pool)
    cond = cfg.ablation_condition
    out: dict[str, Any] = {"condition": cond, "primary_pool": cfg.primary_pool, "other_pool": other, "note": None,
                           "models": {}, "groups": {}}
    by_type: dict[str, Any] = {}
    pools_present = {p for (p, c, _m) in st.cells if c == cond}
    missing = [p for p in POOLS if p not in pools_present]
    if missing:
        out["note"] = f"no {' or '.join(missing)} pool runs in the {cond} condition: ablation not available"
        return out, by_type
    models = sorted({m for (p, c, m) in st.cells if c == cond})
    cells = {m: (st.cell(cond, m, "standard"), st.cell(cond, m, "subtle")) for m in models}
    csr = paired_deltas(st.boot, [(("ablation", m), sub.csr_sample(), std.csr_sample()) for m, (std, sub) in cells.items()],
                        alpha=cfg.alpha, proportion=False)
    typed = paired_deltas(st.boot, [(("ablation_by_type", m, t), sub.trap_sample(j), std.trap_sample(j))
                                    for m, (std, sub) in cells.items() for j, t in enumerate(CANARY_TYPES)], alpha=cfg.alpha)
    margin, alpha = cfg.equivalence_margin, cfg.alpha
    out["margin"] = margin
    for i, (m, d) in enumerate(zip(models, csr, strict=True)):
        tested = cfg.tested(st.groups.get(m, "?"))  # instruments: described, never tested
        out["models"][m] = {"standard": d["b"], "subtle": d["a"], "delta": d["delta"], "lo": d["lo"], "hi": d["hi"],
                            "p": d["p"] if tested else None, "n_standard": d["n_b"], "n_subtle": d["n_a"],
                            "n_pairs": d["n_pairs"], "clusters": d["clusters"], "few_clusters": d["few_clusters"],
                            **equivalence(d, margin, alpha, tested)}
        by_type[m] = {}
        for j, t in enumerate(CANARY_TYPES):
            e = typed[i * N_TYPES + j]
            by_type[m][t] = {"standard": e["b"], "subtle": e["a"], "delta": e["delta"], "lo": e["lo"], "hi": e["hi"],
                             "p": e["p"] if tested else None, "cohens_h": e["cohens_h"], "n_standard": e["n_b"],
                             "n_subtle": e["n_a"], "n_pairs": e["n_pairs"], "clusters": e["clusters"],
                             "few_clusters": e["few_clusters"], **equivalence(e, margin, alpha, tested)}
    out["groups"] = _group_means(st, cells)
    return out, by_type


def _group_means(st: Study, cells: dict[str, tuple[Any, Any]]) -> dict[str, Any]:
    """Per model group: the mean over its models of the standard and subtle csr, and their
    difference, each with its interval (paired: the same clusters), and the TOST."""
    cfg = st.config
    by_group: dict[str, list[str]] = {}
    for m, (std, sub) in cells.items():
        if std.csr_sample().n and sub.csr_sample().n:
            by_group.setdefault(st.groups.get(m, "?"), []).append(m)
    out: dict[str, Any] = {}
    for g, members in sorted(by_group.items()):
        samples = [cells[m][0].csr_sample() for m in members] + [cells[m][1].csr_sample() for m in members]
        k = len(members)
        w = np.zeros((3, 2 * k))
        w[0, :k] = 1.0 / k  # standard
        w[1, k:] = 1.0 / k  # subtle
        w[2] = w[1] - w[0]  # subtle - standard
        std, sub, d = linear_estimates(st, ("ablation_group", g), samples, w)
        tested = cfg.tested(g)
        row = {"delta": d["estimate"], "se": d["se"], "df": d["df"], "p": d["p"] if tested else None}
        out[g] = {"models": members, "standard": std["estimate"], "standard_lo": std["lo"], "standard_hi": std["hi"],
                  "subtle": sub["estimate"], "subtle_lo": sub["lo"], "subtle_hi": sub["hi"], "delta": d["estimate"],
                  "lo": d["lo"], "hi": d["hi"], "p": row["p"], "clusters": d["clusters"], "few_clusters": d["few_clusters"],
                  **equivalence(row, cfg.equivalence_margin, cfg.alpha, tested)}
    return out
