"""Paired differences between conditions and pools: the tsr delta of each condition against
the baseline, and the subtlety ablation (subtle minus standard pool)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..types import CANARY_TYPES, POOLS
from ._bootstrap import paired_deltas
from ._cells import N_TYPES, Study
from ._tests import cohens_d


def tsr_delta(st: Study) -> dict[str, Any]:
    """Per condition other than baseline: baseline tsr minus the condition's (``control``:
    do working stand-ins cost success? ``mirrored``: does order?)."""
    out: dict[str, Any] = {}
    for c in st.conds:
        if c == "baseline":
            continue
        out[c] = {}
        models = sorted(set(st.models.get("baseline", [])) | set(st.models[c]))
        sides = [(st.cell("baseline", m).tsr_sample(), st.cell(c, m).tsr_sample()) for m in models]
        got = paired_deltas(st.boot, [(("tsr_delta", c, m), base, cond) for m, (base, cond) in zip(models, sides, strict=True)],
                            alpha=st.config.alpha)
        for m, (base, cond), d in zip(models, sides, got, strict=True):
            out[c][m] = {
                "delta": d["delta"], "lo": d["lo"], "hi": d["hi"], "cohens_d": cohens_d(base.values, cond.values),
                "cohens_h": d["cohens_h"], "n_base": base.n, "n_cond": cond.n, "n_pairs": d["n_pairs"],
                "clusters": d["clusters"],
            }
    return out


def ablation(st: Study) -> tuple[dict[str, Any], dict[str, Any]]:
    cfg = st.config
    other = next(p for p in POOLS if p != cfg.primary_pool)
    cond = cfg.ablation_condition
    out: dict[str, Any] = {"condition": cond, "primary_pool": cfg.primary_pool, "other_pool": other, "note": None,
                           "models": {}, "groups": {}}
    by_type: dict[str, Any] = {}
    pools_present = {p for (p, c, _m) in st.cells if c == cond}
    missing = [p for p in POOLS if p not in pools_present]
    if missing:
        out["note"] = f"no {' or '.join(missing)} pool runs in the {cond} condition: ablation not available"
        return out, by_type
    models = sorted({m for (p, c, m) in st.cells if c == cond})
    cells = {m: (st.cell(cond, m, "standard"), st.cell(cond, m, "subtle")) for m in models}
    csr = paired_deltas(st.boot, [(("ablation", m), sub.csr_sample(), std.csr_sample()) for m, (std, sub) in cells.items()],
                        alpha=cfg.alpha, proportion=False)
    typed = paired_deltas(st.boot, [(("ablation_by_type", m, t), sub.trap_sample(j), std.trap_sample(j))
                                    for m, (std, sub) in cells.items() for j, t in enumerate(CANARY_TYPES)], alpha=cfg.alpha)
    for i, (m, d) in enumerate(zip(models, csr, strict=True)):
        out["models"][m] = {"standard": d["b"], "subtle": d["a"], "delta": d["delta"], "lo": d["lo"], "hi": d["hi"],
                            "n_standard": d["n_b"], "n_subtle": d["n_a"], "n_pairs": d["n_pairs"]}
        by_type[m] = {}
        for j, t in enumerate(CANARY_TYPES):
            e = typed[i * N_TYPES + j]
            by_type[m][t] = {"standard": e["b"], "subtle": e["a"], "delta": e["delta"], "lo": e["lo"], "hi": e["hi"],
                             "cohens_h": e["cohens_h"], "n_standard": e["n_b"], "n_subtle": e["n_a"], "n_pairs": e["n_pairs"]}
    groups: dict[str, dict[str, list[float]]] = {}
    for m, entry in out["models"].items():
        g = groups.setdefault(st.groups.get(m, "?"), {"standard": [], "subtle": []})
        for p in POOLS:
            if entry[p] is not None:
                g[p].append(entry[p])
    out["groups"] = {g: {p: (float(np.mean(v)) if v else None) for p, v in d.items()} for g, d in sorted(groups.items())}
    return out, by_type
