"""A small real study on disk (tasks, canary pools, assemblies) built with the real modules."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "data" / "tasks.json"

@contextlib.contextmanager
def no_fsync() -> Iterator[None]:
    """Skip ``os.fsync`` while a large grid of reference runs is written to a throwaway
    store: the run store fsyncs every record (durability is tested elsewhere), which is most
    of a calibration grid's time on a busy disk and says nothing about its known answers."""
    real = os.fsync
    os.fsync = lambda fd: None
    try:
        yield
    finally:
        os.fsync = real


def write_tasks(path: Path, n: int | None = None, *, suite_only: bool = True) -> list[Any]:
    """A task file of the suite's first ``n`` tasks; returns the tasks."""
    from canarykit.tasks.tasks import load_tasks

    doc = json.loads(SUITE.read_text(encoding="utf-8"))
    if n is not None:
        doc = {**doc, "tasks": doc["tasks"][:n]}
    path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    return load_tasks(path)


def write_pool(path: Path, pool: str, suffixes: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Write a pool file (canaries and their controls); return the canaries."""
    from canarykit import canaries, tools

    sfx = dict(canaries.DEFAULT_SUFFIXES[pool])
    sfx.update(suffixes or {})
    result = canaries.build_pool(tools.mcp_definitions(), pool, sfx, controls=True)
    canaries.write_pool(result, path)
    return result.canaries


def write_study_pool(path: Path, pool: str, tasks: Sequence[Any], tasks_path: Path | str) -> dict[str, Any]:
    """Write the pool a study of ``tasks`` gets from the workflow (the generate_canaries
    rule's call, :func:`canarykit.canaries.study_pool`, with params.yaml's canaries
    settings: special cases, fit, suffixes, wording variants, the task-suite check); return
    the pool document."""
    from canarykit import canaries, tools
    from canarykit.study.config import load_params

    cfg = load_params(ROOT / "params.yaml")["canaries"]
    listed = canaries.ingest_tools(tools.mcp_definitions(), "tools.json", strict=True)
    result = canaries.study_pool(
        listed, tasks, pool, fit=cfg["fit"], suffixes=cfg["suffixes"][pool],
        control_suffixes=cfg["control_suffixes"][pool], special_cases=cfg["special_cases"],
        generator=cfg["generator"], llm=cfg["llm"], source="tools.json", tasks_source=str(tasks_path),
        variants=cfg["variants"], wording_seed=cfg["wording_seed"],
    )
    canaries.write_pool(result, path)
    return result.document()


def write_assembly(path: Path, tasks: Sequence[Any], records: list[dict[str, Any]], pool: str,
                   conditions: Sequence[str], seeds: Sequence[int], controls: list[dict[str, Any]] | None = None) -> list[Any]:
    from canarykit import tools
    from canarykit.assembly import assembly

    built = assembly.build_assemblies(tasks, tools.mcp_definitions(), records, pool, conditions, seeds, controls)
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
        from canarykit.canaries import load_pool_document

        controls = load_pool_document(root / f"canaries-{pool}.json")["controls"]
        write_assembly(root / f"assembly-{pool}.parquet", tasks, records, pool, conds, seeds, controls)
        cfg[pool] = {"canaries": root / f"canaries-{pool}.json", "assembly": root / f"assembly-{pool}.parquet", "conditions": list(conds)}
    return tasks_path, cfg, tasks
