# canarykit: plant canary tools, run agents, detect traps, judge, report.
# The DAG: tools -> canaries (per pool) -> assemblies (per pool and seed) -> agent runs (one job
# per model, pool, condition and seed) -> per model: trap detection, primary judging,
# cross-judging -> per-run table -> statistics, tables, figures, metrics, report.
# Configuration: params.yaml only (validated in rules/common.smk). See README.md.
# Every output goes under study.output_dir (default results/).

from snakemake.utils import min_version

min_version("9.0")


configfile: "params.yaml"


report: "report/workflow.rst"


include: "rules/common.smk"


rule all:
    input:
        ALL_TARGETS,
    default_target: True


# Small gathering jobs run where Snakemake runs, not as cluster jobs (each costs seconds of start-up there).
localrules:
    all,
    assemblies,
    export_tools,
    run_index,
    metrics,
    plots_template,
    study_parameters,


include: "rules/canaries.smk"
include: "rules/assembly.smk"
include: "rules/agents.smk"
include: "rules/judging.smk"
include: "rules/stats.smk"
include: "rules/report.smk"


check_targets()
