"""Per-seed stability: does each headline finding hold in every seed on its own?

The paper claims its findings "survive all three seeds". Each finding is recomputed on the
runs of one seed at a time (a seed permutes the tool order; the tasks are the same):

- ``csr_order``: for each pair of models adjacent in the csr ranking of a canary condition
  (models under test), the lower-csr model stays lower (per-seed value: csr(b) - csr(a) > 0);
- ``csr_ranking``: the whole ranking (per-seed value: Kendall's tau-b against the pooled
  csr; survives when it is 1, the same order);
- ``contrast`` (family ``contrasts``, task-clustered): every Holm-significant pairwise
  contrast keeps its sign (per-seed value: the difference of the two trap rates). The
  paper's Fisher tests assume independent runs: they are in the ``replication`` block and
  never feed this table;
- ``tsr_delta``: each model's tsr delta keeps its sign (per-seed value: the seed's delta).

A finding *survives* when its per-seed value has the pooled sign in every seed (and is
defined in every seed); with a single seed there is nothing to compare (``survives`` null).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats as sps

from ..types import CANARY_TYPES
from ._cells import Cell, Study

_CANARY_CONDITIONS = ("declared", "full")


def _mean(values: np.ndarray) -> float | None:
    v = values[np.isfinite(values)]
    return float(v.mean()) if v.size else None


class _SeedCells:
    """The runs of one (condition, model) and seed, cut once (findings share them)."""

    def __init__(self, st: Study) -> None:
        self.st = st
        self.cache: dict[tuple[str, str, int], Cell] = {}

    def __call__(self, c: str, m: str, seed: int) -> Cell:
        key = (c, m, seed)
        if key not in self.cache:
            cell = self.st.cell(c, m)
            self.cache[key] = cell.where(cell.seeds == seed)
        return self.cache[key]


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def _sign(x: float | None) -> float | None:
    return None if x is None else float(np.sign(x))


def _finding(kind: str, condition: str, family: str | None, description: str, estimate: float | None,
             per_seed: dict[int, float | None], n_seeds: int) -> dict[str, Any]:
    survives: bool | None
    if n_seeds < 2:
        survives = None
    elif kind == "csr_ranking":
        survives = all(v is not None and v >= 1.0 - 1e-12 for v in per_seed.values())
    else:
        target = _sign(estimate)
        survives = target is not None and all(v is not None and _sign(v) == target for v in per_seed.values())
    return {
        "finding": description, "kind": kind, "condition": condition, "family": family, "estimate": estimate,
        "per_seed": {str(s): v for s, v in per_seed.items()}, "survives": survives,
    }


def _rate_per_seed(seed_cell: _SeedCells, c: str, m: str, j: int, seeds: list[int]) -> dict[int, float | None]:
    return {s: seed_cell(c, m, s).trap_sample(j).mean() for s in seeds}


def stability(st: Study, result: dict[str, Any]) -> dict[str, Any]:
    """The per-seed stability table (see the module docstring) as a JSON-ready dict."""
    seeds = st.seeds
    n = len(seeds)
    seed_cell = _SeedCells(st)
    findings: list[dict[str, Any]] = []
    for c in (c for c in _CANARY_CONDITIONS if c in st.conds):
        pooled = {m: result["csr_ci"][c][m]["csr"] for m in st.tested_in(c)}
        models = sorted((m for m in pooled if pooled[m] is not None), key=lambda m: (pooled[m], m))
        per_seed_csr = {s: {m: _mean(seed_cell(c, m, s).csr) for m in models} for s in seeds}
        for a, b in zip(models, models[1:], strict=False):
            if not pooled[a] < pooled[b]:
                continue
            ps: dict[int, float | None] = {}
            for s in seeds:
                va, vb = per_seed_csr[s][a], per_seed_csr[s][b]
                ps[s] = None if va is None or vb is None else vb - va
            findings.append(_finding("csr_order", c, None, f"csr {c}: {a} < {b}", pooled[b] - pooled[a], ps, n))
        if len(models) >= 2:
            ps = {}
            for s in seeds:
                vals = [per_seed_csr[s][m] for m in models]
                if any(v is None for v in vals):
                    ps[s] = None
                    continue
                tau = sps.kendalltau([pooled[m] for m in models], vals).statistic
                ps[s] = float(tau) if np.isfinite(tau) else None
            findings.append(_finding("csr_ranking", c, None, f"csr ranking {c}: " + " < ".join(models), 1.0, ps, n))

    for c in st.conds:
        for family, kind in (("contrasts", "contrast"),):
            for row in result[family][c]["contrasts"]:
                if not row.get("significant"):
                    continue
                j = CANARY_TYPES.index(row["type"])
                a, b = row["model_a"], row["model_b"]
                ra, rb = _rate_per_seed(seed_cell, c, a, j, seeds), _rate_per_seed(seed_cell, c, b, j, seeds)
                ps = {s: _diff(ra[s], rb[s]) for s in seeds}
                est = st.cell(c, a).trap_sample(j).mean()
                est_b = st.cell(c, b).trap_sample(j).mean()
                estimate = None if est is None or est_b is None else est - est_b
                findings.append(_finding(kind, c, f"{family}.{c}", f"{row['type']} trap rate {c}: {a} vs {b}", estimate, ps, n))

    for c, by_model in result["tsr_delta"].items():
        for m in st.tested_in(c):
            e = by_model.get(m)
            if e is None or e["delta"] is None:
                continue
            ps = {}
            for s in seeds:
                base = seed_cell("baseline", m, s).tsr_sample().mean()
                cond = seed_cell(c, m, s).tsr_sample().mean()
                ps[s] = None if base is None or cond is None else base - cond
            findings.append(_finding("tsr_delta", c, None, f"tsr delta {c}: {m}", e["delta"], ps, n))

    judged = [f for f in findings if f["survives"] is not None]
    return {
        "seeds": seeds,
        "n_findings": len(findings),
        "n_surviving": sum(1 for f in judged if f["survives"]),
        "note": None if n >= 2 else "fewer than two seeds: per-seed stability cannot be assessed",
        "findings": findings,
    }
