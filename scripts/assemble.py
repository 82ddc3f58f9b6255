"""Assemble the offered tool list of every (condition, task) for one pool and one seed."""

from canarykit.assembly import build_assemblies, write_assemblies
from canarykit.canaries import canary_table, load_pool_document
from canarykit.environments import tools_of
from canarykit.jsonio import read_json_input
from canarykit.tasks import load_tasks, select_tasks, tasks_table
from canarykit.workflow import run_script


def main(smk):
    tools = tools_of(read_json_input(smk.input.tools, "tools file"), smk.input.tools)
    tasks = load_tasks(smk.input.tasks, tools=tools)  # checked against the environment's tools
    tasks_table(tasks, smk.input.tasks)  # the TasksTable contract
    tasks = select_tasks(tasks, smk.params.limit_tasks)  # study.limit_tasks: a smoke study
    doc = load_pool_document(smk.input.canaries)
    canary_table(doc["canaries"], smk.input.canaries)
    assemblies = build_assemblies(
        tasks, tools, doc["canaries"], smk.wildcards.pool, smk.params.conditions, [int(smk.wildcards.seed)],
        doc["controls"], source=smk.input.canaries,
    )
    write_assemblies(assemblies, smk.output[0])


if __name__ == "__main__":
    run_script(globals().get("snakemake"), main, rule="assemble")
