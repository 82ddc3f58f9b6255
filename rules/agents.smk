# One coarse job runs the whole grid: inside it, a run is executed only when its identity
# (what it sends: model and decoding, tool list, task, loop version) has no finished record,
# so an invalidated input re-executes exactly the runs it changes (see README, "Reruns").
# The retry gate keeps the rule out of date while the index records failed runs, so a plain
# `snakemake` (or `dvc repro`) retries exactly those (README, "Failures").
rule run_agents:
    input:
        unpack(canary_pools),
        unpack(assembly_tables),
        tasks=config["study"]["tasks"],
        tools=rules.export_tools.output[0],
        code=package_code("agents", "tools", "canaries", "records.py", "tasks.py", "upstream.py", "environments.py"),
        retry=retry_gate("results/runs/index.parquet"),
    output:
        index="results/runs/index.parquet",
        summary="results/logs/run-summary.json",
    params:
        models=config["models"],
        agent=config["agent"],
        grid=GRID,
        seeds=config["study"]["seeds"],
        store=RUN_STORE,
        environment=config["environment"],
    resources:
        llm_calls=1,
    log:
        "results/logs/run_agents.log",
    benchmark:
        "results/benchmarks/run_agents.tsv"
    script:
        "../scripts/run_agents.py"
