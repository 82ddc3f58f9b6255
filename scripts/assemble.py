"""Assemble the offered tool list of every (condition, task) for one pool and one seed."""

import json
from pathlib import Path

from canarykit.assembly import build_assemblies, write_assemblies
from canarykit.canaries import canary_table, load_pool
from canarykit.tasks import load_tasks, select_tasks, tasks_table
from canarykit.workflow import run_script


def main(smk):
    tasks = load_tasks(smk.input.tasks)
    tasks_table(tasks, smk.input.tasks)  # the TasksTable contract
    tasks = select_tasks(tasks, smk.params.limit_tasks)  # study.limit_tasks: a smoke study
    tools = json.loads(Path(smk.input.tools).read_text())
    pool = load_pool(smk.input.canaries)
    canary_table(pool, smk.input.canaries)
    assemblies = build_assemblies(tasks, tools, pool, smk.wildcards.pool, smk.params.conditions, [int(smk.wildcards.seed)])
    write_assemblies(assemblies, smk.output[0])


run_script(snakemake, main)  # noqa: F821
