"""A local OpenAI-compatible gateway with a fixed latency, for benchmarking the runner.

Serves ``POST /v1/chat/completions`` on 127.0.0.1 with an agent that calls the first offered
tool once and then answers, after ``--latency`` seconds per request, and ``GET /stats``
(request count, first arrival and last completion times). Run it as a separate process:

    python benchmarks/fake_gateway.py --latency 0.2 --port 0      # prints "PORT <n>" when ready

It stops by itself after ``--max-seconds`` (default 600) and answers only on loopback.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
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
    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s
        self.count = 0
        self.in_flight = 0
        self.peak = 0
        self.first: float | None = None
        self.last: float | None = None

    async def chat(self, request: web.Request) -> web.Response:
        now = time.time()
        self.first = now if self.first is None else self.first
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        body = await request.json()
        await asyncio.sleep(self.latency_s)
        self.count += 1
        self.in_flight -= 1
        self.last = time.time()
        return web.json_response(reply(body))

    async def stats(self, request: web.Request) -> web.Response:
        return web.json_response({"count": self.count, "first": self.first, "last": self.last, "peak_in_flight": self.peak})

    async def reset(self, request: web.Request) -> web.Response:
        self.count, self.peak, self.first, self.last = 0, 0, None, None
        return web.json_response({"ok": True})

    async def models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "bench-model", "object": "model"}]})


async def serve(port: int, latency_s: float, max_seconds: float) -> None:
    gw = Gateway(latency_s)
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
    a = ap.parse_args()
    asyncio.run(serve(a.port, a.latency, a.max_seconds))


if __name__ == "__main__":
    main()
