"""Assemble the offered tool list of every (condition, task) for one pool and one seed."""

import sys

from canarykit.assembly.assembly import build_assemblies, position_lines, write_assemblies
from canarykit.assembly.dose import DOSE_CONDITION, dose_assemblies, draw_lines, skipped_lines
from canarykit.canaries import canary_table, load_pool_document
from canarykit.mcp.environments import tools_of
from canarykit.store.jsonio import read_json_input
from canarykit.study.workflow import run_script
from canarykit.tasks.tasks import load_tasks, select_tasks, tasks_table


def main(smk):
    tools = tools_of(read_json_input(smk.input.tools, "tools file"), smk.input.tools)
    tasks = load_tasks(smk.input.tasks, tools=tools)  # checked against the environment's tools
    tasks_table(tasks, smk.input.tasks)  # the TasksTable contract
    tasks = select_tasks(tasks, smk.params.limit_tasks)  # study.limit_tasks: a smoke study
    doc = load_pool_document(smk.input.canaries)
    canary_table(doc["canaries"], smk.input.canaries)
    seeds = [int(smk.wildcards.seed)]
    conditions = [c for c in smk.params.conditions if c != DOSE_CONDITION]
    assemblies = build_assemblies(
        tasks, tools, doc["canaries"], smk.wildcards.pool, conditions, seeds, doc["controls"], source=smk.input.canaries,
    ) if conditions else []
    if DOSE_CONDITION in smk.params.conditions:
        draw_seed = smk.params.dose.get("seed", 0)
        dose, skipped = dose_assemblies(tasks, tools, doc.get("dose", []), smk.wildcards.pool, seeds,
                                        levels=smk.params.dose["levels"], kinds=smk.params.dose["kinds"], draw_seed=draw_seed)
        assemblies += dose
        for line in [*draw_lines(dose, smk.wildcards.pool, draw_seed), *skipped_lines(skipped, smk.wildcards.pool),
                     *position_lines(dose, smk.wildcards.pool)]:
            print(line, file=sys.stderr)
    write_assemblies(assemblies, smk.output[0])


if __name__ == "__main__":
    run_script(globals().get("snakemake"), main, rule="assemble")
