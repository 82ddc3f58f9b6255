"""The per-run table (runs.parquet): the index, the detector's metrics, both judges' verdicts."""

from pathlib import Path

from canarykit.study.pipeline import build_runs
from canarykit.study.workflow import run_script


def main(smk):
    build_runs(
        smk.input.index, smk.input.metrics, smk.input.calls, smk.input.primary, smk.input.get("cross", []),
        smk.output.runs, smk.output.calls, str(Path(smk.output.primary).parent), pools=smk.input.get("pools", []),
    )


if __name__ == "__main__":
    run_script(globals().get("snakemake"), main, rule="runs_table")
