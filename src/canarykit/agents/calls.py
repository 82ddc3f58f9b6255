"""One model call: response cache, concurrency limit, timeout and retries with backoff.

Retries use exponential backoff with full jitter (delay drawn uniformly from
``[0, min(max_delay, base * 2**(attempt-1))]``) and wait at least the server's
``Retry-After``. Only 408/409/429, 5xx, timeouts and connection errors are retried.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .cache import ResponseCache, response_key
from .protocol import Backend, BackendError, ChatRequest, ChatResponse

#: Never sleep longer than this for one retry, whatever a server's Retry-After says.
MAX_RETRY_AFTER_S = 600.0


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 5
    base_delay_s: float = 1.0
    max_delay_s: float = 60.0

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any] | None) -> RetryPolicy:
        cfg = cfg or {}
        return cls(
            max_attempts=max(1, int(cfg.get("max_attempts", 5))),
            base_delay_s=float(cfg.get("base_delay_s", 1.0)),
            max_delay_s=float(cfg.get("max_delay_s", 60.0)),
        )

    def delay(self, attempt: int, rng: random.Random, retry_after_s: float | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        cap = min(self.max_delay_s, self.base_delay_s * (2 ** (attempt - 1)))
        d = rng.uniform(0.0, max(cap, 0.0))
        if retry_after_s is not None and retry_after_s > 0:
            d = max(d, min(retry_after_s, MAX_RETRY_AFTER_S))
        return d


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


class ModelCaller:
    """Calls one backend through the cache, a concurrency limit and the retry policy."""

    def __init__(
        self,
        backend: Backend,
        *,
        cache: ResponseCache | None = None,
        retry: RetryPolicy | None = None,
        limiter: asyncio.Semaphore | None = None,
        stats: CallStats | None = None,
        timeout_s: float = 120.0,
        sleep: Any = asyncio.sleep,
    ) -> None:
        self.backend = backend
        self.cache = cache if backend.cacheable else None
        self.retry = retry or RetryPolicy()
        self.limiter = limiter
        self.stats = stats or CallStats()
        self.timeout_s = timeout_s
        self._sleep = sleep
        self._rng = random.Random()

    async def __call__(self, request: ChatRequest) -> tuple[ChatResponse, bool]:
        """The response and whether it came from the cache. Raises :class:`BackendFailure`."""
        key = None
        if self.cache is not None:
            key = response_key(self.backend.cache_scope, request.messages, request.tools)
            hit = self.cache.get(key)
            if hit is not None:
                self.stats.cached_calls += 1
                return hit, True
        request.timeout_s = self.timeout_s
        attempt = 0
        while True:
            attempt += 1
            try:
                self.stats.backend_calls += 1
                resp = await self._once(request)
            except BackendError as exc:
                if not exc.retryable or attempt >= self.retry.max_attempts:
                    raise BackendFailure(exc, attempt) from exc
                self.stats.retries += 1
                await self._sleep(self.retry.delay(attempt, self._rng, exc.retry_after_s))
                continue
            if resp.cost_usd is not None:
                self.stats.cost_usd += resp.cost_usd
            if key is not None and self.cache is not None:
                # Off the event loop: the atomic write fsyncs.
                await asyncio.to_thread(self.cache.put, key, resp)
            return resp, False

    async def _once(self, request: ChatRequest) -> ChatResponse:
        if self.limiter is None:
            return await self._timed(request)
        async with self.limiter:
            return await self._timed(request)

    async def _timed(self, request: ChatRequest) -> ChatResponse:
        t0 = time.perf_counter()
        try:
            # The backend enforces timeout_s itself; this is a backstop for a stuck client.
            resp = await asyncio.wait_for(self.backend.complete(request), timeout=self.timeout_s * 1.5 + 5.0)
        except BackendError:
            raise
        except TimeoutError as exc:
            raise BackendError(f"no response within {self.timeout_s} s", error_type="Timeout", status_code=408, retryable=True) from exc
        except Exception as exc:  # an unexpected client failure: record it, never crash the grid
            raise BackendError(f"{type(exc).__name__}: {exc}", error_type=type(exc).__name__) from exc
        if not resp.latency_s:
            resp.latency_s = time.perf_counter() - t0
        return resp
