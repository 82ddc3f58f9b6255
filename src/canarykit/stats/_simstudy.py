"""Whole simulated studies, as runs tables ``canarykit stats`` reads: the words measured
through :func:`~._study.compute_all` itself (``benchmarks/bench_coverage.py --words``).

One model under test; per canary type a :class:`~._simulate.CrossedDesign` (its tasks are a
random subset of the study's, its tools hold ``tasks_per_tool`` of them, its ``wordings``
are drawn for the study; task, tool and wording effects as that module describes, drawn
independently per type: the six types' tests are independent, the case Holm's correction is
least conservative in). Per (task, seed) the ``declared`` run carries a first pick for every
type the task offers, and per type offered a ``control`` run (arm T) carries the twin's.
Every other column is filled so that the table satisfies the runs-table contract.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import polars as pl

from ..types import CANARY_TYPES
from ._simulate import CrossedDesign, _layout, draw


def _frame(rows: dict[str, list[Any]]) -> pl.DataFrame:
    schema: dict[str, Any] = {"model": pl.String, "group": pl.String, "condition": pl.String, "pool": pl.String,
                              "seed": pl.Int64, "task_id": pl.String, "difficulty": pl.String, "tool_calls": pl.Int64,
                              "canary_calls": pl.Int64, "csr": pl.Float64, "trapped": pl.Boolean,
                              "recovered": pl.Boolean, "success": pl.Boolean, "error": pl.Boolean,
                              "truncated": pl.Boolean, "arm": pl.String}
    for t in CANARY_TYPES:
        schema |= {f"present_{t}": pl.Boolean, f"trapped_{t}": pl.Boolean, f"control_present_{t}": pl.Boolean,
                   f"control_called_{t}": pl.Boolean, f"first_pick_{t}": pl.Boolean, f"recovered_{t}": pl.Boolean,
                   f"item_{t}": pl.String, f"wording_{t}": pl.String, f"selection_visible_{t}": pl.Boolean}
    return pl.DataFrame(rows, schema=schema)


def crossed_runs(designs: Mapping[str, CrossedDesign], rng: np.random.Generator, *, tasks: int = 120, seeds: int = 3,
                 model: str = "m1", group: str = "g1") -> pl.DataFrame:
    """One simulated study's runs table (module docstring): ``designs`` per canary type (its
    ``tasks`` of the study's ``tasks`` offer it; ``seeds`` must match)."""
    ids = np.array([f"t{i:03d}" for i in range(tasks)])
    picks: dict[tuple[str, int], dict[str, Any]] = {}  # (task, seed) -> type -> (pick, item, wording)
    controls: list[tuple[str, int, str, Any]] = []
    for t, d in designs.items():
        if d.seeds != seeds:
            raise ValueError(f"{t}: the design has {d.seeds} seeds, the study {seeds}")
        offered = np.sort(rng.choice(tasks, size=d.tasks, replace=False))
        st = draw(d, _layout(d), rng)
        for side, smp in (("declared", st.canary), ("control", st.twin)):
            assert smp.pairs is not None and smp.items is not None and smp.wordings is not None
            for pair, v, item, w in zip(smp.pairs, smp.values, smp.items, smp.wordings, strict=True):
                local, seed = pair.split("|")
                key = (str(ids[offered[int(local[1:])]]), int(seed))
                if side == "declared":
                    picks.setdefault(key, {})[t] = (bool(v), str(item), str(w))
                else:
                    controls.append((key[0], key[1], t, (bool(v), str(item), str(w))))
    rows: dict[str, list[Any]] = {}

    def add(task: str, seed: int, cond: str, arm: str, per: dict[str, Any], control: bool) -> None:
        trapped = any(p for p, _, _ in per.values()) and not control
        row: dict[str, Any] = {"model": model, "group": group, "condition": cond, "pool": "standard", "seed": seed,
                               "task_id": task, "difficulty": "easy", "tool_calls": 2, "canary_calls": int(trapped),
                               "csr": 0.5 if trapped else 0.0, "trapped": trapped, "recovered": False if trapped else None,
                               "success": True, "error": False, "truncated": False, "arm": arm}
        for t in CANARY_TYPES:
            pick, item, word = per.get(t, (None, None, None))
            row |= {f"present_{t}": t in per and not control, f"trapped_{t}": bool(pick) and not control,
                    f"control_present_{t}": t in per and control, f"control_called_{t}": bool(pick) and control,
                    f"first_pick_{t}": pick, f"recovered_{t}": (False if pick else None) if t in per else None,
                    f"item_{t}": item, f"wording_{t}": word, f"selection_visible_{t}": True if t in per else None}
        for k, v in row.items():
            rows.setdefault(k, []).append(v)

    for (task, seed), per in sorted(picks.items()):
        add(task, seed, "declared", "", per, control=False)
    for task, seed, t, pick in sorted(controls):
        add(task, seed, "control", t, {t: pick}, control=True)
    return _frame(rows)
