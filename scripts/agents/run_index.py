"""The study's run index and run summary, from every cell's."""

from canarykit.study.pipeline import gather_runs
from canarykit.study.workflow import run_script


def main(smk):
    gather_runs(smk.input.indexes, smk.input.summaries, smk.params.store, smk.output.index, smk.output.summary)


if __name__ == "__main__":
    run_script(globals().get("snakemake"), main, rule="run_index")
