"""run_grid: reuse, resumability, budgets, identity dedupe, and a SIGKILL mid-study."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from fakes.openai_server import FakeOpenAIServer, body_key, run_key, simple_agent
from fakes.study import make_study

from canarykit.agents import run_grid
from canarykit.store.records import read_record

KEY_ENV = "CANARYKIT_TEST_RUNNER_KEY"
SECRET = "fake-key-runner-0xDEADBEEF"
FAST = {"max_turns": 4, "timeout_s": 5, "concurrency": 4, "retries": {"max_attempts": 2, "base_delay_s": 0.01, "max_delay_s": 0.02}}


def gateway_model(url: str, **extra: Any) -> dict[str, Any]:
    return {"name": "gw", "backend": "litellm", "group": "hosted", "model": "openai/fake-model", "api_base": url, "api_key_env": KEY_ENV, **extra}


def grid(tmp: Path, models: list[dict[str, Any]], tasks_path: Path, pools: dict[str, Any], seeds: list[int] | None = None,
         **agent: Any) -> tuple[Any, pl.DataFrame, dict[str, Any]]:
    cfg = {**FAST, "cache_dir": str(tmp / "cache"), **agent}
    s = run_grid(models, tasks_path, pools, seeds or [0], cfg, tmp / "store", tmp / "runs.parquet", tmp / "summary.json", progress=False)
    return s, pl.read_parquet(tmp / "runs.parquet"), json.loads((tmp / "summary.json").read_text())


def all_records(store: Path) -> list[Any]:
    return [read_record(p) for p in sorted(store.rglob("*.json"))]


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)


def test_gateway_grid_is_resumable_and_key_never_written(tmp_path: Path) -> None:
    tasks_path, pools, tasks = make_study(tmp_path / "study", n_tasks=3)
    with FakeOpenAIServer(simple_agent) as server:
        s1, idx, summ = grid(tmp_path, [gateway_model(server.url)], tasks_path, pools)
        n_runs = 3 * len(tasks)
        assert s1.total == n_runs and s1.executed + s1.deduplicated == n_runs and s1.failed == 0
        assert summ["backend_calls"] == len(server.requests) > 0 and summ["executed"] == s1.executed
        assert set(idx.columns) >= {"model", "group", "backend", "provider", "condition", "pool", "seed", "task_id",
                                    "difficulty", "run_id", "status", "error"}
        # the index says what each run is, never whether this invocation executed it (history: the summary's)
        assert "executed" not in idx.columns and set(summ["executed_runs"]) <= set(idx["run_id"])
        assert len(summ["executed_runs"]) == s1.executed
        assert idx.height == n_runs and idx["provider"].unique().to_list() == ["openai"]
        before = len(server.requests)
        s2, idx2, summ2 = grid(tmp_path, [gateway_model(server.url)], tasks_path, pools)
        assert s2.executed == 0 and s2.reused == n_runs and summ2["backend_calls"] == 0 and len(server.requests) == before
        assert summ2["executed_runs"] == [] and idx2.equals(idx)  # the tracked index: byte for byte the same
        assert all(h["authorization"] == f"Bearer {SECRET}" for _, h in server.requests)
    for p in [*tmp_path.rglob("*.json"), *tmp_path.rglob("*.parquet")]:
        assert SECRET.encode() not in p.read_bytes(), p


def test_error_records_are_re_executed(tmp_path: Path) -> None:
    tasks_path, pools, tasks = make_study(tmp_path / "study", n_tasks=2, pools={"standard": ["baseline"]})
    from fakes.openai_server import Reply, error_body

    with FakeOpenAIServer(lambda b, h, n: Reply(error_body("down"), status=503)) as server:
        s1, idx, _ = grid(tmp_path, [gateway_model(server.url)], tasks_path, pools)
    assert s1.failed == 2 and idx["error"].all() and (idx["status"] == "error").all()
    with FakeOpenAIServer(simple_agent) as server:
        s2, idx2, _ = grid(tmp_path, [gateway_model(server.url)], tasks_path, pools)
    assert s2.executed == 2 and s2.failed == 0 and not idx2["error"].any()


def test_renamed_or_regrouped_model_reuses_its_runs_under_the_new_labels(tmp_path: Path) -> None:
    """Labels are not part of a run's identity: renaming a model re-executes nothing."""
    tasks_path, pools, _ = make_study(tmp_path / "study", n_tasks=2, pools={"standard": ["baseline"]})
    with FakeOpenAIServer(simple_agent) as server:
        s1, idx1, _ = grid(tmp_path, [gateway_model(server.url)], tasks_path, pools)
        n = len(server.requests)
        s2, idx2, summ2 = grid(tmp_path, [gateway_model(server.url, name="gw-renamed", group="other")], tasks_path, pools)
        assert len(server.requests) == n and summ2["backend_calls"] == 0 and summ2["cached_calls"] == 0
        assert s2.executed == 0 and s2.reused == s2.total == s1.total
        assert idx2["model"].unique().to_list() == ["gw-renamed"] and idx2["group"].unique().to_list() == ["other"]
        assert idx2["identity_hash"].sort().to_list() == idx1["identity_hash"].sort().to_list()
        recs = {r.run_id: r for r in all_records(tmp_path / "store")}
        for row in idx2.iter_rows(named=True):  # each copy carries its own labels
            assert (recs[row["run_id"]].model, recs[row["run_id"]].group) == ("gw-renamed", "other")
        # a changed request (decoding) is a new identity: executed, not copied
        s3, _, _ = grid(tmp_path, [gateway_model(server.url, name="gw-renamed", decoding={"temperature": 0.3})], tasks_path, pools)
        assert s3.executed == s3.total and len(server.requests) > n


def test_switching_pools_reuses_runs_whose_tool_lists_the_pools_share(tmp_path: Path) -> None:
    """Baseline lists hold no canary, so the standard and subtle pools offer the same lists."""
    tasks_path, pools, _ = make_study(tmp_path / "study", n_tasks=3, pools={"standard": ["baseline"]})
    _, subtle_pools, _ = make_study(tmp_path / "study", n_tasks=3, pools={"subtle": ["baseline"]})
    with FakeOpenAIServer(simple_agent) as server:
        grid(tmp_path, [gateway_model(server.url)], tasks_path, pools)
        n = len(server.requests)
        s2, idx2, _ = grid(tmp_path, [gateway_model(server.url)], tasks_path, subtle_pools)
    assert len(server.requests) == n and s2.executed == 0 and s2.reused == s2.total > 0
    assert idx2["pool"].unique().to_list() == ["subtle"]


def test_identical_runs_across_pools_are_executed_once(tmp_path: Path) -> None:
    tasks_path, pools, tasks = make_study(tmp_path / "study", n_tasks=5, pools={"standard": ["declared"], "subtle": ["declared"]})
    with FakeOpenAIServer(simple_agent) as server:
        s, idx, _ = grid(tmp_path, [gateway_model(server.url)], tasks_path, pools)
    same = idx.group_by("task_id").agg(pl.col("identity_hash").n_unique().alias("n"))
    n_identical = same.filter(pl.col("n") == 1).height
    assert s.deduplicated == n_identical and s.executed == 2 * len(tasks) - n_identical
    recs = {r.run_id: r for r in all_records(tmp_path / "store")}
    assert len(recs) == idx.height
    for row in idx.iter_rows(named=True):
        r = recs[row["run_id"]]
        assert (r.pool, r.task_id, r.model) == (row["pool"], row["task_id"], row["model"])


def test_budget_stops_new_runs_cleanly(tmp_path: Path) -> None:
    tasks_path, pools, tasks = make_study(tmp_path / "study", n_tasks=5, pools={"standard": ["baseline", "declared"]})
    with FakeOpenAIServer(simple_agent) as server:
        # A model litellm knows the price of, so every call has a cost.
        m = gateway_model(server.url, model="openai/gpt-4o-mini")
        s, idx, summ = grid(tmp_path, [m], tasks_path, pools, concurrency=1, budget_usd=1e-9)
    assert summ["budget_exhausted"] is True and s.skipped > 0 and summ["cost_usd"] > 0
    assert idx.height == s.total - s.skipped and not idx["error"].any()
    assert len(list((tmp_path / "store").rglob("*.json"))) == idx.height


@pytest.mark.slow  # whole workflow invocations: tens of seconds on a loaded machine
def test_sigkill_mid_study_leaves_no_partial_record_and_repeats_no_finished_call(tmp_path: Path) -> None:
    tasks_path, pools, tasks = make_study(tmp_path / "study", n_tasks=5, seeds=[0, 1])
    with FakeOpenAIServer(simple_agent, latency_s=0.15) as server:
        cfg = {
            "models": [gateway_model(server.url)], "tasks_path": str(tasks_path),
            "pools": {k: {**v, "canaries": str(v["canaries"]), "assembly": str(v["assembly"])} for k, v in pools.items()},
            "seeds": [0, 1], "agent_cfg": {**FAST, "concurrency": 2, "cache_dir": str(tmp_path / "cache")},
            "store_dir": str(tmp_path / "store"), "index_out": str(tmp_path / "runs.parquet"),
            "summary_out": str(tmp_path / "summary.json"), "progress": False,
        }
        (tmp_path / "grid.json").write_text(json.dumps(cfg))
        driver = Path(__file__).parent / "fakes" / "grid_driver.py"
        env = {**os.environ, KEY_ENV: SECRET}
        proc = subprocess.Popen([sys.executable, str(driver), str(tmp_path / "grid.json")], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        store = tmp_path / "store"
        while time.monotonic() < deadline and len(list(store.rglob("*.json"))) < 4:
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        finished = all_records(store)  # every file parses: no partial record
        assert 4 <= len(finished) < 30
        assert not list(store.rglob("*.tmp"))  # orphan temp files of an interrupted write are hidden dot-files, if any
        prompts = {t.id: t.prompt for t in tasks}
        done_keys = {run_key({"messages": [{"role": "user", "content": prompts[r.task_id]}],
                              "tools": [{"function": {"name": o.name}} for o in r.offered]}) for r in finished}
        first_phase = len(server.requests)
        out = subprocess.run([sys.executable, str(driver), str(tmp_path / "grid.json")], env=env, capture_output=True, timeout=120)
        assert out.returncode == 0, out.stderr.decode()[-2000:]
        second = server.requests[first_phase:]
        assert all(run_key(b) not in done_keys for b, _ in second)
        repeated = [k for k, c in server.counts.items() if c > 1]
        assert len(repeated) <= 2  # at most the calls in flight when killed (concurrency 2)
        assert {body_key(b) for b, _ in second} >= set(repeated)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["reused"] >= len(finished) and summary["failed"] == 0
    assert len(all_records(store)) == summary["total"] == 3 * 2 * len(tasks)


def _index_by_run(idx: pl.DataFrame) -> dict[str, tuple[Any, ...]]:
    return {r["run_id"]: (r["status"], r["error"]) for r in idx.iter_rows(named=True)}


def test_sharded_grid_matches_one_process_and_holds_provider_limit(tmp_path: Path) -> None:
    import threading

    tasks_path, pools, tasks = make_study(tmp_path / "study", n_tasks=6, pools={"standard": ["baseline", "declared"], "subtle": ["declared"]})
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}

    def handler(body: Any, headers: dict[str, str], n: int) -> Any:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.03)
        with lock:
            state["now"] -= 1
        return simple_agent(body, headers, n)

    limits = {"concurrency": 8, "provider_concurrency": {"openai": 3}}
    with FakeOpenAIServer(handler) as server:
        s2, idx2, summ2 = grid(tmp_path / "two", [gateway_model(server.url)], tasks_path, pools, workers=2, **limits)
        peak_sharded = state["peak"]
        s1, idx1, summ1 = grid(tmp_path / "one", [gateway_model(server.url)], tasks_path, pools, workers=1, **limits)
        n_requests = len(server.requests)
        # Resumable: a second sharded invocation reuses everything and calls nothing.
        s3, _, summ3 = grid(tmp_path / "two", [gateway_model(server.url)], tasks_path, pools, workers=2, **limits)
        assert s3.reused == s3.total and summ3["backend_calls"] == 0 and len(server.requests) == n_requests
    assert 1 <= peak_sharded <= 3  # the per-shard shares of the provider limit sum to the limit
    keys = ("total", "executed", "reused", "deduplicated", "failed", "skipped", "backend_calls", "cached_calls", "budget_exhausted")
    assert {k: summ2[k] for k in keys} == {k: summ1[k] for k in keys}
    assert s2.failed == 0 and s2.executed > 0 and summ2["per_model"]["gw"]["backend_calls"] == summ2["backend_calls"]
    assert _index_by_run(idx2) == _index_by_run(idx1) and set(summ2["executed_runs"]) == set(summ1["executed_runs"])
    assert len(list((tmp_path / "two" / "store").rglob("*.json"))) == idx2.height == s2.total


def test_budget_holds_across_shards(tmp_path: Path) -> None:
    tasks_path, pools, tasks = make_study(tmp_path / "study", n_tasks=6, pools={"standard": ["baseline", "declared"]})
    with FakeOpenAIServer(simple_agent, latency_s=0.02) as server:
        m = gateway_model(server.url, model="openai/gpt-4o-mini")
        s, idx, summ = grid(tmp_path, [m], tasks_path, pools, concurrency=2, workers=2, budget_usd=1e-9)
    assert summ["budget_exhausted"] is True and s.skipped > 0 and summ["cost_usd"] > 0
    assert s.executed <= 2 + 2  # each shard starts at most one run after the other's spend lands
    assert idx.height == s.total - s.skipped and not idx["error"].any()
    assert len(list((tmp_path / "store").rglob("*.json"))) == idx.height


def test_missing_api_key_stops_before_any_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from canarykit.errors import ConfigError

    monkeypatch.delenv("CANARYKIT_NO_SUCH_KEY", raising=False)
    tasks_path, pools, _ = make_study(tmp_path / "study", n_tasks=2, pools={"standard": ["declared"]})
    models = [{"name": "hosted", "backend": "litellm", "model": "openai/gpt-4.1", "api_key_env": "CANARYKIT_NO_SUCH_KEY", "group": "mid"}]
    with pytest.raises(ConfigError, match=r"models\[0\]\.api_key_env.*CANARYKIT_NO_SUCH_KEY"):
        run_grid(models, tasks_path, pools, [0], {"max_turns": 2}, tmp_path / "store", tmp_path / "i.parquet", tmp_path / "s.json", progress=False)
    assert not (tmp_path / "i.parquet").exists() and not (tmp_path / "store").exists()


def test_a_bad_agent_mapping_is_one_line_naming_its_key_before_any_run(tmp_path: Path) -> None:
    """A script's agent mapping is checked as params.yaml's agent section would be."""
    from canarykit.errors import ConfigError

    tasks_path, pools, _ = make_study(tmp_path / "study", n_tasks=2, pools={"standard": ["declared"]})
    models = [{"name": "oracle", "backend": "reference", "agent": "oracle", "group": "reference"}]
    with pytest.raises(ConfigError) as err:
        run_grid(models, tasks_path, pools, [0], {"max_turns": 4, "concurrency": 0}, tmp_path / "store", tmp_path / "i.parquet",
                 tmp_path / "s.json", progress=False)
    assert str(err.value) == "params.yaml: agent.concurrency: 0 is less than the minimum of 1"
    assert not (tmp_path / "i.parquet").exists() and not (tmp_path / "store").exists()


def test_keys_left_out_of_the_agent_mapping_take_the_schema_defaults() -> None:
    from canarykit.agents import AgentConfig, RetryPolicy
    from canarykit.study.config import params_schema

    section = params_schema()["properties"]["agent"]["properties"]
    cfg = AgentConfig.parse({"max_turns": 4})
    assert cfg.max_turns == 4
    for key in ("timeout_s", "concurrency", "workers", "budget_usd", "allow_short_max_turns"):
        assert getattr(cfg, key) == section[key]["default"], key
    retries = section["retries"]["properties"]
    assert {k: getattr(cfg.retries, k) for k in retries} == {k: v["default"] for k, v in retries.items()}
    assert RetryPolicy() == RetryPolicy.from_config(None) == RetryPolicy.from_config(cfg.retries)
    assert RetryPolicy().max_attempts == retries["max_attempts"]["default"]


def test_an_unknown_backend_is_one_line_naming_the_model_and_the_known_backends() -> None:
    from canarykit.agents import make_backend
    from canarykit.errors import ConfigError

    with pytest.raises(ConfigError) as err:
        make_backend({"name": "gpt", "backend": "litelm", "model": "openai/gpt-4.1"})
    assert str(err.value) == ("params.yaml: models[gpt].backend: unknown backend 'litelm'; "
                              "expected one of ['litellm', 'local', 'ollama', 'reference']")
