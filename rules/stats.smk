def reported(path, category, name):
    """``path`` wrapped for the Snakemake report, with report/<name>.rst as caption when it exists."""
    caption = Path(workflow.basedir) / "report" / f"{name}.rst"
    return report(path, category=category, caption=f"../report/{name}.rst") if caption.exists() else report(path, category=category)


# Every statistic, the tables (rules/stages.yaml `outputs.tables`) and the figure data.
rule stats:
    input:
        unpack(dose_stats_inputs),
        runs=rules.runs_table.output.runs,
        # stats.json's meta reports each type's wording draw and its seed, as the pools record them
        pools=expand(rules.generate_canaries.output[0], pool=POOLS),
        code=code("stats"),
    output:
        **{t: reported(out(f"{t}.csv"), "Tables", t) for t in TABLES},
        # the dose curves' table, only in a study that runs the dose condition (docs/dose.md)
        **({"table_dose": reported(out("table_dose.csv"), "Tables", "table_dose"), "table_dose_md": out("table_dose.md")}
           if DOSE else {}),
        dose_metrics=out("dose_metrics.json"),
        markdown=[out(f"{t}.md") for t in TABLES],
        stats=report(out("stats.json"), category="Tests and intervals", caption="../report/stats.rst"),
        figure_data=[out(f"{name}.csv") for name in FIGURE_DATA],
    params:
        stats=config["stats"],
        primary_pool=config["canaries"]["pool"],
        ablation_condition=config["ablation"]["condition"],
        dose=config["study"]["dose"] if DOSE else None,
    resources:
        mem_mb=3000,
        runtime=30,
    log:
        out("logs/stats.log"),
    benchmark:
        out("benchmarks/stats.tsv")
    script:
        "../scripts/stats/stats.py"


# The DVC metrics: <out>/metrics/<model>/<cell>.json (cell: a main-grid condition, or
# `ablation`). The script rewrites the directory whole: models and cells no longer in the
# study leave nothing behind.
rule metrics:
    input:
        runs=rules.runs_table.output.runs,
        code=code("metrics"),
    output:
        METRICS,
    params:
        cells=metric_cells(config),
        slugs=SLUGS,
        directory=out("metrics"),
    log:
        out("logs/metrics.log"),
    script:
        "../scripts/stats/metrics.py"
