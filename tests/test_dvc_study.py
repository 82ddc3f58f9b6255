"""End to end with DVC in a temporary git repository (issue: dvc repro recomputes only what
a change invalidates, pools are compared with dvc diff, results are shared via a remote).

A small study (three reference agents, one seed, 24 tasks) keeps it to a couple of minutes.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from fakes.workflow import copy_workflow, run, set_param

from canarykit.records import read_record

N_TASKS = 24


def sh(cwd: Path, *args: str) -> str:
    proc = run(cwd, *args)
    return proc.stdout + proc.stderr


def _summary(repo: Path) -> dict:
    return json.loads((repo / "results/logs/run-summary.json").read_text())


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = copy_workflow(tmp_path_factory.mktemp("study") / "repo")
    sh(repo, "git", "init", "-q")
    sh(repo, "dvc", "init", "-q")
    sh(repo, "git", "add", "-A")
    sh(repo, "git", "commit", "-qm", "study")
    return repo


def test_repro_then_suffix_change_reruns_exactly_the_affected_runs(repo: Path) -> None:
    sh(repo, "dvc", "repro")
    first = _summary(repo)
    # 3 agents x 24 tasks x (5 conditions + the subtle ablation)
    assert first["failed"] == 0 and first["executed"] + first["reused"] == first["total"] == 3 * N_TASKS * 6
    sh(repo, "git", "add", "-A")
    sh(repo, "git", "commit", "-qm", "first reproduction")

    set_param(repo, ["canaries", "suffixes", "standard", "capability_mirage"], "ADVANCED: state-of-the-art accuracy on the hardest cases.")
    out = sh(repo, "dvc", "repro")
    assert "Stage 'canaries@subtle' didn't change" in out and "Running stage 'canaries@standard'" in out
    summary = _summary(repo)
    assembly = pl.read_parquet(repo / "results/assembly/standard.parquet")
    # lists with a mirage, or with its control (whose text keeps the canary's suffix)
    mirage = (pl.col("canary_type") == "capability_mirage") | (pl.col("control_type") == "capability_mirage")
    with_mirage = assembly.filter(mirage).select("condition", "seed", "task_id").unique().height
    assert with_mirage > 0 and set(assembly.filter(mirage)["condition"]) == {"declared", "full", "control", "mirrored"}
    assert summary["executed"] == with_mirage * 3
    assert summary["reused"] == summary["total"] - summary["executed"] and summary["failed"] == 0
    # The backend call counter agrees: every call made belongs to a re-executed run.
    index = pl.read_parquet(repo / "results/runs/index.parquet")
    executed = index.filter(pl.col("executed"))
    assert executed.height == summary["executed"]
    assert (executed["pool"] == "standard").all()
    calls = sum(read_record(repo / "results/runs/store" / r[:2] / f"{r}.json").n_model_calls for r in executed["run_id"])
    assert summary["backend_calls"] == calls > 0

    before = (repo / "results/logs/run-summary.json").read_bytes()
    out = sh(repo, "dvc", "repro")
    assert "Running stage" not in out and "Data and pipelines are up to date" in out
    assert (repo / "results/logs/run-summary.json").read_bytes() == before
    sh(repo, "git", "add", "-A")
    sh(repo, "git", "commit", "-qm", "new capability-mirage suffix")


def test_switching_pools_is_one_key_and_diffs_as_data(repo: Path) -> None:
    set_param(repo, ["canaries", "pool"], "subtle")
    sh(repo, "dvc", "repro")
    sh(repo, "git", "add", "-A")
    sh(repo, "git", "commit", "-qm", "main grid on the subtle pool")

    params = sh(repo, "dvc", "params", "diff", "HEAD~1", "--json")
    assert json.loads(params)["params.yaml"]["canaries.pool"] == {"old": "standard", "new": "subtle"}
    diff = json.loads(sh(repo, "dvc", "diff", "HEAD~1", "--json"))
    modified = {d["path"] for d in diff.get("modified", [])}
    assert {"results/assembly/standard.parquet", "results/assembly/subtle.parquet", "results/runs.parquet"} <= modified
    metrics = json.loads(sh(repo, "dvc", "metrics", "diff", "HEAD~1", "--all", "--json"))
    keys = {k for changes in metrics.values() for k in changes}
    for model in ("oracle", "lexical", "planted:capability_mirage"):
        assert any(k.startswith(f"{model}.csr") or f".{model}.csr" in k or k == f"{model}.csr" for k in keys), keys
    files = set(metrics)
    assert any("baseline-subtle" in f for f in files) and any("baseline-standard" in f for f in files)


def test_push_clone_pull_then_nothing_to_do(repo: Path, tmp_path: Path) -> None:
    remote = tmp_path / "remote"
    sh(repo, "dvc", "remote", "add", "-d", "-f", "local", str(remote))
    sh(repo, "git", "add", ".dvc/config")
    sh(repo, "git", "commit", "-qm", "remote")
    sh(repo, "dvc", "push", "-q")
    clone = tmp_path / "clone"
    sh(tmp_path, "git", "clone", "-q", str(repo), str(clone))
    sh(clone, "dvc", "pull", "-q")
    out = sh(clone, "snakemake", "-n", "results/table1.csv")
    assert "Nothing to be done" in out
    assert (clone / "results/table1.csv").read_bytes() == (repo / "results/table1.csv").read_bytes()
