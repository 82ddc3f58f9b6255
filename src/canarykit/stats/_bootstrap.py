"""Resampling: the study's bootstrap, by whole tasks (default) or by runs (the paper's).

The same 120 tasks recur across seeds, conditions, pools and models, so runs of one task are
correlated; the task is the unit of replication. :class:`TaskBootstrap` draws, once per
study, ``B`` resamples of the task list (``rng.integers(0, G, size=(B, G))``, as
multiplicities ``W``, shape ``(B, G)``) and applies the *same* resampled tasks to every
estimate: a resampled task brings all its runs (every seed, every condition and pool it
appears in). Every statistic here is a mean over runs, so a resample's value is a ratio of
weighted per-task sums, ``(W @ sums) / (W @ counts)``: exact, vectorised, no loop over
resamples, and many estimates share one matrix product (:meth:`TaskBootstrap.draws`).
Because every estimate sees the same resampled tasks, a difference of two estimates
(baseline vs condition, standard vs subtle pool, model a vs model b) is **paired**: each
(task, seed) pair, and every seed of a task, stays together.

**Intervals.** With the task unit, intervals are bias-corrected and accelerated (BCa,
Efron 1987; Efron & Tibshirani 1993, ch. 14) at level ``1 - alpha``: the bias correction
``z0`` is the normal quantile of the share of draws below the estimate (ties count half),
the acceleration ``a`` comes from the leave-one-task-out jackknife, which for a ratio of
per-task sums is exact and closed-form (``(S - s_g) / (N - n_g)``). The plain percentile
interval is only first-order accurate: rates and differences of rates over 120 tasks are
skewed (a rate near 0 or 1, a delta made of a few lured tasks), and measured on simulated
studies the percentile interval of the tsr delta misses on the high side about twice as
often as on the low side (coverage 0.94 over 2,000 studies); BCa balances the two tails
(0.946). Draws where the estimate is undefined (a resample without any run of a side) are
left out: the interval is conditional on the estimate being defined (an estimate offered in
very few tasks has too few clusters for any bootstrap to be reliable; ``clusters`` says how
many tasks carry it).

:class:`RunBootstrap` is the paper's run-level bootstrap, kept for comparison
(``stats.bootstrap_unit: run``): each estimate resamples its own runs independently, with its
own generator ``default_rng([seed, crc32(label) ...])`` (:func:`derive_rng`), the two
sides of a difference are resampled independently, and intervals are plain percentile
intervals (the paper's); Spearman's interval resamples the tasks of its own sample, as the
paper's Appendix E did.

:func:`paired_delta` (one) and :func:`paired_deltas` (many, sharing the matrix products) are
the reusable primitive for a difference of two rates with its interval and a cluster-robust
p-value.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import numpy as np

from ._crossed import FEW_CLUSTERS, FEW_WORDINGS, CrossedResampler, Linearized
from ._intervals import (
    CHUNK_ELEMENTS,
    BootstrapUnit,
    Draws,
    Estimates,
    IntervalMethod,
    _chunks,
    bca_ci,
    bca_levels,
    bootstrap_mean_ci,
    bootstrap_means,
    bootstrap_p,
    column_quantiles,
    derive_rng,
    finite,
    percentile_ci,
)
from ._sample import Sample, sample_of
from ._tests import cohens_h
from ._wald import (
    _cr1_pairs,
    cluster_robust_contrasts,
    cluster_robust_rate,
    cr1_wald,
    rate_p_value,
    rate_tests,
)

__all__ = [
    "CHUNK_ELEMENTS",
    "Estimates",
    "BOOTSTRAP_UNITS",
    "BootstrapUnit",
    "CrossedResampler",
    "Linearized",
    "Draws",
    "IntervalMethod",
    "Resampler",
    "RunBootstrap",
    "Sample",
    "TaskBootstrap",
    "bca_ci",
    "bca_levels",
    "bootstrap_mean_ci",
    "bootstrap_means",
    "bootstrap_p",
    "cluster_bootstrap_spearman",
    "cluster_robust_contrasts",
    "cluster_robust_rate",
    "cr1_wald",
    "rate_p_value",
    "rate_tests",
    "derive_rng",
    "make_resampler",
    "column_quantiles",
    "paired_delta",
    "paired_deltas",
    "percentile_ci",
    "rate_draws",
    "rate_intervals",
    "sample_of",
]

BOOTSTRAP_UNITS: tuple[str, ...] = ("task_x_item", "task", "run")
#: Up to this many task weights (``B * G``) are drawn once and kept (128 MB as float64);
#: beyond it the same stream is re-drawn chunk by chunk for every estimate.
KEEP_ELEMENTS = 16_000_000


# --------------------------------------------------------------------------- resamplers


class Resampler(Protocol):
    """What every estimate asks of the study's bootstrap (see the module docstring)."""

    unit: BootstrapUnit
    resamples: int
    interval_method: IntervalMethod

    def mean_draws(self, label: Sequence[str], samples: Sequence[Sample]) -> np.ndarray:
        """``(B, K)`` bootstrap means of the ``K`` samples (NaN where a resample has no run)."""
        ...

    def draws(self, label: Sequence[str], samples: Sequence[Sample]) -> Estimates:
        """The :class:`Draws` of the ``K`` samples' means (values as :meth:`mean_draws`; the
        ``task_x_item`` unit's :class:`Linearized` means)."""
        ...

    def cluster_sums(self, samples: Sequence[Sample]) -> tuple[np.ndarray, np.ndarray]:
        """Per-cluster sums and counts ``(G, K)`` of the samples (for cluster-robust variances)."""
        ...

    def spearman_draws(self, label: Sequence[str], x: np.ndarray, y: np.ndarray, tasks: np.ndarray) -> np.ndarray:
        """``(B,)`` Spearman rho of x and y over the resamples (see :func:`spearman_draws`)."""
        ...

    def spearman(self, label: Sequence[str], x: np.ndarray, y: np.ndarray, tasks: np.ndarray) -> Draws:
        """The :class:`Draws` of Spearman's rho of x and y (one column)."""
        ...

    def wald(self, samples: Sequence[Sample], pairs: Sequence[tuple[int, int]], draws: Any = None) -> dict[str, np.ndarray]:
        """``delta, se, p, df, clusters, items`` of the cluster-robust t test of each
        ``mean(a) - mean(b) = 0`` (``draws``: the differences' draws, when already made)."""
        ...


class TaskBootstrap:
    """Joint task-clustered resampling of a whole study (one ``W`` for every estimate);
    BCa intervals from the draws and the exact leave-one-task-out jackknife."""

    unit: BootstrapUnit = "task"
    interval_method: IntervalMethod = "bca"

    def __init__(self, tasks: Sequence[str] | np.ndarray, resamples: int, seed: int) -> None:
        self.tasks = np.unique(np.asarray(tasks, dtype=str))
        self.resamples = int(resamples)
        self.seed = int(seed)
        self._kept: list[np.ndarray] | None = None

    @property
    def n_tasks(self) -> int:
        return int(self.tasks.size)

    def codes(self, tasks: np.ndarray) -> np.ndarray:
        """Column of each task label in ``W`` (ValueError for a task outside the study)."""
        t = np.asarray(tasks, dtype=str)
        idx = np.searchsorted(self.tasks, t)
        bad = (idx >= self.tasks.size) | (self.tasks[np.minimum(idx, self.tasks.size - 1)] != t) if t.size else np.zeros(0, bool)
        if np.any(bad):
            raise ValueError(f"task {t[np.argmax(bad)]!r} is not among the study's tasks")
        return idx

    def _draw(self) -> Iterator[np.ndarray]:
        g = self.n_tasks
        rng = derive_rng(self.seed, "tasks")
        for rows in _chunks(self.resamples, g):
            idx = rng.integers(0, g, size=(rows, g))
            flat = (idx + (np.arange(rows) * g)[:, None]).ravel()
            yield np.bincount(flat, minlength=rows * g).reshape(rows, g).astype(float)

    def task_weights(self) -> Iterator[np.ndarray]:
        """Chunks of ``W`` (multiplicity of every study task in each resample); same every call."""
        if self.resamples * max(self.n_tasks, 1) <= KEEP_ELEMENTS:
            if self._kept is None:
                self._kept = list(self._draw())
            return iter(self._kept)
        return self._draw()

    def spearman_draws(self, label: Sequence[str], x: np.ndarray, y: np.ndarray, tasks: np.ndarray) -> np.ndarray:
        return spearman_draws(x, y, self.task_weights(), self.codes(tasks), self.n_tasks)

    def spearman(self, label: Sequence[str], x: np.ndarray, y: np.ndarray, tasks: np.ndarray) -> Draws:
        """Draws of rho over the study's resampled tasks; the jackknife leaves out one task
        (its cells subtracted from the joint counts)."""
        table, k, ll = _cell_table(np.asarray(x), np.asarray(y), self.codes(tasks), self.n_tasks)
        total = table.sum(axis=0)
        values = np.concatenate([spearman_from_counts((w @ table).reshape(w.shape[0], k, ll)) for w in self.task_weights()])
        jack = spearman_from_counts((total[None, :] - table).reshape(self.n_tasks, k, ll))
        est = spearman_from_counts(total.reshape(1, k, ll))
        return Draws(est, values[:, None], jack[:, None], "bca")

    def cluster_sums(self, samples: Sequence[Sample]) -> tuple[np.ndarray, np.ndarray]:
        g = self.n_tasks
        s = np.zeros((g, len(samples)))
        n = np.zeros((g, len(samples)))
        for k, smp in enumerate(samples):
            if smp.n:
                c = self.codes(smp.tasks)
                s[:, k] = np.bincount(c, weights=np.asarray(smp.values, float), minlength=g)
                n[:, k] = np.bincount(c, minlength=g)
        return s, n

    def _ratio_draws(self, s: np.ndarray, n: np.ndarray) -> np.ndarray:
        # one product for sums and counts together: (B, G) @ (G, 2K)
        k = s.shape[1]
        both = np.concatenate([s, n], axis=1)
        parts = []
        for w in self.task_weights():
            prod = w @ both
            num, den = prod[:, :k], prod[:, k:]
            with np.errstate(invalid="ignore", divide="ignore"):
                parts.append(np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan))
        return np.concatenate(parts) if parts else np.empty((0, k))

    def mean_draws(self, label: Sequence[str], samples: Sequence[Sample]) -> np.ndarray:
        return self._ratio_draws(*self.cluster_sums(samples))

    def draws(self, label: Sequence[str], samples: Sequence[Sample]) -> Draws:
        """Means of the samples in one matrix product; the jackknife of a ratio of per-task
        sums is exact: leaving out task g gives ``(S - s_g) / (N - n_g)``."""
        s, n = self.cluster_sums(samples)
        tot_s, tot_n = s.sum(axis=0), n.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            est = np.where(tot_n > 0, tot_s / np.where(tot_n > 0, tot_n, 1.0), np.nan)
            left = tot_n[None, :] - n
            jack = np.where(left > 0, (tot_s[None, :] - s) / np.where(left > 0, left, 1.0), np.nan)
        return Draws(est, self._ratio_draws(s, n), jack, "bca")

    def wald(self, samples: Sequence[Sample], pairs: Sequence[tuple[int, int]], draws: Any = None) -> dict[str, np.ndarray]:
        return _cr1_pairs(self, samples, pairs)


class RunBootstrap:
    """The paper's run-level bootstrap: each estimate resamples its own runs independently;
    percentile intervals (the paper's)."""

    unit: BootstrapUnit = "run"
    interval_method: IntervalMethod = "percentile"

    def __init__(self, resamples: int, seed: int) -> None:
        self.resamples = int(resamples)
        self.seed = int(seed)

    def mean_draws(self, label: Sequence[str], samples: Sequence[Sample]) -> np.ndarray:
        """One generator per ``label``, consumed by the samples in order (so the two sides of
        a difference are independent resamples, as in the paper)."""
        rng = derive_rng(self.seed, *label)
        cols = [bootstrap_means(smp.values, self.resamples, rng) for smp in samples]
        return np.column_stack(cols) if cols else np.empty((self.resamples, 0))

    def cluster_sums(self, samples: Sequence[Sample]) -> tuple[np.ndarray, np.ndarray]:
        """Every run is its own cluster (block-diagonal: a run belongs to one sample)."""
        total = sum(smp.n for smp in samples)
        s = np.zeros((total, len(samples)))
        n = np.zeros((total, len(samples)))
        start = 0
        for k, smp in enumerate(samples):
            s[start : start + smp.n, k] = smp.values
            n[start : start + smp.n, k] = 1.0
            start += smp.n
        return s, n

    def spearman_draws(self, label: Sequence[str], x: np.ndarray, y: np.ndarray, tasks: np.ndarray) -> np.ndarray:
        """The paper already clustered its Spearman interval by task (Appendix E): whole tasks
        of this sample, with this estimate's own generator (the paper's procedure)."""
        return cluster_bootstrap_spearman(x, y, tasks, self.resamples, derive_rng(self.seed, *label))

    def draws(self, label: Sequence[str], samples: Sequence[Sample]) -> Draws:
        est = np.array([np.nan if smp.n == 0 else float(np.mean(smp.values)) for smp in samples])
        return Draws(est, self.mean_draws(label, samples), None, "percentile")

    def spearman(self, label: Sequence[str], x: np.ndarray, y: np.ndarray, tasks: np.ndarray) -> Draws:
        table, k, ll = _cell_table(np.asarray(x), np.asarray(y), np.zeros(np.size(x), dtype=np.int64), 1)
        est = spearman_from_counts(table.reshape(1, k, ll))
        return Draws(est, self.spearman_draws(label, x, y, tasks)[:, None], None, "percentile")

    def wald(self, samples: Sequence[Sample], pairs: Sequence[tuple[int, int]], draws: Any = None) -> dict[str, np.ndarray]:
        return _cr1_pairs(self, samples, pairs)


def make_resampler(unit: BootstrapUnit, tasks: Sequence[str] | np.ndarray, resamples: int, seed: int) -> Resampler:
    """The study's resampler: ``task_x_item`` (default, :class:`CrossedResampler`: tasks and
    items crossed, small-sample cluster-robust t intervals), ``task`` (:class:`TaskBootstrap`
    over ``tasks``, BCa) or ``run`` (:class:`RunBootstrap`, the paper's run-level intervals)."""
    if unit == "task_x_item":
        return CrossedResampler(TaskBootstrap(tasks, resamples, seed))
    if unit == "task":
        return TaskBootstrap(tasks, resamples, seed)
    if unit == "run":
        return RunBootstrap(resamples, seed)
    raise ValueError(f"bootstrap unit must be one of {list(BOOTSTRAP_UNITS)}, got {unit!r}")


def rate_draws(boot: Resampler, items: Sequence[tuple[Sequence[str], Sample]]) -> Estimates:
    """The :class:`Draws` of many rates, one column per ``(label, sample)``: with the task
    unit one matrix product for all of them, with the run unit each label its own generator
    (so a rate's draws do not depend on which other rates are computed); with
    ``task_x_item`` their :class:`Linearized` means."""
    if not items:
        return Draws(np.empty(0), np.empty((boot.resamples, 0)), None, boot.interval_method)
    if boot.unit != "run":
        return boot.draws(items[0][0], [smp for _, smp in items])
    parts = [boot.draws(label, [smp]) for label, smp in items]
    return Draws.concat([p for p in parts if isinstance(p, Draws)])


def rate_intervals(
    boot: Resampler, items: Sequence[tuple[Sequence[str], Sample]], alpha: float
) -> list[tuple[float | None, float | None]]:
    """``(lo, hi)`` of each ``(label, sample)`` rate (None for an empty sample), computed in
    chunks of columns so memory stays bounded (see :func:`rate_draws`)."""
    out: list[tuple[float | None, float | None]] = []
    per = max(1, CHUNK_ELEMENTS // max(2 * boot.resamples, 1))
    for start in range(0, len(items), per):
        chunk = items[start : start + per]
        lo, hi = rate_draws(boot, chunk).intervals(alpha)
        out.extend((finite(a), finite(b)) for a, b in zip(lo, hi, strict=True))
    return out


# --------------------------------------------------------------------------- the paired delta


def _pairs_shared(a: Sample, b: Sample) -> int | None:
    if a.pairs is None or b.pairs is None:
        return None
    return int(np.intersect1d(a.pairs, b.pairs).size)


def paired_delta(
    boot: Resampler,
    a: Sample,
    b: Sample,
    *,
    label: Sequence[str],
    alpha: float = 0.05,
    proportion: bool = True,
) -> dict[str, Any]:
    """The difference of two rates, ``delta = mean(a) - mean(b)``, with its interval and p.

    The reusable primitive for every "with vs without" comparison of the study (baseline vs
    condition tsr, standard vs subtle pool, canary vs matched control, canary before vs after
    the real tool, model a vs model b). Each side keeps its own definition (the mean over its
    own defined runs). With ``task_x_item`` (the default) the difference is one linear
    estimate whose variance treats tasks and, when the samples carry items, their tools and
    wordings as crossed random factors, CR2 with Bell-McCaffrey degrees of freedom
    (:mod:`._crossed`): paired by (task, seed) because both sides share their clusters. With
    the task unit both sides are resampled with the same tasks, so the difference is paired
    by (task, seed) and clustered by task, and the interval is BCa (the jackknife of the
    difference leaves out one task on both sides); with the run unit they are resampled
    independently and the interval is the percentile interval (the paper's). ``label``
    names the estimate (it seeds the run-unit generator; the task unit shares the study's
    draws).

    Returns ``a, b, delta, lo, hi`` (interval at ``1 - alpha``), ``p`` (two-sided,
    cluster-robust t test of delta = 0: the interval's own pivot with ``task_x_item``,
    :func:`cluster_robust_contrasts` otherwise; clusters are tasks, or runs with the run
    unit), ``se`` and ``df`` (its degrees of freedom): with :func:`~._crossed.t_p_value` and
    :func:`~._crossed.tost_p` they give one-sided and equivalence tests; ``n_a, n_b`` (runs),
    ``n_pairs`` (pairing keys present on both sides, when the samples carry them),
    ``clusters`` (tasks), ``items``, ``tools`` and ``wordings`` (the item factors behind the
    variance; None with the bootstrap units), ``few_clusters`` (fewer than 30 tasks),
    ``few_wordings`` (a wording factor of fewer than 8 wordings) and, for proportions,
    ``cohens_h``. Undefined numbers are None.
    """
    return paired_deltas(boot, [(label, a, b)], alpha=alpha, proportion=proportion)[0]


def paired_deltas(
    boot: Resampler,
    specs: Sequence[tuple[Sequence[str], Sample, Sample]],
    *,
    alpha: float = 0.05,
    proportion: bool = True,
) -> list[dict[str, Any]]:
    """:func:`paired_delta` of every ``(label, a, b)`` of ``specs``, in order.

    With the task unit the draws, jackknife and cluster sums of all the samples come from one
    matrix product per chunk (the same numbers as one call per difference); with the run unit
    each difference draws from its own generator, as in :func:`paired_delta`.
    """
    out: list[dict[str, Any]] = []
    if boot.unit == "task_x_item":
        out.extend(_deltas_batch(boot, specs, alpha, proportion))
    elif boot.unit == "task":
        per = max(1, CHUNK_ELEMENTS // max(4 * boot.resamples, 1))
        for start in range(0, len(specs), per):
            out.extend(_deltas_batch(boot, specs[start : start + per], alpha, proportion))
    else:
        for spec in specs:
            out.extend(_deltas_batch(boot, [spec], alpha, proportion))
    return out


def _deltas_batch(
    boot: Resampler, specs: Sequence[tuple[Sequence[str], Sample, Sample]], alpha: float, proportion: bool
) -> list[dict[str, Any]]:
    samples = [smp for _, a, b in specs for smp in (a, b)]
    pairs = [(2 * i, 2 * i + 1) for i in range(len(specs))]
    rows: list[dict[str, Any]] = []
    for _, a, b in specs:
        ma, mb = a.mean(), b.mean()
        row: dict[str, Any] = {
            "a": ma, "b": mb, "delta": None, "lo": None, "hi": None, "p": None, "se": None,
            "n_a": a.n, "n_b": b.n, "n_pairs": _pairs_shared(a, b), "clusters": 0, "df": None, "items": None, "tools": None, "wordings": None,
            "few_clusters": True,
        }
        if proportion:
            row["cohens_h"] = cohens_h(ma, mb)
        rows.append(row)
    live = [i for i, (_, a, b) in enumerate(specs) if a.n and b.n]
    if not live:
        return rows
    live_samples = [samples[j] for i in live for j in pairs[i]]
    live_pairs = [(2 * k, 2 * k + 1) for k in range(len(live))]
    d = boot.draws(specs[live[0]][0], live_samples).differences(live_pairs)
    lo, hi = d.intervals(alpha)
    cr = boot.wald(live_samples, live_pairs, d)
    for k, i in enumerate(live):
        r = rows[i]
        r["delta"] = r["a"] - r["b"]
        r["lo"], r["hi"] = finite(lo[k]), finite(hi[k])
        r["p"] = finite(cr["p"][k])
        r["se"] = finite(cr["se"][k])
        r["df"] = finite(cr["df"][k])
        r["clusters"] = int(cr["clusters"][k])
        for key in ("items", "tools", "wordings"):
            r[key] = int(cr[key][k]) if boot.unit == "task_x_item" else None
        r["few_wordings"] = bool(0 < (r["wordings"] or 0) < FEW_WORDINGS) if boot.unit == "task_x_item" else None
        r["few_clusters"] = bool(r["clusters"] < FEW_CLUSTERS)
    return rows


# --------------------------------------------------------------------------- Spearman draws


def _cell_table(x: np.ndarray, y: np.ndarray, codes: np.ndarray, g: int) -> tuple[np.ndarray, int, int]:
    """Per cluster, the count of observations in each (distinct x, distinct y) cell."""
    _, xi = np.unique(x, return_inverse=True)
    _, yi = np.unique(y, return_inverse=True)
    k = int(xi.max()) + 1 if xi.size else 1
    ll = int(yi.max()) + 1 if yi.size else 1
    flat = codes * (k * ll) + xi * ll + yi
    table = np.bincount(flat, minlength=g * k * ll).reshape(g, k * ll)
    return table, k, ll


def spearman_from_counts(counts: np.ndarray) -> np.ndarray:
    """Spearman rho (tie-averaged ranks) from joint counts ``(B, K, L)`` of value cells."""
    c = counts.astype(float)
    cx = c.sum(axis=2)
    cy = c.sum(axis=1)
    total = cx.sum(axis=1)
    mid = (total + 1.0) / 2.0
    rx = np.cumsum(cx, axis=1) - cx + (cx + 1.0) / 2.0 - mid[:, None]
    ry = np.cumsum(cy, axis=1) - cy + (cy + 1.0) / 2.0 - mid[:, None]
    sxy = (np.matmul(c, ry[:, :, None])[:, :, 0] * rx).sum(axis=1)
    sxx = (cx * rx**2).sum(axis=1)
    syy = (cy * ry**2).sum(axis=1)
    denom = np.sqrt(sxx * syy)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.where(denom > 0, sxy / np.where(denom > 0, denom, 1.0), np.nan)
    return np.clip(rho, -1.0, 1.0)


def spearman_draws(
    x: np.ndarray, y: np.ndarray, weights: Iterator[np.ndarray], codes: np.ndarray, n_clusters: int
) -> np.ndarray:
    """Spearman rho of each resample given cluster weight chunks ``(rows, n_clusters)``.

    Exact and vectorised: the rank of a value in a resample depends only on how many times
    each (x, y) value cell is drawn, so per resample the cell counts ``W @ T`` (cluster
    multiplicities x per-cluster cell counts) give the tie-averaged ranks and the rank
    correlation. Resamples where x or y is constant give NaN.
    """
    table, k, ll = _cell_table(np.asarray(x), np.asarray(y), np.asarray(codes), n_clusters)
    out = [spearman_from_counts((w @ table).reshape(w.shape[0], k, ll)) for w in weights]
    return np.concatenate(out) if out else np.empty(0)


def cluster_bootstrap_spearman(
    x: np.ndarray, y: np.ndarray, clusters: np.ndarray, resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """Spearman rho of ``resamples`` cluster-bootstrap resamples (whole clusters, with replacement).

    Each resample draws ``G`` cluster indices (``rng.integers(0, G, size=(B, G))``) and stacks
    the chosen clusters' observations (see :func:`spearman_draws`).
    """
    _, codes = np.unique(np.asarray(clusters), return_inverse=True)
    g = int(codes.max()) + 1 if codes.size else 0

    def draw() -> Iterator[np.ndarray]:
        for rows in _chunks(resamples, g):
            idx = rng.integers(0, g, size=(rows, g))
            flat = (idx + (np.arange(rows) * g)[:, None]).ravel()
            yield np.bincount(flat, minlength=rows * g).reshape(rows, g).astype(float)

    return spearman_draws(x, y, draw(), codes, g)
