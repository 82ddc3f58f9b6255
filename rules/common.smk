# Shared Python of the workflow: config validation, the study's layout and grid, input
# functions, code dependencies and job resources.

import os
import re
import sys
import uuid
from pathlib import Path

import yaml

from canarykit.agents.calls import INVOCATION_ENV
from canarykit.agents.secrets import export_secret_envs
from canarykit.agents.store import retry_gate_input
from canarykit.study.config import blame, check_study, read_yaml_config, run_grid, validate_params
from canarykit.study.console import OUT_ENV, cli_targets, study_targets, unknown_target_error
from canarykit.study.dvcyaml import STAGES_FILE, code_closure, rule_code
from canarykit.errors import CanaryKitError, ConfigError
from canarykit.study.layout import (
    LLM_CALLS,
    agent_job_resources,
    agent_jobs,
    agent_slot_resources,
    default_limits,
    judge_job_resources,
    metric_cells,
    model_slugs,
    stateful_environment,
)
from canarykit.tasks.tasks import select_tasks
from canarykit.types import POOLS as ALL_POOLS

# Everything `canarykit validate-config` checks is checked here, when Snakemake (and so
# `dvc repro`) parses the workflow: the schema and cross-key checks, the task suite that
# study.tasks names, and agent.max_turns against its longest canonical plan. A bad value stops
# the run before any job starts, with one line naming the file and the key (a bad task file
# must stop it before Snakemake deletes the canary pools that take the suite as input).
try:
    _validated = validate_params(config, "params.yaml")
    _TASKS = check_study(_validated, "params.yaml")
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
# One id per invocation, inherited by every job it starts (cluster jobs included): the run
# summary tells the cells this invocation ran from the others, and budgets hold over all jobs.
if workflow.is_main_process or INVOCATION_ENV not in os.environ:
    os.environ[INVOCATION_ENV] = uuid.uuid4().hex

# A fresh clone after `dvc pull`: DVC checks outputs out in no particular mtime order, so
# restore the pipeline order (only when DVC confirms every output matches dvc.lock).
if not Path(".snakemake/metadata").exists() and Path("dvc.lock").exists():
    from canarykit.study.dvcsync import align_mtimes_with_dvc_lock

    align_mtimes_with_dvc_lock(".")

#: rules/stages.yaml: the study's named outputs and the rules' scripts (dvc.yaml comes from it too)
STAGES = yaml.safe_load((Path(workflow.basedir) / STAGES_FILE).read_text(encoding="utf-8"))
TABLES = STAGES["outputs"]["tables"]
FIGURE_DATA = STAGES["outputs"]["figure_data"]
FIGURES = STAGES["outputs"]["figures"]

#: every output of this study goes under OUT (study.output_dir); the run store and the caches
#: are shared by all studies (content-addressed)
OUT = os.path.normpath(config["study"]["output_dir"])
os.environ[OUT_ENV] = OUT  # the console (make run) finds the study's outputs and writes its full log there
RUN_STORE = "results/runs/store"
#: the stages after the agents remember their rows per run by the record's content (shared by
#: all studies like the store: canarykit.store.memo), so an edit recomputes only changed runs
STAGE_MEMO = "results/cache/memo"
#: pool -> conditions run against it (main grid plus the subtlety ablation)
GRID = run_grid(config)
POOLS = sorted(GRID)
SEEDS = [int(s) for s in config["study"]["seeds"]]
MODELS = {m["name"]: m for m in config["models"]}
SLUGS = model_slugs(config["models"])  # model name -> its slug in paths and wildcards
MODEL_OF = {s: n for n, s in SLUGS.items()}
#: one agent job per cell (model, pool, condition, seed) of a model; one (cell "all") for a
#: reference agent's whole grid, and for each model's grid in a stateful MCP environment
STATEFUL = stateful_environment(config["environment"])
#: BFCL's multi-turn entries as the study (environment.kind bfcl): export_tools writes study.tasks
BFCL = config["environment"]["kind"] == "bfcl"
AGENT_JOBS = {(j.slug, j.name): j for j in agent_jobs(config["models"], GRID, SEEDS, config["environment"])}
N_TASKS = len(select_tasks(_TASKS, config["study"]["limit_tasks"]))
#: whether the study runs the dose condition (its curves: stats.json dose_response, table_dose, figure 11)
DOSE = any("dose" in conds for conds in GRID.values())
JUDGES = [role for role in ("primary", "cross") if config["judge"].get(role)]


def out(path):
    """``path`` under the study's output directory."""
    return f"{OUT}/{path}"


def _alternatives(values):
    return "|".join(re.escape(str(v)) for v in sorted(set(values), key=len, reverse=True)) or "(?!)"


wildcard_constraints:
    model=_alternatives(SLUGS.values()),
    pool=_alternatives(ALL_POOLS),
    condition=_alternatives(c for cs in GRID.values() for c in cs),
    seed=r"\d+",
    cell=_alternatives(name for _, name in AGENT_JOBS),


#: the DVC metrics: one file per (model, grid cell), the cell named by its role in the grid
METRICS = [out(f"metrics/{s}/{cell}.json") for s in SLUGS.values() for cell in metric_cells(config)]
#: an agent job's outputs; {cell}: <pool>-<condition>-<seed>, or `all` for a job that runs
#: all the model's cells
JOB_INDEX = out("runs/jobs/{model}/{cell}.parquet")
#: the job's counts and timings (executed / reused / elapsed: history and the clock): a log,
#: never in a DVC-tracked output (issue 29)
JOB_SUMMARY = out("logs/runs/{model}/{cell}.json")
#: the study's own retry gates, out/runs/retry (one per agent job: canarykit.agents.store.retry_gate_path):
#: another study's failures never touch them

ALL_TARGETS = [
    *[out(f"{t}.csv") for t in TABLES],
    out("stats.json"),
    out("judge/validation.json"),
    out("params.resolved.yaml"),
    *METRICS,
    out("plots/vega-offline.html"),
    *[out(f"figures/{f}.{fmt}") for f in FIGURES for fmt in config["figures"]["formats"]],
    *([out("table_dose.csv"), *[out(f"figures/fig11.{fmt}") for fmt in config["figures"]["formats"]]] if DOSE else []),
    out("report.html"),
    # report.export: logs in other tools' formats (rules/report.smk)
    *([out("inspect")] if "inspect" in config["report"]["export"] else []),
]


# ---------------------------------------------------------------------------- code

def code(rule):
    """A rule's code inputs: its script and every canarykit module the script imports,
    transitively (canarykit.study.dvcyaml.code_closure; dvc.yaml lists the same files). Editing
    one re-runs the rule; inside the run rule only runs whose identity changed re-execute."""
    return rule_code(rule, STAGES, workflow.basedir)[1:]


# ---------------------------------------------------------------------------- input functions

def retry_gate(index):
    """Input function of a run rule whose run index is ``index`` (a pattern: wildcards allowed).

    Returns the index's retry gate, a small file in the study's runs/retry (created, dated to the
    epoch, when missing; a dry run creates nothing). When the rule's last run left failed runs
    to retry in the index (agent.retries.rerun_failed), the gate was marked after the index was
    written (by the run script, and again by every job that reads the index): it is newer than
    the index, so the rule is out of date and a plain `snakemake` re-executes exactly the
    failed runs; for `dvc repro` the marked gate is a change of the run stage's output
    <out>/runs/retry (the study's own: another study's failures never change it). A run
    that leaves nothing to retry settles it (dated before the index). Any run rule takes it as
    an input: ``retry=retry_gate(JOB_INDEX)``.
    """

    def gate(wildcards):
        return retry_gate_input(index.format(**wildcards), dry_run=workflow.dryrun)

    return gate


def pool_suffixes(wildcards):
    return config["canaries"]["suffixes"][wildcards.pool]


def pool_control_suffixes(wildcards):
    return config["canaries"]["control_suffixes"][wildcards.pool]


def pool_conditions(wildcards):
    return GRID.get(wildcards.pool, [])


def dose_stats_inputs(wildcards):
    """The dose curves' extra inputs of the stats rule: the per-call table (the first pick into
    the first needed tool's family) and the task suite (which tool that is); none without dose."""
    return {"calls": out("judge/calls.parquet"), "tasks": config["study"]["tasks"]} if DOSE else {}


def pool_dose(wildcards):
    """study.dose when the pool runs the dose condition, else None (its pool file and
    assemblies are then those of a study without it)."""
    return config["study"]["dose"] if "dose" in GRID.get(wildcards.pool, []) else None


def job_model(wildcards):
    return MODELS[MODEL_OF[wildcards.model]]


def job_pools(wildcards):
    """Pool -> conditions of an agent job's cells."""
    return AGENT_JOBS[(wildcards.model, wildcards.cell)].pools()


def job_seeds(wildcards):
    return AGENT_JOBS[(wildcards.model, wildcards.cell)].seeds()


def job_inputs(wildcards):
    """An agent job's canary pools and assemblies: ``canaries_<pool>``, ``assembly_<pool>``."""
    job = AGENT_JOBS[(wildcards.model, wildcards.cell)]
    inputs = {}
    for pool in job.pools():
        inputs[f"canaries_{pool}"] = out(f"canaries/{pool}.json")
        inputs[f"assembly_{pool}"] = [out(f"assembly/{pool}/seed-{seed}.parquet") for seed in job.seeds()]
    return inputs


def model_job_indexes(wildcards):
    """The run indexes of one model's agent jobs."""
    return [JOB_INDEX.format(model=s, cell=name) for s, name in AGENT_JOBS if s == wildcards.model]


def all_jobs(pattern):
    return [pattern.format(model=s, cell=name) for s, name in AGENT_JOBS]


def per_model(pattern):
    return [pattern.format(model=s) for s in SLUGS.values()]


# ---------------------------------------------------------------------------- resources
# Concurrency against rate-limited services is a declared resource (canarykit.study.layout). The main
# Snakemake process tallies these over every running job, local or submitted to a cluster, so
# a limit holds across jobs. Defaults, each unless given on the command line (`--resources
# llm_openai=16` wins):
#   llm_<provider>   agent.provider_concurrency.<provider>; else, for a hosted provider, one
#                    job's share (agent.concurrency, judge.concurrency); none for a model
#                    served on the job's node unless listed
#   gpu              1 on one machine (local execution), when a job holds one; none on a
#                    cluster (the cluster allocates each job its GPU)
#   llm_calls        none (give one to cap every provider's agent runs together)

def _register(name, value):
    if name not in workflow.global_resources:
        workflow.register_resource(name, int(value))


for _name, _n in default_limits(config).items():
    _register(_name, _n)
_JUDGE_RES = {role: judge_job_resources(config["judge"].get(role), config["judge"]) for role in JUDGES}
_AGENT_RES = {
    key: agent_job_resources(MODELS[j.model], config["agent"], N_TASKS * len(j.cells), sequential=STATEFUL)
    for key, j in AGENT_JOBS.items()
}
#: every provider resource any agent job holds (0 for the others)
_AGENT_RESOURCE_NAMES = sorted({k for r in _AGENT_RES.values() for k in r if k.startswith("llm_") and k != LLM_CALLS})
# `workflow.nodes` is set (from --jobs) only for a cluster or cloud executor: the test
# Snakemake's scheduler itself uses to tell remote execution from local.
if workflow.is_main_process and workflow.nodes is None and any(r["gpu"] for r in _AGENT_RES.values()):
    _register("gpu", 1)


def _agent_resource(name):
    def value(wildcards):
        return _AGENT_RES[(wildcards.model, wildcards.cell)].get(name, 0)

    value.__name__ = f"agent_{name}"
    return value


def agent_threads(wildcards):
    return _AGENT_RES[(wildcards.model, wildcards.cell)]["_threads"]


def agent_slots(wildcards):
    """The resources whose granted units are the job's runs in flight (run_agents.py)."""
    return agent_slot_resources(job_model(wildcards))


AGENT_RESOURCES = {name: _agent_resource(name) for name in [LLM_CALLS, *_AGENT_RESOURCE_NAMES, "gpu", "mem_mb", "runtime"]}


def judge_resources(role):
    r = _JUDGE_RES.get(role) or {"provider": "", "slots": 0}
    res = {"mem_mb": 1500, "runtime": 60 if r["provider"] else 15}
    if r["provider"]:
        res[r["provider"]] = r["slots"]
    return res


# ---------------------------------------------------------------------------- targets

def check_targets():
    """Called at the end of the Snakefile, once every rule is defined: a requested target that
    no rule makes stops the run with one line listing the study's targets (Snakemake's own
    message names no target and suggests a problem with input functions)."""
    # Snakemake hands the DAG its targets after parsing the workflow: read them from its command line
    requested = cli_targets(sys.argv) if workflow.is_main_process else []
    target_rules = ["all", *dict.fromkeys(t for st in STAGES["stages"].values() for t in st["targets"] if "/" not in t)]
    named = study_targets(OUT, STAGES["outputs"], config["figures"]["formats"])
    message = unknown_target_error(requested, list(workflow.rules), named, target_rules)
    if message:
        raise WorkflowError(message)


# ---------------------------------------------------------------------------- failed runs

def check_failed_runs(log):
    """After every job of an invocation that covers the run index has succeeded: a study
    with more failed runs than study.allow_failed allows exits non-zero, naming the first
    failure and the command that retries them (canarykit.study.failures); the verdict is
    left in <out>/logs/failures.json for the console's closing block."""
    if not workflow.is_main_process:
        return
    try:
        covers_runs = any(j.rule.name == "run_index" for j in workflow.dag.jobs)
    except AttributeError:  # no DAG (a Snakemake without it): check whatever index there is
        covers_runs = True
    if not covers_runs:
        return
    from canarykit.study.failed_runs import study_failures
    from canarykit.study.failures import failure_message, retry_command, write_verdict

    failures = study_failures(out("runs/index.parquet"), RUN_STORE, config["models"], config["study"]["allow_failed"])
    write_verdict(OUT, failures)
    if failures is not None and failures.exceeded:
        raise WorkflowError("canarykit: error: " + failure_message(failures, retry_command(failures.first)))


onsuccess:
    check_failed_runs(log)
