"""The ollama backend against a fake server speaking Ollama's /api/chat (non-streaming)."""

from __future__ import annotations

import asyncio
from typing import Any

from fakes.ollama_server import FakeOllamaServer, chat_reply
from fakes.world import FAKE_ENV, FakeTask, toolset

from canarykit.agents import CallStats, ModelCaller, RetryPolicy, RunSpec, make_backend, run_one
from canarykit.agents.backends import ollama_messages
from canarykit.store.records import RunRecord


def run_with(handler: Any, attempts: int = 2) -> tuple[RunRecord, FakeOllamaServer, CallStats]:
    with FakeOllamaServer(handler) as server:
        m = {"name": "llama", "backend": "ollama", "group": "small", "model": "llama3.1:8b", "host": server.host,
             "decoding": {"temperature": 0.0, "max_tokens": 64}}
        backend = make_backend(m)
        stats = CallStats()
        caller = ModelCaller(backend, retry=RetryPolicy(attempts, 0.01, 0.02), stats=stats, timeout_s=5)
        rs = RunSpec(m, FakeTask(), "declared", "standard", 0, toolset(), 5)
        rec = asyncio.run(run_one(rs, backend, caller=caller, env=FAKE_ENV))
    return rec, server, stats


def test_ollama_tool_calls_get_deterministic_ids_and_canonical_arguments() -> None:
    def handler(body: Any, n: int) -> tuple[int, Any]:
        if n == 0:
            return 200, chat_reply("", [("get_weather", {"city": "Paris"}), ("add", {"b": 3, "a": 2})])
        return 200, chat_reply("Paris is 18.5 C and 2 + 3 = 5.")

    rec, server, stats = run_with(handler)
    assert rec.status == "completed" and rec.final_answer.startswith("Paris")
    calls = [e for e in rec.events if e.kind == "tool_call"]
    assert [(c.call_id, c.name, c.raw_arguments) for c in calls] == [
        ("call_0_0", "get_weather", '{"city":"Paris"}'), ("call_0_1", "add", '{"a":2,"b":3}'),
    ]
    assert rec.usage.prompt_tokens == 26 and rec.usage.completion_tokens == 10
    first, second = server.requests
    assert first["path"] == "/api/chat" and first["model"] == "llama3.1:8b" and first["stream"] is False
    # Ollama's Tool model keeps name, description, type, properties and required (it drops
    # keywords such as additionalProperties, as the Ollama server itself does).
    sent = {t["function"]["name"]: t["function"] for t in first["tools"]}
    for t in toolset().openai_tools:
        f = t["function"]
        assert sent[f["name"]]["description"] == f["description"]
        assert sent[f["name"]]["parameters"]["properties"] == f["parameters"]["properties"]
        assert sent[f["name"]]["parameters"]["required"] == f["parameters"]["required"]
    assert first["options"] == {"temperature": 0.0, "num_predict": 64}
    msgs = second["messages"]
    assert msgs[2]["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": {"city": "Paris"}}
    assert msgs[3] == {"role": "tool", "content": '{"city": "Paris", "temp_c": 18.5}', "tool_name": "get_weather"}
    assert stats.backend_calls == 2


def test_ollama_server_error_retried_then_error_record() -> None:
    rec, server, _ = run_with(lambda body, n: (500, {"error": "model crashed"}), attempts=2)
    assert rec.error and len(server.requests) == 2 and rec.events[-1].status_code == 500


def test_ollama_404_model_not_found_not_retried() -> None:
    rec, server, _ = run_with(lambda body, n: (404, {"error": "model 'llama3.1:8b' not found"}), attempts=3)
    assert rec.error and len(server.requests) == 1


def test_ollama_message_conversion_tolerates_malformed_history() -> None:
    msgs = ollama_messages([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "x", "type": "function", "function": {"name": "add", "arguments": "{bad"}}]},
        {"role": "tool", "tool_call_id": "x", "content": "err"},
    ])
    assert msgs[1]["tool_calls"][0]["function"]["arguments"] == {} and msgs[2]["tool_name"] == "add"
