"""Judge one model's runs with one judge (the rule says which: primary or cross)."""

from canarykit.agents.runner import exit_with_parent
from canarykit.study.pipeline import judge_model
from canarykit.study.workflow import run_script


def main(smk):
    exit_with_parent()  # a killed snakemake must not leave this job spending on model calls
    judge = dict(smk.params.judge)
    slots = smk.resources.get(smk.params.resource) if smk.params.resource else None
    if slots:
        judge["concurrency"] = slots  # what Snakemake granted of the judge provider's calls
    judge_model(
        smk.params.role, smk.input.indexes, smk.params.store, smk.input.tasks, judge, smk.params.models,
        smk.params.retries, smk.output.verdicts, smk.output.counts,
        job=f"judge_{smk.params.role}-{smk.wildcards.model}", memo_dir=smk.params.memo,
    )


if __name__ == "__main__":
    run_script(globals().get("snakemake"), main, rule=("judge_primary", "judge_cross"))
