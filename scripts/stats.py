"""Every statistic, the three tables and the figure data from the per-run table alone."""

import sys
from pathlib import Path

import polars as pl

from canarykit.jsonio import read_json_input, write_json
from canarykit.stats import (
    StatsConfig,
    compute_all,
    console_notes,
    dose_response,
    dose_runs,
    load_runs,
    write_dose_outputs,
    write_outputs,
)
from canarykit.tasks import load_tasks
from canarykit.workflow import run_script


def main(smk):
    config = StatsConfig.from_mapping(
        smk.params.stats,
        primary_pool=smk.params.primary_pool,
        ablation_condition=smk.params.ablation_condition,
    )
    df = load_runs(smk.input.runs)
    dose = df.filter(pl.col("condition") == "dose")
    # Tables, stats.json and the figure data all go beside stats.json.
    result = compute_all(df.filter(pl.col("condition") != "dose"), config, source=smk.input.runs, validate=False)
    out_dir = Path(smk.output.stats).parent
    write_outputs(result, out_dir)
    if smk.params.dose:  # the dose curves (docs/dose.md), added to stats.json
        targets = {t.id: t.correct_tools[0] for t in load_tasks(smk.input.tasks) if t.correct_tools}
        runs = dose_runs(dose, pl.read_parquet(smk.input.calls), targets, smk.input.runs)
        result["dose_response"] = dose_response(runs, levels=smk.params.dose["levels"], alpha=config.alpha)
        write_json(smk.output.stats, {**read_json_input(smk.output.stats, "stats.json"), "dose_response": result["dose_response"]})
        write_dose_outputs(result["dose_response"], out_dir)
    for line in console_notes(result):
        print(line, file=sys.stderr)


if __name__ == "__main__":
    run_script(globals().get("snakemake"), main, rule="stats")
