"""Where a study lives on disk: its output directory, its grid cells and their file names.

A *study* is one configuration; every file it computes goes under ``study.output_dir``
(default ``results``), so two studies (``params.yaml`` and a profile merged over it with
``--configfile``) never overwrite each other. The run store and the response and verdict
caches are shared between studies: they are content-addressed (a record is found by its run
identity, a verdict by its inputs), so sharing them only saves paying twice and never mixes
results; what a study reads from them is decided by its own run indexes.

A *cell* is one (model, pool, condition, seed) of the grid: a model's agent job runs one cell
(a reference agent's, or any model's in a stateful MCP environment, runs all the model's cells:
:func:`agent_jobs`). Its files are named by the model's *slug* (the model name made safe for a path and a Snakemake
wildcard: ``planted:semantic_decoy`` -> ``planted_semantic_decoy``) so that any model name
works. The DVC metrics are laid out per model and *grid role*: the main grid's cells are named
by condition and the ablation grid's cell ``ablation``, so switching ``canaries.pool`` pairs
the same cells across the two pools in ``dvc metrics diff``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: Name of the ablation grid's cell in the metrics layout.
ABLATION = "ablation"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def slug(name: str) -> str:
    """``name`` with every run of characters other than letters, digits, ``.``, ``_`` and ``-``
    replaced by ``_`` (``m`` when nothing is left)."""
    s = _UNSAFE.sub("_", name).strip("._") or "m"
    return s


def model_slugs(models: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Model name -> slug, unique over ``models`` (two names that would share a slug get a
    short hash of the name appended, in order)."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for m in models:
        name = str(m["name"])
        s = slug(name)
        if s in taken:
            s = f"{s}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"
        taken.add(s)
        out[name] = s
    return out


@dataclass(frozen=True)
class Cell:
    """One (model, pool, condition, seed) of the grid."""

    model: str
    slug: str
    pool: str
    condition: str
    seed: int

    @property
    def name(self) -> str:
        """``<pool>-<condition>-<seed>``: the cell's file name within its model's directory."""
        return f"{self.pool}-{self.condition}-{self.seed}"


def cells(models: Sequence[Mapping[str, Any]], grid: Mapping[str, Sequence[str]], seeds: Iterable[int]) -> list[Cell]:
    """Every cell of a study, in (model, pool, condition, seed) order. ``grid``: pool ->
    conditions (:func:`canarykit.study.config.run_grid`)."""
    slugs = model_slugs(models)
    seeds = [int(s) for s in seeds]
    return [
        Cell(str(m["name"]), slugs[str(m["name"])], pool, cond, seed)
        for m in models
        for pool in sorted(grid)
        for cond in grid[pool]
        for seed in seeds
    ]


@dataclass(frozen=True)
class AgentJob:
    """One agent job: one model's runs in ``cells`` (all of one pool's cells are of the
    conditions and seeds listed, so the job plans a (condition, seed, task) product per pool)."""

    model: str
    slug: str
    name: str
    cells: tuple[Cell, ...]

    def pools(self) -> dict[str, list[str]]:
        """Pool -> conditions of this job's cells."""
        out: dict[str, list[str]] = {}
        for c in self.cells:
            conds = out.setdefault(c.pool, [])
            if c.condition not in conds:
                conds.append(c.condition)
        return out

    def seeds(self) -> list[int]:
        return sorted({c.seed for c in self.cells})


#: Name of the job that runs every cell of a model (a reference agent, or any model of a
#: stateful MCP environment).
ALL_CELLS = "all"


def stateful_environment(environment: Mapping[str, Any] | None) -> bool:
    """Whether the study's tool servers may keep state between runs: an MCP environment unless
    it says ``stateful: false`` (the built-in tools answer every call afresh)."""
    env = environment or {}
    return env.get("kind") == "mcp" and bool(env.get("stateful", True))


def agent_jobs(
    models: Sequence[Mapping[str, Any]],
    grid: Mapping[str, Sequence[str]],
    seeds: Iterable[int],
    environment: Mapping[str, Any] | None = None,
) -> list[AgentJob]:
    """The agent jobs of a study, in model order.

    - A model: one job per cell (model, pool, condition, seed), so a grid of hosted or local
      models spreads over as many jobs (and cluster nodes) as it has cells.
    - A reference agent: one job for its whole grid (named ``all``): its runs take
      milliseconds and cost nothing, so a job per cell would only add seconds of start-up each.
    - Any model of a stateful MCP environment (:func:`stateful_environment`): one job for its
      whole grid (``all``). Each job starts its own server instances; one job per model keeps
      every run of the model on one server history (run one at a time:
      :func:`agent_job_resources`), instead of cells that diverge on servers of their own.
    """
    jobs: list[AgentJob] = []
    every = cells(models, grid, seeds)
    whole = stateful_environment(environment)
    for m in models:
        mine = tuple(c for c in every if c.model == str(m["name"]))
        if not mine:
            continue
        if whole or m.get("backend") == "reference":
            jobs.append(AgentJob(mine[0].model, mine[0].slug, ALL_CELLS, mine))
        else:
            jobs += [AgentJob(c.model, c.slug, c.name, (c,)) for c in mine]
    return jobs


def metric_cells(cfg: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    """Metrics cell name -> (condition, pool): each main-grid condition under its own name,
    the ablation grid as ``ablation``."""
    pool = cfg["canaries"]["pool"]
    out = {str(c): (str(c), str(pool)) for c in cfg["study"]["conditions"]}
    ab = cfg["ablation"]
    if ab["enabled"]:
        out[ABLATION] = (str(ab["condition"]), str(ab["pool"]))
    return out


# --------------------------------------------------------------------------- job resources
# Limits that hold over every job at once are Snakemake global resources: the main Snakemake
# process tallies them over all running jobs, local or submitted to a cluster (every resource
# but mem_mb, disk_mb and runtime has the "global" scope). A job holds units of:
#   llm_<provider>  the runs (agents) or verdicts (LLM judges) it keeps in flight at that provider
#   llm_calls       agent runs in flight, any provider (no limit unless --resources gives one)
#   gpu             1 for a model served on the job's node (backends local and ollama)

#: Snakemake resource every agent job of a model holds (its runs in flight): a cap over all
#: providers when ``--resources llm_calls=N`` is given; the workflow sets no default.
LLM_CALLS = "llm_calls"
#: Backends whose model is served on the job's own node (bounded by ``gpu``, not by a provider).
LOCAL_BACKENDS = ("local", "ollama")


def resource_name(provider: str) -> str:
    """The Snakemake resource of a provider's concurrency: ``llm_<provider>``."""
    return "llm_" + re.sub(r"\W+", "_", provider.lower()).strip("_")


def _provider(model: Mapping[str, Any]) -> str:
    from ..agents.backends import provider_of

    return provider_of(model)


def agent_job_resources(model: Mapping[str, Any], agent_cfg: Mapping[str, Any], runs: int, *,
                        sequential: bool = False) -> dict[str, int]:
    """What one agent job (``runs`` runs of ``model``) declares to Snakemake.

    - ``llm_<provider>`` and ``llm_calls``: the runs it keeps in flight, ``agent.concurrency``
      capped by ``agent.provider_concurrency.<provider>``, or ``agent.provider_concurrency_max.<provider>``
      when the provider's lane adapts (:mod:`canarykit.agents.adaptive`) (1 when ``sequential``: a stateful
      MCP environment's runs go one at a time); 0 for reference agents, which call no model.
      Snakemake lowers a job's share to the global limit when that is smaller, and the job runs
      with the share it was granted (:func:`granted_slots`).
    - ``_threads``: processes (LiteLLM runs are spread over ``agent.workers`` processes, at most
      the job's share of calls; other backends, and MCP environments, run in one process).
    - ``gpu``: 1 for models served on the job's node (``local``, ``ollama``), else 0.
    - ``mem_mb`` and ``runtime`` (minutes): measured for reference agents; for models an upper
      estimate from the number of runs (a few minutes per run per slot; override with
      ``--set-resources run_agents:runtime=...``).
    """
    backend = str(model.get("backend", ""))
    res = resource_name(_provider(model))
    if backend == "reference":
        return {"_threads": 1, LLM_CALLS: 0, "gpu": 0, "mem_mb": 1000, "runtime": 30}
    limits = {resource_name(str(k)): int(v) for k, v in (agent_cfg.get("provider_concurrency") or {}).items()}
    maxima = {resource_name(str(k)): int(v) for k, v in (agent_cfg.get("provider_concurrency_max") or {}).items()}
    if res in maxima:  # an adaptive lane asks for its maximum (agent.concurrency does not hold it below)
        slots = 1 if sequential else max(1, maxima[res])
    else:
        slots = 1 if sequential else max(1, min(int(agent_cfg.get("concurrency", 8)), limits.get(res, 1 << 30)))
    threads = 1
    if backend == "litellm" and not sequential:
        workers = agent_cfg.get("workers")
        threads = max(1, min(slots, int(workers) if workers is not None else 2))
    minutes_per_run = 2 if backend == "litellm" else 4
    return {
        "_threads": threads,
        LLM_CALLS: slots,
        res: slots,
        "gpu": 1 if backend in LOCAL_BACKENDS else 0,
        "mem_mb": 1000 + 500 * threads + (3000 if backend == "local" else 0),
        "runtime": 30 + -(-runs * minutes_per_run // slots),
    }


def agent_slot_resources(model: Mapping[str, Any]) -> list[str]:
    """The resources whose granted units bound an agent job's runs in flight."""
    return [LLM_CALLS, resource_name(_provider(model))]


def granted_slots(resources: Mapping[str, Any], names: Sequence[str]) -> int | None:
    """The runs in flight a job was granted: the smallest of its units of ``names`` (``None``
    when it holds none: a reference agent)."""
    held = [int(resources[n]) for n in names if isinstance(resources.get(n), int)]
    return min(held) if held and min(held) > 0 else None


def judge_job_resources(judge: Mapping[str, Any] | None, judge_cfg: Mapping[str, Any]) -> dict[str, int | str]:
    """What one judging job declares: an LLM judge holds ``judge.concurrency`` of its
    provider's resource (``llm_<provider>``)."""
    if not judge or judge.get("kind") != "llm":
        return {"provider": "", "slots": 0}
    return {"provider": resource_name(_provider({"backend": "litellm", **judge})), "slots": int(judge_cfg.get("concurrency") or 8)}


def default_limits(cfg: Mapping[str, Any]) -> dict[str, int]:
    """The global limits the workflow registers for the providers of a study (params.yaml
    validated), each unless ``--resources`` gives it.

    ``llm_<provider>``: ``agent.provider_concurrency_max.<provider>``, else
    ``agent.provider_concurrency.<provider>``, when listed; otherwise, for a
    hosted provider (a LiteLLM model's or an LLM judge's), the largest share one of its jobs
    holds (``agent.concurrency``, ``judge.concurrency``), so that provider keeps one job's calls
    in flight over all its jobs. Providers of different models never wait for each other, and
    a model served on the job's node (``local``, ``ollama``) is bounded by ``gpu``, not by a
    provider limit, unless ``provider_concurrency`` lists its provider (one shared server).
    No ``llm_calls`` limit: give ``--resources llm_calls=N`` to cap all providers together.
    """
    listed = {resource_name(str(k)): int(v) for k, v in (cfg["agent"].get("provider_concurrency") or {}).items()}
    listed |= {resource_name(str(k)): int(v) for k, v in (cfg["agent"].get("provider_concurrency_max") or {}).items()}
    out: dict[str, int] = {}

    def share(name: str, n: int) -> None:
        out[name] = listed.get(name) or max(out.get(name, 0), n)

    for m in cfg["models"]:
        backend = str(m.get("backend", ""))
        if backend == "reference":
            continue
        name = resource_name(_provider(m))
        if backend in LOCAL_BACKENDS:
            if name in listed:
                out[name] = listed[name]
            continue
        share(name, agent_job_resources(m, cfg["agent"], 1)[name])
    for role in ("primary", "cross"):
        r = judge_job_resources(cfg["judge"].get(role), cfg["judge"])
        if r["provider"]:
            share(str(r["provider"]), int(r["slots"]))
    return out
