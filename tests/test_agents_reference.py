"""Reference agents through the real loop: the oracle, the baselines, and the text policies'
known answers on the built-in pool with twins written by hand (design note, section 2)."""

from __future__ import annotations

import asyncio
import re
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
from canarykit.store.records import RunRecord, read_record
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
    from canarykit.tasks.tasks import check_rubric

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
    assert len(models) == 12
    args = ({"max_turns": 12}, tmp_path / "store", tmp_path / "runs.parquet", tmp_path / "summary.json")
    s1 = run_grid(models, tasks_path, pools, [0], *args, progress=False)
    from canarykit.assembly.assembly import load_assemblies

    lists = sum(len(load_assemblies(cfg["assembly"])) for cfg in pools.values())  # a control list per offered type
    assert lists > 4 * (len(conditions) + 1)
    assert s1.failed == 0 and s1.total == 12 * lists and s1.backend_calls > 0
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
    for agent in ("random", "lexical", "planted", "surface", "claims", "careful", "uniform"):
        m = {"name": agent, "backend": "reference", "agent": agent, "take_prob": 0.5, "backoff_prob": 0.5,
             "canary_type": "capability_mirage" if agent == "planted" else None}
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


def test_a_list_and_its_reworded_list_draw_independently_and_one_list_repeats_its_draws(tmp_path: Path) -> None:
    """The subtle pool changes only descriptions: the lists differ, so a description-blind
    agent (surface) draws independently on the two (it takes a look-alike at its rate on
    both, not on the same tasks: no shared random numbers between a list and its twin list),
    while the same list run again makes exactly the same calls."""
    tasks_path, pools, _ = make_study(tmp_path / "study", n_tasks=30, pools={"standard": ["declared"], "subtle": ["declared"]})
    # at an even take rate, so that "which tasks" can differ (the default study's 0.995 takes nearly always)
    models = [{**m, "take_prob": 0.5} for m in reference_models() if m["agent"] == "surface"]
    assert models

    def calls(store: str) -> dict[tuple[str, str], list[str]]:
        run_grid(models, tasks_path, pools, [0], {"max_turns": 12}, tmp_path / store, tmp_path / f"{store}.parquet",
                 tmp_path / f"{store}.json", progress=False)
        out = {}
        for row in pl.read_parquet(tmp_path / f"{store}.parquet").iter_rows(named=True):
            rec = read_record(tmp_path / store / row["run_id"][:2] / f"{row['run_id']}.json")
            out[(row["pool"], row["task_id"])] = [e.name for e in rec.events if e.kind == "tool_call"]
        return out

    first, again = calls("a"), calls("b")
    assert first == again  # one list, one set of draws
    real = set(tool_names())
    took = {pool: {task for (p, task), names in first.items() if p == pool and any(n not in real for n in names)}
            for pool in ("standard", "subtle")}
    assert took["standard"] and took["subtle"]  # both take look-alikes ...
    assert took["standard"] != took["subtle"]  # ... on other tasks: the draws are not shared


def test_an_unknown_reference_agent_names_the_model_and_the_known_ones() -> None:
    from canarykit.errors import ConfigError

    with pytest.raises(ConfigError) as err:
        make_backend({"name": "mine", "backend": "reference", "agent": "oracel"})
    text = str(err.value)
    assert "models[mine].agent" in text and "'oracel'" in text
    assert all(name in text for name in ("oracle", "random", "lexical", "planted", "surface", "claims", "careful", "uniform"))


# --------------------------------------------------------------------------- text only

CANARY_METADATA = re.compile(r"canary_type|canary_id|control_type|control_id|shadows")


def test_no_reference_agent_module_names_canary_metadata() -> None:
    """What the review hook greps: the reference agents' modules never handle an offered
    tool's canary type, id, control fields or shadowed tool (not even in prose)."""
    files = sorted((ROOT / "src" / "canarykit" / "agents").glob("reference*.py"))
    assert len(files) >= 2
    for f in files:
        hits = [(i, line) for i, line in enumerate(f.read_text().splitlines(), 1) if CANARY_METADATA.search(line)]
        assert hits == [], (f.name, hits)


def test_decisions_do_not_change_when_the_metadata_is_wrong() -> None:
    """The backend answers the same with the offered metadata scrambled or gone: it reads the
    tools as a model gets them, the task and the conversation, nothing else."""
    from canarykit.agents.protocol import ChatRequest, RunContext
    from canarykit.store.records import OfferedTool

    ts = toolset()
    lies = [OfferedTool(o.name, "x:y", "temporal_decoy", "add") for o in ts.offered]
    for agent in ("planted", "surface", "careful", "claims", "uniform", "lexical", "random"):
        m = {"name": agent, "backend": "reference", "agent": agent, "take_prob": 1.0, "backoff_prob": 1.0,
             "canary_type": "parameter_trap" if agent == "planted" else None}
        backend = make_backend(m)
        for i in range(10):
            task = FakeTask(id=f"m{i}", prompt=f"Weather in Paris (variant {i}), and 2 + 3?")
            msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": task.prompt}]
            answers = []
            for offered in (ts.offered, lies, ()):
                ctx = RunContext("r", "h", task, offered, ts.tools, [], lambda ev: "done")
                resp = backend.respond(ChatRequest(msgs, ts.openai_tools, 0, context=ctx))
                answers.append([(c.name, c.arguments) for c in resp.tool_calls])
            assert answers[0] == answers[1] == answers[2], (agent, answers)


def test_the_new_agents_params_are_validated_with_one_line_naming_the_key() -> None:
    from canarykit.errors import ConfigError
    from canarykit.study.config import validate_params

    cases = [
        ({"name": "c", "backend": "reference", "agent": "careful", "take_prob": 1.5}, "models[c].take_prob"),
        ({"name": "k", "backend": "reference", "agent": "claims", "backoff_prob": "half"}, "models[k].backoff_prob"),
        ({"name": "p", "backend": "reference", "agent": "planted", "take_prob": 0.5}, "models[p].canary_type"),
        ({"name": "u", "backend": "reference", "agent": "uniform", "canary_type": "semantic_decoy"}, "models[u].canary_type"),
    ]
    for spec, key in cases:
        with pytest.raises(ConfigError) as err:
            make_backend(spec)
        assert key in str(err.value) and "\n" not in str(err.value)
    cfg = yaml.safe_load((ROOT / "params.yaml").read_text())
    names = {m["name"]: m for m in validate_params(cfg)["models"]}
    assert names["planted:claims"]["agent"] == "claims" and names["planted:claims"]["group"] == "planted"
    assert names["careful"]["agent"] == "careful" and names["careful"]["group"] == "reference"
    cfg["models"].append({"name": "u", "backend": "reference", "agent": "uniform"})
    assert validate_params(cfg)["models"][-1]["agent"] == "uniform"
    cfg["models"][-1]["take_prob"] = 2
    with pytest.raises(ConfigError, match=r"models\[\d+\]\.take_prob|take_prob"):
        validate_params(cfg)


def test_uniform_picks_evenly_among_a_tool_and_its_lookalikes() -> None:
    """On the fake world get_weather has one look-alike (get_weather_v2; advanced_weather's
    text shares too little with it): the first call goes to either at rate 1/2."""
    m = {"name": "u", "backend": "reference", "agent": "uniform", "backoff_prob": 0.0}
    n, look = 400, 0
    for i in range(n):
        rec = run_ref(m, FakeTask(id=f"u{i}"))
        first = next(e.name for e in rec.events if e.kind == "tool_call")
        assert first in ("get_weather", "get_weather_v2")
        look += first == "get_weather_v2"
    assert abs(look - n / 2) < 4 * (n / 4) ** 0.5


@pytest.fixture(scope="module")
def paired_picks() -> dict[str, dict[str, list[tuple[bool, bool]]]]:
    """Per agent and type: the (declared, control arm) first picks of every task of half the
    suite with an opportunity, on the built-in standard pool with hand-written twins."""
    from fakes.study import SUITE
    from fakes.wordings import declared_list, first_pick, twins_for

    from canarykit import canaries, tools
    from canarykit.tasks.tasks import load_tasks
    from canarykit.types import CANARY_TYPES

    real = tools.mcp_definitions()
    # first wording variants only: their give-away sentence is the configured one, which the
    # hand-written twins replace
    cans = [c for c in canaries.build_pool(real, "standard", canaries.DEFAULT_SUFFIXES["standard"]).canaries if "@v" not in c["id"]]
    twins = twins_for(cans, real, canaries.DEFAULT_SUFFIXES["standard"])
    hosted = {(c["shadows"], c["type"]) for c in cans}
    models = [{"name": f"planted:{t}", "backend": "reference", "agent": "planted", "canary_type": t} for t in CANARY_TYPES]
    models += [{"name": a, "backend": "reference", "agent": a} for a in ("surface", "claims", "careful", "uniform", "random", "oracle")]
    out: dict[str, dict[str, list[tuple[bool, bool]]]] = {}
    for m in models:
        m.update(take_prob=0.5, backoff_prob=0.5)
        backend, picks = make_backend(m), out.setdefault(m["name"], {})
        for task in load_tasks(SUITE)[::2]:
            def run(ts: Any, condition: str, task: Any = task, m: Any = m, backend: Any = backend) -> RunRecord:
                return asyncio.run(run_one(RunSpec(m, task, condition, "standard", 0, ts, 12), backend))
            declared = run(declared_list(task, real, cans, twins), "declared")
            for t in set(task.declared_types):
                if any((f, t) in hosted for f in task.correct_tools):
                    arm = run(declared_list(task, real, cans, twins, swap=t), "control")
                    a, b = first_pick(declared, t), first_pick(arm, t)
                    if a is not None and b is not None:
                        picks.setdefault(t, []).append((a, b))
    return out


def _rates(pairs: list[tuple[bool, bool]]) -> tuple[float, float]:
    return sum(a for a, _ in pairs) / len(pairs), sum(b for _, b in pairs) / len(pairs)


def test_planted_agents_are_blind_to_their_type_and_sensitive_to_the_others(paired_picks: Any) -> None:
    """Independent draws: on its own type a planted agent takes the canary and the twin at its
    rate, each drawn on its own (some pairs disagree: no shared random numbers between a list
    and its twin list); on every other type it never takes the canary and does take the twin."""
    from canarykit.types import CANARY_TYPES

    for ctype in CANARY_TYPES:
        picks = paired_picks[f"planted:{ctype}"]
        assert set(picks) == set(CANARY_TYPES)
        for t, pairs in picks.items():
            canary, twin = _rates(pairs)
            assert len(pairs) >= 10, (ctype, t)
            if t == ctype:
                assert any(a != b for a, b in pairs) and 0.1 < twin < 0.9 and 0.1 < canary < 0.9, (ctype, t, canary, twin)
            else:
                assert canary == 0.0 and twin > 0.1, (ctype, t, canary, twin)  # take_prob 0.5, >= 10 pairs


def test_surface_uniform_and_random_are_blind_claims_lured_careful_sensitive(paired_picks: Any) -> None:
    for name in ("surface", "uniform", "random"):  # text-blind: canary and twin alike, drawn independently
        every = [pair for pairs in paired_picks[name].values() for pair in pairs]
        assert any(a != b for a, b in every), name
    assert all(_rates(p)[1] > 0.1 for p in paired_picks["surface"].values())
    for t, pairs in paired_picks["claims"].items():
        canary, twin = _rates(pairs)
        assert twin == 0.0 and (canary > 0.2 if t == "capability_mirage" else canary == 0.0), (t, canary, twin)
    for t, pairs in paired_picks["careful"].items():
        canary, twin = _rates(pairs)
        assert canary == 0.0 and twin > 0.2, (t, canary, twin)
    assert all(_rates(p) == (0.0, 0.0) for p in paired_picks["oracle"].values())
