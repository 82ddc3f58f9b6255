"""Run every agent over the grid; reuse each run whose identity already has a finished record."""

from pathlib import Path

from canarykit.agents.runner import exit_with_parent, run_grid
from canarykit.workflow import run_script


def main(smk):
    exit_with_parent()  # a killed snakemake must not leave this job spending on model calls
    # Both directories are DVC outputs that persist between reproductions: they must exist
    # even when no model response is cached (reference agents).
    Path(smk.params.agent["cache_dir"]).mkdir(parents=True, exist_ok=True)
    Path(smk.params.store).mkdir(parents=True, exist_ok=True)
    pools = {
        pool: {
            "canaries": smk.input[f"canaries_{pool}"],
            "assembly": smk.input[f"assembly_{pool}"],
            "conditions": conditions,
        }
        for pool, conditions in smk.params.grid.items()
    }
    run_grid(
        smk.params.models,
        smk.input.tasks,
        pools,
        smk.params.seeds,
        smk.params.agent,
        smk.params.store,
        smk.output.index,
        smk.output.summary,
        retry_gate=smk.input.retry,
        environment=smk.params.environment,
        tools_path=smk.input.tools,
    )


run_script(snakemake, main)  # noqa: F821
