# Trap detection and judging read the run records; verdicts are cached by identity, so a
# rerun judges only runs whose inputs changed.
rule detect_and_judge:
    input:
        index="results/runs/index.parquet",
        tasks=config["study"]["tasks"],
        template=config["judge"]["template"],
        code=package_code("detect.py", "judging", "runs_table.py", "tasks.py", "records.py"),
    output:
        runs="results/runs.parquet",
        calls="results/judge/calls.parquet",
        primary="results/judge/verdicts/primary.parquet",
        cross="results/judge/verdicts/cross.parquet",
        counts="results/judge/verdicts/counts.json",
        validation="results/judge/validation.json",
        metrics=METRICS,
    params:
        judge=config["judge"],
        models=config["models"],
        store="results/runs/store",
    log:
        "results/logs/detect_and_judge.log",
    script:
        "../scripts/detect_and_judge.py"
