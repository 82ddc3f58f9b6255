"""The dose curve's fits (docs/dose.md): Firth's bias-reduced logistic regression of the
first pick on ``log2 k`` over k >= 1, and CR2 cluster-robust (by task) inference with
Bell-McCaffrey degrees of freedom for any linear combination of fitted coefficients, over
one fit or several fitted on the same tasks (a typed curve minus its twin curve).

**Why Firth, and why by hand.** Plain maximum likelihood has no estimate when a curve never
(or always) takes a look-alike, the curve of an agent that sees through a type, and on rare
curves it is strongly biased away from 0 (one trapped run at k = 8 and none below makes the
slope infinite); the half/half prior the curves used before (Haldane-style pseudo-runs per
level) shrinks rare curves toward 0 (measured in tests/test_stats_dose.py). Firth's (1993)
penalised likelihood, ``l(b) + 1/2 log det I(b)``, removes the O(1/n) bias of the maximum
likelihood estimate and always has a finite solution. statsmodels has no Firth logistic
regression; the maintained Python implementation, ``firthmodels``, is a scikit-learn
classifier that refuses an outcome with one class (exactly the all-zero curve this is for)
and would make scikit-learn a run-time dependency. The fit is two parameters: a Newton
iteration on Firth's modified score with step halving on the penalised likelihood, checked
against ``firthmodels`` on two-class data (tests/test_stats_dose.py).

**Intervals.** Runs of one task are correlated (its seeds, its levels, and a typed curve and
its twin curve), so the variance is a sandwich over tasks: Firth's estimating equation
``sum_i x_i (y_i - mu_i + h_i (1/2 - mu_i)) = 0`` (``h_i`` the leverage) is treated as an
M-estimator; its bread is the inverse Fisher information and its meat the tasks' score sums,
each task's working residuals adjusted by ``(I - H_gg)^(-1/2)`` (CR2, Bell & McCaffrey 2002,
the bias-reduced linearization in the working-weights metric, as for GLMs in Pustejovsky &
Tipton 2018). Student's t with the Bell-McCaffrey degrees of freedom (the Satterthwaite
approximation under working independence) gives the interval: ``G - 1`` when every task has
the same runs, where CR2 equals CR1's ``G / (G - 1)``; fewer when the tasks are unbalanced.
A curve that is constant (every run at k >= 1 trapped, or none) has no growth to estimate
and no between-task spread (its robust variance is 0). Its growth is 0 (Firth's estimate
with every level the same size; with unequal levels Firth's penalty alone would tilt it,
half a pseudo-run per level whatever the level's runs), with the model-based variance (the
inverse Fisher information at Firth's estimate of the one rate, ``(0 + 1/2) / (n + 1)``):
an all-zero curve's growth is 0 with an interval of about +-2.6 whatever the number of
tasks (the runs say the rate stays near 0 at every k, and nothing about its log-odds'
slope), not the degenerate [0, 0].
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from scipy import stats as sps
from scipy.special import expit

#: Firth's penalty weight (1/2: Jeffreys' invariant prior); 0 is plain maximum likelihood.
FIRTH: Final = 0.5


def _info(x: np.ndarray, wn: np.ndarray) -> tuple[float, float, float]:
    """The Fisher information ``[[i00, i01], [i01, i11]]`` of a logistic fit on ``[1, x]``
    with weights ``wn`` (trials times ``mu (1 - mu)``)."""
    return float(wn.sum()), float((wn * x).sum()), float((wn * x * x).sum())


def firth_logit(x: np.ndarray, y: np.ndarray, *, weights: np.ndarray | None = None, penalty: float = FIRTH,
                max_iter: int = 200, tol: float = 1e-10) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Logistic regression of ``y`` (0/1, or a share of ``weights`` trials: grouped binomial
    data, the same fit as the runs one by one) on ``[1, x]`` by Firth's penalised likelihood
    (``penalty`` 0: maximum likelihood, which may not converge on separated data).
    Returns the coefficients, the fitted probabilities and the inverse Fisher information
    (two parameters: the 2 x 2 algebra in closed form)."""
    xs = np.asarray(x, dtype=float)
    ys = np.asarray(y, dtype=float)
    n = np.ones_like(ys) if weights is None else np.asarray(weights, dtype=float)

    def state(beta: np.ndarray) -> tuple[float, np.ndarray, tuple[float, float, float]]:
        eta = beta[0] + beta[1] * xs
        mu = expit(eta)
        info = _info(xs, n * mu * (1.0 - mu))
        det = info[0] * info[2] - info[1] ** 2
        loglik = -float(np.sum(n * (ys * np.logaddexp(0.0, -eta) + (1.0 - ys) * np.logaddexp(0.0, eta))))
        return loglik + (penalty * float(np.log(det)) if penalty and det > 0 else 0.0), mu, info

    beta = np.zeros(2)
    cur, mu, info = state(beta)
    for _ in range(max_iter):
        i00, i01, i11 = info
        det = max(i00 * i11 - i01**2, 1e-300)
        wn = n * mu * (1.0 - mu)
        lev = wn * (i11 - 2.0 * i01 * xs + i00 * xs * xs) / det  # the hat matrix's diagonal
        r = n * (ys - mu) + 2.0 * penalty * lev * (0.5 - mu)
        u0, u1 = float(r.sum()), float((r * xs).sum())
        step = np.array([i11 * u0 - i01 * u1, i00 * u1 - i01 * u0]) / det
        big = float(np.max(np.abs(step)))
        if big > 5.0:  # a capped step, as logistf and firthmodels do
            step *= 5.0 / big
        for _ in range(60):  # step halving on the penalised likelihood
            new, mu_new, info_new = state(beta + step)
            if new >= cur - 1e-12:
                break
            step = step / 2.0
        beta = beta + step
        cur, mu, info = new, mu_new, info_new
        if float(np.max(np.abs(step))) < tol:
            break
    i00, i01, i11 = info
    det = max(i00 * i11 - i01**2, 1e-300)
    return beta, mu, np.array([[i11, -i01], [-i01, i00]]) / det


@dataclass(frozen=True)
class Fit:
    """A fitted curve and what its sandwich needs: ``xt`` the design scaled by the working
    weights' square root, ``resid`` the working residuals of the estimating equation,
    ``codes`` each run's cluster (task), ``bread`` the inverse information."""

    coef: np.ndarray
    bread: np.ndarray
    xt: np.ndarray
    resid: np.ndarray
    codes: np.ndarray
    constant: bool
    events: int
    n: int


def fit_curve(x: np.ndarray, y: np.ndarray, codes: np.ndarray, *, penalty: float = FIRTH) -> Fit:
    """Firth's logistic fit of ``y`` on ``[1, x]`` with what :func:`combine` needs."""
    xs = np.asarray(x, dtype=float)
    ys = np.asarray(y, dtype=float)
    events = int(ys.sum())
    constant = events in (0, ys.size)
    if constant:  # no look-alike taken (or every one): no growth, whatever the levels' sizes
        share = (events + penalty) / (ys.size + 2.0 * penalty)  # Firth's (Jeffreys') estimate of one proportion
        intercept = float(np.log(share / (1.0 - share)))
        mu = np.full(xs.size, share)
        i00, i01, i11 = _info(xs, mu * (1.0 - mu))
        coef = np.array([intercept, 0.0])
        bread = np.array([[i11, -i01], [-i01, i00]]) / max(i00 * i11 - i01**2, 1e-300)
    else:
        coef, mu, bread = firth_logit(xs, ys, penalty=penalty)
    design = np.column_stack([np.ones_like(xs), xs])
    w = mu * (1.0 - mu)
    lev = w * np.einsum("ij,jk,ik->i", design, bread, design)
    root = np.sqrt(np.maximum(w, 1e-300))
    resid = (ys - mu + 2.0 * penalty * lev * (0.5 - mu)) / root
    return Fit(coef, bread, design * root[:, None], resid, np.asarray(codes, dtype=int), constant, events, int(ys.size))


def mean_fit(y: np.ndarray, codes: np.ndarray) -> Fit:
    """A mean as a fit (the intercept of a least-squares regression on 1). Never ``constant``:
    a constant rate's robust variance is 0 and its interval the exact one for clusters
    (:func:`exact_bound`), which the caller adds."""
    ys = np.asarray(y, dtype=float)
    m = float(ys.mean()) if ys.size else 0.0
    return Fit(np.array([m]), np.array([[1.0 / max(ys.size, 1)]]), np.ones((ys.size, 1)), ys - m,
               np.asarray(codes, dtype=int), False, int(ys.sum()), int(ys.size))


def mean_estimate(y: np.ndarray, codes: np.ndarray) -> Estimate:
    """:func:`combine` of one :func:`mean_fit` in closed form: with ``n_g`` runs of task g
    out of N, CR2 divides each task's residual sum by ``sqrt(1 - n_g / N)`` and the
    Bell-McCaffrey matrix is ``M_gh = a_g a_h (n_g [g = h] - n_g n_h / N) / N^2``."""
    ys = np.asarray(y, dtype=float)
    _, cl = np.unique(np.asarray(codes), return_inverse=True)
    n_tot, g = ys.size, int(cl.max()) + 1 if ys.size else 0
    m = float(ys.mean()) if n_tot else 0.0
    if g < 2:
        return Estimate(m, float("nan"), 0.0, 0.0)
    n_g = np.bincount(cl, minlength=g).astype(float)
    a = 1.0 / np.sqrt(np.maximum(1.0 - n_g / n_tot, 1e-12))
    e = np.bincount(cl, weights=ys - m, minlength=g)
    var = float(np.sum((a * e) ** 2)) / n_tot**2
    mat = np.outer(a, a) * (np.diag(n_g) - np.outer(n_g, n_g) / n_tot) / n_tot**2
    df = float(np.trace(mat) ** 2 / np.sum(mat**2))
    return Estimate(m, float(np.sqrt(var)), df, 0.0)


def _inv_sqrt(m: np.ndarray) -> np.ndarray:
    vals, vecs = np.linalg.eigh(m)
    safe = np.where(vals > 1e-10, vals, np.inf)
    return (vecs / np.sqrt(safe)) @ vecs.T


@dataclass(frozen=True)
class Estimate:
    """A linear combination of fitted coefficients with its CR2 variance and BM df."""

    estimate: float
    se: float
    df: float
    #: the part of the variance that is model-based (constant curves), not task-robust
    model_var: float

    def interval(self, alpha: float) -> tuple[float, float]:
        q = float(sps.t.ppf(1 - alpha / 2, max(self.df, 1.0)))
        return self.estimate - q * self.se, self.estimate + q * self.se

    def p(self) -> float:
        if self.se <= 1e-12:
            return 1.0 if abs(self.estimate) <= 1e-12 else 0.0
        return float(2 * sps.t.sf(abs(self.estimate) / self.se, max(self.df, 1.0)))


def combine(fits: Sequence[Fit], weights: Sequence[Sequence[float]], n_clusters: int) -> Estimate:
    """``sum_f weights[f] . coef_f`` over fits of the same tasks (clusters ``0..n_clusters-1``),
    with the CR2 sandwich over the tasks' stacked score sums and the Bell-McCaffrey df. A
    constant fit (no spread) contributes its model-based variance instead (module doc)."""
    est = float(sum(np.dot(c, f.coef) for f, c in zip(fits, weights, strict=True)))
    robust = [(f, np.asarray(c, dtype=float)) for f, c in zip(fits, weights, strict=True) if not f.constant and np.any(c)]
    model_var = float(sum(np.asarray(c) @ f.bread @ np.asarray(c)
                          for f, c in zip(fits, weights, strict=True) if f.constant))
    g = n_clusters
    if not robust:
        return Estimate(est, float(np.sqrt(model_var)), float(g - 1), model_var)
    # per fit: u = X~ B c (each run's influence direction). With P's columns p_g = (I - H) E_g a_g
    # (a_g the task's adjusted influence) and H a projection, block-diagonal over fits,
    # P'P = diag(a_g'a_g) - sum_f V_f' B_f V_f with V_f's columns X~_fg' a_fg: no N x G matrix.
    parts = [(f, f.xt @ (f.bread @ c)) for f, c in robust]
    diag = np.zeros(g)
    vs = [np.zeros((f.xt.shape[1], g)) for f, _ in parts]
    var = 0.0
    for cl in range(g):
        score = 0.0
        for i, (f, u) in enumerate(parts):
            r = np.flatnonzero(f.codes == cl)
            if r.size == 0:
                continue
            xg = f.xt[r]
            a = _inv_sqrt(np.eye(r.size) - xg @ f.bread @ xg.T) @ u[r]
            score += float(a @ f.resid[r])
            diag[cl] += float(a @ a)
            vs[i][:, cl] = xg.T @ a
        var += score**2
    m = np.diag(diag) - sum(v.T @ f.bread @ v for (f, _), v in zip(parts, vs, strict=True))
    df_r = float(np.trace(m) ** 2 / np.sum(m**2)) if np.sum(m**2) > 0 else float(g - 1)
    total = var + model_var
    if model_var > 0 and total > 0:  # Welch-Satterthwaite over the robust and model-based parts
        df = total**2 / (var**2 / df_r + model_var**2 / (g - 1))
    else:
        df = df_r
    return Estimate(est, float(np.sqrt(total)), float(df), model_var)


def exact_bound(n_clusters: int, alpha: float) -> float:
    """The largest rate at which ``n_clusters`` independent tasks all give 0 with probability
    ``alpha / 2``: the far end of a constant rate's interval (as in :mod:`._crossed`)."""
    return float(1.0 - (alpha / 2.0) ** (1.0 / max(n_clusters, 1)))


def sign_test_p(n_clusters: int) -> float:
    """Two-sided sign test when every one of ``n_clusters`` tasks differs the same way."""
    return float(min(1.0, 2.0 * 0.5 ** max(n_clusters, 1)))


def rate_difference(ya: np.ndarray, ca: np.ndarray, yb: np.ndarray, cb: np.ndarray, n_clusters: int,
                    alpha: float) -> dict[str, Any]:
    """Mean of ``ya`` minus mean of ``yb`` (runs of tasks ``ca``, ``cb``), paired by task: the
    CR2 interval, widened by a constant side's exact bound (``[0, u]`` for a side at 0, as
    it enters the difference), and, when no task varies but the two differ, the sign test's p
    (every task differs the same way)."""
    est = combine([mean_fit(ya, ca), mean_fit(yb, cb)], [[1.0], [-1.0]], n_clusters)
    lo, hi = est.interval(alpha)
    p = est.p()
    for y, c, sign in ((ya, ca, 1.0), (yb, cb, -1.0)):
        if np.all(y == y[0]):
            u = exact_bound(int(np.unique(c).size), alpha)
            lo, hi = (lo - u, hi) if (y[0] == 1.0) == (sign > 0) else (lo, hi + u)
    if est.se <= 1e-12 and abs(est.estimate) > 1e-12:
        p = sign_test_p(int(np.unique(np.concatenate([ca, cb])).size))
    return {"estimate": est.estimate, "lo": lo, "hi": hi, "se": est.se, "df": est.df, "p": p}


def describe(e: Estimate, alpha: float) -> dict[str, Any]:
    lo, hi = e.interval(alpha)
    return {"estimate": e.estimate, "lo": lo, "hi": hi, "se": e.se, "df": e.df, "p": e.p()}
