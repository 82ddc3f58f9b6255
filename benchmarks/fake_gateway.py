"""A local OpenAI-compatible gateway with a fixed latency, for benchmarking the runner.

Serves ``POST /v1/chat/completions`` on 127.0.0.1 with an agent that calls the first offered
tool once and then answers, after ``--latency`` seconds per request, and ``GET /stats``
(request count, first arrival and last completion times, peak in flight, 429s sent). Run it
as a separate process:

    python benchmarks/fake_gateway.py --latency 0.2 --port 0      # prints "PORT <n>" when ready

A hidden limit, as a hosted provider has one: ``--max-concurrent N`` answers 429 to a request
that arrives while N are being served, ``--max-rps R`` to one that would be the (R+1)-th
accepted within one second; both answer at once with ``Retry-After`` (whole seconds, as HTTP
has it) and ``retry-after-ms`` (as OpenAI sends it): when the next slot frees (the oldest
request in flight ends, or the oldest arrival leaves the one-second window).

It stops by itself after ``--max-seconds`` (default 600) and answers only on loopback.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import time
from collections import deque
from typing import Any

from aiohttp import web


def reply(body: dict[str, Any]) -> dict[str, Any]:
    msgs = body.get("messages", [])
    tools = body.get("tools") or []
    if tools and not any(m.get("role") == "tool" for m in msgs):
        fn = tools[0]["function"]
        args = {k: "x" for k in (fn.get("parameters") or {}).get("required", [])}
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": fn["name"], "arguments": json.dumps(args)}}]}
        finish = "tool_calls"
    else:
        message, finish = {"role": "assistant", "content": "Done: 42."}, "stop"
    return {"id": "chatcmpl-bench", "object": "chat.completion", "created": 1700000000, "model": body.get("model", "m"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}}


class Gateway:
    def __init__(self, latency_s: float, max_concurrent: int | None = None, max_rps: float | None = None) -> None:
        self.latency_s = latency_s
        self.max_concurrent = max_concurrent
        self.max_rps = max_rps
        self.arrivals: deque[float] = deque()  # accepted requests' arrival times, last second
        self.started: deque[float] = deque()  # start times of the requests in flight, oldest first
        self.rejected = 0
        self.done: list[float] = []  # completion times of the answered requests
        self.count = 0
        self.in_flight = 0
        self.peak = 0
        self.first: float | None = None
        self.last: float | None = None

    def over_limit(self, now: float) -> float | None:
        """Seconds until this request would be accepted, or ``None`` when it is accepted now."""
        while self.arrivals and self.arrivals[0] <= now - 1.0:
            self.arrivals.popleft()
        waits = []
        if self.max_concurrent is not None and self.in_flight >= self.max_concurrent:
            waits.append(self.started[0] + self.latency_s - now if self.started else self.latency_s)
        if self.max_rps is not None and len(self.arrivals) >= self.max_rps:
            waits.append(self.arrivals[0] + 1.0 - now)
        return max(0.001, *waits) if waits else None

    async def chat(self, request: web.Request) -> web.Response:
        now = time.time()
        self.first = now if self.first is None else self.first
        body = await request.json()
        wait = self.over_limit(time.monotonic())
        if wait is not None:
            self.rejected += 1
            return web.json_response(
                {"error": {"message": "Rate limit reached for requests", "type": "requests", "code": "rate_limit_exceeded"}},
                status=429, headers={"Retry-After": str(math.ceil(wait)), "retry-after-ms": str(round(wait * 1000))})
        t = time.monotonic()
        self.arrivals.append(t)
        self.started.append(t)
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(self.latency_s)
        finally:
            self.started.remove(t)
            self.in_flight -= 1
        self.count += 1
        self.last = time.time()
        self.done.append(self.last)
        return web.json_response(reply(body))

    async def stats(self, request: web.Request) -> web.Response:
        return web.json_response({"count": self.count, "first": self.first, "last": self.last, "peak_in_flight": self.peak,
                                  "rejected": self.rejected, "done": self.done})

    async def reset(self, request: web.Request) -> web.Response:
        self.count, self.peak, self.first, self.last, self.rejected = 0, 0, None, None, 0
        self.arrivals.clear()
        self.done = []
        return web.json_response({"ok": True})

    async def models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "bench-model", "object": "model"}]})


async def serve(port: int, latency_s: float, max_seconds: float, max_concurrent: int | None = None,
                max_rps: float | None = None) -> None:
    gw = Gateway(latency_s, max_concurrent, max_rps)
    app = web.Application()
    app.router.add_post("/v1/chat/completions", gw.chat)
    app.router.add_get("/v1/models", gw.models)
    app.router.add_get("/stats", gw.stats)
    app.router.add_post("/reset", gw.reset)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port, backlog=1024)
    await site.start()
    actual = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    print(f"PORT {actual}", flush=True)
    try:
        await asyncio.sleep(max_seconds)
    finally:
        await runner.cleanup()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--max-seconds", type=float, default=600.0)
    ap.add_argument("--max-concurrent", type=int, default=None, help="hidden limit: requests served at once (429 above)")
    ap.add_argument("--max-rps", type=float, default=None, help="hidden limit: requests accepted per second (429 above)")
    a = ap.parse_args()
    asyncio.run(serve(a.port, a.latency, a.max_seconds, a.max_concurrent, a.max_rps))


if __name__ == "__main__":
    main()
