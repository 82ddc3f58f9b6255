"""The reference agents behind an OpenAI-compatible endpoint (tests/fakes/reference_server.py)
reached through the LiteLLM backend, like any hosted model: each run makes exactly the calls
the same agent makes through the reference backend on the same lists. This is how agents
nobody has seen are checked: only the chat request reaches them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest
from fakes.reference_server import ReferenceAgentServer
from fakes.study import make_study, no_fsync

from canarykit.agents import run_grid
from canarykit.assembly.assembly import load_assemblies
from canarykit.store.records import read_record

AGENTS: dict[str, dict[str, Any]] = {
    "planted:capability_mirage": {"agent": "planted", "canary_type": "capability_mirage", "take_prob": 0.7, "backoff_prob": 0.5},
    "planted:parameter_trap": {"agent": "planted", "canary_type": "parameter_trap", "take_prob": 0.7, "backoff_prob": 0.5},
    "surface": {"agent": "surface", "take_prob": 0.7, "backoff_prob": 0.5},
    "claims": {"agent": "claims", "take_prob": 0.9, "backoff_prob": 0.5},
    "careful": {"agent": "careful", "take_prob": 0.9, "backoff_prob": 0.5},
    "uniform": {"agent": "uniform", "backoff_prob": 0.5},
    "lexical": {"agent": "lexical"},
}


def _calls(store: Path, index: Path) -> dict[tuple[str, str, str, int, str, str], list[tuple[str, Any]]]:
    out = {}
    for row in pl.read_parquet(index).iter_rows(named=True):
        rec = read_record(store / row["run_id"][:2] / f"{row['run_id']}.json")
        assert rec.status == "completed", (row["model"], rec.task_id, rec.status)
        key = (row["model"].removeprefix("http:"), row["condition"], row["pool"], int(row["seed"]), row["task_id"], row["arm"])
        out[key] = [(e.name, e.arguments) for e in rec.events if e.kind == "tool_call"]
    return out


def test_the_same_policies_behind_an_api_base_make_the_same_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    conditions = ["declared", "control", "full"]
    tasks_path, pools, tasks = make_study(tmp_path / "study", n_tasks=8, pools={"standard": conditions, "subtle": ["declared"]},
                                          seeds=(0,))
    reference = [{"name": name, "backend": "reference", "group": "reference", **spec} for name, spec in AGENTS.items()]
    with ReferenceAgentServer(tasks_path, AGENTS) as server, no_fsync():
        hosted = [{"name": f"http:{name}", "backend": "litellm", "model": f"openai/{name}", "api_base": server.url,
                   "group": "test"} for name in AGENTS]
        ran = {}
        for label, models in (("ref", reference), ("http", hosted)):
            summary = run_grid(models, tasks_path, pools, [0], {"max_turns": 12, "concurrency": 4}, tmp_path / label / "store",
                               tmp_path / label / "index.parquet", tmp_path / label / "summary.json", progress=False)
            lists = sum(len(load_assemblies(cfg["assembly"])) for cfg in pools.values())  # a control list per offered type
            assert summary.failed == 0 and summary.total == len(AGENTS) * lists
            ran[label] = _calls(tmp_path / label / "store", tmp_path / label / "index.parquet")
        assert len(server.requests) >= summary.total  # every hosted run talked to the server
        assert {body["model"] for body, _ in server.requests} == set(AGENTS)
    assert ran["ref"].keys() == ran["http"].keys()
    for key, calls in ran["ref"].items():
        assert calls == ran["http"][key], key
    # the grid exercised the policies: look-alikes were taken and results read
    taken = {key[0] for key, calls in ran["ref"].items() if any(name not in {s.tool for t in tasks for s in t.plan} for name, _ in calls)}
    assert {"planted:capability_mirage", "surface", "claims", "careful", "uniform"} <= taken
