"""The runner: every (model, condition, pool, seed, task) run of a study, each paid for once.

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
- **Concurrency.** ``agent.concurrency`` model runs are in flight at once (a global
  semaphore; one call in flight per run), and each provider's calls are also bounded by
  ``agent.provider_concurrency[provider]`` when given. Reference agents need no slot: they
  run in their own lane, which yields to the event loop between runs.
- **Shards.** A litellm call costs ~5 ms of client CPU (litellm's request building, response
  parsing, success logging and cost lookup), so one event loop tops out near 150-200 calls/s
  whatever the latency. On Linux, litellm model runs are therefore spread over
  ``agent.workers`` processes (default: the CPU count; ``1`` keeps everything in this process;
  a study whose tools are MCP servers always runs in one process, one connection per server),
  forked after planning, each with its own event loop and its share of ``concurrency`` and of
  every provider limit (the shares sum to the configured limits; the number of shards never
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
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ctypes
import io
import itertools
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

import polars as pl

from ..errors import ConfigError, InputError
from ..jsonio import atomic_write_bytes, write_json
from ..records import RunRecord
from .cache import ResponseCache
from .calls import CallStats, ModelCaller, RetryPolicy, SpendLedger
from .loop import Environment, RunSpec, _now, default_environment, run_one, toolset_from_assembly
from .protocol import Backend, is_transient_reason, make_backend
from .secrets import register_secret_envs
from .store import RERUN_FAILED, RunStore, mark_retry_gate, model_identity

#: Backends whose model runs may be sharded over processes: their calls cost client CPU
#: (litellm's request building, response parsing, logging and cost lookup), not a local model.
SHARDED_KINDS = frozenset({"litellm"})
_PR_SET_PDEATHSIG = 1  # prctl(2) option: the signal a child gets when its parent dies

INDEX_SCHEMA: dict[str, Any] = {
    "model": pl.String, "group": pl.String, "backend": pl.String, "provider": pl.String,
    "condition": pl.String, "pool": pl.String, "seed": pl.Int64, "task_id": pl.String,
    "difficulty": pl.String, "run_id": pl.String, "identity_hash": pl.String, "status": pl.String,
    "error": pl.Boolean, "executed": pl.Boolean,
}


#: Seconds between two attempts to claim a run another invocation is executing.
CLAIM_POLL_S = 0.25


@dataclass
class ModelTally:
    executed: int = 0
    reused: int = 0
    deduplicated: int = 0
    failed: int = 0
    skipped: int = 0
    total: int = 0
    backend_calls: int = 0
    cached_calls: int = 0
    retries: int = 0
    cost_usd: float = 0.0
    #: failed runs by reason (``ErrorType (status)``)
    failures: dict[str, int] = field(default_factory=dict)
    #: failed runs that had failed in an earlier invocation too
    failed_again: int = 0


@dataclass
class RunSummary(ModelTally):
    """The counts of :class:`ModelTally` over the whole grid, plus the invocation's facts."""

    budget_usd: float | None = None
    budget_exhausted: bool = False
    #: ``agent.retries.rerun_failed``, and the failed runs that keep the job out of date under it
    rerun_failed: str = "all"
    retry_pending: int = 0
    elapsed_s: float = 0.0
    per_model: dict[str, ModelTally] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["cost_usd"] = round(self.cost_usd, 8)
        d["elapsed_s"] = round(self.elapsed_s, 3)
        for t in d["per_model"].values():
            t["cost_usd"] = round(t["cost_usd"], 8)
        return d


@dataclass
class _Planned:
    spec: RunSpec
    model_idx: int
    provider: str
    status: str | None = None
    error: bool = False
    executed: bool = False
    copied: bool = False  # a copy of a run executed in this invocation (same identity)
    late: bool = False  # finished by another invocation while this one waited for its claim
    reason: str | None = None  # ErrorType (status) of a failed run
    failed_before: bool = False  # a failed record of this run was in the store when it started


class _Progress:
    """At most one line every ``every_s`` seconds on stderr, plus a final line."""

    def __init__(self, total: int, out: TextIO | None, every_s: float = 2.0) -> None:
        self.total, self.out, self.every_s = total, out, every_s
        self.t0 = self.last = time.monotonic()
        self.done = self.errors = 0
        self.spend = 0.0

    def tick(self, n: int = 1, error: bool = False, force: bool = False, errors: int = 0) -> None:
        self.done += n
        self.errors += int(error) + errors
        now = time.monotonic()
        if self.out is not None and (force or now - self.last >= self.every_s):
            self.last = now
            rate = self.done / max(now - self.t0, 1e-9)
            print(f"[canarykit runs] {self.done}/{self.total} done, {rate:.1f}/s, {self.errors} errors, spend ${self.spend:.4f}",
                  file=self.out, flush=True)


def _load_pool_records(path: str | Path) -> dict[str, Mapping[str, Any]]:
    """The pool's canaries and controls by id."""
    from ..canaries import load_pool_document

    doc = load_pool_document(path)
    return {str(c["id"]): c for c in [*doc["canaries"], *doc["controls"]]}


def plan_grid(
    models: Sequence[Mapping[str, Any]],
    tasks: Sequence[Any],
    pools: Mapping[str, Mapping[str, Any]],
    seeds: Sequence[int],
    max_turns: int,
    environment: Any = None,
) -> list[_Planned]:
    """Every run of the grid, in (model, pool, condition, seed, task) order. ``environment``:
    the tool environment's identity (``None``: the built-in tools)."""
    from ..assembly import load_assemblies
    from .backends import provider_of

    prepared: list[tuple[str, str, int, Any, Any]] = []
    for pool, cfg in pools.items():
        canaries = _load_pool_records(cfg["canaries"])
        # one assembly file, or several (the workflow assembles one file per pool and seed)
        sources = [cfg["assembly"]] if isinstance(cfg["assembly"], str | Path) else list(cfg["assembly"])
        assemblies = {k: a for src in sources for k, a in load_assemblies(src).items()}
        for cond in cfg["conditions"]:
            for seed in seeds:
                for task in tasks:
                    a = assemblies.get((cond, int(seed), task.id))
                    if a is None:
                        raise InputError(", ".join(map(str, sources)), f"{cond}/{seed}/{task.id}", f"no assembly for this run (pool {pool!r}); re-run the assembly stage")
                    try:
                        ts = toolset_from_assembly(a, canaries, scope=pool)
                    except KeyError as exc:
                        raise InputError(str(cfg["canaries"]), "id", str(exc)) from exc
                    prepared.append((pool, cond, int(seed), task, ts))
    planned: list[_Planned] = []
    for mi, spec in enumerate(models):
        ident = model_identity(spec)
        provider = provider_of(spec)
        for pool, cond, seed, task, ts in prepared:
            rs = RunSpec(spec, task, cond, pool, seed, ts, max_turns, model_ident=ident, environment=environment)
            planned.append(_Planned(rs, mi, provider))
    return planned


def _fast_finished(store: RunStore, run_id: str) -> dict[str, Any] | None:
    """The stored record's JSON if it finished without error (plain parse: our own files)."""
    return store.finished_json(run_id)


def _relabel(record: RunRecord, spec: RunSpec) -> RunRecord:
    return replace(
        record, run_id=spec.run_id, model=str(spec.model["name"]), group=str(spec.model.get("group", "")),
        condition=spec.condition, pool=spec.pool, seed=int(spec.seed), task_id=str(spec.task.id),
        difficulty=str(spec.task.difficulty), created_at=_now(),
    )


class _Shared:
    """State the shard processes share with the parent: a work cursor, progress and spend."""

    def __init__(self, ctx: Any) -> None:
        self.cursor = ctx.Value("q", 0)  # index of the next unclaimed model group
        self.done = ctx.Value("q", 0)  # runs finished (copies included)
        self.errors = ctx.Value("q", 0)
        self.spend = ctx.Value("d", 0.0)  # USD reported by all shards

    def claim(self) -> int:
        with self.cursor.get_lock():
            i = int(self.cursor.value)
            self.cursor.value = i + 1
        return i


def _share(total: int, n: int, k: int) -> int:
    """Shard ``k``'s part of ``total`` split over ``n`` shards (the parts sum to ``total``)."""
    return total // n + (1 if k < total % n else 0)


def failure_reason(rec: RunRecord) -> str | None:
    """``ErrorType (status)`` of a failed run (from its ``backend_error`` event)."""
    if not rec.error:
        return None
    ev = next((e for e in reversed(rec.events) if e.kind == "backend_error"), None)
    if ev is None:
        return "BackendError"
    kind = ev.error_type or "BackendError"
    return f"{kind} ({ev.status_code})" if ev.status_code else kind


def _save_group(store: RunStore, group: list[_Planned], rec: RunRecord) -> None:
    store.save(rec)
    head = group[0]
    reason = failure_reason(rec)
    head.status, head.error, head.executed, head.reason = rec.status, rec.error, True, reason
    for other in group[1:]:
        clone = _relabel(rec, other.spec)
        store.save(clone)
        other.status, other.error, other.copied, other.reason = clone.status, clone.error, True, reason


def _reuse_if_finished(store: RunStore, group: list[_Planned]) -> bool:
    """Under the claim: if another invocation finished this identity meanwhile, reuse it."""
    head = group[0]
    hit = _fast_finished(store, head.spec.run_id)
    if hit is None:
        return False
    source: RunRecord | None = None
    for p in group:
        found = hit if p is head else _fast_finished(store, p.spec.run_id)
        if found is None:
            source = source or store.load(head.spec.run_id)
            if source is None or source.error:  # pragma: no cover - replaced under our feet
                return False
            clone = _relabel(source, p.spec)
            store.save(clone)
            status = clone.status
        else:
            status = found["status"]
        p.status, p.error, p.late = status, False, True
    return True


async def _run_claimed(
    g: list[_Planned], store: RunStore, backend: Backend, caller: ModelCaller, env: Environment, timeout_s: float,
) -> tuple[str, RunRecord | None]:
    """Run one identity group under its claim: ``("deferred", None)`` when another process
    holds it, ``("reused", None)`` when another invocation finished it, else
    ``("executed", record)``. The file work runs in a thread (the event loop stays free)."""
    head = g[0]
    claim = await asyncio.to_thread(store.try_claim, head.spec.identity_hash)
    if claim is None:
        return "deferred", None
    try:
        if await asyncio.to_thread(_reuse_if_finished, store, g):
            return "reused", None
        rec = await run_one(head.spec, backend, caller=caller, env=env, timeout_s=timeout_s)
        await asyncio.to_thread(_save_group, store, g, rec)  # fsyncs
        return "executed", rec
    finally:
        claim.release()


async def _model_lane(
    groups: Sequence[list[_Planned]],
    next_index: Callable[[], int],
    slots: int,
    backends: Mapping[int, Backend],
    callers: Mapping[int, ModelCaller],
    store: RunStore,
    env: Environment,
    timeout_s: float,
    over_budget: Callable[[], bool],
    on_done: Callable[[list[_Planned], RunRecord | None, str], None],
) -> bool:
    """Run model groups, ``slots`` at a time, taking each with ``next_index()`` (an index into
    ``groups``; past the end means no new work) and running it under its claim; groups
    claimed elsewhere wait in a queue and are retried every :data:`CLAIM_POLL_S` seconds.
    True if the budget stopped it."""
    exhausted = False
    waiting: collections.deque[list[_Planned]] = collections.deque()
    cursor_done = False

    async def worker() -> None:
        nonlocal exhausted, cursor_done
        while True:
            if over_budget():
                exhausted = True
                return
            g: list[_Planned] | None = None
            if not cursor_done:
                i = next_index()
                if i < len(groups):
                    g = groups[i]
                else:
                    cursor_done = True
            if g is None:
                if not waiting:
                    return
                g = waiting.popleft()
            head = g[0]
            how, rec = await _run_claimed(g, store, backends[head.model_idx], callers[head.model_idx], env, timeout_s)
            if how == "deferred":
                waiting.append(g)
                if cursor_done:
                    await asyncio.sleep(CLAIM_POLL_S)
                continue
            on_done(g, rec, how)

    await asyncio.gather(*(worker() for _ in range(min(slots, len(groups)))))
    return exhausted


async def _reference_lane(
    groups: Sequence[list[_Planned]],
    backends: Mapping[int, Backend],
    callers: Mapping[int, ModelCaller],
    store: RunStore,
    env: Environment,
    timeout_s: float,
    progress: _Progress,
) -> None:
    """Reference agents: no slot, no I/O wait; yield to the event loop every 32 runs.

    They are not claimed: a claim costs about as much as a reference run (a lock file created
    and removed), and they pay nothing and answer deterministically, so two invocations
    computing one at once would only write the same record twice.
    """
    for i, g in enumerate(groups):
        head = g[0]
        rec = await run_one(head.spec, backends[head.model_idx], caller=callers[head.model_idx], env=env, timeout_s=timeout_s)
        _save_group(store, g, rec)
        progress.tick(len(g), error=rec.error)
        if i % 32 == 31:
            await asyncio.sleep(0)


def _make_callers(
    backends: Mapping[int, Backend], stats: Mapping[int, CallStats], cache: ResponseCache, retry: RetryPolicy, timeout_s: float,
) -> dict[int, ModelCaller]:
    return {mi: ModelCaller(b, cache=cache, retry=retry, limiter=None, stats=stats[mi], timeout_s=timeout_s) for mi, b in backends.items()}


def _limit_callers(callers: Mapping[int, ModelCaller], providers: Mapping[int, str], limits: Mapping[str, int]) -> None:
    """Bound each provider's calls (semaphores bind to the running loop: call this inside it)."""
    sems = {k: asyncio.Semaphore(max(1, n)) for k, n in limits.items()}
    for mi, c in callers.items():
        c.limiter = sems.get(providers[mi])


def exit_with_parent(poll_s: float = 1.0) -> threading.Thread | None:
    """End this process when the process that started it dies (e.g. ``kill -9`` of Snakemake).

    Without it a killed ``snakemake`` leaves its run job behind, still spending on model calls.
    A daemon thread watches ``getppid()`` (it changes only when the parent process dies; a
    parent *thread* ending does not matter, unlike ``PR_SET_PDEATHSIG``) and sends this
    process SIGTERM. Finished records are on disk (atomic writes), claims die with the
    process, and the resume command re-executes only what is missing.
    """
    parent = os.getppid()
    if parent <= 1:
        return None

    def watch() -> None:
        while True:
            time.sleep(poll_s)
            if os.getppid() != parent:
                print("[canarykit runs] the parent process died: stopping (resume: see README, 'Failures and resuming')",
                      file=sys.stderr, flush=True)
                os.kill(os.getpid(), signal.SIGTERM)
                return

    t = threading.Thread(target=watch, name="canarykit-parent-watch", daemon=True)
    t.start()
    return t


def _die_with_parent(parent_pid: int) -> None:
    """Have the kernel kill this shard when the parent dies (a killed study stops at once)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:
        os._exit(1)


@dataclass
class _ShardJob:
    """Everything a shard needs; inherited through ``fork``, never pickled."""

    groups: list[list[_Planned]]
    backends: dict[int, Backend]
    providers: dict[int, str]
    cache: ResponseCache
    retry: RetryPolicy
    store: RunStore
    env: Environment
    timeout_s: float
    concurrency: int
    provider_limits: dict[str, int]
    budget: float | None
    ledger: SpendLedger | None
    shared: _Shared
    n: int
    parent_pid: int


def _shard_main(job: _ShardJob, k: int, conn: Any) -> None:
    """One shard process: its share of the slots and provider limits, its own event loop."""
    _die_with_parent(job.parent_pid)
    try:
        stats = {mi: CallStats() for mi in job.backends}
        callers = _make_callers(job.backends, stats, job.cache, job.retry, job.timeout_s)
        done: list[tuple[int, list[tuple[str | None, bool]], str, str | None]] = []
        position = {id(g): i for i, g in enumerate(job.groups)}
        reported = 0.0
        shared = job.shared

        def local_spend() -> float:
            return sum(s.cost_usd for s in stats.values())

        def over_budget() -> bool:
            if job.budget is None:
                return False
            others = job.ledger.others() if job.ledger is not None else 0.0
            return shared.spend.value - reported + local_spend() + others >= job.budget

        def on_done(g: list[_Planned], rec: RunRecord | None, how: str) -> None:
            nonlocal reported
            done.append((position[id(g)], [(p.status, p.error) for p in g], how, g[0].reason))
            spend = local_spend()
            with shared.spend.get_lock():
                shared.spend.value += spend - reported
            reported = spend
            with shared.done.get_lock():
                shared.done.value += len(g)
            if rec is not None and rec.error:
                with shared.errors.get_lock():
                    shared.errors.value += 1

        async def main() -> bool:
            _limit_callers(callers, job.providers, {p: _share(n, job.n, k) for p, n in job.provider_limits.items()})
            return await _model_lane(job.groups, shared.claim, _share(job.concurrency, job.n, k), job.backends, callers,
                                     job.store, job.env, job.timeout_s, over_budget, on_done)

        exhausted = asyncio.run(main())
        counts = {mi: (s.backend_calls, s.cached_calls, s.retries, s.cost_usd) for mi, s in stats.items()}
        conn.send(("ok", done, counts, exhausted))
    except BaseException as exc:  # reported to the parent, which raises it
        with contextlib.suppress(Exception):
            conn.send(("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-4000:]}"))
        raise
    finally:
        conn.close()


def _n_shards(agent_cfg: Mapping[str, Any], model_groups: Sequence[list[_Planned]], backends: Mapping[int, Backend],
              provider_limits: Mapping[str, int]) -> int:
    """How many processes to run the model groups in (1: in this process). See the module doc."""
    workers = agent_cfg.get("workers")
    n = int(workers) if workers is not None else (os.cpu_count() or 1)
    if n <= 1 or not model_groups or sys.platform != "linux" or "fork" not in mp.get_all_start_methods():
        return 1
    if any(backends[g[0].model_idx].kind not in SHARDED_KINDS for g in model_groups):
        return 1
    caps = [n, max(1, int(agent_cfg.get("concurrency", 8))), len(model_groups)]
    caps += [max(1, provider_limits[p]) for p in {g[0].provider for g in model_groups} if p in provider_limits]
    return min(caps)


async def _run_sharded(
    job: _ShardJob,
    ref_groups: Sequence[list[_Planned]],
    backends: Mapping[int, Backend],
    callers: Mapping[int, ModelCaller],
    stats: dict[int, CallStats],
    progress: _Progress,
    summary: RunSummary,
) -> None:
    """Fork ``job.n`` shards for the model groups; run the reference lane here meanwhile."""
    ctx = mp.get_context("fork")
    procs: list[Any] = []
    conns: dict[int, Any] = {}
    try:
        for k in range(job.n):
            recv, send = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_shard_main, args=(job, k, send), name=f"canarykit-shard-{k}", daemon=True)
            proc.start()
            send.close()
            procs.append(proc)
            conns[k] = recv
        failures: list[str] = []
        seen = [0, 0]

        def sync_progress() -> None:
            done, errors = int(job.shared.done.value), int(job.shared.errors.value)
            progress.spend = float(job.shared.spend.value)
            if job.ledger is not None:
                job.ledger.report(progress.spend)
            progress.tick(done - seen[0], errors=errors - seen[1])
            seen[0], seen[1] = done, errors

        def take(k: int, msg: Any) -> None:
            if msg[0] != "ok":
                failures.append(str(msg[1]))
                return
            _, done, counts, exhausted = msg
            for gi, states, how, reason in done:
                g = job.groups[gi]
                for j, (p, (status, error)) in enumerate(zip(g, states, strict=True)):
                    p.status, p.error, p.reason = status, error, reason
                    if how == "reused":
                        p.late = True
                    elif j == 0:
                        p.executed = True
                    else:
                        p.copied = True
            for mi, (calls, cached, retries, cost) in counts.items():
                s = stats[mi]
                s.backend_calls += calls
                s.cached_calls += cached
                s.retries += retries
                s.cost_usd += cost
            summary.budget_exhausted = summary.budget_exhausted or bool(exhausted)

        async def watch() -> None:
            while conns:
                for k, conn in list(conns.items()):
                    msg: Any = None
                    if conn.poll():
                        try:
                            msg = conn.recv()
                        except EOFError:
                            msg = ("error", f"shard {k} exited with status {procs[k].exitcode} and no result")
                    elif not procs[k].is_alive():
                        msg = conn.recv() if conn.poll() else ("error", f"shard {k} exited with status {procs[k].exitcode} and no result")
                    if msg is not None:
                        take(k, msg)
                        conn.close()
                        del conns[k]
                sync_progress()
                if conns:
                    await asyncio.sleep(0.05)

        await asyncio.gather(_reference_lane(ref_groups, backends, callers, job.store, job.env, job.timeout_s, progress), watch())
        if failures:
            raise RuntimeError("a shard of the model runs failed:\n" + "\n".join(failures))
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
            proc.join()
        for conn in conns.values():
            conn.close()


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
    agent_cfg: dict[str, Any],
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

    ``retry_gate``: the index's retry gate (:func:`~.store.retry_gate_path`), marked when runs
    failed so that the run rule is out of date until none do. ``environment`` (params.yaml
    ``environment``) and ``tools_path`` (the exported tools, ``results/tools.json``): with
    ``kind: mcp`` the real tools are the user's MCP servers (:mod:`canarykit.environments`),
    started only if a run has to be executed, and stopped at the end. ``ledger``: the invocation's
    spend ledger when the grid is one of many jobs (the workflow runs one per cell), so that
    ``agent.budget_usd`` bounds the spend of all of them together.
    """
    t0 = time.monotonic()
    out = log if log is not None else sys.stderr
    check_api_keys(models)
    tool_defs: list[dict[str, Any]] | None = None
    if environment is not None and environment.get("kind") == "mcp":
        from ..environments import make_environment, tools_of
        from ..jsonio import read_json_input

        if tools_path is None:
            raise InputError("params.yaml", "environment", "an MCP environment needs its exported tools (results/tools.json)")
        document = read_json_input(tools_path, "tools file")
        tool_defs = tools_of(document, str(tools_path))
        if env is None:
            errlogs = Path(summary_out).parent / "mcp-servers"
            env = make_environment(environment, document, tools_source=str(tools_path), errlog_dir=errlogs)
    if tasks is None:
        from ..tasks import load_tasks

        tasks = load_tasks(tasks_path, tools=tool_defs)
    env = env or default_environment()
    try:
        return _run_grid(models, tasks, pools, seeds, agent_cfg, store_dir, index_out, summary_out, progress=progress,
                         env=env, out=out, retry_gate=retry_gate, t0=t0, ledger=ledger)
    finally:
        if env.close is not None:
            env.close()


def _run_grid(
    models: list[dict[str, Any]],
    tasks: Sequence[Any],
    pools: dict[str, dict[str, Any]],
    seeds: list[int],
    agent_cfg: dict[str, Any],
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
    max_turns = int(agent_cfg.get("max_turns", 12))
    rerun_failed = str((agent_cfg.get("retries") or {}).get("rerun_failed") or "all")
    if rerun_failed not in RERUN_FAILED:
        raise ConfigError("params.yaml", "agent.retries.rerun_failed", f"{rerun_failed!r} is not one of {list(RERUN_FAILED)}")
    planned = plan_grid(models, tasks, pools, seeds, max_turns, env.identity)
    register_secret_envs(m.get("api_key_env") for m in models)
    store = RunStore(store_dir)
    summary = RunSummary(total=len(planned), budget_usd=agent_cfg.get("budget_usd"), rerun_failed=rerun_failed)
    for m in models:
        summary.per_model.setdefault(str(m["name"]), ModelTally())

    # Reuse what the store holds; group what is left by identity.
    groups: dict[tuple[int, str], list[_Planned]] = {}
    done_by_identity: dict[tuple[int, str], _Planned] = {}
    for p in planned:
        hit = _fast_finished(store, p.spec.run_id)
        if hit is not None:
            p.status, p.error = hit["status"], False
            done_by_identity.setdefault((p.model_idx, p.spec.identity_hash), p)
            summary.reused += 1
            summary.per_model[str(models[p.model_idx]["name"])].reused += 1
    todo: list[list[_Planned]] = []
    for p in planned:
        if p.status is not None:
            continue
        p.failed_before = store.path(p.spec.run_id).exists()  # a record, but not a finished one
        key = (p.model_idx, p.spec.identity_hash)
        src = done_by_identity.get(key)
        # An identical run is stored: one of this grid, or any finished run of this identity
        # (labels are not part of it: a renamed model, a list both pools share). Copy it.
        rec = store.load(src.spec.run_id) if src is not None else store.finished_by_identity(p.spec.identity_hash)
        if rec is not None and not rec.error:
            clone = _relabel(rec, p.spec)
            store.save(clone)
            p.status, p.error = clone.status, clone.error
            done_by_identity.setdefault(key, p)
            summary.reused += 1
            summary.deduplicated += 1
            tally = summary.per_model[str(models[p.model_idx]["name"])]
            tally.reused += 1
            tally.deduplicated += 1
            continue
        if key in groups:
            groups[key].append(p)
        else:
            groups[key] = [p]
            todo.append(groups[key])

    if todo and env.check is not None:
        env.check()  # start the tool servers now: a server that cannot start stops the job in one line
    needed = sorted({g[0].model_idx for g in todo})
    backends: dict[int, Backend] = {mi: make_backend(models[mi], agent_cfg) for mi in needed}
    cache = ResponseCache(agent_cfg.get("cache_dir") or Path(store_dir).parent / "cache" / "responses")
    retry = RetryPolicy.from_config(agent_cfg.get("retries"))
    provider_limits = {str(k): int(v) for k, v in (agent_cfg.get("provider_concurrency") or {}).items()}
    timeout_s = float(agent_cfg.get("timeout_s", 120))
    concurrency = max(1, int(agent_cfg.get("concurrency", 8)))
    budget = agent_cfg.get("budget_usd")
    budget_f = float(budget) if budget is not None else None
    stats = {mi: CallStats() for mi in needed}
    callers = _make_callers(backends, stats, cache, retry, timeout_s)
    providers = {g[0].model_idx: g[0].provider for g in todo}
    ref_groups = [g for g in todo if backends[g[0].model_idx].kind == "reference"]
    model_groups = [g for g in todo if backends[g[0].model_idx].kind != "reference"]
    # A blocking (MCP) environment keeps one connection per server for the whole invocation:
    # shards would start their own server instances (and a stateful server would diverge).
    n_shards = 1 if env.blocking else _n_shards(agent_cfg, model_groups, backends, provider_limits)
    bar = _Progress(summary.total, out if progress else None)
    bar.done = summary.reused
    if any(backends[g[0].model_idx].kind in ("litellm", "local") for g in model_groups):
        from .backends import import_litellm

        # Once, here, before any event loop and any timed call (10-17 s on a loaded machine):
        # shards inherit it, and no first call spends its timeout on the import. (Callers of
        # the model layer elsewhere import it through the backend's prepare().)
        import_litellm()
    try:
        if n_shards > 1:
            model_backends = {g[0].model_idx: backends[g[0].model_idx] for g in model_groups}
            job = _ShardJob(model_groups, model_backends, {mi: providers[mi] for mi in model_backends}, cache, retry, store, env,
                            timeout_s, concurrency, provider_limits, budget_f, ledger, _Shared(mp.get_context("fork")), n_shards,
                            os.getpid())
            asyncio.run(_run_sharded(job, ref_groups, backends, callers, stats, bar, summary))
        elif todo:
            cursor = itertools.count()

            def spent() -> float:
                return sum(s.cost_usd for s in stats.values())

            def on_done(g: list[_Planned], rec: RunRecord | None, how: str) -> None:
                bar.spend = spent()
                if ledger is not None:
                    ledger.report(bar.spend)
                bar.tick(len(g), error=rec is not None and rec.error)

            def over_budget() -> bool:
                if budget_f is None:
                    return False
                return spent() + (ledger.others() if ledger is not None else 0.0) >= budget_f

            async def main() -> None:
                _limit_callers(callers, providers, provider_limits)
                lane = _model_lane(model_groups, lambda: next(cursor), concurrency, backends, callers, store, env, timeout_s,
                                   over_budget, on_done)
                _, exhausted = await asyncio.gather(_reference_lane(ref_groups, backends, callers, store, env, timeout_s, bar), lane)
                summary.budget_exhausted = exhausted

            asyncio.run(main())
    finally:
        for b in backends.values():
            close = getattr(b, "close", None)
            if callable(close):
                with contextlib.suppress(Exception):
                    close()

    # Tally and write the index.
    rows: list[dict[str, Any]] = []
    for p in planned:
        name = str(models[p.model_idx]["name"])
        tally = summary.per_model[name]
        tally.total += 1
        if p.status is None:
            tally.skipped += 1
            summary.skipped += 1
            continue
        if p.executed:
            tally.executed += 1
            summary.executed += 1
        elif p.copied:  # a copy of a run executed in this invocation
            tally.reused += 1
            tally.deduplicated += 1
            summary.reused += 1
            summary.deduplicated += 1
        elif p.late:  # finished by a concurrent invocation while this one waited
            tally.reused += 1
            summary.reused += 1
        if p.error:
            tally.failed += 1
            summary.failed += 1
            reason = p.reason or "BackendError"
            tally.failures[reason] = tally.failures.get(reason, 0) + 1
            summary.failures[reason] = summary.failures.get(reason, 0) + 1
            if p.failed_before:
                tally.failed_again += 1
                summary.failed_again += 1
        spec = models[p.model_idx]
        rows.append({
            "model": name, "group": str(spec.get("group", "")), "backend": str(spec.get("backend", "")),
            "provider": p.provider, "condition": p.spec.condition, "pool": p.spec.pool, "seed": int(p.spec.seed),
            "task_id": str(p.spec.task.id), "difficulty": str(p.spec.task.difficulty), "run_id": p.spec.run_id,
            "identity_hash": p.spec.identity_hash, "status": p.status, "error": bool(p.error), "executed": p.executed,
        })
    for mi, s in stats.items():
        tally = summary.per_model[str(models[mi]["name"])]
        tally.backend_calls, tally.cached_calls, tally.retries, tally.cost_usd = s.backend_calls, s.cached_calls, s.retries, s.cost_usd
        summary.backend_calls += s.backend_calls
        summary.cached_calls += s.cached_calls
        summary.retries += s.retries
        summary.cost_usd += s.cost_usd
    _write_index(rows, index_out)
    summary.elapsed_s = time.monotonic() - t0
    accepted = {r: n for r, n in summary.failures.items() if not _keeps_out_of_date(r, rerun_failed)}
    summary.retry_pending = summary.failed - sum(accepted.values())
    write_json(summary_out, summary.to_dict())
    if retry_gate is not None:
        mark_retry_gate(retry_gate, index_out, summary.failed, retry=summary.retry_pending, accepted=accepted,
                        policy=rerun_failed)
    if progress:
        bar.spend = summary.cost_usd
        bar.tick(0, force=True)
        print(
            f"[canarykit runs] {summary.total} runs: {summary.executed} executed, {summary.reused} reused "
            f"({summary.deduplicated} copied from identical runs), {summary.failed} failed, {summary.skipped} not started; "
            f"{summary.backend_calls} backend calls, {summary.cached_calls} cached; ${summary.cost_usd:.4f}; {summary.elapsed_s:.1f} s",
            file=out, flush=True,
        )
        if summary.budget_exhausted:
            print(f"[canarykit runs] budget of ${summary.budget_usd} reached: {summary.skipped} runs were not started; "
                  "raise agent.budget_usd and re-run to resume", file=out, flush=True)
    for line in failure_lines(summary):
        print(line, file=out, flush=True)
    return summary


def _keeps_out_of_date(reason: str, rerun_failed: str) -> bool:
    """Whether a run that failed for ``reason`` keeps its job out of date under the policy."""
    if rerun_failed == "all":
        return True
    return rerun_failed == "transient" and is_transient_reason(reason)


def failure_lines(summary: RunSummary, *, limit: int = 8) -> list[str]:
    """Failed runs grouped by model and reason, e.g.
    ``[canarykit runs] fake-gw: 12 runs failed: AuthenticationError (401) x 12``, then what
    happens to them under ``agent.retries.rerun_failed`` (``summary.rerun_failed``) and which
    reasons are not transient: said every time, so runs that keep failing never go unnoticed."""
    lines = []
    permanent: dict[str, int] = {}
    for name, tally in summary.per_model.items():
        if not tally.failed:
            continue
        ordered = sorted(tally.failures.items(), key=lambda kv: (-kv[1], kv[0]))
        shown = ", ".join(f"{reason} x {n}" for reason, n in ordered[:limit])
        more = f", ... ({len(ordered) - limit} more reasons)" if len(ordered) > limit else ""
        every = " (every run of this model)" if tally.failed == tally.total else ""
        again = f"; {tally.failed_again} of them failed in an earlier invocation too" if tally.failed_again else ""
        lines.append(f"[canarykit runs] {name}: {tally.failed} runs failed{every}: {shown}{more}{again}")
        for reason, n in ordered:
            if not is_transient_reason(reason):
                permanent[reason] = permanent.get(reason, 0) + n
    if not lines:
        return lines
    if permanent:
        names = ", ".join(sorted(permanent))
        lines.append(f"[canarykit runs] not transient: {names}: the backend refused these requests (check the key, "
                     "the model id, the endpoint or the request); a retry fails the same way until that is fixed")
    policy = summary.rerun_failed
    tail = "the reasons are in each run record's backend_error event"
    if policy == "none":
        lines.append("[canarykit runs] failed runs are kept out of every metric and counted in every table; "
                     "agent.retries.rerun_failed is none, so they are not retried until their job reruns "
                     f"(`snakemake --forcerun run_agents`, or set rerun_failed: all); {tail}")
    elif policy == "transient" and permanent:
        n = sum(permanent.values())
        lines.append(f"[canarykit runs] failed runs are kept out of every metric; the transient ones are retried by the "
                     f"next plain `snakemake` (or `dvc repro`); the {n} not transient are accepted as failed "
                     f"(agent.retries.rerun_failed: transient) until their job reruns; {tail}")
    else:
        hint = (" (to accept the ones that are not transient as failed instead, set agent.retries.rerun_failed: transient)"
                if permanent else "")
        lines.append("[canarykit runs] failed runs are kept out of every metric and retried by the next plain "
                     f"`snakemake` (or `dvc repro`){hint}; {tail}")
    return lines


def _write_index(rows: Iterable[dict[str, Any]], path: str | Path) -> None:
    from ..schemas import RunIndexTable, validate

    df = validate(pl.DataFrame(list(rows), schema=INDEX_SCHEMA), RunIndexTable, str(path))
    buf = io.BytesIO()
    df.write_parquet(buf, compression="zstd", statistics=False)
    atomic_write_bytes(path, buf.getvalue())
