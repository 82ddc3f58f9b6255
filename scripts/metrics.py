"""The DVC metrics: one small JSON per (model, grid cell) with the headline numbers."""

from canarykit.pipeline import write_metrics
from canarykit.workflow import run_script


def main(smk):
    write_metrics(smk.input.runs, smk.params.cells, smk.params.slugs, smk.params.directory)


run_script(snakemake, main)  # noqa: F821
