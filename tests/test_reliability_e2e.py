"""The workflow end to end against a fake gateway on 127.0.0.1 (issue 9's done-when tests):

- a gateway that echoes the Authorization header in 401/500 bodies, for the agent and for an
  LLM judge: after a small study the keys are nowhere under the study directory (results/,
  .snakemake/, every cache; Parquet files decoded, not grepped), nor on the console;
- >= 20% injected faults (429 with and without Retry-After, 500, timeouts, replies without
  choices) plus malformed arguments and unknown tool names: the study completes, no fault is
  recorded as a trap or a success, and a plain `snakemake` with the gateway healthy retries
  exactly the failed runs and leaves none (slow-marked: three Snakemake invocations; the
  in-process version is tests/test_agents_faults.py);
- the same with `dvc repro` (slow), the DVC cache included in the search for the key.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml
from fakes.gateway import Faults, OracleAgent, user_prompt
from fakes.openai_server import FakeOpenAIServer, Reply, error_body
from fakes.workflow import copy_workflow, run

AGENT_ENV, AGENT_KEY = "CANARYKIT_E2E_AGENT_KEY", "e2e-agent-key-9f8e7d6c5b4a3210"
JUDGE_ENV, JUDGE_KEY = "CANARYKIT_E2E_JUDGE_KEY", "e2e-judge-key-0a1b2c3d4e5f6789"


def make_repo(tmp: Path, url: str, *, per_difficulty: int, llm_judge: bool = False) -> Path:
    repo = copy_workflow(tmp / "repo", per_difficulty=per_difficulty, models=())
    p = repo / "params.yaml"
    cfg = yaml.safe_load(p.read_text())
    cfg["models"] = [{"name": "fake-gw", "backend": "litellm", "model": "openai/fake-model", "api_base": url,
                      "api_key_env": AGENT_ENV, "group": "hosted", "provider": "gwco"}]
    cfg["study"]["conditions"] = ["baseline", "declared"]
    # these tests fail runs on purpose and then retry them: the study may finish with them
    # (issue 29's loud failure is tested in test_console_e2e.py)
    cfg["study"]["allow_failed"] = 1.0
    cfg["ablation"]["enabled"] = False
    cfg["agent"].update(timeout_s=1, concurrency=4, workers=1,
                        retries={"max_attempts": 3, "base_delay_s": 0.01, "max_delay_s": 0.05})
    cfg["judge"]["stability"] = {"sample": 2, "repeats": 2, "temperature": 0.7, "seed": 0}
    if llm_judge:
        cfg["judge"]["primary"] = {"kind": "llm", "model": "openai/judge-model", "api_base": url,
                                   "api_key_env": JUDGE_ENV, "provider": "judgeco", "timeout_s": 5}
    p.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return repo


def prompts(repo: Path) -> dict[str, str]:
    doc = json.loads((repo / "data/tasks.json").read_text())
    return {t["id"]: t["prompt"] for t in doc["tasks"]}


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(AGENT_ENV, AGENT_KEY)
    monkeypatch.setenv(JUDGE_ENV, JUDGE_KEY)


def _parquet_text(path: Path) -> str:
    df = pl.read_parquet(path)
    return "\n".join(str(v) for col in df.columns for v in df[col].cast(pl.String, strict=False).to_list())


@pytest.mark.slow  # whole workflow invocations: tens of seconds on a loaded machine
def test_keys_echoed_by_a_failing_gateway_reach_no_file_and_no_log(tmp_path: Path) -> None:
    state: dict[str, Any] = {}

    def handler(body: Any, headers: dict[str, str], n: int) -> Reply:
        echo = f"bad credentials: Authorization: {headers.get('authorization', '')}"
        if not body.get("tools"):  # the LLM judge: every call fails, echoing its key
            return Reply(error_body(echo, "authentication_error"), status=401 if n % 2 else 500)
        prompt = user_prompt(body)
        if prompt == state["p"]["easy-001"]:
            return Reply(error_body(echo, "authentication_error"), status=401)
        if prompt == state["p"]["medium-001"]:
            return Reply(error_body(echo), status=500)
        return state["oracle"](body, headers, n)

    with FakeOpenAIServer(handler) as server:
        repo = make_repo(tmp_path, server.url, per_difficulty=1, llm_judge=True)
        state["p"] = prompts(repo)
        state["oracle"] = OracleAgent(repo / "data/tasks.json")
        proc = run(repo, "snakemake", "--cores", "2", "--scheduler", "greedy")
        sent = {h.get("authorization") for _, h in server.requests}
    # The keys were really sent (and echoed), so finding none below means they were scrubbed.
    assert f"Bearer {AGENT_KEY}" in sent and f"Bearer {JUDGE_KEY}" in sent
    console = proc.stdout + proc.stderr
    assert "4 of 6 runs failed" in console and "AuthenticationError" in console  # the closing block
    logs = "\n".join(p.read_text(errors="replace") for p in (repo / "results/logs").rglob("*.log") if p.is_file())
    assert "fake-gw: 4 runs failed" in logs and "AuthenticationError (401) x 2" in logs  # the jobs' own summaries
    assert "verdicts failed" in console + logs
    files = [p for p in repo.rglob("*") if p.is_file()]
    assert any(".snakemake" in p.parts for p in files) and any("cache" in p.parts for p in files)
    for p in files:
        data = p.read_bytes()
        assert AGENT_KEY.encode() not in data and JUDGE_KEY.encode() not in data, p
        if p.suffix == ".parquet":
            text = _parquet_text(p)
            assert AGENT_KEY not in text and JUDGE_KEY not in text, p
    for key in (AGENT_KEY, JUDGE_KEY):
        assert key not in console
    # The failures themselves are recorded, with the echoed credential masked.
    runs = pl.read_parquet(repo / "results/runs.parquet")
    assert runs["error"].sum() == 4 and runs.filter(~pl.col("error"))["judge_status"].to_list() == ["error", "error"]
    verdicts = pl.read_parquet(repo / "results/judge/verdicts/primary.parquet")
    assert all("***" in r for r in verdicts.filter(pl.col("status") == "error")["reason"].to_list())
    cached = [json.loads(f.read_text()) for f in (repo / "results/cache/verdicts").rglob("*.json")]
    assert cached and all(c["verdict"]["status"] != "error" for c in cached)  # error verdicts never cached
    assert all(c["judge"]["kind"] != "llm" for c in cached)


@pytest.mark.slow
def test_injected_faults_are_retried_and_never_recorded_as_traps_or_successes(tmp_path: Path) -> None:
    state: dict[str, Any] = {}
    with FakeOpenAIServer(lambda b, h, n: state["faults"](b, h, n)) as server:
        repo = make_repo(tmp_path, server.url, per_difficulty=2)
        p = prompts(repo)
        agent = OracleAgent(repo / "data/tasks.json", misbehave={p["easy-001"]: "malformed", p["medium-001"]: "unknown"})
        faults = Faults(agent, rate=0.3, seed=7, always={p["hard-002"]})
        state["faults"] = faults
        # the per-run table is the target: the tables and figures add nothing here but minutes
        target = "results/runs.parquet"
        first = run(repo, "snakemake", "--cores", "2", "--scheduler", "greedy", target)
        assert faults.fault_rate >= 0.2, faults.counts
        assert all(faults.counts[k] > 0 for k in ("429-retry-after", "429", "500", "timeout", "no-choices")), faults.counts
        runs = pl.read_parquet(repo / "results/runs.parquet")
        summary = json.loads((repo / "results/logs/run-summary.json").read_text())
        failed = runs.filter(pl.col("error"))
        assert summary["failed"] == failed.height >= 2 and "(model fake-gw)" in first.stderr and "runs failed" in first.stderr
        assert set(failed["task_id"]) >= {"hard-002"}
        assert failed["success"].is_null().all() and not failed["trapped"].any()
        ok = runs.filter(~pl.col("error"))
        # a fault is never a trap, a success or a failure: every run that got through succeeded
        assert ok["success"].all() and not ok["trapped"].any() and (ok["canary_calls"] == 0).all()
        assert (ok.filter(pl.col("task_id").is_in(["easy-001", "medium-001"]))["unknown_calls"] >= 1).all()

        faults.healthy = True
        before = len(server.requests)
        second = run(repo, "snakemake", "--cores", "2", "--scheduler", "greedy", target)
        assert "run_agents" in second.stdout + second.stderr
        summary2 = json.loads((repo / "results/logs/run-summary.json").read_text())
        assert summary2["failed"] == 0 and summary2["executed"] == failed.height  # exactly the failed runs
        assert summary2["reused"] == summary2["total"] - failed.height
        assert len(server.requests) > before
        runs2 = pl.read_parquet(repo / "results/runs.parquet")
        assert not runs2["error"].any() and runs2["success"].all() and not runs2["trapped"].any()
        assert (runs2["canary_calls"] == 0).all() and not runs2["truncated"].any()
        again = run(repo, "snakemake", "--cores", "2", "-n", target)
        assert any(s in again.stdout + again.stderr for s in ("nothing to do: every output is up to date", "Nothing to be done"))


def _assert_no_key_under(root: Path, keys: tuple[str, ...]) -> list[Path]:
    """Every file under ``root`` (Parquet decoded, not just grepped) is free of ``keys``."""
    files = [p for p in root.rglob("*") if p.is_file()]
    for p in files:
        data = p.read_bytes()
        for key in keys:
            assert key.encode() not in data, p
        if data[:4] == b"PAR1":  # a Parquet file or DVC object: compressed text hides nothing
            text = _parquet_text(p)
            for key in keys:
                assert key not in text, p
    return files


@pytest.mark.slow  # whole workflow or server start-ups: over ten seconds on a loaded machine
def test_a_dry_run_writes_nothing(tmp_path: Path) -> None:
    repo = copy_workflow(tmp_path / "repo", per_difficulty=1, models=("oracle",))
    out = run(repo, "snakemake", "-n", "--quiet", "rules").stdout
    assert "run_agents" in out
    assert not (repo / "results").exists()  # no retry gate (nor anything else) created by `snakemake -n`


@pytest.mark.slow
@pytest.mark.timeout(1800)  # four `dvc repro`, each stage its own Snakemake: minutes on a loaded machine
def test_dvc_repro_retries_failed_runs_and_keeps_keys_out_of_the_dvc_cache(tmp_path: Path) -> None:
    state: dict[str, Any] = {"judge_down": True}

    def handler(body: Any, headers: dict[str, str], n: int) -> Reply:
        if not body.get("tools") and state["judge_down"]:  # the LLM judge, echoing its key
            echo = f"bad credentials: Authorization: {headers.get('authorization', '')}"
            return Reply(error_body(echo, "authentication_error"), status=401 if n % 2 else 500)
        return state["faults"](body, headers, n)

    with FakeOpenAIServer(handler) as server:
        repo = make_repo(tmp_path, server.url, per_difficulty=1, llm_judge=True)
        p = prompts(repo)
        faults = Faults(OracleAgent(repo / "data/tasks.json"), rate=0.0, always={p["easy-001"]})
        state["faults"] = faults
        for cmd in (("git", "init", "-q"), ("dvc", "init", "-q"), ("git", "add", "-A"), ("git", "commit", "-qm", "study")):
            run(repo, *cmd)
        first = run(repo, "dvc", "repro")
        console = first.stdout + first.stderr
        summary = json.loads((repo / "results/logs/run-summary.json").read_text())
        # each stage's console says it is done, and the failed runs (allowed) with the first one's model
        assert summary["failed"] == 2 and "failed runs: 2 of" in console and "(model fake-gw)" in console, console
        assert "stopped" not in console, console
        assert "failed verdicts: judge primary" in console, console  # the judge failed too, echoing its key
        status = run(repo, "dvc", "status").stdout
        assert "run_agents:" in status  # failures remain: the run stage is out of date
        sent = {h.get("authorization") for _, h in server.requests}
        assert f"Bearer {AGENT_KEY}" in sent and f"Bearer {JUDGE_KEY}" in sent

        faults.healthy = True
        state["judge_down"] = False
        second = run(repo, "dvc", "repro").stdout
        assert "Running stage 'run_agents'" in second
        summary = json.loads((repo / "results/logs/run-summary.json").read_text())
        assert summary["failed"] == 0 and summary["executed"] == 2
        runs = pl.read_parquet(repo / "results/runs.parquet")
        assert not runs["error"].any() and runs["judge_status"].to_list() == ["ok"] * runs.height
        third = run(repo, "dvc", "repro").stdout
        assert "Running stage 'run_agents'" not in third
        fourth = run(repo, "dvc", "repro").stdout
        assert "Running stage" not in fourth and "up to date" in fourth
        for key in (AGENT_KEY, JUDGE_KEY):
            assert key not in console + second + third + fourth
    # the first reproduction's failed verdicts and runs went through the DVC cache: no key there,
    # nor anywhere else under the repository
    cached = [f for f in (repo / ".dvc" / "cache").rglob("*") if f.is_file()]
    assert cached and any(f.read_bytes()[:4] == b"PAR1" for f in cached)
    files = _assert_no_key_under(repo, (AGENT_KEY, JUDGE_KEY))
    assert any(".dvc" in f.parts for f in files) and any("verdicts" in f.parts for f in files)
