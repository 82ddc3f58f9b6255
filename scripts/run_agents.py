"""Run every agent over the grid; reuse each run whose identity already has a finished record."""

from canarykit.agents.runner import run_grid
from canarykit.workflow import run_script


def main(smk):
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
    )


run_script(snakemake, main)  # noqa: F821
