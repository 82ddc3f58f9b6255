"""The arrays behind :mod:`._crossed`'s variances: per clustering dimension (task, tool, their
cells, wording) and per sample, the CR2-adjusted cluster sums, and the pieces of the
Bell-McCaffrey degrees of freedom.

Notation. An estimate is ``sum_b c_b ybar_b`` over samples ``b`` (rows of a coefficient
matrix ``(K, B)``); ``N_b`` runs of sample ``b``, ``n_gb`` of them in cluster ``g``,
``s_gb`` their sum. A clustering dimension gives, per cluster and sample,

- **unconditional** influence sums ``e_gb = a_gb (s_gb - ybar_b n_gb) / N_b`` with the CR2
  leverage factor ``a_gb = (1 - n_gb / N_b)^(-1/2)`` (Bell & McCaffrey 2002; 0 for a cluster
  holding the whole sample, Pustejovsky & Tipton 2018): ``sum_g (sum_b c_b e_gb)^2`` is the
  one-way CR2 variance of the estimate;
- **conditional** sums (:class:`Conditional`), the same with every sample split by wording
  (each (sample, wording) sub-sample centred at its own mean, leverage within it): the
  variance of the estimate *given* the wordings drawn, which task and tool effects still
  carry because every task and tool meets several wordings, and the pieces ``D_gbw`` of the
  wording contrasts (how far wording ``w``'s part of the estimate is from its share of the
  whole) whose cluster-robust variance is what the wording spread shows when wordings do not
  matter (:mod:`._crossed`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ._sample import Sample


def _cr2_factor(share: np.ndarray) -> np.ndarray:
    """``(1 - share)^(-1/2)``; 0 where one cluster holds the whole sample (its residual sum is 0)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(share < 1.0 - 1e-12, 1.0 / np.sqrt(np.maximum(1.0 - share, 1e-300)), 0.0)


@dataclass(frozen=True)
class Dimension:
    """One clustering dimension, unconditional: rows are clusters, columns samples."""

    e: np.ndarray
    """``a_gb (s_gb - ybar_b n_gb) / N_b``."""
    a2n: np.ndarray
    """``a_gb² n_gb / N_b²``: the squared norm of a cluster's CR2 weight vector."""
    r: np.ndarray
    """``a_gb n_gb / N_b``: the cluster's CR2 weights summed (``X_g' p_g`` per sample)."""
    n: np.ndarray


def dimension(codes: np.ndarray, base: np.ndarray, values: np.ndarray, n_clusters: int, n_base: int,
              tot_n: np.ndarray, mean: np.ndarray) -> Dimension:
    flat = codes * n_base + base
    size = n_clusters * n_base
    s = np.bincount(flat, weights=values, minlength=size).reshape(n_clusters, n_base)
    n = np.bincount(flat, minlength=size).reshape(n_clusters, n_base).astype(float)
    big_n = np.where(tot_n > 0, tot_n, 1.0)[None, :]
    a = _cr2_factor(n / big_n)
    e = a * (s - mean[None, :] * n) / big_n
    return Dimension(e=e, a2n=a**2 * n / big_n**2, r=a * n / big_n, n=n)


@dataclass(frozen=True)
class Conditional:
    """One clustering dimension given the wordings: ``e`` ``(G, B)`` the conditional cluster
    sums of each sample's mean, ``d`` ``(G, B, W)`` the pieces of each wording contrast
    (``a_bw (e_gbw - pi_bw e_gb)``, ``pi_bw`` the share of sample ``b``'s runs offered wording
    ``w``, ``a_bw = (1 - pi_bw)^(-1/2)`` the wording cluster's CR2 factor)."""

    e: np.ndarray
    d: np.ndarray


def conditional(codes: np.ndarray, base: np.ndarray, wcodes: np.ndarray, values: np.ndarray, n_clusters: int,
                n_base: int, n_words: int, tot_n: np.ndarray) -> Conditional:
    sub = base * n_words + wcodes
    size = n_clusters * n_base * n_words
    flat = codes * (n_base * n_words) + sub
    s = np.bincount(flat, weights=values, minlength=size).reshape(n_clusters, n_base, n_words)
    n = np.bincount(flat, minlength=size).reshape(n_clusters, n_base, n_words).astype(float)
    sub_n = n.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        sub_mean = np.where(sub_n > 0, s.sum(axis=0) / np.where(sub_n > 0, sub_n, 1.0), 0.0)
        share = np.where(sub_n[None] > 0, n / np.where(sub_n > 0, sub_n, 1.0)[None], 0.0)
    big_n = np.where(tot_n > 0, tot_n, 1.0)
    e_sub = _cr2_factor(share) * (s - sub_mean[None] * n) / big_n[None, :, None]
    e = e_sub.sum(axis=2)
    pi = sub_n / big_n[:, None]
    d = _cr2_factor(pi)[None] * (e_sub - pi[None] * e[:, :, None])
    return Conditional(e=e, d=d)


class Rows:
    """The rows of a coefficient matrix ``(K, B)``, applied to per-cluster arrays ``(J, B)``
    (or ``(J, B, W)``).

    Most estimates combine one or two samples (a rate, a difference): then each row is two
    (sample, coefficient) pairs and every product is a gather, not a ``(J, B) @ (B, K)``
    matrix product (a power simulation has thousands of samples)."""

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
        """``sum_b c_b^power x_jb`` per row: ``(J, K)`` (``(J, K, W)`` for a 3-d ``x``)."""
        if self.sparse:
            c1, c2 = self.c1**power, self.c2**power
            if x.ndim == 3:
                return x[:, self.i1, :] * c1[None, :, None] + x[:, self.i2, :] * c2[None, :, None]
            return x[:, self.i1] * c1 + x[:, self.i2] * c2
        if x.ndim == 3:
            return np.einsum("jbw,kb->jkw", x, self.coef**power)
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


def variance(e: np.ndarray, rows: Rows) -> np.ndarray:
    """``sum_g (sum_b c_b e_gb)²`` for each row (summed over wordings too for a 3-d ``e``)."""
    x = rows.apply(e) ** 2
    return x.sum(axis=(0, 2)) if x.ndim == 3 else x.sum(axis=0)


def bm_df(dim: Dimension, rows: Rows, tot_n: np.ndarray) -> np.ndarray:
    """Bell-McCaffrey degrees of freedom of the one-way CR2 variance of each row.

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


def satterthwaite(parts: Sequence[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Welch-Satterthwaite degrees of freedom of a sum of variance parts ``(V_i, ν_i)``."""
    total = sum(v for v, _ in parts)
    with np.errstate(invalid="ignore", divide="ignore"):
        return total**2 / sum(np.maximum(v, 0.0) ** 2 / nu for v, nu in parts)


@dataclass(frozen=True)
class Factor:
    """A clustering dimension both ways: unconditional (its degrees of freedom, and the variance
    of an estimate without a wording part) and given the wordings."""

    dim: Dimension
    given: Conditional


@dataclass(frozen=True)
class Base:
    """The samples behind a :class:`~._crossed.Linearized`: means and clustering dimensions."""

    means: np.ndarray
    tot_n: np.ndarray
    task: Factor
    tool: Factor | None
    cell: Factor | None
    """Task x tool: the intersection of the two-way task/tool variance."""
    word: Dimension | None
    """By wording; its first cluster is ``""`` (runs offered none)."""
    has_tools: np.ndarray
    has_words: np.ndarray
    item_n: np.ndarray | None
    """Runs per (item, sample): how many canary items an estimate rests on."""
    unit_range: bool
    """Every value lies in [0, 1] (rates), so intervals are clipped to the possible range."""
    constant: np.ndarray
    """Per sample: 0.0 (every run 0), 1.0 (every run 1) or NaN."""


def _codes(samples: Sequence[Sample], attr: str) -> tuple[np.ndarray, np.ndarray]:
    """The vocabulary of a per-run label over ``samples`` (``""`` for a sample without it) and
    every run's code; samples that share one label array are coded once."""
    local: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for smp in samples:
        arr = getattr(smp, attr)
        if arr is not None and id(arr) not in local:
            local[id(arr)] = np.unique(np.asarray(arr, dtype=str), return_inverse=True)
    vocab = np.unique(np.concatenate([v for v, _ in local.values()] + [np.zeros(1, dtype=str)]))
    parts = []
    for smp in samples:
        arr = getattr(smp, attr)
        if arr is None:
            parts.append(np.full(smp.n, int(np.searchsorted(vocab, "")), dtype=np.int64))
        else:
            v, inv = local[id(arr)]
            parts.append(np.searchsorted(vocab, v)[inv.ravel()])
    return vocab, (np.concatenate(parts) if parts else np.zeros(0, np.int64))


def _factor(codes: np.ndarray, size: int, base: np.ndarray, wcodes: np.ndarray, n_words: int, values: np.ndarray,
            nb: int, tot_n: np.ndarray, means: np.ndarray) -> Factor:
    return Factor(dimension(codes, base, values, size, nb, tot_n, means),
                  conditional(codes, base, wcodes, values, size, nb, n_words, tot_n))


def _dense(codes: np.ndarray) -> tuple[int, np.ndarray]:
    vocab, inv = np.unique(codes, return_inverse=True)
    return int(vocab.size), inv.ravel()


def build_base(samples: Sequence[Sample], task_codes: Sequence[np.ndarray], n_tasks: int) -> Base:
    nb = len(samples)
    tot_n = np.array([smp.n for smp in samples], dtype=float)
    values = np.concatenate([np.asarray(smp.values, dtype=float) for smp in samples]) if nb else np.zeros(0)
    base = np.repeat(np.arange(nb), [smp.n for smp in samples]) if nb else np.zeros(0, np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.array([float(np.mean(smp.values)) if smp.n else np.nan for smp in samples])
    mean0 = np.nan_to_num(means)
    tcodes = np.concatenate(task_codes).astype(np.int64) if nb else np.zeros(0, np.int64)
    has_words = np.array([smp.wordings is not None and smp.n > 0 for smp in samples], dtype=bool)
    has_tools = np.array([smp.tools is not None and smp.n > 0 for smp in samples], dtype=bool)
    wvocab, wcodes = _codes(samples, "wordings") if has_words.any() else (np.zeros(1, dtype=str), np.zeros(values.size, np.int64))
    n_words = int(wvocab.size)
    task = _factor(tcodes, n_tasks, base, wcodes, n_words, values, nb, tot_n, mean0)
    tool = cell = None
    if has_tools.any():
        tvocab, ocodes = _codes(samples, "tools")
        if tvocab.size >= 2:
            tool = _factor(ocodes, int(tvocab.size), base, wcodes, n_words, values, nb, tot_n, mean0)
            n_cells, ccodes = _dense(tcodes * tvocab.size + ocodes)
            cell = _factor(ccodes, n_cells, base, wcodes, n_words, values, nb, tot_n, mean0)
    word = None
    if has_words.any() and n_words >= 2:
        word = dimension(wcodes, base, values, n_words, nb, tot_n, mean0)
    item_n = None
    if any(smp.items is not None for smp in samples):
        ivocab, icodes = _codes(samples, "items")
        flat = icodes * nb + base
        item_n = np.bincount(flat, minlength=int(ivocab.size) * nb).reshape(int(ivocab.size), nb).astype(float)
        item_n[np.searchsorted(ivocab, "")] = 0.0  # "" is no item
    unit = bool(values.size == 0 or (np.nanmin(values) >= 0.0 and np.nanmax(values) <= 1.0))
    constant = np.full(nb, np.nan)
    if nb and values.size:
        lo = np.full(nb, np.inf)
        hi = np.full(nb, -np.inf)
        np.minimum.at(lo, base, values)
        np.maximum.at(hi, base, values)
        constant = np.where((lo == hi) & np.isin(lo, (0.0, 1.0)), lo, np.nan)
    return Base(means, tot_n, task, tool, cell, word, has_tools, has_words, item_n, unit, constant)
