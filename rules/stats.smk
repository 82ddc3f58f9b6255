rule stats:
    input:
        runs="results/runs.parquet",
        code=package_code("stats"),
    output:
        table1=report("results/table1.csv", category="Tables", caption="../report/table1.rst"),
        table2=report("results/table2.csv", category="Tables", caption="../report/table2.rst"),
        table3=report("results/table3.csv", category="Tables", caption="../report/table3.rst"),
        stability=report("results/table_stability.csv", category="Tables", caption="../report/table_stability.rst"),
        controls=report("results/table_controls.csv", category="Tables", caption="../report/table_controls.rst"),
        markdown=expand("results/{name}.md", name=["table1", "table2", "table3", "table_stability", "table_controls"]),
        stats=report("results/stats.json", category="Tests and intervals", caption="../report/stats.rst"),
        figure_data=expand("results/{name}.csv", name=FIGURE_DATA),
    params:
        stats=config["stats"],
        primary_pool=config["canaries"]["pool"],
        ablation_condition=config["ablation"]["condition"],
    log:
        "results/logs/stats.log",
    benchmark:
        "results/benchmarks/stats.tsv"
    script:
        "../scripts/stats.py"


rule figures:
    input:
        stats="results/stats.json",
        code=package_code("figures.py", "stats"),
    output:
        [
            report(
                f"results/figures/{fig}.{fmt}",
                category="Figures",
                caption=f"../report/{fig}.rst",
            )
            for fig in FIGURES
            for fmt in config["figures"]["formats"]
        ],
    params:
        formats=config["figures"]["formats"],
    log:
        "results/logs/figures.log",
    script:
        "../scripts/figures.py"


# The parameters of the study as run (params.yaml with every default filled in), for the report.
rule study_parameters:
    output:
        report("results/params.resolved.yaml", category="Configuration", caption="../report/params.rst"),
    params:
        config=config,
    log:
        "results/logs/study_parameters.log",
    script:
        "../scripts/study_parameters.py"
