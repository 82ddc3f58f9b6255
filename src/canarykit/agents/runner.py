"""The runner: every (model, condition, pool, seed, task) run of a study, each paid for once.

:func:`run_grid` plans the grid, reuses every finished record in the store, executes the
rest in one asyncio event loop and writes the run index (Parquet) and the run summary
(JSON). Decisions:

- **Reuse.** A stored record that finished (``error`` false) is reused as is. Records of
  backend errors are executed again on the next invocation. Runs of one grid that share an
  identity (same model behaviour, tool list, task and turn limit: e.g. an ablation run whose
  tool list the subtler pool did not change) are executed once and the record is copied to
  the others (``deduplicated``, counted as reused).
- **Concurrency.** ``agent.concurrency`` model runs are in flight at once (a global
  semaphore; one call in flight per run), and each provider's calls are also bounded by
  ``agent.provider_concurrency[provider]`` when given. Reference agents need no slot: they
  run in their own lane, which yields to the event loop between runs.
- **Retries.** ``agent.retries`` (exponential backoff, full jitter, ``Retry-After``
  honoured; only 408/409/429/5xx/timeouts/connection errors). A failure that outlives them
  gives a record with ``error: true``, status ``error`` and a ``backend_error`` event.
- **Budget.** With ``agent.budget_usd`` set, no new model run starts once the spend of this
  invocation (costs litellm reports; unknown costs count 0) reaches it. Finished records
  are kept, unstarted runs have no index row, the summary says ``budget_exhausted: true``
  and stderr says so; :func:`run_grid` returns normally (exit status 0), so the next
  invocation with a larger budget resumes where this one stopped.
- ``backend_calls`` counts requests sent to a backend in this invocation (retries included;
  a reference agent's turns count too, answered locally at no cost); ``cached_calls``
  counts responses served from the response cache.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

import polars as pl

from ..errors import InputError
from ..jsonio import atomic_write_bytes, write_json
from ..records import RunRecord
from .cache import ResponseCache
from .calls import CallStats, ModelCaller, RetryPolicy
from .loop import Environment, RunSpec, _now, default_environment, run_one, toolset_from_assembly
from .protocol import Backend, make_backend
from .store import RunStore, model_identity

INDEX_SCHEMA: dict[str, Any] = {
    "model": pl.String, "group": pl.String, "backend": pl.String, "provider": pl.String,
    "condition": pl.String, "pool": pl.String, "seed": pl.Int64, "task_id": pl.String,
    "difficulty": pl.String, "run_id": pl.String, "identity_hash": pl.String, "status": pl.String,
    "error": pl.Boolean, "executed": pl.Boolean,
}


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


@dataclass
class RunSummary:
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
    budget_usd: float | None = None
    budget_exhausted: bool = False
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
    record: RunRecord | None = None
    status: str | None = None
    error: bool = False
    executed: bool = False


class _Progress:
    """At most one line every ``every_s`` seconds on stderr, plus a final line."""

    def __init__(self, total: int, out: TextIO | None, every_s: float = 2.0) -> None:
        self.total, self.out, self.every_s = total, out, every_s
        self.t0 = self.last = time.monotonic()
        self.done = self.errors = 0
        self.spend = 0.0

    def tick(self, n: int = 1, error: bool = False, force: bool = False) -> None:
        self.done += n
        self.errors += int(error)
        now = time.monotonic()
        if self.out is not None and (force or now - self.last >= self.every_s):
            self.last = now
            rate = self.done / max(now - self.t0, 1e-9)
            print(f"[canarykit runs] {self.done}/{self.total} done, {rate:.1f}/s, {self.errors} errors, spend ${self.spend:.4f}",
                  file=self.out, flush=True)


def _load_pool_records(path: str | Path) -> dict[str, Mapping[str, Any]]:
    from ..canaries import load_pool

    return {str(c["id"]): c for c in load_pool(path)}


def plan_grid(
    models: Sequence[Mapping[str, Any]],
    tasks: Sequence[Any],
    pools: Mapping[str, Mapping[str, Any]],
    seeds: Sequence[int],
    max_turns: int,
) -> list[_Planned]:
    """Every run of the grid, in (model, pool, condition, seed, task) order."""
    from ..assembly import load_assemblies
    from .backends import provider_of

    prepared: list[tuple[str, str, int, Any, Any]] = []
    for pool, cfg in pools.items():
        canaries = _load_pool_records(cfg["canaries"])
        assemblies = load_assemblies(cfg["assembly"])
        for cond in cfg["conditions"]:
            for seed in seeds:
                for task in tasks:
                    a = assemblies.get((cond, int(seed), task.id))
                    if a is None:
                        raise InputError(str(cfg["assembly"]), f"{cond}/{seed}/{task.id}", f"no assembly for this run (pool {pool!r}); re-run the assembly stage")
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
            rs = RunSpec(spec, task, cond, pool, seed, ts, max_turns, model_ident=ident)
            planned.append(_Planned(rs, mi, provider))
    return planned


def _fast_finished(store: RunStore, run_id: str) -> dict[str, Any] | None:
    """The stored record's JSON if it finished without error (plain parse: our own files)."""
    try:
        data = json.loads(store.path(run_id).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("run_id") != run_id or data.get("error") is not False or not isinstance(data.get("status"), str):
        return None
    return data


def _relabel(record: RunRecord, spec: RunSpec) -> RunRecord:
    return replace(
        record, run_id=spec.run_id, model=str(spec.model["name"]), group=str(spec.model.get("group", "")),
        condition=spec.condition, pool=spec.pool, seed=int(spec.seed), task_id=str(spec.task.id),
        difficulty=str(spec.task.difficulty), created_at=_now(),
    )


async def _execute_all(
    planned: list[_Planned],
    todo: list[list[_Planned]],
    backends: dict[int, Backend],
    callers: dict[int, ModelCaller],
    stats: dict[int, CallStats],
    store: RunStore,
    env: Environment,
    agent_cfg: Mapping[str, Any],
    progress: _Progress,
    summary: RunSummary,
) -> None:
    concurrency = max(1, int(agent_cfg.get("concurrency", 8)))
    budget = agent_cfg.get("budget_usd")
    budget_f = float(budget) if budget is not None else None
    timeout_s = float(agent_cfg.get("timeout_s", 120))

    def spent() -> float:
        return sum(s.cost_usd for s in stats.values())

    def save_group(group: list[_Planned], rec: RunRecord) -> None:
        store.save(rec)
        head = group[0]
        head.record, head.status, head.error, head.executed = rec, rec.status, rec.error, True
        for other in group[1:]:
            clone = _relabel(rec, other.spec)
            store.save(clone)
            other.record, other.status, other.error = clone, clone.status, clone.error

    async def run_group(group: list[_Planned], threaded: bool = False) -> None:
        head = group[0]
        rec = await run_one(head.spec, backends[head.model_idx], caller=callers[head.model_idx], env=env, timeout_s=timeout_s)
        if threaded:  # model runs: keep the event loop free while the record is fsynced
            await asyncio.to_thread(save_group, group, rec)
        else:
            save_group(group, rec)
        progress.spend = spent()
        progress.tick(len(group), error=rec.error)

    ref_groups = [g for g in todo if backends[g[0].model_idx].kind == "reference"]
    model_groups = [g for g in todo if backends[g[0].model_idx].kind != "reference"]

    async def reference_lane() -> None:
        for i, g in enumerate(ref_groups):
            await run_group(g)
            if i % 32 == 31:
                await asyncio.sleep(0)

    queue: asyncio.Queue[list[_Planned]] = asyncio.Queue()
    for g in model_groups:
        queue.put_nowait(g)

    async def worker() -> None:
        while True:
            try:
                g = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            if budget_f is not None and spent() >= budget_f:
                summary.budget_exhausted = True
                return
            await run_group(g, threaded=True)

    n_workers = min(concurrency, len(model_groups))
    await asyncio.gather(reference_lane(), *(worker() for _ in range(n_workers)))


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
) -> RunSummary:
    """Run (or reuse) every run of the grid; write the index and the summary. See the module doc."""
    t0 = time.monotonic()
    out = log if log is not None else sys.stderr
    if tasks is None:
        from ..tasks import load_tasks

        tasks = load_tasks(tasks_path)
    env = env or default_environment()
    max_turns = int(agent_cfg.get("max_turns", 12))
    planned = plan_grid(models, tasks, pools, seeds, max_turns)
    store = RunStore(store_dir)
    summary = RunSummary(total=len(planned), budget_usd=agent_cfg.get("budget_usd"))
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
        key = (p.model_idx, p.spec.identity_hash)
        src = done_by_identity.get(key)
        if src is not None:  # an identical run of this grid is stored: copy it
            rec = store.load(src.spec.run_id)
            if rec is not None and not rec.error:
                clone = _relabel(rec, p.spec)
                store.save(clone)
                p.status, p.error = clone.status, clone.error
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

    needed = sorted({g[0].model_idx for g in todo})
    backends: dict[int, Backend] = {mi: make_backend(models[mi], agent_cfg) for mi in needed}
    cache = ResponseCache(agent_cfg.get("cache_dir") or Path(store_dir).parent / "cache" / "responses")
    retry = RetryPolicy.from_config(agent_cfg.get("retries"))
    provider_limits = {str(k): int(v) for k, v in (agent_cfg.get("provider_concurrency") or {}).items()}
    stats = {mi: CallStats() for mi in needed}
    callers = {
        mi: ModelCaller(backends[mi], cache=cache, retry=retry, limiter=None, stats=stats[mi], timeout_s=float(agent_cfg.get("timeout_s", 120)))
        for mi in needed
    }
    bar = _Progress(summary.total, out if progress else None)
    bar.done = summary.reused
    try:
        if todo:
            async def main() -> None:
                # Semaphores bind to the running loop: create the provider limits inside it.
                limits = {k: asyncio.Semaphore(max(1, n)) for k, n in provider_limits.items()}
                for mi, c in callers.items():
                    c.limiter = limits.get(planned_provider[mi])
                await _execute_all(planned, todo, backends, callers, stats, store, env, agent_cfg, bar, summary)

            planned_provider = {g[0].model_idx: g[0].provider for g in todo}
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
        elif p.record is not None:  # a copy of a run executed in this invocation
            tally.reused += 1
            tally.deduplicated += 1
            summary.reused += 1
            summary.deduplicated += 1
        if p.error:
            tally.failed += 1
            summary.failed += 1
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
    write_json(summary_out, summary.to_dict())
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
    return summary


def _write_index(rows: Iterable[dict[str, Any]], path: str | Path) -> None:
    df = pl.DataFrame(list(rows), schema=INDEX_SCHEMA)
    buf = io.BytesIO()
    df.write_parquet(buf, compression="zstd", statistics=False)
    atomic_write_bytes(path, buf.getvalue())
