# Shared Python of the workflow: config validation, the grid, input functions.

import json
from pathlib import Path

from canarykit.config import run_grid, validate_params
from canarykit.errors import ConfigError
from canarykit.types import CANARY_TYPES, CONDITIONS

try:
    _validated = validate_params(config, "params.yaml")
except ConfigError as exc:
    raise WorkflowError(str(exc)) from None
config.clear()
config.update(_validated)

# The task suite is an input of the canary generator (granularity cases are checked against
# it): a bad task file must stop the workflow before any job runs, or Snakemake would delete
# the pools it was about to regenerate.
from canarykit.errors import CanaryKitError
from canarykit.tasks import load_tasks

try:
    load_tasks(config["study"]["tasks"])
except CanaryKitError as exc:
    raise WorkflowError(str(exc)) from None

# A fresh clone after `dvc pull`: DVC checks outputs out in no particular mtime order, so
# restore the pipeline order (only when DVC confirms every output matches dvc.lock).
if not Path(".snakemake/metadata").exists() and Path("dvc.lock").exists():
    from canarykit.workflow import align_mtimes_with_dvc_lock

    align_mtimes_with_dvc_lock(".")

#: pool -> conditions run against it (main grid plus the subtlety ablation)
GRID = run_grid(config)
POOLS = sorted(GRID)
FIGURES = ["fig2", "fig4", "fig5", "fig6", "fig7", "fig8", "fig9"]
#: the tidy data behind each figure (written by the stats rule; DVC plots point at them)
FIGURE_DATA = ["fig2_csr", "fig4_csr_by_difficulty", "fig5_trap_rates", "fig6_profiles", "fig7_tsr_delta", "fig8_ablation", "fig9_recovery_outcome"]
METRICS = [f"results/metrics/{c}-{p}.json" for p in POOLS for c in GRID[p]]

wildcard_constraints:
    pool="standard|subtle",
    condition="baseline|declared|full",
    fig="fig[0-9]+",
    fmt="svg|png|html",

ALL_TARGETS = [
    "results/table1.csv",
    "results/table2.csv",
    "results/table3.csv",
    "results/stats.json",
    "results/judge/validation.json",
    "results/params.resolved.yaml",
    *METRICS,
    *[f"results/figures/{f}.{fmt}" for f in FIGURES for fmt in config["figures"]["formats"]],
]


def package_code(*parts):
    """The library's source files behind a rule, as inputs: editing them re-runs the rule
    (inside the run rule, only runs whose identity changed re-execute)."""
    files = []
    for part in parts:
        path = Path(workflow.basedir) / "src" / "canarykit" / part
        files += sorted(str(p) for p in path.rglob("*.py")) if path.is_dir() else [str(path)]
    return files


def pool_suffixes(wildcards):
    return config["canaries"]["suffixes"][wildcards.pool]


def pool_control_suffixes(wildcards):
    return config["canaries"]["control_suffixes"][wildcards.pool]


def pool_conditions(wildcards):
    return GRID.get(wildcards.pool, [])


def canary_pools(wildcards):
    return {f"canaries_{p}": f"results/canaries/{p}.json" for p in POOLS}


def assembly_tables(wildcards):
    return {f"assembly_{p}": f"results/assembly/{p}.parquet" for p in POOLS}
