# Shared Python of the workflow: config validation, the grid, input functions.

import json
from pathlib import Path

from canarykit.agents.secrets import export_secret_envs
from canarykit.agents.store import ensure_retry_gate, retry_gate_path
from canarykit.config import blame, check_study, read_yaml_config, run_grid, validate_params
from canarykit.errors import CanaryKitError, ConfigError
from canarykit.types import CANARY_TYPES, CONDITIONS

# Everything `canarykit validate-config` checks is checked here, when Snakemake (and so
# `dvc repro`) parses the workflow: the schema and cross-key checks, the task suite that
# study.tasks names, and agent.max_turns against its longest canonical plan. A bad value stops
# the run before any job starts, with one line naming the file and the key (a bad task file
# must stop it before Snakemake deletes the canary pools that take the suite as input).
try:
    _validated = validate_params(config, "params.yaml")
    check_study(_validated, "params.yaml")
except CanaryKitError as exc:
    if isinstance(exc, ConfigError):  # name the profile when the bad value came from one
        _files = ["params.yaml", *map(str, workflow.overwrite_configfiles or [])]
        exc = blame(exc, [(f, read_yaml_config(f)) for f in _files if Path(f).is_file()])
    raise WorkflowError(f"canarykit: error: {exc}") from None
config.clear()
config.update(_validated)
# Every api_key_env the configuration names: their values are scrubbed from every error text
# of every script (they inherit the variable), not only the calling model's own key.
export_secret_envs(config)

# A fresh clone after `dvc pull`: DVC checks outputs out in no particular mtime order, so
# restore the pipeline order (only when DVC confirms every output matches dvc.lock).
if not Path(".snakemake/metadata").exists() and Path("dvc.lock").exists():
    from canarykit.workflow import align_mtimes_with_dvc_lock

    align_mtimes_with_dvc_lock(".")

#: pool -> conditions run against it (main grid plus the subtlety ablation)
GRID = run_grid(config)
POOLS = sorted(GRID)
#: the run store: one record per run, content-addressed by run identity
RUN_STORE = "results/runs/store"
FIGURES = ["fig2", "fig4", "fig5", "fig6", "fig7", "fig8", "fig9", "fig10"]
#: the tidy data behind each figure (written by the stats rule; DVC plots point at them)
FIGURE_DATA = ["fig2_csr", "fig4_csr_by_difficulty", "fig5_trap_rates", "fig6_profiles", "fig7_tsr_delta", "fig8_ablation", "fig9_recovery_outcome", "fig10_controls"]
METRICS = [f"results/metrics/{c}-{p}.json" for p in POOLS for c in GRID[p]]

wildcard_constraints:
    pool="standard|subtle",
    condition="baseline|declared|full|control|mirrored",
    fig="fig[0-9]+",
    fmt="svg|png|html",

ALL_TARGETS = [
    "results/table1.csv",
    "results/table2.csv",
    "results/table3.csv",
    "results/table_controls.csv",
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


def retry_gate(index):
    """Input function of a run rule whose run index is ``index`` (a pattern: wildcards allowed).

    Returns the index's retry gate, a small file in the run store (created, dated to the
    epoch, when missing). When the rule's last run left failed runs in the index, the gate was
    marked after the index was written (by the run script, and again by the judging script
    that reads the index): it is newer than the index, so the rule is out of date and a plain
    `snakemake` re-executes exactly the failed runs; for `dvc repro` the marked gate is a
    change of the run stage's store. Any run rule takes it as an input:
    ``retry=retry_gate("results/runs/index/{model}.parquet")``.
    """

    def gate(wildcards):
        return str(ensure_retry_gate(retry_gate_path(RUN_STORE, index.format(**wildcards))))

    return gate


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
