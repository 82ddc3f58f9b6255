"""Benchmark the offline stages against their floor: runs per second and peak memory.

    .venv/bin/python benchmarks/bench_stages.py [--models N] [--tasks N] [--keep]

In a temporary copy of this workflow, with the default study's reference agents (the first
``--models`` of params.yaml; all by default) over its conditions and seeds (``--tasks``:
``study.limit_tasks``, null = the whole suite), it runs Snakemake one job at a time
(``--cores 1``) up to the per-run table, then reads each job's Snakemake benchmark file
(wall seconds and peak RSS of the job's process). Per stage (run_agents, detect,
judge_primary, judge_cross) it prints:

- runs per second: the stage's runs over the summed seconds of its jobs;
- the floor: the same stage reading and writing its records and doing nothing else, in a
  process of its own per job (Python start-up, the same imports a job pays for reading
  records, and writing what the stage writes per run): for run_agents, reading the run's
  record and writing it to a fresh store; for detect and the judges, reading every record of
  the model's index and writing one parquet row per run;
- the ratio floor time / stage time (target: at least 0.5, i.e. within 2x of the floor);
- the peak RSS of the stage's largest job, and per 1,000 runs of that job.

Nothing is asserted (tests never assert wall-clock times). Run it at two sizes to see how
RSS grows with runs.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_pipeline import COPY, ROOT, run  # noqa: E402

STAGES = ("run_agents", "detect", "judge_primary", "judge_cross")

#: The floor of one job: read every record of the model's runs, write what the stage writes.
FLOOR = r"""
import sys, time, resource
from pathlib import Path
import polars as pl
from canarykit.store.records import read_record, record_path, write_record
stage, index, store, out = sys.argv[1:5]
ids = pl.read_parquet(index)["run_id"].to_list()
rows = []
for rid in ids:
    rec = read_record(record_path(store, rid))
    if stage == "run_agents":
        write_record(record_path(out, rid), rec)  # the stage writes each run's record
    else:
        rows.append({"run_id": rid, "status": rec.status})
if stage != "run_agents":
    Path(out).mkdir(parents=True, exist_ok=True)
    pl.DataFrame(rows, schema={"run_id": pl.String, "status": pl.String}).write_parquet(Path(out) / "out.parquet")
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def bench_rows(repo: Path, stage: str) -> list[dict[str, float]]:
    """The Snakemake benchmark rows of every job of ``stage`` (``s``, ``max_rss`` in MB)."""
    out = []
    for p in sorted((repo / "results/benchmarks" / stage).rglob("*.tsv")):
        with p.open() as fh:
            for row in csv.DictReader(fh, delimiter="\t"):
                rss = row.get("max_rss", "NA")
                out.append({"s": float(row["s"]), "max_rss": float(rss) if rss not in ("NA", "-") else float("nan"),
                            "file": str(p)})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=None, help="the first N models of params.yaml (default: all)")
    ap.add_argument("--tasks", type=int, default=None, help="study.limit_tasks (default: the whole suite)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary repository")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="canarykit-stages-"))
    repo = tmp / "repo"
    repo.mkdir()
    for item in COPY:
        src = ROOT / item
        if src.is_dir():
            shutil.copytree(src, repo / item, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, repo / item)
    cfg = yaml.safe_load((repo / "params.yaml").read_text())
    if args.models:
        cfg["models"] = cfg["models"][: args.models]
    cfg["study"]["limit_tasks"] = args.tasks
    (repo / "params.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))

    run(repo, "snakemake", "--cores", "2", "assemblies", "--quiet", "rules")
    t_agents, _ = run(repo, "snakemake", "--cores", "1", "run_index", "--quiet", "rules")
    t_judging, _ = run(repo, "snakemake", "--cores", "1", "runs_table", "--quiet", "rules")

    import polars as pl

    store = repo / "results/runs/store"
    index = pl.read_parquet(repo / "results/runs/index.parquet")
    per_model = {m: int(n) for m, n in index.group_by("model").len().iter_rows()}
    n_runs = index.height
    job_indexes = sorted((repo / "results/runs/jobs").rglob("*.parquet"))

    def floor(stage: str) -> tuple[float, float]:
        """Seconds and peak RSS (MB) of the floor over every job index (one process each)."""
        total, peak = 0.0, 0.0
        for i, ix in enumerate(job_indexes):
            dest = tmp / "floor" / stage / str(i)
            t0 = time.perf_counter()
            proc = subprocess.run([sys.executable, "-c", FLOOR, stage, str(ix), str(store), str(dest)],
                                  capture_output=True, text=True, check=True)
            total += time.perf_counter() - t0
            peak = max(peak, int(proc.stdout.strip().splitlines()[-1]) / 1024)
            shutil.rmtree(dest, ignore_errors=True)
        return total, peak

    print(f"study: {len(per_model)} reference agents, {n_runs} runs, {len(job_indexes)} agent job indexes; "
          f"load {os.getloadavg()[0]:.2f}")
    print(f"snakemake --cores 1: agents {t_agents:.1f} s, detection and judging to the runs table {t_judging:.1f} s")
    print(f"{'stage':<15}{'jobs':>5}{'runs/s':>9}{'floor runs/s':>14}{'floor/stage':>13}"
          f"{'peak RSS MB':>13}{'MB/1k runs':>12}")
    for stage in STAGES:
        rows = bench_rows(repo, stage)
        if not rows:
            print(f"{stage:<15} no benchmark files")
            continue
        secs = sum(r["s"] for r in rows)
        f_secs, f_rss = floor(stage)
        peak = max(r["max_rss"] for r in rows)
        biggest = max(per_model.values())
        print(f"{stage:<15}{len(rows):>5}{n_runs / secs:>9.0f}{n_runs / f_secs:>14.0f}{f_secs / secs:>13.2f}"
              f"{peak:>13.0f}{peak / biggest * 1000:>12.1f}   (floor peak RSS {f_rss:.0f} MB)")
    if args.keep:
        print(f"kept: {repo}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
