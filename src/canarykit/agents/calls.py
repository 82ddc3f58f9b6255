"""The one model layer: every LLM call (agents, LLM judges, stability re-grading, canary
rewording) goes through :class:`ModelCaller`: response cache, concurrency limit, timeout,
budget and retries with backoff.

Retries use exponential backoff with full jitter (delay drawn uniformly from
``[0, min(max_delay, base * 2**(attempt-1))]``) and wait at least the server's
``Retry-After``, capped by ``max_delay_s`` (a server cannot park a study for longer than the
configured maximum). Only 408/409/429, 5xx, timeouts, connection errors and malformed
responses (no choices, no message) are retried; the SDKs' own retries are off (backends make
exactly one attempt), so ``max_attempts`` is the number of requests a call sends at most.
Every error message is scrubbed of every configured key (:mod:`.secrets`) where it is made.

Synchronous callers (judges, the rewriter) run their coroutines on one background event loop
per process (:func:`run_sync`), so async clients are never shared between event loops.

A backend's one-off set-up (importing litellm costs 10-17 s on a loaded machine; a local model
server starts) is its ``prepare()``: the caller awaits it once, before the first request and
outside every timed section, so a cold import never eats an attempt as a fake timeout.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import random
import threading
import time
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from .cache import ResponseCache, response_key
from .config import RetryConfig, agent_defaults
from .protocol import Backend, BackendError, ChatRequest, ChatResponse
from .secrets import scrub

T = TypeVar("T")

#: Seconds the caller waits beyond ``1.5 * timeout_s`` for a backend that ignores its own
#: timeout (a stuck client), before it gives up on the attempt as a ``Timeout``.
BACKSTOP_S = 5.0


def _default(name: str) -> Any:
    return getattr(agent_defaults().retries, name)


@dataclass(frozen=True)
class RetryPolicy:
    """Attempts and backoff of one model call (defaults: ``agent.retries`` in the schema)."""

    max_attempts: int = field(default_factory=lambda: int(_default("max_attempts")))
    base_delay_s: float = field(default_factory=lambda: float(_default("base_delay_s")))
    max_delay_s: float = field(default_factory=lambda: float(_default("max_delay_s")))

    @classmethod
    def from_config(cls, cfg: RetryConfig | Mapping[str, Any] | None) -> RetryPolicy:
        """The policy of ``agent.retries`` (a :class:`~.config.RetryConfig` or its mapping)."""
        rc = RetryConfig.parse(cfg)
        return cls(max_attempts=max(1, rc.max_attempts), base_delay_s=rc.base_delay_s, max_delay_s=rc.max_delay_s)

    def delay(self, attempt: int, rng: random.Random, retry_after_s: float | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        cap = min(self.max_delay_s, self.base_delay_s * (2 ** (attempt - 1)))
        d = rng.uniform(0.0, max(cap, 0.0))
        if retry_after_s is not None and retry_after_s > 0:
            d = max(d, min(retry_after_s, self.max_delay_s))
        return d

    def with_attempts(self, max_attempts: int) -> RetryPolicy:
        return RetryPolicy(max(1, int(max_attempts)), self.base_delay_s, self.max_delay_s)


class BackendFailure(Exception):
    """A model call that failed for good (not retryable, or out of attempts)."""

    def __init__(self, error: BackendError, attempts: int) -> None:
        super().__init__(error.message)
        self.error = error
        self.attempts = attempts


@dataclass
class CallStats:
    """Counters shared by every call of one invocation."""

    backend_calls: int = 0
    cached_calls: int = 0
    retries: int = 0
    cost_usd: float = 0.0


INVOCATION_ENV = "CANARYKIT_INVOCATION"


class SpendLedger:
    """What the other jobs of one invocation have spent, so that a budget holds across jobs.

    The workflow runs the grid as many jobs (one per cell, on one machine or a cluster); a
    budget is the *invocation's*. Each job keeps its spend in its own small file,
    ``root/<invocation>/<job>.json`` (atomic rename, so no lock is needed: one writer per
    file), and reads the others' at most every ``refresh_s`` seconds. The invocation id comes
    from the workflow (``CANARYKIT_INVOCATION``, set when Snakemake parses the workflow and
    inherited by every job it starts, cluster jobs included). On a shared filesystem the files
    are seen across nodes as soon as the filesystem shows a renamed file (attribute caching
    can delay that by a few seconds on NFS): a budget can be overshot by what jobs spend
    meanwhile, as by the calls already in flight.
    """

    def __init__(self, root: str | os.PathLike[str], invocation: str, job: str, refresh_s: float = 0.5) -> None:
        self.dir = Path(root) / invocation
        self.own = self.dir / f"{job}.json"
        self.refresh_s = refresh_s
        self._others = 0.0
        self._read_at = -1e9
        self._reported: float | None = None

    def scoped(self, budget: str) -> SpendLedger:
        """The ledger of another budget of this invocation (``judge``, ``rewriter``): its own
        subdirectory, so one budget never counts the spend of another (the agents' files sit
        at the top level and are not read by the scoped ones, nor they by them)."""
        return SpendLedger(self.dir.parent, f"{self.dir.name}/{budget}", self.own.stem, self.refresh_s)

    def others(self) -> float:
        now = time.monotonic()
        if now - self._read_at >= self.refresh_s:
            self._read_at = now
            total = 0.0
            with contextlib.suppress(OSError):
                for f in self.dir.glob("*.json"):
                    if f == self.own:
                        continue
                    with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
                        total += float(json.loads(f.read_text(encoding="utf-8"))["spent_usd"])
            self._others = total
        return self._others

    def report(self, spent_usd: float) -> None:
        if self._reported == spent_usd:
            return
        from ..store.jsonio import write_json

        write_json(self.own, {"spent_usd": float(spent_usd)})
        self._reported = spent_usd

    @classmethod
    def for_job(cls, root: str | os.PathLike[str], job: str) -> SpendLedger | None:
        """The ledger of this invocation (``None`` outside a workflow invocation)."""
        invocation = os.environ.get(INVOCATION_ENV)
        return cls(root, invocation, job) if invocation else None


class Budget:
    """A spending limit (US dollars, as LiteLLM prices calls; unknown prices count 0).

    Shared by the callers of one role (e.g. both judges); :class:`ModelCaller` sends no new
    request once it is exhausted (the call fails with ``BudgetExhausted``, never retried).
    With a :class:`SpendLedger` the limit holds for the whole invocation, over all its jobs.
    """

    def __init__(self, limit_usd: float | None, ledger: SpendLedger | None = None) -> None:
        self.limit_usd = None if limit_usd is None else float(limit_usd)
        self.spent_usd = 0.0
        self.ledger = ledger if self.limit_usd is not None else None

    def add(self, cost: float | None) -> None:
        if cost:
            self.spent_usd += float(cost)
            if self.ledger is not None:
                self.ledger.report(self.spent_usd)

    @property
    def exhausted(self) -> bool:
        if self.limit_usd is None:
            return False
        others = self.ledger.others() if self.ledger is not None else 0.0
        return self.spent_usd + others >= self.limit_usd


def budget_exhausted_error(budget: Budget) -> BackendError:
    return BackendError(f"the budget of ${budget.limit_usd} is spent (${budget.spent_usd:.4f}); raise it to continue",
                        error_type="BudgetExhausted")


class ModelCaller:
    """Calls one backend through the cache, a concurrency limit, the budget and the retry policy."""

    def __init__(
        self,
        backend: Backend,
        *,
        cache: ResponseCache | None = None,
        retry: RetryPolicy | None = None,
        limiter: contextlib.AbstractAsyncContextManager[Any] | None = None,
        stats: CallStats | None = None,
        timeout_s: float | None = None,
        sleep: Any = asyncio.sleep,
        budget: Budget | None = None,
    ) -> None:
        self.backend = backend
        self.cache = cache if backend.cacheable else None
        self.retry = retry or RetryPolicy()
        #: held over each attempt (never over the retry's wait): a semaphore, or a provider's
        #: adaptive lane (:class:`~.adaptive.AdaptiveLimit`), which sees the attempt's outcome
        self.limiter = limiter
        self.stats = stats or CallStats()
        #: seconds per request (``None``: ``agent.timeout_s``'s schema default)
        self.timeout_s = agent_defaults().timeout_s if timeout_s is None else timeout_s
        self.budget = budget
        self._sleep = sleep
        self._rng = random.Random()
        self._prepared = False

    async def __call__(self, request: ChatRequest) -> tuple[ChatResponse, bool]:
        """The response and whether it came from the cache. Raises :class:`BackendFailure`."""
        resp, cached, _ = await self.call(request)
        return resp, cached

    async def call(
        self, request: ChatRequest, *, max_attempts: int | None = None, sample: int = 0, repeat: int | None = None,
    ) -> tuple[ChatResponse, bool, int]:
        """The response, whether it came from the cache, and the requests it took.

        ``max_attempts`` overrides the policy's attempts for this call (a caller with its own
        per-item budget of requests, e.g. a judge's ``max_attempts`` per verdict). ``sample``
        numbers the draws of one request within one answer (a judge re-asked after an
        unparseable reply); ``repeat`` numbers independent repetitions of it (the r-th
        stability re-grading). Each (repeat, sample) has its own cache entry, keyed by those
        numbers and not by how often this process asked, so a rerun replays the same answers
        and one repetition is never answered from another's. Raises :class:`BackendFailure`
        (``attempts`` = requests sent).
        """
        key = None
        if self.cache is not None:
            key = response_key(self.backend.cache_scope, request.messages, request.tools, sample=sample, repeat=repeat)
            hit = self.cache.get(key)
            if hit is not None:
                self.stats.cached_calls += 1
                return hit, True, 0
        request.timeout_s = self.timeout_s
        limit = self.retry.max_attempts if max_attempts is None else max(1, int(max_attempts))
        attempt = 0
        while True:
            if self.budget is not None and self.budget.exhausted:
                raise BackendFailure(budget_exhausted_error(self.budget), attempt)
            attempt += 1
            try:
                await self._prepare()  # once, untimed: a cold import is not a timeout
                self.stats.backend_calls += 1
                resp = await self._once(request)
            except BackendError as exc:
                if not exc.retryable or attempt >= limit:
                    raise BackendFailure(exc, attempt) from exc
                self.stats.retries += 1
                await self._sleep(self.retry.delay(attempt, self._rng, exc.retry_after_s))
                continue
            if resp.cost_usd is not None:
                self.stats.cost_usd += resp.cost_usd
                if self.budget is not None:
                    self.budget.add(resp.cost_usd)
            if key is not None and self.cache is not None:
                # Off the event loop: the atomic write fsyncs.
                await asyncio.to_thread(self.cache.put, key, resp)
            return resp, False, attempt

    async def _prepare(self) -> None:
        """Await the backend's ``prepare()`` (if it has one) until it has succeeded once."""
        if self._prepared:
            return
        prepare = getattr(self.backend, "prepare", None)
        if prepare is not None:
            try:
                await prepare()
            except BackendError:
                raise
            except Exception as exc:  # a failed set-up is a failed attempt, never a crash of the grid
                raise BackendError(scrub(f"{type(exc).__name__}: {exc}")[:1000], error_type=type(exc).__name__) from None
        self._prepared = True

    async def _once(self, request: ChatRequest) -> ChatResponse:
        if self.limiter is None:
            return await self._timed(request)
        async with self.limiter:
            return await self._timed(request)

    async def _timed(self, request: ChatRequest) -> ChatResponse:
        t0 = time.perf_counter()
        try:
            # The backend enforces timeout_s itself; this is a backstop for a stuck client.
            resp = await asyncio.wait_for(self.backend.complete(request), timeout=self.timeout_s * 1.5 + BACKSTOP_S)
        except BackendError:
            raise
        except TimeoutError as exc:
            raise BackendError(f"no response within {self.timeout_s} s", error_type="Timeout", status_code=408, retryable=True) from exc
        except Exception as exc:  # an unexpected client failure: record it, never crash the grid
            raise BackendError(scrub(f"{type(exc).__name__}: {exc}")[:1000], error_type=type(exc).__name__) from None
        if not resp.latency_s:
            resp.latency_s = time.perf_counter() - t0
        return resp


class _LoopThread:
    """One event loop in a daemon thread, for synchronous callers of the async model layer."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="canarykit-model-layer", daemon=True)
        self.thread.start()

    def close(self) -> None:
        """Cancel what is left on the loop (LiteLLM's logging worker) and stop it, quietly."""
        if self.pid != os.getpid() or not self.thread.is_alive():
            return

        async def cancel_rest() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        with contextlib.suppress(Exception):  # best effort at interpreter exit
            asyncio.run_coroutine_threadsafe(cancel_rest(), self.loop).result(timeout=5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)


def _close_bridge() -> None:
    if _BRIDGE is not None:
        _BRIDGE.close()


_BRIDGE: _LoopThread | None = None
_BRIDGE_LOCK = threading.Lock()
atexit.register(_close_bridge)


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion on the process's model-layer event loop and return its result.

    One loop for every synchronous call of a process (judges, the rewriter), so clients that
    bind to a loop (LiteLLM's async HTTP clients) are reused safely. Fork-safe: a child process
    starts its own loop.
    """
    global _BRIDGE
    with _BRIDGE_LOCK:
        if _BRIDGE is None or _BRIDGE.pid != os.getpid() or not _BRIDGE.thread.is_alive():
            _BRIDGE = _LoopThread()
        bridge = _BRIDGE
    if threading.current_thread() is bridge.thread:  # pragma: no cover - misuse guard
        raise RuntimeError("run_sync called from the model-layer loop itself")
    return asyncio.run_coroutine_threadsafe(coro, bridge.loop).result()
