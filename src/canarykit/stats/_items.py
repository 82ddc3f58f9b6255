"""Per-item rates: which canary sentence traps (``items`` in ``stats.json``, ``table_items``).

A per-type rate averages over the canary items the runs were offered (the runs table's
``item_<T>``: the canary id, which names its tool and wording variant, ``@v<i>`` for
variant ``i >= 2``). Per model, type and item: the trap rate of the runs offered that canary
in ``declared`` (else ``full``) and, under ``control:<id>``, the call rate of its twin in the
``control`` condition, each with its runs (``n``) and tasks. No interval: an item's runs are
few and share tasks; the per-type rate's interval already treats items as a random factor.
A runs table without ``item_<T>`` columns has no items (``{}``).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..types import CANARY_TYPES
from ._cells import Study
from ._sample import TWIN_PREFIX, Sample

_VARIANT = re.compile(r"@v(\d+)$")


def variant_of(item: str) -> int:
    """The wording variant an item id names (``@v<i>``; 1 without the suffix)."""
    m = _VARIANT.search(item)
    return int(m.group(1)) if m else 1


def _per_item(s: Sample, prefix: str = "") -> dict[str, dict[str, Any]]:
    if s.items is None or not s.n:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for item in np.unique(s.items):
        if item == "":
            continue
        sel = s.items == item
        out[prefix + str(item)] = {"rate": float(s.values[sel].mean()), "n": int(sel.sum()),
                                   "trapped": int(s.values[sel].sum()), "tasks": int(np.unique(s.tasks[sel]).size),
                                   "variant": variant_of(str(item))}
    return out


def item_rates(st: Study) -> dict[str, Any]:
    """``{model: {type: {item: {rate, n, trapped, tasks, variant, condition}}}}`` (module docstring)."""
    cond = "declared" if "declared" in st.conds else ("full" if "full" in st.conds else None)
    out: dict[str, Any] = {}
    models = sorted(set(st.models.get(cond, [])) | set(st.models.get("control", []))) if cond else sorted(st.models.get("control", []))
    for m in models:
        for j, t in enumerate(CANARY_TYPES):
            rows: dict[str, Any] = {}
            if cond is not None:
                rows.update({k: {**v, "condition": cond} for k, v in _per_item(st.cell(cond, m).trap_sample(j)).items()})
            if "control" in st.conds:
                rows.update({k: {**v, "condition": "control"}
                             for k, v in _per_item(st.cell("control", m).control_sample(j), TWIN_PREFIX).items()})
            if rows:
                out.setdefault(m, {})[t] = dict(sorted(rows.items()))
    return out
