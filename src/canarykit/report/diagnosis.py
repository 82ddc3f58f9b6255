"""The diagnosis per model in words (the report's "Diagnosis per model" section).

From ``stats.json``: the headline rates per condition, the type trap rates (declared) as
sentences, most-fallen-for first, the control-effect reading per diagnosis word and the
recovery rate; models under test first, then the instruments (reference and planted agents),
labelled with their group.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..stats import DIAGNOSES, DIAGNOSIS_READINGS, INSTRUMENT_GROUPS
from ..types import CANARY_TYPES
from .firstscreen import instrument_groups
from .text import ci_text, finite, num

__all__ = ["CONTROL_READINGS", "TYPE_PLURALS", "diagnoses"]

#: Readable names of the canary types, plural (what an agent "falls for").
TYPE_PLURALS: dict[str, str] = {
    "semantic_decoy": "semantic decoys", "parameter_trap": "parameter traps", "capability_mirage": "capability mirages",
    "prerequisite_blindness": "prerequisite-blindness canaries", "temporal_decoy": "temporal decoys",
    "granularity_trap": "granularity traps",
}

#: The control-effect diagnoses in reading order, with what each says (docs/canaries.md, "Reading control_effect").
CONTROL_READINGS: tuple[tuple[str, str], ...] = tuple((w, DIAGNOSIS_READINGS[w]) for w in DIAGNOSES)


def _trap_items(rates: Mapping[str, Any]) -> list[str]:
    """The sentences of one model's type trap rates (declared), most-fallen-for first."""
    fell, some, never, absent = [], [], [], []
    for t in CANARY_TYPES:
        e = rates.get(t) or {}
        rate, n = finite(e.get("rate")), int(e.get("n") or 0)
        label = TYPE_PLURALS[t]
        if rate is None or n == 0:
            absent.append(label)
        elif rate == 0:
            never.append(label)
        elif (finite(e.get("lo")) or 0.0) > 0:
            fell.append((rate, f"falls for {label}: {ci_text(rate, e.get('lo'), e.get('hi'))} ({e.get('trapped', 0)} of {n} runs)"))
        else:
            some.append((rate, f"calls {label} now and then: {ci_text(rate, e.get('lo'), e.get('hi'))} "
                               f"({e.get('trapped', 0)} of {n} runs; the interval reaches 0)"))
    items = [s for _, s in sorted(fell, key=lambda x: -x[0])] + [s for _, s in sorted(some, key=lambda x: -x[0])]
    if never:
        items.append("never fell for " + ", ".join(never))
    if absent:
        items.append("not measured (never offered, or no run with a tool call): " + ", ".join(absent))
    return items


def _control_items(effects: Mapping[str, Any]) -> list[dict[str, str]]:
    by: dict[str, list[str]] = {}
    for t in CANARY_TYPES:
        e = effects.get(t)
        if not e:
            continue
        d = str(e.get("diagnosis") or "n/a")
        detail = TYPE_PLURALS[t]
        if e.get("outcome") == "recovery_after_call" and e.get("delta") is not None:
            detail += (f" (invisible at selection; recovery after a call: canary {num(e.get('canary'))}, twin "
                       f"{num(e.get('control'))}, \u0394 {ci_text(e.get('delta'), e.get('lo'), e.get('hi'), signed=True)})")
        elif d in ("lured", "sensitive", "blind", "inconclusive") and e.get("delta") is not None:
            detail += (f" (first pick: canary {num(e.get('canary'))}, twin {num(e.get('control'))}, "
                       f"\u0394 {ci_text(e.get('delta'), e.get('lo'), e.get('hi'), signed=True)}, Holm p {num(e.get('p_holm'), 3)}, "
                       f"{e.get('clusters', 0)} tasks)")
        by.setdefault(d, []).append(detail)
    return [{"diagnosis": d, "reading": reading, "types": "; ".join(by[d])} for d, reading in CONTROL_READINGS if d in by]


def _headline(result: Mapping[str, Any], model: str) -> list[str]:
    out = []
    for cond in ("declared", "full"):
        c = (result.get("csr_ci") or {}).get(cond, {}).get(model)
        if not c:
            continue
        t = (result.get("tsr_ci") or {}).get(cond, {}).get(model) or {}
        line = (f"{cond}: csr {ci_text(c.get('csr'), c.get('lo'), c.get('hi'))} over {c.get('n', 0)} runs with a tool call; "
                f"tsr {ci_text(t.get('tsr'), t.get('lo'), t.get('hi'))} over {t.get('n', 0)} judged runs")
        if t.get("n_truncated"):
            line += f" ({t['n_truncated']} truncated runs left out; counted as failures: {num(t.get('tsr_truncated_as_failure'))})"
        d = (result.get("tsr_delta") or {}).get(cond, {}).get(model)
        if d and finite(d.get("delta")) is not None:
            line += f"; tsr drop against baseline (baseline \u2212 {cond}): {ci_text(d.get('delta'), d.get('lo'), d.get('hi'), signed=True)}"
        out.append(line)
    base = (result.get("tsr_ci") or {}).get("baseline", {}).get(model)
    if base:
        out.append(f"baseline: tsr {ci_text(base.get('tsr'), base.get('lo'), base.get('hi'))} over {base.get('n', 0)} judged runs")
    return out


def diagnoses(result: Mapping[str, Any], params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """One entry per model of ``stats.json`` (models under test first, then the instruments):
    ``name, group, instrument, headline[], traps[], controls[], recovery``, all in words."""
    params = params or {}
    meta = result.get("meta") or {}
    groups = result.get("model_groups") or {}
    instruments = instrument_groups(params, result)
    trap_ci = (result.get("trap_rate_ci") or {}).get("declared", {})
    effects = result.get("control_effect") or {}
    recovery = (result.get("recovery") or {}).get("declared", {})
    models = list(meta.get("models") or sorted(groups))
    order = {g: i for i, g in enumerate(INSTRUMENT_GROUPS)}
    models.sort(key=lambda m: (m in instruments, order.get(instruments.get(m, ""), len(order)), m))
    out = []
    for m in models:
        rec = recovery.get(m) or {}
        rec_text = None
        if int(rec.get("n") or 0) > 0:
            rec_text = (f"recovers (calls the real tool after the canary) in {ci_text(rec.get('rate'), rec.get('lo'), rec.get('hi'))} "
                        f"of its {rec['n']} trapped runs (declared)")
        out.append({
            "name": m,
            "group": groups.get(m) or instruments.get(m) or "",
            "instrument": m in instruments,
            "headline": _headline(result, m),
            "traps": _trap_items(trap_ci.get(m) or {}),
            "controls": _control_items(effects.get(m) or {}),
            "has_controls": bool(effects),
            "recovery": rec_text,
        })
    return out
