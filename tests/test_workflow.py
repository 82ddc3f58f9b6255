"""The Snakemake workflow on bad input: a clear error naming the file and the field, a
non-zero exit, and nothing already computed lost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes.workflow import copy_workflow, run, set_param


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    return copy_workflow(tmp_path / "repo", per_difficulty=2, models=("oracle",))


def test_whole_dag_is_declared(repo: Path) -> None:
    out = run(repo, "snakemake", "-n", "results/table1.csv", "--quiet", "rules").stdout
    for rule in ("export_tools", "generate_canaries", "assemble", "run_agents", "detect_and_judge", "stats"):
        assert rule in out


def test_invalid_params_stop_before_anything_runs(repo: Path) -> None:
    set_param(repo, ["agent", "max_turns"], 0)
    proc = run(repo, "snakemake", "--cores", "1", "results/table1.csv", check=False)
    assert proc.returncode != 0
    assert "params.yaml: agent.max_turns" in proc.stdout + proc.stderr
    assert not (repo / "results").exists()


def test_bad_task_file_names_file_and_field_and_keeps_earlier_outputs(repo: Path) -> None:
    run(repo, "snakemake", "--cores", "1", "results/canaries/standard.json")
    canaries = (repo / "results/canaries/standard.json").read_bytes()
    tasks_path = repo / "data/tasks.json"
    doc = json.loads(tasks_path.read_text())
    doc["tasks"][1]["plan"][0]["tool"] = "get_wether"
    tasks_path.write_text(json.dumps(doc))
    proc = run(repo, "snakemake", "--cores", "1", "results/assembly/standard.parquet", check=False)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "data/tasks.json" in text and "tasks[1].plan[0].tool" in text and "get_wether" in text
    assert (repo / "results/canaries/standard.json").read_bytes() == canaries
    assert not (repo / "results/assembly/standard.parquet").exists()


def test_full_small_study_runs_and_oracle_is_perfect(repo: Path) -> None:
    run(repo, "snakemake", "--cores", "2", "--scheduler", "greedy")
    table = (repo / "results/table1.csv").read_text().splitlines()
    assert table[0].startswith("model,tier,csr,csr_lo,csr_hi,tsr,recovery,recovery_n")
    oracle = dict(zip(table[0].split(","), table[1].split(","), strict=True))
    assert oracle["model"] == "oracle" and float(oracle["csr"]) == 0.0 and float(oracle["tsr"]) == 1.0
    for fig in ("fig2", "fig4", "fig5", "fig6", "fig7", "fig8", "fig9"):
        assert (repo / f"results/figures/{fig}.svg").stat().st_size > 1000
    # A second invocation has nothing to do.
    again = run(repo, "snakemake", "--cores", "2", "-n").stdout
    assert "Nothing to be done" in again
