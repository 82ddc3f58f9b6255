# canarykit: plant canary tools, run agents, detect traps, judge, report.
# The DAG: tools -> canaries (per pool) -> assemblies (per pool) -> agent runs -> detection
# and judging -> per-run table -> statistics, tables, figures, report.
# Configuration: params.yaml only (validated in rules/common.smk). See README.md.

from snakemake.utils import min_version

min_version("9.0")


configfile: "params.yaml"


report: "report/workflow.rst"


include: "rules/common.smk"


rule all:
    input:
        ALL_TARGETS,
    default_target: True


include: "rules/canaries.smk"
include: "rules/assembly.smk"
include: "rules/agents.smk"
include: "rules/judging.smk"
include: "rules/stats.smk"
