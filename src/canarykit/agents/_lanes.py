"""Executing the groups of a grid in one event loop: the model lane (``concurrency`` slots,
each group under its claim), the reference lane (no slot, no claim), and the callers that
bound each provider (see :mod:`.runner` for the decisions)."""

from __future__ import annotations

import asyncio
import collections
import itertools
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ..store.records import RunRecord
from ._plan import Group, reuse_if_finished, save_group
from ._summary import Progress
from .adaptive import AdaptiveLimit, LaneBoard, LanePlan, lane_plan, use_board
from .cache import ResponseCache
from .calls import CallStats, ModelCaller, RetryPolicy, SpendLedger
from .config import AgentConfig
from .loop import Environment, run_one
from .protocol import Backend
from .store import RunClaim, RunStore

#: Threads of an event loop's default executor (asyncio's default) and at most how many a
#: model lane with many slots gets for its file work.
DEFAULT_THREADS = min(32, (os.cpu_count() or 1) + 4)
MAX_THREADS = 64

#: Seconds between two attempts to claim a run another invocation is executing.
CLAIM_POLL_S = 0.25

#: Called when a group is done: the group, its record (``None``: reused) and how (``executed``/``reused``).
OnDone = Callable[[Group, RunRecord | None, str], None]


@dataclass
class Lanes:
    """What running groups needs, in this process or in a shard: each model's backend and
    caller (by model index), the run store, the tool environment and the call timeout."""

    backends: Mapping[int, Backend]
    callers: Mapping[int, ModelCaller]
    store: RunStore
    env: Environment
    timeout_s: float


def make_callers(
    backends: Mapping[int, Backend], stats: Mapping[int, CallStats], cache: ResponseCache, retry: RetryPolicy, timeout_s: float,
) -> dict[int, ModelCaller]:
    return {mi: ModelCaller(b, cache=cache, retry=retry, limiter=None, stats=stats[mi], timeout_s=timeout_s) for mi, b in backends.items()}


def limit_callers(
    callers: Mapping[int, ModelCaller],
    providers: Mapping[int, str],
    plan: LanePlan,
    *,
    board: LaneBoard | None = None,
    shard: int = 0,
    shards: int = 1,
    max_pause_s: float = 60.0,
) -> dict[str, AdaptiveLimit]:
    """Give each provider's callers one adaptive lane (:mod:`.adaptive`): shard ``shard`` of
    ``shards`` gets its share of each start and maximum. Call it inside the running loop."""
    lanes: dict[str, AdaptiveLimit] = {}
    for p in dict.fromkeys(providers[mi] for mi in callers):
        if p not in plan.start:
            continue
        lanes[p] = AdaptiveLimit(max(1, share(plan.start[p], shards, shard)), max(1, share(plan.maximum[p], shards, shard)),
                                 max_pause_s=max_pause_s, board=board, row=board.row(p, shard) if board is not None else 0)
    for mi, c in callers.items():
        c.limiter = lanes.get(providers[mi])
    return lanes


def share(total: int, n: int, k: int) -> int:
    """Shard ``k``'s part of ``total`` split over ``n`` shards (the parts sum to ``total``)."""
    return total // n + (1 if k < total % n else 0)


async def run_claimed(g: Group, lanes: Lanes) -> tuple[str, RunRecord | None]:
    """Run one identity group under its claim: ``("deferred", None)`` when another process
    holds it, ``("reused", None)`` when another invocation finished it, else
    ``("executed", record)``. The file work runs in a thread (the event loop stays free), in
    two hops per run: claim and check, then save and release."""
    store = lanes.store
    how, claim = await asyncio.to_thread(_claim_unless_finished, store, g)
    if claim is None:
        return how, None
    try:
        head = g[0]
        mi = head.model_idx
        rec = await run_one(head.spec, lanes.backends[mi], caller=lanes.callers[mi], env=lanes.env, timeout_s=lanes.timeout_s)
        await asyncio.to_thread(_save_and_release, store, g, rec, claim)  # fsyncs
        return "executed", rec
    finally:
        claim.release()  # idempotent: released above unless the run or its save failed


def _claim_unless_finished(store: RunStore, g: Group) -> tuple[str, RunClaim | None]:
    claim = store.try_claim(g[0].spec.identity_hash)
    if claim is None:
        return "deferred", None
    try:
        if reuse_if_finished(store, g):
            claim.release()
            return "reused", None
    except BaseException:
        claim.release()
        raise
    return "run", claim


def _save_and_release(store: RunStore, g: Group, rec: RunRecord, claim: RunClaim) -> None:
    try:
        save_group(store, g, rec)
    finally:
        claim.release()


async def model_lane(
    groups: Sequence[Group],
    next_index: Callable[[], int],
    slots: int,
    lanes: Lanes,
    over_budget: Callable[[], bool],
    on_done: OnDone,
) -> bool:
    """Run model groups, ``slots`` at a time, taking each with ``next_index()`` (an index into
    ``groups``; past the end means no new work) and running it under its claim; groups
    claimed elsewhere wait in a queue and are retried every :data:`CLAIM_POLL_S` seconds.
    True if the budget stopped it."""
    exhausted = False
    waiting: collections.deque[Group] = collections.deque()
    cursor_done = False

    async def worker() -> None:
        nonlocal exhausted, cursor_done
        while True:
            if over_budget():
                exhausted = True
                return
            g: Group | None = None
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
            how, rec = await run_claimed(g, lanes)
            if how == "deferred":
                waiting.append(g)
                if cursor_done:
                    await asyncio.sleep(CLAIM_POLL_S)
                continue
            on_done(g, rec, how)

    n = min(slots, len(groups))
    if n > DEFAULT_THREADS:
        # Each run's file work (claim, record, cache entries: fsyncs) waits on the loop's default
        # executor; its default size (CPU count + 4) queues the writes of many slots behind
        # each other, which stretched every run by the queue's wait.
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(max_workers=min(n, MAX_THREADS), thread_name_prefix="canarykit-io"))
    await asyncio.gather(*(worker() for _ in range(n)))
    return exhausted


async def reference_lane(groups: Sequence[Group], lanes: Lanes, progress: Progress) -> None:
    """Reference agents: no slot, no I/O wait; yield to the event loop every 32 runs.

    They are not claimed: a claim costs about as much as a reference run (a lock file created
    and removed), and they pay nothing and answer deterministically, so two invocations
    computing one at once would only write the same record twice.
    """
    for i, g in enumerate(groups):
        head = g[0]
        mi = head.model_idx
        rec = await run_one(head.spec, lanes.backends[mi], caller=lanes.callers[mi], env=lanes.env, timeout_s=lanes.timeout_s)
        save_group(lanes.store, g, rec)
        progress.tick(len(g), error=rec.error)
        if i % 32 == 31:
            await asyncio.sleep(0)


def spent(callers: Mapping[int, ModelCaller]) -> float:
    """US dollars the callers' backends reported (unknown costs count 0)."""
    return sum(c.stats.cost_usd for c in callers.values())


def run_here(
    ref_groups: Sequence[Group],
    model_groups: Sequence[Group],
    lanes: Lanes,
    providers: Mapping[int, str],
    agent: AgentConfig,
    ledger: SpendLedger | None,
    bar: Progress,
) -> bool:
    """Both lanes in one event loop of this process, with ``agent.concurrency`` slots (raised
    to the adaptive providers' maxima), the provider lanes and the budget; True if the budget
    stopped the model lane."""
    cursor = itertools.count()
    budget = agent.budget_usd

    def on_done(g: Group, rec: RunRecord | None, how: str) -> None:
        bar.spend = spent(lanes.callers)
        if ledger is not None:
            ledger.report(bar.spend)
        bar.tick(len(g), error=rec is not None and rec.error)

    def over_budget() -> bool:
        if budget is None:
            return False
        return spent(lanes.callers) + (ledger.others() if ledger is not None else 0.0) >= budget

    plan = plan_lanes(agent, [providers[g[0].model_idx] for g in model_groups])  # reference agents need no lane
    board = LaneBoard(list(plan.start))
    use_board(board)

    async def main() -> bool:
        limit_callers(lanes.callers, providers, plan, board=board, max_pause_s=agent.retries.max_delay_s)
        lane = model_lane(model_groups, lambda: next(cursor), plan.slots, lanes, over_budget, on_done)
        _, exhausted = await asyncio.gather(reference_lane(ref_groups, lanes, bar), lane)
        return bool(exhausted)

    return asyncio.run(main())


def plan_lanes(agent: AgentConfig, providers: Iterable[str]) -> LanePlan:
    """The provider lanes of a grid (see :func:`.adaptive.lane_plan`)."""
    return lane_plan(agent.concurrency, agent.provider_concurrency, agent.provider_concurrency_max, list(providers))
