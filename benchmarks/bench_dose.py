"""Benchmark: the dose curves' growth estimand (docs/dose.md, "How growth is estimated").

**Bias** (grouped binomial draws, no clustering): per curve, 30 runs at each level k = 1, 2,
4, 8, the growth (logistic slope on log2 k over k >= 1) by Firth's penalised likelihood (the
estimator), by the half/half prior the curves used before (half a trapped and half an
untrapped run added at each level) and by plain maximum likelihood (over the draws where it
has a finite estimate; the share without one is printed). Truth: the logistic fit to the
curve's rates themselves (what every estimator tends to with many runs).

**Coverage** (clustered): ``T`` tasks x 2 seeds, levels 1, 2, 4, 8, a typed curve and its
twin curve on the same (task, seed) cells; logit-normal task effects shared by a task's runs
of both curves; wordings drawn per (task, seed) from a bank of 8 whose entries shift the
log-odds (sd 0.5, one fixed bank: the claim is about this bank, as in a study). Per study:
the 95% interval of the typed curve's growth and of the typed-minus-twin growth (the
interaction) and level at k = 1, computed exactly as ``canarykit stats`` does, and whether
it covers the population value (the estimator on 20,000 tasks of the same design).

Run: ``.venv/bin/python benchmarks/bench_dose.py [--studies N]`` (default 1,000 studies per
row: a few minutes on 2 cores). Never asserted in the test suite (tests/test_stats_dose.py
checks the bias on the rare curve and the size of a flat curve's interval).
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass

import numpy as np
from scipy.special import expit, logit

from canarykit.stats._dose_fit import combine, firth_logit, fit_curve, rate_difference

X = np.log2([1.0, 2.0, 4.0, 8.0])


def bias_rows(draws: int) -> None:
    print(f"Bias of the growth (mean of {draws} draws, 30 runs per level k = 1, 2, 4, 8)")
    print("| curve (k = 0, 1, 2, 4, 8) | truth | Firth (now) | half/half prior (before) | plain MLE | no finite MLE |")
    print("|---|---|---|---|---|---|")
    rng = np.random.default_rng(2027)
    for rates in ((0.02, 0.03, 0.05, 0.08), (0.2, 0.3, 0.4, 0.5), (0.5, 0.5, 0.5, 0.5), (0.05, 0.05, 0.05, 0.05)):
        r, n = np.array(rates), 30
        truth = float(firth_logit(X, r, weights=np.full(4, 1e6), penalty=0.0)[0][1])
        s = rng.binomial(n, r, size=(draws, 4))
        firth = np.array([firth_logit(X, d / n, weights=np.full(4, n))[0][1] for d in s])
        prior = np.array([firth_logit(X, (d + 0.5) / (n + 1), weights=np.full(4, n + 1), penalty=0.0)[0][1] for d in s])
        mle = np.array([firth_logit(X, d / n, weights=np.full(4, n), penalty=0.0, max_iter=60)[0][1] if 0 < d.sum() < 4 * n
                        else np.inf for d in s])
        finite = np.abs(mle) < 15

        print(f"| 0, {', '.join(f'{x:g}' for x in rates)} | {truth:.3f} | {_cell(firth, truth)} | {_cell(prior, truth)} | "
              f"{_cell(mle[finite], truth)} | {1 - finite.mean():.1%} |")


def _cell(v: np.ndarray, truth: float) -> str:
    rel = "" if abs(truth) < 1e-9 else f" ({100 * (v.mean() / truth - 1):+.0f}%)"
    return f"{v.mean():.3f}{rel}"


@dataclass(frozen=True)
class Design:
    label: str
    level: float  # typed rate at k = 1 (population, before task effects)
    growth: float  # typed log-odds per doubling
    twin_level: float
    twin_growth: float
    task_sd: float = 1.0
    wording_sd: float = 0.5


def simulate(d: Design, tasks: int, rng: np.random.Generator, bank: np.ndarray) -> tuple[np.ndarray, ...]:
    """One study: per (task, seed, k) a typed and a twin run (first picks), the k wordings
    drawn per (task, seed) and shared by both, task effects shared too."""
    seeds = 2
    u = rng.normal(size=tasks) * d.task_sd
    order = np.argsort(rng.random((tasks, seeds, bank.size)), axis=2)  # a random order of the bank per (task, seed)
    ks = np.array([1, 2, 4, 8])
    word = np.stack([bank[order[:, :, :k]].mean(axis=2) for k in ks], axis=2)  # mean effect of the first k
    x = np.broadcast_to(np.log2(ks), (tasks, seeds, 4))
    base = u[:, None, None] + word
    typed = rng.random(x.shape) < expit(logit(d.level) + d.growth * x + base)
    twin = rng.random(x.shape) < expit(logit(d.twin_level) + d.twin_growth * x + base)
    codes = np.broadcast_to(np.arange(tasks)[:, None, None], x.shape)
    return x.ravel(), typed.ravel().astype(float), twin.ravel().astype(float), codes.ravel()


def population(d: Design, bank: np.ndarray, tasks: int = 20000) -> list[float]:
    """The three estimands on one study of ``tasks`` tasks (the population value)."""
    x, typed, twin, _ = simulate(d, tasks, np.random.default_rng(1), bank)
    gt, gw = firth_logit(x, typed)[0][1], firth_logit(x, twin)[0][1]
    one = x == 0
    return [gt, gt - gw, float(typed[one].mean() - twin[one].mean())]


def estimates(d: Design, tasks: int, rng: np.random.Generator, bank: np.ndarray, alpha: float = 0.05) -> list[tuple[float, float, float]]:
    x, typed, twin, codes = simulate(d, tasks, rng, bank)
    ft, fw = fit_curve(x, typed, codes), fit_curve(x, twin, codes)
    one = x == 0
    out = []
    for e in (combine([ft], [[0.0, 1.0]], tasks), combine([ft, fw], [[0.0, 1.0], [0.0, -1.0]], tasks)):
        lo, hi = e.interval(alpha)
        out.append((e.estimate, lo, hi))
    level = rate_difference(typed[one], codes[one], twin[one], codes[one], tasks, alpha)
    return [*out, (level["estimate"], level["lo"], level["hi"])]


def coverage_rows(studies: int) -> None:
    bank = np.random.default_rng(8).normal(size=8) * 0.5
    designs = (
        Design("moderate, interaction 0", 0.5, 0.5, 0.5, 0.5),
        Design("moderate, interaction 0.5", 0.4, 0.8, 0.5, 0.3),
        Design("rare, interaction 0", 0.03, 0.4, 0.03, 0.4, task_sd=0.5),
        Design("flat from k = 1 (planted)", 0.5, 0.0, 0.5, 0.0, task_sd=0.5, wording_sd=0.0),
    )
    names = ("growth", "interaction (growth - twins')", "level - twins' at k = 1")
    print(f"\nCoverage of 95% intervals ({studies} studies per row; Monte Carlo se about "
          f"{np.sqrt(0.95 * 0.05 / studies):.3f}); in parentheses: truth above / below the interval")
    print("| design | tasks | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    for d in designs:
        b = bank if d.wording_sd else np.zeros_like(bank)
        truth = population(d, b)
        for tasks in (8, 12, 30, 120):
            rng = np.random.default_rng(tasks)
            hits = np.zeros((3, 3))
            for _ in range(studies):
                for i, (_, lo, hi) in enumerate(estimates(d, tasks, rng, b)):
                    hits[i] += (lo <= truth[i] <= hi, truth[i] > hi, truth[i] < lo)
            cells = [f"{h[0] / studies:.3f} ({h[1] / studies:.1%} / {h[2] / studies:.1%})" for h in hits]
            print(f"| {d.label} | {tasks} | " + " | ".join(cells) + " |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=1000)
    args = ap.parse_args()
    t0 = time.perf_counter()
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    bias_rows(4000)
    coverage_rows(args.studies)
    print(f"\n{time.perf_counter() - t0:.0f} s; load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
