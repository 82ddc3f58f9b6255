"""Adaptive provider lanes: a lane that meets a provider's hidden limit backs off (429),
honours Retry-After, loses no call and no run, grows to its maximum when nothing stops it,
and is not moved by a failing provider's other errors. Against a fake gateway on 127.0.0.1,
through the real LiteLLM backend and the one model layer (its retry policy retries the 429s)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from fakes.openai_server import FakeOpenAIServer, Reply, error_body, simple_agent
from fakes.study import make_study

from canarykit.agents import run_grid
from canarykit.agents.adaptive import AdaptiveLimit, lane_plan, snapshot, use_board
from canarykit.agents.calls import BackendFailure, ModelCaller, RetryPolicy
from canarykit.agents.config import AgentConfig
from canarykit.agents.protocol import ChatRequest, make_backend
from canarykit.errors import ConfigError

KEY_ENV = "CANARYKIT_TEST_LANES_KEY"


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "fake-key-lanes")


class HiddenLimit:
    """A gateway handler with a hidden concurrency limit: a request that arrives while
    ``limit`` are being served gets 429 at once, with ``retry-after-ms``."""

    def __init__(self, limit: int | None, latency_s: float = 0.05, retry_after_ms: int = 50) -> None:
        self.limit, self.latency_s, self.retry_after_ms = limit, latency_s, retry_after_ms
        self.lock = threading.Lock()
        self.in_flight = self.peak = self.rejected = self.served = 0
        self.arrivals: list[tuple[float, int]] = []  # (monotonic time, status)

    def __call__(self, body: Any, headers: dict[str, str], n: int) -> Reply:
        with self.lock:
            if self.limit is not None and self.in_flight >= self.limit:
                self.rejected += 1
                self.arrivals.append((time.monotonic(), 429))
                return Reply(error_body("Rate limit reached for requests", "requests"), status=429,
                             headers={"retry-after-ms": str(self.retry_after_ms), "Retry-After": "1"})
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            self.arrivals.append((time.monotonic(), 200))
        try:
            time.sleep(self.latency_s)
            return simple_agent(body, headers, n)
        finally:
            with self.lock:
                self.in_flight -= 1
                self.served += 1


def caller(url: str, lane: AdaptiveLimit, attempts: int = 8) -> ModelCaller:
    backend = make_backend({"name": "gw", "backend": "litellm", "model": "openai/fake-model", "api_base": url, "api_key_env": KEY_ENV},
                           {"timeout_s": 10})
    return ModelCaller(backend, limiter=lane, retry=RetryPolicy(attempts, 0.01, 2.0), timeout_s=10)


def request(i: int) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": f"question {i}"}], tools=[], turn=0)


def test_lane_backs_off_at_a_hidden_limit_and_loses_no_call() -> None:
    gate = HiddenLimit(limit=3)
    lane = AdaptiveLimit(2, 12)
    with FakeOpenAIServer(gate) as server:
        c = caller(server.url, lane)

        async def main() -> list[Any]:
            return await asyncio.gather(*(c(request(i)) for i in range(40)))

        answers = asyncio.run(main())
    assert len(answers) == 40 and all(resp.content for resp, _ in answers)  # every call answered
    assert gate.rejected > 0 and gate.served == 40  # slow start overshot the hidden limit of 3 ...
    assert lane.decreases >= 1 and lane.rate_limited == gate.rejected  # ... and the lane backed off,
    assert c.stats.retries == gate.rejected  # the one retry policy retried each 429 (no second loop)
    assert gate.peak <= 3 and lane.in_flight == 0 and lane.errors == 0


def test_retry_after_pauses_the_whole_lane() -> None:
    """After a 429 with Retry-After, no request of the lane (the retried one or another call)
    reaches the server before the pause is over; the limit shrinks (4 * 0.7 -> 2)."""
    state = {"n": 0}

    def once_limited(body: Any, headers: dict[str, str], n: int) -> Reply:
        state["n"] += 1
        if n == 0:
            return Reply(error_body("slow down", "requests"), status=429, headers={"retry-after-ms": "400"})
        return simple_agent(body, headers, n)

    arrivals: list[float] = []
    lane = AdaptiveLimit(4, 4)
    with FakeOpenAIServer(lambda b, h, n: (arrivals.append(time.monotonic()), once_limited(b, h, n))[1]) as server:
        c = caller(server.url, lane)

        async def main() -> None:
            first = asyncio.create_task(c(request(0)))
            while lane.rate_limited == 0:
                await asyncio.sleep(0.005)
            assert lane.current == 2  # shrunk once, by the factor 0.7
            await asyncio.gather(first, *(c(request(i)) for i in range(1, 5)))

        asyncio.run(main())
    assert len(arrivals) == 6
    assert min(arrivals[1:]) >= arrivals[0] + 0.4  # nothing sent during the server's Retry-After


def test_a_failing_provider_neither_shrinks_nor_grows_the_lane() -> None:
    lane = AdaptiveLimit(3, 10)
    with FakeOpenAIServer(lambda b, h, n: Reply(error_body("boom"), status=500)) as server:
        c = caller(server.url, lane, attempts=2)

        async def main() -> list[Any]:
            return await asyncio.gather(*(c(request(i)) for i in range(5)), return_exceptions=True)

        outcomes = asyncio.run(main())
    assert all(isinstance(o, BackendFailure) and o.attempts == 2 for o in outcomes)  # failed runs, recorded as such
    assert lane.current == 3 and lane.decreases == 0 and lane.errors == 10 and lane.rate_limited == 0 and lane.in_flight == 0
    with FakeOpenAIServer(simple_agent) as server:  # the provider recovers: successes of a full lane grow it
        c = caller(server.url, lane)
        asyncio.run(c(request(9)))
        assert lane.current == 3  # one call does not fill a lane of 3: it says nothing about 4

        async def burst() -> None:
            await asyncio.gather(*(c(request(i)) for i in range(10, 22)))

        asyncio.run(burst())
    assert lane.current > 3 and lane.completed == 13 and lane.decreases == 0


def test_without_a_limit_the_lane_grows_to_its_maximum_and_never_past_it() -> None:
    gate = HiddenLimit(limit=None, latency_s=0.02)
    lane = AdaptiveLimit(1, 6)
    with FakeOpenAIServer(gate) as server:
        c = caller(server.url, lane)

        async def main() -> None:
            await asyncio.gather(*(c(request(i)) for i in range(40)))

        asyncio.run(main())
    assert lane.current == 6 and gate.rejected == 0 and gate.peak <= 6 and lane.completed == 40


def test_a_grid_under_a_hidden_limit_loses_no_run_and_reports_its_lane(tmp_path: Path) -> None:
    tasks_path, pools, tasks = make_study(tmp_path / "study", n_tasks=4)
    gate = HiddenLimit(limit=2, latency_s=0.03)
    model = {"name": "gw", "backend": "litellm", "group": "hosted", "model": "openai/fake-model", "api_key_env": KEY_ENV}
    agent = {"max_turns": 4, "timeout_s": 10, "concurrency": 2, "cache_dir": str(tmp_path / "cache"),
             "provider_concurrency": {"openai": 2}, "provider_concurrency_max": {"openai": 8},
             "retries": {"max_attempts": 8, "base_delay_s": 0.01, "max_delay_s": 1.0}}
    try:
        with FakeOpenAIServer(gate) as server:
            s = run_grid([{**model, "api_base": server.url}], tasks_path, pools, [0], agent, tmp_path / "store",
                         tmp_path / "runs.parquet", tmp_path / "summary.json", progress=False)
        lanes = snapshot()
    finally:
        use_board(None)
    assert s.failed == 0 and s.executed + s.deduplicated == s.total == 3 * len(tasks)
    summary = json.loads((tmp_path / "summary.json").read_text())
    lane = lanes["openai"]  # summed over the shards (two here: each with its share)
    assert lane.maximum == 8 and 1 <= lane.limit <= 8 and lane.in_flight == 0
    assert lane.completed == gate.served and lane.rate_limited == gate.rejected
    assert summary["backend_calls"] == gate.served + gate.rejected
    assert snapshot() == {}


def test_the_global_cap_is_raised_to_the_adaptive_maxima_and_a_max_below_the_start_is_one_line() -> None:
    plan = lane_plan(8, {"openai": 4}, {"openai": 64, "anthropic": 16}, ["openai", "anthropic", "mistral"])
    assert plan.slots == 80 and plan.start == {"openai": 4, "anthropic": 8, "mistral": 8}
    assert plan.maximum == {"openai": 64, "anthropic": 16, "mistral": 8}
    with pytest.raises(ConfigError) as err:
        AgentConfig.parse({"provider_concurrency": {"openai": 8}, "provider_concurrency_max": {"openai": 4}})
    assert str(err.value) == ("params.yaml: agent.provider_concurrency_max.openai: 4 is below agent.provider_concurrency.openai (8), "
                              "where the lane starts; raise it or lower the start")


def test_rate_limit_reset_headers_stand_in_for_a_missing_retry_after() -> None:
    from canarykit.agents.backends import parse_retry_after

    assert parse_retry_after({"x-ratelimit-reset-requests": "6m0s", "x-ratelimit-reset-tokens": "20ms"}) == pytest.approx(0.02)
    assert parse_retry_after({"X-RateLimit-Reset-Requests": "1.5s"}) == pytest.approx(1.5)
    assert parse_retry_after({"ratelimit-reset": "3"}) == 3.0
    assert parse_retry_after({"retry-after": "2", "x-ratelimit-reset-requests": "9s"}) == 2.0  # Retry-After wins
    assert parse_retry_after({"x-ratelimit-reset-requests": "soon"}) is None
