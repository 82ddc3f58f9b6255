"""Descriptive figures without inference: csr by difficulty, the outcome of recovered and
unrecovered trapped runs, and trap-rate averages over model groups."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..types import CANARY_TYPES, DIFFICULTIES
from ._cells import Cell, Study

#: ``recovery_outcome`` keys: every model pooled, and the two canary conditions pooled.
POOLED = "__pooled__"
DECLARED_FULL = "declared+full"
CANARY_CONDITIONS: tuple[str, ...] = ("declared", "full")


def csr_by_difficulty(st: Study) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for c in st.conds:
        out[c] = {}
        for m in st.models[c]:
            cell = st.cell(c, m)
            out[c][m] = {d: _mean_where(cell.csr, cell.difficulty == d) for d in DIFFICULTIES}
    return out


def _mean_where(values: np.ndarray, mask: np.ndarray) -> float | None:
    v = values[mask & np.isfinite(values)]
    return float(v.mean()) if v.size else None


def _outcome(cells: list[Cell]) -> dict[str, Any]:
    rec = np.concatenate([c.recovery[c.trapped & np.isfinite(c.success)] for c in cells]) if cells else np.zeros(0)
    suc = np.concatenate([c.success[c.trapped & np.isfinite(c.success)] for c in cells]) if cells else np.zeros(0)
    flag = np.nan_to_num(rec, nan=0.0) > 0.5
    out = {}
    for key, sel in (("recovered", flag), ("not_recovered", ~flag)):
        out[key] = {"n": int(sel.sum()), "success_rate": float(suc[sel].mean()) if sel.any() else None}
    return out


def recovery_outcome(st: Study) -> dict[str, Any]:
    every = sorted(set().union(*[set(v) for v in st.models.values()])) if st.models else []
    out: dict[str, Any] = {}
    for c in st.conds:
        out[c] = {m: _outcome([st.cell(c, m)]) for m in every}
        out[c][POOLED] = _outcome([st.cell(c, m) for m in every])
    both = [c for c in CANARY_CONDITIONS if c in st.conds]
    if both:
        out[DECLARED_FULL] = {m: _outcome([st.cell(c, m) for c in both]) for m in every}
        out[DECLARED_FULL][POOLED] = _outcome([st.cell(c, m) for c in both for m in every])
    return out


def trap_rate_averages(
    rows: dict[str, dict[str, float | None]], groups_of: dict[str, str], averages: dict[str, list[str]] | None
) -> dict[str, Any]:
    if averages is None:
        averages = {g: [g] for g in sorted(set(groups_of.values()))}
    out: dict[str, Any] = {}
    for name, groups in averages.items():
        members = sorted(m for m in rows if groups_of.get(m) in set(groups))
        rates: dict[str, float | None] = {}
        for t in CANARY_TYPES:
            vals = [v for m in members if (v := rows[m][t]) is not None]
            rates[t] = float(np.mean(vals)) if vals else None
        out[name] = {"groups": list(groups), "models": members, "rates": rates}
    return out
