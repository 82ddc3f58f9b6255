"""Run claims: two invocations on one study never execute (or pay for) the same run, a
crashed holder frees its claim at once, and the resume command after kill -9 finishes the
study without repeating a finished call."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from fakes.openai_server import FakeOpenAIServer, simple_agent
from fakes.study import make_study

from canarykit.agents.store import RunStore
from canarykit.store.records import read_record

KEY_ENV = "CANARYKIT_TEST_CLAIMS_KEY"
SECRET = "fake-key-claims-0xC0FFEE42"
DRIVER = Path(__file__).parent / "fakes" / "grid_driver.py"


def _holder(store: Path, key: str, *, hold_s: float) -> subprocess.Popen[str]:
    code = textwrap.dedent(f"""
        import sys, time
        from canarykit.agents.store import RunStore
        claim = RunStore({str(store)!r}).try_claim({key!r})
        print("held" if claim else "refused", flush=True)
        time.sleep({hold_s})
    """)
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


def test_a_claim_is_exclusive_within_and_across_processes(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "store")
    claim = store.try_claim("identity-a")
    assert claim is not None
    assert store.try_claim("identity-a") is None  # this process already holds it
    assert RunStore(tmp_path / "store").try_claim("identity-a") is None  # another store object too
    other = _holder(tmp_path / "store", "identity-a", hold_s=0)
    assert other.communicate(timeout=60)[0].strip() == "refused"
    claim.release()
    other = _holder(tmp_path / "store", "identity-a", hold_s=0)
    assert other.communicate(timeout=60)[0].strip() == "held"
    again = store.try_claim("identity-a")
    assert again is not None
    again.release()
    assert not list(store.claims_dir.glob("*.lock"))  # released claims leave no file


def test_a_killed_holder_frees_its_claim_at_once(tmp_path: Path) -> None:
    holder = _holder(tmp_path / "store", "identity-b", hold_s=120)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    store = RunStore(tmp_path / "store")
    assert store.try_claim("identity-b") is None
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=30)
    claim = store.try_claim("identity-b")  # no stale claim: the kernel dropped the lock
    assert claim is not None
    claim.release()


def _config(tmp_path: Path, url: str, tasks_path: Path, pools: dict[str, Any], out: str, workers: int) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    cfg = {
        "models": [{"name": "gw", "backend": "litellm", "group": "hosted", "model": "openai/fake-model", "api_base": url,
                    "api_key_env": KEY_ENV}],
        "tasks_path": str(tasks_path),
        "pools": {k: {**v, "canaries": str(v["canaries"]), "assembly": str(v["assembly"])} for k, v in pools.items()},
        "seeds": [0, 1],
        "agent_cfg": {"max_turns": 4, "timeout_s": 10, "concurrency": 3, "workers": workers, "cache_dir": str(tmp_path / "cache"),
                      "retries": {"max_attempts": 2, "base_delay_s": 0.01, "max_delay_s": 0.02}},
        "store_dir": str(tmp_path / "store"), "index_out": str(tmp_path / f"{out}.parquet"),
        "summary_out": str(tmp_path / f"{out}.json"), "progress": False,
    }
    path = tmp_path / f"{out}.config.json"
    path.write_text(json.dumps(cfg))
    return path


def _drive(configs: list[Path], envs: list[dict[str, str]]) -> None:
    procs = [subprocess.Popen([sys.executable, str(DRIVER), str(c)], env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for c, e in zip(configs, envs, strict=True)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()[-3000:]


@pytest.mark.slow  # whole workflow invocations: tens of seconds on a loaded machine
def test_two_concurrent_invocations_make_each_model_call_once(tmp_path: Path) -> None:
    tasks_path, pools, tasks = make_study(tmp_path / "study", n_tasks=4, seeds=[0, 1])
    # Each invocation has its own key value (keys are not part of a run's identity), so the
    # gateway can hold every request until both invocations are calling: they overlap for sure.
    seen: set[str] = set()
    both_calling = threading.Condition()

    def handler(body: Any, headers: dict[str, str], n: int) -> Any:
        with both_calling:
            seen.add(headers.get("authorization", ""))
            both_calling.notify_all()
            both_calling.wait_for(lambda: len(seen) >= 2, timeout=120)
        return simple_agent(body, headers, n)

    with FakeOpenAIServer(handler, latency_s=0.05) as server:
        both = tmp_path / "both"
        _drive([_config(both, server.url, tasks_path, pools, name, workers) for name, workers in (("a", 1), ("b", 2))],
               [{**os.environ, KEY_ENV: f"{SECRET}-{name}"} for name in ("a", "b")])
        counts = set(server.counts.values())
        n_requests = len(server.requests)
    assert counts == {1}  # every model call was made once, by one of the two invocations
    summaries = [json.loads((both / f"{n}.json").read_text()) for n in ("a", "b")]
    total = 3 * 2 * len(tasks)
    assert all(s["total"] == total and s["failed"] == 0 and s["executed"] + s["reused"] == total for s in summaries)
    assert all(0 < s["executed"] < total for s in summaries)  # they really ran side by side
    assert sum(s["backend_calls"] for s in summaries) == n_requests
    records = [read_record(f) for f in (both / "store").rglob("*.json") if f.parent.name != ".retry"]
    assert len(records) == total and not any(r.error for r in records)
    # what the two paid together is what the records say one execution of each run cost
    assert n_requests == sum(r.n_model_calls - r.n_cached_calls for r in records if not _is_copy(r, records))


def _is_copy(rec: Any, records: list[Any]) -> bool:
    """A record copied from an identical run of the same invocation (same identity, other labels)."""
    same = sorted((r for r in records if r.identity == rec.identity), key=lambda r: r.run_id)
    return same[0] is not rec


@pytest.mark.slow
def test_kill_9_of_snakemake_then_make_resume_repeats_no_finished_call(tmp_path: Path) -> None:
    import shutil

    import yaml
    from fakes.workflow import ROOT, copy_workflow, env

    with FakeOpenAIServer(simple_agent, latency_s=0.3) as server:
        repo = copy_workflow(tmp_path / "repo", per_difficulty=2, models=())
        for item in ("Makefile", "pyproject.toml"):
            shutil.copy2(ROOT / item, repo / item)
        p = repo / "params.yaml"
        cfg = yaml.safe_load(p.read_text())
        cfg["models"] = [{"name": "gw", "backend": "litellm", "model": "openai/fake-model", "api_base": server.url,
                          "api_key_env": KEY_ENV, "provider": "gwco"}]
        cfg["agent"].update(concurrency=2, workers=1)
        p.write_text(yaml.safe_dump(cfg, sort_keys=False))
        e = {**env(), KEY_ENV: SECRET}
        proc = subprocess.Popen(["snakemake", "--cores", "2"], cwd=repo, env=e, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        store = repo / "results/runs/store"
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and len([f for f in store.rglob("*.json") if f.parent.name != ".retry"]) < 6:
            time.sleep(0.1)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        time.sleep(3)  # the run job notices its parent died and stops spending
        stopped_at = len(server.requests)
        time.sleep(3)
        assert len(server.requests) == stopped_at
        venv = Path(sys.executable).parent.parent
        # the project's venv, taken as installed (-o: never reinstall it from this copy, which
        # would point its editable install at the copy)
        out = subprocess.run(["make", "resume", f"VENV={venv}", "CORES=2", "-o", str(venv / "bin" / ".installed")],
                             cwd=repo, env=e, capture_output=True, text=True, timeout=900)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
        repeated = [k for k, c in server.counts.items() if c > 1]
        assert len(repeated) <= 2  # at most the calls in flight when killed (concurrency 2)
    summary = json.loads((repo / "results/logs/run-summary.json").read_text())
    assert summary["failed"] == 0 and summary["reused"] >= 6
    assert (repo / "results/table1.csv").exists()
