"""Adaptive concurrency per provider: each provider's lane finds how many calls it may keep
in flight, between ``agent.provider_concurrency`` (where it starts) and
``agent.provider_concurrency_max`` (where it stops growing).

The rule is TCP's congestion control (AIMD), applied to one attempt of one model call:

- **Start** at ``provider_concurrency.<p>``; a provider listed only in ``_max`` starts at
  ``min(agent.concurrency, max)``.
- **Grow** while calls succeed: by one per success until the first rate-limit error (slow
  start: the limit doubles per round trip), then by ``1/limit`` per success (one more call in
  flight per round trip), never above the maximum; only while the lane is full (a lane with
  fewer calls than its limit learns nothing about a larger one, as RFC 7661 says of TCP).
- **Shrink** on a rate-limit error (HTTP 429, or LiteLLM's ``RateLimitError``): the limit is
  multiplied by :data:`BETA` (at least 1), once per round trip: a 429 of a call sent before
  the last decrease says nothing new and does not shrink it again.
- **Pause** when the server says how long (``retry-after-ms`` / ``Retry-After``, or the
  providers' rate-limit reset headers, :func:`~.backends.parse_retry_after`): no new request
  of the lane is sent before then (capped by ``agent.retries.max_delay_s``, as the retry
  policy caps its own wait). The call that got the 429 is retried by the model layer's one
  retry policy (:class:`~.calls.ModelCaller`), which waits at least as long; this module never
  retries anything itself.
- **Other errors** (5xx, timeouts, connection errors, malformed replies, a backend that
  raises) neither grow nor shrink the limit: a failing provider is not a busy one, and its
  failures are the retry policy's business.

The limiter is the ``limiter`` of :class:`~.calls.ModelCaller` (``async with``), held over one
attempt, never over the retry's wait. Sharded runs (``agent.workers``) give each shard its
share of the start and the maximum (each shard's lane adapts on its own, as independent AIMD
flows share a link fairly).

:func:`snapshot` is what a progress line shows: per provider, the current limit, the calls
in flight, the calls completed, the rate-limit errors seen and the completed calls per
second (over the last :data:`RATE_WINDOW_S` seconds); over the shards of a sharded run too
(each shard publishes into shared memory). It reads a few numbers and takes no lock: call it
as often as you like.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import multiprocessing as mp
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .protocol import BackendError

#: The factor a rate-limit error multiplies the limit by.
BETA = 0.7
#: Seconds over which :func:`snapshot`'s rate is measured.
RATE_WINDOW_S = 5.0
#: Fields each lane publishes to its board row.
_FIELDS = ("limit", "in_flight", "completed", "rate_limited", "errors", "rate", "maximum")


def is_rate_limit(exc: BaseException | None) -> bool:
    """A rate-limit error of a provider: HTTP 429, or LiteLLM's ``RateLimitError``."""
    return isinstance(exc, BackendError) and (exc.status_code == 429 or exc.error_type == "RateLimitError")


@dataclass(frozen=True)
class LaneState:
    """One provider lane, as :func:`snapshot` reports it (summed over shards)."""

    provider: str
    #: calls the lane may keep in flight now
    limit: int
    #: where the limit stops growing (``agent.provider_concurrency_max``)
    maximum: int
    in_flight: int
    #: successful calls so far
    completed: int
    #: rate-limit errors (429) so far
    rate_limited: int
    #: other failed attempts so far (they do not move the limit)
    errors: int
    #: completed calls per second over the last :data:`RATE_WINDOW_S` seconds
    rate: float


class LaneBoard:
    """Shared memory where lanes publish their state (one row per provider and shard); made
    before the shards are forked, read by :func:`snapshot` in the parent."""

    def __init__(self, providers: Sequence[str], shards: int = 1) -> None:
        self.providers = list(dict.fromkeys(providers))
        self.shards = max(1, shards)
        self._width = len(_FIELDS)
        self._cells: Any = mp.get_context("fork").RawArray("d", len(self.providers) * self.shards * self._width)

    def row(self, provider: str, shard: int = 0) -> int:
        return (self.providers.index(provider) * self.shards + shard) * self._width

    def publish(self, offset: int, values: Sequence[float]) -> None:
        self._cells[offset:offset + self._width] = values

    def read(self) -> dict[str, LaneState]:
        out: dict[str, LaneState] = {}
        cells = self._cells[:]
        for pi, p in enumerate(self.providers):
            tot = [0.0] * self._width
            for k in range(self.shards):
                base = (pi * self.shards + k) * self._width
                for j in range(self._width):
                    tot[j] += cells[base + j]
            d = dict(zip(_FIELDS, tot, strict=True))
            out[p] = LaneState(provider=p, limit=int(d["limit"]), maximum=int(d["maximum"]), in_flight=int(d["in_flight"]),
                               completed=int(d["completed"]), rate_limited=int(d["rate_limited"]), errors=int(d["errors"]),
                               rate=d["rate"])
        return out


_BOARD: LaneBoard | None = None


def use_board(board: LaneBoard | None) -> None:
    """Make ``board`` the one :func:`snapshot` reads (the runner does this per grid)."""
    global _BOARD
    _BOARD = board


def snapshot() -> dict[str, LaneState]:
    """The provider lanes of the grid running in this process (after it ends: its last
    state; empty when none ran, or after ``use_board(None)``): per
    provider its current limit, calls in flight, calls completed, rate-limit errors and
    completed calls per second. Cheap (no lock, no I/O); see the module notes."""
    return _BOARD.read() if _BOARD is not None else {}


class AdaptiveLimit:
    """An AIMD concurrency limit for one provider lane (see the module notes).

    Use as ``async with limit:`` around one attempt of a call; the exception leaving the block
    (if any) is the outcome. ``clock`` is the monotonic clock (tests pass their own)."""

    def __init__(
        self,
        start: int,
        maximum: int,
        *,
        max_pause_s: float = 60.0,
        board: LaneBoard | None = None,
        row: int = 0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.maximum = max(1, int(maximum))
        self.limit = float(min(max(1, int(start)), self.maximum))
        self.max_pause_s = max_pause_s
        self.in_flight = 0
        self.completed = 0
        self.rate_limited = 0
        self.errors = 0
        self.rate = 0.0
        self.paused_until = 0.0
        self._slow_start = True
        self._epoch = 0
        self._sent_in: contextvars.ContextVar[int] = contextvars.ContextVar("sent_in", default=0)
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._wake_handle: asyncio.TimerHandle | None = None
        self._clock = clock
        self._window = (clock(), 0)
        self._board, self._row = board, row
        self._publish()

    @property
    def current(self) -> int:
        """Calls the lane may have in flight now."""
        return max(1, math.floor(self.limit))

    @property
    def decreases(self) -> int:
        """Times a rate-limit error shrank the limit."""
        return self._epoch

    def _free(self) -> bool:
        return self.in_flight < self.current and self._clock() >= self.paused_until

    async def __aenter__(self) -> AdaptiveLimit:
        if self._waiters or not self._free():
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            self._wake()
            try:
                await fut  # granted: _wake counted this call in flight for us
            except BaseException:
                if fut in self._waiters:
                    self._waiters.remove(fut)
                elif fut.done() and not fut.cancelled():
                    self.in_flight -= 1  # granted, but cancelled before it could run: hand the slot on
                    self._wake()
                raise
        else:
            self.in_flight += 1
        self._sent_in.set(self._epoch)
        self._publish()
        return self

    async def __aexit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        self.in_flight -= 1
        if exc is None:
            self.on_success()
        elif is_rate_limit(exc):
            assert isinstance(exc, BackendError)
            self.on_rate_limit(exc.retry_after_s, sent_in=self._sent_in.get())
        elif not isinstance(exc, asyncio.CancelledError):
            self.errors += 1
        self._publish()
        self._wake()
        return False

    def on_success(self) -> None:
        self.completed += 1
        if self.in_flight + 1 < self.current:
            pass  # the lane was not full: a success says nothing about a larger limit (RFC 7661)
        elif self._slow_start:
            self.limit += 1.0
        else:
            self.limit += 1.0 / max(self.limit, 1.0)
        self.limit = min(self.limit, float(self.maximum))
        now = self._clock()
        t0, n0 = self._window
        if now - t0 >= RATE_WINDOW_S:
            self.rate = (self.completed - n0) / (now - t0)
            self._window = (now, self.completed)
        elif self.rate == 0.0 and now > t0:
            self.rate = (self.completed - n0) / max(now - t0, 1e-3)

    def on_rate_limit(self, retry_after_s: float | None, sent_in: int | None = None) -> None:
        """A 429: shrink once per round trip (``sent_in``: the epoch the request was sent in),
        and pause the lane for the server's ``Retry-After`` when it gave one."""
        self.rate_limited += 1
        if sent_in is None or sent_in == self._epoch:
            self.limit = max(1.0, self.limit * BETA)
            self._slow_start = False
            self._epoch += 1
        if retry_after_s is not None and retry_after_s > 0:
            until = self._clock() + min(retry_after_s, self.max_pause_s)
            if until > self.paused_until:
                self.paused_until = until
                self._schedule_wake(min(retry_after_s, self.max_pause_s))

    def _schedule_wake(self, delay: float) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        if self._wake_handle is not None:
            self._wake_handle.cancel()
        self._wake_handle = loop.call_later(delay, self._wake)

    def _wake(self) -> None:
        while self._waiters and self._free():
            fut = self._waiters.popleft()
            if fut.done():
                continue
            self.in_flight += 1  # on the waiter's behalf: it may not run before the next wake
            fut.set_result(None)
        if self._waiters and self.in_flight < self.current and self._clock() < self.paused_until:
            self._schedule_wake(self.paused_until - self._clock())

    def _publish(self) -> None:
        if self._board is not None:
            self._board.publish(self._row, (float(self.current), float(self.in_flight), float(self.completed),
                                            float(self.rate_limited), float(self.errors), self.rate, float(self.maximum)))


@dataclass(frozen=True)
class LanePlan:
    """Where each provider's lane starts, how far it may grow, and the model lane's slots."""

    start: Mapping[str, int]
    maximum: Mapping[str, int]
    #: runs the model lane keeps in flight: ``agent.concurrency``, raised to the sum of the
    #: adaptive providers' maxima (the global cap never holds a lane below its maximum)
    slots: int


def lane_plan(concurrency: int, provider_concurrency: Mapping[str, int], provider_max: Mapping[str, int],
              providers: Sequence[str]) -> LanePlan:
    """The lanes of ``providers``. A provider in ``provider_max`` starts at its
    ``provider_concurrency`` (else ``min(concurrency, max)``) and adapts up to its maximum; a
    provider only in ``provider_concurrency`` starts there and never grows past it; any other
    provider's lane is ``concurrency`` wide (as before, bounded by the slots). Every lane
    shrinks on a rate-limit error and grows back while calls succeed."""
    start: dict[str, int] = {}
    maximum: dict[str, int] = {}
    for p in dict.fromkeys(providers):
        if p in provider_max:
            maximum[p] = max(1, int(provider_max[p]))
            start[p] = max(1, min(int(provider_concurrency.get(p, min(concurrency, maximum[p]))), maximum[p]))
        else:
            start[p] = maximum[p] = max(1, int(provider_concurrency.get(p, concurrency)))
    grown = sum(maximum[p] for p in maximum if p in provider_max)
    return LanePlan(start, maximum, max(int(concurrency), grown))
