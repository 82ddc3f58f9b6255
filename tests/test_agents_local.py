"""The embedded Gemma 3 270M model through llama_cpp.server and the litellm path."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from fakes.study import make_study

from canarykit.agents import make_backend, run_grid
from canarykit.agents.local import (
    GGUF_PACKAGE,
    LocalModelUnavailable,
    LocalServer,
    answer_schema,
    diagnose_exit,
    find_gguf,
    llama_cpp_available,
    parse_answer,
    render_messages,
)
from canarykit.store.records import CALL_STATUSES, read_record


def _model_installed() -> bool:
    try:
        find_gguf()
    except LocalModelUnavailable:
        return False
    return True


def test_local_backend_is_registered_and_lazy() -> None:
    b = make_backend({"name": "gemma", "backend": "local", "group": "local"})
    assert b.kind == "local" and b.cacheable and b.cache_scope["decoding"]["max_tokens"] == 256
    assert "port" not in str(b.cache_scope)  # the cache must not depend on the free port


@pytest.mark.skipif(llama_cpp_available(), reason="llama-cpp-python is installed")
def test_missing_llama_cpp_is_a_clear_error() -> None:
    with pytest.raises(LocalModelUnavailable, match="llama-cpp-python is not installed"):
        LocalServer().start()


def test_answers_parse_into_calls_or_final_answers() -> None:
    content, calls = parse_answer('{"tool": "get_weather", "arguments": {"city": "Pa\x01ris"}}', 2)
    assert content is None and [(c.id, c.name) for c in calls] == [("call_2_0", "get_weather")]
    assert json.loads(calls[0].arguments) == {"city": "Pa\x01ris"}  # a raw control character, escaped
    # Cut off by max_tokens: still a call of that tool, with the partial (malformed) arguments.
    _, calls = parse_answer('{"tool": "get_weather", "arguments": {"city": "Par', 0)
    assert calls[0].name == "get_weather" and calls[0].arguments == '{"city": "Par'
    assert parse_answer('{"answer": "sunny"}', 0) == ("sunny", [])
    assert parse_answer('{"answer": "sun', 0) == ('{"answer": "sun', [])
    assert parse_answer("", 0) == ("", [])


def test_requests_render_tools_and_results_as_gemma_turns() -> None:
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather now.", "parameters": {"type": "object"}}}]
    messages = [
        {"role": "system", "content": "SYS"},
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"temp_c": 3}'},
    ]
    out = render_messages(messages, tools)
    assert [m["role"] for m in out] == ["user", "assistant", "user"]
    assert out[0]["content"].startswith("SYS") and "- get_weather: Weather now." in out[0]["content"]
    assert out[0]["content"].endswith("Weather in Oslo?")
    assert json.loads(out[1]["content"]) == {"tool": "get_weather", "arguments": {"city": "Oslo"}}
    assert out[2]["content"] == 'Result of get_weather: {"temp_c": 3}'
    assert answer_schema(["get_weather"])["anyOf"][0]["properties"]["tool"]["enum"] == ["get_weather"]


def test_a_crashed_server_is_explained() -> None:
    msg = diagnose_exit(-signal.SIGSEGV, "on its first completion", "CPU : AVX2 = 1 | AMX_INT8 = 1 |")
    assert "killed by SIGSEGV on its first completion" in msg and "AMX" in msg and "make install-local" in msg
    assert "AMX" not in diagnose_exit(1, "before it was ready", "error loading model")


def test_find_gguf_names_the_package_when_absent() -> None:
    with pytest.raises(LocalModelUnavailable, match="no-such-gguf-package"):
        find_gguf("no-such-gguf-package")


def _server_children() -> list[int]:
    """Live llama_cpp.server processes started by this process."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == os.getpid() and b"llama_cpp.server" in cmdline:
            found.append(int(entry.name))
    return found


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(not llama_cpp_available(), reason="llama-cpp-python is not installed (pip install 'canarykit[local]')")
@pytest.mark.skipif(not _model_installed(), reason=f"the model package {GGUF_PACKAGE} is not installed")
def test_gemma_runs_tasks_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three suite tasks through the real model: records, classified calls, no leftover server.

    Nothing here is about the answers' quality: Gemma 3 270M is a weak base model. About two
    minutes on 2 cores (each first turn evaluates a ~2000-token prompt).
    """
    started: list[int] = []
    real_start = LocalServer.start

    def spy_start(self: LocalServer) -> LocalServer:
        out = real_start(self)
        assert self.proc is not None
        started.append(self.proc.pid)
        return out

    monkeypatch.setattr(LocalServer, "start", spy_start)
    tasks_path, pools, tasks = make_study(tmp_path / "study", n_tasks=3, pools={"standard": ["declared"]})
    model = {"name": "gemma3-270m", "backend": "local", "group": "local"}
    agent = {"max_turns": 3, "timeout_s": 180, "concurrency": 1, "cache_dir": str(tmp_path / "cache"),
             "retries": {"max_attempts": 2, "base_delay_s": 0.5, "max_delay_s": 2.0}}
    args = (agent, tmp_path / "store", tmp_path / "runs.parquet", tmp_path / "summary.json")
    s = run_grid([model], tasks_path, pools, [0], *args, progress=False)
    assert s.total == 3 and s.failed == 0 and s.backend_calls > 0
    assert len(started) == 1, "one server for the whole grid"
    assert _server_children() == [] and not Path(f"/proc/{started[0]}").exists(), "the server outlived the run"

    records = [read_record(p) for p in sorted((tmp_path / "store").rglob("*.json"))]
    assert sorted(r.task_id for r in records) == sorted(t.id for t in tasks)
    for rec in records:
        assert rec.backend == "local" and not rec.error and rec.status in ("completed", "truncated")
        assert 1 <= rec.n_model_calls <= 3
        turns = [e for e in rec.events if e.kind == "model_turn"]
        assert len(turns) == rec.n_model_calls and all(e.usage is not None and e.usage.prompt_tokens > 0 for e in turns)
        calls = [e for e in rec.events if e.kind == "tool_call"]
        answers = [e for e in rec.events if e.kind in ("tool_result", "tool_error")]
        assert all(e.status in CALL_STATUSES for e in calls)
        assert [e.call_id for e in answers] == [e.call_id for e in calls], "every call answered exactly once"
        if rec.status == "completed":
            assert rec.final_answer is not None and rec.events[-1].kind == "final_answer"
        else:
            assert rec.n_model_calls == 3 and rec.final_answer is None

    again = run_grid([model], tasks_path, pools, [0], *args, progress=False)
    assert again.executed == 0 and again.backend_calls == 0 and len(started) == 1  # all reused: no server
