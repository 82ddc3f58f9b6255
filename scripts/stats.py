"""Every statistic, the three tables and the figure data from the per-run table alone."""

import sys
from pathlib import Path

from canarykit.stats import StatsConfig, compute_all, console_notes, load_runs, write_outputs
from canarykit.workflow import run_script


def main(smk):
    config = StatsConfig.from_mapping(
        smk.params.stats,
        primary_pool=smk.params.primary_pool,
        ablation_condition=smk.params.ablation_condition,
    )
    df = load_runs(smk.input.runs)
    # Tables, stats.json and the figure data all go beside stats.json.
    result = compute_all(df, config, source=smk.input.runs, validate=False)
    write_outputs(result, Path(smk.output.stats).parent)
    for line in console_notes(result):
        print(line, file=sys.stderr)


if __name__ == "__main__":
    run_script(globals().get("snakemake"), main, rule="stats")
