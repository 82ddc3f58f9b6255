# One job per cell (model, pool, condition, seed) of a model; one job for a model's whole grid
# (cell `all`) for a reference agent (free, milliseconds per run: a job per cell would only add
# start-up) and for every model of a stateful MCP environment (environment.stateful, the
# default: one server history per model, runs one at a time). Inside a job, a run is executed only when its
# identity (what it sends: model and decoding, tool list, task, loop version) has no finished
# record, so an invalidated input re-executes exactly the runs it changes (docs/failures.md, "Reruns: never paying twice");
# runs of one identity in two cells are executed once (claims in the run store). The retry
# gate keeps a cell out of date while its index records failed runs, so a plain `snakemake`
# (or `dvc repro`) retries exactly those (docs/failures.md, "Failures, resuming and concurrent invocations").
rule run_agents:
    input:
        unpack(job_inputs),
        tasks=config["study"]["tasks"],
        tools=rules.export_tools.output[0],
        code=code("run_agents"),
        retry=retry_gate(JOB_INDEX),
    output:
        index=JOB_INDEX,
        summary=JOB_SUMMARY,
    params:
        model=job_model,
        pools=job_pools,
        seeds=job_seeds,
        agent=config["agent"],
        limit_tasks=config["study"]["limit_tasks"],
        store=RUN_STORE,
        environment=config["environment"],
        slots=agent_slots,
    threads: agent_threads
    resources:
        **AGENT_RESOURCES,
    log:
        out("logs/run_agents/{model}/{cell}.log"),
    benchmark:
        out("benchmarks/run_agents/{model}/{cell}.tsv")
    script:
        "../scripts/agents/run_agents.py"


# The study's run index and run summary (results/logs/run-summary.json): every agent job's, joined.
rule run_index:
    input:
        indexes=all_jobs(JOB_INDEX),
        summaries=all_jobs(JOB_SUMMARY),
        code=code("run_index"),
    output:
        index=out("runs/index.parquet"),
        summary=out("logs/run-summary.json"),
    params:
        store=RUN_STORE,
    log:
        out("logs/run_index.log"),
    script:
        "../scripts/agents/run_index.py"
