"""Simulated control contrasts with tasks, tools and wordings as crossed random factors, and a
known truth: what the coverage benchmark (``benchmarks/bench_coverage.py``), its small test
and the planning code draw from.

The design of one type's contrast (:class:`CrossedDesign`): ``tasks`` tasks, each with
``seeds`` seeds; a task's correct tool is shared with ``tasks_per_tool - 1`` other tasks
(tools hold the canaries); each study draws ``wordings`` wordings for the type (K, from a
bank far larger than K: new wordings each study), and each (task, seed) is offered one of
them, balanced over seeds (seed ``s`` of task ``g`` gets wording ``(s + g) mod K``): **one
wording across many tools**. Per (task, seed) there are two runs, one offered the canary
(``declared``) and one its twin (``control``), which carries the canary's wording. On the
logit scale

    canary: mu_canary + a_task + b_tool + c_wording + d_wording      twin: mu_twin + a_task + b_tool + c_wording

with ``a ~ N(0, task_sd²)``, ``b ~ N(0, tool_sd²)`` (**shared by a tool's tasks and
wordings**), ``c ~ N(0, wording_sd²)`` (**shared across tools, and by canary and twin**) and
``d ~ N(0, tell_sd²)`` (how strongly a wording's phrasing of the tell draws: the canary's
alone). With ``canary == twin`` and ``tell_sd = 0`` the tell changes nothing (the sharp null
a randomisation test of sides is exact under). A run's first pick is defined with
probability ``defined`` (else the run made no call into the family). The estimands are
population means over new tasks, tools *and* wordings: ``E[expit(mu + a + b + c (+ d))]``
per side (the per-type rate) and their difference (the paired delta), by Gauss-Hermite
quadrature.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import special

from ._sample import Sample


@dataclass(frozen=True)
class CrossedDesign:
    """One simulated type's design and its generative parameters (module docstring)."""

    tasks: int = 12
    seeds: int = 3
    wordings: int = 3
    tasks_per_tool: int = 3
    canary: float = 0.30
    """The canary rate's population mean (``mu_canary`` is set to give it)."""
    twin: float = 0.30
    task_sd: float = 1.0
    tool_sd: float = 0.5
    wording_sd: float = 0.5
    tell_sd: float = 0.0
    defined: float = 1.0
    canary_type: str = "semantic_decoy"

    def runs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per (task, seed): the task index, the seed, the tool index and the wording (0-based)."""
        g = np.repeat(np.arange(self.tasks), self.seeds)
        s = np.tile(np.arange(self.seeds), self.tasks)
        return g, s, g // self.tasks_per_tool, (s + g) % self.wordings

    @property
    def shared_sd(self) -> float:
        """The sd of the effects canary and twin share (task, tool, wording)."""
        return float(np.sqrt(self.task_sd**2 + self.tool_sd**2 + self.wording_sd**2))

    def mu(self, rate: float, sd: float) -> float:
        """The logit-scale intercept whose population mean rate (effects of sd ``sd``) is ``rate``."""
        from scipy.optimize import brentq

        return float(brentq(lambda m: marginal_rate(m, sd) - rate, -20.0, 20.0))

    @property
    def delta(self) -> float:
        return self.canary - self.twin


def marginal_rate(mu: float, sd: float) -> float:
    """``E[expit(mu + sd Z)]``, ``Z ~ N(0, 1)`` (Gauss-Hermite, 60 nodes)."""
    x, w = np.polynomial.hermite_e.hermegauss(60)
    return float((w * special.expit(mu + sd * x)).sum() / w.sum())


@dataclass(frozen=True)
class SimulatedStudy:
    """One simulated study: the per-run first picks of both sides, with tasks, pairs, items and
    wordings (runs without a first pick left out, as the study leaves them out)."""

    canary: Sample
    twin: Sample


@dataclass
class _Layout:
    """What every study of a design shares: labels and the logit intercepts."""

    g: np.ndarray
    tool: np.ndarray
    word: np.ndarray
    tasks: np.ndarray
    pairs: np.ndarray
    tools: list[str]
    mu_c: float
    mu_t: float
    extra: dict[str, np.ndarray] = field(default_factory=dict)


def _layout(d: CrossedDesign) -> _Layout:
    g, s, tool, word = d.runs()
    tasks = np.array([f"t{i:03d}" for i in range(d.tasks)])[g]
    pairs = np.char.add(np.char.add(tasks, "|"), s.astype(str))
    tools = [f"tool{k:03d}" for k in range(int(tool.max()) + 1)]
    mu_t = d.mu(d.twin, d.shared_sd)
    mu_c = d.mu(d.canary, float(np.hypot(d.shared_sd, d.tell_sd)))
    return _Layout(g, tool, word, tasks, pairs, tools, mu_c, mu_t)


def draw(d: CrossedDesign, lay: _Layout, rng: np.random.Generator) -> SimulatedStudy:
    """One study of ``d`` (new tasks, tools and wordings)."""
    k = d.wordings
    a = rng.normal(0.0, d.task_sd, d.tasks)[lay.g]
    b = rng.normal(0.0, d.tool_sd, len(lay.tools))[lay.tool]
    c = rng.normal(0.0, d.wording_sd, k)[lay.word]
    tell = rng.normal(0.0, d.tell_sd, k)[lay.word]
    bank = rng.choice(max(16, 2 * k), size=k, replace=False) + 1  # the study's draw from the bank
    words = np.array([f"{d.canary_type}/{n:02d}" for n in bank])[lay.word]
    items = np.array([f"{d.canary_type}:{lay.tools[o]}@v{n}" for o, n in zip(lay.tool, bank[lay.word], strict=True)])
    y_c = (rng.random(a.size) < special.expit(lay.mu_c + a + b + c + tell)).astype(float)
    y_t = (rng.random(a.size) < special.expit(lay.mu_t + a + b + c)).astype(float)
    keep_c, keep_t = rng.random(a.size) < d.defined, rng.random(a.size) < d.defined
    return SimulatedStudy(
        Sample(y_c[keep_c], lay.tasks[keep_c], lay.pairs[keep_c], items[keep_c], words[keep_c]),
        Sample(y_t[keep_t], lay.tasks[keep_t], lay.pairs[keep_t], items[keep_t], words[keep_t]),
    )


def simulate(design: CrossedDesign, n_studies: int, rng: np.random.Generator) -> list[SimulatedStudy]:
    """``n_studies`` independent studies of ``design``."""
    lay = _layout(design)
    return [draw(design, lay, rng) for _ in range(n_studies)]


def on_shared_tasks(st: SimulatedStudy) -> SimulatedStudy:
    """Both sides over the tasks with a first pick on both sides (as ``control_effect`` does)."""
    both = np.intersect1d(st.canary.tasks, st.twin.tasks)
    return SimulatedStudy(st.canary.take(np.isin(st.canary.tasks, both)), st.twin.take(np.isin(st.twin.tasks, both)))


# --------------------------------------------------------------------------- size and coverage


@dataclass(frozen=True)
class Calibration:
    """Over simulated studies of one design: per estimand (``rate``: the canary's first-pick
    rate, ``delta``: canary - twin) the share of ``1 - alpha`` intervals covering the truth,
    with the truth above / below and the mean width; ``reject_t`` the two-sided t test's
    rejection of ``delta = 0`` and ``reject_swap`` the randomisation test's (both at
    ``alpha``; sizes when the design has no canary-twin difference), ``reject_swap_family``
    the swap test's rejection at ``alpha / family`` (the first step of a Holm family of that
    size: with every member null and independent, the family-wise error is
    ``1 - (1 - reject_swap_family)^family``, :attr:`family_error`), and ``words`` the share of
    studies given each diagnosis word (a family of one type; ``min_clusters`` 2, so that small
    studies show their words' errors rather than ``inconclusive``)."""

    design: CrossedDesign
    studies: int
    alpha: float
    family: int
    covered: dict[str, float]
    truth_above: dict[str, float]
    truth_below: dict[str, float]
    width: dict[str, float]
    reject_t: float
    reject_swap: float
    reject_swap_family: float
    words: dict[str, float]

    @property
    def se(self) -> float:
        """The Monte Carlo standard error of a share of ``1 - alpha`` over these studies."""
        return float(np.sqrt(self.alpha * (1 - self.alpha) / self.studies))

    @property
    def family_error(self) -> float:
        return float(1.0 - (1.0 - self.reject_swap_family) ** self.family)


def control_entry(boot: Any, canary: Sample, twin: Sample, *, p_swap: float | None, alpha: float = 0.05,
                  margin: float = 0.10) -> dict[str, Any]:
    """One control-effect entry, as ``control_effect`` computes it before its family's Holm
    step: ``delta``, ``lo``, ``hi``, ``se``, ``df``, ``clusters``, ``tools``, ``wordings``,
    ``p`` (``p_swap``, the randomisation test: :func:`~._swap.swap_p_value`), ``p_t`` (the
    interval's t test) and the equivalence and rate tests of :func:`~._equivalence.equivalence_tests`.
    A family of entries then gets :func:`~._equivalence.word_tests` (Holm) and each
    :func:`~._equivalence.diagnose` (its word): what a power simulation runs per study."""
    from ._bootstrap import paired_delta
    from ._equivalence import equivalence_tests
    from ._wald import cluster_robust_rate

    d = paired_delta(boot, canary, twin, label=("control_effect",), alpha=alpha)
    e: dict[str, Any] = {"outcome": "first_pick", "canary": d["a"], "control": d["b"], "delta": d["delta"],
                         "lo": d["lo"], "hi": d["hi"], "p": p_swap, "p_t": d["p"], "se": d["se"], "df": d["df"],
                         "clusters": d["clusters"], "tools": d["tools"], "wordings": d["wordings"]}
    e.update(equivalence_tests(e, cluster_robust_rate(boot, canary), cluster_robust_rate(boot, twin), margin))
    return e


def calibration(design: CrossedDesign, n_studies: int, *, alpha: float = 0.05, seed: int = 0, swap_draws: int = 2000,
                family: int = 6, margin: float = 0.10, unit: str = "task_x_item") -> Calibration:
    """Simulate ``n_studies`` studies of ``design`` and measure its intervals, tests and words,
    each computed exactly as ``canarykit stats`` computes it (:func:`~._bootstrap.paired_delta`,
    the rate's interval, :func:`~._swap.swap_p_value`, the words of :mod:`._equivalence`)."""
    from ._bootstrap import make_resampler, paired_delta
    from ._equivalence import DIAGNOSES, diagnose, word_tests
    from ._swap import swap_p_value

    truth = {"rate": design.canary, "delta": design.delta}
    hit, above, below, width = ({k: 0.0 for k in truth} for _ in range(4))
    words = dict.fromkeys(DIAGNOSES, 0.0)
    rej_t = rej_s = rej_f = 0
    rng = np.random.default_rng([seed, design.tasks, design.wordings])
    lay = _layout(design)
    for i in range(n_studies):
        st = on_shared_tasks(draw(design, lay, rng))
        boot = make_resampler(unit, np.unique(st.canary.tasks), 1000, seed + i)  # type: ignore[arg-type]
        (lo,), (hi,) = boot.draws(("rate",), [st.canary]).intervals(alpha)
        d = paired_delta(boot, st.canary, st.twin, label=("delta",), alpha=alpha)
        for k, (a, b) in (("rate", (lo, hi)), ("delta", (d["lo"], d["hi"]))):
            a = -np.inf if a is None or not np.isfinite(a) else float(a)
            b = np.inf if b is None or not np.isfinite(b) else float(b)
            hit[k] += a <= truth[k] <= b
            above[k] += truth[k] > b
            below[k] += truth[k] < a
            width[k] += min(b, 1.0) - max(a, -1.0)
        rej_t += d["p"] is not None and d["p"] < alpha
        p = swap_p_value(st.canary, st.twin, swap_draws, rng)
        rej_s += p is not None and p < alpha
        rej_f += p is not None and p < alpha / family
        e = control_entry(boot, st.canary, st.twin, p_swap=p, alpha=alpha, margin=margin)
        word_tests([e], alpha)
        words[diagnose(e, alpha, 2)] += 1
    n = float(n_studies)
    return Calibration(design, n_studies, alpha, family, {k: v / n for k, v in hit.items()},
                       {k: v / n for k, v in above.items()}, {k: v / n for k, v in below.items()},
                       {k: v / n for k, v in width.items()}, rej_t / n, rej_s / n, rej_f / n,
                       {k: v / n for k, v in words.items()})
