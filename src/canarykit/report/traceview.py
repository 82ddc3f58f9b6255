"""The report's trace viewer: which trapped runs it shows (a seeded, round-robin sample over
the grid's cells) and each run's conversation with every call marked real, canary, control or
unknown, texts clipped."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from ..agents.secrets import scrub
from ..detection.detect import classify_calls, record_path
from ..errors import InputError
from ..store.records import RunRecord, read_record
from ..types import CANARY_TYPES


def clip_text(text: str | None, limit: int) -> tuple[str, int]:
    """The first ``limit`` characters of ``text`` and how many were left out."""
    s = text or ""
    return (s, 0) if len(s) <= limit else (s[:limit], len(s) - limit)


@dataclass(frozen=True)
class TraceSampling:
    """Which trapped runs the trace viewer shows: up to ``per_cell`` per (model, condition,
    pool), at most ``max_total`` overall (taken round-robin over the cells), drawn with
    ``seed``; texts clipped to ``clip_chars`` (tool results) and ``clip_answer`` characters."""

    per_cell: int = 3
    max_total: int = 150
    seed: int = 0
    clip_chars: int = 800
    clip_answer: int = 1500


#: The viewer's default sample.
DEFAULT_SAMPLING = TraceSampling()

def sample_traces(runs: pl.DataFrame, sampling: TraceSampling = TraceSampling()) -> list[dict[str, Any]]:
    """Rows of ``runs`` (trapped, no backend error) for the viewer, grouped by model."""
    if runs.is_empty() or sampling.per_cell <= 0 or sampling.max_total <= 0:
        return []
    if "arm" not in runs.columns:
        runs = runs.with_columns(pl.lit("", dtype=pl.String).alias("arm"))
    trapped = runs.filter(pl.col("trapped") & ~pl.col("error")).sort("model", "condition", "pool", "seed", "task_id", "arm",
                                                                      "run_id")
    cells: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for row in trapped.iter_rows(named=True):
        cells.setdefault((row["model"], row["condition"], row["pool"]), []).append(row)
    drawn: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for key, rows in cells.items():
        rng = random.Random(f"{sampling.seed}:{key[0]}:{key[1]}:{key[2]}")
        drawn[key] = rng.sample(rows, min(sampling.per_cell, len(rows)))
    chosen: list[dict[str, Any]] = []
    for k in range(sampling.per_cell):
        for key in sorted(drawn):
            if len(chosen) >= sampling.max_total:
                break
            if k < len(drawn[key]):
                chosen.append(drawn[key][k])
    return sorted(chosen, key=lambda r: (r["model"], r["condition"], r["pool"], r["seed"], r["task_id"], r["arm"]))


def _call_mark(call: Any) -> tuple[str, str]:
    """(css class, label) of a classified call."""
    if call.cls == "canary":
        return "canary", f"canary: {call.canary_type}, shadows {call.shadows or '?'}"
    if call.cls == "control":
        return "control", f"control: {call.control_type}, shadows {call.shadows or '?'}"
    if call.cls == "unknown":
        return "unknown", "unknown: " + ("tool not offered" if call.status == "unknown_tool" else (call.status or "not offered"))
    return "real", "real"


def _arguments(e: Any) -> str:
    if e.arguments is not None:
        return json.dumps(e.arguments, ensure_ascii=False, sort_keys=True)
    return e.raw_arguments or ""


def _clipped(text: str | None, limit: int) -> dict[str, Any]:
    shown, more = clip_text(scrub(text or ""), limit)
    return {"text": shown, "more": more}


def trace_view(record: RunRecord, sampling: TraceSampling) -> dict[str, Any]:
    """One run's conversation for the viewer: the task prompt, each model turn's text, each
    tool call (arguments, its class) and its result, errors, and the final answer."""
    calls = {c.idx: c for c in classify_calls(record)}
    first_canary = next((c.idx for c in calls.values() if c.cls == "canary"), None)
    prompt = ((record.identity or {}).get("task") or {}).get("prompt")
    steps: list[dict[str, Any]] = [{"kind": "prompt", "label": "task prompt", **_clipped(prompt or "(not in the record)", sampling.clip_answer)}]
    final = record.final_answer
    for idx, e in enumerate(record.events):
        if e.kind == "model_turn":
            if e.content and e.content.strip() and e.content != final:
                steps.append({"kind": "model", "label": f"model, turn {e.turn}", **_clipped(e.content, sampling.clip_answer)})
        elif e.kind == "tool_call":
            c = calls.get(idx)
            cls, mark = _call_mark(c) if c is not None else ("unknown", "unknown")
            status = f" ({e.status})" if e.status and e.status != "ok" else ""
            steps.append({"kind": "call", "cls": cls, "mark": mark, "sprung": idx == first_canary,
                          "label": f"{e.name}{status}", **_clipped(_arguments(e), sampling.clip_chars)})
        elif e.kind == "tool_result":
            steps.append({"kind": "result", "label": f"{e.name} result" + (" (tool error)" if e.is_error else ""),
                          **_clipped(e.content, sampling.clip_chars)})
        elif e.kind == "tool_error":
            steps.append({"kind": "error", "label": f"{e.name}: refused by the loop ({e.status})", **_clipped(e.message, sampling.clip_chars)})
        elif e.kind == "backend_error":
            steps.append({"kind": "error", "label": f"backend error ({e.error_type or '?'})", **_clipped(e.message, sampling.clip_chars)})
    if final is not None:
        steps.append({"kind": "final", "label": "final answer", **_clipped(final, sampling.clip_answer)})
    elif record.truncated:
        steps.append({"kind": "error", "label": "no final answer", "text": "cut off by agent.max_turns", "more": 0})
    offered = [{"name": o.name, "kind": o.kind} for o in record.offered]
    return {"steps": [{"cls": None, "mark": None, "sprung": False, "more": 0, **s} for s in steps], "offered": offered}


def _outcome(row: Mapping[str, Any]) -> str:
    types = [t.replace("_", " ") for t in CANARY_TYPES if row.get(f"trapped_{t}")]
    parts = ["trapped by " + ", ".join(types) if types else "trapped"]
    parts.append("recovered" if row.get("recovered") else "did not recover")
    s = row.get("success")
    parts.append("task success" if s is True else ("task failed" if s is False else "no verdict"))
    if row.get("truncated"):
        parts.append("truncated")
    return "; ".join(parts)


def _trace_anchor(row: Mapping[str, Any]) -> str:
    """The trace's element id, from what the run is (its labels), not from its run id."""
    words = (row["model"], row["condition"], row["pool"], row["seed"], row["task_id"], *([row["arm"]] if row.get("arm") else []))
    return "trace-" + "-".join(re.sub(r"[^A-Za-z0-9_-]+", "_", str(w)) for w in words)


def traces(runs: pl.DataFrame, store: str | Path | None, sampling: TraceSampling) -> dict[str, Any]:
    """The viewer's data: ``{models: [{name, group, traces: [...]}], shown, trapped, missing}``."""
    rows = sample_traces(runs, sampling)
    by_model: dict[str, dict[str, Any]] = {}
    missing = 0
    for row in rows:
        entry = {
            "id": _trace_anchor(row), "run_id": row["run_id"], "model": row["model"], "condition": row["condition"],
            "pool": row["pool"], "seed": row["seed"], "task_id": row["task_id"], "arm": row.get("arm") or "",
            "difficulty": row.get("difficulty"),
            "outcome": _outcome(row), "tool_calls": row.get("tool_calls"), "canary_calls": row.get("canary_calls"),
            "problem": None, "steps": [], "offered": [],
        }
        path = record_path(store, row["run_id"]) if store is not None else None
        if path is not None and path.is_file():
            try:
                entry.update(trace_view(read_record(path), sampling))
            except (InputError, OSError) as exc:
                entry["problem"] = f"record unreadable: {exc}"
                missing += 1
        else:
            entry["problem"] = f"no record in the run store ({path})" if path is not None else "no run store given"
            missing += 1
        by_model.setdefault(row["model"], {"name": row["model"], "group": row.get("group"), "traces": []})["traces"].append(entry)
    n_trapped = int(runs.filter(pl.col("trapped") & ~pl.col("error")).height) if not runs.is_empty() else 0
    return {"models": list(by_model.values()), "shown": len(rows), "trapped": n_trapped, "missing": missing}
