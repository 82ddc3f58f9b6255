"""The workflow on a real single-node SLURM cluster (Debian's packages) through
`snakemake --profile profiles/slurm`: the same results as a local run (slow-marked; needs root
to install and start the daemons, as in CI)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import polars as pl
import pytest
from fakes.slurm import SlurmCluster, SlurmUnavailable
from fakes.workflow import copy_workflow, run, set_param

pytestmark = pytest.mark.slow
TARGETS = ("results/table1.csv", "results/judge/validation.json")


def small_study(dst: Path) -> Path:
    repo = copy_workflow(dst, per_difficulty=2, models=("oracle", "lexical"))
    set_param(repo, ["study", "conditions"], ["baseline", "declared"])
    set_param(repo, ["judge", "stability"], {"sample": 5, "repeats": 2, "temperature": 0.7, "seed": 0})
    return repo


def test_a_study_on_a_slurm_cluster_equals_a_local_run(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("the single-node SLURM cluster needs root (CI runs as root)")
    local = small_study(tmp_path / "local")
    run(local, "snakemake", "--cores", "2", *TARGETS)
    remote = small_study(tmp_path / "remote")
    try:
        cluster = SlurmCluster(tmp_path / "slurm")
        cluster.__enter__()
    except SlurmUnavailable as exc:
        pytest.fail(f"could not start the SLURM cluster: {exc}")
    try:
        t0 = time.monotonic()
        proc = run(remote, "snakemake", "--profile", "profiles/slurm", "--slurm-no-account", "--slurm-keep-successful-logs", *TARGETS)
        elapsed = time.monotonic() - t0
    finally:
        cluster.__exit__(None, None, None)
    print(f"SLURM study: {elapsed:.0f} s")
    # the jobs really went through sbatch: the plugin keeps a log per SLURM job
    logs = [p for p in (remote / ".snakemake/slurm_logs").rglob("*.log")]
    rules = {p.parts[p.parts.index("slurm_logs") + 1] for p in logs}
    assert {"rule_run_agents", "rule_detect", "rule_judge_primary", "rule_judge_cross", "rule_stats"} <= rules, (rules, proc.stderr[-2000:])
    # ... and they computed what a local run computes
    a = pl.read_parquet(local / "results/runs.parquet").sort("run_id")
    b = pl.read_parquet(remote / "results/runs.parquet").sort("run_id")
    assert a.height == 2 * 6 * 2 + 2 * 6  # 2 agents x 6 tasks x (2 conditions + the ablation's one)
    assert a.equals(b)
    assert (local / "results/table1.csv").read_bytes() == (remote / "results/table1.csv").read_bytes()
