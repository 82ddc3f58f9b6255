"""The runner: every (model, condition, pool, seed, task, arm) run of a study, each paid for once.

:func:`run_grid` plans the grid, reuses every finished record in the store, executes the
rest in one asyncio event loop and writes the run index (Parquet) and the run summary
(JSON). Decisions:

- **Reuse.** A stored record that finished (``error`` false) is reused as is. Records of
  backend errors are executed again on the next invocation. Runs of one grid that share an
  identity (same model behaviour, tool list, task and turn limit: e.g. an ablation run whose
  tool list the subtler pool did not change) are executed once and the record is copied to
  the others (``deduplicated``, counted as reused).
- **Claims.** A model run is executed only under a claim on its identity in the run store
  (:meth:`~.store.RunStore.try_claim`, a POSIX lock the kernel drops if the process dies), so
  concurrent invocations, shards and cluster jobs on one store never execute (and pay for)
  the same run (reference agents, free and deterministic, are not claimed): a run claimed
  elsewhere is put back and taken up when the claim is released, and then its record,
  finished by the other invocation, is reused (``reused``) instead of paid again.
- **Failures in sight.** A failure that outlives the retries is printed grouped by model and
  reason (``fake-gw: 12 runs failed: AuthenticationError (401) x 12``), with how many of them
  had failed in an earlier invocation too and which reasons are not transient (a refusal a
  retry cannot fix); it is counted per model in the summary (``per_model.<m>.failures``,
  ``failed_again``) and marks the index's retry gate (:func:`~.store.mark_retry_gate`) so that
  a plain ``snakemake``/``dvc repro`` retries it. ``agent.retries.rerun_failed`` says which
  failures mark the gate: ``all`` (default), ``transient`` (refusals for good are accepted
  as failed) or ``none``; a run that leaves none settles the gate.
- **Concurrency.** ``agent.concurrency`` model runs are in flight at once (one call in
  flight per run), raised to the sum of ``agent.provider_concurrency_max`` over the grid's
  providers when that is larger: the global cap never holds a provider's lane below what the
  provider allows. Each provider's calls go through one adaptive lane
  (:mod:`.adaptive`): it starts at ``agent.provider_concurrency[provider]`` (unlisted:
  ``concurrency``), grows while calls succeed up to ``provider_concurrency_max`` (unlisted:
  its start), shrinks on a 429 and pauses for the server's Retry-After;
  :func:`.adaptive.snapshot` reports each lane for a progress line. Reference agents need no
  slot: they run in their own lane, which yields to the event loop between runs.
- **Shards.** A litellm call costs ~5 ms of client CPU (litellm's request building, response
  parsing, success logging and cost lookup), so one event loop tops out near 150-200 calls/s
  whatever the latency. On Linux, litellm model runs are therefore spread over
  ``agent.workers`` processes (default: the CPU count; ``1`` keeps everything in this process;
  a study whose tools are MCP servers always runs in one process, one connection per server),
  forked after planning, each with its own event loop and its share of ``concurrency`` and of
  every provider lane's start and maximum (the shares sum to the configured limits; each
  shard's lane adapts on its own and publishes its state to shared memory for
  :func:`.adaptive.snapshot`; the number of shards never
  exceeds the smallest of them nor the number of runs). Shards claim runs from a shared
  cursor, share the response cache and the run store (atomic writes), report progress and
  spend through shared counters, and die with the parent (``PR_SET_PDEATHSIG``); the parent
  runs the reference lane meanwhile and writes the index and the summary. Grids with
  ``ollama``/``local`` models run in this process (their cost is the model, not the client).
- **Retries.** ``agent.retries`` (exponential backoff, full jitter, ``Retry-After``
  honoured up to ``max_delay_s``; only 408/409/429/5xx, timeouts, connection errors and
  malformed replies). A failure that outlives them
  gives a record with ``error: true``, status ``error`` and a ``backend_error`` event.
- **Budget.** With ``agent.budget_usd`` set, no new model run starts once the spend of this
  invocation (costs litellm reports; unknown costs count 0; summed over all shards) reaches it. Finished records
  are kept, unstarted runs have no index row, the summary says ``budget_exhausted: true``
  and stderr says so; :func:`run_grid` returns normally (exit status 0), so the next
  invocation with a larger budget resumes where this one stopped.
- ``backend_calls`` counts requests sent to a backend in this invocation (retries included;
  a reference agent's turns count too, answered locally at no cost); ``cached_calls``
  counts responses served from the response cache.

The pieces: planning the grid and reusing what the store holds (:mod:`._plan`), the lanes
that execute it in one event loop (:mod:`._lanes`), the shard processes (:mod:`._shards`),
and the index, summary and failure lines (:mod:`._summary`); the ``agent`` section arrives
as one :class:`~.config.AgentConfig`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from ..errors import ConfigError, InputError
from ..store.jsonio import write_json
from ._lanes import Lanes, make_callers, run_here
from ._plan import Group, Planned, plan_grid, reuse_stored
from ._shards import ShardJob, exit_with_parent, n_shards, run_sharded
from ._summary import (
    INDEX_SCHEMA,
    ModelTally,
    Progress,
    RunSummary,
    accepted_failures,
    failure_lines,
    print_summary,
    tally_calls,
    tally_runs,
    write_index,
)
from .cache import ResponseCache
from .calls import CallStats, RetryPolicy, SpendLedger
from .config import AgentConfig
from .loop import Environment, default_environment
from .protocol import Backend, make_backend
from .secrets import register_secret_envs
from .store import RunStore, mark_retry_gate

__all__ = [
    "INDEX_SCHEMA", "ModelTally", "RunSummary", "check_api_keys", "exit_with_parent", "failure_lines", "plan_grid", "run_grid",
]


def check_api_keys(models: Sequence[Mapping[str, Any]], source: str = "params.yaml") -> None:
    """Refuse to start when a model names an API-key variable that is not set.

    Otherwise every one of its runs would end as a backend error; the key's value is never
    read here beyond checking that it is there.
    """
    for i, m in enumerate(models):
        var = m.get("api_key_env")
        if m.get("backend") in ("litellm", "local") and var and not os.environ.get(str(var)):
            raise ConfigError(source, f"models[{i}].api_key_env",
                              f"environment variable {var} is not set (model {m.get('name')!r}); export it or remove api_key_env")


def run_grid(
    models: list[dict[str, Any]],
    tasks_path: str | Path,
    pools: dict[str, dict[str, Any]],
    seeds: list[int],
    agent_cfg: AgentConfig | Mapping[str, Any],
    store_dir: str | Path,
    index_out: str | Path,
    summary_out: str | Path,
    *,
    progress: bool = True,
    env: Environment | None = None,
    tasks: Sequence[Any] | None = None,
    log: TextIO | None = None,
    retry_gate: str | Path | None = None,
    environment: Mapping[str, Any] | None = None,
    tools_path: str | Path | None = None,
    ledger: SpendLedger | None = None,
) -> RunSummary:
    """Run (or reuse) every run of the grid; write the index and the summary. See the module doc.

    ``agent_cfg``: the ``agent`` section (an :class:`~.config.AgentConfig`, or its mapping:
    validated here, missing keys at the schema's defaults).

    ``retry_gate``: the index's retry gate (:func:`~.store.retry_gate_path`), marked when runs
    failed so that the run rule is out of date until none do. ``environment`` (params.yaml
    ``environment``) and ``tools_path`` (the exported tools, ``results/tools.json``): with
    ``kind: mcp`` the real tools are the user's MCP servers (:mod:`canarykit.mcp.environments`),
    started only if a run has to be executed, and stopped at the end; with ``kind: bfcl``
    BFCL's classes, a fresh world per run (:mod:`canarykit.bfcl.environment`). ``ledger``: the invocation's
    spend ledger when the grid is one of many jobs (the workflow runs one per cell), so that
    ``agent.budget_usd`` bounds the spend of all of them together.
    """
    t0 = time.monotonic()
    out = log if log is not None else sys.stderr
    agent = AgentConfig.parse(agent_cfg)
    check_api_keys(models)
    tool_defs: list[dict[str, Any]] | None = None
    kind = (environment or {}).get("kind")
    if environment is not None and kind in ("mcp", "bfcl"):
        from ..mcp.environments import make_environment, tools_of
        from ..store.jsonio import read_json_input

        if tools_path is None:
            raise InputError("params.yaml", "environment", f"an environment of kind {kind} needs its exported tools "
                                                           "(results/tools.json)")
        document = read_json_input(tools_path, "tools file")
        tool_defs = tools_of(document, str(tools_path))
        if env is None and kind == "bfcl":  # BFCL's classes, a fresh world per run (canarykit.bfcl)
            from ..bfcl.environment import make_environment as bfcl_environment

            env = bfcl_environment(environment, document)
        elif env is None:
            errlogs = Path(summary_out).parent / "mcp-servers"
            env = make_environment(environment, document, tools_source=str(tools_path), errlog_dir=errlogs,
                                   job=summary_out)
    if tasks is None:
        from ..tasks.tasks import load_tasks

        tasks = load_tasks(tasks_path, tools=tool_defs)
    env = env or default_environment()
    try:
        return _run_grid(models, tasks, pools, seeds, agent, store_dir, index_out, summary_out, progress=progress,
                         env=env, out=out, retry_gate=retry_gate, t0=t0, ledger=ledger)
    finally:
        if env.close is not None:
            env.close()


def _run_grid(
    models: list[dict[str, Any]],
    tasks: Sequence[Any],
    pools: dict[str, dict[str, Any]],
    seeds: list[int],
    agent: AgentConfig,
    store_dir: str | Path,
    index_out: str | Path,
    summary_out: str | Path,
    *,
    progress: bool,
    env: Environment,
    out: TextIO,
    retry_gate: str | Path | None,
    t0: float,
    ledger: SpendLedger | None,
) -> RunSummary:
    """Plan the grid, reuse what the store holds, execute the rest, then count and report."""
    planned = plan_grid(models, tasks, pools, seeds, agent.max_turns, env.identity)
    register_secret_envs(m.get("api_key_env") for m in models)
    store = RunStore(store_dir)
    summary = RunSummary(total=len(planned), budget_usd=agent.budget_usd, rerun_failed=agent.retries.rerun_failed)
    for m in models:
        summary.per_model.setdefault(str(m["name"]), ModelTally())
    todo = reuse_stored(planned, store)
    bar = Progress(summary.total, out if progress else None)
    bar.done = sum(p.found is not None for p in planned)
    stats = _execute(todo, models, agent, store, store_dir, env, bar, summary, ledger)
    _finish(summary, planned, models, stats, index_out, summary_out, retry_gate, t0)
    print_summary(summary, bar, out, progress=progress)
    return summary


def _execute(
    todo: Sequence[Group],
    models: Sequence[Mapping[str, Any]],
    agent: AgentConfig,
    store: RunStore,
    store_dir: str | Path,
    env: Environment,
    bar: Progress,
    summary: RunSummary,
    ledger: SpendLedger | None,
) -> dict[int, CallStats]:
    """Execute the groups left to run (each model's backend built only if it has one); the
    call counters per model index."""
    if todo and env.check is not None:
        env.check()  # start the tool servers now: a server that cannot start stops the job in one line
    needed = sorted({g[0].model_idx for g in todo})
    backends: dict[int, Backend] = {mi: make_backend(models[mi], agent) for mi in needed}
    cache = ResponseCache(agent.response_cache_dir(store_dir))
    retry = RetryPolicy.from_config(agent.retries)
    stats = {mi: CallStats() for mi in needed}
    lanes = Lanes(backends, make_callers(backends, stats, cache, retry, agent.timeout_s), store, env, agent.timeout_s)
    providers = {g[0].model_idx: g[0].provider for g in todo}
    ref_groups = [g for g in todo if backends[g[0].model_idx].kind == "reference"]
    model_groups = [g for g in todo if backends[g[0].model_idx].kind != "reference"]
    # A blocking (MCP) environment keeps one connection per server for the whole invocation:
    # shards would start their own server instances (and a stateful server would diverge).
    shards = 1 if env.blocking else n_shards(agent, model_groups, backends)
    if any(backends[g[0].model_idx].kind in ("litellm", "local") for g in model_groups):
        from .backends import import_litellm

        # Once, here, before any event loop and any timed call (10-17 s on a loaded machine):
        # shards inherit it, and no first call spends its timeout on the import. (Callers of
        # the model layer elsewhere import it through the backend's prepare().)
        import_litellm()
    try:
        if shards > 1:
            model_backends = {g[0].model_idx: backends[g[0].model_idx] for g in model_groups}
            job = ShardJob(model_groups, model_backends, {mi: providers[mi] for mi in model_backends}, cache, retry, store, env,
                           agent, ledger, shards)
            asyncio.run(run_sharded(job, ref_groups, lanes, bar, summary))
        elif todo:
            summary.budget_exhausted = run_here(ref_groups, model_groups, lanes, providers, agent, ledger, bar)
    finally:
        for b in backends.values():
            close = getattr(b, "close", None)
            if callable(close):
                with contextlib.suppress(Exception):
                    close()
    return stats


def _finish(
    summary: RunSummary,
    planned: Sequence[Planned],
    models: Sequence[Mapping[str, Any]],
    stats: Mapping[int, CallStats],
    index_out: str | Path,
    summary_out: str | Path,
    retry_gate: str | Path | None,
    t0: float,
) -> None:
    """Count every run and call, write the index and the summary, mark the retry gate."""
    rows = tally_runs(summary, planned, models)
    tally_calls(summary, stats, models)
    write_index(rows, index_out)
    summary.elapsed_s = time.monotonic() - t0
    accepted = accepted_failures(summary)
    write_json(summary_out, summary.to_dict())
    if retry_gate is not None:
        mark_retry_gate(retry_gate, index_out, summary.failed, retry=summary.retry_pending, accepted=accepted,
                        policy=summary.rerun_failed)
