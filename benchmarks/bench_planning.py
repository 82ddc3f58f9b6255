"""How long Snakemake takes to plan the paper's grid (no job is run).

    .venv/bin/python benchmarks/bench_planning.py

The paper's study (src/canarykit/resources/profiles/paper.yaml: 8 models, 2 LLM judges) over
the configured conditions (params.yaml: 5) x 3 seeds x 120 tasks plus the subtlety ablation:
144 agent jobs (one per model, pool, condition and seed), 8 x 3 detection and judging jobs,
and the rest (186 jobs). Measures `snakemake -n` (a dry run: parse, validate, build the DAG,
schedule every job) with the default scheduler and with --scheduler greedy: wall clock, and
the CPU seconds of the dry run (user + system; on a machine shared with other work the wall
clock mostly measures the wait for a core). Prints the job counts. Target: seconds. Nothing is
asserted (tests never assert wall-clock times).
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
COPY = ["Snakefile", "rules", "scripts", "report", "src", "profiles", "data", "params.yaml"]
PROFILE = "src/canarykit/resources/profiles/paper.yaml"


def _child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def plan(repo: Path, *extra: str) -> tuple[float, float, str]:
    """Wall-clock and CPU seconds of one dry run, and its output."""
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    t0, c0 = time.perf_counter(), _child_cpu()
    proc = subprocess.run(["snakemake", "-n", "--quiet", "rules", *extra, "--configfile", PROFILE],
                          cwd=repo, env=env, capture_output=True, text=True)
    elapsed, cpu = time.perf_counter() - t0, _child_cpu() - c0
    if proc.returncode != 0:
        sys.exit(f"snakemake -n failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return elapsed, cpu, proc.stdout


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="canarykit-plan-"))
    repo = tmp / "repo"
    repo.mkdir()
    for item in COPY:
        src = ROOT / item
        if src.is_dir():
            shutil.copytree(src, repo / item, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, repo / item)
    try:
        t_default, c_default, out = plan(repo)
        t_greedy, c_greedy, _ = plan(repo, "--scheduler", "greedy")
        counts = dict(re.findall(r"^(\w+)\s+(\d+)$", out, re.M))
        print("paper grid: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
        print(f"snakemake -n, default scheduler   {t_default:6.1f} s wall clock, {c_default:5.1f} s CPU")
        print(f"snakemake -n, --scheduler greedy  {t_greedy:6.1f} s wall clock, {c_greedy:5.1f} s CPU")
        print(f"load average during the runs: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
