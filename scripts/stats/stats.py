"""Every statistic, the three tables and the figure data from the per-run table alone."""

import sys
from pathlib import Path

import polars as pl

from canarykit.stats import (
    StatsConfig,
    compute_all,
    console_notes,
    dose_response,
    dose_runs,
    first_tools,
    load_runs,
    write_outputs,
)
from canarykit.study.workflow import run_script


def main(smk):
    config = StatsConfig.from_mapping(
        smk.params.stats,
        primary_pool=smk.params.primary_pool,
        ablation_condition=smk.params.ablation_condition,
    )
    df = load_runs(smk.input.runs)
    dose = df.filter(pl.col("condition") == "dose")
    # Tables, stats.json and the figure data all go beside stats.json.
    # leaves the dose runs out; the pools give meta.wordings its draws and seed
    result = compute_all(df, config, source=smk.input.runs, validate=False, pools=smk.input.get("pools", []))
    if smk.params.dose:  # the dose curves (docs/dose.md): stats.json dose_response, table_dose, figure 11
        runs = dose_runs(dose, pl.read_parquet(smk.input.calls), first_tools(smk.input.tasks), smk.input.runs)
        result["dose_response"] = dose_response(runs, levels=smk.params.dose["levels"], alpha=config.alpha)
    write_outputs(result, Path(smk.output.stats).parent)
    for line in console_notes(result):
        print(line, file=sys.stderr)


if __name__ == "__main__":
    run_script(globals().get("snakemake"), main, rule="stats")
