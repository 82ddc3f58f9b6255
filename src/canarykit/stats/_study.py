"""The study's computation: every statistic of the per-run table as a JSON-ready dict.

:func:`compute_all` reads a validated runs table and returns the layout documented in the
package docstring (:mod:`canarykit.stats`). The runs of each (pool, condition, model) are cut
once into numpy arrays (:class:`Cell`); every rate is a mean over the runs of a cell where
it is defined (:class:`~._bootstrap.Sample`) and every interval comes from one resampler for
the whole study (:func:`~._bootstrap.make_resampler`).
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from threadpoolctl import threadpool_limits

from .. import metrics, schemas
from ..errors import InputError
from ..jsonio import finite_or_none
from ..types import CANARY_TYPES, CONDITIONS, DIFFICULTIES, POOLS
from ._bootstrap import (
    Draws,
    Resampler,
    Sample,
    derive_rng,
    make_resampler,
    paired_deltas,
    rate_draws,
    rate_intervals,
)
from ._bootstrap import cluster_robust_contrasts as _cr_contrasts
from ._config import StatsConfig
from ._effects import control_effect, position_balance, position_effect
from ._tests import (
    chi2_independence,
    cohens_d,
    cohens_h,
    fisher_exact_2x2,
    friedman,
    gee_association,
    gee_group_test,
    holm,
    kruskal_wallis,
    permutation_group_test,
    spearman,
)

POOLED = "__pooled__"
DECLARED_FULL = "declared+full"
CANARY_CONDITIONS: tuple[str, ...] = ("declared", "full")
_NT = len(CANARY_TYPES)


# --------------------------------------------------------------------------- loading


def validate_runs(df: pl.DataFrame, source: str | Path = "runs table") -> pl.DataFrame:
    """Validate against :class:`schemas.RunsTable` and the per-type flag columns.

    ``truncated`` (a run cut off by ``agent.max_turns`` without a final answer) is optional:
    a table without it (from other tools) is read as having no truncated run.
    """
    out = schemas.validate(df, schemas.RunsTable, source)
    schemas.check_runs_type_columns(out, str(source))
    out = _with_optional_columns(out)
    if "truncated" not in out.columns:
        return out.with_columns(pl.lit(False).alias("truncated"))
    try:
        trunc = out.get_column("truncated").cast(pl.Boolean)
    except pl.exceptions.PolarsError as exc:
        raise InputError(str(source), "truncated", f"expected booleans: {exc}") from exc
    if trunc.null_count():
        raise InputError(str(source), "truncated", f"{trunc.null_count()} null values (expected true/false for every run)")
    return out.with_columns(trunc.alias("truncated"))


def _with_optional_columns(df: pl.DataFrame) -> pl.DataFrame:
    """A table from another tool may lack the control and order columns: no control was
    offered or called (``control_*`` false, ``control_calls`` 0) and no order is known
    (``canary_before_real`` null)."""
    add = []
    if "control_calls" not in df.columns:
        add.append(pl.lit(0, dtype=pl.Int64).alias("control_calls"))
    for t in CANARY_TYPES:
        for prefix in schemas.CONTROL_TYPE_PREFIXES:
            if prefix + t not in df.columns:
                add.append(pl.lit(False).alias(prefix + t))
    if "canary_before_real" not in df.columns:
        add.append(pl.lit(None, dtype=pl.Boolean).alias("canary_before_real"))
    return df.with_columns(add) if add else df


def load_runs(path: str | Path) -> pl.DataFrame:
    """Read and validate ``results/runs.parquet`` (InputError naming the file on failure)."""
    p = Path(path)
    if not p.is_file():
        raise InputError(str(p), "-", "runs table not found")
    try:
        df = pl.read_parquet(p)
    except Exception as exc:  # polars raises several error types for a broken file
        raise InputError(str(p), "-", f"not a readable parquet file: {exc}") from exc
    return validate_runs(df, p)


# --------------------------------------------------------------------------- the runs of one cell


#: The rates a cell holds per run, each from its one definition.
_RATES: tuple[metrics.Rate, ...] = (
    metrics.CSR, metrics.TSR, metrics.TSR_TRUNCATED_AS_FAILURE, metrics.RECOVERY, metrics.TRAPPED,
    *(metrics.trap_rate(t) for t in CANARY_TYPES), *(metrics.control_rate(t) for t in CANARY_TYPES),
)


@dataclass(frozen=True)
class Cell:
    """The non-error runs of one (pool, condition, model) as arrays (one entry per run).

    The rates' per-run values come from their definitions (:mod:`canarykit.metrics`), NaN
    where a rate is not defined over the run: ``csr``; ``success``, the headline tsr (NaN for
    an unjudged or a truncated run); ``success_taf``, a truncated run as a failure;
    ``recovery``; ``trap`` and ``control`` (runs x canary types); ``trap_any`` (the types
    pooled).
    """

    tasks: np.ndarray
    seeds: np.ndarray
    pairs: np.ndarray
    difficulty: np.ndarray
    calls: np.ndarray
    canary_calls: np.ndarray
    trapped: np.ndarray
    present: np.ndarray
    truncated: np.ndarray
    before: np.ndarray
    """``canary_before_real`` as 1.0/0.0, NaN where null."""
    csr: np.ndarray
    success: np.ndarray
    success_taf: np.ndarray
    recovery: np.ndarray
    trap: np.ndarray
    trap_any: np.ndarray
    control: np.ndarray

    @classmethod
    def from_frame(cls, f: pl.DataFrame) -> Cell:
        rates = f.select(r.per_run() for r in _RATES)

        def rate(r: metrics.Rate) -> np.ndarray:
            return rates.get_column(r.name).fill_null(np.nan).to_numpy().astype(float)

        return cls(
            tasks=f.get_column("task_id").cast(pl.String).to_numpy().astype(str),
            seeds=f.get_column("seed").to_numpy().astype(np.int64),
            pairs=(f.get_column("task_id").cast(pl.String) + "|" + f.get_column("seed").cast(pl.String)).to_numpy().astype(str),
            difficulty=f.get_column("difficulty").to_numpy().astype(str),
            calls=f.get_column("tool_calls").to_numpy().astype(np.int64),
            canary_calls=f.get_column("canary_calls").to_numpy().astype(np.int64),
            trapped=f.get_column("trapped").to_numpy().astype(bool),
            present=np.column_stack([f.get_column(f"present_{t}").to_numpy().astype(bool) for t in CANARY_TYPES]),
            truncated=f.get_column("truncated").to_numpy().astype(bool),
            before=f.get_column("canary_before_real").cast(pl.Float64).fill_null(np.nan).to_numpy().astype(float),
            csr=rate(metrics.CSR),
            success=rate(metrics.TSR),
            success_taf=rate(metrics.TSR_TRUNCATED_AS_FAILURE),
            recovery=rate(metrics.RECOVERY),
            trap=np.column_stack([rate(metrics.trap_rate(t)) for t in CANARY_TYPES]),
            trap_any=rate(metrics.TRAPPED),
            control=np.column_stack([rate(metrics.control_rate(t)) for t in CANARY_TYPES]),
        )

    def sample(self, values: np.ndarray, mask: np.ndarray | None = None) -> Sample:
        """The runs where ``values`` is defined (finite) and ``mask`` holds."""
        v = np.asarray(values, dtype=float)
        keep = np.isfinite(v) if mask is None else (mask & np.isfinite(v))
        return Sample(v[keep], self.tasks[keep], self.pairs[keep])

    def where(self, mask: np.ndarray) -> Cell:
        return Cell(**{k: getattr(self, k)[mask] for k in self.__dataclass_fields__})

    # the rates of the study, each over the runs where it is defined
    def csr_sample(self) -> Sample:
        return self.sample(self.csr)

    def tsr_sample(self, truncated_as_failure: bool = False) -> Sample:
        return self.sample(self.success_taf if truncated_as_failure else self.success)

    def trap_sample(self, j: int) -> Sample:
        """Type ``j``: runs where it was offered and that made at least one tool call."""
        return self.sample(self.trap[:, j])

    def control_sample(self, j: int) -> Sample:
        """Type ``j``'s control: runs where it was offered and that made at least one tool
        call; the value is whether the control was called (the trap rate's counterpart)."""
        return self.sample(self.control[:, j])

    def trap_any_sample(self) -> Sample:
        """Runs offered at least one canary and that made a tool call: trapped or not."""
        return self.sample(self.trap_any)

    def recovery_sample(self) -> Sample:
        """Trapped runs; a trapped run whose recovery is unknown counts as not recovered."""
        return self.sample(self.recovery)


@functools.cache
def _empty_cell() -> Cell:
    """The cell of a (pool, condition, model) without runs: every rate over it is undefined."""
    z = np.zeros(0)
    types = np.zeros((0, _NT))
    return Cell(
        tasks=z.astype(str), seeds=z.astype(np.int64), pairs=z.astype(str), difficulty=z.astype(str),
        calls=z.astype(np.int64), canary_calls=z.astype(np.int64), trapped=z.astype(bool),
        present=types.astype(bool), truncated=z.astype(bool), before=z, csr=z, success=z, success_taf=z, recovery=z,
        trap=types, trap_any=z, control=types,
    )


# --------------------------------------------------------------------------- the study


@dataclass
class Study:
    """Everything the sections share: configuration, cells, models and the resampler."""

    config: StatsConfig
    cells: dict[tuple[str, str, str], Cell]
    conds: list[str]
    models: dict[str, list[str]]
    """Models with at least one run (failed or not) per condition of the primary pool."""
    groups: dict[str, str]
    tested: list[str]
    seeds: list[int]
    boot: Resampler
    counts: dict[str, dict[str, dict[str, int]]]

    def cell(self, condition: str, model: str, pool: str | None = None) -> Cell:
        return self.cells.get((pool or self.config.primary_pool, condition, model), _empty_cell())

    def tested_in(self, condition: str) -> list[str]:
        return [m for m in self.models.get(condition, []) if m in set(self.tested)]

    def ci(self, label: tuple[str, ...], sample: Sample) -> tuple[float | None, float | None]:
        return self.intervals([(label, sample)])[0]

    def intervals(self, items: list[tuple[tuple[str, ...], Sample]]) -> list[tuple[float | None, float | None]]:
        """``(lo, hi)`` of every ``(label, sample)`` rate (None for an empty sample); with the
        task unit all of them share one matrix product per chunk."""
        live = [i for i, (_, smp) in enumerate(items) if smp.n]
        got = rate_intervals(self.boot, [items[i] for i in live], self.config.alpha)
        out: list[tuple[float | None, float | None]] = [(None, None)] * len(items)
        for i, ci in zip(live, got, strict=True):
            out[i] = ci
        return out


def _counts(prim_all: pl.DataFrame) -> dict[str, dict[str, dict[str, int]]]:
    ok = ~pl.col("error")
    agg = prim_all.group_by("condition", "model").agg(
        ok.sum().alias("runs"),
        pl.col("error").sum().alias("failed"),
        (ok & (pl.col("tool_calls") == 0)).sum().alias("zero_call"),
        (ok & pl.col("truncated")).sum().alias("truncated"),
        (ok & ~pl.col("truncated") & pl.col("success").is_not_null()).sum().alias("judged"),
    )
    out: dict[str, dict[str, dict[str, int]]] = {}
    for r in agg.sort("condition", "model").to_dicts():
        out.setdefault(r["condition"], {})[r["model"]] = {k: int(r[k]) for k in ("runs", "failed", "zero_call", "truncated", "judged")}
    return out


def build_study(df: pl.DataFrame, config: StatsConfig) -> Study:
    """Cut a validated runs table into cells and set up the study's resampler."""
    if "truncated" not in df.columns:
        df = df.with_columns(pl.lit(False).alias("truncated"))
    df = _with_optional_columns(df)
    ok = df.filter(~pl.col("error"))
    prim_all = df.filter(pl.col("pool") == config.primary_pool)
    counts = _counts(prim_all)
    conds = [c for c in CONDITIONS if c in counts]
    groups = dict(df.group_by("model").agg(pl.col("group").first()).sort("model").iter_rows())
    cells = {
        (str(k[0]), str(k[1]), str(k[2])): Cell.from_frame(f)
        for k, f in ok.partition_by(["pool", "condition", "model"], as_dict=True).items()
    }
    tasks = ok.get_column("task_id").cast(pl.String).unique().sort().to_numpy().astype(str)
    return Study(
        config=config,
        cells=cells,
        conds=conds,
        models={c: sorted(counts[c]) for c in conds},
        groups=groups,
        tested=sorted(m for m, g in groups.items() if config.tested(g)),
        seeds=sorted(int(s) for s in ok.get_column("seed").unique().to_list()),
        boot=make_resampler(config.bootstrap_unit, tasks, config.resamples, config.seed),
        counts=counts,
    )


# --------------------------------------------------------------------------- per-model rates


def _csr_ci(st: Study) -> dict[str, Any]:
    keys = [(c, m) for c in st.conds for m in st.models[c]]
    samples = [st.cell(c, m).csr_sample() for c, m in keys]
    cis = st.intervals([(("csr", c, m), s) for (c, m), s in zip(keys, samples, strict=True)])
    out: dict[str, Any] = {c: {} for c in st.conds}
    for (c, m), s, (lo, hi) in zip(keys, samples, cis, strict=True):
        k = st.counts[c][m]
        out[c][m] = {
            "csr": s.mean(), "lo": lo, "hi": hi, "n": s.n, "n_zero_call": k["zero_call"],
            "n_runs": k["runs"], "n_failed": k["failed"], "n_truncated": k["truncated"], "clusters": s.clusters,
        }
    return out


def _tsr_blocks(st: Study) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    keys = [(c, m) for c in st.conds for m in st.models[c]]
    samples = [st.cell(c, m).tsr_sample() for c, m in keys]
    cis = st.intervals([(("tsr", c, m), s) for (c, m), s in zip(keys, samples, strict=True)])
    ci: dict[str, Any] = {c: {} for c in st.conds}
    headline: dict[str, Any] = {c: {} for c in st.conds}
    taf: dict[str, Any] = {c: {} for c in st.conds}
    for (c, m), s, (lo, hi) in zip(keys, samples, cis, strict=True):
        cell = st.cell(c, m)
        t = cell.tsr_sample(truncated_as_failure=True).mean()
        ci[c][m] = {"tsr": s.mean(), "lo": lo, "hi": hi, "n": s.n, "n_truncated": int(cell.truncated.sum()),
                    "tsr_truncated_as_failure": t, "clusters": s.clusters}
        headline[c][m] = s.mean()
        taf[c][m] = t
    return ci, headline, taf


@dataclass
class TrapDraws:
    """Per (condition, model, type): the sample and the column of its bootstrap draws in
    ``draws`` (reused by the pairwise contrasts)."""

    samples: dict[tuple[str, str, int], Sample]
    column: dict[tuple[str, str, int], int]
    draws: Draws | None


def _trap_rates(st: Study) -> tuple[dict[str, Any], dict[str, Any], TrapDraws]:
    rates: dict[str, Any] = {}
    cis: dict[str, Any] = {}
    keys: list[tuple[str, str, int]] = []
    samples: list[Sample] = []
    for c in st.conds:
        for m in st.models[c]:
            cell = st.cell(c, m)
            for j in range(_NT):
                s = cell.trap_sample(j)
                if s.n:
                    keys.append((c, m, j))
                    samples.append(s)
    draws = rate_draws(st.boot, [(("trap_rate", c, m, CANARY_TYPES[j]), s) for (c, m, j), s in zip(keys, samples, strict=True)])
    lo, hi = draws.intervals(st.config.alpha) if keys else (np.empty(0), np.empty(0))
    td = TrapDraws(dict(zip(keys, samples, strict=True)), {k: i for i, k in enumerate(keys)}, draws)
    for c in st.conds:
        rates[c], cis[c] = {}, {}
        for m in st.models[c]:
            cell = st.cell(c, m)
            rates[c][m], cis[c][m] = {}, {}
            for j, t in enumerate(CANARY_TYPES):
                s = cell.trap_sample(j)
                offered = cell.present[:, j]
                entry: dict[str, Any] = {
                    "rate": s.mean(), "lo": None, "hi": None, "n": s.n, "trapped": int(s.values.sum()),
                    "n_zero_call": int((offered & (cell.calls == 0)).sum()), "clusters": s.clusters,
                }
                if (c, m, j) in td.column:
                    i = td.column[(c, m, j)]
                    entry["lo"], entry["hi"] = _f(lo[i]), _f(hi[i])
                rates[c][m][t] = s.mean()
                cis[c][m][t] = entry
    return rates, cis, td


def _recovery(st: Study) -> dict[str, Any]:
    keys = [(c, m) for c in st.conds for m in st.models[c]]
    samples = [st.cell(c, m).recovery_sample() for c, m in keys]
    cis = st.intervals([(("recovery", c, m), s) for (c, m), s in zip(keys, samples, strict=True)])
    out: dict[str, Any] = {c: {} for c in st.conds}
    for (c, m), s, (lo, hi) in zip(keys, samples, cis, strict=True):
        out[c][m] = {"rate": s.mean(), "n": s.n, "lo": lo, "hi": hi, "clusters": s.clusters}
    return out


# --------------------------------------------------------------------------- the paper's tests


def _chi2(st: Study, c: str) -> dict[str, Any]:
    models = st.tested_in(c)
    table = np.array(
        [[st.cell(c, m).canary_calls.sum(), st.cell(c, m).calls.sum() - st.cell(c, m).canary_calls.sum()] for m in models],
        dtype=float,
    ).reshape(-1, 2)
    res = chi2_independence(table)
    res["n_calls"] = int(table.sum())
    res["n_models"] = int((table.sum(axis=1) > 0).sum())
    res["models"] = models
    return res


def _kruskal(st: Study, c: str) -> dict[str, Any]:
    models = st.tested_in(c)
    samples = [st.cell(c, m).csr_sample().values for m in models]
    res = kruskal_wallis(samples)
    res["n_models"] = sum(1 for s in samples if s.size)
    res["models"] = models
    return res


def _fisher_holm(st: Study, c: str) -> dict[str, Any]:
    models = st.tested_in(c)
    meta: list[dict[str, Any]] = []
    tables: list[list[list[int]]] = []
    trap = {(m, j): st.cell(c, m).trap_sample(j) for m in models for j in range(_NT)}
    for j, t in enumerate(CANARY_TYPES):
        for a, b in combinations(models, 2):
            sa, sb = trap[(a, j)], trap[(b, j)]
            if sa.n == 0 and sb.n == 0:
                continue
            a_k, b_k = int(sa.values.sum()), int(sb.values.sum())
            meta.append({"type": t, "model_a": a, "model_b": b, "a_trapped": a_k, "a_n": sa.n, "b_trapped": b_k, "b_n": sb.n})
            tables.append([[a_k, sa.n - a_k], [b_k, sb.n - b_k]])
    reason = None
    if len(models) < 2:
        reason = "fewer than two models under test"
    elif not meta:
        reason = "no canary type was present"
    p = fisher_exact_2x2(np.array(tables, dtype=np.int64).reshape(-1, 2, 2))
    p_holm = holm(p)
    for entry, pv, ph in zip(meta, p, p_holm, strict=True):
        entry.update(p=float(pv), p_holm=float(ph), significant=bool(ph < st.config.alpha))
    return {
        "alpha": st.config.alpha, "n_contrasts": len(meta), "n_significant": int(sum(e["significant"] for e in meta)),
        "reason": reason, "models": models, "contrasts": meta,
    }


def _spearman(st: Study, c: str, models: list[str], label: tuple[str, ...], *, inferential: bool = True) -> dict[str, Any]:
    """Spearman's rho of csr and success over the runs of ``models`` with its interval;
    ``p`` (independent runs, the paper's) and ``p_bootstrap`` (the smallest alpha whose
    interval excludes 0) only when ``inferential`` (models under test)."""
    xs, ys, ts = [], [], []
    for m in models:
        cell = st.cell(c, m)
        keep = np.isfinite(cell.csr) & np.isfinite(cell.success)
        xs.append(cell.csr[keep])
        ys.append(cell.success[keep])
        ts.append(cell.tasks[keep])
    x = np.concatenate(xs) if xs else np.zeros(0)
    y = np.concatenate(ys) if ys else np.zeros(0)
    tasks = np.concatenate(ts) if ts else np.zeros(0, str)
    entry: dict[str, Any] = {"rho": None, "p": None, "p_bootstrap": None, "lo": None, "hi": None, "n": int(x.size),
                             "clusters": int(np.unique(tasks).size), "reason": None}
    if x.size < 3:
        entry["reason"] = "fewer than three runs with both csr and a verdict"
    elif np.unique(x).size < 2 or np.unique(y).size < 2:
        entry["reason"] = "csr or success is constant"
    else:
        rho, p = spearman(x, y)
        entry["rho"] = rho
        d = st.boot.spearman(label, x, y, tasks)
        lo, hi = d.intervals(st.config.alpha)
        entry["lo"], entry["hi"] = _f(lo[0]), _f(hi[0])
        if inferential:
            entry["p"] = p
            entry["p_bootstrap"] = _f(d.p_values()[0])
    return entry


def _spearman_by_model(st: Study, c: str) -> dict[str, Any]:
    """Spearman within each model: rho and its interval for every model; the p-values only
    for the models under test, Holm-adjusted across them (``p_bootstrap_holm``)."""
    tested = set(st.tested_in(c))
    out = {m: _spearman(st, c, [m], ("spearman", c, m), inferential=m in tested) for m in st.models[c]}
    family = [m for m in sorted(tested) if out[m]["p_bootstrap"] is not None]
    adj = holm([out[m]["p_bootstrap"] for m in family])
    for m, e in out.items():
        e["tested"] = m in tested
        e["p_bootstrap_holm"] = None
        e["significant"] = None
    for m, ph in zip(family, adj, strict=True):
        out[m]["p_bootstrap_holm"] = float(ph)
        out[m]["significant"] = bool(ph < st.config.alpha)
    return out


# --------------------------------------------------------------------------- blocked tests


def _per_task_means(cell: Cell, values: np.ndarray) -> dict[str, float]:
    keep = np.isfinite(values)
    if not keep.any():
        return {}
    tasks, inv = np.unique(cell.tasks[keep], return_inverse=True)
    sums = np.bincount(inv, weights=values[keep])
    cnt = np.bincount(inv)
    return dict(zip(tasks.tolist(), (sums / cnt).tolist(), strict=True))


def _friedman(st: Study, c: str) -> dict[str, Any]:
    tested = st.tested_in(c)
    means = {m: _per_task_means(st.cell(c, m), st.cell(c, m).csr) for m in tested}
    models = [m for m in tested if means[m]]  # a model with no csr at all (never called a tool) has no block
    all_tasks = sorted(set().union(*[set(means[m]) for m in models])) if models else []
    complete = [t for t in all_tasks if all(t in means[m] for m in models)]
    blocks = np.array([[means[m][t] for m in models] for t in complete], dtype=float).reshape(len(complete), len(models))
    res = friedman(blocks)
    res.update(n_models=len(models), models=models, excluded=[m for m in tested if not means[m]],
               dropped_tasks=len(all_tasks) - len(complete))
    return res


def _trapped_runs(st: Study, c: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``trapped`` (0/1), model and task of the runs of the models under test that made a
    tool call (the trap rate's denominator rule)."""
    ys, gs, ts = [], [], []
    for m in st.tested_in(c):
        cell = st.cell(c, m)
        keep = cell.calls > 0
        ys.append(cell.trapped[keep].astype(float))
        gs.append(np.full(int(keep.sum()), m))
        ts.append(cell.tasks[keep])
    if not ys:
        return np.zeros(0), np.zeros(0, str), np.zeros(0, str)
    return np.concatenate(ys), np.concatenate(gs), np.concatenate(ts)


def _gee_trap(st: Study, c: str) -> dict[str, Any]:
    return gee_group_test(*_trapped_runs(st, c))


def _trap_permutation(st: Study, c: str) -> dict[str, Any]:
    y, g, t = _trapped_runs(st, c)
    return permutation_group_test(y, g, t, resamples=st.config.resamples,
                                  rng=derive_rng(st.config.seed, "trap_permutation", c))


def _trap_test(gee: dict[str, Any], perm: dict[str, Any], tested: list[str]) -> dict[str, Any]:
    """Which omnibus test of trap rates across the models under test answers, and why.

    The logistic GEE answers when it fits: it keeps every model under test that made a tool
    call, it converged and gave a p-value. Otherwise (a model never or always trapped has an
    infinite log-odds and GEE leaves it out; no convergence; a singular covariance) the
    task-blocked permutation test answers: it keeps every model.
    """
    why: str | None = None
    if gee.get("excluded"):
        why = (f"{', '.join(gee['excluded'])} never or always trapped: infinite log-odds, left out of GEE "
               "(the permutation test keeps every model)")
    elif gee.get("p") is None:
        why = gee.get("reason") or "GEE gave no p-value"
    elif gee.get("converged") is False:
        why = "GEE did not converge"
    if why is None:
        test, src = "gee_trap", gee
    else:
        test, src = "trap_permutation", perm
    answered = src.get("p") is not None
    return {
        "test": test if answered else None, "p": src.get("p"), "statistic": src.get("statistic"),
        "models": src.get("groups", []), "tested_models": tested, "gee_not_used": why,
        "reason": None if answered else (src.get("reason") or "no test applies"),
    }


def _contrasts(st: Study, c: str, td: TrapDraws) -> dict[str, Any]:
    """Pairwise model contrasts of each type's trap rate, task-clustered, Holm across all."""
    models = st.tested_in(c)
    rows: list[dict[str, Any]] = []
    skipped = 0
    for j, t in enumerate(CANARY_TYPES):
        have = [m for m in models if (c, m, j) in td.samples]
        pairs = [(a, b) for a, b in combinations(models, 2)]
        skipped += sum(1 for a, b in pairs if a not in have or b not in have)
        pairs = [(a, b) for a, b in pairs if a in have and b in have]
        if not pairs:
            continue
        idx = {m: i for i, m in enumerate(have)}
        sums, counts = st.boot.cluster_sums([td.samples[(c, m, j)] for m in have])
        cr = _cr_contrasts(sums, counts, [(idx[a], idx[b]) for a, b in pairs])
        assert td.draws is not None
        diffs = td.draws.take([td.column[(c, m, j)] for m in have]).differences([(idx[a], idx[b]) for a, b in pairs])
        lo_all, hi_all = diffs.intervals(st.config.alpha)
        for k, (a, b) in enumerate(pairs):
            sa, sb = td.samples[(c, a, j)], td.samples[(c, b, j)]
            lo, hi = _f(lo_all[k]), _f(hi_all[k])
            ra, rb = sa.mean(), sb.mean()
            rows.append({
                "type": t, "model_a": a, "model_b": b, "a": ra, "b": rb, "delta": _f(cr["delta"][k]), "lo": lo, "hi": hi,
                "se": _f(cr["se"][k]), "p": _f(cr["p"][k]), "cohens_h": cohens_h(ra, rb), "a_n": sa.n, "b_n": sb.n,
                "clusters": int(cr["clusters"][k]),
            })
    tested = [r for r in rows if r["p"] is not None]
    adj = holm([r["p"] for r in tested])
    for r, ph in zip(tested, adj, strict=True):
        r["p_holm"] = float(ph)
        r["significant"] = bool(ph < st.config.alpha)
    for r in rows:
        r.setdefault("p_holm", None)
        r.setdefault("significant", False)
    reason = None
    if len(models) < 2:
        reason = "fewer than two models under test"
    elif not rows:
        reason = "no canary type was present for two models"
    elif not tested:
        reason = "no contrast is testable (fewer than two tasks)"
    return {
        "alpha": st.config.alpha, "unit": st.boot.unit, "n_contrasts": len(tested),
        "n_significant": int(sum(r["significant"] for r in rows)), "skipped_pairs": skipped, "reason": reason,
        "models": models, "contrasts": rows,
    }


def _f(x: Any) -> float | None:
    v = float(x)
    return v if math.isfinite(v) else None


def _few_tested(st: Study, c: str, need: int = 2) -> str | None:
    """The reason a test across models cannot run: too few models under test."""
    n = len(st.tested_in(c))
    if n >= need:
        return None
    untested = [m for m in st.models.get(c, []) if m not in set(st.tested)]
    why = f"{n} model(s) under test in {c}, {need} needed"
    if untested:
        why += (f"; {len(untested)} model(s) of groups {sorted({st.groups.get(m, '?') for m in untested})} are described, "
                "not tested (stats.test_groups)")
    return why


def _with_family_reason(st: Study, c: str, res: dict[str, Any], key: str = "reason", need: int = 2) -> dict[str, Any]:
    why = _few_tested(st, c, need)
    if why is not None:
        res[key] = why
    return res


def _association(st: Study, c: str) -> dict[str, Any]:
    ys, xs, ss, ts = [], [], [], []
    for m in st.tested_in(c):
        cell = st.cell(c, m)
        keep = np.isfinite(cell.csr) & np.isfinite(cell.success)
        ys.append(cell.success[keep])
        xs.append(cell.csr[keep])
        ss.append(np.full(int(keep.sum()), m))
        ts.append(cell.tasks[keep])
    if not ys:
        return gee_association(np.zeros(0), np.zeros(0), np.zeros(0, str), np.zeros(0, str), alpha=st.config.alpha)
    return gee_association(np.concatenate(ys), np.concatenate(xs), np.concatenate(ss), np.concatenate(ts), alpha=st.config.alpha)


# --------------------------------------------------------------------------- deltas


def _tsr_delta(st: Study) -> dict[str, Any]:
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
                "clusters": d["clusters"],
            }
    return out


def _ablation(st: Study) -> tuple[dict[str, Any], dict[str, Any]]:
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
    for i, (m, d) in enumerate(zip(models, csr, strict=True)):
        out["models"][m] = {"standard": d["b"], "subtle": d["a"], "delta": d["delta"], "lo": d["lo"], "hi": d["hi"],
                            "n_standard": d["n_b"], "n_subtle": d["n_a"], "n_pairs": d["n_pairs"]}
        by_type[m] = {}
        for j, t in enumerate(CANARY_TYPES):
            e = typed[i * _NT + j]
            by_type[m][t] = {"standard": e["b"], "subtle": e["a"], "delta": e["delta"], "lo": e["lo"], "hi": e["hi"],
                             "cohens_h": e["cohens_h"], "n_standard": e["n_b"], "n_subtle": e["n_a"], "n_pairs": e["n_pairs"]}
    groups: dict[str, dict[str, list[float]]] = {}
    for m, entry in out["models"].items():
        g = groups.setdefault(st.groups.get(m, "?"), {"standard": [], "subtle": []})
        for p in POOLS:
            if entry[p] is not None:
                g[p].append(entry[p])
    out["groups"] = {g: {p: (float(np.mean(v)) if v else None) for p, v in d.items()} for g, d in sorted(groups.items())}
    return out, by_type


# --------------------------------------------------------------------------- descriptives


def _csr_by_difficulty(st: Study) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for c in st.conds:
        out[c] = {}
        for m in st.models[c]:
            cell = st.cell(c, m)
            out[c][m] = {d: _mean_where(cell.csr, cell.difficulty == d) for d in DIFFICULTIES}
    return out


def _mean_where(values: np.ndarray, mask: np.ndarray) -> float | None:
    v = values[mask & np.isfinite(values)]
    return float(v.mean()) if v.size else None


def _outcome(cells: list[Cell]) -> dict[str, Any]:
    rec = np.concatenate([c.recovery[c.trapped & np.isfinite(c.success)] for c in cells]) if cells else np.zeros(0)
    suc = np.concatenate([c.success[c.trapped & np.isfinite(c.success)] for c in cells]) if cells else np.zeros(0)
    flag = np.nan_to_num(rec, nan=0.0) > 0.5
    out = {}
    for key, sel in (("recovered", flag), ("not_recovered", ~flag)):
        out[key] = {"n": int(sel.sum()), "success_rate": float(suc[sel].mean()) if sel.any() else None}
    return out


def _recovery_outcome(st: Study) -> dict[str, Any]:
    every = sorted(set().union(*[set(v) for v in st.models.values()])) if st.models else []
    out: dict[str, Any] = {}
    for c in st.conds:
        out[c] = {m: _outcome([st.cell(c, m)]) for m in every}
        out[c][POOLED] = _outcome([st.cell(c, m) for m in every])
    both = [c for c in CANARY_CONDITIONS if c in st.conds]
    if both:
        out[DECLARED_FULL] = {m: _outcome([st.cell(c, m) for c in both]) for m in every}
        out[DECLARED_FULL][POOLED] = _outcome([st.cell(c, m) for c in both for m in every])
    return out


def _trap_rate_averages(
    rows: dict[str, dict[str, float | None]], groups_of: dict[str, str], averages: dict[str, list[str]] | None
) -> dict[str, Any]:
    if averages is None:
        averages = {g: [g] for g in sorted(set(groups_of.values()))}
    out: dict[str, Any] = {}
    for name, groups in averages.items():
        members = sorted(m for m in rows if groups_of.get(m) in set(groups))
        rates: dict[str, float | None] = {}
        for t in CANARY_TYPES:
            vals = [v for m in members if (v := rows[m][t]) is not None]
            rates[t] = float(np.mean(vals)) if vals else None
        out[name] = {"groups": list(groups), "models": members, "rates": rates}
    return out


# --------------------------------------------------------------------------- families


def _families(st: Study, result: dict[str, Any]) -> dict[str, Any]:
    fam: dict[str, Any] = {}
    a = st.config.alpha

    def add(name: str, test: str, unit: str, members: list[str], size: int, correction: str, **extra: Any) -> None:
        fam[name] = {"test": test, "unit": unit, "members": members, "size": size, "correction": correction, "alpha": a,
                     **extra}

    for c in st.conds:
        chi, kw, fh = result["chi2"][c], result["kruskal"][c], result["fisher_holm"][c]
        add(f"chi2.{c}", "Pearson chi-square, models x {canary, other} calls (paper)", "tool call",
            chi["models"], int(chi["p"] is not None), "none")
        add(f"kruskal.{c}", "Kruskal-Wallis on per-run csr (paper)", "task-run", kw["models"], int(kw["p"] is not None), "none")
        add(f"fisher_holm.{c}", "Fisher exact, pairs of models per type (paper)", "task-run", fh["models"], fh["n_contrasts"], "holm")
        add(f"spearman.{c}", "Spearman csr vs success, models pooled", "task-run (interval: " + st.boot.unit + ")",
            st.tested_in(c), int(result["spearman"][c]["rho"] is not None), "none")
        sbm = result["spearman_by_model"][c]
        members = [m for m in st.tested_in(c) if sbm.get(m, {}).get("p_bootstrap") is not None]
        add(f"spearman_by_model.{c}", "Spearman csr vs success within each model under test; p_bootstrap (interval "
            "inversion, " + st.boot.unit + " resampling) Holm-adjusted across them as p_bootstrap_holm",
            "task-run (interval: " + st.boot.unit + ")", members, len(members), "holm")
        fr, gt, co, asn = result["friedman"][c], result["gee_trap"][c], result["contrasts"][c], result["association"][c]
        add(f"friedman.{c}", "Friedman across models on per-task mean csr", "task", fr["models"], int(fr["p"] is not None), "none")
        add(f"gee_trap.{c}", "GEE logistic trapped ~ model, exchangeable within task, robust Wald", "task-run clustered by task",
            gt["groups"], int(gt["p"] is not None), "none")
        tp, tt = result["trap_permutation"][c], result["trap_test"][c]
        add(f"trap_permutation.{c}", "permutation test of trapped ~ model: model labels of (task, model) blocks permuted "
            "within each task, statistic sum_m N_m (rate_m - pooled)^2", "task (blocks of a model's runs on a task)",
            tp["groups"], int(tp["p"] is not None), "none")
        add(f"trap_test.{c}", "the omnibus trap-rate test that answers: gee_trap when it keeps every model and converges, "
            "else trap_permutation", "task", tt["models"], int(tt["p"] is not None), "none", answered_by=tt["test"],
            gee_not_used=tt["gee_not_used"])
        add(f"contrasts.{c}", "trap rate difference per type and pair of models, cluster-robust t", f"task-run clustered by {st.boot.unit}",
            co["models"], co["n_contrasts"], "holm")
        add(f"association.{c}", "GEE logistic success ~ csr + model, exchangeable within task", "task-run clustered by task",
            asn["strata"], int(asn["p"] is not None), "none")
    # Within-model families: every model, instrument agents included on purpose.
    note = ("every model, the reference and planted agents included on purpose: they are the known-answer checks of "
            "this effect (stats.test_groups does not apply)")
    for key, test in (("control_effect", "trap rate with canaries (declared) minus with controls (control) per type, "
                                         "paired by (task, seed), cluster-robust t"),
                      ("position_effect", "trap rate with canaries before minus after their real tools (declared + "
                                          "mirrored) per type, paired by (task, seed), cluster-robust t")):
        block = result.get(key, {})
        per_model = [sum(1 for e in (v if key == "control_effect" else v["by_type"]).values() if e.get("p") is not None)
                     for v in block.values()]
        add(key, test, f"task-run clustered by {st.boot.unit}", sorted(block), max(per_model, default=0),
            "holm across the canary types within each model", includes_instruments=True, note=note)
    return fam


# --------------------------------------------------------------------------- compute_all


def compute_all(
    df: pl.DataFrame,
    cfg: StatsConfig | Mapping[str, Any] | None = None,
    *,
    source: str = "runs table",
    validate: bool = True,
    timings: dict[str, float] | None = None,
) -> dict[str, Any]:
    """Every statistic of the per-run table as a JSON-ready dict (layout: package docstring).

    ``cfg`` is a :class:`StatsConfig` or the ``stats`` mapping of params.yaml. The table is
    validated first unless ``validate`` is false (it already was, e.g. by :func:`load_runs`).
    When ``timings`` is given it receives the seconds spent in each part (benchmarks).
    """
    config = cfg if isinstance(cfg, StatsConfig) else StatsConfig.from_mapping(cfg)
    # One BLAS thread: the products here are small (about 10,000 x 120), and a threaded BLAS
    # on a shared machine spends more time waiting for its threads than computing (measured:
    # a 10,000 x 120 matrix-vector product 0.4 ms with one thread, 7 ms with two on a
    # loaded 2-core machine).
    with threadpool_limits(limits=1):
        return _compute_all(df, config, source=source, validate=validate, timings=timings)


def _compute_all(
    df: pl.DataFrame, config: StatsConfig, *, source: str, validate: bool, timings: dict[str, float] | None
) -> dict[str, Any]:
    from ._stability import stability

    clock = _Clock(timings)
    if validate:
        df = validate_runs(df, source)
        clock.lap("validate")
    st = build_study(df, config)
    clock.lap("cells")

    r: dict[str, Any] = {}
    r["counts"] = st.counts
    r["csr_ci"] = _csr_ci(st)
    clock.lap("csr_ci")
    r["tsr_ci"], r["tsr"], r["tsr_truncated_as_failure"] = _tsr_blocks(st)
    r["trap_rates"], r["trap_rate_ci"], td = _trap_rates(st)
    r["recovery"] = _recovery(st)
    clock.lap("tsr_trap_recovery_ci")
    fam = _with_family_reason
    r["chi2"] = {c: fam(st, c, _chi2(st, c)) for c in st.conds}
    r["kruskal"] = {c: fam(st, c, _kruskal(st, c)) for c in st.conds}
    r["fisher_holm"] = {c: fam(st, c, _fisher_holm(st, c)) for c in st.conds}
    clock.lap("paper_tests")
    r["friedman"] = {c: fam(st, c, _friedman(st, c)) for c in st.conds}
    r["contrasts"] = {c: fam(st, c, _contrasts(st, c, td)) for c in st.conds}
    clock.lap("friedman_contrasts")
    r["gee_trap"] = {c: fam(st, c, _gee_trap(st, c)) for c in st.conds}
    clock.lap("gee_trap")
    r["trap_permutation"] = {c: fam(st, c, _trap_permutation(st, c)) for c in st.conds}
    r["trap_test"] = {c: fam(st, c, _trap_test(r["gee_trap"][c], r["trap_permutation"][c], st.tested_in(c))) for c in st.conds}
    clock.lap("trap_permutation")
    r["spearman"] = {c: fam(st, c, _spearman(st, c, st.tested_in(c), ("spearman", c)), need=1) for c in st.conds}
    r["spearman_by_model"] = {c: _spearman_by_model(st, c) for c in st.conds}
    clock.lap("spearman")
    r["association"] = {c: fam(st, c, _association(st, c), need=1) for c in st.conds}
    clock.lap("association_gee")
    r["tsr_delta"] = _tsr_delta(st)
    r["ablation"], r["ablation_by_type"] = _ablation(st)
    r["control_effect"] = control_effect(st)
    r["position_effect"] = position_effect(st)
    r["position_balance"] = position_balance(df, config.primary_pool)
    clock.lap("deltas")
    r["csr_by_difficulty"] = _csr_by_difficulty(st)
    r["recovery_outcome"] = _recovery_outcome(st)
    r["trap_rate_averages"] = {c: _trap_rate_averages(r["trap_rates"][c], st.groups, config.group_averages) for c in st.conds}
    r["stability"] = stability(st, r)
    r["families"] = _families(st, r)
    r["model_groups"] = st.groups
    r["excluded_error_runs"] = int(df.get_column("error").sum())
    ok = df.filter(~pl.col("error"))
    r["meta"] = {
        "resamples": config.resamples, "seed": config.seed, "alpha": config.alpha, "bootstrap_unit": config.bootstrap_unit,
        "interval_method": st.boot.interval_method,
        "primary_pool": config.primary_pool, "ablation_condition": config.ablation_condition,
        "n_runs": ok.height, "n_runs_primary": ok.filter(pl.col("pool") == config.primary_pool).height,
        "n_tasks": int(ok.get_column("task_id").n_unique()), "seeds": st.seeds, "conditions": st.conds,
        "models": sorted(st.groups), "canary_types": list(CANARY_TYPES),
        "test_groups": list(config.test_groups) if config.test_groups is not None else None,
        "tested_models": st.tested, "untested_models": sorted(m for m in st.groups if m not in set(st.tested)),
    }
    clock.lap("descriptives_stability")
    out = _clean(r)
    clock.lap("json_cleanup")
    return out


class _Clock:
    def __init__(self, sink: dict[str, float] | None) -> None:
        self.sink = sink
        self.t = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        if self.sink is not None:
            self.sink[name] = self.sink.get(name, 0.0) + now - self.t
        self.t = now


def _num(x: Any) -> Any:
    """JSON-safe scalar: NaN/inf -> None, numpy scalars -> Python."""
    if x is None:
        return None
    if isinstance(x, bool | np.bool_):
        return bool(x)
    if isinstance(x, int | np.integer):
        return int(x)
    if isinstance(x, float | np.floating):
        return finite_or_none(float(x))
    return x


def _clean(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    return _num(obj)
