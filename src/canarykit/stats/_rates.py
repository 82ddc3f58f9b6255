"""Per-model rates with their intervals: csr, tsr (both treatments of truncated runs), the
type-specific trap rates and recovery, per condition of the primary pool."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..types import CANARY_TYPES
from ._bootstrap import Estimates, Sample, finite, rate_draws
from ._cells import N_TYPES, Cell, Study
from ._crossed import FEW_CLUSTERS, FEW_WORDINGS


def few(s: Sample) -> bool:
    """Whether the rate rests on fewer than :data:`~._crossed.FEW_CLUSTERS` tasks."""
    return bool(s.clusters < FEW_CLUSTERS)


def n_items(s: Sample) -> int | None:
    """Distinct canary items behind a per-type rate (None when the runs table names none)."""
    if s.items is None:
        return None
    named = np.unique(s.items[s.items != ""])
    return int(named.size) or None


def csr_ci(st: Study) -> dict[str, Any]:
    out: dict[str, Any] = {c: {} for c in st.conds}
    for c, m, s, lo, hi in st.cell_intervals("csr", Cell.csr_sample):
        k = st.counts[c][m]
        out[c][m] = {
            "csr": s.mean(), "lo": lo, "hi": hi, "n": s.n, "n_zero_call": k["zero_call"],
            "n_runs": k["runs"], "n_failed": k["failed"], "n_truncated": k["truncated"], "clusters": s.clusters,
            "few_clusters": few(s),
        }
    return out


def tsr_blocks(st: Study) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    ci: dict[str, Any] = {c: {} for c in st.conds}
    headline: dict[str, Any] = {c: {} for c in st.conds}
    taf: dict[str, Any] = {c: {} for c in st.conds}
    for c, m, s, lo, hi in st.cell_intervals("tsr", Cell.tsr_sample):
        cell = st.cell(c, m)
        t = cell.tsr_sample(truncated_as_failure=True).mean()
        ci[c][m] = {"tsr": s.mean(), "lo": lo, "hi": hi, "n": s.n, "n_truncated": int(cell.truncated.sum()),
                    "tsr_truncated_as_failure": t, "clusters": s.clusters, "few_clusters": few(s)}
        headline[c][m] = s.mean()
        taf[c][m] = t
    return ci, headline, taf


@dataclass
class TrapDraws:
    """Per (condition, model, type): the sample and the column of its bootstrap draws in
    ``draws`` (reused by the pairwise contrasts)."""

    samples: dict[tuple[str, str, int], Sample]
    column: dict[tuple[str, str, int], int]
    draws: Estimates | None


def trap_rates(st: Study) -> tuple[dict[str, Any], dict[str, Any], TrapDraws]:
    rates: dict[str, Any] = {}
    cis: dict[str, Any] = {}
    keys: list[tuple[str, str, int]] = []
    samples: list[Sample] = []
    for c in st.conds:
        for m in st.models[c]:
            cell = st.cell(c, m)
            for j in range(N_TYPES):
                s = cell.trap_sample(j)
                if s.n:
                    keys.append((c, m, j))
                    samples.append(s)
    draws = rate_draws(st.boot, [(("trap_rate", c, m, CANARY_TYPES[j]), s) for (c, m, j), s in zip(keys, samples, strict=True)])
    lo, hi = draws.intervals(st.config.alpha) if keys else (np.empty(0), np.empty(0))
    td = TrapDraws(dict(zip(keys, samples, strict=True)), {k: i for i, k in enumerate(keys)}, draws)
    for c in st.conds:
        rates[c], cis[c] = {}, {}
        for m in st.models[c]:
            cell = st.cell(c, m)
            rates[c][m], cis[c][m] = {}, {}
            for j, t in enumerate(CANARY_TYPES):
                s = cell.trap_sample(j)
                offered = cell.present[:, j]
                entry: dict[str, Any] = {
                    "rate": s.mean(), "lo": None, "hi": None, "n": s.n, "trapped": int(s.values.sum()),
                    "n_zero_call": int((offered & (cell.calls == 0)).sum()), "clusters": s.clusters,
                    "items": n_items(s), "wordings": s.n_wordings, "few_clusters": few(s),
                    "few_wordings": bool(0 < (s.n_wordings or 0) < FEW_WORDINGS) if s.n_wordings is not None else None,
                }
                if (c, m, j) in td.column:
                    i = td.column[(c, m, j)]
                    entry["lo"], entry["hi"] = finite(lo[i]), finite(hi[i])
                rates[c][m][t] = s.mean()
                cis[c][m][t] = entry
    return rates, cis, td


def recovery_ci(st: Study) -> dict[str, Any]:
    out: dict[str, Any] = {c: {} for c in st.conds}
    for c, m, s, lo, hi in st.cell_intervals("recovery", Cell.recovery_sample):
        out[c][m] = {"rate": s.mean(), "n": s.n, "lo": lo, "hi": hi, "clusters": s.clusters, "few_clusters": few(s)}
    return out
