"""Run records: one event class per kind, read back by their ``kind``, written as before."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from canarykit.errors import InputError
from canarykit.store.records import (
    EVENT_KINDS,
    BackendErrorEvent,
    Event,
    FinalAnswerEvent,
    ModelTurnEvent,
    OfferedTool,
    RunRecord,
    ToolCallEvent,
    ToolErrorEvent,
    ToolResultEvent,
    Usage,
    event_from_dict,
    read_record,
    record_json,
    write_record,
)

EVENTS: list[Event] = [
    ModelTurnEvent(turn=0, content=None, n_tool_calls=2, finish_reason="tool_calls", usage=Usage(10, 3),
                   latency_s=0.25, cached=False, cost_usd=0.0012),
    ToolCallEvent(turn=0, call_id="c0", name="get_weather", arguments={"city": "Delhi", "units": ["c"]},
                  raw_arguments='{"city": "Delhi", "units": ["c"]}', status="ok"),
    ToolResultEvent(turn=0, call_id="c0", name="get_weather", content='{"t": 22.1}', is_error=False),
    ToolCallEvent(turn=0, call_id="c1", name="nope", raw_arguments="{", status="malformed_arguments"),
    ToolErrorEvent(turn=0, call_id="c1", name="nope", status="malformed_arguments", message="not JSON"),
    ModelTurnEvent(turn=1, content="22.1 C", n_tool_calls=0, usage=Usage(20, 4)),
    FinalAnswerEvent(turn=1, content="22.1 C"),
    BackendErrorEvent(turn=2, message="HTTP 500", error_type="APIError", status_code=500, attempts=3),
]


def _record(events: list[Event] = EVENTS, **kw: Any) -> RunRecord:
    base: dict[str, Any] = dict(
        run_id="ab" * 20, identity={"task": {"prompt": "Weather in Delhi?"}, "max_turns": 4}, model="m", group="g",
        backend="reference", condition="declared", pool="standard", seed=0, task_id="t1", difficulty="easy",
        offered=[OfferedTool("get_weather"), OfferedTool("cached_weather", "c:1", "semantic_decoy", "get_weather")],
        correct_tools=["get_weather"], events=events, final_answer="22.1 C", status="completed", error=False,
        usage=Usage(30, 7), cost_usd=0.0012, latency_s=0.5, n_model_calls=2,
    )
    base.update(kw)
    return RunRecord(**base)


def _written_before(record: RunRecord) -> str:
    """The record file as canarykit wrote it when an event was one dataclass of every field:
    ``dataclasses.asdict`` of the record, ``None`` fields dropped from events and tools."""
    d = dataclasses.asdict(record)
    d["events"] = [{k: v for k, v in dataclasses.asdict(e).items() if v is not None} for e in record.events]
    d["offered"] = [{k: v for k, v in dataclasses.asdict(o).items() if v is not None} for o in record.offered]
    return json.dumps(d, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def test_every_kind_has_its_class_and_reads_back_as_written() -> None:
    assert {e.kind for e in EVENTS} == set(EVENT_KINDS)
    for e in EVENTS:
        d = e.to_dict()
        assert list(d)[:2] == ["kind", "turn"] and None not in d.values()
        back = event_from_dict(json.loads(json.dumps(d)))
        assert type(back) is type(e) and back == e


def test_record_file_is_byte_for_byte_what_it_was(tmp_path: Path) -> None:
    rec = _record()
    assert record_json(rec) == _written_before(rec)
    write_record(tmp_path / "r.json", rec)
    assert (tmp_path / "r.json").read_text(encoding="utf-8") == _written_before(rec)
    assert read_record(tmp_path / "r.json") == rec


def test_a_field_of_another_kind_or_an_unknown_kind_names_the_event(tmp_path: Path) -> None:
    d = json.loads(record_json(_record()))
    d["events"][6]["is_error"] = True  # a final answer has no is_error
    (tmp_path / "a.json").write_text(json.dumps(d), encoding="utf-8")
    with pytest.raises(InputError, match=r"events\[6\].*is_error"):
        read_record(tmp_path / "a.json")
    d = json.loads(record_json(_record()))
    d["events"][2]["kind"] = "tool_reply"
    (tmp_path / "b.json").write_text(json.dumps(d), encoding="utf-8")
    with pytest.raises(InputError, match=r"events\[2\]\.kind"):
        read_record(tmp_path / "b.json")
    d["events"][2] = {"kind": "model_turn", "turn": 0, "usage": {"prompt": 1}}
    (tmp_path / "c.json").write_text(json.dumps(d), encoding="utf-8")
    with pytest.raises(InputError, match=r"events\[2\]"):
        read_record(tmp_path / "c.json")


def test_run_status_is_one_of_three_and_the_old_name_still_reads(tmp_path: Path) -> None:
    d = json.loads(record_json(_record(status="truncated", final_answer=None)))
    d["status"] = "turn_limit"
    (tmp_path / "old.json").write_text(json.dumps(d), encoding="utf-8")
    assert read_record(tmp_path / "old.json").status == "truncated"
    d["status"] = "finished"
    (tmp_path / "bad.json").write_text(json.dumps(d), encoding="utf-8")
    with pytest.raises(InputError, match="status"):
        read_record(tmp_path / "bad.json")


def test_events_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        EVENTS[1].name = "cached_weather"  # type: ignore[misc]
