"""Judge sensitivity: tsr and every tsr-based result again under the cross judge.

The headline tsr rests on the primary judge. The runs table's ``success_cross`` holds the
cross judge's verdicts (``judge.cross``); this block recomputes, with them in place of
``success``, every result built on the verdicts: tsr and its interval, tsr with truncated
runs as failures, the tsr deltas, the within-model Spearman of csr and success, the
within-model association (GEE) and the outcome of trapped runs. A finding that holds under
one judge only is a finding about the judge. The same runs, definitions and intervals
(unit, seed, resamples) as the headline; ``difference`` is primary minus cross per
condition and model.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from ._cells import Study, build_study
from ._comparisons import association_test, spearman_by_model, with_family_reason
from ._deltas import tsr_delta
from ._descriptives import recovery_outcome
from ._rates import tsr_blocks

CROSS = "success_cross"


def judge_sensitivity(df: pl.DataFrame, st: Study, headline_tsr: dict[str, Any]) -> dict[str, Any]:
    """The ``judge_sensitivity`` block of ``stats.json`` (module docstring)."""
    out: dict[str, Any] = {"judge": "cross", "column": CROSS, "available": False, "note": None}
    prim = df.filter((pl.col("pool") == st.config.primary_pool) & ~pl.col("error"))
    if CROSS not in df.columns or prim.get_column(CROSS).null_count() == prim.height:
        out["note"] = "no cross-judge verdicts (success_cross) in the runs table: judge.cross not run"
        return out
    alt = build_study(df.with_columns(pl.col(CROSS).cast(pl.Boolean).alias("success")), st.config)
    tsr_ci, tsr, taf = tsr_blocks(alt)
    diff = {c: {m: (None if headline_tsr[c].get(m) is None or tsr[c].get(m) is None else headline_tsr[c][m] - tsr[c][m])
                for m in tsr[c]} for c in tsr}
    out.update(
        available=True,
        tsr_ci=tsr_ci, tsr=tsr, tsr_truncated_as_failure=taf, difference=diff,
        tsr_delta=tsr_delta(alt),
        spearman_by_model={c: spearman_by_model(alt, c) for c in alt.conds},
        association={c: with_family_reason(alt, c, association_test(alt, c), need=1) for c in alt.conds},
        recovery_outcome=recovery_outcome(alt),
    )
    return out
