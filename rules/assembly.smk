# One job per (pool, seed): the offered tool list of every (condition, task) of the pool.
rule assemble:
    input:
        tasks=config["study"]["tasks"],
        tools=rules.export_tools.output[0],
        canaries=rules.generate_canaries.output[0],
        code=code("assemble"),
    output:
        out("assembly/{pool}/seed-{seed}.parquet"),
    params:
        conditions=pool_conditions,
        dose=pool_dose,
        limit_tasks=config["study"]["limit_tasks"],
    log:
        out("logs/assemble/{pool}-{seed}.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "../scripts/assembly/assemble.py"


# Target of the DVC `assemble` stage: every assembly of the study.
rule assemblies:
    input:
        expand(rules.assemble.output[0], pool=POOLS, seed=SEEDS),
