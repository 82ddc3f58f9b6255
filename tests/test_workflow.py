"""The Snakemake workflow on bad input: a clear error naming the file and the field, a
non-zero exit, and nothing already computed lost."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fakes.workflow import copy_workflow, run, set_param


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    return copy_workflow(tmp_path / "repo", per_difficulty=2, models=("oracle",))


@pytest.mark.slow  # whole workflow invocations: tens of seconds on a loaded machine
def test_whole_dag_is_declared_one_rule_per_stage(repo: Path) -> None:
    set_param(repo, ["models"], [
        {"name": "oracle", "backend": "reference", "agent": "oracle", "group": "reference"},
        {"name": "gw/one", "backend": "litellm", "model": "openai/x", "api_base": "http://127.0.0.1:9/v1", "group": "hosted"},
    ])
    out = run(repo, "snakemake", "-n", "results/table1.csv", "--quiet", "rules").stdout
    counts = {line.split()[0]: int(line.split()[1]) for line in out.splitlines() if len(line.split()) == 2 and line.split()[1].isdigit()}
    # one agent job per (model, pool, condition, seed) cell of a model: 1 seed x (5 conditions
    # (baseline, declared, full, control, mirrored) + the ablation); a reference agent's whole grid is one job
    assert counts["run_agents"] == 6 + 1
    # detection, primary judging and cross-judging are separate jobs, one per model
    assert counts["detect"] == counts["judge_primary"] == counts["judge_cross"] == 2
    for rule in ("export_tools", "generate_canaries", "assemble", "run_index", "runs_table", "stats"):
        assert counts[rule] >= 1
    assert "detect_and_judge" not in out
    model_jobs = run(repo, "snakemake", "-n", "results/runs/index.parquet").stdout
    assert "results/runs/jobs/gw_one/standard-declared-0.parquet" in model_jobs
    assert "results/runs/jobs/gw_one/subtle-declared-0.parquet" in model_jobs
    assert "results/runs/jobs/oracle/all.parquet" in model_jobs


@pytest.mark.slow  # whole workflow invocations: tens of seconds on a loaded machine
def test_a_study_lives_under_its_output_dir(repo: Path) -> None:
    (repo / "alt.yaml").write_text("study: {output_dir: results/alt, limit_tasks: 2}\n")
    # the target before --configfile (which takes several files and would swallow it)
    out = run(repo, "snakemake", "-n", "results/alt/table1.csv", "--configfile", "alt.yaml").stdout
    assert "results/alt/table1.csv" in out and "results/alt/runs/jobs/oracle/all.parquet" in out
    assert "results/alt/assembly/standard/seed-0.parquet" in out
    assert "results/table1.csv" not in out.replace("results/alt/", "")


def test_invalid_params_stop_before_anything_runs(repo: Path) -> None:
    set_param(repo, ["agent", "max_turns"], 0)
    proc = run(repo, "snakemake", "--cores", "1", "results/table1.csv", check=False)
    assert proc.returncode != 0
    assert re.search(r"params\.yaml:\d+: agent\.max_turns", proc.stdout + proc.stderr)
    made = sorted(p.name for p in (repo / "results").iterdir()) if (repo / "results").exists() else []
    assert made in ([], ["logs"]), "nothing computed: at most this invocation's own log"


@pytest.mark.slow  # whole workflow invocations: tens of seconds on a loaded machine
def test_bad_task_file_names_file_and_field_and_keeps_earlier_outputs(repo: Path) -> None:
    run(repo, "snakemake", "--cores", "1", "results/canaries/standard.json")
    canaries = (repo / "results/canaries/standard.json").read_bytes()
    tasks_path = repo / "data/tasks.json"
    doc = json.loads(tasks_path.read_text())
    doc["tasks"][1]["plan"][0]["tool"] = "get_wether"
    tasks_path.write_text(json.dumps(doc))
    proc = run(repo, "snakemake", "--cores", "1", "results/assembly/standard/seed-0.parquet", check=False)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "data/tasks.json" in text and "tasks[1].plan[0].tool" in text and "get_wether" in text
    assert (repo / "results/canaries/standard.json").read_bytes() == canaries
    assert not (repo / "results/assembly/standard/seed-0.parquet").exists()
