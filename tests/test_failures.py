"""Failed runs of a study said loudly (issue 29, item 2): the count against study.allow_failed,
the first failure's class, host and model read from its run record, the retry command, and
the report's first screen that leads with them."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from canarykit.agents.store import RunStore
from canarykit.report.failure_banner import failure_banner
from canarykit.store.records import BackendErrorEvent, OfferedTool, RunRecord
from canarykit.study.failed_runs import study_failures
from canarykit.study.failures import (
    Failures,
    model_host,
    read_verdict,
    retry_command,
    write_verdict,
)

MODELS = [{"name": "oracle", "backend": "reference", "agent": "oracle"},
          {"name": "llama3", "backend": "ollama", "model": "llama3:8b", "host": "http://127.0.0.1:11434"},
          {"name": "gpt-4.1", "backend": "litellm", "model": "openai/gpt-4.1"}]


def _record(run_id: str, model: str, error: bool) -> RunRecord:
    events = [BackendErrorEvent(turn=0, message="connection refused by 127.0.0.1:11434 (nothing listens there: is the "
                                "server running?)", error_type="ConnectionRefused", attempts=3)] if error else []
    return RunRecord(run_id=run_id, identity={}, model=model, group="g", backend="ollama", condition="declared",
                     pool="standard", seed=0, task_id="t", difficulty="easy", offered=[OfferedTool("get_weather")],
                     correct_tools=["get_weather"], events=events, final_answer=None if error else "x",
                     status="error" if error else "completed", error=error)


def _study(tmp_path: Path) -> tuple[Path, Path]:
    store = tmp_path / "store"
    runs = RunStore(store)
    rows = []
    for i, (model, error) in enumerate([("oracle", False), ("oracle", False), ("llama3", True), ("llama3", True)]):
        runs.save(_record(f"run{i:04d}", model, error))
        rows.append({"model": model, "run_id": f"run{i:04d}", "error": error})
    index = tmp_path / "index.parquet"
    pl.DataFrame(rows).write_parquet(index)
    return index, store


def test_a_refused_backend_is_the_first_failure_with_its_class_host_and_model(tmp_path: Path) -> None:
    """Issue 29: "The reason (`ConnectionError x 3`, no host named) is only in `logs/run_agents/<model>/*.log`"."""
    index, store = _study(tmp_path)
    failures = study_failures(index, store, MODELS, 0.0)
    assert failures is not None and failures.failed == 2 and failures.total == 4 and failures.exceeded
    assert failures.first is not None
    assert failures.first.text() == "ConnectionRefused from 127.0.0.1:11434 (model llama3)"
    assert failures.first.transient, "a refused connection is retried by running the study again"
    assert failures.headline() == "2 of 4 runs failed (50%; study.allow_failed: 0)"
    assert not study_failures(index, store, MODELS, 0.5).exceeded, "a share up to allow_failed is accepted"
    assert study_failures(tmp_path / "none.parquet", store, MODELS, 0.0) is None
    write_verdict(tmp_path, failures)
    assert read_verdict(tmp_path) == failures


def test_where_a_models_calls_go() -> None:
    assert [model_host(m) for m in MODELS] == ["in-process", "127.0.0.1:11434", "openai"]
    assert model_host({"backend": "litellm", "model": "openai/x", "api_base": "https://gw.example.org/v1"}) == "gw.example.org:443"


def test_the_retry_command_is_the_users_own_and_forces_the_agents_for_a_permanent_failure(monkeypatch) -> None:
    from canarykit.study.failures import COMMAND_ENV, FirstFailure

    monkeypatch.setenv(COMMAND_ENV, "canarykit run --configfile mine.yaml")
    refused = FirstFailure("llama3", "ConnectionRefused", "127.0.0.1:11434", "", "r", transient=True)
    assert retry_command(refused) == "canarykit run --configfile mine.yaml", "transient: the job is out of date already"
    missing = FirstFailure("gpt-4.1", "MissingAPIKey", "openai", "", "r")
    assert retry_command(missing) == "canarykit run --configfile mine.yaml --forcerun run_agents"
    monkeypatch.setenv(COMMAND_ENV, "make run")
    assert retry_command(missing) == "make resume 'SMK_ARGS=--forcerun run_agents'"
    monkeypatch.delenv(COMMAND_ENV)
    assert retry_command(refused, ["/v/bin/snakemake", "--cores", "2", "--configfile", "a b.yaml"]) == \
        "snakemake --cores 2 --configfile 'a b.yaml'"


def test_the_reports_first_screen_leads_with_the_failures(tmp_path: Path) -> None:
    """Issue 29: "the report's first screen shows `n/a` everywhere and says nothing of failures"."""
    index, store = _study(tmp_path)
    runs = pl.read_parquet(index)
    html = str(failure_banner(runs, store, {"models": MODELS, "study": {"allow_failed": 0}}))
    assert 'id="failed-runs"' in html and "2 of 4 runs failed (50%)" in html
    assert "<strong>ConnectionRefused</strong> from <strong>127.0.0.1:11434</strong> (model <strong>llama3</strong>)" in html
    assert "exited with an error" in html
    assert "within study.allow_failed (0.5)" in str(failure_banner(runs, store, {"models": MODELS, "study": {"allow_failed": 0.5}}))
    assert failure_banner(runs.filter(~pl.col("error")), store, {"models": MODELS}) is None
    assert Failures(0, 4, 0.0, None).exceeded is False
