"""Benchmark the whole pipeline over the paper's full grid with zero-latency reference agents.

    .venv/bin/python benchmarks/bench_pipeline.py [--keep] [--models N] [--tasks N]

In a temporary git repository holding this workflow, with the default study's reference
agents but planted:granularity_trap and planted:surface (10 agents) over the paper's 3
conditions x 3 seeds x 120 tasks plus the subtle ablation (14,400 runs; ``--models`` and
``--tasks`` make a smaller grid to try a change on a loaded machine), it measures, in one run:

1. ``snakemake --cores 2 --scheduler greedy``: canary generation to figures, from nothing
   (target: under 120 s on a 2-core machine);
2. ``dvc repro`` on that tree (DVC hashes and caches every output once);
3. ``dvc repro`` with nothing changed (must run no stage; target: a few seconds over the
   full-size results tree of ~16,000 run records);
4. ``dvc repro`` after changing the capability-mirage suffix of the standard pool (only
   the runs whose tool list holds such a canary re-execute), and its ratio to the cold run
   (target: at most 0.35: detection and judging reuse every unchanged run's rows).

Prints each time and its ratio to its target. Nothing is asserted (tests never assert
wall-clock times).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
COPY = ["Snakefile", "rules", "scripts", "report", "src", "profiles", "data", "dvc.yaml", ".dvcignore", ".gitignore", "params.yaml"]


def run(cwd: Path, *args: str) -> tuple[float, str]:
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", DVC_NO_ANALYTICS="1",
               GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@example.org", GIT_COMMITTER_NAME="b",
               GIT_COMMITTER_EMAIL="b@example.org")
    t0 = time.perf_counter()
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"{' '.join(args)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return elapsed, proc.stdout + proc.stderr


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", action="store_true", help="keep the temporary repository")
    ap.add_argument("--models", type=int, default=None, help="only the first N agents of the grid (a quicker, smaller run)")
    ap.add_argument("--tasks", type=int, default=None, help="study.limit_tasks (a quicker, smaller run; default: all)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="canarykit-bench-"))
    repo = tmp / "repo"
    repo.mkdir()
    for item in COPY:
        src = ROOT / item
        if src.is_dir():
            shutil.copytree(src, repo / item, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, repo / item)
    cfg = yaml.safe_load((repo / "params.yaml").read_text())
    # the paper-sized grid: 8 agents, its 3 conditions (the default study also runs control and
    # mirrored, and planted:surface)
    cfg["models"] = [m for m in cfg["models"] if m["name"] not in ("planted:granularity_trap", "planted:surface")]
    cfg["study"]["conditions"] = ["baseline", "declared", "full"]
    if args.models:
        cfg["models"] = cfg["models"][: args.models]
    cfg["study"]["limit_tasks"] = args.tasks
    (repo / "params.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    n_tasks = args.tasks or 120
    n_runs = len(cfg["models"]) * (3 * 3 * n_tasks + 3 * n_tasks)
    run(repo, "git", "init", "-q")
    run(repo, "dvc", "init", "-q")
    run(repo, "git", "add", "-A")
    run(repo, "git", "commit", "-qm", "bench")

    t_smk, _ = run(repo, "snakemake", "--cores", "2", "--scheduler", "greedy", "--quiet", "rules")
    summary = json.loads((repo / "results/logs/run-summary.json").read_text())
    t_first, _ = run(repo, "dvc", "repro")
    t_noop, out = run(repo, "dvc", "repro")
    ran_stage = "Running stage" in out
    cfg["canaries"]["suffixes"]["standard"]["capability_mirage"] = "ADVANCED: state-of-the-art accuracy on the hardest cases."
    (repo / "params.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    t_suffix, _ = run(repo, "dvc", "repro")
    after = json.loads((repo / "results/logs/run-summary.json").read_text())
    n_records = sum(1 for _ in (repo / "results/runs/store").rglob("*.json"))

    print(f"grid: {len(cfg['models'])} reference agents, {n_runs} runs ({summary['total']} in the run summary), {n_records} run records")
    print(f"snakemake, canaries to figures (cold)    {t_smk:7.1f} s   ratio to the 120 s target {t_smk / 120:.2f}")
    print(f"dvc repro, first (hash + cache outputs)   {t_first:7.1f} s")
    print(f"dvc repro, nothing changed                {t_noop:7.1f} s   ratio to a 10 s budget {t_noop / 10:.2f}   stage run: {ran_stage}")
    print(f"dvc repro, capability-mirage suffix edit  {t_suffix:7.1f} s   executed {after['executed']} of {after['total']} runs, reused {after['reused']}")
    print(f"suffix-edit repro / cold                  {t_suffix / t_smk:7.2f}     (target: at most 0.35); load {os.getloadavg()[0]:.2f}")
    if args.keep:
        print(f"kept: {repo}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
