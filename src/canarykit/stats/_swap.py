"""A randomisation test of sides: does it matter which side of a pair a run was on?

The control effect pairs, per (task, seed), the run offered T's canary (``declared``) with the
run offered its twin (``control``, arm T): the same list except T's stand-in, the same task,
tool and wording (a twin carries its canary's wording). Under the null "the canary's tell
changes nothing" (the agent treats canary and twin alike) the two runs of a pair are
exchangeable, whatever task, tool and wording effects there are and however few tasks,
tools or wordings the study has: given those effects the runs are independent draws from one
distribution. Swapping the sides of any set of pairs therefore leaves the data's
distribution unchanged, and the share of random swaps whose difference is at least as far
from 0 as the observed one is an exact p-value (Fisher's randomisation test; Monte Carlo
over ``draws`` random swap patterns, ``p = (1 + k) / (1 + draws)``, valid for any number of
draws). A pair whose one side has no defined run (no first pick) swaps that run with its
absence: definedness is part of the outcome.

The statistic is the difference itself, ``mean(a) - mean(b)`` over each side's defined
runs. Its exactness rests on that null, not on a variance estimate: the t interval of the
difference (:mod:`._crossed`) stays its interval, and a word needs both (docs/canaries.md,
"Reading control_effect").
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._intervals import derive_rng
from ._sample import Sample

__all__ = ["swap_p_value", "swap_p_values"]

#: Swap patterns drawn per chunk of one test: bounds memory (int8 patterns, float products).
_CHUNK = 2_000_000


def _pair_sums(a: Sample, b: Sample) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per pairing key (the union of both sides' keys): each side's sum and count."""
    assert a.pairs is not None and b.pairs is not None
    keys, inv = np.unique(np.concatenate([np.asarray(a.pairs, dtype=str), np.asarray(b.pairs, dtype=str)]),
                          return_inverse=True)
    ia, ib = inv[: a.n], inv[a.n :]
    p = keys.size
    return (np.bincount(ia, weights=a.values, minlength=p), np.bincount(ia, minlength=p).astype(float),
            np.bincount(ib, weights=b.values, minlength=p), np.bincount(ib, minlength=p).astype(float))


def swap_p_value(a: Sample, b: Sample, draws: int, rng: np.random.Generator) -> float | None:
    """Two-sided randomisation p of ``mean(a) - mean(b) = 0`` by swapping the sides of pairs
    (module docstring); ``a`` and ``b`` carry pairing keys (``pairs``, e.g. ``"task|seed"``).
    None when a side has no run or no keys, or ``draws < 1``."""
    if a.n == 0 or b.n == 0 or a.pairs is None or b.pairs is None or draws < 1:
        return None
    sa, na, sb, nb = _pair_sums(a, b)
    observed = abs(sa.sum() / na.sum() - sb.sum() / nb.sum())
    ds, dn = sb - sa, nb - na
    swappable = (ds != 0) | (dn != 0)  # a pair whose sides are equal changes nothing when swapped
    ds, dn = ds[swappable], dn[swappable]
    if ds.size == 0:
        return 1.0
    tot = (sa.sum(), na.sum(), sb.sum(), nb.sum())
    extreme = 0
    per = max(1, _CHUNK // ds.size)
    tol = 1e-12 * max(1.0, observed)
    for start in range(0, draws, per):
        rows = min(per, draws - start)
        flip = rng.integers(0, 2, size=(rows, ds.size), dtype=np.int8).astype(float)
        move_s, move_n = flip @ ds, flip @ dn
        a_n, b_n = tot[1] + move_n, tot[3] - move_n
        with np.errstate(invalid="ignore", divide="ignore"):
            d = (tot[0] + move_s) / a_n - (tot[2] - move_s) / b_n
        # a swap pattern that leaves a side without runs has no difference: counted as extreme
        extreme += int(np.sum(~np.isfinite(d) | (np.abs(d) >= observed - tol)))
    return float((1 + extreme) / (1 + draws))


def swap_p_values(specs: Sequence[tuple[Sequence[str], Sample, Sample]], draws: int, seed: int) -> list[float | None]:
    """:func:`swap_p_value` of every ``(label, a, b)``, each with its own generator
    (``default_rng([seed, crc32(label)...])``): a test's p does not depend on which other
    tests are run."""
    return [swap_p_value(a, b, draws, derive_rng(seed, "swap", *label)) for label, a, b in specs]
