"""The study's run index and run summary, from every cell's."""

from canarykit.pipeline import gather_runs
from canarykit.workflow import run_script


def main(smk):
    gather_runs(smk.input.indexes, smk.input.summaries, smk.params.store, smk.output.index, smk.output.summary)


run_script(snakemake, main)  # noqa: F821
