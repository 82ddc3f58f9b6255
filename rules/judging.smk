# Trap detection and judging read the run records; verdicts are cached by identity, so a
# rerun judges only runs whose inputs changed.
rule detect_and_judge:
    input:
        index="results/runs/index.parquet",
        tasks=config["study"]["tasks"],
        template=config["judge"]["template"],
    output:
        runs="results/runs.parquet",
        verdicts="results/judge/verdicts.parquet",
        validation="results/judge/validation.json",
        metrics=METRICS,
    params:
        judge=config["judge"],
        models=config["models"],
        store="results/runs/store",
        metrics_dir="results/metrics",
    log:
        "results/logs/detect_and_judge.log",
    script:
        "../scripts/detect_and_judge.py"
