"""Separating the weakness from the lure: the control effect and the position effect.

**Control effect** (``control_effect.<model>.<type>``, docs/canaries.md, "Reading control_effect").
For type T the ``declared`` run of a (task, seed) is paired with its ``control`` run of arm
T: the same list with only T's canary swapped for its twin (the canary with the probed
property set to its healthy value). The primary outcome is the **first pick**
(:func:`canarykit.detection.metrics.first_pick_rate`): over runs that called into the families of
the real tools T's stand-ins shadow, the share whose first such call went to T's stand-in.
``delta = canary - control`` (first-pick rates), paired by (task, seed), over the tasks with
a first pick on both sides (``clusters`` of them); ``lo``/``hi`` the study's interval (tasks,
tools and wordings crossed, :mod:`._crossed`), ``p`` the randomisation test of sides
(:mod:`._swap`: exact under "the tell changes nothing"; ``p_t`` is the interval's own t
test), ``p_holm`` Holm across the models under test x types (instruments, i.e. the models
``stats.test_groups`` leaves out, form their own family), ``tost_p`` and the one-sided rate
tests against ``margin`` and each word's intersection-union p with its Holm adjustment
(:mod:`._equivalence`), ``diagnosis`` by :func:`~._equivalence.diagnose` and ``weakness``
(the diagnosis is the type's declared weakness, :data:`~._equivalence.WEAKNESS`). The
whole-run trap rate (trap rate with canaries vs call rate of twins) stays as the secondary
outcome under ``whole_run`` ({canary, control, delta, lo, hi, p}).

A type whose canary and twin read alike (the pool's ``selection_visible: false``) cannot be
contrasted at selection: its entry has ``outcome: "recovery_after_call"`` (over runs that
called T's stand-in, the share that then called the real tool it shadows; canary vs twin,
paired likewise), ``p_holm`` null (it is in no selection family) and diagnosis ``n/a``.

**Position effect** (``position_effect.<model>``): over the ``declared`` and ``mirrored`` runs
(the same lists with each canary and its real tool trading places), the trap rate of runs
whose canaries sit before their real tools against runs whose canaries sit after them
(``canary_before_real``), ``delta = before - after``, paired by (task, seed): each (task,
seed) is offered both orders, one in each condition. ``trapped`` pools the types (runs
offered any canary; the share that called one); ``by_type`` is per type, Holm across types.

**Position balance** (``position_balance.<condition>.<type>``): among the distinct lists of a
condition that offer type T (its canary, or its control in ``control``), the share whose
canaries sit before their real tools (every model is offered the same lists).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from ..types import CANARY_TYPES, CONDITIONS
from ._bootstrap import Sample, paired_deltas
from ._cells import N_TYPES, Cell, Study
from ._equivalence import (
    RECOVERY_OUTCOME,
    SELECTION_OUTCOME,
    WEAKNESS,
    diagnose,
    equivalence_tests,
    word_tests,
)
from ._swap import swap_p_values
from ._tests import holm
from ._wald import cluster_robust_rate

POSITION_CONDITIONS: tuple[str, ...] = ("declared", "mirrored")


def _holm_in_place(entries: list[dict[str, Any]], alpha: float) -> None:
    tested = [e for e in entries if e.get("p") is not None]
    for e, ph in zip(tested, holm([e["p"] for e in tested]), strict=True):
        e["p_holm"] = float(ph)
    for e in entries:
        e.setdefault("p_holm", None)
        e["significant"] = bool(e["p_holm"] is not None and e["p_holm"] < alpha)


def _on_tasks(smp: Sample, tasks: np.ndarray) -> Sample:
    return smp.take(np.isin(smp.tasks, tasks))


def _sides(st: Study, m: str, j: int) -> tuple[str, Sample, Sample, Sample, Sample]:
    """``(outcome, canary, control, canary_whole_run, control_whole_run)`` of model ``m`` and
    type ``j``: the first pick (or the recovery after a call, for a type invisible at
    selection) over the tasks with data on both sides, and the whole-run rates."""
    decl, ctl = st.cell("declared", m), st.cell("control", m)
    arm = ctl.arm == CANARY_TYPES[j]
    invisible = bool(np.any(decl.visible[:, j] == 0.0) or np.any(ctl.visible[arm, j] == 0.0))
    if invisible:
        outcome, a, b = RECOVERY_OUTCOME, decl.recovered_after_sample(j), ctl.recovered_after_sample(j, arm)
    else:
        outcome, a, b = SELECTION_OUTCOME, decl.first_pick_sample(j), ctl.first_pick_sample(j, arm)
    both = np.intersect1d(a.tasks, b.tasks)
    return outcome, _on_tasks(a, both), _on_tasks(b, both), decl.trap_sample(j), ctl.sample(ctl.control[:, j], arm)


def control_effect(st: Study) -> dict[str, Any]:
    """``{model: {type: {outcome, canary, control, delta, lo, hi, p, p_t, p_holm, tost_p, margin,
    p_t_holm, n, clusters, tools, wordings, few_clusters, few_wordings, diagnosis, weakness, se, df,
    n_canary, n_control, cohens_h, canary_lo, canary_hi, control_lo, control_hi,
    canary_below_p, control_below_p, control_above_p, negligible_p, negligible_p_holm,
    blind_p, blind_p_holm, not_drawn_p, not_drawn_p_holm, significant,
    whole_run: {canary, control, delta, lo, hi, p}}}}`` (empty without both the ``declared``
    and the ``control`` condition; module docstring). ``n`` counts the (task, seed) pairs
    with the outcome on both sides, ``clusters`` their tasks; each rate is over its own runs
    (``n_canary``, ``n_control``) with its own interval (``canary_lo``...)."""
    if "declared" not in st.conds or "control" not in st.conds:
        return {}
    cfg = st.config
    alpha, margin = cfg.alpha, cfg.equivalence_margin
    models = sorted(set(st.models["declared"]) & set(st.models["control"]))
    keys = [(m, j, t) for m in models for j, t in enumerate(CANARY_TYPES)]
    sides = [_sides(st, m, j) for m, j, _ in keys]
    deltas = paired_deltas(st.boot, [(("control_effect", m, t), a, b) for (m, _, t), (_, a, b, _, _) in zip(keys, sides, strict=True)],
                           alpha=alpha)
    whole = paired_deltas(st.boot, [(("control_effect", "whole_run", m, t), a, b)
                                    for (m, _, t), (_, _, _, a, b) in zip(keys, sides, strict=True)], alpha=alpha)
    rates = st.intervals([item for (m, _, t), (_, a, b, _, _) in zip(keys, sides, strict=True)
                          for item in ((("control_effect", "canary", m, t), a), (("control_effect", "control", m, t), b))])
    swaps = swap_p_values([(("control_effect", m, t), a, b) for (m, _, t), (outcome, a, b, _, _) in zip(keys, sides, strict=True)
                           if outcome == SELECTION_OUTCOME], cfg.resamples, cfg.seed)
    swap = iter(swaps)
    out: dict[str, Any] = {}
    for i, ((m, _, t), (outcome, a, b, _, _), d, w) in enumerate(zip(keys, sides, deltas, whole, strict=True)):
        (c_lo, c_hi), (k_lo, k_hi) = rates[2 * i], rates[2 * i + 1]
        e: dict[str, Any] = {
            "outcome": outcome, "canary": d["a"], "control": d["b"], "delta": d["delta"], "lo": d["lo"], "hi": d["hi"],
            "p": d["p"], "p_t": d["p"], "se": d["se"], "df": d.get("df"), "few_clusters": d.get("few_clusters"),
            "tools": d.get("tools"), "wordings": d.get("wordings"), "few_wordings": d.get("few_wordings"),
            "n": d["n_pairs"] if d["n_pairs"] is not None else min(a.n, b.n),
            "n_canary": a.n, "n_control": b.n, "clusters": int(np.unique(a.tasks).size), "cohens_h": d["cohens_h"],
            "canary_lo": c_lo, "canary_hi": c_hi, "control_lo": k_lo, "control_hi": k_hi, "margin": margin,
            "tost_p": None, "canary_below_p": None, "control_below_p": None, "control_above_p": None,
            "whole_run": {k: w[src] for k, src in (("canary", "a"), ("control", "b"), ("delta", "delta"), ("lo", "lo"),
                                                    ("hi", "hi"), ("p", "p"))},
        }
        if outcome == SELECTION_OUTCOME:
            p_swap = next(swap)
            if a.n and b.n:
                e["p"] = p_swap
                e.update(equivalence_tests(e, cluster_robust_rate(st.boot, a), cluster_robust_rate(st.boot, b), margin))
        out.setdefault(m, {})[t] = e
    tested = set(st.tested)
    # models under test x types, one family; each instrument (a known-answer check) a family of
    # its own across its types: the check of one instrument does not depend on how many others ran
    families = [[e for m, rows in out.items() if m in tested for e in rows.values()]]
    families += [list(rows.values()) for m, rows in out.items() if m not in tested]
    for entries in families:
        word_tests([e for e in entries if e["outcome"] == SELECTION_OUTCOME], alpha)
    for rows in out.values():
        for t, e in rows.items():
            e.setdefault("p_holm", None)
            e.setdefault("significant", False)
            e["diagnosis"] = diagnose(e, alpha, cfg.min_clusters)
            e["weakness"] = e["diagnosis"] == WEAKNESS[t]
    return out


def _concat(cells: list[Cell]) -> Cell:
    return Cell(**{k: np.concatenate([getattr(c, k) for c in cells]) for k in Cell.__dataclass_fields__})


def _split(cell: Cell, values: np.ndarray) -> tuple[Sample, Sample]:
    """A rate's runs whose canaries sit before their real tools, and those where they sit after."""
    return cell.sample(values, cell.before == 1.0), cell.sample(values, cell.before == 0.0)


def _position_entry(d: dict[str, Any]) -> dict[str, Any]:
    return {"before": d["a"], "after": d["b"], "delta": d["delta"], "lo": d["lo"], "hi": d["hi"], "p": d["p"],
            "se": d["se"], "n_before": d["n_a"], "n_after": d["n_b"], "n_pairs": d["n_pairs"], "clusters": d["clusters"],
            "cohens_h": d["cohens_h"]}


def position_effect(st: Study) -> dict[str, Any]:
    """``{model: {conditions, trapped: {before, after, delta, lo, hi, p, ...}, by_type:
    {type: {... , p_holm, significant}}}}`` over the ``declared`` and ``mirrored`` runs
    (empty when neither ran). With ``declared`` alone the two orders still come from
    different seeds (consecutive seeds alternate the side), unpaired within (task, seed)."""
    conds = [c for c in POSITION_CONDITIONS if c in st.conds]
    if not conds:
        return {}
    models = sorted(set().union(*[set(st.models[c]) for c in conds]))
    specs: list[tuple[tuple[str, ...], Sample, Sample]] = []
    for m in models:
        cell = _concat([st.cell(c, m) for c in conds])
        a, b = _split(cell, cell.trap_any)
        specs.append((("position", m), a, b))
        for j, t in enumerate(CANARY_TYPES):
            a, b = _split(cell, cell.trap[:, j])
            specs.append((("position", m, t), a, b))
    got = paired_deltas(st.boot, specs, alpha=st.config.alpha)
    out: dict[str, Any] = {}
    per = 1 + N_TYPES
    for i, m in enumerate(models):
        block = got[i * per : (i + 1) * per]
        entry: dict[str, Any] = {"conditions": conds, "trapped": _position_entry(block[0]),
                                 "by_type": {t: _position_entry(d) for t, d in zip(CANARY_TYPES, block[1:], strict=True)}}
        _holm_in_place(list(entry["by_type"].values()), st.config.alpha)
        entry["trapped"]["significant"] = bool(entry["trapped"]["p"] is not None and entry["trapped"]["p"] < st.config.alpha)
        out[m] = entry
    return out


def position_balance(df: pl.DataFrame, primary_pool: str) -> dict[str, Any]:
    """``{condition: {type: {lists, before_real}}}``: per condition of the primary pool, the
    distinct (seed, task, arm) lists offering type T (its canary, or its twin in ``control``)
    and the share of them whose canaries sit before their real tools (null when unknown)."""
    ok = df.filter((pl.col("pool") == primary_pool) & ~pl.col("error") & pl.col("canary_before_real").is_not_null())
    if ok.is_empty():
        return {}
    cols = [pl.col(f"present_{t}").first().alias(f"p_{t}") for t in CANARY_TYPES]
    cols += [pl.col(f"control_present_{t}").first().alias(f"c_{t}") for t in CANARY_TYPES]
    lists = ok.group_by("condition", "seed", "task_id", "arm").agg(pl.col("canary_before_real").first().alias("before"), *cols)
    out: dict[str, Any] = {}
    for cond in CONDITIONS:
        g = lists.filter(pl.col("condition") == cond)
        per: dict[str, Any] = {}
        for t in CANARY_TYPES:
            sel = g.filter(pl.col(f"c_{t}") if cond == "control" else pl.col(f"p_{t}"))
            if sel.height:
                share = sel.get_column("before").cast(pl.Float64).mean()
                per[t] = {"lists": sel.height, "before_real": float(share) if isinstance(share, int | float) else None}
        if per:
            out[cond] = per
    return out
