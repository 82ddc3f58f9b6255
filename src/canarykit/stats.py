"""Statistics, tables and figure data computed from the per-run table alone.

Entry points: :func:`stats_command` (``canarykit stats RUNS -o DIR``), :func:`compute_all`
(pure: validated runs table -> JSON-ready dict) and :func:`write_outputs` (dict -> files).

Units and conventions
---------------------
- Rows with ``error`` true (backend errors) are excluded from every statistic and counted in
  ``excluded_error_runs``.
- Everything nested by condition is computed on the primary pool (``primary_pool``, default
  ``standard``); conditions absent from the table are absent from the output.
- **csr** of a model = mean over task-runs of the per-run ``csr`` (canary calls / tool calls).
  A run with zero tool calls has an undefined (null) csr: it is excluded from the mean and
  counted in ``n_zero_call``.
- **tsr** = mean of ``success`` over runs with a verdict (null verdicts excluded).
- **recovery** = (trapped runs with ``recovered`` true) / ``n``, ``n`` = number of trapped runs;
  null when ``n`` is 0.
- **type-specific trap rate** of type T = runs with ``present_T`` and ``trapped_T`` / runs with
  ``present_T``; null when T was never present.
- Bootstrap intervals are percentile intervals at level ``1 - alpha`` (95% by default) from
  ``resamples`` resamples, drawn vectorised as ``rng.integers(0, n, size=(B, n))`` (chunked to
  bound memory; chunking does not change the stream). Each estimate has its own generator,
  ``numpy.random.default_rng([seed, crc32(label), ...])`` (:func:`derive_rng`), so adding a
  model never changes another model's interval.
- Every number that is undefined (NaN, empty sample) is ``null`` in JSON.

``stats.json`` layout
---------------------
::

    csr_ci:            {condition: {model: {csr, lo, hi, n, n_zero_call, n_runs}}}
                       n = runs with a defined csr; n_runs = all (non-error) runs
    chi2:              {condition: {statistic, dof, p, n_calls, n_models, reason}}
                       model x {canary calls, other calls} contingency table, calls pooled over
                       runs, no continuity correction; models with no calls are dropped
    kruskal:           {condition: {H, p, n, n_models, reason}}   per-run csr across models
                       (unit = task-run; tie-corrected)
    fisher_holm:       {condition: {alpha, n_contrasts, n_significant, reason, contrasts: [
                          {type, model_a, model_b, p, p_holm, significant,
                           a_trapped, a_n, b_trapped, b_n}]}}
                       two-sided Fisher exact test per type and unordered model pair on the 2x2
                       table trapped/not over runs where the type was present (pairs where it
                       was present for neither are skipped); Holm over all contrasts of the
                       condition
    spearman:          {condition: {rho, p, lo, hi, n, clusters, reason}}
                       per-run csr vs success (0/1) over runs with both defined, all models
                       pooled; CI = task-clustered bootstrap resampling whole task_ids
    tsr_delta:         {declared|full: {model: {delta, lo, hi, cohens_d, n_base, n_cond}}}
                       delta = tsr(baseline) - tsr(condition) (positive: canaries hurt);
                       bootstrap resamples the runs of each condition independently;
                       cohens_d = delta / pooled SD (ddof 1) of the 0/1 success
    csr_by_difficulty: {condition: {model: {easy, medium, hard}}}
    recovery_outcome:  {condition | "declared+full": {model | "__pooled__": {
                          recovered: {n, success_rate}, not_recovered: {n, success_rate}}}}
                       trapped runs with a verdict; "declared+full" pools both conditions
                       (Appendix G)
    ablation:          {condition, primary_pool, other_pool, note,
                        models: {model: {standard, subtle, delta}},
                        groups: {group: {standard, subtle}}}
                       csr of ``ablation_condition`` (declared) on each pool; delta = subtle -
                       standard; group value = mean of its models' csr; ``models``/``groups``
                       empty and ``note`` set when a pool is absent
    trap_rates:        {condition: {model: {type: rate | null}}}
    trap_rate_averages:{condition: {average name: {groups: [...], models: [...],
                                                    rates: {type: rate | null}}}}
                       unweighted mean of the member models' (non-null) rates (Table 2)
    recovery:          {condition: {model: {rate, n}}}
    tsr:               {condition: {model: value | null}}
    model_groups:      {model: group}
    excluded_error_runs: int
    meta:              {resamples, seed, alpha, primary_pool, ablation_condition,
                        n_runs (non-error runs, all pools), n_runs_primary, conditions,
                        models, canary_types}

Files written by :func:`write_outputs`: ``stats.json``; ``table1``/``table3`` (declared /
full: ``model, tier, csr, csr_lo, csr_hi, tsr, recovery, recovery_n, runs``, sorted by csr) and
``table2`` (declared type-specific trap rates, one row per model then one per group average)
as ``.csv`` and ``.md``; and the tidy data behind each figure: ``fig2_csr.csv``,
``fig4_csr_by_difficulty.csv``, ``fig5_trap_rates.csv``, ``fig6_profiles.csv``,
``fig7_tsr_delta.csv``, ``fig8_ablation.csv``, ``fig9_recovery_outcome.csv``.
"""

from __future__ import annotations

import math
import time
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from scipy import special
from scipy import stats as sps

from . import schemas
from .errors import InputError
from .jsonio import atomic_write_text, finite_or_none, write_json
from .types import CANARY_TYPES, CONDITIONS, DIFFICULTIES, POOLS

__all__ = [
    "FIGURE_DATA_FILES",
    "StatsConfig",
    "bootstrap_mean_ci",
    "bootstrap_means",
    "chi2_independence",
    "cluster_bootstrap_spearman",
    "cohens_d",
    "compute_all",
    "derive_rng",
    "figure_data",
    "fisher_exact_2x2",
    "holm",
    "kruskal_wallis",
    "load_runs",
    "percentile_ci",
    "spearman",
    "stats_command",
    "tables",
    "validate_runs",
    "write_outputs",
]

#: Elements (int64 indices) drawn per bootstrap chunk: bounds memory at about 64 MB per chunk.
CHUNK_ELEMENTS = 4_000_000
#: Relative tolerance used to decide which tables are "as or more extreme" (as scipy does).
_FISHER_RTOL = 1e-7
POOLED = "__pooled__"
DECLARED_FULL = "declared+full"


# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class StatsConfig:
    """Options of :func:`compute_all` (the ``stats`` section of params.yaml)."""

    resamples: int = 10_000
    seed: int = 20261130
    alpha: float = 0.05
    group_averages: dict[str, list[str]] | None = None
    primary_pool: str = "standard"
    ablation_condition: str = "declared"
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if self.resamples < 1:
            raise InputError("stats config", "resamples", f"must be >= 1, got {self.resamples}")
        if not 0.0 < self.alpha < 1.0:
            raise InputError("stats config", "alpha", f"must be in (0, 1), got {self.alpha}")
        if self.primary_pool not in POOLS:
            raise InputError("stats config", "primary_pool", f"must be one of {list(POOLS)}")
        if self.ablation_condition not in CONDITIONS:
            raise InputError("stats config", "ablation_condition", f"must be one of {list(CONDITIONS)}")

    @classmethod
    def from_mapping(cls, m: Mapping[str, Any] | None) -> StatsConfig:
        """Build from a params.yaml-like mapping (``bootstrap_resamples`` or ``resamples``)."""
        m = dict(m or {})
        resamples = m.pop("bootstrap_resamples", m.pop("resamples", 10_000))
        ga = m.pop("group_averages", None)
        return cls(
            resamples=int(resamples),
            seed=int(m.pop("seed", 20261130)),
            alpha=float(m.pop("alpha", 0.05)),
            group_averages={str(k): [str(g) for g in v] for k, v in ga.items()} if ga else None,
            primary_pool=str(m.pop("primary_pool", "standard")),
            ablation_condition=str(m.pop("ablation_condition", "declared")),
            extra=m,
        )


# --------------------------------------------------------------------------- loading


def validate_runs(df: pl.DataFrame, source: str | Path = "runs table") -> pl.DataFrame:
    """Validate against :class:`schemas.RunsTable` and the per-type flag columns."""
    out = schemas.validate(df, schemas.RunsTable, source)
    schemas.check_runs_type_columns(out, str(source))
    return out


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


# --------------------------------------------------------------------------- primitives


def derive_rng(seed: int, *labels: str) -> np.random.Generator:
    """A generator for one estimate: ``default_rng([seed, crc32(label) ...])``."""
    return np.random.default_rng([int(seed), *(zlib.crc32(lab.encode("utf-8")) for lab in labels)])


def _chunks(resamples: int, n: int) -> list[int]:
    rows = max(1, CHUNK_ELEMENTS // max(n, 1))
    return [min(rows, resamples - s) for s in range(0, resamples, rows)]


def bootstrap_means(values: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Means of ``resamples`` resamples with replacement of ``values`` (shape ``(B,)``).

    Equivalent to ``values[rng.integers(0, n, size=(B, n))].mean(axis=1)``, drawn in chunks.
    Empty input gives all-NaN.
    """
    v = np.asarray(values, dtype=float)
    n = v.size
    if n == 0:
        return np.full(resamples, np.nan)
    parts = [v[rng.integers(0, n, size=(rows, n))].mean(axis=1) for rows in _chunks(resamples, n)]
    return np.concatenate(parts)


def percentile_ci(draws: np.ndarray, alpha: float = 0.05) -> tuple[float | None, float | None]:
    """Percentile interval of the finite draws; ``(None, None)`` when there are none."""
    d = np.asarray(draws, dtype=float)
    d = d[np.isfinite(d)]
    if d.size == 0:
        return None, None
    lo, hi = np.percentile(d, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return float(lo), float(hi)


def bootstrap_mean_ci(
    values: np.ndarray, resamples: int, rng: np.random.Generator, alpha: float = 0.05
) -> tuple[float | None, float | None]:
    """Percentile bootstrap interval of the mean of ``values``."""
    if np.asarray(values).size == 0:
        return None, None
    return percentile_ci(bootstrap_means(values, resamples, rng), alpha)


def holm(pvalues: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm step-down adjusted p-values (same order as the input)."""
    p = np.asarray(pvalues, dtype=float)
    m = p.size
    if m == 0:
        return p.copy()
    order = np.argsort(p, kind="stable")
    stepped = (m - np.arange(m)) * p[order]
    adj_sorted = np.minimum(np.maximum.accumulate(stepped), 1.0)
    out = np.empty(m)
    out[order] = adj_sorted
    return out


def chi2_independence(table: np.ndarray) -> dict[str, Any]:
    """Pearson chi-square test of independence (no continuity correction).

    Rows and columns with a zero total are dropped first. Returns ``statistic, dof, p`` (null
    with a ``reason`` when fewer than two rows or columns remain).
    """
    t = np.asarray(table, dtype=float)
    t = t[t.sum(axis=1) > 0]
    if t.size:
        t = t[:, t.sum(axis=0) > 0]
    n = float(t.sum()) if t.size else 0.0
    if t.ndim != 2 or t.shape[0] < 2:
        return {"statistic": None, "dof": None, "p": None, "reason": "fewer than two models with tool calls"}
    if t.shape[1] < 2:
        return {"statistic": None, "dof": None, "p": None, "reason": "no variation: every call falls in one category"}
    expected = np.outer(t.sum(axis=1), t.sum(axis=0)) / n
    stat = float(((t - expected) ** 2 / expected).sum())
    dof = (t.shape[0] - 1) * (t.shape[1] - 1)
    return {"statistic": stat, "dof": int(dof), "p": float(sps.chi2.sf(stat, dof)), "reason": None}


def kruskal_wallis(samples: Sequence[np.ndarray]) -> dict[str, Any]:
    """Kruskal-Wallis H test with the tie correction (empty samples are dropped)."""
    groups = [np.asarray(s, dtype=float) for s in samples if np.asarray(s).size > 0]
    n = int(sum(g.size for g in groups))
    if len(groups) < 2:
        return {"H": None, "p": None, "n": n, "reason": "fewer than two models with a defined csr"}
    pooled = np.concatenate(groups)
    ranks = sps.rankdata(pooled)
    _, counts = np.unique(pooled, return_counts=True)
    tie = 1.0 - float((counts**3 - counts).sum()) / (n**3 - n) if n > 1 else 0.0
    if tie <= 0.0:
        return {"H": None, "p": None, "n": n, "reason": "all values are identical"}
    bounds = np.cumsum([0] + [g.size for g in groups])
    rank_sums = np.add.reduceat(ranks, bounds[:-1])
    sizes = np.diff(bounds)
    h = (12.0 / (n * (n + 1)) * float((rank_sums**2 / sizes).sum()) - 3.0 * (n + 1)) / tie
    return {"H": h, "p": float(sps.chi2.sf(h, len(groups) - 1)), "n": n, "reason": None}


def fisher_exact_2x2(tables: np.ndarray) -> np.ndarray:
    """Two-sided Fisher exact p-values of many 2x2 tables at once (shape ``(m, 2, 2)``).

    p = total hypergeometric probability of the tables (same margins) no more likely than the
    observed one, with a relative tolerance of 1e-7 for ties in probability.
    """
    t = np.asarray(tables, dtype=np.int64).reshape(-1, 2, 2)
    if t.shape[0] == 0:
        return np.empty(0)
    a = t[:, 0, 0]
    row1 = t[:, 0].sum(axis=1)
    col1 = t[:, :, 0].sum(axis=1)
    total = t.sum(axis=(1, 2))
    lo = np.maximum(0, row1 + col1 - total)
    hi = np.minimum(row1, col1)
    width = int((hi - lo).max()) + 1
    x = lo[:, None] + np.arange(width)[None, :]
    valid = x <= hi[:, None]
    xs = np.where(valid, x, lo[:, None])

    def logpmf(k: np.ndarray) -> np.ndarray:
        # log C(col1, k) + log C(total - col1, row1 - k) - log C(total, row1)
        r, c, n = row1[:, None], col1[:, None], total[:, None]
        return (
            _log_comb(c, k) + _log_comb(n - c, r - k) - _log_comb(n, r)
        )

    lp = logpmf(xs)
    lp_obs = logpmf(a[:, None])
    keep = valid & (lp <= lp_obs + math.log1p(_FISHER_RTOL))
    p = np.where(keep, np.exp(lp), 0.0).sum(axis=1)
    return np.minimum(p, 1.0)


def _log_comb(n: np.ndarray, k: np.ndarray) -> np.ndarray:
    n = np.asarray(n, dtype=float)
    k = np.asarray(k, dtype=float)
    return special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)


def cohens_d(a: np.ndarray, b: np.ndarray) -> float | None:
    """``(mean(a) - mean(b)) / pooled SD`` (ddof 1); null when undefined."""
    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    if x.size < 2 or y.size < 2:
        return None
    pooled = ((x.size - 1) * x.var(ddof=1) + (y.size - 1) * y.var(ddof=1)) / (x.size + y.size - 2)
    if pooled <= 0:
        return None
    return float((x.mean() - y.mean()) / math.sqrt(pooled))


def _spearman_from_counts(counts: np.ndarray) -> np.ndarray:
    """Spearman rho (tie-averaged ranks) from joint counts ``(B, K, L)`` of value cells."""
    c = counts.astype(float)
    cx = c.sum(axis=2)
    cy = c.sum(axis=1)
    total = cx.sum(axis=1)
    mid = (total + 1.0) / 2.0
    rx = np.cumsum(cx, axis=1) - cx + (cx + 1.0) / 2.0 - mid[:, None]
    ry = np.cumsum(cy, axis=1) - cy + (cy + 1.0) / 2.0 - mid[:, None]
    sxy = np.einsum("bkl,bk,bl->b", c, rx, ry)
    sxx = (cx * rx**2).sum(axis=1)
    syy = (cy * ry**2).sum(axis=1)
    denom = np.sqrt(sxx * syy)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.where(denom > 0, sxy / np.where(denom > 0, denom, 1.0), np.nan)
    return np.clip(rho, -1.0, 1.0)


def _cell_table(x: np.ndarray, y: np.ndarray, clusters: np.ndarray) -> tuple[np.ndarray, int, int]:
    """Per cluster, the count of observations in each (distinct x, distinct y) cell."""
    _, xi = np.unique(x, return_inverse=True)
    _, yi = np.unique(y, return_inverse=True)
    _, ci = np.unique(clusters, return_inverse=True)
    k = int(xi.max()) + 1
    ll = int(yi.max()) + 1
    g = int(ci.max()) + 1
    flat = ci * (k * ll) + xi * ll + yi
    table = np.bincount(flat, minlength=g * k * ll).reshape(g, k * ll)
    return table, k, ll


def cluster_bootstrap_spearman(
    x: np.ndarray, y: np.ndarray, clusters: np.ndarray, resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """Spearman rho of ``resamples`` cluster-bootstrap resamples (whole clusters, with replacement).

    Each resample draws ``G`` cluster indices (``rng.integers(0, G, size=(B, G))``) and stacks
    the chosen clusters' observations. Vectorised exactly: the rank of a value in a resample
    depends only on how many times each (x, y) value cell is drawn, so per resample the cell
    counts ``W @ T`` (cluster multiplicities x per-cluster cell counts) give the tie-averaged
    ranks and the rank correlation. Resamples where x or y is constant give NaN.
    """
    table, k, ll = _cell_table(np.asarray(x), np.asarray(y), np.asarray(clusters))
    g = table.shape[0]
    out: list[np.ndarray] = []
    for rows in _chunks(resamples, g):
        idx = rng.integers(0, g, size=(rows, g))
        flat = (idx + (np.arange(rows) * g)[:, None]).ravel()
        weights = np.bincount(flat, minlength=rows * g).reshape(rows, g).astype(float)
        counts = (weights @ table).reshape(rows, k, ll)
        out.append(_spearman_from_counts(counts))
    return np.concatenate(out) if out else np.empty(0)


def spearman(x: np.ndarray, y: np.ndarray) -> tuple[float | None, float | None]:
    """Spearman rho with the t-approximation p-value (as ``scipy.stats.spearmanr``)."""
    xv = np.asarray(x, dtype=float)
    yv = np.asarray(y, dtype=float)
    n = xv.size
    if n < 3:
        return None, None
    table, k, ll = _cell_table(xv, yv, np.zeros(n, dtype=np.int64))
    rho = float(_spearman_from_counts(table.reshape(1, k, ll))[0])
    if not math.isfinite(rho):
        return None, None
    if abs(rho) >= 1.0:
        return rho, 0.0
    t = rho * math.sqrt((n - 2) / ((1.0 - rho) * (1.0 + rho)))
    return rho, float(2.0 * sps.t.sf(abs(t), n - 2))


# --------------------------------------------------------------------------- per-model metrics


def _model_metrics(df: pl.DataFrame) -> pl.DataFrame:
    """One row per (condition, model) with every per-model metric (error rows already removed)."""
    trapped_rec = (pl.col("trapped") & pl.col("recovered").fill_null(False)).sum()
    n_trapped = pl.col("trapped").sum()
    aggs: list[pl.Expr] = [
        pl.col("group").first(),
        pl.len().alias("n_runs"),
        pl.col("csr").mean().alias("csr"),
        pl.col("csr").count().alias("n_csr"),
        (pl.col("tool_calls") == 0).sum().alias("n_zero_call"),
        pl.col("success").cast(pl.Float64).mean().alias("tsr"),
        pl.col("success").count().alias("n_judged"),
        n_trapped.alias("recovery_n"),
        pl.when(n_trapped > 0).then(trapped_rec / n_trapped).alias("recovery"),
        pl.col("canary_calls").sum().alias("canary_calls"),
        pl.col("tool_calls").sum().alias("tool_calls"),
    ]
    for t in CANARY_TYPES:
        present = pl.col(f"present_{t}").sum()
        hits = (pl.col(f"present_{t}") & pl.col(f"trapped_{t}")).sum()
        aggs += [
            present.alias(f"n_present_{t}"),
            hits.alias(f"n_trapped_{t}"),
            pl.when(present > 0).then(hits / present).alias(f"rate_{t}"),
        ]
    return df.group_by("condition", "model").agg(aggs).sort("condition", "model")


def _num(x: Any) -> Any:
    """JSON-safe scalar: NaN/inf -> None, numpy scalars -> Python."""
    if x is None:
        return None
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return finite_or_none(float(x))
    return x


def _clean(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return _num(obj)


def _conditions(df: pl.DataFrame) -> list[str]:
    present = set(df.get_column("condition").unique().to_list())
    return [c for c in CONDITIONS if c in present]


def _by_model(frame: pl.DataFrame, key: str = "model") -> dict[str, dict[str, Any]]:
    return {row[key]: row for row in frame.to_dicts()}


# --------------------------------------------------------------------------- compute_all


def compute_all(
    df: pl.DataFrame,
    cfg: StatsConfig | Mapping[str, Any] | None = None,
    *,
    source: str = "runs table",
    validate: bool = True,
    timings: dict[str, float] | None = None,
) -> dict[str, Any]:
    """Every statistic of the per-run table as a JSON-ready dict (layout: module docstring).

    ``cfg`` is a :class:`StatsConfig` or the ``stats`` mapping of params.yaml. The table is
    validated first unless ``validate`` is false (it already was, e.g. by :func:`load_runs`).
    When ``timings`` is given it receives the seconds spent in each part (benchmarks).
    """
    config = cfg if isinstance(cfg, StatsConfig) else StatsConfig.from_mapping(cfg)
    clock = _Clock(timings)
    if validate:
        df = validate_runs(df, source)
        clock.lap("validate")
    n_error = int(df.get_column("error").sum())
    ok = df.filter(~pl.col("error"))
    prim = ok.filter(pl.col("pool") == config.primary_pool)
    conds = _conditions(prim)
    metrics = _model_metrics(prim)
    model_groups = dict(
        ok.group_by("model").agg(pl.col("group").first()).sort("model").iter_rows()
    )
    per_cond = {c: _by_model(metrics.filter(pl.col("condition") == c)) for c in conds}
    clock.lap("per_model_metrics")

    result: dict[str, Any] = {}
    result["csr_ci"] = _csr_ci(prim, per_cond, config)
    clock.lap("csr_ci_bootstrap")
    result["chi2"] = {c: _chi2(per_cond[c]) for c in conds}
    clock.lap("chi2")
    result["kruskal"] = _kruskal(prim, conds)
    clock.lap("kruskal")
    result["fisher_holm"] = {c: _fisher_holm(per_cond[c], config.alpha) for c in conds}
    clock.lap("fisher_holm")
    result["spearman"] = _spearman_all(prim, conds, config)
    clock.lap("spearman_cluster_bootstrap")
    result["tsr_delta"] = _tsr_delta(prim, config)
    clock.lap("tsr_delta_bootstrap")
    result["csr_by_difficulty"] = _csr_by_difficulty(prim, conds)
    result["recovery_outcome"] = _recovery_outcome(prim, conds)
    result["ablation"] = _ablation(ok, model_groups, config)
    result["trap_rates"] = {
        c: {m: {t: row[f"rate_{t}"] for t in CANARY_TYPES} for m, row in per_cond[c].items()}
        for c in conds
    }
    result["trap_rate_averages"] = {
        c: _trap_rate_averages(per_cond[c], model_groups, config.group_averages) for c in conds
    }
    result["recovery"] = {
        c: {m: {"rate": row["recovery"], "n": row["recovery_n"]} for m, row in per_cond[c].items()}
        for c in conds
    }
    result["tsr"] = {c: {m: row["tsr"] for m, row in per_cond[c].items()} for c in conds}
    result["model_groups"] = model_groups
    result["excluded_error_runs"] = n_error
    result["meta"] = {
        "resamples": config.resamples,
        "seed": config.seed,
        "alpha": config.alpha,
        "primary_pool": config.primary_pool,
        "ablation_condition": config.ablation_condition,
        "n_runs": ok.height,
        "n_runs_primary": prim.height,
        "conditions": conds,
        "models": sorted(model_groups),
        "canary_types": list(CANARY_TYPES),
    }
    clock.lap("descriptives")
    out = _clean(result)
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


def _csr_ci(prim: pl.DataFrame, per_cond: dict[str, dict[str, dict[str, Any]]], config: StatsConfig) -> dict[str, Any]:
    values = (
        prim.filter(pl.col("csr").is_not_null())
        .group_by("condition", "model")
        .agg(pl.col("csr"))
    )
    samples = {(r["condition"], r["model"]): np.asarray(r["csr"], dtype=float) for r in values.to_dicts()}
    out: dict[str, Any] = {}
    for c, rows in per_cond.items():
        out[c] = {}
        for m, row in rows.items():
            v = samples.get((c, m), np.empty(0))
            lo, hi = bootstrap_mean_ci(v, config.resamples, derive_rng(config.seed, "csr", c, m), config.alpha)
            out[c][m] = {
                "csr": row["csr"], "lo": lo, "hi": hi, "n": int(v.size),
                "n_zero_call": row["n_zero_call"], "n_runs": row["n_runs"],
            }
    return out


def _chi2(rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    models = sorted(rows)
    table = np.array([[rows[m]["canary_calls"], rows[m]["tool_calls"] - rows[m]["canary_calls"]] for m in models], dtype=float).reshape(-1, 2)
    res = chi2_independence(table)
    res["n_calls"] = int(table.sum())
    res["n_models"] = int((table.sum(axis=1) > 0).sum())
    return res


def _kruskal(prim: pl.DataFrame, conds: list[str]) -> dict[str, Any]:
    grouped = (
        prim.filter(pl.col("csr").is_not_null())
        .group_by("condition", "model")
        .agg(pl.col("csr"))
        .sort("condition", "model")
    )
    out: dict[str, Any] = {}
    for c in conds:
        samples = [np.asarray(s, dtype=float) for s in grouped.filter(pl.col("condition") == c).get_column("csr").to_list()]
        res = kruskal_wallis(samples)
        res["n_models"] = len(samples)
        out[c] = res
    return out


def _fisher_holm(rows: dict[str, dict[str, Any]], alpha: float) -> dict[str, Any]:
    models = sorted(rows)
    meta: list[dict[str, Any]] = []
    tables: list[list[list[int]]] = []
    for t in CANARY_TYPES:
        for a, b in combinations(models, 2):
            a_n, b_n = rows[a][f"n_present_{t}"], rows[b][f"n_present_{t}"]
            if a_n == 0 and b_n == 0:
                continue
            a_k, b_k = rows[a][f"n_trapped_{t}"], rows[b][f"n_trapped_{t}"]
            meta.append({"type": t, "model_a": a, "model_b": b, "a_trapped": a_k, "a_n": a_n, "b_trapped": b_k, "b_n": b_n})
            tables.append([[a_k, a_n - a_k], [b_k, b_n - b_k]])
    reason = None
    if len(models) < 2:
        reason = "fewer than two models"
    elif not meta:
        reason = "no canary type was present"
    p = fisher_exact_2x2(np.array(tables, dtype=np.int64).reshape(-1, 2, 2))
    p_holm = holm(p)
    for entry, pv, ph in zip(meta, p, p_holm, strict=True):
        entry.update(p=float(pv), p_holm=float(ph), significant=bool(ph < alpha))
    return {
        "alpha": alpha,
        "n_contrasts": len(meta),
        "n_significant": int(sum(e["significant"] for e in meta)),
        "reason": reason,
        "contrasts": meta,
    }


def _spearman_all(prim: pl.DataFrame, conds: list[str], config: StatsConfig) -> dict[str, Any]:
    both = prim.filter(pl.col("csr").is_not_null() & pl.col("success").is_not_null())
    out: dict[str, Any] = {}
    for c in conds:
        sub = both.filter(pl.col("condition") == c)
        x = sub.get_column("csr").to_numpy().astype(float)
        y = sub.get_column("success").cast(pl.Float64).to_numpy()
        clusters = sub.get_column("task_id").to_numpy()
        n_clusters = int(sub.get_column("task_id").n_unique())
        entry: dict[str, Any] = {"rho": None, "p": None, "lo": None, "hi": None, "n": sub.height, "clusters": n_clusters, "reason": None}
        if sub.height < 3:
            entry["reason"] = "fewer than three runs with both csr and a verdict"
        elif np.unique(x).size < 2 or np.unique(y).size < 2:
            entry["reason"] = "csr or success is constant"
        else:
            entry["rho"], entry["p"] = spearman(x, y)
            draws = cluster_bootstrap_spearman(x, y, clusters, config.resamples, derive_rng(config.seed, "spearman", c))
            entry["lo"], entry["hi"] = percentile_ci(draws, config.alpha)
        out[c] = entry
    return out


def _tsr_delta(prim: pl.DataFrame, config: StatsConfig) -> dict[str, Any]:
    judged = prim.filter(pl.col("success").is_not_null()).group_by("condition", "model").agg(pl.col("success").cast(pl.Float64))
    samples = {(r["condition"], r["model"]): np.asarray(r["success"], dtype=float) for r in judged.to_dicts()}
    models = sorted({m for _, m in samples})
    out: dict[str, Any] = {}
    for c in ("declared", "full"):
        if not any(k[0] == c for k in samples):
            continue
        out[c] = {}
        for m in models:
            base = samples.get(("baseline", m), np.empty(0))
            cond = samples.get((c, m), np.empty(0))
            entry: dict[str, Any] = {"delta": None, "lo": None, "hi": None, "cohens_d": None, "n_base": int(base.size), "n_cond": int(cond.size)}
            if base.size and cond.size:
                rng = derive_rng(config.seed, "tsr_delta", c, m)
                draws = bootstrap_means(base, config.resamples, rng) - bootstrap_means(cond, config.resamples, rng)
                entry["delta"] = float(base.mean() - cond.mean())
                entry["lo"], entry["hi"] = percentile_ci(draws, config.alpha)
                entry["cohens_d"] = cohens_d(base, cond)
            if ("baseline", m) in samples or (c, m) in samples:
                out[c][m] = entry
    return out


def _csr_by_difficulty(prim: pl.DataFrame, conds: list[str]) -> dict[str, Any]:
    agg = prim.group_by("condition", "model", "difficulty").agg(pl.col("csr").mean())
    lookup = {(r["condition"], r["model"], r["difficulty"]): r["csr"] for r in agg.to_dicts()}
    models = sorted(set(prim.get_column("model").to_list()))
    out: dict[str, Any] = {}
    for c in conds:
        present = {m for (cc, m, _) in lookup if cc == c}
        out[c] = {m: {d: lookup.get((c, m, d)) for d in DIFFICULTIES} for m in models if m in present}
    return out


def _outcome_entry(frame: pl.DataFrame) -> dict[str, Any]:
    rows = {r["rec"]: r for r in frame.to_dicts()}
    return {
        key: {"n": rows[flag]["n"] if flag in rows else 0, "success_rate": rows[flag]["rate"] if flag in rows else None}
        for key, flag in (("recovered", True), ("not_recovered", False))
    }


def _recovery_outcome(prim: pl.DataFrame, conds: list[str]) -> dict[str, Any]:
    trapped = prim.filter(pl.col("trapped") & pl.col("success").is_not_null()).with_columns(
        rec=pl.col("recovered").fill_null(False)
    )
    agg_exprs = [pl.len().alias("n"), pl.col("success").cast(pl.Float64).mean().alias("rate")]
    per_model = trapped.group_by("condition", "model", "rec").agg(agg_exprs)
    pooled = trapped.group_by("condition", "rec").agg(agg_exprs)
    both = trapped.filter(pl.col("condition").is_in(["declared", "full"]))
    both_model = both.group_by("model", "rec").agg(agg_exprs)
    both_pooled = both.group_by("rec").agg(agg_exprs)
    models = sorted(set(prim.get_column("model").to_list()))
    out: dict[str, Any] = {}
    for c in conds:
        pm = per_model.filter(pl.col("condition") == c)
        out[c] = {m: _outcome_entry(pm.filter(pl.col("model") == m)) for m in models}
        out[c][POOLED] = _outcome_entry(pooled.filter(pl.col("condition") == c))
    if any(c in conds for c in ("declared", "full")):
        out[DECLARED_FULL] = {m: _outcome_entry(both_model.filter(pl.col("model") == m)) for m in models}
        out[DECLARED_FULL][POOLED] = _outcome_entry(both_pooled)
    return out


def _ablation(ok: pl.DataFrame, model_groups: dict[str, str], config: StatsConfig) -> dict[str, Any]:
    other = next(p for p in POOLS if p != config.primary_pool)
    cond = config.ablation_condition
    sub = ok.filter(pl.col("condition") == cond)
    pools_present = set(sub.get_column("pool").unique().to_list())
    out: dict[str, Any] = {"condition": cond, "primary_pool": config.primary_pool, "other_pool": other, "note": None, "models": {}, "groups": {}}
    missing = [p for p in POOLS if p not in pools_present]
    if missing:
        out["note"] = f"no {' or '.join(missing)} pool runs in the {cond} condition: ablation not available"
        return out
    agg = sub.group_by("model", "pool").agg(pl.col("csr").mean())
    lookup = {(r["model"], r["pool"]): r["csr"] for r in agg.to_dicts()}
    for m in sorted({k[0] for k in lookup}):
        s, t = lookup.get((m, "standard")), lookup.get((m, "subtle"))
        out["models"][m] = {"standard": s, "subtle": t, "delta": (t - s) if s is not None and t is not None else None}
    groups: dict[str, dict[str, list[float]]] = {}
    for m, entry in out["models"].items():
        g = groups.setdefault(model_groups.get(m, "?"), {"standard": [], "subtle": []})
        for p in POOLS:
            if entry[p] is not None:
                g[p].append(entry[p])
    out["groups"] = {g: {p: (float(np.mean(v)) if v else None) for p, v in d.items()} for g, d in sorted(groups.items())}
    return out


def _trap_rate_averages(
    rows: dict[str, dict[str, Any]], model_groups: dict[str, str], averages: dict[str, list[str]] | None
) -> dict[str, Any]:
    if averages is None:
        averages = {g: [g] for g in sorted(set(model_groups.values()))}
    out: dict[str, Any] = {}
    for name, groups in averages.items():
        members = sorted(m for m in rows if model_groups.get(m) in set(groups))
        rates: dict[str, float | None] = {}
        for t in CANARY_TYPES:
            vals = [rows[m][f"rate_{t}"] for m in members if rows[m][f"rate_{t}"] is not None]
            rates[t] = float(np.mean(vals)) if vals else None
        out[name] = {"groups": list(groups), "models": members, "rates": rates}
    return out


# --------------------------------------------------------------------------- tables and files

_TABLE13_COLUMNS = ["model", "tier", "csr", "csr_lo", "csr_hi", "tsr", "recovery", "recovery_n", "runs"]

#: Figure id -> tidy CSV written next to stats.json (DVC plots point at these).
FIGURE_DATA_FILES: dict[str, str] = {
    "fig2": "fig2_csr.csv",
    "fig4": "fig4_csr_by_difficulty.csv",
    "fig5": "fig5_trap_rates.csv",
    "fig6": "fig6_profiles.csv",
    "fig7": "fig7_tsr_delta.csv",
    "fig8": "fig8_ablation.csv",
    "fig9": "fig9_recovery_outcome.csv",
}


def _table13(result: dict[str, Any], condition: str) -> pl.DataFrame:
    groups = result.get("model_groups", {})
    ci = result.get("csr_ci", {}).get(condition, {})
    rows = [
        {
            "model": m,
            "tier": groups.get(m),
            "csr": e["csr"],
            "csr_lo": e["lo"],
            "csr_hi": e["hi"],
            "tsr": result["tsr"][condition].get(m),
            "recovery": result["recovery"][condition][m]["rate"],
            "recovery_n": result["recovery"][condition][m]["n"],
            "runs": e["n_runs"],
        }
        for m, e in ci.items()
    ]
    schema = {"model": pl.String, "tier": pl.String, "csr": pl.Float64, "csr_lo": pl.Float64, "csr_hi": pl.Float64,
              "tsr": pl.Float64, "recovery": pl.Float64, "recovery_n": pl.Int64, "runs": pl.Int64}
    return pl.DataFrame(rows, schema=schema, orient="row").sort(["csr", "model"], nulls_last=True)


def _table2(result: dict[str, Any], condition: str = "declared") -> pl.DataFrame:
    groups = result.get("model_groups", {})
    rates = result.get("trap_rates", {}).get(condition, {})
    rows: list[dict[str, Any]] = [{"model": m, "tier": groups.get(m), **r} for m, r in sorted(rates.items())]
    for name, avg in result.get("trap_rate_averages", {}).get(condition, {}).items():
        rows.append({"model": name, "tier": "average of " + "+".join(avg["groups"]), **avg["rates"]})
    schema: dict[str, Any] = {"model": pl.String, "tier": pl.String, **{t: pl.Float64 for t in CANARY_TYPES}}
    return pl.DataFrame(rows, schema=schema, orient="row")


def tables(result: dict[str, Any]) -> dict[str, pl.DataFrame]:
    """Tables 1-3 as polars frames (Table 1: declared, Table 2: declared trap rates, Table 3: full)."""
    out = {"table1": _table13(result, "declared"), "table2": _table2(result, "declared")}
    out["table3"] = _table13(result, "full")
    return out


def _fmt(x: Any) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    return f"{x:.3f}"


def _markdown(header: list[str], rows: list[list[str]], caption: str) -> str:
    lines = [f"**{caption}**", "", "| " + " | ".join(header) + " |", "|" + "|".join(["---"] * len(header)) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    if not rows:
        lines.append("| " + " | ".join(["n/a"] * len(header)) + " |")
    return "\n".join(lines) + "\n"


def _markdown13(df: pl.DataFrame, caption: str) -> str:
    rows = [
        [
            r["model"], r["tier"] or "n/a",
            f"{_fmt(r['csr'])} [{_fmt(r['csr_lo'])}, {_fmt(r['csr_hi'])}]" if r["csr"] is not None else "n/a",
            _fmt(r["tsr"]), f"{_fmt(r['recovery'])} ({r['recovery_n']})", str(r["runs"]),
        ]
        for r in df.to_dicts()
    ]
    return _markdown(["Model", "Tier", "csr [95% CI]", "tsr", "Rec. (n)", "Runs"], rows, caption)


def _markdown2(df: pl.DataFrame, caption: str) -> str:
    rows = [[r["model"], r["tier"] or "n/a", *(_fmt(r[t]) for t in CANARY_TYPES)] for r in df.to_dicts()]
    return _markdown(["Model", "Tier", *CANARY_TYPES], rows, caption)


def figure_data(result: dict[str, Any]) -> dict[str, pl.DataFrame]:
    """The tidy data behind each figure, keyed like :data:`FIGURE_DATA_FILES`."""
    groups: dict[str, str] = result.get("model_groups", {})
    decl_ci = result.get("csr_ci", {}).get("declared", {})
    fig2 = pl.DataFrame(
        [{"model": m, "group": groups.get(m), "csr": e["csr"], "lo": e["lo"], "hi": e["hi"], "n": e["n"]} for m, e in decl_ci.items()],
        schema={"model": pl.String, "group": pl.String, "csr": pl.Float64, "lo": pl.Float64, "hi": pl.Float64, "n": pl.Int64},
        orient="row",
    )
    fig4 = pl.DataFrame(
        [
            {"model": m, "group": groups.get(m), "difficulty": d, "csr": v}
            for m, by_d in result.get("csr_by_difficulty", {}).get("declared", {}).items()
            for d, v in by_d.items()
        ],
        schema={"model": pl.String, "group": pl.String, "difficulty": pl.String, "csr": pl.Float64},
        orient="row",
    )
    fig5 = pl.DataFrame(
        [
            {"model": m, "group": groups.get(m), "type": t, "rate": r}
            for m, rates in result.get("trap_rates", {}).get("declared", {}).items()
            for t, r in rates.items()
        ],
        schema={"model": pl.String, "group": pl.String, "type": pl.String, "rate": pl.Float64},
        orient="row",
    )
    fig6 = fig5.with_columns(
        axis_index=pl.col("type").replace_strict({t: i for i, t in enumerate(CANARY_TYPES)}, return_dtype=pl.Int64)
    )
    fig7 = pl.DataFrame(
        [
            {"model": m, "group": groups.get(m), "condition": c, **{k: e[k] for k in ("delta", "lo", "hi", "cohens_d", "n_base", "n_cond")}}
            for c, by_m in result.get("tsr_delta", {}).items()
            for m, e in by_m.items()
        ],
        schema={"model": pl.String, "group": pl.String, "condition": pl.String, "delta": pl.Float64, "lo": pl.Float64,
                "hi": pl.Float64, "cohens_d": pl.Float64, "n_base": pl.Int64, "n_cond": pl.Int64},
        orient="row",
    )
    fig8 = pl.DataFrame(
        [
            {"model": m, "group": groups.get(m), "pool": p, "csr": e[p]}
            for m, e in result.get("ablation", {}).get("models", {}).items()
            for p in POOLS
        ],
        schema={"model": pl.String, "group": pl.String, "pool": pl.String, "csr": pl.Float64},
        orient="row",
    )
    fig9 = pl.DataFrame(
        [
            {"scope": "All models (pooled)" if m == POOLED else m, "group": groups.get(m, "pooled"),
             "outcome": k.replace("_", " "), "n": v["n"], "success_rate": v["success_rate"]}
            for m, e in result.get("recovery_outcome", {}).get(DECLARED_FULL, {}).items()
            for k, v in e.items()
        ],
        schema={"scope": pl.String, "group": pl.String, "outcome": pl.String, "n": pl.Int64, "success_rate": pl.Float64},
        orient="row",
    )
    return {"fig2": fig2, "fig4": fig4, "fig5": fig5, "fig6": fig6, "fig7": fig7, "fig8": fig8, "fig9": fig9}


def write_outputs(result: dict[str, Any], out_dir: str | Path) -> list[Path]:
    """Write stats.json, the three tables (CSV + Markdown) and the figure data CSVs."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    def put(name: str, text: str) -> None:
        atomic_write_text(out / name, text)
        written.append(out / name)

    write_json(out / "stats.json", result)
    written.append(out / "stats.json")
    tabs = tables(result)
    captions = {
        "table1": "Table 1: declared condition, sorted by csr (bootstrap 95% CI); Rec. = recovery rate (n trapped runs)",
        "table2": "Table 2: type-specific trap rate (declared); n/a = type never present",
        "table3": "Table 3: full condition, sorted by csr (bootstrap 95% CI); Rec. = recovery rate (n trapped runs)",
    }
    for name, frame in tabs.items():
        put(f"{name}.csv", frame.write_csv())
        md = _markdown2(frame, captions[name]) if name == "table2" else _markdown13(frame, captions[name])
        put(f"{name}.md", md)
    for key, frame in figure_data(result).items():
        put(FIGURE_DATA_FILES[key], frame.write_csv())
    return written


def stats_command(
    runs_path: str,
    out_dir: str,
    *,
    resamples: int = 10000,
    seed: int = 20261130,
    alpha: float = 0.05,
    group_averages: dict[str, list[str]] | None = None,
    primary_pool: str = "standard",
) -> int:
    """``canarykit stats RUNS -o DIR``: read, validate, compute, write. Returns exit status 0."""
    config = StatsConfig(resamples=resamples, seed=seed, alpha=alpha, group_averages=group_averages, primary_pool=primary_pool)
    df = load_runs(runs_path)
    result = compute_all(df, config, source=str(runs_path), validate=False)
    write_outputs(result, out_dir)
    return 0
