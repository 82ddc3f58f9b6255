"""Bootstrap intervals and p-values from resampled draws: percentile and BCa intervals
(Efron 1987; the bias correction from the share of draws below the estimate, the acceleration
from the jackknife), the bootstrap p-value of a difference, :class:`Draws` (the draws of many
estimates with their estimates and jackknives) and the seeded generators the resamplers use.
The resamplers themselves (whole tasks or runs) are in :mod:`._bootstrap`."""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np
from scipy import special

#: ``task_x_item`` (default): tasks and canary items as crossed random factors, small-sample
#: cluster-robust t intervals (:mod:`._crossed`); ``task``: the task bootstrap, BCa;
#: ``run``: the paper's run-level bootstrap, percentile.
BootstrapUnit = Literal["task", "task_x_item", "run"]

#: ``bca`` (bias-corrected and accelerated, the task unit), ``percentile`` (the run unit) or
#: ``cr2_t`` (the ``task_x_item`` unit's cluster-robust t intervals, :mod:`._crossed`).
IntervalMethod = Literal["bca", "percentile", "cr2_t"]

#: Elements (int64 indices) drawn per bootstrap chunk: bounds memory at about 64 MB per chunk.
CHUNK_ELEMENTS = 4_000_000


def derive_rng(seed: int, *labels: str) -> np.random.Generator:
    """A generator for one estimate: ``default_rng([seed, crc32(label) ...])``."""
    return np.random.default_rng([int(seed), *(zlib.crc32(lab.encode("utf-8")) for lab in labels)])


def _chunks(resamples: int, n: int) -> list[int]:
    rows = max(1, CHUNK_ELEMENTS // max(n, 1))
    return [min(rows, resamples - s) for s in range(0, resamples, rows)]


def bootstrap_means(values: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Means of ``resamples`` resamples with replacement of ``values`` (shape ``(B,)``).

    Equivalent to ``values[rng.integers(0, n, size=(B, n))].mean(axis=1)``, drawn in chunks
    (chunking does not change the stream). Empty input gives all-NaN.
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


def column_quantiles(draws: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Quantiles of each column of ``draws`` ``(B, K)`` at its own levels ``(L, K)``.

    numpy's default (``linear``) definition over the finite draws of each column, so with
    the same level for every column it equals ``np.quantile(finite draws, level)``; a column
    without a finite draw gives NaN. Vectorised because BCa asks each column for different
    levels (``np.quantile`` takes one set of levels for all columns).
    """
    d = np.sort(np.asarray(draws, dtype=float), axis=0)  # NaN sort last
    if d.ndim == 1:
        d = d[:, None]
    lev = np.asarray(levels, dtype=float).reshape(-1, d.shape[1])
    n = np.isfinite(d).sum(axis=0)
    last = np.maximum(n - 1, 0)
    h = lev * last
    lo = np.clip(np.floor(h), 0, last).astype(np.int64)
    hi = np.minimum(lo + 1, last)
    t = h - lo
    cols = np.arange(d.shape[1])
    a, b = d[lo, cols], d[hi, cols]
    diff = b - a
    with np.errstate(invalid="ignore"):
        out = np.where(t >= 0.5, b - diff * (1.0 - t), a + diff * t)
    return np.where((n > 0) & np.isfinite(lev), out, np.nan)


def _acceleration(jackknife: np.ndarray) -> np.ndarray:
    """BCa acceleration per column from leave-one-cluster-out values ``(G, K)``:
    ``sum(u^3) / (6 sum(u^2)^1.5)`` with ``u = mean - value`` (undefined values left out)."""
    j = np.asarray(jackknife, dtype=float)
    if j.ndim == 1:
        j = j[:, None]
    ok = np.isfinite(j)
    cnt = ok.sum(axis=0)
    mean = np.where(ok, j, 0.0).sum(axis=0) / np.maximum(cnt, 1)
    u = np.where(ok, mean[None, :] - j, 0.0)
    den = (u**2).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (u**3).sum(axis=0) / (6.0 * np.where(den > 0, den, 1.0) ** 1.5), 0.0)


def _bias(draws: np.ndarray, estimate: np.ndarray) -> np.ndarray:
    """BCa bias correction per column: ``ndtri`` of the share of finite draws below the
    estimate, ties counted half (scipy's convention)."""
    fin = np.isfinite(draws)
    n = fin.sum(axis=0)
    below = (fin & (draws < estimate[None, :])).sum(axis=0)
    at = (fin & (draws <= estimate[None, :])).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return special.ndtri((below + at) / (2.0 * n))


def bca_levels(draws: np.ndarray, estimate: np.ndarray, jackknife: np.ndarray, alpha: float = 0.05) -> np.ndarray:
    """The BCa quantile levels ``(2, K)`` of each column (Efron & Tibshirani 1993, eq. 14.10).

    ``draws`` ``(B, K)`` bootstrap values (NaN: undefined, left out), ``estimate`` ``(K,)``,
    ``jackknife`` ``(G, K)`` leave-one-cluster-out values. ``z0 = ndtri(share of draws below
    the estimate)``, ``a`` the jackknife acceleration, and the levels are
    ``ndtr(z0 + (z0 + z) / (1 - a (z0 + z)))`` at ``z = ndtri(alpha/2), ndtri(1 - alpha/2)``.
    Where BCa is undefined (the estimate outside every draw, ``1 - a (z0 + z) <= 0``) the
    column falls back to the percentile levels ``alpha/2, 1 - alpha/2``.
    """
    d = np.asarray(draws, dtype=float)
    if d.ndim == 1:
        d = d[:, None]
    est = np.atleast_1d(np.asarray(estimate, dtype=float))
    z0 = _bias(d, est)
    acc = _acceleration(jackknife)
    z = special.ndtri(np.array([alpha / 2.0, 1.0 - alpha / 2.0]))[:, None]
    num = z0[None, :] + z
    den = 1.0 - acc[None, :] * num
    with np.errstate(invalid="ignore", divide="ignore"):
        levels = special.ndtr(z0[None, :] + num / den)
    ok = np.isfinite(z0) & np.all(den > 0, axis=0) & np.all(np.isfinite(levels), axis=0)
    pct = np.array([alpha / 2.0, 1.0 - alpha / 2.0])[:, None]
    return np.where(ok[None, :], levels, pct)


def bca_ci(
    draws: np.ndarray, estimate: float, jackknife: np.ndarray, alpha: float = 0.05
) -> tuple[float | None, float | None]:
    """BCa interval of one estimate from its bootstrap draws and jackknife values (see
    :func:`bca_levels`); ``(None, None)`` without a finite draw or estimate."""
    if estimate is None or not math.isfinite(float(estimate)):
        return None, None
    d = np.asarray(draws, dtype=float)[:, None]
    q = column_quantiles(d, bca_levels(d, np.array([float(estimate)]), np.asarray(jackknife, float)[:, None], alpha))
    return finite(q[0, 0]), finite(q[1, 0])


def bootstrap_p(
    draws: np.ndarray, estimate: np.ndarray | float | None = None, jackknife: np.ndarray | None = None, null: float = 0.0
) -> np.ndarray:
    """The smallest alpha at which the bootstrap interval excludes ``null`` (per column).

    The inversion of the interval: with ``p0`` the share of finite draws below ``null``
    (ties half), the interval at level ``1 - alpha`` has ``null`` on its boundary when
    ``alpha = 2 ndtr(-|w|)``, with ``w = ndtri(p0)`` for the percentile interval and, for BCa
    (``estimate`` and ``jackknife`` given), ``w = (ndtri(p0) - z0) / (1 + a (ndtri(p0) - z0))
    - z0``. Every draw on one side of ``null``: 0 (resolution ``1/B``); no finite draw: NaN.
    """
    d = np.asarray(draws, dtype=float)
    if d.ndim == 1:
        d = d[:, None]
    fin = np.isfinite(d)
    n = fin.sum(axis=0)
    below = (fin & (d < null)).sum(axis=0)
    at = (fin & (d <= null)).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        p0 = (below + at) / (2.0 * n)
        q = special.ndtri(p0)
        if estimate is not None and jackknife is not None:
            est = np.atleast_1d(np.asarray(estimate, dtype=float))
            z0 = _bias(d, est)
            acc = _acceleration(jackknife)
            v = q - z0
            den = 1.0 + acc * v
            bca = v / den - z0
            q = np.where(np.isfinite(z0) & (den > 0), bca, q)
        p = np.minimum(1.0, 2.0 * special.ndtr(-np.abs(q)))
    p = np.where((p0 == 0.0) | (p0 == 1.0), 0.0, p)
    return np.where(n > 0, p, np.nan)


class Estimates(Protocol):
    """What every estimate set of a resampler offers: bootstrap :class:`Draws` or the
    ``task_x_item`` unit's :class:`~._crossed.Linearized` estimates."""

    @property
    def estimate(self) -> np.ndarray: ...

    @property
    def k(self) -> int: ...

    def take(self, cols: Sequence[int]) -> Estimates: ...

    def differences(self, pairs: Sequence[tuple[int, int]]) -> Estimates: ...

    def combine(self, weights: np.ndarray) -> Estimates: ...

    def intervals(self, alpha: float) -> tuple[np.ndarray, np.ndarray]: ...

    def p_values(self, null: float = 0.0) -> np.ndarray: ...


@dataclass(frozen=True)
class Draws:
    """The bootstrap of ``K`` estimates: their values, draws and (task unit) jackknife.

    ``estimate`` ``(K,)`` (NaN: undefined), ``values`` ``(B, K)`` bootstrap draws (NaN where a
    resample leaves the estimate undefined), ``jackknife`` ``(G, K)`` leave-one-task-out
    values (None with the run unit), ``method`` the interval it gives.
    """

    estimate: np.ndarray
    values: np.ndarray
    jackknife: np.ndarray | None
    method: IntervalMethod

    @property
    def k(self) -> int:
        return int(self.estimate.size)

    def take(self, cols: Sequence[int]) -> Draws:
        c = np.asarray(cols, dtype=int)
        return Draws(self.estimate[c], self.values[:, c], None if self.jackknife is None else self.jackknife[:, c], self.method)

    def differences(self, pairs: Sequence[tuple[int, int]]) -> Draws:
        """Column ``a`` minus column ``b`` for each pair (draws, estimate and jackknife alike:
        the jackknife of a difference is the difference of the leave-one-out values)."""
        ia = np.array([a for a, _ in pairs], dtype=int)
        ib = np.array([b for _, b in pairs], dtype=int)
        jk = None if self.jackknife is None else self.jackknife[:, ia] - self.jackknife[:, ib]
        return Draws(self.estimate[ia] - self.estimate[ib], self.values[:, ia] - self.values[:, ib], jk, self.method)

    def combine(self, weights: np.ndarray) -> Draws:
        """Rows of ``weights`` ``(K', K)`` times the columns (a group mean, a difference of
        means): draws, estimate and jackknife alike (all are linear in the columns)."""
        w = np.asarray(weights, dtype=float)
        jk = None if self.jackknife is None else self.jackknife @ w.T
        return Draws(w @ self.estimate, self.values @ w.T, jk, self.method)

    @staticmethod
    def concat(parts: Sequence[Draws]) -> Draws:
        """The columns of ``parts`` side by side (same resampler)."""
        jk = None if any(p.jackknife is None for p in parts) else np.concatenate([p.jackknife for p in parts], axis=1)  # type: ignore[misc]
        return Draws(np.concatenate([p.estimate for p in parts]), np.concatenate([p.values for p in parts], axis=1), jk,
                     parts[0].method)

    def levels(self, alpha: float) -> np.ndarray:
        if self.method == "bca" and self.jackknife is not None:
            return bca_levels(self.values, self.estimate, self.jackknife, alpha)
        return np.repeat(np.array([[alpha / 2.0], [1.0 - alpha / 2.0]]), self.k, axis=1)

    def intervals(self, alpha: float) -> tuple[np.ndarray, np.ndarray]:
        """``lo, hi`` ``(K,)`` at level ``1 - alpha`` (NaN where the estimate is undefined)."""
        q = column_quantiles(self.values, self.levels(alpha))
        undefined = ~np.isfinite(self.estimate)
        return np.where(undefined, np.nan, q[0]), np.where(undefined, np.nan, q[1])

    def p_values(self, null: float = 0.0) -> np.ndarray:
        """:func:`bootstrap_p` of every column with this resampler's interval method."""
        if self.method == "bca" and self.jackknife is not None:
            return bootstrap_p(self.values, self.estimate, self.jackknife, null)
        return bootstrap_p(self.values, null=null)


def bootstrap_mean_ci(
    values: np.ndarray, resamples: int, rng: np.random.Generator, alpha: float = 0.05
) -> tuple[float | None, float | None]:
    """Percentile bootstrap interval of the mean of ``values`` (runs resampled independently)."""
    if np.asarray(values).size == 0:
        return None, None
    return percentile_ci(bootstrap_means(values, resamples, rng), alpha)


def finite(x: Any) -> float | None:
    """``x`` as a float, None when it is not finite (NaN, inf): JSON-ready."""
    x = float(x)
    return x if math.isfinite(x) else None
