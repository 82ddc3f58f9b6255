rule assemble:
    input:
        tasks=config["study"]["tasks"],
        tools="results/tools.json",
        canaries="results/canaries/{pool}.json",
        code=package_code("assembly.py", "tasks.py", "records.py", "canaries"),
    output:
        "results/assembly/{pool}.parquet",
    params:
        conditions=pool_conditions,
        seeds=config["study"]["seeds"],
    log:
        "results/logs/assemble/{pool}.log",
    script:
        "../scripts/assemble.py"
