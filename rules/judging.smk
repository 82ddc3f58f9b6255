# Trap detection and judging read the run records; verdicts are cached by identity, so a
# rerun judges only runs whose inputs changed. LLM judges use the same model layer as the
# agents (the retry policy's delays come from agent.retries).
rule detect_and_judge:
    input:
        index=rules.run_agents.output.index,
        tasks=config["study"]["tasks"],
        template=config["judge"]["template"],
        code=package_code(
            "detect.py", "judging", "runs_table.py", "tasks.py", "records.py",
            # the model layer LLM judges call through
            "agents/backends.py", "agents/cache.py", "agents/calls.py", "agents/protocol.py", "agents/secrets.py",
        ),
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
        retries=config["agent"]["retries"],
        store=RUN_STORE,
    log:
        "results/logs/detect_and_judge.log",
    benchmark:
        "results/benchmarks/detect_and_judge.tsv"
    script:
        "../scripts/detect_and_judge.py"
