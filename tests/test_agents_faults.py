"""The runner under injected faults, in-process (the workflow-level version, with Snakemake's
retry gate, is the slow test in test_reliability_e2e.py): the grid completes, no fault is
recorded as a trap or a success, failures are grouped by reason, the retry gate is marked,
and a rerun against a healthy gateway re-executes exactly the failed runs."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from fakes.gateway import FAULT_KINDS, Faults, OracleAgent
from fakes.openai_server import FakeOpenAIServer
from fakes.study import make_study

from canarykit.agents import run_grid
from canarykit.agents.store import (
    ensure_retry_gate,
    mark_failed_runs_for_retry,
    mark_retry_gate,
    retry_gate_input,
    retry_gate_path,
)
from canarykit.detection.detect import classify_calls
from canarykit.store.records import read_record

KEY_ENV, KEY = "CANARYKIT_TEST_FAULTS_KEY", "faults-key-5a6b7c8d9e0f1234"
AGENT = {"max_turns": 8, "timeout_s": 1, "concurrency": 4, "workers": 1,
         "retries": {"max_attempts": 3, "base_delay_s": 0.01, "max_delay_s": 0.05}}


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)


def test_faults_are_contained_reported_and_retried_exactly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tasks_path, pools, tasks = make_study(tmp_path / "study", n_tasks=6, pools={"standard": ["baseline", "declared"]})
    by_id = {t.id: t.prompt for t in tasks}
    agent = OracleAgent(tasks_path, misbehave={by_id["easy-001"]: "malformed", by_id["easy-002"]: "unknown"})
    faults = Faults(agent, rate=0.3, seed=3, always={by_id["easy-003"]})
    store, index, gate = tmp_path / "store", tmp_path / "index.parquet", tmp_path / "retry/gate.json"

    def grid(url: str) -> Any:
        model = {"name": "fake-gw", "backend": "litellm", "model": "openai/fake-model", "api_base": url, "api_key_env": KEY_ENV}
        return run_grid([model], tasks_path, pools, [0], {**AGENT, "cache_dir": str(tmp_path / "cache")}, store, index,
                        tmp_path / "summary.json", retry_gate=gate)

    with FakeOpenAIServer(faults) as server:
        first = grid(server.url)
        assert faults.fault_rate >= 0.2 and all(faults.counts[k] for k in FAULT_KINDS), faults.counts
        err = capsys.readouterr().err
        assert f"fake-gw: {first.failed} runs failed: " in err and "InternalServerError (500)" in err
        idx = pl.read_parquet(index)
        failed = idx.filter(pl.col("error"))
        assert first.failed == failed.height >= 2 and "easy-003" in set(failed["task_id"])
        assert json.loads(gate.read_text())["failed"] == first.failed
        # marked, yet never dated after the job's outputs (Snakemake refuses outputs older than an input)
        assert json.loads(gate.read_text())["retry"] == first.failed and gate.stat().st_mtime <= index.stat().st_mtime
        for path in store.rglob("*.json"):
            rec = read_record(path)
            calls = [e for e in rec.events if e.kind == "tool_call"]
            assert not any(c.cls == "canary" for c in classify_calls(rec))  # a fault is never a trap
            if rec.error:
                assert rec.final_answer is None and rec.events[-1].kind == "backend_error"
                assert KEY not in (rec.events[-1].message or "")
            else:
                task = next(t for t in tasks if t.id == rec.task_id)
                assert rec.status == "completed" and all(s.tool in {c.name for c in calls} for s in task.plan)
                assert rec.final_answer and rec.final_answer.startswith("Here is what I found")

        faults.healthy = True
        second = grid(server.url)
    assert second.failed == 0 and second.executed == first.failed and second.reused == second.total - first.failed
    assert not pl.read_parquet(index)["error"].any()
    assert gate.stat().st_mtime < index.stat().st_mtime and json.loads(gate.read_text())["retry"] == 0  # settled


def test_retry_gate_is_newer_than_the_index_only_while_failures_remain(tmp_path: Path) -> None:
    index = tmp_path / "results/runs/index.parquet"
    gate = ensure_retry_gate(retry_gate_path(index))
    assert gate.parent == index.parent / "retry" and gate.stat().st_mtime == 0  # never triggers a rerun by itself
    index.parent.mkdir(parents=True, exist_ok=True)
    pl.DataFrame({"run_id": ["a", "b"], "error": [False, False]}).write_parquet(index)
    assert mark_failed_runs_for_retry(index) == 0 and gate.stat().st_mtime == 0
    pl.DataFrame({"run_id": ["a", "b"], "error": [True, False]}).write_parquet(index)
    mark_retry_gate(gate, index, 1)  # the run job
    assert gate.stat().st_mtime <= index.stat().st_mtime  # not after the job's own outputs
    assert retry_gate_input(index, dry_run=True) == str(gate)  # the next invocation's DAG
    assert gate.stat().st_mtime > index.stat().st_mtime  # Snakemake: the run rule is out of date
    before = gate.read_bytes()
    assert mark_failed_runs_for_retry(index) == 1  # a job reading the index after it
    assert gate.stat().st_mtime > index.stat().st_mtime  # Snakemake: the run rule is out of date
    after = gate.read_bytes()
    assert after != before  # DVC: the run stage's runs/retry changed
    assert mark_failed_runs_for_retry(index) == 1 and gate.read_bytes() != after  # every time


def test_a_rerun_that_fixes_the_failures_settles_the_gate_however_quickly_it_ends(tmp_path: Path) -> None:
    index = tmp_path / "runs/index.parquet"
    gate = ensure_retry_gate(retry_gate_path(index))
    index.parent.mkdir(parents=True, exist_ok=True)
    pl.DataFrame({"run_id": ["a", "b"], "error": [True, False]}).write_parquet(index)
    mark_retry_gate(gate, index, 1)
    written = index.stat().st_mtime
    # the rerun rewrites the index without failures within the same instant (mtime unchanged)
    pl.DataFrame({"run_id": ["a", "b"], "error": [False, False]}).write_parquet(index)
    os.utime(index, (written, written))
    mark_retry_gate(gate, index, 0)  # what the run job does at its end
    assert gate.stat().st_mtime < index.stat().st_mtime  # Snakemake: nothing to do
    assert mark_failed_runs_for_retry(index) == 0 and gate.stat().st_mtime < index.stat().st_mtime
    settled = gate.read_bytes()
    mark_retry_gate(gate, index, 0)
    assert gate.read_bytes() == settled == b'{\n  "failed": 0,\n  "retry": 0\n}\n'  # DVC: unchanged from run to run


def test_failures_accepted_by_the_policy_do_not_keep_the_job_out_of_date(tmp_path: Path) -> None:
    index = tmp_path / "runs/index.parquet"
    gate = retry_gate_path(index)
    index.parent.mkdir(parents=True, exist_ok=True)
    pl.DataFrame({"run_id": ["a", "b", "c"], "error": [True, True, False]}).write_parquet(index)
    # agent.retries.rerun_failed: transient, one 401 (accepted) and one 503 (retried)
    mark_retry_gate(gate, index, 2, retry=1, accepted={"AuthenticationError (401)": 1}, policy="transient")
    retry_gate_input(index)
    assert gate.stat().st_mtime > index.stat().st_mtime
    assert mark_failed_runs_for_retry(index) == 1 and json.loads(gate.read_text())["retry"] == 1
    # the rerun: the 503 run succeeded, the 401 failed again and is accepted
    pl.DataFrame({"run_id": ["a", "b", "c"], "error": [True, False, False]}).write_parquet(index)
    mark_retry_gate(gate, index, 1, retry=0, accepted={"AuthenticationError (401)": 1}, policy="transient")
    assert gate.stat().st_mtime < index.stat().st_mtime
    retry_gate_input(index)  # a settled gate keeps its date
    assert gate.stat().st_mtime < index.stat().st_mtime
    settled = gate.read_bytes()
    assert mark_failed_runs_for_retry(index) == 0 and gate.read_bytes() == settled
    state = json.loads(settled)
    assert state["failed"] == 1 and state["retry"] == 0 and state["accepted"] == {"AuthenticationError (401)": 1}


def test_runs_that_keep_failing_are_named_each_time_and_the_policy_can_accept_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tasks_path, pools, tasks = make_study(tmp_path / "study", n_tasks=3, pools={"standard": ["baseline"]})
    refused, flaky = tasks[0].prompt, tasks[1].prompt
    agent = OracleAgent(tasks_path)
    state = {"healthy": False}

    def handler(body: Any, headers: dict[str, str], n: int) -> Any:
        from fakes.gateway import user_prompt
        from fakes.openai_server import Reply, error_body

        prompt = user_prompt(body)
        if prompt == refused:  # refused for good: the key is wrong
            return Reply(error_body(f"bad key {headers.get('authorization')}", "authentication_error"), status=401)
        if prompt == flaky and not state["healthy"]:
            return Reply(error_body("overloaded"), status=503)
        return agent(body, headers, n)

    store, index = tmp_path / "store", tmp_path / "index.parquet"
    gate = retry_gate_path(index)

    def grid(url: str, rerun_failed: str) -> Any:
        model = {"name": "fake-gw", "backend": "litellm", "model": "openai/fake-model", "api_base": url, "api_key_env": KEY_ENV}
        retries = {**AGENT["retries"], "rerun_failed": rerun_failed}
        return run_grid([model], tasks_path, pools, [0], {**AGENT, "retries": retries, "cache_dir": str(tmp_path / "cache")},
                        store, index, tmp_path / "summary.json", retry_gate=gate)

    with FakeOpenAIServer(handler) as server:
        first = grid(server.url, "transient")
        err = capsys.readouterr().err
        assert first.failed == 2 and first.failed_again == 0 and first.retry_pending == 1
        assert "fake-gw: 2 runs failed: AuthenticationError (401) x 1, ServiceUnavailableError (503) x 1" in err
        assert "not transient: AuthenticationError (401)" in err and "accepted as failed" in err
        state_doc = json.loads(gate.read_text())
        assert state_doc["retry"] == 1 and state_doc["accepted"] == {"AuthenticationError (401)": 1}
        retry_gate_input(index)  # the next invocation's DAG
        assert gate.stat().st_mtime > index.stat().st_mtime  # the 503 keeps the job out of date

        state["healthy"] = True
        second = grid(server.url, "transient")
        err = capsys.readouterr().err
        assert second.failed == 1 and second.executed == 2 and second.failed_again == 1
        assert "fake-gw: 1 runs failed: AuthenticationError (401) x 1; 1 of them failed in an earlier invocation too" in err
        assert gate.stat().st_mtime < index.stat().st_mtime  # only the accepted 401 is left: up to date
        assert json.loads(gate.read_text())["retry"] == 0

        third = grid(server.url, "all")  # the default: every failure is retried, and said so
        err = capsys.readouterr().err
        assert third.failed == 1 and third.failed_again == 1 and third.retry_pending == 1
        assert "set agent.retries.rerun_failed: transient" in err and "1 of them failed in an earlier invocation too" in err
        retry_gate_input(index)
        assert gate.stat().st_mtime > index.stat().st_mtime
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["per_model"]["fake-gw"]["failed_again"] == 1 and summary["rerun_failed"] == "all"


def test_a_study_keeps_its_retry_gates_in_its_own_state_never_in_the_shared_store(tmp_path: Path) -> None:
    # issue 29: a failed run of another study (results/mine) wrote .retry markers into the
    # shared results/runs/store, and the default study's `dvc status` then reported
    # "run_agents: changed outs: modified: results/runs/store"
    mine = tmp_path / "results/mine/runs/jobs/gw/standard-declared-0.parquet"
    main = tmp_path / "results/runs/jobs/gw/standard-declared-0.parquet"
    for index in (mine, main):
        index.parent.mkdir(parents=True, exist_ok=True)
        pl.DataFrame({"run_id": ["a"], "error": [index == mine]}).write_parquet(index)
    assert mark_failed_runs_for_retry(mine) == 1
    gate = retry_gate_path(mine)
    assert gate == tmp_path / "results/mine/runs/retry/gw_standard-declared-0.parquet.json"
    assert json.loads(gate.read_text())["retry"] == 1
    assert retry_gate_path(main).parent == tmp_path / "results/runs/retry"
    assert not (tmp_path / "results/runs/retry").exists() and not (tmp_path / "results/runs/store").exists()
