"""Classify every call, judge every run with both judges, write the per-run table and metrics."""

from pathlib import Path

import polars as pl

from canarykit.jsonio import write_json
from canarykit.runs_table import detect_and_judge, metrics_json
from canarykit.workflow import run_script


def main(smk):
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
    )
    # One small metrics file per (condition, pool) for `dvc metrics diff`.
    metrics = metrics_json(pl.read_parquet(smk.output.runs))
    for path in smk.output.metrics:
        condition, pool = Path(path).stem.split("-")
        write_json(path, metrics.get(condition, {}).get(pool, {}))


run_script(snakemake, main)  # noqa: F821
