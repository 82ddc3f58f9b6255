"""The report's first screen: what a reader sees before scrolling.

Per model under test its csr and tsr (declared condition) with their intervals and its
diagnosis word per canary type; when every agent is an instrument (a reference or planted
agent), the same per instrument held against its known answer
(:func:`canarykit.agents.known.known_diagnoses`) and how many of the planted answers the study
recovered ("N of N planted answers found"). The template's ``findings`` section renders it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..agents.known import known_diagnoses
from ..stats import INSTRUMENT_GROUPS
from ..types import CANARY_TYPES
from .text import TYPE_LABELS, ci_text

__all__ = ["findings", "instrument_groups"]


def instrument_groups(params: Mapping[str, Any], result: Mapping[str, Any]) -> dict[str, str]:
    """Model -> its group, for the instruments: reference agents (backend ``reference``) and
    the groups the statistics never test (``reference``, ``planted``)."""
    groups = dict(result.get("model_groups") or {})
    out: dict[str, str] = {}
    for m in params.get("models") or []:
        if isinstance(m, Mapping) and (m.get("backend") == "reference" or m.get("group") in INSTRUMENT_GROUPS):
            out[str(m["name"])] = str(m.get("group") or m.get("backend"))
    for name, g in groups.items():
        if g in INSTRUMENT_GROUPS:
            out.setdefault(name, str(g))
    return out


def _type_cells(effects: Mapping[str, Any], expected: Mapping[str, str] | None) -> list[dict[str, Any]]:
    """One cell per canary type: the diagnosis word, and against a known answer whether it
    was found (``found``), the study had too little data (``open``) or said otherwise (``missed``)."""
    cells = []
    for t in CANARY_TYPES:
        e = effects.get(t) or {}
        word = str(e.get("diagnosis") or "n/a") if e else "n/a"
        want = (expected or {}).get(t)
        status = None if want is None else ("found" if word == want else "open" if word in ("inconclusive", "n/a") else "missed")
        cells.append({"type": t, "word": word, "expected": want, "status": status})
    return cells


def findings(result: Mapping[str, Any], params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The report's first screen: per model under test its csr and tsr (declared) with their
    intervals and its diagnosis word per canary type; per instrument the same, held against
    its known answer (:func:`canarykit.agents.known.known_diagnoses`), and how many known
    answers the study recovered."""
    params = params or {}
    meta = result.get("meta") or {}
    instruments = instrument_groups(params, result)
    configs = {str(m.get("name")): m for m in params.get("models") or [] if isinstance(m, Mapping)}
    effects = result.get("control_effect") or {}
    csr = (result.get("csr_ci") or {}).get("declared", {})
    tsr = (result.get("tsr_ci") or {}).get("declared", {})
    models = list(meta.get("models") or sorted(result.get("model_groups") or {}))
    tested: list[dict[str, Any]] = []
    checked: list[dict[str, Any]] = []
    for m in models:
        c, s = csr.get(m) or {}, tsr.get(m) or {}
        expected = known_diagnoses(configs[m]) if m in instruments and m in configs else None
        row = {"name": m, "group": (result.get("model_groups") or {}).get(m) or instruments.get(m, ""),
               "csr": ci_text(c.get("csr"), c.get("lo"), c.get("hi")), "tsr": ci_text(s.get("tsr"), s.get("lo"), s.get("hi")),
               "types": _type_cells(effects.get(m) or {}, expected), "known": expected is not None}
        (checked if m in instruments else tested).append(row)
    statuses = [cell["status"] for row in checked for cell in row["types"] if cell["status"]]
    return {
        "tested": tested,
        "instruments": checked,
        "known": {"total": len(statuses), "found": statuses.count("found"), "open": statuses.count("open"),
                  "missed": statuses.count("missed"), "agents": sum(r["known"] for r in checked)},
        "has_controls": bool(effects),
        "type_labels": [TYPE_LABELS[t] for t in CANARY_TYPES],
    }
