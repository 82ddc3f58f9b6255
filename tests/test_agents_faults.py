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
from canarykit.agents.store import ensure_retry_gate, mark_failed_runs_for_retry, retry_gate_path
from canarykit.detect import classify_calls
from canarykit.records import read_record

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
    store, index, gate = tmp_path / "store", tmp_path / "index.parquet", tmp_path / "store/.retry/gate.json"

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
        assert json.loads(gate.read_text())["failed"] == first.failed and gate.stat().st_mtime > index.stat().st_mtime
        for path in store.rglob("*.json"):
            if path.parent.name == ".retry":
                continue
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


def test_retry_gate_is_newer_than_the_index_only_while_failures_remain(tmp_path: Path) -> None:
    store, index = tmp_path / "store", tmp_path / "results/runs/index.parquet"
    gate = ensure_retry_gate(retry_gate_path(store, index))
    assert gate.parent.name == ".retry" and gate.stat().st_mtime == 0  # never triggers a rerun by itself
    index.parent.mkdir(parents=True)
    pl.DataFrame({"run_id": ["a", "b"], "error": [False, False]}).write_parquet(index)
    assert mark_failed_runs_for_retry(index, store) == 0 and gate.stat().st_mtime == 0
    pl.DataFrame({"run_id": ["a", "b"], "error": [True, False]}).write_parquet(index)
    before = gate.read_bytes()
    assert mark_failed_runs_for_retry(index, store) == 1
    assert gate.stat().st_mtime >= index.stat().st_mtime + 1  # Snakemake: the run rule is out of date
    after = gate.read_bytes()
    assert after != before  # DVC: the store changed
    assert mark_failed_runs_for_retry(index, store) == 1 and gate.read_bytes() != after  # every time
    os.utime(index)  # a rerun rewrote the index without failures
    pl.DataFrame({"run_id": ["a", "b"], "error": [False, False]}).write_parquet(index)
    assert mark_failed_runs_for_retry(index, store) == 0 and gate.stat().st_mtime < index.stat().st_mtime + 1
