# One coarse job runs the whole grid: inside it, a run is executed only when its identity
# (what it sends: model and decoding, tool list, task, loop version) has no finished record,
# so an invalidated input re-executes exactly the runs it changes (see README, "Reruns").
rule run_agents:
    input:
        unpack(canary_pools),
        unpack(assembly_tables),
        tasks=config["study"]["tasks"],
        code=package_code("agents", "tools", "canaries", "records.py", "tasks.py"),
    output:
        index="results/runs/index.parquet",
        summary="results/logs/run-summary.json",
    params:
        models=config["models"],
        agent=config["agent"],
        grid=GRID,
        seeds=config["study"]["seeds"],
        store="results/runs/store",
    resources:
        llm_calls=1,
    log:
        "results/logs/run_agents.log",
    benchmark:
        "results/benchmarks/run_agents.tsv"
    script:
        "../scripts/run_agents.py"
