"""The tool-calling loop with an in-process scripted backend and a fake tool world."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
from typing import Any

import pytest
from fakes.world import FAKE_ENV, FakeTask, toolset

from canarykit.agents import (
    BackendError,
    CallStats,
    ChatRequest,
    ChatResponse,
    ModelCaller,
    ResponseCache,
    RetryPolicy,
    RunSpec,
    ToolCall,
    run_one,
)
from canarykit.agents.loop import SYSTEM_PROMPT
from canarykit.store.records import RunRecord

MODEL = {"name": "scripted", "backend": "litellm", "group": "test", "model": "openai/fake"}


class Scripted:
    kind = "litellm"
    cacheable = True
    provider = "test"

    def __init__(self, responses: list[ChatResponse | BackendError]) -> None:
        self.responses = list(responses)
        self.requests: list[ChatRequest] = []
        self.cache_scope = {"endpoint": "scripted", "model": "fake", "decoding": {}}

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(ChatRequest([dict(m) for m in request.messages], request.tools, request.turn))
        r = self.responses.pop(0)
        if isinstance(r, BackendError):
            raise r
        return r


def calls(*triples: tuple[str, str, str]) -> ChatResponse:
    return ChatResponse(content=None, tool_calls=[ToolCall(*t) for t in triples], finish_reason="tool_calls")


def final(text: str = "done") -> ChatResponse:
    return ChatResponse(content=text, finish_reason="stop")


def run(responses: list[Any], max_turns: int = 6, **kw: Any) -> tuple[RunRecord, Scripted]:
    backend = Scripted(responses)
    spec = RunSpec(MODEL, FakeTask(), "declared", "standard", 0, toolset(), max_turns)
    caller = kw.pop("caller", None) or ModelCaller(backend, retry=RetryPolicy(2, 0.0, 0.0))
    rec = asyncio.run(run_one(spec, backend, caller=caller, env=FAKE_ENV, **kw))
    return rec, backend


def kinds(rec: RunRecord) -> list[str]:
    return [e.kind for e in rec.events]


def test_tool_call_then_final_answer() -> None:
    rec, backend = run([calls(("c1", "get_weather", '{"city": "Paris"}')), final("18.5 C")])
    assert rec.status == "completed" and not rec.error and rec.final_answer == "18.5 C"
    assert kinds(rec) == ["model_turn", "tool_call", "tool_result", "model_turn", "final_answer"]
    first = backend.requests[0]
    assert first.messages == [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": FakeTask().prompt}]
    assert {"type": "function", "function": {"name": "get_weather", "description": "Current weather for a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": False}}} in first.tools
    second = backend.requests[1].messages
    assert second[2]["tool_calls"][0]["id"] == "c1" and second[3] == {"role": "tool", "tool_call_id": "c1", "content": json.dumps({"city": "Paris", "temp_c": 18.5})}
    assert rec.events[1].status == "ok" and rec.events[1].arguments == {"city": "Paris"}
    assert rec.n_model_calls == 2 and rec.usage.prompt_tokens == 0


@pytest.mark.parametrize("raw", ["not json", "[1, 2]", '"city"', "{" * 200 + "}" * 200, '{"city": NaN}', '{"city": "a", "city": "b"}'])
def test_malformed_arguments_are_answered(raw: str) -> None:
    rec, backend = run([calls(("c1", "get_weather", raw)), final()])
    call, err = rec.events[1], rec.events[2]
    assert call.kind == "tool_call" and call.status == "malformed_arguments" and call.arguments is None and call.raw_arguments == raw
    assert err.kind == "tool_error" and err.status == "malformed_arguments" and err.call_id == "c1"
    tool_msg = backend.requests[1].messages[-1]
    assert tool_msg["role"] == "tool" and "error" in json.loads(tool_msg["content"])


def test_oversized_arguments_are_malformed() -> None:
    raw = json.dumps({"city": "x" * 200_000})
    rec, _ = run([calls(("c1", "get_weather", raw)), final()])
    assert rec.events[1].status == "malformed_arguments"


def test_invalid_arguments_real_tool_answers_validation_error() -> None:
    rec, backend = run([calls(("c1", "get_weather", '{"town": "Paris"}')), final()])
    assert rec.events[1].status == "invalid_arguments" and rec.events[1].arguments == {"town": "Paris"}
    assert rec.events[2].kind == "tool_error" and "city" in (rec.events[2].message or "")


def test_invalid_arguments_canary_answers_with_its_runtime() -> None:
    rec, backend = run([calls(("c1", "get_weather_v2", '{"location": "Paris"}')), final()])
    assert rec.events[1].status == "invalid_arguments" and rec.events[1].name == "get_weather_v2"
    assert rec.events[2].kind == "tool_result" and rec.events[2].is_error
    assert "api_key" in backend.requests[1].messages[-1]["content"]


def test_unknown_tool() -> None:
    rec, _ = run([calls(("c1", "get_weather_pro", '{"city": "Paris"}')), final()])
    assert rec.events[1].status == "unknown_tool" and rec.events[2].kind == "tool_error" and rec.events[2].status == "unknown_tool"


def test_parallel_calls_run_in_order_and_every_call_is_answered() -> None:
    rec, backend = run([
        calls(("a", "add", '{"a": 1, "b": 2}'), ("b", "nope", "{}"), ("c", "advanced_weather", '{"city": "Rome"}'), ("d", "add", "oops")),
        final(),
    ])
    evs = rec.events[1:-2]
    assert [(e.kind, e.call_id) for e in evs] == [
        ("tool_call", "a"), ("tool_result", "a"), ("tool_call", "b"), ("tool_error", "b"),
        ("tool_call", "c"), ("tool_result", "c"), ("tool_call", "d"), ("tool_error", "d"),
    ]
    msgs = backend.requests[1].messages
    assert [m["tool_call_id"] for m in msgs if m["role"] == "tool"] == ["a", "b", "c", "d"]
    assert json.loads(msgs[3]["content"]) == {"sum": 3}


def test_empty_argument_string_is_an_empty_object() -> None:
    rec, _ = run([calls(("c1", "add", "")), final()])
    assert rec.events[1].arguments == {} and rec.events[1].status == "invalid_arguments"


def test_missing_call_ids_get_deterministic_ids() -> None:
    rec, _ = run([calls(("", "add", '{"a": 1, "b": 1}')), final()])
    assert rec.events[1].call_id == "call_0_0"


def test_turn_limit_gives_a_truncated_run() -> None:
    rec, _ = run([calls(("c", "add", '{"a": 1, "b": 1}'))] * 3, max_turns=3)
    assert rec.status == "truncated" and rec.truncated and rec.final_answer is None and rec.n_model_calls == 3 and not rec.error


def test_backend_error_outliving_retries_gives_error_record() -> None:
    boom = BackendError("server exploded", error_type="InternalServerError", status_code=503, retryable=True)
    rec, backend = run([boom, boom])
    assert rec.error and rec.status == "error" and len(backend.requests) == 2
    ev = rec.events[-1]
    assert ev.kind == "backend_error" and ev.status_code == 503 and ev.attempts == 2


def test_non_retryable_error_is_not_retried() -> None:
    bad = BackendError("bad request", status_code=400, retryable=False)
    rec, backend = run([bad, final()])
    assert rec.error and len(backend.requests) == 1 and rec.events[-1].attempts == 1


def test_response_cache_serves_repeat_calls(tmp_path: Any) -> None:
    responses = [calls(("c1", "add", '{"a": 1, "b": 2}')), final("3")]
    stats = CallStats()
    backend = Scripted(list(responses))
    caller = ModelCaller(backend, cache=ResponseCache(tmp_path), stats=stats)
    spec = RunSpec(MODEL, FakeTask(), "declared", "standard", 0, toolset(), 6)
    first = asyncio.run(run_one(spec, backend, caller=caller, env=FAKE_ENV))
    backend2 = Scripted([])
    caller2 = ModelCaller(backend2, cache=ResponseCache(tmp_path), stats=stats)
    again = asyncio.run(run_one(spec, backend2, caller=caller2, env=FAKE_ENV))
    assert backend2.requests == [] and stats.backend_calls == 2 and stats.cached_calls == 2
    assert again.n_cached_calls == 2 and [e.kind for e in again.events] == [e.kind for e in first.events]
    assert again.final_answer == "3"


def test_retry_delay_full_jitter_and_retry_after() -> None:
    p = RetryPolicy(max_attempts=5, base_delay_s=1.0, max_delay_s=4.0)
    rng = random.Random(0)
    for attempt in range(1, 8):
        d = p.delay(attempt, rng)
        assert 0.0 <= d <= min(4.0, 2 ** (attempt - 1))
    assert p.delay(1, rng, retry_after_s=3.0) >= 3.0


def test_identity_ignores_labels_run_id_does_not() -> None:
    ts = toolset()
    a = RunSpec(MODEL, FakeTask(), "declared", "standard", 0, ts)
    b = RunSpec({**MODEL, "name": "renamed", "group": "other"}, FakeTask(), "declared", "standard", 0, ts)
    c = RunSpec({**MODEL, "decoding": {"temperature": 0}}, FakeTask(), "declared", "standard", 0, ts)
    d = RunSpec(MODEL, FakeTask(), "declared", "subtle", 0, ts)
    assert a.identity_hash == b.identity_hash == d.identity_hash != c.identity_hash
    assert len({a.run_id, b.run_id, c.run_id, d.run_id}) == 4
    e = RunSpec(MODEL, FakeTask(), "declared", "standard", 0, toolset(order=["add", "get_weather", "advanced_weather", "get_weather_v2"]))
    assert e.identity_hash != a.identity_hash


def test_store_writes_exactly_what_write_record_writes(tmp_path: Any) -> None:
    from canarykit.agents.store import RunStore
    from canarykit.store.jsonio import pretty_json
    from canarykit.store.records import read_record, write_record

    boom = BackendError("late", error_type="Timeout", status_code=408, retryable=False)
    rec, _ = run([calls(("c1", "get_weather", '{"city": "Paris"}'), ("c2", "nope", "{"), ("c3", "get_weather_v2", "{}")),
                  ChatResponse(content="x", usage=__import__("canarykit.store.records", fromlist=["Usage"]).Usage(3, 4)), boom])
    rec2, _ = run([calls(("c1", "add", '{"a": 1, "b": 2}')), boom])
    for r in (rec, rec2):
        p = RunStore(tmp_path).save(r)
        write_record(tmp_path / "ref.json", r)
        assert p.read_bytes() == (tmp_path / "ref.json").read_bytes() == pretty_json(r.to_dict()).encode()
        assert read_record(p).to_dict() == r.to_dict()


def test_store_reads_back_only_finished_runs_and_a_damaged_entry_is_a_miss(tmp_path: Any) -> None:
    from canarykit.agents.store import IDENTITY_DIR, RunStore, identity_hash
    from canarykit.store.records import record_path

    boom = BackendError("late", error_type="Timeout", status_code=408, retryable=False)
    ok, _ = run([calls(("c1", "get_weather", '{"city": "Paris"}')), ChatResponse(content="22 C")])
    failed, _ = run([calls(("c1", "add", '{"a": 1, "b": 2}')), boom])
    failed = dataclasses.replace(failed, run_id="f" * 40, identity={**failed.identity, "max_turns": 99})
    store = RunStore(tmp_path / "store")
    for r in (ok, failed):
        assert store.save(r) == record_path(tmp_path / "store", r.run_id) == tmp_path / "store" / r.run_id[:2] / f"{r.run_id}.json"
    h = identity_hash(ok.identity)
    # a finished run is indexed by its identity (a bare file naming its run id); a failed one is not
    assert (tmp_path / "store" / IDENTITY_DIR / h[:2] / h).read_text(encoding="utf-8") == ok.run_id + "\n"
    assert not (tmp_path / "store" / IDENTITY_DIR / identity_hash(failed.identity)[:2]).exists()
    assert store.finished(ok.run_id) == store.load(ok.run_id) and store.finished(failed.run_id) is None
    assert store.finished_json(ok.run_id)["status"] == "completed"  # type: ignore[index]
    assert store.finished_by_identity(h) == store.load(ok.run_id)
    assert store.load(failed.run_id) is not None and store.finished_by_identity(identity_hash(failed.identity)) is None
    # damage reads as a miss (the run executes again), never as an error
    (tmp_path / "store" / IDENTITY_DIR / h[:2] / h).write_text("../../elsewhere\n", encoding="utf-8")
    assert store.finished_by_identity(h) is None
    p = store.path(ok.run_id)
    p.write_text(p.read_text(encoding="utf-8")[:200], encoding="utf-8")
    assert store.finished(ok.run_id) is None and store.finished_json(ok.run_id) is None and store.load(ok.run_id) is None
