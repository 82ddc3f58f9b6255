"""Reference agents: oracle, random, lexical and planted, through the real loop."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml
from fakes.study import make_study
from fakes.world import FAKE_ENV, FakeTask, Step, toolset

from canarykit.agents import RunSpec, make_backend, run_grid, run_one
from canarykit.agents.reference import BM25, adapt_arguments, minimal_arguments, tokenize
from canarykit.records import RunRecord, read_record
from canarykit.tools import tool_names

ROOT = Path(__file__).resolve().parents[1]


def canary_calls(rec: RunRecord) -> list[str]:
    canaries = {o.name for o in rec.offered if o.canary_id}
    return [e.name for e in rec.events if e.kind == "tool_call" and e.name in canaries]


def reference_models() -> list[dict[str, Any]]:
    return [m for m in yaml.safe_load((ROOT / "params.yaml").read_text())["models"] if m["backend"] == "reference"]


def run_ref(model: dict[str, Any], task: Any = None, ts: Any = None) -> RunRecord:
    task = task or FakeTask()
    spec = RunSpec(model, task, "full", "standard", 0, ts or toolset(), 12)
    return asyncio.run(run_one(spec, make_backend(model), env=FAKE_ENV))


def test_oracle_on_the_suite_zero_canaries_and_rubric_passes(tmp_path: Path) -> None:
    from canarykit.tasks import check_rubric

    tasks_path, pools, tasks = make_study(tmp_path / "study", seeds=[0])
    oracle = {"name": "oracle", "backend": "reference", "agent": "oracle", "group": "reference"}
    s = run_grid([oracle], tasks_path, pools, [0], {"max_turns": 12}, tmp_path / "store", tmp_path / "runs.parquet",
                 tmp_path / "summary.json", progress=False)
    assert s.failed == 0 and s.executed + s.deduplicated == s.total == 3 * len(tasks)
    by_id = {t.id: t for t in tasks}
    for p in (tmp_path / "store").rglob("*.json"):
        rec = read_record(p)
        assert rec.status == "completed" and canary_calls(rec) == []
        assert [e.name for e in rec.events if e.kind == "tool_call"] == [st.tool for st in by_id[rec.task_id].plan]
        assert check_rubric(by_id[rec.task_id], rec.final_answer).passed, (rec.task_id, rec.final_answer)
        assert rec.backend == "reference" and rec.cost_usd == 0.0 and rec.n_cached_calls == 0


def test_default_reference_grid_runs_and_is_reused(tmp_path: Path) -> None:
    conditions = ["baseline", "declared", "full", "control", "mirrored"]
    tasks_path, pools, tasks = make_study(tmp_path / "study", n_tasks=4, pools={"standard": conditions, "subtle": ["declared"]})
    models = reference_models()
    assert len(models) == 10
    args = ({"max_turns": 12}, tmp_path / "store", tmp_path / "runs.parquet", tmp_path / "summary.json")
    s1 = run_grid(models, tasks_path, pools, [0], *args, progress=False)
    from canarykit.assembly import load_assemblies

    lists = sum(len(load_assemblies(cfg["assembly"])) for cfg in pools.values())  # a control list per offered type
    assert lists > 4 * (len(conditions) + 1)
    assert s1.failed == 0 and s1.total == 10 * lists and s1.backend_calls > 0
    idx = pl.read_parquet(tmp_path / "runs.parquet")
    assert set(idx["backend"]) == {"reference"} and set(idx["provider"]) == {"reference"}
    assert idx.select(pl.struct("model", "condition", "pool", "seed", "task_id", "arm").n_unique()).item() == idx.height
    s2 = run_grid(models, tasks_path, pools, [0], *args, progress=False)
    assert s2.executed == 0 and s2.reused == s1.total and s2.backend_calls == 0


def test_planted_agent_takes_its_type_at_take_prob() -> None:
    take, back, n = 0.3, 0.5, 400
    model = {"name": "p", "backend": "reference", "agent": "planted", "canary_type": "parameter_trap",
             "take_prob": take, "backoff_prob": back, "group": "planted"}
    taken = backed = 0
    for i in range(n):
        task = FakeTask(id=f"t{i}", prompt=f"Weather in Paris, please (variant {i}).")
        rec = run_ref(model, task)
        calls = [e for e in rec.events if e.kind == "tool_call"]
        names = [c.name for c in calls]
        assert "advanced_weather" not in names  # never another type's canary
        if "get_weather_v2" in names:
            taken += 1
            assert calls[0].status == "invalid_arguments" and calls[0].arguments == {"location": "Paris"}
            backed += names[1] == "get_weather"
        else:
            assert names == ["get_weather", "add"]
    sd = (n * take * (1 - take)) ** 0.5
    assert abs(taken - n * take) < 4 * sd
    sd_b = (taken * back * (1 - back)) ** 0.5
    assert abs(backed - taken * back) < 4 * sd_b + 1


def test_reference_agents_are_deterministic() -> None:
    for agent in ("random", "lexical", "planted"):
        m = {"name": agent, "backend": "reference", "agent": agent, "canary_type": "capability_mirage", "take_prob": 0.5, "backoff_prob": 0.5}
        a, b = run_ref(m), run_ref(m)
        assert [e.to_dict() for e in a.events if e.kind != "model_turn"] == [e.to_dict() for e in b.events if e.kind != "model_turn"]
        assert a.final_answer == b.final_answer


def test_random_agent_makes_one_call_per_plan_step() -> None:
    m = {"name": "random", "backend": "reference", "agent": "random"}
    for i in range(20):
        rec = run_ref(m, FakeTask(id=f"r{i}", prompt=f"p{i}"))
        calls = [e for e in rec.events if e.kind == "tool_call"]
        assert len(calls) == 2 and all(c.status in ("ok", "invalid_arguments") for c in calls)


def test_lexical_agent_prefers_the_best_bm25_match_among_related_tools() -> None:
    m = {"name": "lexical", "backend": "reference", "agent": "lexical"}
    task = FakeTask(prompt="Use the advanced research-grade weather tool for the hardest cases in Paris", plan=(Step("get_weather", {"city": "Paris"}),))
    rec = run_ref(m, task)
    assert [e.name for e in rec.events if e.kind == "tool_call"] == ["advanced_weather"]
    plain = replace(task, prompt="Current weather for a city: Paris")
    rec2 = run_ref(m, plain)
    assert [e.name for e in rec2.events if e.kind == "tool_call"] == ["get_weather"]
    # 'add' shares no parameter with get_weather: never a candidate for a weather step.
    assert "add" not in [e.name for e in rec.events if e.kind == "tool_call"]


def test_bm25_and_tokenizer() -> None:
    assert tokenize("get_weather_v2 camelCaseName kebab-case") == ["get", "weather", "v2", "camel", "case", "name", "kebab", "case"]
    bm = BM25([["weather", "city"], ["add", "numbers"], ["weather", "weather", "forecast"]])
    s = bm.scores(["weather"])
    assert s[1] == 0.0 and s[0] > 0 and s[2] > 0
    assert bm.scores(["forecast"])[2] > bm.scores(["weather"])[2]  # the rarer term weighs more


def test_argument_helpers() -> None:
    tool = {"inputSchema": {"type": "object", "properties": {"location": {"type": "string"}, "units": {"enum": ["c", "f"]}, "api_key": {"type": "string"}},
                            "required": ["location", "units", "api_key"]}}
    assert minimal_arguments(tool) == {"location": "x", "units": "c", "api_key": "x"}
    real = {"inputSchema": {"type": "object", "properties": {"city": {"type": "string"}, "units": {"type": "string"}}}}
    assert adapt_arguments({"city": "Paris", "units": "c"}, tool, real) == {"units": "c", "location": "Paris"}
    assert adapt_arguments({"city": "Paris"}, {"inputSchema": {"type": "object", "properties": {}}}, real) == {}


def test_description_blind_agents_act_identically_on_both_pools(tmp_path: Path) -> None:
    """Only the subtle pool's descriptions differ, and only lexical reads descriptions: every
    other reference agent makes the same calls on both pools (its ablation delta is 0)."""
    tasks_path, pools, _ = make_study(tmp_path / "study", n_tasks=30, pools={"standard": ["declared"], "subtle": ["declared"]})
    models = [m for m in reference_models() if m["agent"] != "lexical"]
    run_grid(models, tasks_path, pools, [0], {"max_turns": 12}, tmp_path / "store", tmp_path / "runs.parquet",
             tmp_path / "summary.json", progress=False)
    idx = pl.read_parquet(tmp_path / "runs.parquet")
    calls: dict[tuple[str, str, str], list[str | None]] = {}
    for row in idx.iter_rows(named=True):
        rec = read_record(tmp_path / "store" / row["run_id"][:2] / f"{row['run_id']}.json")
        calls[(row["model"], row["pool"], row["task_id"])] = [e.name for e in rec.events if e.kind == "tool_call"]
    taken = 0
    for (model, pool, task), names in calls.items():
        if pool == "standard":
            assert names == calls[(model, "subtle", task)], (model, task)
            taken += model.startswith("planted") and any(n not in tool_names() for n in names)
    assert taken > 0


def test_an_unknown_reference_agent_names_the_model_and_the_known_ones() -> None:
    from canarykit.errors import ConfigError

    with pytest.raises(ConfigError) as err:
        make_backend({"name": "mine", "backend": "reference", "agent": "oracel"})
    text = str(err.value)
    assert "models[mine].agent" in text and "'oracel'" in text
    assert all(name in text for name in ("oracle", "random", "lexical", "planted", "surface"))
