# Per model: trap detection, primary judging and cross-judging are separate jobs (an LLM judge
# is a provider of its own: scheduled, limited and re-run on its own, e.g.
# `snakemake --forcerun judge_cross`). Verdicts are cached by content, so a rerun judges only
# runs whose inputs changed. LLM judges use the same model layer as the agents.
rule detect:
    input:
        indexes=model_job_indexes,
        code=code("detect"),
    output:
        metrics=out("detect/{model}.parquet"),
        calls=out("detect/{model}.calls.parquet"),
    params:
        store=RUN_STORE,
        memo=STAGE_MEMO,
    resources:
        mem_mb=1500,
        runtime=15,
    log:
        out("logs/detect/{model}.log"),
    benchmark:
        out("benchmarks/detect/{model}.tsv")
    script:
        "../scripts/judging/detect.py"


rule judge_primary:
    input:
        indexes=model_job_indexes,
        tasks=config["study"]["tasks"],
        template=config["judge"]["template"],
        code=code("judge_primary"),
    output:
        verdicts=out("judge/primary/{model}.parquet"),
        # judged / reused / model calls: which job reached the shared verdict cache first, so a log
        counts=out("logs/judge_primary/{model}.json"),
    params:
        role="primary",
        judge=config["judge"],
        models=config["models"],
        retries=config["agent"]["retries"],
        store=RUN_STORE,
        memo=STAGE_MEMO,
        resource=_JUDGE_RES.get("primary", {}).get("provider"),
    resources:
        **judge_resources("primary"),
    log:
        out("logs/judge_primary/{model}.log"),
    benchmark:
        out("benchmarks/judge_primary/{model}.tsv")
    script:
        "../scripts/judging/judge.py"


rule judge_cross:
    input:
        indexes=model_job_indexes,
        tasks=config["study"]["tasks"],
        template=config["judge"]["template"],
        code=code("judge_cross"),
    output:
        verdicts=out("judge/cross/{model}.parquet"),
        # judged / reused / model calls: which job reached the shared verdict cache first, so a log
        counts=out("logs/judge_cross/{model}.json"),
    params:
        role="cross",
        judge=config["judge"],
        models=config["models"],
        retries=config["agent"]["retries"],
        store=RUN_STORE,
        memo=STAGE_MEMO,
        resource=_JUDGE_RES.get("cross", {}).get("provider"),
    resources:
        **judge_resources("cross"),
    log:
        out("logs/judge_cross/{model}.log"),
    benchmark:
        out("benchmarks/judge_cross/{model}.tsv")
    script:
        "../scripts/judging/judge.py"


def cross_verdicts(wildcards):
    return {"cross": per_model(rules.judge_cross.output.verdicts)} if "cross" in JUDGES else {}


def cross_counts(wildcards):
    return {"cross_counts": per_model(rules.judge_cross.output.counts)} if "cross" in JUDGES else {}


# The per-run table: the index, the detector's per-run metrics and both judges' verdicts.
rule runs_table:
    input:
        unpack(cross_verdicts),
        index=rules.run_index.output.index,
        metrics=per_model(rules.detect.output.metrics),
        calls=per_model(rules.detect.output.calls),
        primary=per_model(rules.judge_primary.output.verdicts),
        # the pools' wording ids (wording_<T>: the bank entry each run was offered)
        pools=expand(rules.generate_canaries.output[0], pool=POOLS),
        code=code("runs_table"),
    output:
        runs=out("runs.parquet"),
        calls=out("judge/calls.parquet"),
        primary=out("judge/verdicts/primary.parquet"),
        cross=[out("judge/verdicts/cross.parquet")] if "cross" in JUDGES else [],
    resources:
        mem_mb=2000,
        runtime=15,
    log:
        out("logs/runs_table.log"),
    script:
        "../scripts/judging/runs_table.py"


# The judges' validation: oracle check, cross-judge agreement, the primary judge's stability
# re-grading (its own model calls), the human sheet; and the judging counts.
rule judge_report:
    input:
        unpack(cross_counts),
        runs=rules.runs_table.output.runs,
        primary=rules.runs_table.output.primary,
        index=rules.run_index.output.index,
        primary_counts=per_model(rules.judge_primary.output.counts),
        tasks=config["study"]["tasks"],
        human=config["judge"]["human_sheet"] or [],  # editing the grades re-runs the comparison
        code=code("judge_report"),
    output:
        validation=out("judge/validation.json"),
        # every judging job's counts (judged / reused / model calls depend on history and on
        # which parallel job reached the shared verdict cache first): a log, not a tracked output
        counts=out("logs/judge-counts.json"),
    params:
        judge=config["judge"],
        models=config["models"],
        retries=config["agent"]["retries"],
        store=RUN_STORE,
    resources:
        **judge_resources("primary"),
    log:
        out("logs/judge_report.log"),
    script:
        "../scripts/judging/judge_report.py"
