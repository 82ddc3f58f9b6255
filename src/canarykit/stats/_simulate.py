"""Simulated studies with tasks and canary items as crossed random factors, and a known
truth: what the coverage benchmark (``benchmarks/bench_coverage.py``), its small test and the
GLMM comparison draw from.

The design of one type's contrast (issue 20): ``tasks`` tasks, each with ``seeds`` seeds;
a task's correct tool is shared with ``tasks_per_tool - 1`` other tasks (tools hold the
canaries); a canary item is a (tool, wording variant), ``variants`` per tool, and each (task,
seed) is offered one variant, balanced over seeds (seed ``s`` of task ``g`` gets variant
``(s + g) mod variants``). Per (task, seed) there are two runs, one offered the canary
(``declared``) and one its twin (``control``). On the logit scale

    canary: mu_canary + a_task + b_item          twin: mu_twin + a_task + b'_item

with ``a ~ N(0, task_sd²)``, ``b ~ N(0, item_sd²)`` and ``b'`` correlated ``item_corr`` with
``b`` (a twin shares its canary's name form). The estimands are population means over new
tasks *and* new items: ``E[expit(mu_canary + a + b)]`` (the per-type rate) and its difference
with the twin's (the paired delta), computed by Gauss-Hermite quadrature.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from ._sample import Sample


@dataclass(frozen=True)
class CrossedDesign:
    """One simulated type's design and its generative parameters (module docstring)."""

    tasks: int = 12
    seeds: int = 3
    variants: int = 3
    tasks_per_tool: int = 3
    canary: float = 0.35
    """The canary rate's population mean (``mu_canary`` is set to give it)."""
    twin: float = 0.20
    task_sd: float = 1.0
    item_sd: float = 0.5
    item_corr: float = 0.5

    def runs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per (task, seed): the task index, the tool index and the variant (0-based)."""
        g = np.repeat(np.arange(self.tasks), self.seeds)
        s = np.tile(np.arange(self.seeds), self.tasks)
        tool = g // self.tasks_per_tool
        return g, tool, (s + g) % self.variants

    def mu(self, rate: float) -> float:
        """The logit-scale intercept whose population mean rate is ``rate``."""
        from scipy.optimize import brentq

        return float(brentq(lambda m: marginal_rate(m, self.total_sd) - rate, -20.0, 20.0))

    @property
    def total_sd(self) -> float:
        return float(np.hypot(self.task_sd, self.item_sd))


def marginal_rate(mu: float, sd: float) -> float:
    """``E[expit(mu + sd Z)]``, ``Z ~ N(0, 1)`` (Gauss-Hermite, 60 nodes)."""
    x, w = np.polynomial.hermite_e.hermegauss(60)
    return float((w * special.expit(mu + sd * x)).sum() / w.sum())


@dataclass(frozen=True)
class SimulatedStudy:
    """One simulated study: the per-run outcomes of both arms, with tasks, pairs and items."""

    canary: Sample
    twin: Sample


def simulate(design: CrossedDesign, n_studies: int, rng: np.random.Generator) -> list[SimulatedStudy]:
    """``n_studies`` independent studies of ``design`` (new tasks and new items each time)."""
    g, tool, variant = design.runs()
    n_tools = int(tool.max()) + 1
    mu_c, mu_t = design.mu(design.canary), design.mu(design.twin)
    task_ids = np.array([f"t{i:03d}" for i in range(design.tasks)])[g]
    pairs = np.char.add(np.char.add(task_ids, "|"), np.tile(np.arange(design.seeds), design.tasks).astype(str))
    item_ids = np.char.add(np.char.add(np.array([f"tool{k:03d}" for k in range(n_tools)])[tool], "@v"), (variant + 1).astype(str))
    item_index = tool * design.variants + variant
    n_items = n_tools * design.variants
    out = []
    for _ in range(n_studies):
        a = rng.normal(0.0, design.task_sd, design.tasks)[g]
        b = rng.normal(0.0, design.item_sd, n_items)
        b_twin = design.item_corr * b + np.sqrt(1.0 - design.item_corr**2) * rng.normal(0.0, design.item_sd, n_items)
        y_c = (rng.random(g.size) < special.expit(mu_c + a + b[item_index])).astype(float)
        y_t = (rng.random(g.size) < special.expit(mu_t + a + b_twin[item_index])).astype(float)
        out.append(SimulatedStudy(Sample(y_c, task_ids, pairs, item_ids),
                                  Sample(y_t, task_ids, pairs, item_ids)))
    return out


@dataclass(frozen=True)
class Coverage:
    """Coverage of 95% (``1 - alpha``) intervals over simulated studies, per unit and estimand."""

    design: CrossedDesign
    studies: int
    covered: dict[tuple[str, str], float]
    truth_above: dict[tuple[str, str], float]
    truth_below: dict[tuple[str, str], float]
    width: dict[tuple[str, str], float]

    @property
    def se(self) -> float:
        """The Monte Carlo standard error of a coverage of 0.95 over these studies."""
        return float(np.sqrt(0.95 * 0.05 / self.studies))


def coverage(design: CrossedDesign, n_studies: int, *, units: tuple[str, ...] = ("task_x_item", "task"),
             resamples: int = 1000, alpha: float = 0.05, seed: int = 0) -> Coverage:
    """Simulate ``n_studies`` studies of ``design`` and measure, for each unit, how often the
    interval of the canary rate (``rate``) and of the paired canary - twin delta (``delta``)
    covers its population value, computed exactly as the study computes them."""
    from ._bootstrap import make_resampler, paired_delta

    truth = {"rate": design.canary, "delta": design.canary - design.twin}
    keys = [(u, k) for u in units for k in truth]
    hit = dict.fromkeys(keys, 0)
    above = dict.fromkeys(keys, 0)
    below = dict.fromkeys(keys, 0)
    width = dict.fromkeys(keys, 0.0)
    rng = np.random.default_rng([seed, design.tasks])
    for i, st in enumerate(simulate(design, n_studies, rng)):
        tasks = np.unique(st.canary.tasks)
        for unit in units:
            boot = make_resampler(unit, tasks, resamples, seed + i)  # type: ignore[arg-type]
            (lo,), (hi,) = boot.draws(("rate",), [st.canary]).intervals(alpha)
            d = paired_delta(boot, st.canary, st.twin, label=("delta",), alpha=alpha)
            for k, (a, b) in (("rate", (lo, hi)), ("delta", (d["lo"], d["hi"]))):
                a = -np.inf if a is None or not np.isfinite(a) else float(a)
                b = np.inf if b is None or not np.isfinite(b) else float(b)
                hit[(unit, k)] += int(a <= truth[k] <= b)
                above[(unit, k)] += int(truth[k] > b)
                below[(unit, k)] += int(truth[k] < a)
                width[(unit, k)] += b - a
    n = float(n_studies)
    return Coverage(design, n_studies, {k: v / n for k, v in hit.items()}, {k: v / n for k, v in above.items()},
                    {k: v / n for k, v in below.items()}, {k: v / n for k, v in width.items()})
