"""Changing one canary type's suffix re-executes exactly the runs that offer that type."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from fakes.openai_server import FakeOpenAIServer, simple_agent
from fakes.study import make_study, write_assembly, write_pool

from canarykit.agents import run_grid

KEY_ENV = "CANARYKIT_TEST_SUFFIX_KEY"


def test_capability_mirage_suffix_change_reruns_only_affected_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-suffix")
    conds = ["baseline", "declared", "full"]
    tasks_path, pools, tasks = make_study(tmp_path / "study", n_tasks=6, pools={"standard": conds}, seeds=[0, 1])
    agent = {"max_turns": 4, "timeout_s": 5, "concurrency": 4, "cache_dir": str(tmp_path / "cache"),
             "retries": {"max_attempts": 2, "base_delay_s": 0.01, "max_delay_s": 0.02}}
    with FakeOpenAIServer(simple_agent) as server:
        models = [
            {"name": "gw", "backend": "litellm", "group": "hosted", "model": "openai/fake-model", "api_base": server.url, "api_key_env": KEY_ENV},
            {"name": "oracle", "backend": "reference", "agent": "oracle", "group": "reference"},
        ]

        def go() -> tuple[object, pl.DataFrame]:
            s = run_grid(models, tasks_path, pools, [0, 1], agent, tmp_path / "store", tmp_path / "runs.parquet",
                         tmp_path / "summary.json", progress=False)
            executed = set(json.loads((tmp_path / "summary.json").read_text())["executed_runs"])  # a log, not the index
            return s, pl.read_parquet(tmp_path / "runs.parquet").with_columns(pl.col("run_id").is_in(executed).alias("executed"))

        first, _ = go()
        records = write_pool(pools["standard"]["canaries"], "standard", {"capability_mirage": "Enhanced precision variant."})
        built = write_assembly(pools["standard"]["assembly"], tasks, records, "standard", conds, [0, 1])
        affected = {(a.condition, a.seed, a.task_id) for a in built if any(o.canary_type == "capability_mirage" for o in a.offered)}
        assert 0 < len(affected) < len(built)
        calls_before = len(server.requests)
        second, idx = go()
        calls_made = len(server.requests) - calls_before

    rows = idx.with_columns(pl.struct("condition", "seed", "task_id").map_elements(
        lambda r: (r["condition"], r["seed"], r["task_id"]) in affected, return_dtype=pl.Boolean).alias("affected"))
    # Exactly the runs that offer a capability mirage were redone: each distinct one executed,
    # the rest copied from an identical run of this invocation (e.g. declared == full).
    n_affected = rows.filter(pl.col("affected")).height
    assert n_affected == len(models) * len(affected)
    assert rows.filter(pl.col("executed"))["affected"].all()
    assert second.executed == rows.filter(pl.col("affected")).select(pl.struct("model", "identity_hash").n_unique()).item()
    copies = rows.filter(pl.col("affected") & ~pl.col("executed"))
    executed_ids = set(rows.filter(pl.col("executed"))["identity_hash"])
    assert set(copies["identity_hash"]) <= executed_ids and copies.height == n_affected - second.executed
    assert second.reused == rows.height - second.executed
    gw = second.per_model["gw"]
    assert gw.backend_calls == calls_made == 2 * gw.executed  # simple_agent: one tool call, one answer


def test_environment_code_change_reexecutes_but_replays_model_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Editing the tools or the canaries' runtime changes what a model reads, so every run
    re-executes; a model whose conversation is unchanged is answered from the response cache."""
    from canarykit.agents import store

    monkeypatch.setenv(KEY_ENV, "sk-env")
    tasks_path, pools, _ = make_study(tmp_path / "study", n_tasks=4, pools={"standard": ["declared"]}, seeds=[0])
    agent = {"max_turns": 4, "timeout_s": 5, "concurrency": 2, "cache_dir": str(tmp_path / "cache"),
             "retries": {"max_attempts": 2, "base_delay_s": 0.01, "max_delay_s": 0.02}}
    with FakeOpenAIServer(simple_agent) as server:
        models = [
            {"name": "gw", "backend": "litellm", "group": "hosted", "model": "openai/fake-model", "api_base": server.url, "api_key_env": KEY_ENV},
            {"name": "oracle", "backend": "reference", "agent": "oracle", "group": "reference"},
        ]

        def go() -> object:
            return run_grid(models, tasks_path, pools, [0], agent, tmp_path / "store", tmp_path / "runs.parquet",
                            tmp_path / "summary.json", progress=False)

        first = go()
        assert go().executed == 0
        calls = len(server.requests)
        monkeypatch.setattr(store, "environment_version", lambda: "edited-environment")
        again = go()
        assert again.executed == first.total and len(server.requests) == calls
        assert again.per_model["gw"].cached_calls > 0 and again.per_model["gw"].backend_calls == 0
        monkeypatch.setattr(store, "reference_version", lambda: "edited-reference-agents")
        ref_only = go()
        assert ref_only.per_model["oracle"].executed == 4 and ref_only.per_model["gw"].executed == 0
