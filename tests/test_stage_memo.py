"""An edit costs what it changes: detection and judging recompute only the runs whose record
changed (canarykit.store.memo), and what they write is what a cold computation writes."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from fakes.records import call_events

import canarykit.detection.detect as detect_module
from canarykit.agents._summary import INDEX_SCHEMA
from canarykit.store.records import (
    FinalAnswerEvent,
    ModelTurnEvent,
    OfferedTool,
    RunRecord,
    record_path,
    write_record,
)
from canarykit.study.pipeline import detect_model, judge_model

ROOT = Path(__file__).resolve().parents[1]
TASKS = str(ROOT / "data" / "tasks.json")
OFFERED = [
    OfferedTool("get_weather"),
    OfferedTool("cached_weather", "sd-get_weather", "semantic_decoy", "get_weather"),
]
JUDGE = {"primary": {"kind": "rubric"}, "cross": {"kind": "tool-coverage"}, "max_attempts": 1}


def record(run_id: str, calls: list[tuple[str, str]]) -> RunRecord:
    events = [ModelTurnEvent(turn=0, n_tool_calls=len(calls)), *call_events(calls),
              FinalAnswerEvent(turn=len(calls), content="done")]
    return RunRecord(run_id=run_id, identity={}, model="m", group="g", backend="reference", condition="declared",
                     pool="standard", seed=0, task_id="easy-001", difficulty="easy", offered=list(OFFERED),
                     correct_tools=["get_weather"], events=events, final_answer="done", status="completed", error=False)


def study(tmp_path: Path, n: int) -> tuple[str, str]:
    store = tmp_path / "store"
    ids = [f"{i:04x}aa" for i in range(n)]
    for i, rid in enumerate(ids):
        calls = [("cached_weather", "ok")] if i % 3 == 0 else [("get_weather", "ok")] * (i % 2 + 1)
        write_record(record_path(store, rid), record(rid, calls))
    rows = [{"model": "m", "group": "g", "backend": "reference", "provider": "reference", "condition": "declared",
             "pool": "standard", "seed": 0, "task_id": "easy-001", "arm": "", "difficulty": "easy", "run_id": rid,
             "identity_hash": rid, "status": "completed", "error": False, "executed": True} for rid in ids]
    index = tmp_path / "index.parquet"
    pl.DataFrame(rows, schema=INDEX_SCHEMA).write_parquet(index)
    return str(index), str(store)


@pytest.fixture
def loaded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many records each detection or judging call read and parsed."""
    counts: list[int] = []
    real = detect_module.load_records

    def counting(index_df: pl.DataFrame, *args: Any, **kwargs: Any) -> Any:
        counts.append(index_df.height)
        return real(index_df, *args, **kwargs)

    monkeypatch.setattr(detect_module, "load_records", counting)
    return counts


def test_detection_after_an_edit_reads_only_the_changed_runs_and_writes_what_a_cold_run_writes(
    tmp_path: Path, loaded: list[int]
) -> None:
    index, store = study(tmp_path, 12)
    memo = str(tmp_path / "memo")
    out = tmp_path / "out"
    metrics, calls = str(out / "m.parquet"), str(out / "m.calls.parquet")  # the workflow's outputs
    detect_model([index], store, metrics, calls, memo_dir=memo)
    # one run re-executed with another outcome: its record (same run id) changes
    write_record(record_path(store, "0004aa"), record("0004aa", [("cached_weather", "ok"), ("get_weather", "ok")]))
    detect_model([index], store, metrics, calls, memo_dir=memo)
    detect_model([index], store, str(out / "cold.parquet"), str(out / "cold.calls.parquet"))
    assert loaded == [12, 1, 12]
    assert Path(metrics).read_bytes() == (out / "cold.parquet").read_bytes()
    assert Path(calls).read_bytes() == (out / "cold.calls.parquet").read_bytes()
    changed = pl.read_parquet(metrics).filter(pl.col("run_id") == "0004aa")
    assert changed["canary_calls"].item() == 1 and changed["recovered"].item() is True


@pytest.mark.parametrize("role", ["primary", "cross"])
def test_judging_after_an_edit_judges_only_the_changed_runs_and_counts_the_rest_reused(
    tmp_path: Path, loaded: list[int], role: str
) -> None:
    index, store = study(tmp_path, 9)
    memo, out = str(tmp_path / "memo"), tmp_path / "out"
    cfg = {**JUDGE, "cache_dir": None}

    def judge(name: str, memo_dir: str | None = memo) -> dict[str, Any]:
        return judge_model(role, [index], store, TASKS, cfg, [], None, str(out / f"{name}.parquet"),
                           str(out / f"{name}.json"), job=name, log=io.StringIO(), memo_dir=memo_dir)

    judge("v")
    write_record(record_path(store, "0003aa"), record("0003aa", [("get_weather", "error")]))
    counts = judge("v")
    judge("cold", memo_dir=None)
    assert loaded == [9, 1, 9]
    assert (out / "v.parquet").read_bytes() == (out / "cold.parquet").read_bytes()
    assert (counts["judged"], counts["reused"], counts["ok"]) == (1, 8, 9)
    if role == "cross":  # the changed run's tool call failed: the coverage judge now fails it
        row = pl.read_parquet(out / "v.parquet").filter(pl.col("run_id") == "0003aa")
        assert row["success"].item() is False


def test_a_memo_of_other_code_or_a_damaged_memo_is_a_miss_not_an_answer(tmp_path: Path, loaded: list[int]) -> None:
    index, store = study(tmp_path, 6)
    memo, out = tmp_path / "memo", tmp_path / "out"
    metrics, calls = str(out / "m.parquet"), str(out / "m.calls.parquet")
    detect_model([index], store, metrics, calls, memo_dir=str(memo))
    first = Path(metrics).read_bytes()
    next(memo.rglob("scope.txt")).write_text("other code", encoding="utf-8")
    detect_model([index], store, metrics, calls, memo_dir=str(memo))
    next(memo.rglob("metrics.parquet")).write_bytes(b"not parquet")
    detect_model([index], store, metrics, calls, memo_dir=str(memo))
    detect_model([index], store, metrics, calls, memo_dir=str(memo))
    assert loaded == [6, 6, 6, 0]
    assert Path(metrics).read_bytes() == first
