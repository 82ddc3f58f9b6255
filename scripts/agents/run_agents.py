"""Run one agent job (one model's cell, or a reference agent's whole grid); reuse every run
whose identity already has a finished record."""

from canarykit.agents import exit_with_parent
from canarykit.mcp.environments import tools_of
from canarykit.store.jsonio import read_json_input
from canarykit.study.layout import granted_slots
from canarykit.study.pipeline import run_job
from canarykit.study.workflow import run_script
from canarykit.tasks.tasks import load_tasks, select_tasks


def main(smk):
    exit_with_parent()  # a killed snakemake must not leave this job spending on model calls
    agent = dict(smk.params.agent)
    agent["workers"] = smk.threads  # the processes Snakemake gave this job
    tools = tools_of(read_json_input(smk.input.tools, "tools file"), smk.input.tools)
    # checked against the environment's tools (an MCP environment's, or the built-in ones)
    tasks = select_tasks(load_tasks(smk.input.tasks, tools=tools), smk.params.limit_tasks)
    w = smk.wildcards
    pools = {
        pool: {"canaries": smk.input[f"canaries_{pool}"], "assembly": list(smk.input[f"assembly_{pool}"]), "conditions": conds}
        for pool, conds in smk.params.pools.items()
    }
    run_job(
        smk.params.model, tasks, smk.input.tasks, pools, smk.params.seeds, agent, smk.params.store,
        smk.output.index, smk.output.summary,
        retry_gate=smk.input.retry,
        environment=smk.params.environment,
        tools_path=smk.input.tools,
        # the runs in flight Snakemake granted (lowered to --resources when that is smaller)
        concurrency=granted_slots(smk.resources, smk.params.slots),
        job=f"run_agents-{w.model}-{w.cell}",
    )


if __name__ == "__main__":
    run_script(globals().get("snakemake"), main, rule="run_agents")
