"""A small real study on disk (tasks, canary pools, assemblies) built with the real modules."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "data" / "tasks.json"

#: Used when the project's task suite is not there: one task per tool family.
FALLBACK_TASKS: list[dict[str, Any]] = [
    {"id": "fb-weather", "difficulty": "easy", "prompt": "What is the weather in Paris right now?",
     "plan": [{"tool": "get_weather", "args": {"city": "Paris"}}], "declared_types": ["capability_mirage", "parameter_trap"]},
    {"id": "fb-calc", "difficulty": "easy", "prompt": "Compute 17 * 23 + 4.",
     "plan": [{"tool": "calculate", "args": {"expression": "17 * 23 + 4"}}], "declared_types": ["semantic_decoy"]},
    {"id": "fb-news", "difficulty": "medium", "prompt": "Find the latest news on NVIDIA earnings and search the web for its revenue.",
     "plan": [{"tool": "news_search", "args": {"query": "NVIDIA earnings"}}, {"tool": "web_search", "args": {"query": "NVIDIA revenue"}}],
     "declared_types": ["temporal_decoy", "capability_mirage"]},
    {"id": "fb-file", "difficulty": "easy", "prompt": "Read the file notes.txt and tell me what it says.",
     "plan": [{"tool": "read_file", "args": {"path": "notes.txt"}}], "declared_types": ["prerequisite_blindness"]},
    {"id": "fb-forecast", "difficulty": "medium", "prompt": "Give me the 3-day forecast for Mumbai and its air quality.",
     "plan": [{"tool": "get_forecast", "args": {"city": "Mumbai", "days": 3}}, {"tool": "get_air_quality", "args": {"city": "Mumbai"}}],
     "declared_types": ["granularity_trap", "capability_mirage"]},
]


def _fallback_doc() -> dict[str, Any]:
    tasks = []
    for t in FALLBACK_TASKS:
        tools = list(dict.fromkeys(s["tool"] for s in t["plan"]))
        tasks.append({**t, "correct_tools": tools, "rubric": [{"kind": "text", "label": "tool", "value": tools[0]}]})
    return {"version": "1", "tasks": tasks}


def write_tasks(path: Path, n: int | None = None, *, suite_only: bool = False) -> list[Any]:
    """A task file of the suite's first ``n`` tasks (or the fallback tasks); returns the tasks."""
    from canarykit.tasks import load_tasks

    if SUITE.exists():
        doc = json.loads(SUITE.read_text(encoding="utf-8"))
        if n is not None:
            doc = {**doc, "tasks": doc["tasks"][:n]}
    else:
        if suite_only:
            import pytest

            pytest.skip(f"the task suite {SUITE} is not there yet")
        doc = _fallback_doc()
        if n is not None:
            doc["tasks"] = doc["tasks"][:n]
    path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    return load_tasks(path)


def write_pool(path: Path, pool: str, suffixes: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    from canarykit import canaries, tools

    sfx = dict(canaries.DEFAULT_SUFFIXES[pool])
    sfx.update(suffixes or {})
    records = canaries.generate_pool(tools.mcp_definitions(), pool, sfx)
    canaries.write_pool(records, path)
    return records


def write_assembly(path: Path, tasks: Sequence[Any], records: list[dict[str, Any]], pool: str,
                   conditions: Sequence[str], seeds: Sequence[int]) -> list[Any]:
    from canarykit import assembly, tools

    built = assembly.build_assemblies(tasks, tools.mcp_definitions(), records, pool, conditions, seeds)
    assembly.write_assemblies(built, path)
    return built


def make_study(root: Path, *, n_tasks: int | None = None, pools: Mapping[str, Sequence[str]] | None = None,
               seeds: Sequence[int] = (0,), suffixes: Mapping[str, Mapping[str, str]] | None = None,
               suite_only: bool = False) -> tuple[Path, dict[str, dict[str, Any]], list[Any]]:
    """Write tasks, pools and assemblies under ``root``; return (tasks path, pools config, tasks)."""
    root.mkdir(parents=True, exist_ok=True)
    pools = pools or {"standard": ["baseline", "declared", "full"]}
    tasks_path = root / "tasks.json"
    tasks = write_tasks(tasks_path, n_tasks, suite_only=suite_only)
    cfg: dict[str, dict[str, Any]] = {}
    for pool, conds in pools.items():
        records = write_pool(root / f"canaries-{pool}.json", pool, (suffixes or {}).get(pool))
        write_assembly(root / f"assembly-{pool}.parquet", tasks, records, pool, conds, seeds)
        cfg[pool] = {"canaries": root / f"canaries-{pool}.json", "assembly": root / f"assembly-{pool}.parquet", "conditions": list(conds)}
    return tasks_path, cfg, tasks
