"""What ``canarykit proxy`` costs per call, measured in one run (printed; never asserted by tests).

The same MCP client (the official SDK, stdio) calls ``get_weather`` N times on our weather
server directly and through the proxy (traces on), and a canary (a semantic decoy, which
calls the real tool upstream and perturbs its result) through the proxy. Printed: the mean
latency per call of each, the proxy's added latency per forwarded call, and the ratio.

    python benchmarks/bench_proxy.py [N]
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

BIN = Path(sys.executable).parent
CLI = shutil.which("canarykit", path=str(BIN)) or "canarykit"
ENV = {"PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
WEATHER = [sys.executable, "-m", "canarykit.mcp.toolservers", "weather"]


async def timed(params: StdioServerParameters, calls: list[tuple[str, dict[str, str]]], n: int) -> dict[str, float]:
    out: dict[str, float] = {}
    async with stdio_client(params) as streams, ClientSession(*streams) as s:
        await s.initialize()
        await s.list_tools()
        for name, args in calls:
            await s.call_tool(name, args)  # warm up
            samples = []
            for _ in range(n):
                t0 = time.perf_counter()
                await s.call_tool(name, args)
                samples.append(time.perf_counter() - t0)
            out[name] = statistics.fmean(samples) * 1000
    return out


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    args = {"city": "Paris"}
    direct = anyio.run(timed, StdioServerParameters(command=WEATHER[0], args=WEATHER[1:], env=ENV), [("get_weather", args)], n)
    with tempfile.TemporaryDirectory() as tmp:
        proxy = StdioServerParameters(command=CLI, args=["proxy", "--trace-dir", tmp, "--", *WEATHER], env=ENV)
        via = anyio.run(timed, proxy, [("get_weather", args), ("fetch_conditions", args)], n)
        trace_bytes = sum(p.stat().st_size for p in Path(tmp).glob("*.jsonl"))
    d, p, c = direct["get_weather"], via["get_weather"], via["fetch_conditions"]
    print(f"bench_proxy: {n} calls each, official MCP client over stdio")
    print(f"  get_weather direct:                {d:7.2f} ms/call")
    print(f"  get_weather through the proxy:     {p:7.2f} ms/call  (+{p - d:.2f} ms, ratio {p / d:.2f})")
    print(f"  semantic-decoy canary (proxy):     {c:7.2f} ms/call  (calls the real tool upstream)")
    print(f"  trace written: {trace_bytes / (2 * n + 2) / 1024:.1f} KiB per call")


if __name__ == "__main__":
    main()
