"""Small-sample, cluster-robust inference with tasks and canary items as crossed random
factors (``stats.bootstrap_unit: task_x_item``, the default).

Every estimate of the study is a mean over runs (a rate) or a linear combination of such
means (a difference, a group average), so it is the coefficient of a least-squares
regression of the run value on indicators of the samples, and its sampling variance has
a closed form. Two facts decide the interval:

**Runs of one task are correlated, and so are runs offered one canary item.** The same task
recurs across seeds and conditions; the same canary wording (an item: the canary id the run
was offered, which names its tool and wording variant, the runs table's ``item_<T>``) recurs
across tasks. A claim about a type ("M is lured by stale data") should hold for new tasks
*and* new wordings, so both are random factors, crossed. The variance is the two-way
cluster-robust (sandwich) variance of Cameron, Gelbach & Miller (2011):
``V = V_task + V_item - V_task∩item``, each term a one-way cluster-robust variance (the
last clusters by (task, item) cell); only if it is not positive does the larger one-way term
stand in. A rate without items (csr, tsr, recovery) or with a single item is clustered by
task alone. A twin (``control:<id>``) belongs to its canary's item.

**With few tasks, the sandwich is biased down and the normal quantile too small.** Each
one-way term is the CR2 "bias-reduced linearization" of Bell & McCaffrey (2002): each
cluster's residual sum is divided by ``sqrt(1 - n_g / N)`` (its leverage), which makes the
variance unbiased under independent errors (CR1's ``G / (G - 1)`` is the same correction for
equal clusters). The pivot ``(estimate - truth) / se`` is referred to Student's t with the
Bell-McCaffrey degrees of freedom ν: the Satterthwaite approximation of the variance
estimator's distribution under independent working errors (Pustejovsky & Tipton 2018,
closed form below), ``G - 1`` for equal clusters and fewer when a few clusters carry most
runs. For two-way variances the task and item parts combine by Welch-Satterthwaite,
``ν = V² / (V_task² / ν_task + (V_item - V_cell)² / ν_item)``, and when one factor nests in
the other (every task offered one item: the cells are the tasks) the coarser factor's df
alone. Imbens & Kolesár (2016) recommend CR2 with BM degrees of freedom for few clusters.

**Rates near 0 and deltas made of a few tasks are skewed.** The pivot gets Hall's (1992)
monotone skewness correction from the clusters' third moment (:func:`hall`), capped
(:func:`max_skew`) so that one extreme task cannot stretch the interval beyond what an
exact bound gives; the p-values use the same pivot, so an interval at ``1 - alpha``
excludes the null exactly when ``p < alpha``. Simulated, these intervals cover 0.945-0.966
from 8 to 120 tasks with items crossed (docs/statistics.md, "Few tasks, and items as a random factor").

An estimate whose samples are all constant (every run 0, or every run 1, over ``C_b``
tasks) has no sampling variance to show: each sample gets the exact interval for clusters,
``[0, 1 - (alpha/2)^(1/C_b)]`` (the largest rate at which ``C_b`` independent tasks all give
0 with probability ``alpha/2``), combined by the estimate's coefficients (a 0-vs-0 delta:
``[-u_b, u_a]``). A difference with no variance otherwise (every task gives the same
difference) is its own interval.

All of it is vectorised over estimates: each dimension's per-cluster sums are one
``bincount`` over every run of every sample, and the variances and degrees of freedom of
``K`` estimates are a few gathers (one or two samples per estimate) or matrix products. No
resampling: the intervals of the default study cost less than the bootstrap's. Spearman's
rho (not a mean) keeps the task bootstrap (BCa).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy import stats as sps

from ._intervals import BootstrapUnit, Draws, IntervalMethod
from ._sample import Sample

__all__ = [
    "FEW_CLUSTERS",
    "CrossedResampler",
    "Linearized",
    "linearize",
    "hall",
    "hall_inverse",
    "t_p_value",
    "tost_p",
]

#: Below this many tasks an estimate carries ``few_clusters: true``.
FEW_CLUSTERS = 30

Alternative = Literal["two-sided", "greater", "less"]


def hall(t: Any, skew: Any) -> np.ndarray:
    """Hall's (1992) monotone skewness correction of a studentized statistic ``t``:
    ``g(t) = t + a t² + a² t³ / 3 + a / 2`` with ``a = skew / 3``, where ``skew`` is the
    standardized third cumulant of the estimate (:meth:`Linearized.skew`); ``g(T)`` is closer
    to Student's t than ``T`` when the cluster sums are skewed (a rate near 0, a delta made of
    a few strongly affected tasks).

    The cubic flattens at ``t = -1/a``: there every ``t`` maps to about ``-1/(3a)``, so a
    difference twelve standard errors from 0 would read like one three away (p 0.03 instead
    of 0.0005 at 3.5 df). The expansion is a moderate-deviation correction, so it is used up
    to ``t_c = -1/(2a)`` (the point :func:`max_skew` calibrates the intervals' far end to:
    intervals at the study's alpha never reach past it) and continues beyond it one for one
    with ``t``: ``g(t) = g(t_c) + (t - t_c)``. Still monotone, and the tail p-values grow
    smaller with ``|t|`` as they must."""
    a = np.asarray(skew, dtype=float) / 3.0
    x = np.asarray(t, dtype=float)
    return np.where(a * x < -0.5, _cubic(-0.5 / np.where(a != 0, a, 1.0), a) + x + 0.5 / np.where(a != 0, a, 1.0),
                    _cubic(x, a))


def _cubic(x: np.ndarray, a: np.ndarray) -> np.ndarray:
    return x + a * x**2 + a**2 * x**3 / 3.0 + a / 2.0


def max_skew(df: Any) -> np.ndarray:
    """The largest ``|skew|`` :func:`hall` is used with, per degrees of freedom.

    Hall's cubic is flat at ``t = -1/a``: near it the inverse (the interval's far end)
    explodes for a strongly skewed estimate (one task carrying every trapped run gave an
    upper bound of 0.81 for a rate of 0.1 over 10 tasks). ``a = skew / 3`` is capped where
    the inverse at the 97.5% t quantile ``q`` is ``-1/(2a)``, i.e. ``3a(q + a/2) = 7/8``:
    the far end is then at most about 1.75 times the plain t quantile (the same case: 0.50;
    the exact bound for one trapped task in 10 is 0.45), and a skew up to about 0.4, what
    rates and deltas over tens of tasks show, is corrected in full.
    """
    q = sps.t.ppf(0.975, np.maximum(np.asarray(df, dtype=float), 1.0))
    a = (-3.0 * q + np.sqrt(9.0 * q**2 + 5.25)) / 3.0
    return 3.0 * a


def hall_inverse(y: Any, skew: Any) -> np.ndarray:
    """The inverse of :func:`hall` in ``t`` (the cubic's inverse up to ``g(t_c)``, one for one beyond)."""
    a = np.asarray(skew, dtype=float) / 3.0
    y = np.asarray(y, dtype=float)
    safe_a = np.where(a != 0, a, 1.0)
    z = y - a / 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        inv = (np.cbrt(1.0 + 3.0 * a * z) - 1.0) / safe_a
    inv = np.where(np.abs(a) > 1e-12, inv, z)
    t_c = -0.5 / safe_a
    y_c = _cubic(t_c, a)
    beyond = (np.abs(a) > 1e-12) & (np.where(a > 0, y < y_c, y > y_c))
    return np.where(beyond, t_c + (y - y_c), inv)


def t_p_value(estimate: Any, se: Any, df: Any, null: float = 0.0, alternative: Alternative = "two-sided",
              skew: Any = 0.0) -> np.ndarray:
    """p of the cluster-robust t test of ``estimate = null`` (``greater``: H1 estimate > null),
    with Hall's skewness correction when ``skew`` is given (the intervals' own pivot, so the
    interval at ``1 - alpha`` excludes ``null`` exactly when the two-sided p is below alpha).

    Arrays broadcast. ``se == 0`` (no variability): ``p = 0`` when the estimate lies on the
    alternative's side of ``null``, else 1. NaN where the estimate, se or df is undefined.
    """
    est = np.asarray(estimate, dtype=float)
    s = np.asarray(se, dtype=float)
    d = np.maximum(np.asarray(df, dtype=float), 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        g = hall((est - null) / s, skew)
        if alternative == "two-sided":
            p = 2.0 * np.minimum(sps.t.cdf(g, d), sps.t.sf(g, d))
            flat = np.where(np.abs(est - null) > 0, 0.0, 1.0)
        elif alternative == "greater":
            p = sps.t.sf(g, d)
            flat = np.where(est > null, 0.0, 1.0)
        else:
            p = sps.t.cdf(g, d)
            flat = np.where(est < null, 0.0, 1.0)
    p = np.where(np.isfinite(est) & (s == 0), flat, p)
    return np.where(np.isfinite(est) & np.isfinite(s) & np.isfinite(np.asarray(df, dtype=float)), np.minimum(p, 1.0), np.nan)


def tost_p(delta: Any, se: Any, df: Any, margin: float, skew: Any = 0.0) -> np.ndarray:
    """Two one-sided tests (Schuirmann 1987) of ``|delta| < margin``: the larger of the p of
    ``delta > -margin`` and of ``delta < margin`` (cluster-robust t, ``df`` degrees of
    freedom, Hall-corrected with ``skew``). Small: the difference lies within the margin."""
    lower = t_p_value(delta, se, df, -margin, "greater", skew)
    upper = t_p_value(delta, se, df, margin, "less", skew)
    return np.maximum(lower, upper)


# --------------------------------------------------------------------------- one clustering dimension


@dataclass(frozen=True)
class _Dimension:
    """Per cluster (rows) and sample (columns) of one clustering dimension: the CR2-adjusted
    influence sums ``e`` and what the Bell-McCaffrey degrees of freedom need."""

    e: np.ndarray
    """``a_gb (s_gb - r_b n_gb) / N_b`` with ``a_gb = (1 - n_gb / N_b)^(-1/2)``."""
    a2n: np.ndarray
    """``a_gb² n_gb / N_b²``: the squared norm of a cluster's CR2 weight vector."""
    r: np.ndarray
    """``a_gb n_gb / N_b``: the cluster's CR2 weights summed (``X_g' p_g`` per sample)."""
    n: np.ndarray


def _dimension(codes: np.ndarray, base: np.ndarray, values: np.ndarray, n_clusters: int, n_base: int,
               tot_n: np.ndarray, mean: np.ndarray) -> _Dimension:
    flat = codes * n_base + base
    size = n_clusters * n_base
    s = np.bincount(flat, weights=values, minlength=size).reshape(n_clusters, n_base)
    n = np.bincount(flat, minlength=size).reshape(n_clusters, n_base).astype(float)
    big_n = np.where(tot_n > 0, tot_n, 1.0)[None, :]
    share = n / big_n
    # a cluster holding every run of a sample has leverage 1: its residual sum is 0 and the
    # pseudo-inverse of (1 - leverage)^(1/2) gives it weight 0 (Pustejovsky & Tipton 2018)
    with np.errstate(invalid="ignore", divide="ignore"):
        a = np.where(share < 1.0 - 1e-12, 1.0 / np.sqrt(np.maximum(1.0 - share, 1e-300)), 0.0)
    e = a * (s - mean[None, :] * n) / big_n
    return _Dimension(e=e, a2n=a**2 * n / big_n**2, r=a * n / big_n, n=n)


class _Rows:
    """The rows of a coefficient matrix ``(K, B)``, applied to per-cluster arrays ``(J, B)``.

    Most estimates combine one or two samples (a rate, a difference): then each row is two
    (sample, coefficient) pairs and every product is a gather, not a ``(J, B) @ (B, K)``
    matrix product (the power simulation of ``canarykit plan`` has thousands of samples)."""

    def __init__(self, coef: np.ndarray) -> None:
        self.coef = coef
        nz = coef != 0
        self.sparse = bool(coef.size == 0 or nz.sum(axis=1).max() <= 2)
        if self.sparse:
            k = coef.shape[0]
            order = np.argsort(~nz, axis=1, kind="stable")[:, :2] if coef.shape[1] >= 2 else np.zeros((k, 2), dtype=np.int64)
            first = order[:, 0]
            second = np.where(nz[np.arange(k), order[:, 1]] if coef.shape[1] >= 2 else False, order[:, 1], first)
            self.i1, self.i2 = first, second
            self.c1 = coef[np.arange(k), first] if k else np.zeros(0)
            self.c2 = np.where(second != first, coef[np.arange(k), second], 0.0) if k else np.zeros(0)

    def apply(self, x: np.ndarray, power: int = 1) -> np.ndarray:
        """``sum_b c_b^power x_jb`` per row ``(J, K)``."""
        if self.sparse:
            return x[:, self.i1] * self.c1**power + x[:, self.i2] * self.c2**power
        return x @ (self.coef**power).T

    def used(self, n: np.ndarray) -> np.ndarray:
        """Clusters holding runs of a sample a row uses ``(J, K)``."""
        if self.sparse:
            return (n[:, self.i1] > 0) | ((n[:, self.i2] > 0) & (self.c2 != 0))
        return (n @ (self.coef != 0).T.astype(float)) > 0

    def cross(self, r: np.ndarray, inv_n: np.ndarray) -> np.ndarray:
        """``sum_{b,b'} c_b² c_b'² (r'r)_bb'² / (N_b N_b')`` per row."""
        if self.sparse:
            a, b = self.i1, self.i2
            c1, c2 = self.c1**2, self.c2**2
            r11, r22, r12 = (r[:, a] ** 2).sum(axis=0), (r[:, b] ** 2).sum(axis=0), (r[:, a] * r[:, b]).sum(axis=0)
            return (c1**2 * (r11 * inv_n[a]) ** 2 + c2**2 * (r22 * inv_n[b]) ** 2
                    + 2.0 * c1 * c2 * r12**2 * inv_n[a] * inv_n[b])
        c2 = self.coef**2
        z = (r.T @ r) ** 2 * np.outer(inv_n, inv_n)
        return ((c2 @ z) * c2).sum(axis=1)


def _variance(dim: _Dimension, rows: _Rows) -> np.ndarray:
    """``sum_g (sum_b c_b e_gb)²`` for each row."""
    return (rows.apply(dim.e) ** 2).sum(axis=0)


def _third(dim: _Dimension, rows: _Rows) -> np.ndarray:
    """``sum_g (sum_b c_b e_gb)³``: the third cumulant of each estimate's cluster sum."""
    return (rows.apply(dim.e) ** 3).sum(axis=0)


def _bm_df(dim: _Dimension, rows: _Rows, tot_n: np.ndarray) -> np.ndarray:
    """Bell-McCaffrey degrees of freedom of the CR2 variance of each row.

    The variance is ``eps' (sum_g g_g g_g') eps`` under independent working errors, so
    ``ν = tr(Γ)² / ||Γ||_F²`` with ``Γ = G'G = diag(||p_g||²) - Q M Q'`` (``p_g`` the CR2
    weights of cluster g, ``Q_gb = c_b r_gb``, ``M = diag(1 / N_b)``): every term is a sum
    over clusters or a ``B x B`` product, never an ``N x N`` matrix.
    """
    inv_n = 1.0 / np.where(tot_n > 0, tot_n, 1.0)
    d = rows.apply(dim.a2n, 2)  # (G, K): ||p_g||²
    f = rows.apply(dim.r**2 * inv_n[None, :], 2)  # (G, K): (Q M Q')_gg
    tr = d.sum(axis=0) - f.sum(axis=0)
    fro = (d**2).sum(axis=0) - 2.0 * (d * f).sum(axis=0) + rows.cross(dim.r, inv_n)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(fro > 0, tr**2 / np.where(fro > 0, fro, 1.0), np.nan)


def _satterthwaite(parts: Sequence[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Welch-Satterthwaite degrees of freedom of a sum of variance parts ``(V_i, ν_i)``."""
    total = sum(v for v, _ in parts)
    with np.errstate(invalid="ignore", divide="ignore"):
        return total**2 / sum(np.maximum(v, 0.0) ** 2 / nu for v, nu in parts)


# --------------------------------------------------------------------------- the linearized estimates


class Linearized:
    """``K`` estimates, each a linear combination (``coef`` ``(K, B)``) of the means of ``B``
    samples, with their two-way CR2 variances and Bell-McCaffrey degrees of freedom.

    The counterpart of :class:`~._intervals.Draws` for ``task_x_item``: the same
    ``take``/``differences``/``combine``/``intervals``/``p_values``, plus ``se``, ``df``,
    ``clusters`` and ``items``.
    """

    method = "cr2_t"
    values = None
    jackknife = None

    def __init__(self, base: _Base, coef: np.ndarray) -> None:
        self.base = base
        self.coef = np.atleast_2d(np.asarray(coef, dtype=float)).reshape(-1, base.means.size)
        self._stats: dict[str, np.ndarray] | None = None

    @property
    def k(self) -> int:
        return int(self.coef.shape[0])

    @property
    def estimate(self) -> np.ndarray:
        used = self.coef != 0
        undefined = (used & ~np.isfinite(self.base.means)[None, :]).any(axis=1)
        est = np.where(used, self.coef * np.nan_to_num(self.base.means)[None, :], 0.0).sum(axis=1)
        return np.where(undefined | ~used.any(axis=1), np.nan, est)

    def take(self, cols: Sequence[int]) -> Linearized:
        return Linearized(self.base, self.coef[np.asarray(cols, dtype=int)])

    def differences(self, pairs: Sequence[tuple[int, int]]) -> Linearized:
        ia = np.array([a for a, _ in pairs], dtype=int)
        ib = np.array([b for _, b in pairs], dtype=int)
        return Linearized(self.base, self.coef[ia] - self.coef[ib])

    def combine(self, weights: np.ndarray) -> Linearized:
        """Rows of ``weights`` ``(K', K)`` times the estimates (a group mean, a difference of means)."""
        return Linearized(self.base, np.asarray(weights, dtype=float) @ self.coef)

    def _compute(self) -> dict[str, np.ndarray]:
        if self._stats is not None:
            return self._stats
        b, c = self.base, self.coef
        used = c != 0
        rows = _Rows(c)
        v_task = _variance(b.task, rows)
        df_task = _bm_df(b.task, rows, b.tot_n)
        k3 = _third(b.task, rows)
        clusters = rows.used(b.task.n).sum(axis=0)
        bad = clusters < 2
        var, df = v_task, df_task
        n_items = np.zeros(self.k, dtype=np.int64)
        if b.item is not None and b.cell is not None:
            n_items = rows.used(b.item.n).sum(axis=0)
            two_way = ~(used & ~b.has_items[None, :]).any(axis=1) & (n_items >= 2)
            if two_way.any():
                v_item = _variance(b.item, rows)
                v_cell = _variance(b.cell, rows)
                df_item = _bm_df(b.item, rows, b.tot_n)
                v_two = v_task + v_item - v_cell
                # the task part plus what items add; when tasks nest in items (each task
                # always offered the same canary: the cells are the tasks) V_two is V_item
                # and its df are the items' alone (and the reverse)
                cells = rows.used(b.cell.n).sum(axis=0)
                df_two = np.where(cells == clusters, df_item, np.where(
                    cells == n_items, df_task, _satterthwaite([(v_task, df_task), (v_item - v_cell, df_item)])))
                pick_two = two_way & (v_two > 0)
                pick_item = two_way & ~pick_two & (v_item > v_task)
                var = np.where(pick_two, v_two, np.where(pick_item, v_item, v_task))
                df = np.where(pick_two, df_two, np.where(pick_item, df_item, df_task))
                k3_item = _third(b.item, rows)
                k3 = np.where(pick_two, k3 + k3_item - _third(b.cell, rows), np.where(pick_item, k3_item, k3))
            n_items = np.where(two_way, n_items, 0)
        var = np.where(bad, np.nan, var)
        df = np.where(bad, np.nan, np.maximum(df, 1.0))
        lo_bound = np.where(used, np.minimum(c, 0.0), 0.0).sum(axis=1) if b.unit_range else np.full(self.k, -np.inf)
        hi_bound = np.where(used, np.maximum(c, 0.0), 0.0).sum(axis=1) if b.unit_range else np.full(self.k, np.inf)
        # every sample of the estimate constant (all 0 or all 1 over C_b tasks): the exact
        # cluster bounds of each, combined (a single rate: [0, 1 - (alpha/2)^(1/C)])
        exact = b.unit_range & ~(used & ~np.isfinite(b.constant)[None, :]).any(axis=1) & used.any(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            skew = np.where(var > 0, k3 / np.where(var > 0, var, 1.0) ** 1.5, 0.0)
        cap = max_skew(np.where(np.isfinite(df), df, 1.0))
        skew = np.clip(np.nan_to_num(skew), -cap, cap)
        self._stats = {"var": np.maximum(var, 0.0), "df": df, "skew": np.nan_to_num(skew), "clusters": clusters, "items": n_items,
                       "lo_bound": lo_bound, "hi_bound": hi_bound, "exact": exact}
        return self._stats

    def se(self) -> np.ndarray:
        return np.sqrt(self._compute()["var"])

    def df(self) -> np.ndarray:
        return self._compute()["df"]

    def clusters(self) -> np.ndarray:
        """Tasks carrying each estimate."""
        return self._compute()["clusters"]

    def items(self) -> np.ndarray:
        """Items carrying each estimate when its variance is two-way (0: clustered by task only)."""
        return self._compute()["items"]

    def skew(self) -> np.ndarray:
        """The standardized third cumulant of each estimate (``sum_g z_g³ / V^(3/2)``)."""
        return self._compute()["skew"]

    def intervals(self, alpha: float) -> tuple[np.ndarray, np.ndarray]:
        s = self._compute()
        est, se, df = self.estimate, self.se(), s["df"]
        d = np.where(np.isfinite(df), df, 1.0)
        upper = hall_inverse(sps.t.ppf(1.0 - alpha / 2.0, d), s["skew"])
        lower = hall_inverse(sps.t.ppf(alpha / 2.0, d), s["skew"])
        lo = np.clip(est - upper * se, s["lo_bound"], s["hi_bound"])
        hi = np.clip(est - lower * se, s["lo_bound"], s["hi_bound"])
        exact = s["exact"] & (se == 0)
        if exact.any():
            lo_x, hi_x = self._exact(alpha)
            lo, hi = np.where(exact, lo_x, lo), np.where(exact, hi_x, hi)
        undefined = ~np.isfinite(est) | ~np.isfinite(se)
        return np.where(undefined, np.nan, lo), np.where(undefined, np.nan, hi)

    def _exact(self, alpha: float) -> tuple[np.ndarray, np.ndarray]:
        """Each constant sample's exact interval over its ``C_b`` tasks (all 0: ``[0, 1 - e]``,
        all 1: ``[e, 1]``, ``e = (alpha/2)^(1/C_b)``), combined by the coefficients."""
        b, c = self.base, self.coef
        tasks_b = np.maximum((b.task.n > 0).sum(axis=0), 1).astype(float)
        e = (alpha / 2.0) ** (1.0 / tasks_b)
        lo_b = np.where(b.constant == 1.0, e, 0.0)
        hi_b = np.where(b.constant == 0.0, 1.0 - e, 1.0)
        lo = np.where(c > 0, c * lo_b[None, :], c * hi_b[None, :]).sum(axis=1)
        hi = np.where(c > 0, c * hi_b[None, :], c * lo_b[None, :]).sum(axis=1)
        return lo, hi

    def p_values(self, null: float = 0.0, alternative: Alternative = "two-sided") -> np.ndarray:
        return t_p_value(self.estimate, self.se(), self.df(), null, alternative, self.skew())


@dataclass(frozen=True)
class _Base:
    """The samples behind a :class:`Linearized`: their means and clustering dimensions."""

    means: np.ndarray
    tot_n: np.ndarray
    task: _Dimension
    item: _Dimension | None
    cell: _Dimension | None
    has_items: np.ndarray
    unit_range: bool
    """Every value lies in [0, 1] (rates), so intervals are clipped to the possible range."""
    constant: np.ndarray
    """Per sample: 0.0 (every run 0), 1.0 (every run 1) or NaN."""


def _base(samples: Sequence[Sample], task_codes: Sequence[np.ndarray], n_tasks: int) -> _Base:
    nb = len(samples)
    tot_n = np.array([smp.n for smp in samples], dtype=float)
    values = np.concatenate([np.asarray(smp.values, dtype=float) for smp in samples]) if nb else np.zeros(0)
    base = np.repeat(np.arange(nb), [smp.n for smp in samples]) if nb else np.zeros(0, np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.array([float(np.mean(smp.values)) if smp.n else np.nan for smp in samples])
    tcodes = np.concatenate(task_codes) if nb else np.zeros(0, np.int64)
    task = _dimension(tcodes, base, values, n_tasks, nb, tot_n, np.nan_to_num(means))
    has_items = np.array([smp.items is not None and smp.n > 0 for smp in samples], dtype=bool)
    item = cell = None
    if has_items.any():
        vocab, icodes = _item_codes(samples)
        if vocab.size >= 2:
            item = _dimension(icodes, base, values, int(vocab.size), nb, tot_n, np.nan_to_num(means))
            cells, ccodes = np.unique(tcodes * vocab.size + icodes, return_inverse=True)
            cell = _dimension(ccodes, base, values, int(cells.size), nb, tot_n, np.nan_to_num(means))
    unit = bool(values.size == 0 or (np.nanmin(values) >= 0.0 and np.nanmax(values) <= 1.0))
    constant = np.full(nb, np.nan)
    if nb and values.size:
        lo = np.full(nb, np.inf)
        hi = np.full(nb, -np.inf)
        np.minimum.at(lo, base, values)
        np.maximum.at(hi, base, values)
        constant = np.where((lo == hi) & np.isin(lo, (0.0, 1.0)), lo, np.nan)
    return _Base(means, tot_n, task, item, cell, has_items, unit, constant)


def _item_codes(samples: Sequence[Sample]) -> tuple[np.ndarray, np.ndarray]:
    """The item vocabulary of ``samples`` and every run's code in it (``""`` for a sample
    without items); samples that share one items array are coded once."""
    local: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    empty = np.zeros(1, dtype=str)
    for smp in samples:
        arr = smp.items
        if arr is not None and id(arr) not in local:
            local[id(arr)] = np.unique(np.asarray(arr, dtype=str), return_inverse=True)
    vocab = np.unique(np.concatenate([v for v, _ in local.values()] + [empty]))
    parts = []
    for smp in samples:
        if smp.items is None:
            parts.append(np.full(smp.n, int(np.searchsorted(vocab, "")), dtype=np.int64))
        else:
            v, inv = local[id(smp.items)]
            parts.append(np.searchsorted(vocab, v)[inv.ravel()])
    return vocab, (np.concatenate(parts) if parts else np.zeros(0, np.int64))


def linearize(samples: Sequence[Sample], task_codes: Sequence[np.ndarray], n_tasks: int) -> Linearized:
    """The :class:`Linearized` means of ``samples`` (one column each); ``task_codes`` are each
    sample's task columns among ``n_tasks``."""
    return Linearized(_base(samples, task_codes, n_tasks), np.eye(len(samples)))


# --------------------------------------------------------------------------- the resampler


class CrossedResampler:
    """The study's inference with ``bootstrap_unit: task_x_item`` (module docstring): every
    mean and difference of means linearized, two-way CR2 with Bell-McCaffrey degrees of
    freedom; Spearman's rho from the task bootstrap (BCa)."""

    unit: BootstrapUnit = "task_x_item"
    interval_method: IntervalMethod = "cr2_t"

    def __init__(self, task_bootstrap: Any) -> None:
        """``task_bootstrap``: the study's :class:`~._bootstrap.TaskBootstrap` (its tasks, and
        the resamples Spearman's interval uses)."""
        self._boot = task_bootstrap
        self.tasks = task_bootstrap.tasks
        self.resamples = int(task_bootstrap.resamples)
        self.seed = int(task_bootstrap.seed)

    @property
    def n_tasks(self) -> int:
        return int(self.tasks.size)

    def codes(self, tasks: np.ndarray) -> np.ndarray:
        return self._boot.codes(tasks)

    def draws(self, label: Sequence[str] | None, samples: Sequence[Sample]) -> Linearized:
        coded: dict[int, np.ndarray] = {}  # samples sharing one tasks array are coded once
        for smp in samples:
            if id(smp.tasks) not in coded:
                coded[id(smp.tasks)] = self.codes(smp.tasks)
        return linearize(samples, [coded[id(smp.tasks)] for smp in samples], self.n_tasks)

    def mean_draws(self, label: Sequence[str], samples: Sequence[Sample]) -> np.ndarray:
        """Bootstrap means of the task bootstrap (for callers that want draws)."""
        return self._boot.mean_draws(label, samples)

    def cluster_sums(self, samples: Sequence[Sample]) -> tuple[np.ndarray, np.ndarray]:
        return self._boot.cluster_sums(samples)

    def task_weights(self) -> Iterator[np.ndarray]:
        return self._boot.task_weights()

    def spearman_draws(self, label: Sequence[str], x: np.ndarray, y: np.ndarray, tasks: np.ndarray) -> np.ndarray:
        return self._boot.spearman_draws(label, x, y, tasks)

    def spearman(self, label: Sequence[str], x: np.ndarray, y: np.ndarray, tasks: np.ndarray) -> Draws:
        return self._boot.spearman(label, x, y, tasks)

    def wald(self, samples: Sequence[Sample], pairs: Sequence[tuple[int, int]], draws: Any = None) -> dict[str, np.ndarray]:
        """``delta, se, p, df, clusters, items, skew`` of ``mean(a) - mean(b)`` for each pair."""
        d = draws if isinstance(draws, Linearized) else self.draws(None, samples).differences(pairs)
        return {"delta": d.estimate, "se": d.se(), "p": d.p_values(), "df": d.df(), "clusters": d.clusters(),
                "items": d.items(), "skew": d.skew()}
