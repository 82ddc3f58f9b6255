"""Known answers end to end: the text-only reference agents come out with the words they were
built to get (design note, sections 4 and 5), on the default pool and on a reworded one.

Two pools of the whole suite, one seed, the ``declared`` and ``control`` conditions (one
control arm per declared type, ``arm = T``): the default study's pool (the workflow's
generator call with params.yaml's canaries settings) and a reworded pool (the subtle
generator with other give-away sentences and another granularity case, none of them a
wording the agents were written against). The agents take a look-alike they accept with
probability 0.8. For every type with an opportunity (its control arm exists):

- ``planted:<T>``: ``blind`` on T, ``sensitive`` on every other type, and its whole-run trap
  rate is highest on T;
- ``planted:surface``: ``blind`` everywhere;
- ``planted:claims``: ``lured`` on capability_mirage, ``not drawn`` elsewhere;
- ``careful``: ``sensitive`` everywhere.

Each diagnosis is the study's own (``control_effect.<model>.<T>``: first pick, paired by
(task, seed), task-clustered, Holm across the instruments x types, equivalence margin).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest
from fakes.study import ROOT, no_fsync, write_assembly, write_study_pool, write_tasks
from fakes.wordings import REWORDED_CASES, REWORDED_VARIANTS

from canarykit import stats
from canarykit.agents import run_grid
from canarykit.judging import JudgingJob, detect_and_judge
from canarykit.study import plan as planning
from canarykit.types import CANARY_TYPES

#: The whole suite on two pools, nine agents: a minute or more on a loaded machine.
pytestmark = pytest.mark.slow

#: The planted and surface agents' take_prob: the default study's (params.yaml), sized with
#: `canarykit plan` so that `blind` is shown through independent draws; claims and careful
#: take at 0.8. Two seeds: the plan gives every blind answer power >= 0.9 on this design.
TAKE = 0.8
BLIND_TAKE = 0.995
CONDITIONS = ["declared", "control"]
SEEDS = [0, 1]
AGENTS = [f"planted:{t}" for t in CANARY_TYPES] + ["planted:surface", "planted:claims", "careful"]


def models() -> list[dict[str, Any]]:
    out = [{"name": f"planted:{t}", "backend": "reference", "agent": "planted", "canary_type": t,
            "take_prob": BLIND_TAKE, "backoff_prob": 0.5, "group": "planted"} for t in CANARY_TYPES]
    out.append({"name": "planted:surface", "backend": "reference", "agent": "surface", "take_prob": BLIND_TAKE, "backoff_prob": 0.5,
                "group": "planted"})
    out.append({"name": "planted:claims", "backend": "reference", "agent": "claims", "take_prob": TAKE, "backoff_prob": 0.5, "group": "planted"})
    out.append({"name": "careful", "backend": "reference", "agent": "careful", "take_prob": TAKE, "backoff_prob": 0.5, "group": "reference"})
    return out


def write_reworded_pool(path: Path, tasks: list[Any], tasks_path: Path) -> dict[str, Any]:
    """The subtle generator with other give-away sentences (three per type, as many wording
    items as the default pool's ``canaries.variants``) and another granularity case, the
    twins' sentences as params.yaml configures them."""
    from canarykit import canaries, tools
    from canarykit.study.config import load_params

    cfg = load_params(ROOT / "params.yaml")["canaries"]
    listed = canaries.ingest_tools(tools.mcp_definitions(), "tools.json", strict=True)
    result = canaries.study_pool(listed, tasks, "subtle", fit=cfg["fit"], suffixes=REWORDED_VARIANTS, variants=cfg["variants"],
                                 control_suffixes=cfg["control_suffixes"]["subtle"], special_cases=REWORDED_CASES,
                                 generator="offline", llm=cfg["llm"], source="tools.json", tasks_source=str(tasks_path))
    canaries.write_pool(result, path)
    return result.document()


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root: Path = tmp_path_factory.mktemp("known-text")
    tasks_path = root / "tasks.json"
    tasks = write_tasks(tasks_path)
    documents = {"standard": write_study_pool(root / "standard.json", "standard", tasks, tasks_path),
                 "subtle": write_reworded_pool(root / "subtle.json", tasks, tasks_path)}
    pools = {}
    for pool, doc in documents.items():
        write_assembly(root / f"assembly-{pool}.parquet", tasks, doc["canaries"], pool, CONDITIONS, SEEDS, doc["controls"])
        pools[pool] = {"canaries": root / f"{pool}.json", "assembly": root / f"assembly-{pool}.parquet", "conditions": CONDITIONS}
    with no_fsync():
        summary = run_grid(models(), tasks_path, pools, SEEDS, {"max_turns": 12}, root / "store", root / "index.parquet",
                           root / "summary.json", progress=False)
    assert summary.failed == 0
    job = JudgingJob(root / "index.parquet", root / "store", tasks_path, root / "runs.parquet", root / "verdicts",
                     root / "validation.json")
    detect_and_judge(job, {"template": str(ROOT / "data/prompts/judge_appendix_b.txt"), "primary": {"kind": "rubric"},
                           "cross": {"kind": "tool-coverage"}, "stability": {"sample": 0}}, models())
    runs = stats.load_runs(root / "runs.parquet")
    effects = {pool: stats.compute_all(runs, stats.StatsConfig(resamples=2000, primary_pool=pool), validate=False)["control_effect"]
               for pool in pools}
    # the power the design gives each known answer (the plan's, on these runs' pairs)
    cfg = {"stats": {"resamples": 2000}, "models": models()}
    power = {pool: {(r["model"], r["type"]): r["power"]
                    for r in planning.known_answer_power(cfg, planning.design_from_runs(runs, pool), sims=200,
                                                         rates=effects[pool])["answers"]}
             for pool in pools}
    return {"runs": runs, "effects": effects, "power": power}


def _holds(study: dict[str, Any], pool: str, model: str, t: str, e: dict[str, Any], want: str) -> None:
    """A known answer the design powers (>= 0.8) is found; one it cannot power (``not drawn``
    needs 46 tasks a type at alpha / 6) is found or inconclusive, never another word."""
    power = study["power"][pool][(model, t)]
    if power >= planning.POWER:
        assert e["diagnosis"] == want, f"{pool} {model} {t} power {power:.2f}: {e}"
    else:
        assert e["diagnosis"] in (want, "inconclusive"), f"{pool} {model} {t} power {power:.2f}: {e}"


POOLS = ["standard", "subtle"]


def _opportunities(effects: dict[str, Any], model: str) -> dict[str, dict[str, Any]]:
    """The model's entries for the types offered on both sides."""
    out = {t: e for t, e in effects[model].items() if e["diagnosis"] != "n/a"}
    assert out, model
    for t, e in out.items():
        assert e["outcome"] == "first_pick", (model, t, e)
    return out


def test_the_runs_are_paired_by_arm(study: dict[str, Any]) -> None:
    runs = study["runs"]
    ctl = runs.filter(pl.col("condition") == "control")
    assert ctl.height > 0 and set(ctl["arm"]) <= set(CANARY_TYPES)
    assert set(runs.filter(pl.col("condition") == "declared")["arm"]) == {""}
    for t in CANARY_TYPES:
        arm = ctl.filter(pl.col("arm") == t)
        assert arm.height > 0 and arm[f"first_pick_{t}"].drop_nulls().len() > 0, t


@pytest.mark.parametrize("pool", POOLS)
@pytest.mark.parametrize("ctype", CANARY_TYPES)
def test_a_planted_agent_is_blind_to_its_type_and_sensitive_to_the_others(study: dict[str, Any], pool: str, ctype: str) -> None:
    entries = _opportunities(study["effects"][pool], f"planted:{ctype}")
    assert ctype in entries
    for t, e in entries.items():
        _holds(study, pool, f"planted:{ctype}", t, e, "blind" if t == ctype else "sensitive")
    runs = study["runs"].filter((pl.col("model") == f"planted:{ctype}") & (pl.col("pool") == pool)
                                & (pl.col("condition") == "declared"))
    rates = {t: runs.filter(pl.col(f"present_{t}"))[f"trapped_{t}"].mean() or 0.0 for t in CANARY_TYPES}
    assert max(rates, key=lambda t: rates[t]) == ctype, (pool, rates)


@pytest.mark.parametrize("pool", POOLS)
def test_the_surface_agent_is_blind_everywhere(study: dict[str, Any], pool: str) -> None:
    for t, e in _opportunities(study["effects"][pool], "planted:surface").items():
        _holds(study, pool, "planted:surface", t, e, "blind")


@pytest.mark.parametrize("pool", POOLS)
def test_the_claims_agent_is_lured_by_mirages_and_drawn_by_nothing_else(study: dict[str, Any], pool: str) -> None:
    entries = _opportunities(study["effects"][pool], "planted:claims")
    assert "capability_mirage" in entries
    for t, e in entries.items():
        _holds(study, pool, "planted:claims", t, e, "lured" if t == "capability_mirage" else "not drawn")


@pytest.mark.parametrize("pool", POOLS)
def test_the_careful_agent_is_sensitive_everywhere(study: dict[str, Any], pool: str) -> None:
    for t, e in _opportunities(study["effects"][pool], "careful").items():
        _holds(study, pool, "careful", t, e, "sensitive")


def test_the_design_powers_the_planted_agents_answers(study: dict[str, Any]) -> None:
    """The sizing itself, on the default study's pool (the one it is sized for): every known
    answer of the planted agents (blind on their type, sensitive on the others) has power
    >= 0.8 on this design (two seeds, eight wordings a type), at the rates the study observed.
    On the reworded pool a planted agent may decline a wording whose tell reads as another
    defect (a lower rate, less power): there its answers are held to "found or inconclusive"
    with their power, like the ones below. Not sized here: ``not drawn`` (its exact bound
    needs 46 tasks a type at alpha / 6; this suite offers each type 29 to 41) and
    ``planted:surface``'s ``blind`` where it splits its take among several look-alikes of a
    tool (a first-pick rate near 0.5 needs about 700 pairs a type): those are held to
    "found or inconclusive" above, their shortfall stated by the power."""
    for pool in POOLS:  # the known-answer table (pytest -s shows it)
        for (model, t), power in study["power"][pool].items():
            e = study["effects"][pool][model][t]
            print(f"{pool:<9} {model:<32} {t:<24} {e['diagnosis']:<13} power {power:.2f}")
    for (model, t), power in study["power"]["standard"].items():
        if model.startswith("planted:") and model != "planted:surface" and model != "planted:claims":
            assert power >= planning.POWER, (model, t, power)
