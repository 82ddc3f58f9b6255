"""Classify every call, judge every run with both judges, write the per-run table and metrics."""

import sys
from pathlib import Path

import polars as pl

from canarykit.agents.runner import exit_with_parent
from canarykit.agents.store import mark_failed_runs_for_retry
from canarykit.jsonio import write_json
from canarykit.runs_table import detect_and_judge, metrics_json
from canarykit.workflow import run_script


def main(smk):
    exit_with_parent()  # a killed snakemake must not leave this job spending on model calls
    judge = smk.params.judge
    detect_and_judge(
        smk.input.index,
        smk.params.store,
        smk.input.tasks,
        judge,
        smk.params.models,
        judge["cache_dir"],
        smk.output.runs,
        Path(smk.output.primary).parent,
        smk.output.validation,
        judge["human_sheet"],
        calls_out=smk.output.calls,
        retries=smk.params.retries,
    )
    # One small metrics file per (condition, pool) for `dvc metrics diff`.
    metrics = metrics_json(pl.read_parquet(smk.output.runs))
    for path in smk.output.metrics:
        condition, pool = Path(path).stem.split("-")
        write_json(path, metrics.get(condition, {}).get(pool, {}))
    # Failed runs in the index: mark the run rule's retry gate after the run stage is done, so
    # that the next plain `snakemake` or `dvc repro` re-executes exactly those runs.
    failed = mark_failed_runs_for_retry(smk.input.index, smk.params.store)
    if failed:
        print(f"canarykit: {failed} failed runs are excluded from every metric; the next plain `snakemake` "
              "(or `dvc repro`) retries them", file=sys.stderr)


run_script(snakemake, main)  # noqa: F821
