"""Generate one pool (canaries and their variants, their twins, the skip list) from
results/tools.json, checking granularity cases against the task suite."""

import sys

from canarykit.assembly.dose import dose_records
from canarykit.canaries import (
    builtin_executor,
    canary_table,
    ingest_tools,
    study_pool,
    suite_from_tasks,
    summary_lines,
    write_pool,
)
from canarykit.store.jsonio import read_json_input, write_json
from canarykit.study.workflow import run_script
from canarykit.tasks.tasks import load_tasks


def main(smk):
    source = smk.input.tools
    tools = ingest_tools(read_json_input(source, "tool list"), source, strict=True)
    tasks = load_tasks(smk.input.tasks, tools=tools.tools)  # checked against the environment's tools
    pool = study_pool(
        tools,
        tasks,
        smk.wildcards.pool,
        fit=smk.params.fit,
        suffixes=smk.params.suffixes,
        control_suffixes=smk.params.control_suffixes,
        special_cases=smk.params.special_cases,
        variants=smk.params.variants,
        wording_seed=smk.params.wording_seed,
        generator=smk.params.generator,
        llm=smk.params.llm,
        # the llm rewriter goes through the model layer like the judge: the study's retry policy
        # (not a rule param: it changes no pool), its response cache and its budget
        retries=smk.config["agent"]["retries"],
        job=f"generate_canaries-{smk.wildcards.pool}",
        source=source,
        tasks_source=smk.input.tasks,
    )
    canary_table(pool.canaries, smk.output[0])  # the CanariesTable contract
    canary_table(pool.controls, smk.output[0])
    if smk.params.dose:  # the dose condition's look-alikes, beside the pool's own canaries
        dose = dose_records(
            tools.tools, [t.correct_tools[0] for t in tasks if t.correct_tools], smk.wildcards.pool,
            k=max(smk.params.dose["levels"]), kinds=smk.params.dose["kinds"], fit=smk.params.fit,
            suffixes=smk.params.suffixes, special_cases=smk.params.special_cases,
            suite=suite_from_tasks(tasks, smk.input.tasks, builtin_executor(tools.tools)),
        )
        write_json(smk.output[0], {**pool.document(), "dose": dose})
        print(f"generate: pool {smk.wildcards.pool}: {len(dose)} dose look-alikes", file=sys.stderr)
    else:
        write_pool(pool, smk.output[0])
    for line in summary_lines(pool, smk.output[0]):
        print(line, file=sys.stderr)


if __name__ == "__main__":
    run_script(globals().get("snakemake"), main, rule="generate_canaries")
