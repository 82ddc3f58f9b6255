"""The litellm backend end to end against a fake OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import random
import time
from typing import Any

import pytest
from fakes.openai_server import FakeOpenAIServer, Reply, completion, error_body
from fakes.world import FAKE_ENV, FakeTask, toolset

from canarykit.agents import CallStats, ModelCaller, RetryPolicy, RunSpec, make_backend, run_one
from canarykit.agents.backends import parse_retry_after
from canarykit.store.records import RunRecord

KEY_ENV = "CANARYKIT_TEST_GATEWAY_KEY"
SECRET = "fake-key-Zq8-never-stored"


def spec(url: str) -> dict[str, Any]:
    return {"name": "gw", "backend": "litellm", "group": "test", "model": "openai/fake-model", "api_base": url, "api_key_env": KEY_ENV}


def run_against(handler: Any, *, timeout_s: float = 5.0, attempts: int = 3, max_turns: int = 6,
                max_delay_s: float = 0.05) -> tuple[RunRecord, FakeOpenAIServer, CallStats]:
    with FakeOpenAIServer(handler) as server:
        m = spec(server.url)
        backend = make_backend(m)
        stats = CallStats()
        caller = ModelCaller(backend, retry=RetryPolicy(attempts, 0.01, max_delay_s), stats=stats, timeout_s=timeout_s)
        rs = RunSpec(m, FakeTask(), "declared", "standard", 0, toolset(), max_turns)
        rec = asyncio.run(run_one(rs, backend, caller=caller, env=FAKE_ENV, timeout_s=timeout_s))
    return rec, server, stats


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-openai-key")


def by_turn(*replies: Reply) -> Any:
    def handler(body: Any, headers: dict[str, str], n: int) -> Reply:
        return replies[min(n_tool_messages_turns(body), len(replies) - 1)]
    return handler


def n_tool_messages_turns(body: Any) -> int:
    return sum(1 for m in body["messages"] if m["role"] == "assistant")


def test_tool_calls_request_form_and_key() -> None:
    rec, server, stats = run_against(by_turn(
        Reply(completion(None, [("call_1", "get_weather", '{"city": "Paris"}')])),
        Reply(completion("It is 18.5 C in Paris.", prompt_tokens=50, completion_tokens=9)),
    ))
    assert rec.status == "completed" and rec.final_answer == "It is 18.5 C in Paris."
    assert [e.kind for e in rec.events] == ["model_turn", "tool_call", "tool_result", "model_turn", "final_answer"]
    assert rec.usage.prompt_tokens == 61 and rec.usage.completion_tokens == 16
    body, headers = server.requests[0]
    assert body["model"] == "fake-model"
    assert body["tools"] == toolset().openai_tools
    assert headers["authorization"] == f"Bearer {SECRET}"
    second = server.requests[1][0]["messages"]
    assert second[2]["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": '{"city": "Paris"}'}
    assert second[3]["role"] == "tool" and second[3]["tool_call_id"] == "call_1"
    assert stats.backend_calls == 2
    assert SECRET not in json.dumps(rec.to_dict())


def test_malformed_unknown_and_parallel_calls_over_http() -> None:
    rec, server, _ = run_against(by_turn(
        Reply(completion(None, [
            ("c1", "add", '{"a": 1, "b": 2}'),
            ("c2", "get_weather", "{city: Paris"),
            ("c3", "weather_oracle", '{"city": "Paris"}'),
            ("c4", "get_weather_v2", '{"location": "Paris"}'),
        ])),
        Reply(completion("done")),
    ))
    statuses = [(e.call_id, e.status) for e in rec.events if e.kind == "tool_call"]
    assert statuses == [("c1", "ok"), ("c2", "malformed_arguments"), ("c3", "unknown_tool"), ("c4", "invalid_arguments")]
    answered = [(e.call_id, e.kind) for e in rec.events if e.kind in ("tool_result", "tool_error")]
    assert answered == [("c1", "tool_result"), ("c2", "tool_error"), ("c3", "tool_error"), ("c4", "tool_result")]
    tool_msgs = [m for m in server.requests[1][0]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["c1", "c2", "c3", "c4"]


def test_429_is_retried_honouring_retry_after() -> None:
    times: list[float] = []

    def handler(body: Any, headers: dict[str, str], n: int) -> Reply:
        times.append(time.monotonic())
        if n == 0:
            return Reply(error_body("slow down", "rate_limit_error"), status=429, headers={"Retry-After": "1"})
        return Reply(completion("fine"))

    rec, server, stats = run_against(handler, max_delay_s=5.0)
    assert rec.status == "completed" and len(server.requests) == 2 and stats.retries == 1
    assert times[1] - times[0] >= 0.95  # jitter alone would wait <= 0.01 s


def test_retry_after_is_capped_by_the_configured_max_delay() -> None:
    times: list[float] = []

    def handler(body: Any, headers: dict[str, str], n: int) -> Reply:
        times.append(time.monotonic())
        if n == 0:
            return Reply(error_body("come back in ten minutes", "rate_limit_error"), status=429, headers={"Retry-After": "600"})
        return Reply(completion("fine"))

    rec, server, _ = run_against(handler, max_delay_s=0.3)
    assert rec.status == "completed" and len(server.requests) == 2
    assert times[1] - times[0] >= 0.25  # waited for the server's Retry-After, up to the cap
    policy = RetryPolicy(max_attempts=2, base_delay_s=0.01, max_delay_s=0.3)
    assert policy.delay(1, random.Random(0), 600.0) <= 0.3  # the 0.3 s cap, not the server's 600 s


@pytest.mark.parametrize("body", [
    {**completion("x"), "choices": []},
    {**completion("x"), "choices": [{"index": 0, "finish_reason": "stop"}]},
    {**completion("x"), "choices": [{"index": 0, "message": None, "finish_reason": "stop"}]},
    "not a completion",
    {"unexpected": 1},
    {**completion("x"), "choices": "x"},
])
def test_malformed_replies_are_retried_never_taken_as_an_answer(body: Any) -> None:
    def handler(b: Any, headers: dict[str, str], n: int) -> Reply:
        return Reply(body) if n == 0 else Reply(completion("the real answer"))

    rec, server, stats = run_against(handler)
    assert rec.status == "completed" and rec.final_answer == "the real answer"
    assert len(server.requests) == 2 and stats.retries == 1
    rec, server, _ = run_against(lambda b, h, n: Reply(body), attempts=2)
    assert rec.error and rec.final_answer is None and len(server.requests) == 2
    ev = rec.events[-1]
    assert ev.kind == "backend_error" and ev.attempts == 2
    assert "IndexError" not in (ev.message or "") and ev.error_type == "malformed_reply" and ev.status_code is None
    assert ev.message.startswith("malformed reply: ") and "\n" not in ev.message


def test_key_echoed_in_error_bodies_is_scrubbed(monkeypatch: pytest.MonkeyPatch) -> None:
    other = "other-models-key-0123456789"
    monkeypatch.setenv("CANARYKIT_SECRET_ENVS", "CANARYKIT_TEST_OTHER_SECRET")
    monkeypatch.setenv("CANARYKIT_TEST_OTHER_SECRET", other)

    for status, sent in ((401, 1), (500, 2)):
        def echo(b: Any, headers: dict[str, str], n: int, status: int = status) -> Reply:
            return Reply(error_body(f"bad key {headers.get('authorization')} (also tried {other})"), status=status)

        rec, server, _ = run_against(echo, attempts=2)
        assert rec.error and len(server.requests) == sent and rec.events[-1].status_code == status
        text = json.dumps(rec.to_dict())
        assert SECRET not in text and other not in text
        assert "***" in (rec.events[-1].message or "")


def test_a_malformed_200_reply_is_malformed_reply_and_a_real_500_stays_a_server_error() -> None:
    """litellm raises a 200 body that is not a chat completion as InternalServerError with a made-up
    500; the record says what happened instead (issue 22, item 10)."""
    rec, _, _ = run_against(lambda b, h, n: Reply({"unexpected": 1}), attempts=1)
    ev = rec.events[-1]
    assert (ev.error_type, ev.status_code) == ("malformed_reply", None) and "no 'choices'" in (ev.message or "")
    rec, _, _ = run_against(lambda b, h, n: Reply(error_body("boom"), status=500), attempts=1)
    ev = rec.events[-1]
    assert (ev.error_type, ev.status_code) == ("InternalServerError", 500)


def test_4xx_is_not_retried() -> None:
    rec, server, _ = run_against(lambda b, h, n: Reply(error_body("bad", "invalid_request_error"), status=400))
    assert rec.error and len(server.requests) == 1 and rec.events[-1].status_code == 400


def test_5xx_outliving_retries_gives_error_record() -> None:
    rec, server, stats = run_against(lambda b, h, n: Reply(error_body("down"), status=503), attempts=3)
    assert rec.error and rec.status == "error" and len(server.requests) == 3 and stats.retries == 2
    assert rec.events[-1].kind == "backend_error" and rec.events[-1].attempts == 3


def test_timeout_bounded_retries_then_error_record() -> None:
    rec, server, _ = run_against(lambda b, h, n: Reply(completion("late"), delay_s=3.0), timeout_s=0.4, attempts=2)
    assert rec.error and len(server.requests) == 2
    ev = rec.events[-1]
    assert ev.kind == "backend_error" and ev.attempts == 2 and ev.status_code == 408  # each attempt cut off: 408


def test_missing_key_env_is_an_error_not_a_leak(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV)
    rec, server, _ = run_against(lambda b, h, n: Reply(completion("x")))
    assert rec.error and server.requests == [] and KEY_ENV in (rec.events[-1].message or "")


def test_local_api_base_without_key_env_sends_dummy_key() -> None:
    with FakeOpenAIServer(lambda b, h, n: Reply(completion("ok"))) as server:
        m = {"name": "local-gw", "backend": "litellm", "model": "openai/fake-model", "api_base": server.url}
        backend = make_backend(m)
        rs = RunSpec(m, FakeTask(), "baseline", "standard", 0, toolset(False), 3)
        rec = asyncio.run(run_one(rs, backend, env=FAKE_ENV))
    assert rec.status == "completed"
    assert server.requests[0][1]["authorization"] == "Bearer sk-no-key"


def test_parse_retry_after() -> None:
    assert parse_retry_after({"Retry-After": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "1500"}) == 1.5
    assert parse_retry_after({"x": "1"}) is None
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
