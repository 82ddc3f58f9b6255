"""Processes: the model runs of a grid spread over forked shards, and a job that ends with
the process that started it (see :mod:`.runner`, "Shards", for why and how)."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..store.records import RunRecord
from ._lanes import (
    Lanes,
    limit_callers,
    make_callers,
    model_lane,
    plan_lanes,
    reference_lane,
    share,
    spent,
)
from ._plan import Group
from ._summary import Progress, RunSummary
from .adaptive import LaneBoard, use_board
from .cache import ResponseCache
from .calls import CallStats, RetryPolicy, SpendLedger
from .config import AgentConfig
from .loop import Environment
from .protocol import Backend
from .store import RunStore

#: Backends whose model runs may be sharded over processes: their calls cost client CPU
#: (litellm's request building, response parsing, logging and cost lookup), not a local model.
SHARDED_KINDS = frozenset({"litellm"})
_PR_SET_PDEATHSIG = 1  # prctl(2) option: the signal a child gets when its parent dies

#: What a shard reports per finished group: its index, (status, error) per run, how, reason.
Done = tuple[int, list[tuple[str | None, bool]], str, str | None]


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
                print("[canarykit runs] the parent process died: stopping (resume: see docs/failures.md, 'Failures, resuming and concurrent invocations')",
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


class Shared:
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


@dataclass
class ShardJob:
    """Everything a shard needs; inherited through ``fork``, never pickled."""

    groups: list[Group]
    backends: dict[int, Backend]
    providers: dict[int, str]
    cache: ResponseCache
    retry: RetryPolicy
    store: RunStore
    env: Environment
    agent: AgentConfig
    ledger: SpendLedger | None
    n: int
    parent_pid: int = field(default_factory=os.getpid)
    shared: Shared = field(default_factory=lambda: Shared(mp.get_context("fork")))
    #: where the shards' provider lanes publish their state (read by :func:`.adaptive.snapshot`)
    board: LaneBoard | None = None

    def __post_init__(self) -> None:
        if self.board is None:
            self.board = LaneBoard(list(plan_lanes(self.agent, self.providers.values()).start), self.n)


def n_shards(agent: AgentConfig, model_groups: Sequence[Group], backends: Mapping[int, Backend]) -> int:
    """How many processes to run the model groups in (1: in this process). See :mod:`.runner`."""
    n = agent.workers if agent.workers is not None else (os.cpu_count() or 1)
    if n <= 1 or not model_groups or sys.platform != "linux" or "fork" not in mp.get_all_start_methods():
        return 1
    if any(backends[g[0].model_idx].kind not in SHARDED_KINDS for g in model_groups):
        return 1
    limits = agent.provider_concurrency
    caps = [n, plan_lanes(agent, (g[0].provider for g in model_groups)).slots, len(model_groups)]
    caps += [max(1, limits[p]) for p in {g[0].provider for g in model_groups} if p in limits]
    return min(caps)


class _ShardReport:
    """A shard's side of the shared counters: what it finished and spent, as it goes."""

    def __init__(self, job: ShardJob, lanes: Lanes) -> None:
        self.job, self.lanes = job, lanes
        self.done: list[Done] = []
        self.position = {id(g): i for i, g in enumerate(job.groups)}
        self.reported = 0.0

    def over_budget(self) -> bool:
        budget = self.job.agent.budget_usd
        if budget is None:
            return False
        others = self.job.ledger.others() if self.job.ledger is not None else 0.0
        return self.job.shared.spend.value - self.reported + spent(self.lanes.callers) + others >= budget

    def on_done(self, g: Group, rec: RunRecord | None, how: str) -> None:
        shared = self.job.shared
        self.done.append((self.position[id(g)], [(p.status, p.error) for p in g], how, g[0].reason))
        spend = spent(self.lanes.callers)
        with shared.spend.get_lock():
            shared.spend.value += spend - self.reported
        self.reported = spend
        with shared.done.get_lock():
            shared.done.value += len(g)
        if rec is not None and rec.error:
            with shared.errors.get_lock():
                shared.errors.value += 1


def _shard_main(job: ShardJob, k: int, conn: Any) -> None:
    """One shard process: its share of the slots and provider limits, its own event loop."""
    _die_with_parent(job.parent_pid)
    try:
        stats = {mi: CallStats() for mi in job.backends}
        callers = make_callers(job.backends, stats, job.cache, job.retry, job.agent.timeout_s)
        lanes = Lanes(job.backends, callers, job.store, job.env, job.agent.timeout_s)
        report = _ShardReport(job, lanes)

        async def main() -> bool:
            plan = plan_lanes(job.agent, job.providers.values())
            limit_callers(callers, job.providers, plan, board=job.board, shard=k, shards=job.n,
                          max_pause_s=job.agent.retries.max_delay_s)
            return await model_lane(job.groups, job.shared.claim, max(1, share(plan.slots, job.n, k)), lanes,
                                    report.over_budget, report.on_done)

        exhausted = asyncio.run(main())
        counts = {mi: (s.backend_calls, s.cached_calls, s.retries, s.cost_usd) for mi, s in stats.items()}
        conn.send(("ok", report.done, counts, exhausted))
    except BaseException as exc:  # reported to the parent, which raises it
        with contextlib.suppress(Exception):
            conn.send(("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-4000:]}"))
        raise
    finally:
        conn.close()


class _Collector:
    """The parent's side: shard results folded into the plan, the call counters and the summary."""

    def __init__(self, job: ShardJob, lanes: Lanes, progress: Progress, summary: RunSummary) -> None:
        self.job, self.lanes, self.progress, self.summary = job, lanes, progress, summary
        self.failures: list[str] = []
        self.seen = [0, 0]

    def sync_progress(self) -> None:
        shared = self.job.shared
        done, errors = int(shared.done.value), int(shared.errors.value)
        self.progress.spend = float(shared.spend.value)
        if self.job.ledger is not None:
            self.job.ledger.report(self.progress.spend)
        self.progress.tick(done - self.seen[0], errors=errors - self.seen[1])
        self.seen[0], self.seen[1] = done, errors

    def take(self, msg: Any) -> None:
        if msg[0] != "ok":
            self.failures.append(str(msg[1]))
            return
        _, done, counts, exhausted = msg
        for gi, states, how, reason in done:
            g = self.job.groups[gi]
            for j, (p, (status, error)) in enumerate(zip(g, states, strict=True)):
                p.status, p.error, p.reason = status, error, reason
                if how == "reused":
                    p.late = True
                elif j == 0:
                    p.executed = True
                else:
                    p.copied = True
        for mi, (calls, cached, retries, cost) in counts.items():
            s = self.lanes.callers[mi].stats
            s.backend_calls += calls
            s.cached_calls += cached
            s.retries += retries
            s.cost_usd += cost
        self.summary.budget_exhausted = self.summary.budget_exhausted or bool(exhausted)

    async def watch(self, procs: list[Any], conns: dict[int, Any]) -> None:
        """Take each shard's result as it ends (or its death), syncing progress meanwhile."""
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
                    self.take(msg)
                    conn.close()
                    del conns[k]
            self.sync_progress()
            if conns:
                await asyncio.sleep(0.05)


async def run_sharded(job: ShardJob, ref_groups: Sequence[Group], lanes: Lanes, progress: Progress, summary: RunSummary) -> None:
    """Fork ``job.n`` shards for the model groups; run the reference lane here meanwhile
    (``lanes``: this process's backends and callers, whose counters get the shards' calls)."""
    ctx = mp.get_context("fork")
    use_board(job.board)
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
        collector = _Collector(job, lanes, progress, summary)
        await asyncio.gather(reference_lane(ref_groups, lanes, progress), collector.watch(procs, conns))
        if collector.failures:
            raise RuntimeError("a shard of the model runs failed:\n" + "\n".join(collector.failures))
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
            proc.join()
        for conn in conns.values():
            conn.close()
