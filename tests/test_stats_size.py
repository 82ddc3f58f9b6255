"""Tests of the size they claim (issue 27, item 2), a smoke version of
``benchmarks/bench_coverage.py`` (its full grid: 2,000 studies per design at 8, 12, 30 and
120 tasks, docs/statistics.md).

Simulated control contrasts with task, tool and wording effects shared the way the design
shares them (``stats._simulate``), every number computed as ``canarykit stats`` computes it.
Bands are Monte Carlo bands: 3 standard errors of the share over the studies run. The
randomisation test of sides is exact when the tell changes nothing, whatever the effects; the
intervals, with tasks, tools and wordings crossed, cover a real delta; the words make no
claim the null contradicts beyond their error rate.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from canarykit import stats
from canarykit.stats._simulate import CrossedDesign, calibration

STUDIES = 300
SE = math.sqrt(0.05 * 0.95 / STUDIES)


def test_the_randomisation_test_of_sides_is_exact_under_a_null_with_shared_effects() -> None:
    """Canary = twin = 0.30 with task (sd 1), tool (sd 0.5) and wording (sd 0.5, K = 3 shared
    across tools) effects, 30 tasks: the swap test rejects at most alpha (up to Monte Carlo
    error), at alpha / 6 at most about alpha / 6; the t interval of the delta covers 0 at least
    nominally; no type is read lured or sensitive beyond alpha."""
    c = calibration(CrossedDesign(tasks=30, wording_sd=0.5), STUDIES, seed=11, swap_draws=1000)
    print(c)
    assert c.reject_swap <= 0.05 + 3 * SE and c.reject_swap_family <= 0.05 / 6 + 3 * math.sqrt(0.05 / 6 / STUDIES)
    assert c.covered["delta"] >= 0.95 - 3 * SE and c.covered["rate"] >= 0.90
    assert c.words["lured"] + c.words["sensitive"] <= 0.05 + 3 * SE


def test_a_real_delta_is_covered_and_found() -> None:
    """Canary 0.45, twin 0.15 (a delta of 0.30, shared task, tool and wording effects), 30
    tasks: the delta's interval covers nominally, the randomisation test finds it, and the
    type is never read sensitive or negligible."""
    c = calibration(CrossedDesign(tasks=30, canary=0.45, twin=0.15), STUDIES, seed=12, swap_draws=1000)
    print(c)
    assert abs(c.covered["delta"] - 0.95) <= 3 * SE and c.reject_swap > 0.9
    assert c.words["lured"] > 0.4 and c.words["sensitive"] == c.words["negligible"] == 0.0


def test_the_swap_test_on_pairs() -> None:
    """Identical sides: p = 1; a side that always differs in one direction: p at its floor;
    the p of one label does not depend on other tests; a pair missing one side still swaps."""
    tasks = np.repeat([f"t{i}" for i in range(20)], 3)
    pairs = np.char.add(np.char.add(tasks, "|"), np.tile(np.arange(3), 20).astype(str))
    y = (np.arange(60) % 3 == 0).astype(float)
    a, b = stats.Sample(y, tasks, pairs), stats.Sample(y.copy(), tasks, pairs)
    assert stats.swap_p_value(a, b, 500, np.random.default_rng(1)) == 1.0
    up = stats.Sample(np.ones(60), tasks, pairs)
    down = stats.Sample(np.zeros(60), tasks, pairs)
    assert stats.swap_p_value(up, down, 999, np.random.default_rng(1)) == pytest.approx(1 / 1000)
    one = stats.swap_p_values([(("x",), up, down)], 200, 5)
    two = stats.swap_p_values([(("y",), a, b), (("x",), up, down)], 200, 5)
    assert one[0] == two[1]
    partial = stats.Sample(np.ones(59), tasks[1:], pairs[1:])
    assert stats.swap_p_value(partial, down, 999, np.random.default_rng(2)) == pytest.approx(1 / 1000)
    assert stats.swap_p_value(stats.Sample(y, tasks), b, 100, np.random.default_rng(1)) is None  # no pairing keys
