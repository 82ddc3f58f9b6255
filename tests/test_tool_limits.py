"""Bounded tools: every tool result is capped in bytes with a visible marker (real tools and
canaries, in-process and over MCP); SQLite has time, value-size and memory limits; error
messages quote at most a few hundred characters of any value."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import anyio
import pytest
from fakes.world import FAKE_ENV, FakeTask, toolset
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from canarykit.agents import (
    ChatRequest,
    ChatResponse,
    ModelCaller,
    RetryPolicy,
    RunSpec,
    ToolCall,
    run_one,
)
from canarykit.agents.loop import Environment
from canarykit.tools import MAX_RESULT_BYTES, cap_result, execute
from canarykit.types import ToolResult

ZEROBLOB = "SELECT zeroblob(50000000)"
MARKER = "[canarykit: result truncated"


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def test_cap_result_keeps_short_text_and_cuts_long_text_on_a_character_boundary() -> None:
    assert cap_result("short") == ("short", False)
    long = "é" * 100_000 + "END"  # two bytes a character
    text, cut = cap_result(long)
    assert cut and _size(text) <= MAX_RESULT_BYTES and MARKER in text and "END" not in text
    assert "200,003 bytes" in text  # says how much there was
    text.encode("utf-8")  # whole characters only


def test_zeroblob_answers_with_a_truncated_marked_result_in_process() -> None:
    r = execute("query_database", {"sql": ZEROBLOB})
    assert not r.is_error and _size(r.content) <= MAX_RESULT_BYTES
    payload = json.loads(r.content)
    assert payload["truncated"] is True and "cut" in payload["note"]
    (cell,) = payload["rows"][0]
    assert cell.startswith("00000000") and "[truncated: blob of 50,000,000 bytes" in cell


@pytest.mark.parametrize("sql", [
    "SELECT zeroblob(1000000000)",
    "SELECT printf('%.*c', 1000000000, 'x')",
    "SELECT printf('%.2000000000c', 'x')",
    "SELECT hex(zeroblob(60000000))",
])
def test_oversized_values_are_refused_not_built(sql: str) -> None:
    r = execute("query_database", {"sql": sql})
    assert r.is_error and _size(r.content) < 1000
    assert "limit" in json.loads(r.content)["error"]


def test_many_large_rows_stop_at_the_result_budget() -> None:
    r = execute("query_database", {"sql": "SELECT printf('%.*c', 100000, 'x') AS big FROM orders"})
    payload = json.loads(r.content)
    assert not r.is_error and payload["truncated"] and 0 < payload["row_count"] < 200
    assert _size(r.content) <= MAX_RESULT_BYTES


def test_printf_still_works_for_ordinary_formats() -> None:
    r = execute("query_database", {"sql": "SELECT printf('%d items, %.2f total, %5s|', 3, 2.5, 'ab'), format('%.*c', 3, 'y')"})
    assert json.loads(r.content)["rows"] == [["3 items, 2.50 total,    ab|", "yyy"]]


def test_runaway_queries_hit_the_execution_limit() -> None:
    r = execute("query_database", {"sql": "SELECT count(*) FROM orders a, orders b, orders c"})
    assert r.is_error and "limit" in r.content


def test_zeroblob_over_mcp_is_the_same_bounded_answer() -> None:
    async def call() -> tuple[str, bool]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "canarykit.mcp.toolservers", "database"])
        with anyio.fail_after(120):
            async with stdio_client(params) as streams, ClientSession(*streams) as session:
                await session.initialize()
                res = await session.call_tool("query_database", {"sql": ZEROBLOB})
                return res.content[0].text, bool(res.is_error)  # type: ignore[union-attr]

    text, is_error = anyio.run(call)
    assert not is_error and text == execute("query_database", {"sql": ZEROBLOB}).content
    assert _size(text) <= MAX_RESULT_BYTES and json.loads(text)["truncated"] is True


class _OneCallThenAnswer:
    kind = "litellm"
    cacheable = False
    provider = "test"
    cache_scope: dict[str, Any] = {}

    def __init__(self, call: ToolCall) -> None:
        self.call = call
        self.seen: list[ChatRequest] = []

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.seen.append(request)
        if len(self.seen) == 1:
            return ChatResponse(content=None, tool_calls=[self.call], finish_reason="tool_calls")
        return ChatResponse(content="done", finish_reason="stop")


def _run(call: ToolCall, env: Environment = FAKE_ENV) -> tuple[Any, _OneCallThenAnswer]:
    backend = _OneCallThenAnswer(call)
    spec = RunSpec({"name": "m", "backend": "litellm", "model": "x/y"}, FakeTask(), "declared", "standard", 0, toolset(), 4)
    rec = asyncio.run(run_one(spec, backend, caller=ModelCaller(backend, retry=RetryPolicy(1, 0, 0)), env=env))
    return rec, backend


def test_a_canary_or_tool_answering_megabytes_is_capped_for_the_model_and_the_record() -> None:
    def huge_canary(canary: Any, args: Any, execute: Any) -> ToolResult:
        return ToolResult(json.dumps({"blob": "x" * 5_000_000}))

    env = Environment(execute=FAKE_ENV.execute, run_canary=huge_canary, compose_answer=FAKE_ENV.compose_answer)
    rec, backend = _run(ToolCall("c1", "advanced_weather", '{"city": "Paris"}'), env)
    tool_msg = backend.seen[1].messages[-1]
    assert tool_msg["role"] == "tool" and _size(tool_msg["content"]) <= MAX_RESULT_BYTES and MARKER in tool_msg["content"]
    (result,) = [e for e in rec.events if e.kind == "tool_result"]
    assert result.content == tool_msg["content"]


def test_hostile_names_and_arguments_make_small_records_and_messages() -> None:
    name = "n" * 5_000_000
    rec, backend = _run(ToolCall("c1", name, '{"city": "Paris"}'))
    size = len(json.dumps(rec.to_dict()))
    assert size < 20_000
    refusal = backend.seen[1].messages[-1]["content"]
    assert len(refusal) < 1_000 and "characters elided" in refusal
    rec, backend = _run(ToolCall("c1", "get_weather", json.dumps({"city": "z" * 5_000_000})))
    assert len(json.dumps(rec.to_dict())) < 200_000
    assert len(backend.seen[1].messages[-1]["content"]) < 1_000


def test_a_ten_megabyte_task_prompt_gives_a_short_error(tmp_path: Any) -> None:
    from fakes.study import SUITE

    from canarykit.errors import InputError
    from canarykit.tasks.tasks import load_tasks

    doc = json.loads(SUITE.read_text(encoding="utf-8"))
    doc["tasks"][0]["prompt"] = "word " * 2_000_000
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_tasks(path)
    assert "tasks[0].prompt" in str(err.value) and len(str(err.value)) < 1_000 and "elided" in str(err.value)
