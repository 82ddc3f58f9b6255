"""The LLM judge and the canary rewriter through the one model layer, over HTTP against a fake
gateway on 127.0.0.1, built the way the workflow builds them (``judge_options`` and
``make_rewriter`` with ``agent.retries``):

- a failing model costs exactly ``max_attempts`` HTTP requests per verdict or rewording (the
  SDK's own retries are off), and a ``Retry-After`` above ``agent.retries.max_delay_s`` is
  capped (the waits the policy asks for are recorded: nothing sleeps);
- stability repeats are keyed by their repeat index: a repeat that failed is asked again on
  the next run, never answered from another repeat's cached reply;
- a cold ``import litellm`` slower than the call's whole timeout does not consume an attempt,
  on every path (a model caller, a judge, the rewriter, the runner).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from fakes.openai_server import FakeOpenAIServer, Reply, completion, error_body
from fakes.study import make_study
from fakes.world import WEATHER

from canarykit.agents import backends, calls
from canarykit.agents.cache import ResponseCache
from canarykit.agents.calls import ModelCaller, RetryPolicy, run_sync
from canarykit.agents.protocol import ChatRequest
from canarykit.canaries import make_rewriter
from canarykit.canaries._rewriters import RewriterError
from canarykit.judging import (
    JudgeInput,
    LLMJudge,
    Verdict,
    VerdictCache,
    judge_all,
    judge_options,
    make_judge,
    stability,
)

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "data" / "prompts" / "judge_appendix_b.txt"
JUDGE_ENV, JUDGE_KEY = "CANARYKIT_TEST_LAYER_JUDGE_KEY", "layer-judge-key-77aa88bb99cc"
#: agent.retries of the study: tiny delays, a 0.5 s cap
RETRIES = {"max_attempts": 5, "base_delay_s": 0.01, "max_delay_s": 0.5}


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(JUDGE_ENV, JUDGE_KEY)


class Waits:
    """An injected ``asyncio.sleep``: records each wait the retry policy asks for."""

    def __init__(self) -> None:
        self.asked: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.asked.append(seconds)


def failing(status: int, headers: dict[str, str] | None = None) -> Any:
    def handler(body: Any, hdrs: dict[str, str], n: int) -> Reply:
        echo = f"refused, Authorization: {hdrs.get('authorization', '')}"
        return Reply(error_body(echo, "rate_limit_error" if status == 429 else "server_error"), status=status,
                     headers=dict(headers or {}))
    return handler


def run_input(i: int) -> JudgeInput:
    return JudgeInput(f"r{i}", "t1", f"What is the weather in city {i}?", ("get_weather",),
                      "1. get_weather(city) -> ok", f"It is {i} C.")


def workflow_judge(url: str, tmp: Path, waits: Waits, **judge_block: Any) -> Any:
    block = {"max_attempts": 3, "cache_dir": str(tmp / "verdicts"), "template": str(TEMPLATE), **judge_block}
    options = judge_options(block, RETRIES, model_layer=True)
    cfg = {"kind": "llm", "model": "openai/judge-model", "api_base": url, "api_key_env": JUDGE_ENV, "timeout_s": 10}
    return make_judge(cfg, key="judge.primary", **options, sleep=waits)


@pytest.mark.parametrize("status", [500, 429])
def test_a_failing_llm_judge_sends_exactly_max_attempts_requests_per_verdict(tmp_path: Path, status: int) -> None:
    waits = Waits()
    with FakeOpenAIServer(failing(status)) as server:
        judge = workflow_judge(server.url, tmp_path, waits)
        verdicts, counts = judge_all(judge, [run_input(1), run_input(2)], VerdictCache(tmp_path / "verdicts"))
    assert counts["error"] == 2 and verdicts["attempts"].to_list() == [3, 3]
    assert len(server.requests) == 6  # 3 per verdict: no request multiplied by an SDK's own retries
    prompts = [b["messages"][0]["content"] for b, _ in server.requests]
    assert sorted(prompts.count(p) for p in set(prompts)) == [3, 3]
    assert len(waits.asked) == 4 and all(0 <= w <= RETRIES["max_delay_s"] for w in waits.asked)
    assert all(JUDGE_KEY not in r and "***" in r for r in verdicts["reason"].to_list())
    assert not list((tmp_path / "verdicts").rglob("*.json"))  # error verdicts and failed replies are never cached


def test_a_refusing_llm_judge_is_not_retried(tmp_path: Path) -> None:
    with FakeOpenAIServer(failing(401)) as server:
        judge = workflow_judge(server.url, tmp_path, Waits())
        verdicts, _ = judge_all(judge, [run_input(1)], None)
    assert len(server.requests) == 1 and verdicts["status"].to_list() == ["error"]
    assert "AuthenticationError (401)" in verdicts["reason"][0]


def test_retry_after_above_the_configured_maximum_is_capped_for_the_judge(tmp_path: Path) -> None:
    waits = Waits()
    with FakeOpenAIServer(failing(429, {"Retry-After": "600"})) as server:
        judge = workflow_judge(server.url, tmp_path, waits)
        verdict = judge.judge(run_input(1))
    assert verdict.status == "error" and verdict.attempts == 3 and len(server.requests) == 3
    assert waits.asked == [RETRIES["max_delay_s"]] * 2  # not the server's 600 s


def test_retry_after_below_the_maximum_is_honoured_for_the_judge(tmp_path: Path) -> None:
    waits = Waits()
    with FakeOpenAIServer(failing(429, {"Retry-After": "0.3"})) as server:
        verdict = workflow_judge(server.url, tmp_path, waits).judge(run_input(1))
    assert verdict.attempts == 3 and len(server.requests) == 3
    assert len(waits.asked) == 2 and all(0.3 <= w <= RETRIES["max_delay_s"] for w in waits.asked)


def rewriter(url: str, tmp: Path, waits: Waits, **llm: Any) -> Any:
    cfg = {"model": "openai/rewriter-model", "api_base": url, "api_key_env": None,
           "cache_path": str(tmp / "rewordings.json"), "cache_dir": str(tmp / "responses"), "budget_usd": None,
           "max_attempts": 3, "timeout_s": 10, **llm}
    return make_rewriter("llm", cfg, retries=RETRIES, sleep=waits)


@pytest.mark.parametrize("status", [500, 429])
def test_a_failing_rewriter_sends_exactly_max_attempts_requests_per_rewording(tmp_path: Path, status: int) -> None:
    waits = Waits()
    with FakeOpenAIServer(failing(status)) as server:
        rw = rewriter(server.url, tmp_path, waits)
        with pytest.raises(RewriterError, match="after 3 attempts"):
            rw.reword(WEATHER, "semantic_decoy")
    assert len(server.requests) == 3
    assert len(waits.asked) == 2 and all(0 <= w <= RETRIES["max_delay_s"] for w in waits.asked)


def test_retry_after_above_the_configured_maximum_is_capped_for_the_rewriter(tmp_path: Path) -> None:
    waits = Waits()
    with FakeOpenAIServer(failing(429, {"Retry-After": "600"})) as server:
        rw = rewriter(server.url, tmp_path, waits, max_attempts=4)
        with pytest.raises(RewriterError):
            rw.reword(WEATHER, "capability_mirage")
    assert len(server.requests) == 4 and waits.asked == [RETRIES["max_delay_s"]] * 3


def test_the_rewriter_has_the_response_cache_and_the_budget(tmp_path: Path) -> None:
    answer = json.dumps({"name": "fetch_conditions", "description": "Weather conditions for a city."})

    def handler(body: Any, hdrs: dict[str, str], n: int) -> Reply:
        return Reply({**completion(answer), "usage": {"prompt_tokens": 1000, "completion_tokens": 1000, "total_tokens": 2000}},
                     )

    with FakeOpenAIServer(handler) as server:
        rw = rewriter(server.url, tmp_path, Waits())
        assert rw.reword(WEATHER, "semantic_decoy") == ("fetch_conditions", "Weather conditions for a city.")
        assert len(server.requests) == 1 and list((tmp_path / "responses").rglob("*.json"))
        # the rewording file lost (not committed): the response cache answers, no new request
        (tmp_path / "rewordings.json").unlink()
        again = rewriter(server.url, tmp_path, Waits())
        assert again.reword(WEATHER, "semantic_decoy") == ("fetch_conditions", "Weather conditions for a city.")
        assert len(server.requests) == 1
        # a spent budget stops the requests (gpt-4o-mini is priced by litellm's bundled cost map)
        broke = rewriter(server.url, tmp_path / "other", Waits(), model="openai/gpt-4o-mini", budget_usd=1e-9)
        broke.reword(WEATHER, "semantic_decoy")  # the first request is paid, then the budget is spent
        with pytest.raises(RewriterError, match="BudgetExhausted"):
            broke.reword(WEATHER, "capability_mirage")
        assert len(server.requests) == 2


def test_a_failed_stability_repeat_is_asked_again_not_answered_from_another_repeat(tmp_path: Path) -> None:
    state = {"fail_hot": True, "hot": 0}

    def handler(body: Any, hdrs: dict[str, str], n: int) -> Reply:
        if body.get("temperature") == 0.7:
            state["hot"] += 1
            if state["hot"] == 2 and state["fail_hot"]:  # the second repeat's request
                return Reply(error_body("overloaded"), status=503)
            success = state["hot"] == 1  # repeat 0 says success, any later answer says failure
            return Reply(completion(json.dumps({"success": success, "reason": "graded"})))
        return Reply(completion(json.dumps({"success": True, "reason": "t0"})))

    run = run_input(1)
    base = {run.run_id: Verdict(True, "t0", "ok")}
    with FakeOpenAIServer(handler) as server:
        def factory(t: float) -> LLMJudge:
            judge = make_judge({"kind": "llm", "model": "openai/judge-model", "api_base": server.url, "timeout_s": 10},
                               template_path=TEMPLATE, temperature=t, max_attempts=1, retry=RetryPolicy(1, 0.0, 0.0),
                               response_cache=ResponseCache(tmp_path / "responses"))
            assert isinstance(judge, LLMJudge)
            return judge

        cache = VerdictCache(tmp_path / "verdicts")
        first = stability(factory, [run], sample=1, repeats=2, temperature=0.7, seed=0, base_verdicts=base, cache=cache)
        assert first["runs"][0]["votes"] == [True, None] and state["hot"] == 2
        state["fail_hot"] = False
        second = stability(factory, [run], sample=1, repeats=2, temperature=0.7, seed=0, base_verdicts=base, cache=cache)
    # repeat 0 comes from the verdict cache; repeat 1 makes its own request and gets its own answer
    assert state["hot"] == 3 and second["runs"][0]["votes"] == [True, False]
    assert second["unanimous_runs"] == 0


# --------------------------------------------------------------------------- a cold import

#: The backstop of a call is 1.5 x timeout_s + BACKSTOP_S; the fake import takes longer.
TIMEOUT_S = 2.0
COLD_IMPORT_S = TIMEOUT_S * 1.5 + 0.5


@pytest.fixture()
def cold_import(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """``import litellm`` as on a loaded machine: the first import in the process sleeps
    longer than a call's whole timeout (the backstop's slack is set to 0 to keep this short)."""
    real = backends.import_litellm
    done: list[float] = []

    def slow_import() -> Any:
        if not done:
            time.sleep(COLD_IMPORT_S)
            done.append(COLD_IMPORT_S)
        return real()

    monkeypatch.setattr(backends, "import_litellm", slow_import)
    monkeypatch.setattr(calls, "BACKSTOP_S", 0.0)
    return done


def ok_judge(body: Any, hdrs: dict[str, str], n: int) -> Reply:
    return Reply(completion(json.dumps({"success": True, "reason": "fine"})))


def test_a_cold_import_does_not_consume_an_attempt_of_a_model_call(cold_import: list[float]) -> None:
    with FakeOpenAIServer(ok_judge) as server:
        backend = backends.LiteLLMBackend({"name": "m", "model": "openai/fake-model", "api_base": server.url})
        caller = ModelCaller(backend, retry=RetryPolicy(3, 0.01, 0.05), timeout_s=TIMEOUT_S)
        request = ChatRequest(messages=[{"role": "user", "content": "hi"}], tools=[], turn=0)
        _, cached, sent = run_sync(caller.call(request))
    assert cold_import and not cached and sent == 1 and caller.stats.retries == 0 and len(server.requests) == 1


def test_a_cold_import_does_not_consume_an_attempt_of_a_verdict(cold_import: list[float], tmp_path: Path) -> None:
    with FakeOpenAIServer(ok_judge) as server:
        judge = make_judge({"kind": "llm", "model": "openai/judge-model", "api_base": server.url, "timeout_s": TIMEOUT_S},
                           template_path=TEMPLATE, max_attempts=3, retry=RetryPolicy(3, 0.01, 0.05))
        verdict = judge.judge(run_input(1))
    assert cold_import and verdict.status == "ok" and verdict.attempts == 1 and len(server.requests) == 1


def test_a_cold_import_does_not_consume_an_attempt_of_a_rewording(cold_import: list[float], tmp_path: Path) -> None:
    answer = json.dumps({"name": "fetch_conditions", "description": "Weather conditions."})
    with FakeOpenAIServer(lambda b, h, n: Reply(completion(answer))) as server:
        rw = rewriter(server.url, tmp_path, Waits(), timeout_s=TIMEOUT_S)
        assert rw.reword(WEATHER, "semantic_decoy")[0] == "fetch_conditions"
    assert cold_import and len(server.requests) == 1 and rw.stats.backend_calls == 1 and rw.stats.retries == 0


def test_a_cold_import_does_not_consume_an_attempt_of_a_run(cold_import: list[float], tmp_path: Path) -> None:
    from fakes.openai_server import simple_agent

    from canarykit.agents import run_grid

    tasks_path, pools, _ = make_study(tmp_path / "study", n_tasks=1, pools={"standard": ["baseline"]})
    agent = {"max_turns": 4, "timeout_s": TIMEOUT_S, "concurrency": 1, "workers": 1,
             "retries": {"max_attempts": 3, "base_delay_s": 0.01, "max_delay_s": 0.05}, "cache_dir": str(tmp_path / "cache")}
    with FakeOpenAIServer(simple_agent) as server:
        model = {"name": "gw", "backend": "litellm", "model": "openai/fake-model", "api_base": server.url}
        summary = run_grid([model], tasks_path, pools, [0], agent, tmp_path / "store", tmp_path / "index.parquet",
                           tmp_path / "summary.json", progress=False)
    assert cold_import and summary.failed == 0 and summary.retries == 0
    assert summary.backend_calls == len(server.requests) == 2  # a tool call, then the answer


def test_each_budget_counts_only_its_own_jobs_spend(tmp_path: Path) -> None:
    """The agents' and the judges' spend ledgers share an invocation but not a budget."""
    from canarykit.agents.calls import SpendLedger

    agents = SpendLedger(tmp_path, "inv", "run_agents-gw-standard-declared-0", refresh_s=0)
    agents.report(5.0)  # the agent jobs spent $5
    first = judge_options({"budget_usd": 1.0}, RETRIES, model_layer=True,
                          ledger=SpendLedger(tmp_path, "inv", "judge_primary-gw", refresh_s=0))["budget"]
    second = judge_options({"budget_usd": 1.0}, RETRIES, model_layer=True,
                           ledger=SpendLedger(tmp_path, "inv", "judge_cross-gw", refresh_s=0))["budget"]
    assert not first.exhausted  # the agents' $5 is not the judges'
    first.add(0.6)
    second.add(0.5)
    assert first.exhausted and second.exhausted  # $1.10 over both judging jobs
    assert agents.others() == 0.0  # nor is the judges' spend the agents'
