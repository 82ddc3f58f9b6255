"""The dose-response study (issue 21, 27): how each weakness grows as look-alikes multiply.

Input: one row per dose run (:class:`~canarykit.store.schemas.DoseRunsTable`): ``model``,
``task_id``, ``seed``, ``kind`` (a canary type T, ``twin:T`` or ``distractor``), ``dose`` (k,
the number of look-alikes of the task's first needed real tool), ``first_pick`` (the run's
first call into that tool's family went to a look-alike; null when the run never called into
the family), ``trapped`` (any look-alike call in the run), ``success`` (null: not judged) and
``truncated``.

**Unit of analysis**: the run (one per task, seed, kind and k), clustered by task: every
interval is cluster-robust by task (CR2, Bell-McCaffrey degrees of freedom:
:mod:`._dose_fit`). Wordings are drawn at random per (task, seed) from the bank, so given the
bank the tasks' runs are independent draws, and a claim holds for the bank's entries (a
uniform draw of them), not for wordings outside it. Tasks nest in their first needed tool;
tools are not a second random factor here (docs/dose.md, "Limits").

Per (model, kind), :func:`dose_response` gives

- per level k, the **first-pick trap rate** (the curve; ``rate``, ``lo``, ``hi``, ``n``) and,
  under ``outcomes``, the whole-run trap rate, tsr (judged runs that were not truncated) and
  the truncation rate; a rate that is constant over its tasks (every run 0, or every run 1)
  gets the exact interval for clusters, ``[0, 1 - (alpha/2)^(1/C)]``, except the look-alike
  rates at k = 0, which are 0 by construction (no look-alike is offered);
- ``level``: the first-pick rate at k = 1 (one look-alike), with its interval;
- ``growth``: how the curve grows beyond k = 1, the slope of a logistic regression of the
  first pick on ``log2 k`` over the levels k >= 1 (a doubling of the look-alikes adds
  ``estimate`` to the log-odds), fitted by Firth's penalised likelihood (no shrinkage toward
  0, a finite estimate for a curve that never takes a look-alike), with ``events`` (first
  picks of a look-alike) and ``n`` (runs) it rests on. k = 0 (no look-alike, rate 0 by
  construction) is not part of it: a curve flat from k = 1 has growth 0;
- per canary type T, ``vs_twin`` (T minus ``twin:T``: the **property x density
  interaction** in ``growth``, the property's effect at one look-alike in ``level``) and
  ``vs_distractor`` (T minus the untyped curve: the peers' comparison), each over the
  (task, seed, k) cells both kinds have, paired by task (one sandwich over both fits),
  Holm-adjusted across the types of one model (``p_holm``; one family per contrast and
  estimand).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np
import polars as pl

from ..errors import InputError
from ..types import CANARY_TYPES, DISTRACTOR, DOSE_KINDS, DOSE_LEVELS, TWIN_PREFIX
from ._dose_fit import (
    Estimate,
    Fit,
    combine,
    describe,
    exact_bound,
    fit_curve,
    mean_estimate,
    rate_difference,
)
from ._tests import holm

__all__ = ["DISTRACTOR", "DOSE_KINDS", "DOSE_LEVELS", "dose_curve", "dose_markdown", "dose_response", "dose_runs", "dose_table",
           "dose_metrics", "first_tools"]

#: What every dose interval is computed over (stats.json states it beside each estimate).
UNIT: Final = "run (task x seed x kind x k), clustered by task (CR2, Bell-McCaffrey df)"
#: The two estimands of a curve, and the contrasts of a type's curve.
ESTIMANDS: Final = ("growth", "level")
CONTRASTS: Final = ("vs_twin", "vs_distractor")


def _holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm-adjusted p-values (:func:`._tests.holm`) over the defined ones; None stays None."""
    idx = [i for i, p in enumerate(pvalues) if p is not None and np.isfinite(p)]
    adjusted = holm([float(pvalues[i]) for i in idx])  # type: ignore[arg-type]
    out: list[float | None] = [None] * len(pvalues)
    for i, p in zip(idx, adjusted, strict=True):
        out[i] = float(p)
    return out


def clustered_mean(values: np.ndarray, clusters: np.ndarray, alpha: float = 0.05, *, structural: bool = False) -> dict[str, Any]:
    """Mean of ``values`` with its CR2 t interval by cluster (Bell-McCaffrey df): ``rate, lo,
    hi, n``. A constant sample gets the exact interval for clusters, or, ``structural`` (a
    look-alike rate at k = 0), the zero-width one."""
    v = np.asarray(values, dtype=float)
    n = int(v.size)
    if n == 0:
        return {"rate": None, "lo": None, "hi": None, "n": 0}
    est = mean_estimate(v, clusters)
    c = int(np.unique(clusters).size)
    if c < 2:
        return {"rate": est.estimate, "lo": None, "hi": None, "n": n}
    if np.all(v == v[0]):
        u = 0.0 if structural else exact_bound(c, alpha)
        return {"rate": est.estimate, "lo": max(0.0, est.estimate - u), "hi": min(1.0, est.estimate + u), "n": n}
    lo, hi = est.interval(alpha)
    return {"rate": est.estimate, "lo": max(0.0, lo), "hi": min(1.0, hi), "n": n}


def _level_block(rows: pl.DataFrame, levels: Sequence[int], alpha: float) -> dict[str, Any]:
    """Per level: the first-pick rate (the curve) and the other outcomes, task-clustered."""
    block: dict[str, Any] = {"levels": list(levels), "rate": [], "lo": [], "hi": [], "n": []}
    outcomes: dict[str, dict[str, list[Any]]] = {o: {"rate": [], "lo": [], "hi": [], "n": []}
                                                 for o in ("trapped", "tsr", "truncated")}
    by_level = rows.partition_by("dose", as_dict=True)
    for k in levels:
        at = by_level.get((k,), rows.clear())
        tasks = at["task_id"].to_numpy()
        fp, trapped, truncated = (at[c].cast(pl.Float64).to_numpy() for c in ("first_pick", "trapped", "truncated"))
        success = at["success"].cast(pl.Float64).to_numpy()
        has_fp, judged = ~np.isnan(fp), ~np.isnan(success) & (truncated == 0)
        cells = {
            "first_pick": clustered_mean(fp[has_fp], tasks[has_fp], alpha, structural=k == 0),
            "trapped": clustered_mean(trapped, tasks, alpha, structural=k == 0),
            "truncated": clustered_mean(truncated, tasks, alpha),
            "tsr": clustered_mean(success[judged], tasks[judged], alpha),
        }
        for key in ("rate", "lo", "hi", "n"):
            block[key].append(cells["first_pick"][key])
            for o in outcomes:
                outcomes[o][key].append(cells[o][key])
    block["outcomes"] = outcomes
    return block


def _picks(rows: pl.DataFrame, clusters: Mapping[str, int], *, level: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(log2 k, first pick, task code) of the runs at k >= 1 (or at ``level``) with a first pick."""
    fp = rows.filter(pl.col("first_pick").is_not_null() & (pl.col("dose") >= 1))
    if level is not None:
        fp = fp.filter(pl.col("dose") == level)
    codes = np.array([clusters[t] for t in fp["task_id"].to_list()], dtype=int)
    return np.log2(fp["dose"].cast(pl.Float64).to_numpy()), fp["first_pick"].cast(pl.Float64).to_numpy(), codes


def _growth_fit(rows: pl.DataFrame, clusters: Mapping[str, int]) -> Fit | None:
    """Firth's fit of the curve over k >= 1; None without two levels to span."""
    x, y, codes = _picks(rows, clusters)
    if np.unique(x).size < 2:
        return None
    return fit_curve(x, y, codes)


def _estimate_block(e: Estimate | None, alpha: float, **extra: Any) -> dict[str, Any]:
    if e is None:
        return {"estimate": None, "lo": None, "hi": None, "se": None, "df": None, "p": None, **extra}
    return {**describe(e, alpha), **extra}


def _growth(fit: Fit | None, n_clusters: int, alpha: float, levels: Sequence[int]) -> dict[str, Any]:
    est = combine([fit], [[0.0, 1.0]], n_clusters) if fit is not None else None
    return _estimate_block(est, alpha, events=fit.events if fit else 0, n=fit.n if fit else 0,
                           levels=[k for k in levels if k >= 1], unit=UNIT)


def _level_delta(a: pl.DataFrame, b: pl.DataFrame, clusters: Mapping[str, int], alpha: float) -> dict[str, Any]:
    """Rate at k = 1 of ``a`` minus that of ``b``, paired by task (:func:`._dose_fit.rate_difference`)."""
    (_, ya, ca), (_, yb, cb) = _picks(a, clusters, level=1), _picks(b, clusters, level=1)
    if ya.size == 0 or yb.size == 0:
        return _estimate_block(None, alpha, unit=UNIT)
    return {**rate_difference(ya, ca, yb, cb, len(clusters), alpha), "unit": UNIT}


def _contrast(typed: pl.DataFrame, base: pl.DataFrame, clusters: Mapping[str, int], alpha: float) -> dict[str, Any] | None:
    """``typed`` minus ``base`` over the (task, seed, k) cells both have: growth and level."""
    cells = typed.select("task_id", "seed", "dose").unique().join(base.select("task_id", "seed", "dose").unique(),
                                                                  on=["task_id", "seed", "dose"])
    a, b = typed.join(cells, on=["task_id", "seed", "dose"]), base.join(cells, on=["task_id", "seed", "dose"])
    fa, fb = _growth_fit(a, clusters), _growth_fit(b, clusters)
    if fa is None or fb is None:
        growth = _estimate_block(None, alpha, unit=UNIT)
    else:
        growth = _estimate_block(combine([fa, fb], [[0.0, 1.0], [0.0, -1.0]], len(clusters)), alpha, unit=UNIT)
    level = _level_delta(a, b, clusters, alpha)
    if growth["estimate"] is None and level["estimate"] is None:
        return None
    return {"growth": growth, "level": level}


def dose_response(runs: pl.DataFrame, *, levels: Sequence[int] | None = None, alpha: float = 0.05) -> dict[str, Any]:
    """``dose_response.<model>.<kind>`` with ``.<type>.vs_twin`` and ``.vs_distractor``
    (module docstring).

    ``runs``: the dose runs (error runs already dropped or flagged by ``error``)."""
    df = runs.filter(~pl.col("error")) if "error" in runs.columns else runs
    lv = sorted({int(k) for k in (levels if levels is not None else df["dose"].unique().to_list())})
    out: dict[str, Any] = {}
    for model in sorted(df["model"].unique().to_list()):
        mine = df.filter(pl.col("model") == model)
        clusters = {t: i for i, t in enumerate(sorted(mine["task_id"].unique().to_list()))}
        g = len(clusters)
        block: dict[str, Any] = {}
        by_kind = {str(key[0]): part for key, part in mine.partition_by("kind", as_dict=True).items()}
        for kind in DOSE_KINDS:
            rows = by_kind.get(kind)
            if rows is None or rows.height == 0:
                continue
            curve = _level_block(rows, lv, alpha)
            at1 = curve["levels"].index(1) if 1 in curve["levels"] else None
            level = {key: (curve[key][at1] if at1 is not None else None) for key in ("rate", "lo", "hi", "n")}
            block[kind] = {**curve, "level": {**level, "unit": UNIT}, "growth": _growth(_growth_fit(rows, clusters), g, alpha, lv)}
        found: dict[str, dict[str, Any]] = {}
        for t in CANARY_TYPES:
            if t not in block:
                continue
            for name, base in (("vs_twin", TWIN_PREFIX + t), ("vs_distractor", DISTRACTOR)):
                if base in block and (c := _contrast(by_kind[t], by_kind[base], clusters, alpha)) is not None:
                    found.setdefault(name, {})[t] = c
        for name, per in found.items():  # Holm across the types of this model, per contrast and estimand
            for estimand in ESTIMANDS:
                types = list(per)
                for t, p in zip(types, _holm([per[t][estimand]["p"] for t in types]), strict=True):
                    per[t][estimand]["p_holm"] = p
            for t, c in per.items():
                block[t][name] = c
        out[model] = block
    return out


def _contrast_cells(b: Mapping[str, Any]) -> dict[str, Any]:
    """A kind's contrast columns: ``<contrast>_<estimand>`` with ``_lo``, ``_hi``, ``_p_holm``."""
    out: dict[str, Any] = {}
    for name in CONTRASTS:
        for estimand in ESTIMANDS:
            e = (b.get(name) or {}).get(estimand) or {}
            col = f"{name}_{estimand}"
            out.update({col: e.get("estimate"), f"{col}_lo": e.get("lo"), f"{col}_hi": e.get("hi"),
                        f"{col}_p_holm": e.get("p_holm")})
    return out


def dose_table(result: Mapping[str, Any]) -> pl.DataFrame:
    """``table_dose``: one row per (model, kind, level), with the kind's growth and, for a
    type, its contrasts with its twins and with the distractors (growth and level)."""
    rows: list[dict[str, Any]] = []
    for model, kinds in result.items():
        for kind, b in kinds.items():
            growth, contrasts = b["growth"], _contrast_cells(b)
            for i, k in enumerate(b["levels"]):
                rows.append({
                    "model": model, "kind": kind, "k": int(k), "n": int(b["n"][i]),
                    "first_pick": b["rate"][i], "lo": b["lo"][i], "hi": b["hi"][i],
                    "whole_run": b["outcomes"]["trapped"]["rate"][i], "tsr": b["outcomes"]["tsr"]["rate"][i],
                    "truncated": b["outcomes"]["truncated"]["rate"][i],
                    "growth": growth["estimate"], "growth_lo": growth["lo"], "growth_hi": growth["hi"], **contrasts,
                })
    floats = ["first_pick", "lo", "hi", "whole_run", "tsr", "truncated", "growth", "growth_lo", "growth_hi",
              *_contrast_cells({})]
    schema = {"model": pl.String, "kind": pl.String, "k": pl.Int64, "n": pl.Int64, **{c: pl.Float64 for c in floats}}
    return pl.DataFrame(rows, schema=schema)


def _cell(x: Any, digits: int = 2) -> str:
    if x is None:
        return "-"
    text = f"{x:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text  # no "-0.00"


def _with_ci(row: Mapping[str, Any], col: str) -> str:
    if row[col] is None:
        return ""
    p = row.get(f"{col}_p_holm")
    return f"{_cell(row[col])} [{_cell(row[f'{col}_lo'])}, {_cell(row[f'{col}_hi'])}]" + ("" if p is None else f" p={_cell(p, 3)}")


def dose_markdown(table: pl.DataFrame) -> str:
    """``table_dose.md``: per (model, kind) the first-pick rate at each level, the growth and,
    for a type, the contrasts with its twins (growth: the interaction; level at k = 1) and
    with the distractors (growth)."""
    if table.height == 0:
        return "No dose runs.\n"
    levels = sorted(table["k"].unique().to_list())
    head = ["model", "kind", *[f"k={k}" for k in levels], "growth [95% CI]", "minus twins: growth (Holm p)",
            "minus twins: level at k=1 (Holm p)", "minus distractors: growth (Holm p)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (model, kind), g in table.group_by(["model", "kind"], maintain_order=True):
        by_k = {int(r["k"]): r for r in g.iter_rows(named=True)}
        first = g.row(0, named=True)
        rates = [_cell(by_k[k]["first_pick"]) if k in by_k else "-" for k in levels]
        cells = [_with_ci(first, c) for c in ("growth", "vs_twin_growth", "vs_twin_level", "vs_distractor_growth")]
        lines.append("| " + " | ".join([str(model), str(kind), *rates, *cells]) + " |")
    caption = ("First-pick trap rate at each dose k (look-alikes of the task's first needed tool: canaries of a type, "
               "twin:<type> its twins, or neutral distractors). Growth: Firth logistic slope on log2 k over k >= 1 "
               "(log-odds per doubling), task-clustered (CR2). Minus twins: the type minus its twin curve, paired by "
               "(task, seed); in growth it is the property x density interaction. Holm across types within a model.")
    return caption + "\n\n" + "\n".join(lines) + "\n"


def first_tools(tasks_path: str | Path) -> dict[str, str]:
    """Task id -> the task's first needed real tool (``correct_tools[0]``), read from the task
    suite's JSON as is (the suite was validated when the study ran; the statistics do not
    depend on the tools or the agents)."""
    from ..store.jsonio import read_json_input

    doc = read_json_input(tasks_path, "task suite")
    items = doc.get("tasks") if isinstance(doc, dict) else doc
    if not isinstance(items, list):
        raise InputError(str(tasks_path), "tasks", "expected a list of tasks")
    return {str(t["id"]): str(t["correct_tools"][0]) for t in items
            if isinstance(t, dict) and isinstance(t.get("correct_tools"), list) and t["correct_tools"]}


def dose_runs(runs: pl.DataFrame, calls: pl.DataFrame, targets: Mapping[str, str], source: str = "runs") -> pl.DataFrame:
    """The dose runs of a study's per-run table, as :class:`~canarykit.store.schemas.DoseRunsTable`.

    ``calls``: the per-call table (``run_id``, ``call_idx``, ``name``, ``cls``, ``shadows``);
    ``targets``: task id -> the task's first needed real tool. ``kind`` and ``dose`` come from
    the run's arm (``<kind>@<k>``); ``first_pick`` is whether the run's first call into the
    target's family (the target itself, or a look-alike shadowing it: a canary, a twin or a
    distractor; an unknown name is not in it) went to a look-alike, null when it made none;
    ``trapped`` whether the run called a look-alike at all."""
    from ..store.schemas import DoseRunsTable, validate

    d = runs.filter(pl.col("condition") == "dose")
    parts = pl.col("arm").str.split_exact("@", 1)
    d = d.with_columns(kind=parts.struct.field("field_0"), dose=parts.struct.field("field_1").cast(pl.Int64, strict=False))
    bad = d.filter(pl.col("dose").is_null() | ~pl.col("kind").is_in(list(DOSE_KINDS)))
    if bad.height:
        raise InputError(source, "arm", f"a dose run's arm must read <kind>@<k>, got {bad['arm'][0]!r}")
    tgt = pl.DataFrame({"task_id": list(targets), "target": list(targets.values())}, schema={"task_id": pl.String, "target": pl.String})
    fam = (
        calls.join(d.select("run_id", "task_id"), on="run_id").join(tgt, on="task_id", how="left")
        .filter(((pl.col("cls") == "real") & (pl.col("name") == pl.col("target")))
                | (pl.col("cls").is_in(["canary", "control"]) & (pl.col("shadows") == pl.col("target"))))
        .sort("run_id", "call_idx").group_by("run_id")
        .agg(first_pick=(pl.col("cls").first() != "real"), look_alike=(pl.col("cls") != "real").any())
    )
    out = d.join(fam, on="run_id", how="left").with_columns(
        first_pick=pl.when(pl.col("error")).then(None).otherwise(pl.col("first_pick")),
        trapped=pl.col("look_alike").fill_null(False),
        truncated=pl.col("truncated") if "truncated" in d.columns else pl.lit(False),
    ).select("model", "task_id", "seed", "kind", "dose", "first_pick", "trapped", "success", "truncated", "error")
    return validate(out.sort("model", "task_id", "seed", "kind", "dose"), DoseRunsTable, source)


def _family(kind: str) -> tuple[str, str]:
    """(the figure's panel, the look-alike's kind): a type and its twins share a panel."""
    if kind == DISTRACTOR:
        return DISTRACTOR, "distractor"
    return (kind.removeprefix(TWIN_PREFIX), "twin") if kind.startswith(TWIN_PREFIX) else (kind, "canary")


def dose_curve(result: Mapping[str, Any]) -> pl.DataFrame:
    """The figure's data (``dose_curve.csv``, DVC's plot of the curves): one row per (model,
    kind, level) with the first-pick rate and its interval, and the kind's ``family`` (its
    canary type, or distractor) and ``look_alike`` (canary, twin or distractor)."""
    rows = [{"model": m, "kind": kind, "family": _family(kind)[0], "look_alike": _family(kind)[1], "k": int(k),
             "rate": b["rate"][i], "lo": b["lo"][i], "hi": b["hi"][i], "n": int(b["n"][i])}
            for m, kinds in result.items() for kind, b in kinds.items() for i, k in enumerate(b["levels"])]
    return pl.DataFrame(rows, schema={"model": pl.String, "kind": pl.String, "family": pl.String, "look_alike": pl.String,
                                      "k": pl.Int64, "rate": pl.Float64, "lo": pl.Float64, "hi": pl.Float64, "n": pl.Int64})


def dose_metrics(result: Mapping[str, Any]) -> dict[str, Any]:
    """The DVC metrics of the curves (``dose_metrics.json``): per model and kind the growth
    with its interval, the level (rate at k = 1) and the first-pick rate at each level
    (``k0``, ``k1``, ...); per type its contrasts (``vs_twin_growth``, ``vs_twin_level``,
    ``vs_distractor_growth``, ``vs_distractor_level``, each with ``_p_holm``); rounded to 6
    digits so ``dvc metrics diff`` reads."""
    def r(x: Any) -> float | None:
        return None if x is None or not np.isfinite(x) else round(float(x), 6)

    out: dict[str, Any] = {}
    for model, kinds in result.items():
        for kind, b in kinds.items():
            g = b["growth"]
            entry = {"growth": r(g["estimate"]), "growth_lo": r(g["lo"]), "growth_hi": r(g["hi"]), "level": r(b["level"]["rate"]),
                     **{f"k{k}": r(v) for k, v in zip(b["levels"], b["rate"], strict=True)}}
            cells = _contrast_cells(b)
            for name in (c for c in CONTRASTS if c in b):
                for col in (f"{name}_{e}" for e in ESTIMANDS):
                    entry[col], entry[f"{col}_p_holm"] = r(cells[col]), r(cells[f"{col}_p_holm"])
            out.setdefault(model, {})[kind] = entry
    return out
