# One job per cell (model, pool, condition, seed). Inside it, a run is executed only when its
# identity (what it sends: model and decoding, tool list, task, loop version) has no finished
# record, so an invalidated input re-executes exactly the runs it changes (README, "Reruns");
# runs of one identity in two cells are executed once (claims in the run store). The retry
# gate keeps a cell out of date while its index records failed runs, so a plain `snakemake`
# (or `dvc repro`) retries exactly those (README, "Failures").
rule run_agents:
    input:
        canaries=rules.generate_canaries.output[0],
        assembly=rules.assemble.output[0],
        tasks=config["study"]["tasks"],
        code=code("run_agents"),
        retry=retry_gate(CELL_INDEX),
    output:
        index=CELL_INDEX,
        summary=CELL_SUMMARY,
    params:
        model=cell_model,
        agent=config["agent"],
        limit_tasks=config["study"]["limit_tasks"],
        store=RUN_STORE,
    threads: agent_threads
    resources:
        **AGENT_RESOURCES,
    log:
        out("logs/run_agents/{model}/{pool}-{condition}-{seed}.log"),
    benchmark:
        out("benchmarks/run_agents/{model}/{pool}-{condition}-{seed}.tsv")
    script:
        "../scripts/run_agents.py"


# The study's run index and run summary (results/logs/run-summary.json): every cell's, joined.
rule run_index:
    input:
        indexes=all_cells(CELL_INDEX),
        summaries=all_cells(CELL_SUMMARY),
        code=code("run_index"),
    output:
        index=out("runs/index.parquet"),
        summary=out("logs/run-summary.json"),
    params:
        store=RUN_STORE,
    log:
        out("logs/run_index.log"),
    script:
        "../scripts/run_index.py"
