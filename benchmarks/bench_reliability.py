"""Reliability figures of issue 9, measured in one run (printed; never asserted by tests).

- ``query_database`` with ``SELECT zeroblob(50000000)`` in-process and over MCP (stdio): time
  and size of the answer (target: < 1 s, truncated and marked, <= 64 KiB);
  ``printf('%.*c', 1e9, 'x')``: time to the refusal;
- HTTP requests an LLM judge sends per verdict against a gateway that always answers 500, with
  ``judge.max_attempts: 3`` (issue: 9 before the judge went through the model layer);
- two concurrent invocations of the runner on one store against a fake gateway: requests sent
  by both together divided by the requests one invocation alone sends (target: 1.0).

    python benchmarks/bench_reliability.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def zeroblob() -> None:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from canarykit.tools import execute

    sql = "SELECT zeroblob(50000000)"
    execute("query_database", {"sql": "SELECT 1"})  # the database image is built once per process
    t0 = time.perf_counter()
    r = execute("query_database", {"sql": sql})
    dt = time.perf_counter() - t0
    print(f"zeroblob(50e6) in-process: {dt:.3f} s (ratio to the 1 s target {dt:.3f}), {len(r.content.encode())} bytes, "
          f"truncated={json.loads(r.content)['truncated']}")
    t0 = time.perf_counter()
    r = execute("query_database", {"sql": "SELECT printf('%.*c', 1000000000, 'x')"})
    print(f"printf('%.*c', 1e9, 'x') in-process: {time.perf_counter() - t0:.3f} s, error={r.is_error}")

    async def over_mcp() -> tuple[float, int, bool]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "canarykit.mcp.toolservers", "database"])
        async with stdio_client(params) as streams, ClientSession(*streams) as session:
            await session.initialize()
            await session.call_tool("query_database", {"sql": "SELECT 1"})
            t = time.perf_counter()
            res = await session.call_tool("query_database", {"sql": sql})
            text = res.content[0].text  # type: ignore[union-attr]
            return time.perf_counter() - t, len(text.encode()), "truncated" in text

    dt, size, marked = anyio.run(over_mcp)
    print(f"zeroblob(50e6) over MCP: {dt:.3f} s (ratio to the 1 s target {dt:.3f}), {size} bytes, marked={marked}")


def judge_requests() -> None:
    from fakes.openai_server import FakeOpenAIServer, Reply, error_body

    from canarykit.judging import JudgeInput, make_judge

    with FakeOpenAIServer(lambda b, h, n: Reply(error_body("down"), status=500)) as server:
        judge = make_judge({"kind": "llm", "model": "openai/judge", "api_base": server.url, "timeout_s": 10},
                           template_path=ROOT / "data/prompts/judge_appendix_b.txt", max_attempts=3, retry_delay_s=0.01)
        v = judge.judge(JudgeInput("r1", "t1", "What is 2+2?", ("calculate",), "(no tool calls)", "4"))
        print(f"LLM judge, max_attempts 3, gateway always 500: {len(server.requests)} requests per verdict "
              f"(issue: 9 before), verdict status {v.status!r}")


def concurrent_invocations() -> None:
    from fakes.openai_server import FakeOpenAIServer, simple_agent
    from fakes.study import make_study

    tmp = Path(tempfile.mkdtemp(prefix="bench-claims-"))
    tasks_path, pools, _ = make_study(tmp / "study", n_tasks=5, seeds=[0, 1])
    driver = ROOT / "tests" / "fakes" / "grid_driver.py"
    env = {**os.environ, "BENCH_KEY": "bench-key-0123456789"}

    def config(d: Path, name: str, url: str) -> Path:
        d.mkdir(parents=True, exist_ok=True)
        cfg = {"models": [{"name": "gw", "backend": "litellm", "model": "openai/m", "api_base": url, "api_key_env": "BENCH_KEY"}],
               "tasks_path": str(tasks_path),
               "pools": {k: {**v, "canaries": str(v["canaries"]), "assembly": str(v["assembly"])} for k, v in pools.items()},
               "seeds": [0, 1], "agent_cfg": {"max_turns": 4, "concurrency": 3, "workers": 1, "cache_dir": str(d / "cache")},
               "store_dir": str(d / "store"), "index_out": str(d / f"{name}.parquet"), "summary_out": str(d / f"{name}.json"),
               "progress": False}
        p = d / f"{name}.cfg.json"
        p.write_text(json.dumps(cfg))
        return p

    def drive(paths: list[Path]) -> None:
        procs = [subprocess.Popen([sys.executable, str(driver), str(p)], env=env, stdout=subprocess.DEVNULL) for p in paths]
        for proc in procs:
            proc.wait(timeout=600)

    with FakeOpenAIServer(simple_agent, latency_s=0.1) as server:
        drive([config(tmp / "alone", "solo", server.url)])
        alone = len(server.requests)
        drive([config(tmp / "both", "a", server.url), config(tmp / "both", "b", server.url)])
        both = len(server.requests) - alone
    print(f"two concurrent invocations: {both} requests vs {alone} for one alone (ratio {both / alone:.2f}; "
          f"{both - alone} duplicate model calls)")


if __name__ == "__main__":
    zeroblob()
    judge_requests()
    concurrent_invocations()
