# The report stage: the figures, the `dvc plots` page template, the study's parameters as run,
# the report and the optional Inspect export (the package: canarykit.report, canarykit.export).

rule figures:
    input:
        stats=rules.stats.output.stats,
        code=code("figures"),
    output:
        [reported(out(f"figures/{fig}.{fmt}"), "Figures", fig)
         for fig in [*FIGURES, *(["fig11"] if DOSE else [])] for fmt in config["figures"]["formats"]],
    params:
        formats=config["figures"]["formats"],
    resources:
        mem_mb=2000,
        runtime=15,
    log:
        out("logs/figures.log"),
    script:
        "../scripts/report/figures.py"


# The page template `dvc plots show/diff --html-template` renders into: Vega inlined, no CDN.
rule plots_template:
    input:
        code=code("plots_template"),
    output:
        out("plots/vega-offline.html"),
    log:
        out("logs/plots_template.log"),
    script:
        "../scripts/report/plots_template.py"


# The parameters of the study as run (params.yaml with every default filled in), for the report.
rule study_parameters:
    input:
        code=code("study_parameters"),
    output:
        report(out("params.resolved.yaml"), category="Configuration", caption="../report/params.rst"),
    params:
        config=config,
    log:
        out("logs/study_parameters.log"),
    script:
        "../scripts/report/study_parameters.py"


# The study report: one self-contained HTML file (open it in any browser, offline). It holds the
# oracle instrument check, what was run, the diagnosis per model in words, the tables (sortable),
# each figure once (interactive, with a PNG fallback), a seeded sample of trapped runs with
# their conversations, and the parameters. Rendered by canarykit.report.report from the study's outputs
# (and the sampled runs' records in the run store). `snakemake --report` still builds
# Snakemake's own report, to another path.
REPORT_RESOURCES = [f"src/canarykit/resources/report.{ext}" for ext in ("html.j2", "css", "js")]
REPORT_CAPTIONS = sorted(str(p) for p in (Path(workflow.basedir) / "report").glob("*.rst") if p.stem in {*TABLES, *FIGURES})


rule report:
    input:
        **{t: getattr(rules.stats.output, t) for t in TABLES},
        stats=rules.stats.output.stats,
        validation=rules.judge_report.output.validation,
        params=rules.study_parameters.output[0],
        runs=rules.runs_table.output.runs,
        captions=REPORT_CAPTIONS,
        resources=REPORT_RESOURCES,
        code=code("report"),
    output:
        out("report.html"),
    params:
        tables=TABLES,
        store=RUN_STORE,
        seed=config["stats"]["seed"],
    resources:
        mem_mb=2000,
        runtime=15,
    log:
        out("logs/report.log"),
    script:
        "../scripts/report/report.py"


# report.export: [inspect] (optional): the study's runs as Inspect AI logs, one .eval file per
# (model, condition), for `inspect view` and every tool that reads Inspect logs; the same as
# `canarykit export inspect` (docs/inspect-and-bfcl.md). Needs the inspect-ai package.
EXPORT_CODE = ["src/canarykit/export/inspect_log.py", *code_closure(Path(workflow.basedir) / "src/canarykit/export/inspect_log.py", workflow.basedir)]


rule export_inspect:
    input:
        runs=rules.runs_table.output.runs,
        stats=rules.stats.output.stats,
        params=rules.study_parameters.output[0],
        tasks=config["study"]["tasks"],
        code=EXPORT_CODE,
    output:
        directory(out("inspect")),
    params:
        python=sys.executable,
        study=OUT,
        store=RUN_STORE,
    resources:
        mem_mb=2000,
        runtime=30,
    log:
        out("logs/export_inspect.log"),
    shell:
        "{params.python} -m canarykit export inspect --study {params.study} --store {params.store} "
        "--tasks {input.tasks} -o {output} > {log} 2>&1"
