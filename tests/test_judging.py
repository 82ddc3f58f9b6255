"""Outcome judges, verdict cache, independence check, kappa and judge validation."""

from __future__ import annotations

import json
import random
import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from fakes.records import FakeTask, call_events
from sklearn.metrics import cohen_kappa_score

from canarykit.errors import ConfigError, InputError
from canarykit.judging import (
    JudgeInput,
    LLMJudge,
    RubricJudge,
    ToolCoverageJudge,
    Verdict,
    VerdictCache,
    agreement,
    check_judge_independence,
    cohen_kappa,
    cross_judge_report,
    fill_template,
    human_validation,
    judge_all,
    judge_input,
    make_judge,
    parse_verdict,
    provider_of,
    read_human_sheet,
    render_trace,
    stability,
)
from canarykit.store.records import OfferedTool, RunRecord
from canarykit.types import CANARY_TYPES

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "data" / "prompts" / "judge_appendix_b.txt"
PROFILE = ROOT / "src" / "canarykit" / "resources" / "profiles" / "paper.yaml"


def record(
    run_id: str = "r1",
    final: str | None = "It is 31 C in Delhi.",
    error: bool = False,
    calls: tuple[tuple[str, str, bool], ...] = (
        ("get_weather_v2", "invalid_arguments", True),
        ("get_weather", "ok", False),
    ),
) -> RunRecord:
    events = call_events(calls, content='{"temp_c": 31}' + "x" * 3000, refusal="missing required argument api_key")
    return RunRecord(
        run_id=run_id,
        identity={},
        model="m",
        group="g",
        backend="reference",
        condition="full",
        pool="standard",
        seed=0,
        task_id="t1",
        difficulty="easy",
        offered=[
            OfferedTool("get_weather"),
            OfferedTool("get_weather_v2", "pt", "parameter_trap", "get_weather"),
        ],
        correct_tools=["get_weather"],
        events=events,
        final_answer=None if error else final,
        status="error" if error else "completed",
        error=error,
    )


TASK = FakeTask("t1", "What is the weather in {trace} Delhi right now?", ("31",))


def inp(run_id: str = "r1", **kw: Any) -> JudgeInput:
    return judge_input(record(run_id, **kw), TASK)


# ----------------------------------------------------------------------------- local server


class _Server:
    def __init__(self) -> None:
        self.replies: list[str] = []
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server API
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                content = (
                    server.replies.pop(0) if server.replies else '{"success": true, "reason": "ok"}'
                )
                payload = json.dumps(
                    {
                        "id": "chatcmpl-1",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body.get("model"),
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "message": {"role": "assistant", "content": content},
                            }
                        ],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def server() -> Iterator[_Server]:
    s = _Server()
    yield s
    s.close()


def llm_judge(server: _Server, max_attempts: int = 3) -> LLMJudge:
    judge = make_judge(
        {"kind": "llm", "model": "openai/judge-test", "api_base": server.url, "timeout_s": 20},
        template_path=TEMPLATE,
        max_attempts=max_attempts,
        retry_delay_s=0,
    )
    assert isinstance(judge, LLMJudge)
    return judge


def test_llm_judge_sends_the_filled_appendix_b_template_at_temperature_0(server: _Server) -> None:
    server.requests.clear()
    server.replies[:] = ['{"success": true, "reason": "reported the temperature"}']
    v = llm_judge(server).judge(inp())
    assert v == Verdict(True, "reported the temperature", "ok", 1, v.raw)
    (req,) = server.requests
    assert req["temperature"] == 0
    assert req["model"] == "judge-test"
    (msg,) = req["messages"]
    assert msg["role"] == "user"
    prompt = msg["content"]
    template = TEMPLATE.read_text(encoding="utf-8")
    for line in template.splitlines():
        if "{" not in line or line.startswith("Respond"):
            assert line in prompt  # literal template lines, JSON example braces kept
    assert 'Respond with ONLY a JSON object: {"success": true|false, "reason": "..."}' in prompt
    # the prompt's own "{trace}" is not substituted again (single-pass fill)
    assert "TASK GIVEN TO THE AGENT: What is the weather in {trace} Delhi right now?" in prompt
    assert (
        "(hint, not a requirement; the agent may solve a step by reasoning or use an equivalent tool): get_weather"
        in prompt
    )
    assert "THE AGENT\u2019S FINAL ANSWER: It is 31 C in Delhi." in prompt
    assert "[1] get_weather_v2" in prompt and "missing required argument api_key" in prompt
    assert "[truncated" in prompt  # each result capped
    for ph in ("{prompt}", "{correct_tools}", "{final}"):
        assert ph not in prompt


@pytest.mark.parametrize(
    "bad",
    [
        "The agent succeeded.",
        '{"success": "yes", "reason": "x"}',
        "[" * 500 + "]" * 500,
        '{"success": {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": {"i": true}}}}}}}}}, "reason": "x"}',
    ],
)
def test_malformed_verdicts_become_unparseable(server: _Server, bad: str) -> None:
    server.requests.clear()
    server.replies[:] = [bad] * 3
    v = llm_judge(server, max_attempts=3).judge(inp())
    assert v.status == "unparseable" and v.success is None and v.attempts == 3
    assert len(server.requests) == 3


def test_valid_verdict_after_one_malformed_reply(server: _Server) -> None:
    server.requests.clear()
    server.replies[:] = ["not json", '```json\n{"success": false, "reason": "gave up"}\n```']
    v = llm_judge(server).judge(inp())
    assert (v.success, v.status, v.attempts, v.reason) == (False, "ok", 2, "gave up")
    assert len(server.requests) == 2


def test_parse_verdict() -> None:
    assert parse_verdict('  {"success": true, "reason": "r"}\n') == (True, "r")
    assert parse_verdict('```json\n{"success": false, "reason": ""}\n```') == (False, "")
    for bad in [
        '{"success": 1, "reason": "r"}',
        '{"success": true}',
        '{"success": true, "reason": "r", "x": 1}',
        'Sure! {"success": true, "reason": "r"}',
        '{"success": true, "success": false, "reason": "r"}',
        '{"success": NaN, "reason": "r"}',
        "[true]",
    ]:
        with pytest.raises(ValueError):
            parse_verdict(bad)


def test_fill_template_is_literal() -> None:
    t = 'A {prompt} B {final} C {"success": true} {other}'
    assert (
        fill_template(t, {"prompt": "{final}", "final": "F", "trace": "", "correct_tools": ""})
        == 'A {final} B F C {"success": true} {other}'
    )


def test_judge_call_errors_are_error_verdicts() -> None:
    def boom(**_: Any) -> Any:
        raise ConnectionError("down")

    j = LLMJudge(
        "openai/x", TEMPLATE.read_text(), completion_fn=boom, max_attempts=2, retry_delay_s=0
    )
    v = j.judge(inp())
    assert v.status == "error" and v.success is None and "down" in v.reason


def test_error_runs_are_not_judged() -> None:
    calls: list[Any] = []
    j = LLMJudge("openai/x", TEMPLATE.read_text(), completion_fn=lambda **k: calls.append(k))
    assert j.judge(inp(error=True)).success is None and not calls
    assert RubricJudge(lambda *a: None).judge(inp(error=True)).success is None


def test_render_trace_order_and_results() -> None:
    text = render_trace(record())
    assert text.index("[1] get_weather_v2") < text.index("[2] get_weather\n")
    assert 'arguments: {"city":"Delhi"}' in text
    assert "result: ERROR (invalid_arguments): missing required argument api_key" in text
    assert render_trace(record(calls=())) == "(no tool calls)"


# ----------------------------------------------------------------------------- offline judges


@dataclass
class _Result:
    passed: bool
    facts: list[tuple[str, bool]]


def test_rubric_judge_uses_check_rubric() -> None:
    def check(task: Any, final: str, trace: str = "") -> _Result:
        facts = [(f, f in final) for f in task.rubric]
        return _Result(all(ok for _, ok in facts), facts)

    j = RubricJudge(check)
    assert j.judge(inp()).success is True
    v = j.judge(inp(final="no idea"))
    assert v.success is False and "0/1" in v.reason and "31" in v.reason


def test_rubric_judge_with_the_real_task_module() -> None:
    tasks_mod = pytest.importorskip("canarykit.tasks.tasks")
    fact = tasks_mod.Fact(kind="number", label="temperature", value=31.0, tolerance=0.5)
    task = tasks_mod.Task("t1", "easy", "Weather in Delhi?", ("get_weather",), (), (), (fact,))
    j = make_judge({"kind": "rubric"})
    assert j.judge(judge_input(record(), task)).success is True
    assert j.judge(judge_input(record(final="sunny"), task)).success is False


def test_an_unknown_judge_kind_is_one_line_naming_the_key() -> None:
    from canarykit.judging import judge_kinds

    assert judge_kinds() == ("bfcl", "llm", "rubric", "tool-coverage")
    for kind, shown in (("oracle", "'oracle'"), (None, "None"), (["rubric"], "\"['rubric']\"")):
        with pytest.raises(ConfigError) as exc:
            make_judge({"kind": kind}, source="my.yaml", key="judge.cross")
        assert str(exc.value) == (f"my.yaml: judge.cross.kind: unknown judge kind {shown}; "
                                  "expected one of ['bfcl', 'llm', 'rubric', 'tool-coverage']")


def test_tool_coverage_judge() -> None:
    j = ToolCoverageJudge()
    assert j.judge(inp()).success is True
    # only the canary was called: fails
    assert j.judge(inp(calls=(("get_weather_v2", "invalid_arguments", True),))).success is False
    # the real tool answered an error: not covered
    assert j.judge(inp(calls=(("get_weather", "ok", True),))).success is False


# ----------------------------------------------------------------------------- caching


class CountingJudge(ToolCoverageJudge):
    def __init__(self) -> None:
        self.n = 0

    def judge(self, run: JudgeInput) -> Verdict:
        self.n += 1
        return super().judge(run)


def test_verdict_cache_second_run_judges_nothing(tmp_path: Path) -> None:
    inputs = [
        inp("a"),
        inp("b", calls=(("get_weather", "ok", True),)),
        inp("c", error=True),
        inp("d", final="same calls as a: same tool-coverage inputs"),
    ]
    cache = VerdictCache(tmp_path / "v")
    j = CountingJudge()
    df1, c1 = judge_all(j, inputs, cache)
    # d reads exactly what a reads (the tool-coverage judge ignores the answer): reused
    assert (c1["judged"], c1["reused"], c1["skipped"]) == (2, 1, 1)
    df2, c2 = judge_all(j, inputs, cache)
    assert (c2["judged"], c2["reused"], j.n) == (0, 3, 2)
    assert df1.drop("verdict_key").equals(df2.drop("verdict_key"))
    assert df2.filter(pl.col("run_id") == "c")["status"].item() == "skipped"
    files = list((tmp_path / "v").rglob("*.json"))
    assert len(files) == 2 and all(f.parent.name == f.stem[:2] for f in files)


def test_llm_verdict_cache_keys_on_inputs_and_template(tmp_path: Path) -> None:
    replies: list[dict[str, Any]] = []

    def fake(**kw: Any) -> dict[str, Any]:
        replies.append(kw)
        return {"choices": [{"message": {"content": '{"success": true, "reason": "ok"}'}}]}

    cache = VerdictCache(tmp_path)
    tpl = TEMPLATE.read_text()
    j = LLMJudge("openai/x", tpl, completion_fn=fake)
    judge_all(j, [inp("a"), inp("b", final="Delhi: 31 C")], cache)
    assert len(replies) == 2
    _, c = judge_all(j, [inp("a"), inp("b", final="changed")], cache)
    assert len(replies) == 3
    assert (c["judged"], c["reused"]) == (1, 1)
    _, c = judge_all(
        LLMJudge("openai/x", tpl + "\nBe strict.", completion_fn=fake), [inp("a")], cache
    )
    assert c["judged"] == 1


def test_damaged_cache_entry_is_rejudged(tmp_path: Path) -> None:
    cache = VerdictCache(tmp_path)
    j = CountingJudge()
    judge_all(j, [inp("a")], cache)
    (f,) = list(tmp_path.rglob("*.json"))
    f.write_text("{not json")
    _, c = judge_all(j, [inp("a")], cache)
    assert c["judged"] == 1


# ----------------------------------------------------------------------------- independence


def test_independence_refuses_shared_provider() -> None:
    models = [
        {"name": "gpt-4.1", "backend": "litellm", "model": "openai/gpt-4.1"},
        {"name": "oracle", "backend": "reference", "agent": "oracle"},
    ]
    with pytest.raises(ConfigError) as exc:
        check_judge_independence(
            [{"kind": "llm", "model": "openai/gpt-5.2"}], models, "params.yaml"
        )
    assert exc.value.field == "judge.primary.model"
    assert exc.value.file == "params.yaml"
    assert "'openai'" in str(exc.value) and "'gpt-4.1'" in str(exc.value)
    with pytest.raises(ConfigError) as exc:
        check_judge_independence(
            {"cross": {"kind": "llm", "model": "x/y", "provider": "OpenAI"}}, models
        )
    assert exc.value.field == "judge.cross.model"
    # offline judges have no provider
    check_judge_independence(
        {"primary": {"kind": "rubric"}, "cross": {"kind": "tool-coverage"}}, models
    )


def test_paper_profile_is_independent() -> None:
    import yaml

    profile = yaml.safe_load(PROFILE.read_text())
    assert len(profile["models"]) == 8
    check_judge_independence(profile["judge"], profile["models"])
    gemini = [m for m in profile["models"] if m["provider"] == "google"]
    with pytest.raises(ConfigError):
        check_judge_independence(
            {"primary": {"kind": "llm", "model": "vertex_ai/gemini-2.5-pro"}}, profile["models"]
        )
    assert len(gemini) == 2


def test_provider_mapping() -> None:
    assert provider_of("vertex_ai/deepseek-ai/deepseek-v3.2-maas") == "deepseek"
    assert provider_of("vertex_ai/zai-org/glm-5-maas") == "zai"
    assert provider_of("vertex_ai/gemini-2.5-pro") == "google"
    assert provider_of("anthropic/claude-opus-4-8") == "anthropic"
    assert provider_of("qwen3:8b") == "alibaba" and provider_of("llama3.1:8b") == "meta"
    assert provider_of("openai/my-model", api_base="http://127.0.0.1:1/v1") is None
    assert provider_of("anything", "Z-AI") == "zai"


# ----------------------------------------------------------------------------- kappa


def test_kappa_matches_sklearn_on_random_pairs() -> None:
    rng = random.Random(11)
    for _ in range(50):
        n = rng.randint(2, 60)
        p, q = rng.random(), rng.random()
        a = [rng.random() < p for _ in range(n)]
        b = [x if rng.random() < q else rng.random() < 0.5 for x in a]
        ours = cohen_kappa(a, b)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = cohen_kappa_score(a, b)
        if ref != ref:  # NaN: both raters gave one and the same label throughout
            assert ours == 1.0
        else:
            assert ours == pytest.approx(ref, abs=1e-12)


def test_kappa_degenerate_cases() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert cohen_kappa([True] * 5, [True] * 5) == 1.0  # sklearn: NaN (undefined)
        assert cohen_kappa([True] * 4, [True, True, False, True]) == pytest.approx(
            cohen_kappa_score([True] * 4, [True, True, False, True])
        )
        assert (
            cohen_kappa([False, False], [True, True])
            == cohen_kappa_score([False, False], [True, True])
            == 0.0
        )
    assert cohen_kappa([], []) is None
    assert agreement([True, None, False], [True, True, None]) == {
        "n": 1,
        "agreement": 1.0,
        "kappa": 1.0,
    }


def test_cross_judge_report_per_type() -> None:
    rows = []
    for i in range(8):
        row = {"error": i == 7, "success": i % 2 == 0, "success_cross": i % 4 != 3}
        row.update({f"present_{t}": t == "parameter_trap" and i < 4 for t in CANARY_TYPES})
        rows.append(row)
    rep = cross_judge_report(pl.DataFrame(rows))
    assert rep["overall"]["n"] == 7
    assert rep["per_type"]["parameter_trap"]["n"] == 4
    assert rep["per_type"]["semantic_decoy"] == {"n": 0, "agreement": None, "kappa": None}
    assert rep["tsr_difference"] == pytest.approx(4 / 7 - 6 / 7)


# ----------------------------------------------------------------------------- stability


def test_stability_offline_is_trivially_unanimous() -> None:
    inputs = [inp(f"r{i}") for i in range(10)] + [inp("e", error=True)]
    rep = stability(
        lambda t: ToolCoverageJudge(), inputs, sample=5, repeats=3, temperature=0.7, seed=0
    )
    assert rep["sample"] == 5 and rep["unanimity_rate"] == 1.0 and rep["agreement_with_t0"] == 1.0
    assert rep["deterministic"] is True and "by construction" in rep["note"]
    again = stability(
        lambda t: ToolCoverageJudge(), inputs, sample=5, repeats=3, temperature=0.7, seed=0
    )
    assert [r["run_id"] for r in rep["runs"]] == [r["run_id"] for r in again["runs"]]
    assert "e" not in [r["run_id"] for r in rep["runs"]]


def test_stability_of_a_noisy_llm_judge(tmp_path: Path) -> None:
    rng = random.Random(3)
    sent: list[float] = []

    def fake(**kw: Any) -> dict[str, Any]:
        sent.append(kw["temperature"])
        ok = kw["temperature"] == 0 or rng.random() < 0.8
        return {"choices": [{"message": {"content": json.dumps({"success": ok, "reason": "r"})}}]}

    tpl = TEMPLATE.read_text()
    inputs = [inp(f"r{i}", final=f"answer {i}") for i in range(20)]

    def factory(t: float) -> LLMJudge:
        return LLMJudge("openai/x", tpl, temperature=t, completion_fn=fake)

    cache = VerdictCache(tmp_path)
    rep = stability(factory, inputs, sample=10, repeats=3, temperature=0.7, seed=1, cache=cache)
    assert rep["sample"] == 10 and rep["deterministic"] is False and "note" not in rep
    assert 0.0 <= rep["unanimity_rate"] < 1.0
    assert sent.count(0.7) == 30 and sent.count(0) == 10
    n = len(sent)
    stability(factory, inputs, sample=10, repeats=3, temperature=0.7, seed=1, cache=cache)
    assert len(sent) == n + 10  # repeats reused from the cache; only the uncached t0 grades rerun


# ----------------------------------------------------------------------------- human sheet


def test_human_sheet_bad_value_names_row_and_field(tmp_path: Path) -> None:
    sheet = tmp_path / "human.csv"
    sheet.write_text("run_id,verdict\nr1,true\nr2,maybe\n")
    with pytest.raises(InputError) as exc:
        read_human_sheet(sheet)
    assert exc.value.file == str(sheet) and exc.value.field == "row 3: verdict"
    assert "maybe" in str(exc.value)
    sheet.write_text("run_id,grade\nr1,true\n")
    with pytest.raises(InputError) as exc:
        read_human_sheet(sheet)
    assert exc.value.field == "verdict"


def test_human_validation_marks_the_stricter_side(tmp_path: Path) -> None:
    sheet = tmp_path / "human.csv"
    sheet.write_text("run_id,verdict\nr1,Success\nr2,0\nr3,TRUE\nr4,fail\n")
    grades = read_human_sheet(sheet)
    rep = human_validation(
        grades,
        {
            "primary": {"r1": False, "r2": False, "r3": True, "r4": True},
            "cross": {"r1": True, "r2": False, "r3": None, "r4": False},
        },
        str(sheet),
    )
    p = rep["primary"]
    assert p["n"] == 4 and p["agreement"] == 0.5
    assert p["kappa"] == pytest.approx(cohen_kappa_score([1, 0, 1, 0], [0, 0, 1, 1]))
    assert {d["run_id"]: d["stricter"] for d in p["disagreements"]} == {
        "r1": "judge",
        "r4": "human",
    }
    assert (
        rep["cross"]["n"] == 3
        and rep["cross"]["unjudged"] == 1
        and rep["cross"]["agreement"] == 1.0
    )
    with pytest.raises(InputError) as exc:
        human_validation(grades, {"primary": {"r1": True}}, str(sheet))
    assert exc.value.field == "row 3: run_id"


def test_validation_counts_keep_only_what_the_verdicts_say() -> None:
    """issue 29: validation.json's `judged` / `reused` counts depended on which of 12 parallel
    judge jobs reached the shared verdict cache first, so a tracked output changed from run to
    run; it keeps the verdicts by status, the judging log keeps the rest."""
    from canarykit.judging import tracked_counts

    first = {"primary": {"judged": 12, "reused": 0, "skipped": 1, "ok": 11, "unparseable": 1, "error": 0},
             "cross": {"judged": 5, "reused": 7, "skipped": 1, "ok": 12, "unparseable": 0, "error": 0},
             "model_calls": {"primary": {"requests": 12, "cached": 0, "retries": 0, "cost_usd": 0.0}}}
    again = {"primary": {**first["primary"], "judged": 0, "reused": 12},
             "cross": {**first["cross"], "judged": 12, "reused": 0},
             "model_calls": {"primary": {"requests": 0, "cached": 12, "retries": 0, "cost_usd": 0.0}}}
    assert tracked_counts(first) == tracked_counts(again) == {
        "primary": {"skipped": 1, "ok": 11, "unparseable": 1, "error": 0},
        "cross": {"skipped": 1, "ok": 12, "unparseable": 0, "error": 0}}
