"""The DVC metrics: one small JSON per (model, grid cell) with the headline numbers."""

from canarykit.study.pipeline import write_metrics
from canarykit.study.workflow import run_script


def main(smk):
    write_metrics(smk.input.runs, smk.params.cells, smk.params.slugs, smk.params.directory)


if __name__ == "__main__":
    run_script(globals().get("snakemake"), main, rule="metrics")
