"""Small-sample inference with tasks, tools and wordings as crossed random factors
(``stats.bootstrap_unit: task_x_item``, the default).

Every estimate of the study is a mean over runs (a rate) or a linear combination of such
means (a difference, a group average), so its sampling variance has a closed form in cluster
sums. Three facts decide the interval (docs/statistics.md, "Tasks, tools and wordings"):

**Runs of one task are correlated, so are runs on one tool, and so are runs offered one
wording.** The same task recurs across seeds and conditions; a canary's real tool recurs
across that tool's tasks; and a wording (a bank entry, the runs table's ``wording_<T>``) is
the same sentence on every tool. A claim about a type ("M is lured by stale data") should
hold for new tasks, new tools *and* new wordings of the bank, so all three are random
factors. Tasks and tools: the two-way cluster-robust variance of Cameron, Gelbach & Miller
(2011), ``V_task + V_tool - V_task∩tool`` (tasks usually nest in tools, and then it is
``V_tool``). Wordings are few (K = 3 a type by default), crossed with tasks and tools, and
their variance is estimated like a variance component, not a cluster dimension:

- ``V_given`` is the task/tool variance **given the wordings drawn**: the same CR2 sums with
  each sample centred per wording (every task and tool meets several wordings, so their
  effects stay in it, and nothing of the wordings' own spread does);
- the wording component is the spread of the K wording-level parts of the estimate beyond
  what ``V_given`` says their noise is: ``B = max(0, V_word - N_word)``, ``V_word`` the
  one-way CR2 variance by wording, ``N_word`` the same task/tool variance of the wording
  contrasts (a moment estimator, the multiway analogue of ANOVA's ``MS_between -
  MS_within``, truncated at 0 like DerSimonian & Laird's);
- ``V = V_given + B``. Inclusion-exclusion over the wording dimension instead (three-way
  CGM) was tried and rejected: its intersection terms, centred at the grand mean, drop a
  1/K share of the task and tool variance (coverage 0.84-0.90 measured), and with K = 3 it
  is negative in one study of six.

**With few clusters, the sandwich is biased down and the normal quantile too small.** Each
cluster sum is CR2-adjusted (Bell & McCaffrey 2002: divided by ``sqrt(1 - n_g / N)``); the
pivot ``(estimate - truth) / se`` is referred to Student's t with Bell-McCaffrey degrees of
freedom (the Satterthwaite approximation under independent working errors, Pustejovsky &
Tipton 2018: ``G - 1`` for equal clusters, fewer when a few clusters carry most runs),
combined over the parts by Satterthwaite: the wording component, where positive, carries the
variance of the spread it is estimated from (``2 V_word² / ν_word``, ``ν_word`` about K - 1:
the noise term ``N_word`` rests on the many task and tool clusters), and none where the
truncation removes it. Welch's ``B² / ν_word`` (which ignores the noise in the spread) was
measured beside it: intervals a third narrower where wordings do not matter (a delta's at 30
tasks 0.33 wide against 0.50) but coverage 0.88-0.92 where they do at 120 tasks, even with
K = 6 (this rule: 0.92-0.94); calibration first, width is what ``canarykit plan`` buys back
with more wordings.

**No skewness correction.** Hall's correction of the pivot (before issue 27) inflated the
size of tests whose data lean one way (rare nulls: 0.084 at alpha 0.05); the plain pivot's
size is shown, not argued (``benchmarks/bench_coverage.py``). The interval at ``1 - alpha``
excludes the null exactly when the two-sided p is below alpha.

An estimate whose samples are all constant (every run 0, or every run 1, over ``C_b``
tasks) has no sampling variance to show: each sample gets the exact interval for clusters,
``[0, 1 - (alpha/2)^(1/C_b)]`` (the largest rate at which ``C_b`` independent tasks all give
0 with probability ``alpha/2``), combined by the estimate's coefficients (a 0-vs-0 delta:
``[-u_b, u_a]``). A difference with no variance otherwise (every task gives the same
difference) is its own interval.

All of it is vectorised over estimates (:mod:`._multiway`): per dimension one ``bincount``
over every run of every sample, then gathers (one or two samples per estimate) or matrix
products. No resampling. Spearman's rho (not a mean) keeps the task bootstrap (BCa).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Literal

import numpy as np
from scipy import stats as sps

from ._intervals import BootstrapUnit, Draws, IntervalMethod
from ._multiway import Base, Factor, Rows, bm_df, build_base, satterthwaite, variance
from ._sample import Sample

__all__ = [
    "FEW_CLUSTERS",
    "FEW_WORDINGS",
    "CrossedResampler",
    "Linearized",
    "linearize",
    "t_p_value",
    "tost_p",
]

#: Below this many tasks an estimate carries ``few_clusters: true``.
FEW_CLUSTERS = 30
#: Below this many wordings an estimate with a wording factor carries ``few_wordings: true``:
#: its wording part rests on ``K - 1`` degrees of freedom (t quantile 2.36 at 7, 4.30 at 2).
FEW_WORDINGS = 8

Alternative = Literal["two-sided", "greater", "less"]


def t_p_value(estimate: Any, se: Any, df: Any, null: float = 0.0, alternative: Alternative = "two-sided") -> np.ndarray:
    """p of the cluster-robust t test of ``estimate = null`` (``greater``: H1 estimate > null),
    the intervals' own pivot (so the interval at ``1 - alpha`` excludes ``null`` exactly when
    the two-sided p is below alpha).

    Arrays broadcast. ``se == 0`` (no variability): ``p = 0`` when the estimate lies on the
    alternative's side of ``null``, else 1. NaN where the estimate, se or df is undefined.
    """
    est = np.asarray(estimate, dtype=float)
    s = np.asarray(se, dtype=float)
    d = np.maximum(np.asarray(df, dtype=float), 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = (est - null) / s
        if alternative == "two-sided":
            p = 2.0 * sps.t.sf(np.abs(t), d)
            flat = np.where(np.abs(est - null) > 0, 0.0, 1.0)
        elif alternative == "greater":
            p = sps.t.sf(t, d)
            flat = np.where(est > null, 0.0, 1.0)
        else:
            p = sps.t.cdf(t, d)
            flat = np.where(est < null, 0.0, 1.0)
    p = np.where(np.isfinite(est) & (s == 0), flat, p)
    return np.where(np.isfinite(est) & np.isfinite(s) & np.isfinite(np.asarray(df, dtype=float)), np.minimum(p, 1.0), np.nan)


def tost_p(delta: Any, se: Any, df: Any, margin: float) -> np.ndarray:
    """Two one-sided tests (Schuirmann 1987) of ``|delta| < margin``: the larger of the p of
    ``delta > -margin`` and of ``delta < margin`` (cluster-robust t, ``df`` degrees of
    freedom). Small: the difference lies within the margin."""
    lower = t_p_value(delta, se, df, -margin, "greater")
    upper = t_p_value(delta, se, df, margin, "less")
    return np.maximum(lower, upper)


# --------------------------------------------------------------------------- the variance parts


def _two_way(b: Base, rows: Rows, given: bool) -> dict[str, np.ndarray]:
    """The task/tool variance of each row (``given``: with the wordings held fixed), its
    degrees of freedom and, given the wordings, the same variance of the wording contrasts
    (``noise``: what the wording spread shows when wordings do not matter)."""

    def var(f: Factor) -> np.ndarray:
        return variance(f.given.e if given else f.dim.e, rows)

    def noise(f: Factor) -> np.ndarray:
        return variance(f.given.d, rows)

    used = rows.coef != 0
    clusters = rows.used(b.task.dim.n).sum(axis=0)
    v_task, df_task = var(b.task), bm_df(b.task.dim, rows, b.tot_n)
    out = {"var": v_task, "df": df_task, "noise": noise(b.task), "clusters": clusters,
           "tools": np.zeros(rows.coef.shape[0], dtype=np.int64)}
    if b.tool is None or b.cell is None:
        return out
    n_tools = rows.used(b.tool.dim.n).sum(axis=0)
    two_way = ~(used & ~b.has_tools[None, :]).any(axis=1) & (n_tools >= 2)
    if not two_way.any():
        return out
    v_tool, v_cell = var(b.tool), var(b.cell)
    df_tool = bm_df(b.tool.dim, rows, b.tot_n)
    v_two = v_task + v_tool - v_cell
    # when tasks nest in tools (each task always on one tool: the cells are the tasks) V_two
    # is V_tool and its df are the tools' alone (and the reverse)
    cells = rows.used(b.cell.dim.n).sum(axis=0)
    df_two = np.where(cells == clusters, df_tool, np.where(
        cells == n_tools, df_task, satterthwaite([(v_task, df_task), (v_tool - v_cell, df_tool)])))
    pick_two = two_way & (v_two > 0)
    pick_tool = two_way & ~pick_two & (v_tool > v_task)
    n_two = out["noise"] + noise(b.tool) - noise(b.cell)
    out["var"] = np.where(pick_two, v_two, np.where(pick_tool, v_tool, v_task))
    out["df"] = np.where(pick_two, df_two, np.where(pick_tool, df_tool, df_task))
    out["noise"] = np.where(pick_two, np.maximum(n_two, 0.0), np.where(pick_tool, noise(b.tool), out["noise"]))
    out["tools"] = np.where(two_way, n_tools, 0)
    return out


def _variance_parts(b: Base, coef: np.ndarray) -> dict[str, np.ndarray]:
    """Per row: ``var``, ``df``, ``clusters`` (tasks), ``tools``, ``wordings`` and the wording
    component ``wording_var`` (0 without one) of the module docstring."""
    rows = Rows(coef)
    used = coef != 0
    k = coef.shape[0]
    out = _two_way(b, rows, given=False)
    out["wordings"] = np.zeros(k, dtype=np.int64)
    out["wording_var"] = np.zeros(k)
    if b.word is None:
        return out
    n_words = rows.used(b.word.n[1:]).sum(axis=0)  # row 0 is "": runs offered no wording
    worded = ~(used & ~b.has_words[None, :]).any(axis=1)
    out["wordings"] = np.where(worded, n_words, 0)
    crossed = worded & (n_words >= 2)
    if not crossed.any():
        return out
    given = _two_way(b, rows, given=True)
    v_word, df_word = variance(b.word.e, rows), bm_df(b.word, rows, b.tot_n)
    comp = np.maximum(v_word - given["noise"], 0.0)
    total = given["var"] + comp
    with np.errstate(invalid="ignore", divide="ignore"):
        # the component is V_word - N_word where positive: its variance is V_word's (N_word rests on
        # the many task/tool clusters), 2 V_word² / ν_word; where truncated, it is 0
        den = given["var"] ** 2 / given["df"] + np.where(comp > 0, v_word**2, 0.0) / np.where(df_word > 0, df_word, np.nan)
        df = np.where(comp > 0, total**2 / den, given["df"])
    out["var"] = np.where(crossed, total, out["var"])
    out["df"] = np.where(crossed, df, out["df"])
    out["tools"] = np.where(crossed, given["tools"], out["tools"])
    out["wording_var"] = np.where(crossed, comp, 0.0)
    return out


# --------------------------------------------------------------------------- the linearized estimates


class Linearized:
    """``K`` estimates, each a linear combination (``coef`` ``(K, B)``) of the means of ``B``
    samples, with their variances (tasks, tools and wordings crossed, module docstring) and
    degrees of freedom.

    The counterpart of :class:`~._intervals.Draws` for ``task_x_item``: the same
    ``take``/``differences``/``combine``/``intervals``/``p_values``, plus ``se``, ``df``,
    ``clusters``, ``tools``, ``wordings``, ``items`` and ``wording_share``.
    """

    method = "cr2_t"
    values = None
    jackknife = None

    def __init__(self, base: Base, coef: np.ndarray) -> None:
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
        parts = _variance_parts(b, c)
        bad = parts["clusters"] < 2
        var = np.where(bad, np.nan, parts["var"])
        df = np.where(bad, np.nan, np.maximum(parts["df"], 1.0))
        lo_bound = np.where(used, np.minimum(c, 0.0), 0.0).sum(axis=1) if b.unit_range else np.full(self.k, -np.inf)
        hi_bound = np.where(used, np.maximum(c, 0.0), 0.0).sum(axis=1) if b.unit_range else np.full(self.k, np.inf)
        # every sample of the estimate constant (all 0 or all 1 over C_b tasks): the exact
        # cluster bounds of each, combined (a single rate: [0, 1 - (alpha/2)^(1/C)])
        exact = b.unit_range & ~(used & ~np.isfinite(b.constant)[None, :]).any(axis=1) & used.any(axis=1)
        items = np.zeros(self.k, dtype=np.int64)
        if b.item_n is not None:
            items = Rows(c).used(b.item_n).sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(var > 0, parts["wording_var"] / np.where(var > 0, var, 1.0), 0.0)
        self._stats = {"var": np.maximum(var, 0.0), "df": df, "clusters": parts["clusters"], "tools": parts["tools"],
                       "wordings": parts["wordings"], "items": items, "wording_share": share,
                       "lo_bound": lo_bound, "hi_bound": hi_bound, "exact": exact}
        return self._stats

    def se(self) -> np.ndarray:
        return np.sqrt(self._compute()["var"])

    def df(self) -> np.ndarray:
        return self._compute()["df"]

    def clusters(self) -> np.ndarray:
        """Tasks carrying each estimate."""
        return self._compute()["clusters"]

    def tools(self) -> np.ndarray:
        """Tools (the real tools the canaries shadow) clustering each estimate (0: none)."""
        return self._compute()["tools"]

    def wordings(self) -> np.ndarray:
        """Wordings the estimate's runs were offered (0: no wording factor); with two or more
        their spread enters the variance."""
        return self._compute()["wordings"]

    def items(self) -> np.ndarray:
        """Canary items (tool x wording) the estimate's runs were offered (0: none named)."""
        return self._compute()["items"]

    def wording_share(self) -> np.ndarray:
        """The share of each variance that is the wording component (0 without one)."""
        return self._compute()["wording_share"]

    def intervals(self, alpha: float) -> tuple[np.ndarray, np.ndarray]:
        s = self._compute()
        est, se, df = self.estimate, self.se(), s["df"]
        q = sps.t.ppf(1.0 - alpha / 2.0, np.where(np.isfinite(df), df, 1.0))
        lo = np.clip(est - q * se, s["lo_bound"], s["hi_bound"])
        hi = np.clip(est + q * se, s["lo_bound"], s["hi_bound"])
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
        tasks_b = np.maximum((b.task.dim.n > 0).sum(axis=0), 1).astype(float)
        e = (alpha / 2.0) ** (1.0 / tasks_b)
        lo_b = np.where(b.constant == 1.0, e, 0.0)
        hi_b = np.where(b.constant == 0.0, 1.0 - e, 1.0)
        lo = np.where(c > 0, c * lo_b[None, :], c * hi_b[None, :]).sum(axis=1)
        hi = np.where(c > 0, c * hi_b[None, :], c * lo_b[None, :]).sum(axis=1)
        return lo, hi

    def p_values(self, null: float = 0.0, alternative: Alternative = "two-sided") -> np.ndarray:
        return t_p_value(self.estimate, self.se(), self.df(), null, alternative)


def linearize(samples: Sequence[Sample], task_codes: Sequence[np.ndarray], n_tasks: int) -> Linearized:
    """The :class:`Linearized` means of ``samples`` (one column each); ``task_codes`` are each
    sample's task columns among ``n_tasks``."""
    return Linearized(build_base(samples, task_codes, n_tasks), np.eye(len(samples)))


# --------------------------------------------------------------------------- the resampler


class CrossedResampler:
    """The study's inference with ``bootstrap_unit: task_x_item`` (module docstring): every
    mean and difference of means linearized, tasks, tools and wordings crossed, CR2 with
    Bell-McCaffrey degrees of freedom; Spearman's rho from the task bootstrap (BCa)."""

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
        """``delta, se, p, df, clusters, tools, wordings, items`` of ``mean(a) - mean(b)`` for each pair."""
        d = draws if isinstance(draws, Linearized) else self.draws(None, samples).differences(pairs)
        return {"delta": d.estimate, "se": d.se(), "p": d.p_values(), "df": d.df(), "clusters": d.clusters(),
                "tools": d.tools(), "wordings": d.wordings(), "items": d.items()}
