"""Generate one pool (canaries and their variants, their twins, the skip list) from
results/tools.json, checking granularity cases against the task suite."""

import sys

from canarykit.canaries import canary_table, ingest_tools, study_pool, summary_lines, write_pool
from canarykit.jsonio import read_json_input
from canarykit.tasks import load_tasks
from canarykit.workflow import run_script


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
    write_pool(pool, smk.output[0])
    for line in summary_lines(pool, smk.output[0]):
        print(line, file=sys.stderr)


if __name__ == "__main__":
    run_script(globals().get("snakemake"), main, rule="generate_canaries")
