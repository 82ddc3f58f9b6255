"""Generate one pool (canaries, their controls, the skip list) from results/tools.json,
checking granularity cases against the task suite."""

import sys

from canarykit.canaries import (
    build_pool,
    builtin_executor,
    canary_table,
    ingest_tools,
    make_rewriter,
    suite_from_tasks,
    summary_lines,
    write_pool,
)
from canarykit.jsonio import read_json_input
from canarykit.tasks import load_tasks
from canarykit.workflow import run_script


def main(smk):
    source = smk.input.tools
    tools = ingest_tools(read_json_input(source, "tool list"), source, strict=True)
    tasks = load_tasks(smk.input.tasks, tools=tools.tools)  # checked against the environment's tools
    suite = suite_from_tasks(tasks, smk.input.tasks, builtin_executor(tools.tools))
    pool = build_pool(
        tools,
        smk.wildcards.pool,
        smk.params.suffixes,
        fit=smk.params.fit,
        control_suffixes=smk.params.control_suffixes,
        controls=True,
        special_cases=smk.params.special_cases,
        # the llm rewriter goes through the model layer like the judge: the study's retry policy
        # (not a rule param: it changes no pool), its response cache and its budget
        rewriter=make_rewriter(smk.params.generator, smk.params.llm, retries=smk.config["agent"]["retries"],
                               job=f"generate_canaries-{smk.wildcards.pool}"),
        suite=suite,
        source=source,
        special_cases_source="params.yaml",
        special_cases_field="canaries.special_cases",
    )
    canary_table(pool.canaries, smk.output[0])  # the CanariesTable contract
    canary_table(pool.controls, smk.output[0])
    write_pool(pool, smk.output[0])
    for line in summary_lines(pool, smk.output[0]):
        print(line, file=sys.stderr)


run_script(snakemake, main)  # noqa: F821
