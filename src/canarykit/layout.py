"""Where a study lives on disk: its output directory, its grid cells and their file names.

A *study* is one configuration; every file it computes goes under ``study.output_dir``
(default ``results``), so two studies (``params.yaml`` and a profile merged over it with
``--configfile``) never overwrite each other. The run store and the response and verdict
caches are shared between studies: they are content-addressed (a record is found by its run
identity, a verdict by its inputs), so sharing them only saves paying twice and never mixes
results; what a study reads from them is decided by its own run indexes.

A *cell* is one (model, pool, condition, seed) of the grid: the unit of one agent job. Its
files are named by the model's *slug* (the model name made safe for a path and a Snakemake
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
    """One (model, pool, condition, seed) of the grid: one agent job."""

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
    conditions (:func:`canarykit.config.run_grid`)."""
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


#: Name of the job that runs every cell of a reference agent.
ALL_CELLS = "all"


def agent_jobs(models: Sequence[Mapping[str, Any]], grid: Mapping[str, Sequence[str]], seeds: Iterable[int]) -> list[AgentJob]:
    """The agent jobs of a study: one per cell (model, pool, condition, seed) for a model, so
    a grid of hosted or local models spreads over as many jobs (and cluster nodes) as it has
    cells; one per reference agent for its whole grid (named ``all``): its runs take
    milliseconds and cost nothing, so a job per cell would only add seconds of start-up each."""
    jobs: list[AgentJob] = []
    every = cells(models, grid, seeds)
    for m in models:
        mine = tuple(c for c in every if c.model == str(m["name"]))
        if not mine:
            continue
        if m.get("backend") == "reference":
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

#: Snakemake global resource bounding the agent runs in flight over every job at once
#: (``agent.concurrency``); each provider also has ``llm_<provider>`` (``agent.provider_concurrency``).
LLM_CALLS = "llm_calls"


def resource_name(provider: str) -> str:
    """The Snakemake resource of a provider's concurrency: ``llm_<provider>``."""
    return "llm_" + re.sub(r"\W+", "_", provider.lower()).strip("_")


def agent_job_resources(model: Mapping[str, Any], agent_cfg: Mapping[str, Any], runs: int) -> dict[str, int]:
    """What one agent job (one cell: ``runs`` runs of ``model``) declares to Snakemake.

    - ``llm_calls`` and ``llm_<provider>``: the runs it keeps in flight (``agent.concurrency``,
      capped by ``agent.provider_concurrency``); 0 for reference agents, which call no model.
      The workflow registers the configured limits as global resources, so they hold over
      every job at once; Snakemake lowers a job's share to the global value when that is
      smaller, and the job runs with the share it was given.
    - ``_threads``: processes (LiteLLM runs are spread over ``agent.workers`` processes, at most
      the job's share of calls; other backends run in one process).
    - ``gpu``: 1 for models served on the job's node (``local``, ``ollama``), else 0.
    - ``mem_mb`` and ``runtime`` (minutes): measured for reference agents; for models an upper
      estimate from the number of runs (a few minutes per run per slot; override with
      ``--set-resources run_agents:runtime=...``).
    """
    from .agents.backends import provider_of

    backend = str(model.get("backend", ""))
    provider = provider_of(model)
    if backend == "reference":
        return {"_threads": 1, LLM_CALLS: 0, resource_name(provider): 0, "gpu": 0, "mem_mb": 1000, "runtime": 30}
    limits = {str(k): int(v) for k, v in (agent_cfg.get("provider_concurrency") or {}).items()}
    slots = max(1, min(int(agent_cfg.get("concurrency", 8)), limits.get(provider, 1 << 30)))
    threads = 1
    if backend == "litellm":
        workers = agent_cfg.get("workers")
        threads = max(1, min(slots, int(workers) if workers is not None else 2))
    minutes_per_run = 2 if backend == "litellm" else 4
    return {
        "_threads": threads,
        LLM_CALLS: slots,
        resource_name(provider): slots,
        "gpu": 1 if backend in ("local", "ollama") else 0,
        "mem_mb": 1000 + 500 * threads + (3000 if backend == "local" else 0),
        "runtime": 30 + -(-runs * minutes_per_run // slots),
    }


def judge_job_resources(judge: Mapping[str, Any] | None, judge_cfg: Mapping[str, Any]) -> dict[str, int | str]:
    """What one judging job declares: an LLM judge holds ``judge.concurrency`` of its
    provider's resource (``llm_<provider>``; the workflow registers ``judge.concurrency`` as
    its global limit, so the judging jobs together keep that many verdicts in flight)."""
    if not judge or judge.get("kind") != "llm":
        return {"provider": "", "slots": 0}
    from .agents.backends import provider_of

    return {"provider": resource_name(provider_of({"backend": "litellm", **judge})), "slots": int(judge_cfg.get("concurrency") or 8)}
