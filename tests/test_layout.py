"""The study's layout: agent jobs, model slugs, the task limit, the run summary over jobs and
the metrics directory."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from canarykit.agents.calls import INVOCATION_ENV, Budget, SpendLedger
from canarykit.layout import agent_job_resources, agent_jobs, metric_cells, model_slugs
from canarykit.pipeline import gather_runs, write_metrics
from canarykit.tasks import load_tasks, select_tasks

ROOT = Path(__file__).resolve().parents[1]
MODELS = [
    {"name": "oracle", "backend": "reference", "agent": "oracle"},
    {"name": "gpt/4.1", "backend": "litellm", "model": "openai/gpt-4.1", "provider": "openai"},
    {"name": "gpt:4.1", "backend": "ollama", "model": "qwen3:8b"},
]


def test_one_job_per_cell_of_a_model_and_one_per_reference_agent() -> None:
    jobs = agent_jobs(MODELS, {"standard": ["baseline", "declared"], "subtle": ["declared"]}, [0, 1])
    names = [(j.slug, j.name) for j in jobs]
    assert names[0] == ("oracle", "all") and len(jobs[0].cells) == 6
    assert ("gpt_4.1", "standard-baseline-0") in names and ("gpt_4.1", "subtle-declared-1") in names
    assert len(names) == len(set(names)) == 1 + 6 + 6
    assert jobs[0].pools() == {"standard": ["baseline", "declared"], "subtle": ["declared"]}
    slugs = model_slugs(MODELS)
    assert len(set(slugs.values())) == 3 and slugs["gpt/4.1"] == "gpt_4.1" and slugs["gpt:4.1"].startswith("gpt_4.1-")


def test_job_resources_follow_the_backend() -> None:
    agent = {"concurrency": 8, "provider_concurrency": {"openai": 4}, "workers": None}
    ref = agent_job_resources(MODELS[0], agent, 1440)
    assert ref["llm_calls"] == 0 and ref["gpu"] == 0 and ref["_threads"] == 1
    hosted = agent_job_resources(MODELS[1], agent, 120)
    assert hosted["llm_calls"] == hosted["llm_openai"] == 4 and hosted["gpu"] == 0 and hosted["_threads"] == 2
    local = agent_job_resources(MODELS[2], agent, 120)
    assert local["gpu"] == 1 and local["llm_ollama"] == 8 and local["_threads"] == 1


def test_limit_tasks_keeps_every_difficulty_in_suite_order() -> None:
    tasks = load_tasks(ROOT / "data/tasks.json")
    few = select_tasks(tasks, 5)
    assert len(few) == 5 and {t.difficulty for t in few} == {"easy", "medium", "hard"}
    assert [tasks.index(t) for t in few] == sorted(tasks.index(t) for t in few)
    assert select_tasks(tasks, None) == tasks


def _summary(path: Path, invocation: str, executed: int, total: int = 10, failed: int = 0) -> str:
    per = {"executed": executed, "reused": total - executed - failed, "failed": failed, "total": total,
           "backend_calls": executed * 3, "failures": {"RateLimitError (429)": failed} if failed else {}}
    path.write_text(json.dumps({"per_model": {"m": per}, "invocation": invocation, "elapsed_s": 1.0}))
    return str(path)


def test_run_summary_counts_jobs_that_did_not_run_now_as_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from canarykit.agents.runner import INDEX_SCHEMA

    monkeypatch.setenv(INVOCATION_ENV, "now")
    idx = tmp_path / "i.parquet"
    pl.DataFrame(schema=INDEX_SCHEMA).write_parquet(idx)
    summaries = [_summary(tmp_path / "a.json", "now", 4), _summary(tmp_path / "b.json", "earlier", 10)]
    doc = gather_runs([str(idx)], summaries, str(tmp_path / "store"), str(tmp_path / "index.parquet"), str(tmp_path / "s.json"))
    assert doc["executed"] == 4 and doc["reused"] == 16 and doc["total"] == 20 and doc["backend_calls"] == 12
    assert doc["jobs"] == 2 and doc["jobs_run"] == 1


def test_metrics_directory_is_rewritten_whole(tmp_path: Path) -> None:
    runs = pl.DataFrame({
        "model": ["a", "a"], "condition": ["declared", "declared"], "pool": ["standard", "subtle"],
        "seed": [0, 0], "task_id": ["t", "t"], "difficulty": ["easy", "easy"], "tool_calls": [2, 2],
        "canary_calls": [1, 0], "csr": [0.5, 0.0], "trapped": [True, False], "recovered": [False, False],
        "success": [True, True], "error": [False, False], "zero_call": [False, False], "truncated": [False, False],
    })
    runs.write_parquet(tmp_path / "runs.parquet")
    stale = tmp_path / "metrics/a/full.json"
    stale.parent.mkdir(parents=True)
    stale.write_text("{}")
    cfg = {"canaries": {"pool": "standard"}, "study": {"conditions": ["declared"]},
           "ablation": {"enabled": True, "condition": "declared", "pool": "subtle"}}
    written = write_metrics(str(tmp_path / "runs.parquet"), metric_cells(cfg), {"a": "a"}, str(tmp_path / "metrics"))
    assert sorted(Path(p).name for p in written) == ["ablation.json", "declared.json"] and not stale.exists()
    assert json.loads((tmp_path / "metrics/a/declared.json").read_text())["csr"] == 0.5


def test_a_budget_holds_over_the_jobs_of_one_invocation(tmp_path: Path) -> None:
    one = Budget(1.0, SpendLedger(tmp_path, "inv", "job-1", refresh_s=0))
    two = Budget(1.0, SpendLedger(tmp_path, "inv", "job-2", refresh_s=0))
    one.add(0.6)
    assert not two.exhausted
    two.add(0.5)
    assert two.exhausted and one.exhausted  # 1.1 spent over both jobs
    other = Budget(1.0, SpendLedger(tmp_path, "another-invocation", "job-1", refresh_s=0))
    assert not other.exhausted
