"""The hard limit on built-in tool calls (issue 22, item 7), measured (printed; never asserted).

1. The quoted query ``SELECT instr(hex(zeroblob(30000000)), hex(zeroblob(3000000))||'1')``
   (one SQLite function call, minutes of work the progress handler never interrupts): the
   limits (the database's own 2 s, the call's hard 3 s) and the time until the error came
   back, in process, over MCP (``canarykit serve-tools database``) and through
   ``canarykit proxy`` in front of it; the ratio to the database's 2 s limit (target <= 2).
2. The cost of the worker process (a persistent one, killed only when a call overruns):
   every plan step of the task suite called in this process (``execute_here``) and through
   the worker (``execute``), per call; then the agent stage of the offline reference study
   (the reference agents of params.yaml, every condition, one seed, all tasks) both ways:
   wall time, tool calls made, and the ratio (worker / in process).

    .venv/bin/python benchmarks/bench_tool_limits.py [--seeds 1]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
INSTR = "SELECT instr(hex(zeroblob(30000000)), hex(zeroblob(3000000))||'1')"
CLI = str(Path(sys.executable).parent / "canarykit")


def in_process() -> float:
    from canarykit.tools import execute

    execute("query_database", {"sql": "SELECT 1"})  # a ready worker
    t0 = time.perf_counter()
    r = execute("query_database", {"sql": INSTR})
    dt = time.perf_counter() - t0
    assert r.is_error and "stopped" in r.content, r.content
    return dt


def over_mcp(argv: list[str]) -> float:
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None

    def send(msg: dict[str, Any]) -> None:
        proc.stdin.write((json.dumps(msg) + "\n").encode())  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]

    def answer(msg_id: int) -> dict[str, Any]:
        while True:
            msg = json.loads(proc.stdout.readline())  # type: ignore[union-attr]
            if msg.get("id") == msg_id:
                return dict(msg["result"])

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
        answer(1)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "query_database", "arguments": {"sql": "SELECT 1"}}})
        answer(2)  # the worker is up
        t0 = time.perf_counter()
        send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
              "params": {"name": "query_database", "arguments": {"sql": INSTR}}})
        result = answer(3)
        dt = time.perf_counter() - t0
        assert result["isError"] and "stopped" in result["content"][0]["text"], result
        return dt
    finally:
        proc.kill()
        proc.wait()


def per_call() -> dict[str, float]:
    from canarykit.tools import execute, execute_here

    steps = [(s["tool"], s["args"]) for t in json.loads((ROOT / "data/tasks.json").read_text())["tasks"]
             for s in t.get("plan") or []]
    for name, args in steps:
        execute(name, args)
        execute_here(name, args)
    out = {}
    for label, fn in (("in_process", execute_here), ("worker", execute)):
        t0 = time.perf_counter()
        for _ in range(5):
            for name, args in steps:
                fn(name, args)
        out[label] = (time.perf_counter() - t0) / (5 * len(steps))
    out["calls"] = float(len(steps))
    return out


def agent_stage(seeds: int) -> dict[str, Any]:
    from fakes.study import make_study, no_fsync

    from canarykit import canaries, tools
    from canarykit.agents import run_grid
    from canarykit.agents.loop import Environment
    from canarykit.tasks import tasks

    cfg = yaml.safe_load((ROOT / "params.yaml").read_text())
    models = [m for m in cfg["models"] if m.get("backend") == "reference"]
    conditions = list(cfg["study"]["conditions"])
    out: dict[str, Any] = {"models": len(models), "conditions": conditions}
    with tempfile.TemporaryDirectory() as tmp, no_fsync():
        tasks_path, pools, _ = make_study(Path(tmp) / "study", pools={"standard": conditions}, seeds=tuple(range(seeds)))
        # each mode twice, alternating, the faster of the two kept (the machine is shared)
        for i, (label, fn) in enumerate([("in_process", tools.execute_here), ("worker", tools.execute)] * 2):
            calls = [0]

            def counted(name: str, args: Any, fn: Any = fn, calls: list[int] = calls) -> Any:
                calls[0] += 1
                return fn(name, args)

            env = Environment(execute=counted, run_canary=canaries.run_canary, compose_answer=tasks.compose_answer)
            work = Path(tmp) / f"{label}-{i}"
            t0 = time.perf_counter()
            s = run_grid(models, tasks_path, pools, list(range(seeds)), {"cache_dir": str(work / "cache")}, work / "store",
                         work / "index.parquet", work / "summary.json", progress=False, env=env)
            wall = round(time.perf_counter() - t0, 2)
            if label not in out or wall < out[label]["wall_s"]:
                out[label] = {"wall_s": wall, "runs": s.total, "tool_calls": calls[0]}
    out["ratio"] = round(out["worker"]["wall_s"] / out["in_process"]["wall_s"], 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1, help="seeds of the agent-stage comparison (default 1)")
    ns = parser.parse_args()
    from canarykit.tools import CALL_TIME_LIMIT_S
    from canarykit.tools.database import QUERY_TIME_LIMIT_S

    with tempfile.TemporaryDirectory() as traces:
        stops = {
            "in_process": in_process(),
            "serve_tools": over_mcp([CLI, "serve-tools", "database"]),
            "proxy": over_mcp([CLI, "proxy", "--trace-dir", traces, "--", CLI, "serve-tools", "database"]),
        }
    print(f"instr query: database limit {QUERY_TIME_LIMIT_S:g} s, hard call limit {CALL_TIME_LIMIT_S:g} s")
    for where, dt in stops.items():
        print(f"  {where:12s} stopped after {dt:5.2f} s  ({dt / QUERY_TIME_LIMIT_S:.2f}x the database's limit)")
    pc = per_call()
    print(f"per call ({int(pc['calls'])} plan steps x 5): in process {pc['in_process'] * 1e6:7.1f} us, "
          f"worker {pc['worker'] * 1e6:7.1f} us (+{(pc['worker'] - pc['in_process']) * 1e6:.1f} us, "
          f"ratio {pc['worker'] / pc['in_process']:.2f})")
    st = agent_stage(ns.seeds)
    print(f"agent stage ({st['models']} reference agents x {len(st['conditions'])} conditions x {ns.seeds} seed(s), "
          f"{st['worker']['runs']:,} runs, {st['worker']['tool_calls']:,} tool calls): in process "
          f"{st['in_process']['wall_s']} s, worker {st['worker']['wall_s']} s, ratio {st['ratio']}")
    print(f"load average: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
