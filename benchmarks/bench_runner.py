"""Benchmark the runner: model-call throughput against a fixed-latency gateway, and the
pipeline's own overhead with zero-latency reference agents over the paper's full grid.

    .venv/bin/python benchmarks/bench_runner.py [--latency 0.2] [--slots 1 8 32] [--workers N]

1. Throughput. ``benchmarks/fake_gateway.py`` (a separate process) answers every chat call
   after ``--latency`` seconds; each run makes two calls (a tool call, then an answer). With
   ``agent.concurrency = slots`` the ideal rate is ``slots / latency`` calls per second; the
   benchmark prints the measured rate over that ideal (target >= 0.9), over the gateway's
   busy window (first arrival to last answer: ramp-up and the last, partly filled round
   included), over the whole ``run_grid`` call (planning, index and summary included) and in
   steady state (between ``2 * latency`` after the first answer and before the last one), the client CPU per call (runner process and its shards) and the load average
   (other processes on the machine take CPU from the runner too). At the largest slot count
   it also runs with ``agent.workers = 1`` (one event loop, the pre-shard runner) for
   comparison.

   Why shards. A litellm call costs ~4-6 ms of client CPU in litellm itself (request building
   and tool-schema sanitising, the OpenAI SDK's request/response models, the success-logging
   payload and the cost lookup litellm runs on every response), with no callbacks configured:
   litellm has no switch that skips them (``success_callback``/``callbacks`` are already
   empty; ``turn_off_message_logging`` and the httpx transport measured no better). One event
   loop thus tops out near 150-200 calls/s, and 32 slots at 200 ms need 160 calls/s: the loop
   saturates and queueing stretches every call. The runner therefore spreads litellm runs over
   ``agent.workers`` processes (default: the CPU count), see :mod:`canarykit.agents.runner`.
2. Adaptive concurrency (``--adaptive``). The gateway gets a hidden limit (``--hidden-limit``
   requests in flight and per second, 429 with Retry-After above it); the provider lane starts
   at ``--start`` (``agent.provider_concurrency``) with ``agent.provider_concurrency_max =
   --max`` and the schema's retry policy, over one study's agent stage (120 tasks x 3
   conditions). Printed: calls per second over ``hidden / latency`` (the busy window and the
   whole call), the share of requests answered 429, runs lost (failed), the lane's final, peak
   and mean limit (sampled from :func:`canarykit.agents.adaptive.snapshot`, summed over
   shards); then the same without a limit and ``max = 2 * hidden``: it should reach its max.
3. Overhead. The 8 reference agents of ``params.yaml`` (all but one planted agent, to match
   the paper's 8 models) over 3 conditions x 3 seeds x 120 tasks plus the 2,880-run subtle
   ablation (11,520 runs): a cold invocation (every run executed and written) and a warm one
   (every run reused), as runs per second and per-run cost relative to one gateway call.

Everything is written under ``benchmarks/out/`` (git-ignored). Uses the project's task suite
when ``data/tasks.json`` exists, else 120 generated tasks over the same tools.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "out"
KEY_ENV = "CANARYKIT_BENCH_KEY"

TEMPLATES: list[dict[str, Any]] = [
    {"difficulty": "easy", "prompt": "What is the weather in {city} right now?",
     "plan": [("get_weather", {"city": "{city}"})], "types": ["capability_mirage", "parameter_trap"]},
    {"difficulty": "easy", "prompt": "Compute {a} * {b} + 4 for me ({city} budget).",
     "plan": [("calculate", {"expression": "{a} * {b} + 4"})], "types": ["semantic_decoy"]},
    {"difficulty": "medium", "prompt": "Find the latest news on {city} and search the web for its population.",
     "plan": [("news_search", {"query": "{city}"}), ("web_search", {"query": "{city} population"})],
     "types": ["temporal_decoy", "capability_mirage"]},
    {"difficulty": "hard", "prompt": "Give me the {days}-day forecast for {city}, its air quality and current weather.",
     "plan": [("get_forecast", {"city": "{city}", "days": "{days}"}), ("get_air_quality", {"city": "{city}"}), ("get_weather", {"city": "{city}"})],
     "types": ["granularity_trap", "prerequisite_blindness"]},
]
CITIES = ["Paris", "Mumbai", "Delhi", "Tokyo", "London", "Berlin", "Madrid", "Rome", "Cairo", "Lima"]


def generated_tasks(n: int = 120) -> dict[str, Any]:
    tasks = []
    for i in range(n):
        t = TEMPLATES[i % len(TEMPLATES)]
        vals = {"city": CITIES[i % len(CITIES)], "a": 10 + i, "b": 3 + i % 7, "days": 1 + i % 5}

        def fill(v: Any, vals: dict[str, Any] = vals) -> Any:
            if v == "{days}":
                return vals["days"]
            return v.format(**vals) if isinstance(v, str) else v

        plan = [{"tool": tool, "args": {k: fill(v) for k, v in args.items()}} for tool, args in t["plan"]]
        tools = list(dict.fromkeys(s["tool"] for s in plan))
        tasks.append({"id": f"bench-{i:03d}", "difficulty": t["difficulty"], "prompt": t["prompt"].format(**vals) + f" [#{i}]",
                      "correct_tools": tools, "declared_types": t["types"], "plan": plan,
                      "rubric": [{"kind": "text", "label": "tool", "value": tools[0]}]})
    return {"version": "1", "tasks": tasks}


def build_study(root: Path) -> tuple[Path, dict[str, dict[str, Any]], list[Any]]:
    from canarykit import canaries, tools
    from canarykit.assembly import assembly
    from canarykit.tasks.tasks import load_tasks

    root.mkdir(parents=True, exist_ok=True)
    tasks_path = root / "tasks.json"
    suite = ROOT / "data" / "tasks.json"
    if suite.exists():
        shutil.copy(suite, tasks_path)
    else:
        tasks_path.write_text(json.dumps(generated_tasks()), encoding="utf-8")
    tasks = load_tasks(tasks_path)
    defs = tools.mcp_definitions()
    pools: dict[str, dict[str, Any]] = {}
    for pool, conds in (("standard", ["baseline", "declared", "full"]), ("subtle", ["declared"])):
        recs = canaries.generate_pool(defs, pool, canaries.DEFAULT_SUFFIXES[pool])
        canaries.write_pool(recs, root / f"canaries-{pool}.json")
        built = assembly.build_assemblies(tasks, defs, recs, pool, conds, [0, 1, 2])
        assembly.write_assemblies(built, root / f"assembly-{pool}.parquet")
        pools[pool] = {"canaries": root / f"canaries-{pool}.json", "assembly": root / f"assembly-{pool}.parquet", "conditions": conds}
    return tasks_path, pools, tasks


def subset_tasks(tasks_path: Path, n: int, out: Path) -> Path:
    doc = json.loads(tasks_path.read_text(encoding="utf-8"))
    doc["tasks"] = doc["tasks"][:n]
    out.write_text(json.dumps(doc), encoding="utf-8")
    return out


def start_gateway(latency: float, *limit: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, str(ROOT / "benchmarks" / "fake_gateway.py"), "--latency", str(latency), "--max-seconds", "900",
                             *limit], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline().split()
    if not line or line[0] != "PORT":
        proc.kill()
        raise RuntimeError("the fake gateway did not start")
    return proc, f"http://127.0.0.1:{line[1]}"


def gw(url: str, path: str, method: str = "GET") -> dict[str, Any]:
    req = urllib.request.Request(url + path, method=method, data=b"" if method == "POST" else None)
    with urllib.request.urlopen(req, timeout=10) as r:
        return dict(json.loads(r.read()))


def steady_rate(done: list[float], latency: float) -> float:
    """Calls answered per second between the end of the ramp-up and the start of the tail
    (``2 * latency`` after the first answer, before the last): the rate while every slot has
    work, not diluted by the last round's idle slots (a grid rarely divides into whole rounds)."""
    if len(done) < 3:
        return float("nan")
    lo, hi = done[0] + 2 * latency, done[-1] - 2 * latency
    inside = [t for t in done if lo <= t <= hi]
    return len(inside) / (hi - lo) if hi - lo > latency and len(inside) > 1 else float("nan")


def _cpu_s() -> float:
    """CPU seconds of this process and its reaped children (the runner's shards)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def throughput(tasks_path: Path, pools: dict[str, dict[str, Any]], latency: float, slots_list: list[int],
               workers: int | None = None) -> list[dict[str, Any]]:
    from canarykit.agents import run_grid
    from canarykit.agents.backends import import_litellm

    import_litellm()  # paid once, outside the timed sections
    os.environ[KEY_ENV] = "sk-bench"
    proc, url = start_gateway(latency)
    rows = []
    # The default runner at every slot count, then one event loop at the largest for comparison.
    cases: list[tuple[int, int | None]] = [(slots, workers) for slots in slots_list]
    if max(slots_list) > 1 and workers != 1:
        cases.append((max(slots_list), 1))
    try:
        for slots, n_workers in cases:
            n_tasks, seeds = (min(120, 4 * slots), [0]) if slots <= 30 else (min(120, 2 * slots), [0, 1])
            work = OUT / f"throughput-{slots}"
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir(parents=True)
            tp = subset_tasks(tasks_path, n_tasks, work / "tasks.json")
            # A model litellm knows the price of, as a hosted model would be (for an unknown model
            # litellm's per-call cost lookup fails slowly, which a real study does not pay).
            model = {"name": "bench", "backend": "litellm", "group": "bench", "model": "openai/gpt-4o-mini",
                     "api_base": url + "/v1", "api_key_env": KEY_ENV}
            agent: dict[str, Any] = {"max_turns": 4, "timeout_s": 30, "concurrency": slots, "cache_dir": str(work / "cache"),
                                     "retries": {"max_attempts": 2, "base_delay_s": 0.1, "max_delay_s": 1.0}}
            if n_workers is not None:
                agent["workers"] = n_workers
            gw(url, "/reset", "POST")
            cpu0 = _cpu_s()
            t0 = time.perf_counter()
            s = run_grid([model], tp, {"standard": pools["standard"]}, seeds, agent, work / "store", work / "runs.parquet",
                         work / "summary.json", progress=False)
            wall = time.perf_counter() - t0
            cpu = _cpu_s() - cpu0
            st = gw(url, "/stats")
            window = (st["last"] - st["first"]) if st["count"] else float("nan")
            ideal = slots / latency
            rows.append({
                "slots": slots, "workers": "default" if n_workers is None else n_workers, "runs": s.total, "calls": st["count"], "failed": s.failed, "peak_in_flight": st["peak_in_flight"],
                "ideal_calls_per_s": ideal, "busy_window_s": window, "wall_s": wall,
                "ratio_busy": (st["count"] / window) / ideal, "ratio_wall": (st["count"] / wall) / ideal,
                "ratio_steady": steady_rate(st["done"], latency) / ideal,
                "cpu_ms_per_call": 1000 * cpu / max(st["count"], 1), "loadavg_1m": os.getloadavg()[0],
            })
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    return rows


class LaneSampler:
    """Samples :func:`canarykit.agents.adaptive.snapshot` every ``every_s`` seconds in a thread."""

    def __init__(self, every_s: float = 0.5) -> None:
        import threading

        self.every_s, self.samples = every_s, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        from canarykit.agents.adaptive import snapshot

        t0 = time.perf_counter()
        while not self._stop.wait(self.every_s):
            for st in snapshot().values():
                self.samples.append((time.perf_counter() - t0, st.limit, st.in_flight, st.rate))

    def __enter__(self) -> LaneSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


def adaptive(tasks_path: Path, pools: dict[str, dict[str, Any]], latency: float, start: int, hidden: int | None,
             maximum: int) -> dict[str, Any]:
    """One study's agent stage against a gateway with a hidden limit (``hidden`` requests in
    flight and per second; ``None``: no limit), the provider lane starting at ``start`` and
    allowed to grow to ``maximum``; the schema's default retry policy."""
    from canarykit.agents import run_grid
    from canarykit.agents.adaptive import use_board
    from canarykit.agents.backends import import_litellm

    import_litellm()
    os.environ[KEY_ENV] = "sk-bench"
    limit = ["--max-concurrent", str(hidden), "--max-rps", str(hidden)] if hidden else []
    proc, url = start_gateway(latency, *limit)
    try:
        work = OUT / f"adaptive-{hidden or 'none'}"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        model = {"name": "bench", "backend": "litellm", "group": "bench", "model": "openai/gpt-4o-mini",
                 "api_base": url + "/v1", "api_key_env": KEY_ENV}
        agent: dict[str, Any] = {"max_turns": 4, "timeout_s": 30, "cache_dir": str(work / "cache"),
                                 "provider_concurrency": {"openai": start}, "provider_concurrency_max": {"openai": maximum}}
        seeds = [0] if hidden else [0, 1]
        t0 = time.perf_counter()
        with LaneSampler() as sampler:
            s = run_grid([model], tasks_path, {"standard": pools["standard"]}, seeds, agent, work / "store", work / "runs.parquet",
                         work / "summary.json", progress=False)
        wall = time.perf_counter() - t0
        st = gw(url, "/stats")
        from canarykit.agents.adaptive import snapshot

        final = snapshot().get("openai")
        use_board(None)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    window = (st["last"] - st["first"]) if st["count"] else float("nan")
    ideal = min(hidden or maximum, maximum) / latency
    limits = [lim for _, lim, _, _ in sampler.samples]
    return {
        "hidden_limit": hidden, "start": start, "max": maximum, "runs": s.total, "failed": s.failed, "calls_ok": st["count"],
        "rejected_429": st["rejected"], "share_429": st["rejected"] / max(st["count"] + st["rejected"], 1),
        "peak_in_flight": st["peak_in_flight"], "ideal_calls_per_s": ideal, "busy_window_s": window, "wall_s": wall,
        "ratio_busy": (st["count"] / window) / ideal, "ratio_wall": (st["count"] / wall) / ideal,
        "final_limit": final.limit if final else None, "peak_limit": max(limits, default=None),
        "mean_limit": sum(limits) / len(limits) if limits else None, "loadavg_1m": os.getloadavg()[0],
    }


def overhead(tasks_path: Path, pools: dict[str, dict[str, Any]], latency: float) -> dict[str, Any]:
    from canarykit.agents import run_grid

    models = [m for m in yaml.safe_load((ROOT / "params.yaml").read_text())["models"] if m["backend"] == "reference"][:8]
    work = OUT / "overhead"
    shutil.rmtree(work, ignore_errors=True)
    args = ({"max_turns": 12}, work / "store", work / "runs.parquet", work / "summary.json")
    t0 = time.perf_counter()
    cold = run_grid(models, tasks_path, pools, [0, 1, 2], *args, progress=False)
    t_cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    warm = run_grid(models, tasks_path, pools, [0, 1, 2], *args, progress=False)
    t_warm = time.perf_counter() - t0
    return {
        "agents": len(models), "runs": cold.total, "executed": cold.executed, "copied": cold.deduplicated, "failed": cold.failed,
        "cold_s": t_cold, "cold_runs_per_s": cold.total / t_cold, "cold_ms_per_run": 1000 * t_cold / cold.total,
        "warm_s": t_warm, "warm_reused": warm.reused, "warm_runs_per_s": warm.total / t_warm,
        "per_run_over_one_call": (t_cold / cold.total) / latency,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--slots", type=int, nargs="+", default=[1, 8, 32])
    ap.add_argument("--workers", type=int, default=None, help="agent.workers (default: the runner's default, the CPU count)")
    ap.add_argument("--skip-throughput", action="store_true")
    ap.add_argument("--skip-overhead", action="store_true")
    ap.add_argument("--adaptive", action="store_true", help="only the adaptive-concurrency runs (hidden limit, then none)")
    ap.add_argument("--hidden-limit", type=int, default=16, help="the gateway's hidden limit (requests in flight and per second)")
    ap.add_argument("--start", type=int, default=4, help="agent.provider_concurrency of the adaptive runs")
    ap.add_argument("--max", type=int, default=64, help="agent.provider_concurrency_max of the adaptive runs")
    a = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    tasks_path, pools, tasks = build_study(OUT / "study")
    print(f"study: {len(tasks)} tasks ({'project suite' if (ROOT / 'data' / 'tasks.json').exists() else 'generated'}), "
          f"gateway latency {a.latency * 1000:.0f} ms, {os.cpu_count()} CPUs")
    results: dict[str, Any] = {"latency_s": a.latency}
    if a.adaptive:
        a.skip_throughput = a.skip_overhead = True
        print(f"\nadaptive concurrency (start {a.start}, max {a.max}; ratio over min(hidden limit, max) / latency; "
              "targets: >= 0.8 with <= 10% 429s and no run lost; reaches max without a limit)")
        print(f"{'hidden':>6} {'runs':>5} {'failed':>6} {'calls':>6} {'429s':>5} {'429 %':>6} {'peak':>5} {'ideal/s':>8} "
              f"{'busy s':>7} {'ratio(busy)':>11} {'ratio(wall)':>11} {'final':>5} {'peak lim':>8} {'mean lim':>8} {'load':>5}")
        rows = []
        for hidden, maximum in ((a.hidden_limit, a.max), (None, 2 * a.hidden_limit)):
            r = adaptive(tasks_path, pools, a.latency, a.start, hidden, maximum)
            rows.append(r)
            print(f"{hidden or 'none':>6} {r['runs']:>5} {r['failed']:>6} {r['calls_ok']:>6} {r['rejected_429']:>5} {100 * r['share_429']:>5.1f}% "
                  f"{r['peak_in_flight']:>5} {r['ideal_calls_per_s']:>8.1f} {r['busy_window_s']:>7.2f} {r['ratio_busy']:>11.3f} "
                  f"{r['ratio_wall']:>11.3f} {r['final_limit']!s:>5} {r['peak_limit']!s:>8} {r['mean_limit'] or 0:>8.1f} {r['loadavg_1m']:>5.1f}")
        results["adaptive"] = rows
    if not a.skip_throughput:
        rows = throughput(tasks_path, pools, a.latency, a.slots, a.workers)
        results["throughput"] = rows
        print("\nthroughput (calls/s over ideal = slots/latency; target >= 0.9)")
        print(f"{'slots':>5} {'workers':>7} {'runs':>5} {'calls':>6} {'peak':>5} {'ideal/s':>8} {'busy s':>7} {'wall s':>7} "
              f"{'ratio(busy)':>11} {'ratio(wall)':>11} {'ratio(steady)':>13} {'cpu ms/call':>11} {'load':>5}")
        for r in rows:
            print(f"{r['slots']:>5} {r['workers']:>7} {r['runs']:>5} {r['calls']:>6} {r['peak_in_flight']:>5} {r['ideal_calls_per_s']:>8.1f} "
                  f"{r['busy_window_s']:>7.2f} {r['wall_s']:>7.2f} {r['ratio_busy']:>11.3f} {r['ratio_wall']:>11.3f} "
                  f"{r['ratio_steady']:>13.3f} {r['cpu_ms_per_call']:>11.2f} {r['loadavg_1m']:>5.1f}")
    if not a.skip_overhead:
        o = overhead(tasks_path, pools, a.latency)
        results["overhead"] = o
        print(f"\noverhead: {o['agents']} reference agents, {o['runs']} runs (paper grid + ablation)")
        print(f"  cold: {o['cold_s']:.1f} s, {o['cold_runs_per_s']:.0f} runs/s, {o['cold_ms_per_run']:.2f} ms/run "
              f"({o['executed']} executed, {o['copied']} copied from identical runs, {o['failed']} failed)")
        print(f"  warm: {o['warm_s']:.1f} s, {o['warm_runs_per_s']:.0f} runs/s ({o['warm_reused']} reused)")
        print(f"  per-run pipeline cost / one {a.latency * 1000:.0f} ms model call = {o['per_run_over_one_call']:.4f}")
    (OUT / "bench_runner.json").write_text(json.dumps(results, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
