"""The dose-response study (issue 21): how each weakness grows as look-alikes multiply.

Input: one row per dose run (:class:`~canarykit.store.schemas.DoseRunsTable`): ``model``,
``task_id``, ``seed``, ``kind`` (a canary type or ``distractor``), ``dose`` (k, the number of
look-alikes of the task's first needed real tool), ``first_pick`` (the run's first call into
that tool's family went to a look-alike; null when the run never called into the family),
``trapped`` (any look-alike call in the run), ``success`` (null: not judged) and ``truncated``.

Per (model, kind), :func:`dose_response` gives

- per level k, the **first-pick trap rate** (the curve; ``rate``, ``lo``, ``hi``, ``n``) and,
  under ``outcomes``, the whole-run trap rate, tsr (judged runs that were not truncated) and
  the truncation rate, each with a task-clustered interval: the CR1 (cluster-robust by task)
  t interval of a mean with G - 1 degrees of freedom, the same estimator as
  :mod:`._wald`; a constant sample (k = 0 offers no look-alike: its first-pick rate is 0) has
  the zero-width interval;
- the **slope**: a logistic regression of the first pick on ``log2(k + 1)`` over every level,
  with a cluster-robust (by task) sandwich covariance and a t interval with G - 1 degrees of
  freedom;
- per canary type T, ``vs_distractor``: T's slope minus the distractor slope of the same
  model on the same (task, seed, k) cells (a type whose bank cannot fill every level, a
  granularity trap on a tool with few natural cases, is compared over the cells it has: the
  logistic curve is only a summary, and its slope depends on the levels it spans), paired
  by (task, seed) through one sandwich over both fits (the scores of a task's
  T runs and distractor runs share its cluster, so the covariance of the two slopes enters
  the variance of the difference), Holm-adjusted across the types of one model.

**Why not statsmodels' GLM directly.** An agent that never takes a look-alike of some kind
(a ``planted`` agent on the types it sees through) has an all-zero curve, for which the
logistic maximum-likelihood estimate does not exist (statsmodels warns of perfect separation
and returns an arbitrary slope with an enormous standard error). So the fit adds, at each
level, half a success and half a failure, scaled by the level's share of the runs (a weak
data-augmentation prior, in the spirit of Haldane's correction; negligible beside a level's
tens of runs): an all-zero curve then has a slope of exactly 0, whatever its levels' sizes,
while a curve that grows keeps its slope.
The fit is a plain Newton iteration with the statsmodels cluster sandwich
(``GLM(Binomial).fit(cov_type="cluster")``, its small-sample factor
``G / (G - 1) * (N - 1) / (N - p)``); without the pseudo-observations it reproduces statsmodels
to 1e-6 (tested), so the only departure is the prior.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
import polars as pl
from scipy import stats as sps

from ..errors import InputError
from ..types import CANARY_TYPES, DISTRACTOR, DOSE_KINDS, DOSE_LEVELS
from ._tests import holm

__all__ = ["DISTRACTOR", "DOSE_KINDS", "DOSE_LEVELS", "dose_curve", "dose_markdown", "dose_response", "dose_runs", "dose_table",
           "dose_metrics", "first_tools"]
#: Pseudo-observations per level: this many successes and as many failures (module docstring).
PRIOR: Final = 0.5


def _holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm-adjusted p-values (:func:`._tests.holm`) over the defined ones; None stays None."""
    idx = [i for i, p in enumerate(pvalues) if p is not None and np.isfinite(p)]
    adjusted = holm([float(pvalues[i]) for i in idx])  # type: ignore[arg-type]
    out: list[float | None] = [None] * len(pvalues)
    for i, p in zip(idx, adjusted, strict=True):
        out[i] = float(p)
    return out


def clustered_mean(values: np.ndarray, clusters: np.ndarray, alpha: float = 0.05) -> dict[str, Any]:
    """Mean of ``values`` with its CR1 t interval by cluster (G - 1 df): ``rate, lo, hi, n``."""
    v = np.asarray(values, dtype=float)
    n = int(v.size)
    if n == 0:
        return {"rate": None, "lo": None, "hi": None, "n": 0}
    m = float(v.mean())
    _, codes = np.unique(clusters, return_inverse=True)
    g = int(codes.max()) + 1
    if g < 2:
        return {"rate": m, "lo": None, "hi": None, "n": n}
    e = np.bincount(codes, weights=v - m, minlength=g) / n
    se = float(np.sqrt(g / (g - 1) * np.sum(e**2)))
    half = float(sps.t.ppf(1 - alpha / 2, g - 1)) * se
    return {"rate": m, "lo": max(0.0, m - half), "hi": min(1.0, m + half), "n": n}


@dataclass(frozen=True)
class LogitFit:
    """A fitted logistic regression: coefficients, the bread (inverse information) and the
    per-cluster scores (rows: clusters of ``clusters``), for sandwiches over several fits."""

    coef: np.ndarray
    bread: np.ndarray
    scores: np.ndarray
    n: int


def logit_fit(x: np.ndarray, y: np.ndarray, codes: np.ndarray, n_clusters: int, *, prior: float = PRIOR) -> LogitFit:
    """Logistic regression of ``y`` on ``[1, x]`` by Newton's method, with ``prior``
    successes and failures added at each distinct ``x`` (0: plain maximum likelihood).
    ``codes``: each row's cluster (0..n_clusters-1) for the scores."""
    xs = np.asarray(x, dtype=float)
    ys = np.asarray(y, dtype=float)
    levels, sizes = np.unique(xs, return_counts=True)
    # a level's pseudo-observations in proportion to its runs: an all-zero curve whose levels
    # have unequal runs (a granularity curve thins out) is then fitted flat, slope exactly 0
    pseudo = prior * sizes / sizes.mean()
    aug_x = np.concatenate([xs, levels, levels]) if prior > 0 else xs
    aug_y = np.concatenate([ys, np.ones_like(levels), np.zeros_like(levels)]) if prior > 0 else ys
    aug_w = np.concatenate([np.ones_like(xs), pseudo, pseudo]) if prior > 0 else np.ones_like(xs)
    design = np.column_stack([np.ones_like(aug_x), aug_x])
    beta = np.zeros(2)
    for _ in range(100):
        mu = 1.0 / (1.0 + np.exp(-(design @ beta)))
        info = (design * (aug_w * mu * (1 - mu))[:, None]).T @ design
        step = np.linalg.solve(info, design.T @ (aug_w * (aug_y - mu)))
        beta = beta + step
        if np.max(np.abs(step)) < 1e-10:
            break
    mu = 1.0 / (1.0 + np.exp(-(design @ beta)))
    info = (design * (aug_w * mu * (1 - mu))[:, None]).T @ design
    own = np.column_stack([np.ones_like(xs), xs]) * (ys - mu[: xs.size])[:, None]
    scores = np.zeros((n_clusters, 2))
    np.add.at(scores, codes, own)
    return LogitFit(beta, np.linalg.inv(info), scores, int(xs.size))


def _factor(n_clusters: int, n: int, p: int = 2) -> float:
    """statsmodels' small-sample factor of the cluster sandwich."""
    return n_clusters / (n_clusters - 1) * (n - 1) / max(n - p, 1)


def _t_interval(est: float, var: float, df: int, alpha: float) -> tuple[float | None, float | None, float | None]:
    if df < 1 or not np.isfinite(var):
        return None, None, None
    se = float(np.sqrt(max(var, 0.0)))
    if se < 1e-12:  # a curve flat at zero (the prior's exact 0): no spread to report
        se, est = 0.0, (0.0 if abs(est) < 1e-12 else est)
    q = float(sps.t.ppf(1 - alpha / 2, df))
    p = 1.0 if se == 0.0 and est == 0.0 else (0.0 if se == 0.0 else float(2 * sps.t.sf(abs(est) / se, df)))
    return est - q * se, est + q * se, p


def _rows(df: pl.DataFrame, model: str, kind: str) -> pl.DataFrame:
    return df.filter((pl.col("model") == model) & (pl.col("kind") == kind))


def _level_block(rows: pl.DataFrame, levels: Sequence[int], alpha: float) -> dict[str, Any]:
    """Per level: the first-pick rate (the curve) and the other outcomes, task-clustered."""
    block: dict[str, Any] = {"levels": list(levels), "rate": [], "lo": [], "hi": [], "n": []}
    outcomes: dict[str, dict[str, list[Any]]] = {o: {"rate": [], "lo": [], "hi": [], "n": []}
                                                 for o in ("trapped", "tsr", "truncated")}
    for k in levels:
        at = rows.filter(pl.col("dose") == k)
        fp = at.filter(pl.col("first_pick").is_not_null())
        cells = {
            "first_pick": clustered_mean(fp["first_pick"].cast(pl.Float64).to_numpy(), fp["task_id"].to_numpy(), alpha),
            "trapped": clustered_mean(at["trapped"].cast(pl.Float64).to_numpy(), at["task_id"].to_numpy(), alpha),
            "truncated": clustered_mean(at["truncated"].cast(pl.Float64).to_numpy(), at["task_id"].to_numpy(), alpha),
        }
        judged = at.filter(pl.col("success").is_not_null() & ~pl.col("truncated"))
        cells["tsr"] = clustered_mean(judged["success"].cast(pl.Float64).to_numpy(), judged["task_id"].to_numpy(), alpha)
        for key in ("rate", "lo", "hi", "n"):
            block[key].append(cells["first_pick"][key])
            for o in outcomes:
                outcomes[o][key].append(cells[o][key])
    block["outcomes"] = outcomes
    return block


def _fit(rows: pl.DataFrame, clusters: Mapping[str, int]) -> LogitFit | None:
    fp = rows.filter(pl.col("first_pick").is_not_null())
    if fp.height == 0:
        return None
    codes = np.array([clusters[t] for t in fp["task_id"].to_list()], dtype=int)
    x = np.log2(fp["dose"].cast(pl.Float64).to_numpy() + 1.0)
    return logit_fit(x, fp["first_pick"].cast(pl.Float64).to_numpy(), codes, len(clusters))


def _slope(fit: LogitFit | None, n_clusters: int, alpha: float) -> dict[str, Any]:
    if fit is None:
        return {"slope": None, "slope_lo": None, "slope_hi": None}
    cov = _factor(n_clusters, fit.n) * fit.bread @ (fit.scores.T @ fit.scores) @ fit.bread
    lo, hi, _ = _t_interval(float(fit.coef[1]), float(cov[1, 1]), n_clusters - 1, alpha)
    slope = float(fit.coef[1]) if abs(fit.coef[1]) >= 1e-12 else 0.0
    return {"slope": slope, "slope_lo": lo, "slope_hi": hi}


def _delta(typed: LogitFit, base: LogitFit, n_clusters: int, alpha: float) -> dict[str, Any]:
    """T's slope minus the distractor slope: one sandwich over both fits (paired by task)."""
    a = typed.bread[1] @ typed.scores.T  # per-cluster influence of T's slope
    b = base.bread[1] @ base.scores.T
    var = _factor(n_clusters, typed.n + base.n, 4) * float(np.sum((a - b) ** 2))
    est = float(typed.coef[1] - base.coef[1])
    lo, hi, p = _t_interval(est, var, n_clusters - 1, alpha)
    return {"delta_slope": est, "lo": lo, "hi": hi, "p": p}


def dose_response(runs: pl.DataFrame, *, levels: Sequence[int] | None = None, alpha: float = 0.05) -> dict[str, Any]:
    """``dose_response.<model>.<kind>`` and ``.<type>.vs_distractor`` (module docstring).

    ``runs``: the dose runs (error runs already dropped or flagged by ``error``)."""
    df = runs.filter(~pl.col("error")) if "error" in runs.columns else runs
    lv = sorted({int(k) for k in (levels if levels is not None else df["dose"].unique().to_list())})
    out: dict[str, Any] = {}
    for model in sorted(df["model"].unique().to_list()):
        mine = df.filter(pl.col("model") == model)
        clusters = {t: i for i, t in enumerate(sorted(mine["task_id"].unique().to_list()))}
        g = len(clusters)
        fits: dict[str, LogitFit | None] = {}
        block: dict[str, Any] = {}
        for kind in DOSE_KINDS:
            rows = _rows(mine, model, kind)
            if rows.height == 0:
                continue
            fits[kind] = _fit(rows, clusters)
            block[kind] = {**_level_block(rows, lv, alpha), **_slope(fits[kind], g, alpha)}
        base_rows = _rows(mine, model, DISTRACTOR)
        typed = [t for t in CANARY_TYPES if fits.get(t) is not None and fits.get(DISTRACTOR) is not None]
        deltas: dict[str, dict[str, Any]] = {}
        for t in typed:
            # the distractor curve on the type's own (task, seed, k) cells: a type the bank
            # cannot fill at some levels (granularity) is compared over the levels it has
            cells = _rows(mine, model, t).select("task_id", "seed", "dose").unique()
            base = _fit(base_rows.join(cells, on=["task_id", "seed", "dose"]), clusters)
            if base is not None:
                deltas[t] = _delta(fits[t], base, g, alpha)  # type: ignore[arg-type]
        typed = [t for t in typed if t in deltas]
        for t, p in zip(typed, _holm([deltas[t].pop("p") for t in typed]), strict=True):
            block[t]["vs_distractor"] = {**deltas[t], "p_holm": p}
        out[model] = block
    return out


def dose_table(result: Mapping[str, Any]) -> pl.DataFrame:
    """``table_dose``: one row per (model, kind, level), with the kind's slope and, for a
    type, its slope minus the distractor slope."""
    rows: list[dict[str, Any]] = []
    for model, kinds in result.items():
        for kind, b in kinds.items():
            vs = b.get("vs_distractor") or {}
            for i, k in enumerate(b["levels"]):
                rows.append({
                    "model": model, "kind": kind, "k": int(k), "n": int(b["n"][i]),
                    "first_pick": b["rate"][i], "lo": b["lo"][i], "hi": b["hi"][i],
                    "whole_run": b["outcomes"]["trapped"]["rate"][i], "tsr": b["outcomes"]["tsr"]["rate"][i],
                    "truncated": b["outcomes"]["truncated"]["rate"][i],
                    "slope": b["slope"], "slope_lo": b["slope_lo"], "slope_hi": b["slope_hi"],
                    "delta_slope": vs.get("delta_slope"), "delta_lo": vs.get("lo"), "delta_hi": vs.get("hi"),
                    "p_holm": vs.get("p_holm"),
                })
    schema = {"model": pl.String, "kind": pl.String, "k": pl.Int64, "n": pl.Int64, **{
        c: pl.Float64 for c in ("first_pick", "lo", "hi", "whole_run", "tsr", "truncated", "slope", "slope_lo",
                                "slope_hi", "delta_slope", "delta_lo", "delta_hi", "p_holm")}}
    return pl.DataFrame(rows, schema=schema)


def _cell(x: Any, digits: int = 2) -> str:
    if x is None:
        return "-"
    text = f"{x:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text  # no "-0.00"


def dose_markdown(table: pl.DataFrame) -> str:
    """``table_dose.md``: per (model, kind) the first-pick rate at each level and the slope."""
    if table.height == 0:
        return "No dose runs.\n"
    levels = sorted(table["k"].unique().to_list())
    head = ["model", "kind", *[f"k={k}" for k in levels], "slope [95% CI]", "minus distractor [95% CI]", "p (Holm)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (model, kind), g in table.group_by(["model", "kind"], maintain_order=True):
        by_k = {int(r["k"]): r for r in g.iter_rows(named=True)}
        first = g.row(0, named=True)
        rates = [_cell(by_k[k]["first_pick"]) if k in by_k else "-" for k in levels]
        slope = f"{_cell(first['slope'])} [{_cell(first['slope_lo'])}, {_cell(first['slope_hi'])}]"
        delta = "" if first["delta_slope"] is None else \
            f"{_cell(first['delta_slope'])} [{_cell(first['delta_lo'])}, {_cell(first['delta_hi'])}]"
        p = "" if first["p_holm"] is None else _cell(first["p_holm"], 3)
        lines.append("| " + " | ".join([str(model), str(kind), *rates, slope, delta, p]) + " |")
    caption = ("First-pick trap rate at each dose k (look-alikes of the task's first needed tool); slope: logistic "
               "slope on log2(k + 1), task-clustered; minus distractor: the type's slope minus the untyped curve's, "
               "paired by (task, seed), Holm across types within a model.")
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
    target's family (the target itself, or a look-alike shadowing it; an unknown name is
    not in it) went to a look-alike, null when it made none."""
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
                | ((pl.col("cls") == "canary") & (pl.col("shadows") == pl.col("target"))))
        .sort("run_id", "call_idx").group_by("run_id").agg(first_pick=(pl.col("cls").first() == "canary"))
    )
    out = d.join(fam, on="run_id", how="left").with_columns(
        first_pick=pl.when(pl.col("error")).then(None).otherwise(pl.col("first_pick")),
        truncated=pl.col("truncated") if "truncated" in d.columns else pl.lit(False),
    ).select("model", "task_id", "seed", "kind", "dose", "first_pick", "trapped", "success", "truncated", "error")
    return validate(out.sort("model", "task_id", "seed", "kind", "dose"), DoseRunsTable, source)


def dose_curve(result: Mapping[str, Any]) -> pl.DataFrame:
    """The figure's data (``dose_curve.csv``, DVC's plot of the curves): one row per (model,
    kind, level) with the first-pick rate and its interval."""
    rows = [{"model": m, "kind": kind, "k": int(k), "rate": b["rate"][i], "lo": b["lo"][i], "hi": b["hi"][i],
             "n": int(b["n"][i])}
            for m, kinds in result.items() for kind, b in kinds.items() for i, k in enumerate(b["levels"])]
    return pl.DataFrame(rows, schema={"model": pl.String, "kind": pl.String, "k": pl.Int64, "rate": pl.Float64,
                                      "lo": pl.Float64, "hi": pl.Float64, "n": pl.Int64})


def dose_metrics(result: Mapping[str, Any]) -> dict[str, Any]:
    """The DVC metrics of the curves (``dose_metrics.json``): per model and kind the slope
    with its interval and the first-pick rate at each level (``k0``, ``k1``, ...), per type
    its slope minus the distractor slope; rounded to 6 digits so ``dvc metrics diff`` reads."""
    def r(x: Any) -> float | None:
        return None if x is None or not np.isfinite(x) else round(float(x), 6)

    out: dict[str, Any] = {}
    for model, kinds in result.items():
        for kind, b in kinds.items():
            entry = {"slope": r(b["slope"]), "slope_lo": r(b["slope_lo"]), "slope_hi": r(b["slope_hi"]),
                     **{f"k{k}": r(v) for k, v in zip(b["levels"], b["rate"], strict=True)}}
            if "vs_distractor" in b:
                entry["minus_distractor"] = r(b["vs_distractor"]["delta_slope"])
                entry["p_holm"] = r(b["vs_distractor"]["p_holm"])
            out.setdefault(model, {})[kind] = entry
    return out
