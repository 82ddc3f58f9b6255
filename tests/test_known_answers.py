"""Calibration: the reference agents over the real suite give the answers they were built to.

The oracle must have csr 0 and pass every rubric; each planted agent's highest
type-specific trap rate must be its own type, and its measured trap and recovery rates must
match the planted probabilities within their task-clustered bootstrap intervals (family-wise
95%: a reference agent's draws depend on the task, not on the seed, so runs of one task are
one observation). The pool
is the default study's (the workflow's generator call, params.yaml's canaries settings, the
task-suite check).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from fakes.study import SUITE, no_fsync, write_assembly, write_study_pool, write_tasks

from canarykit.agents import run_grid
from canarykit.assembly.assembly import load_assemblies
from canarykit.judging import JudgingJob, detect_and_judge
from canarykit.stats import bootstrap_mean_ci
from canarykit.tasks.tasks import load_tasks
from canarykit.types import CANARY_TYPES

#: A study of every known-answer agent over the pools: tens of seconds on a loaded machine.
pytestmark = pytest.mark.slow

TAKE, BACK = 0.4, 0.6
CONDITIONS = ["baseline", "declared", "full"]
SEEDS = [0, 1, 2]


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> tuple[pl.DataFrame, dict[str, Any]]:
    root: Path = tmp_path_factory.mktemp("known")
    tasks_path = root / "tasks.json"
    tasks = write_tasks(tasks_path)
    document = write_study_pool(root / "pool.json", "standard", tasks, tasks_path)
    write_assembly(root / "assembly.parquet", tasks, document["canaries"], "standard", CONDITIONS, SEEDS,
                   document["controls"])
    pools = {"standard": {"canaries": root / "pool.json", "assembly": root / "assembly.parquet", "conditions": CONDITIONS}}
    models = [{"name": "oracle", "backend": "reference", "agent": "oracle", "group": "reference"}] + [
        {"name": f"planted:{t}", "backend": "reference", "agent": "planted", "canary_type": t,
         "take_prob": TAKE, "backoff_prob": BACK, "group": "planted"}
        for t in CANARY_TYPES
    ]
    with no_fsync():
        summary = run_grid(models, tasks_path, pools, SEEDS, {"max_turns": 12}, root / "store",
                           root / "index.parquet", root / "summary.json", progress=False)
    assert summary.failed == 0 and summary.total == 7 * 3 * 3 * 120
    job = JudgingJob(root / "index.parquet", root / "store", tasks_path, root / "runs.parquet", root / "verdicts",
                     root / "validation.json", cache=root / "verdicts-cache")
    detect_and_judge(job, {"template": str(Path(__file__).parents[1] / "data/prompts/judge_appendix_b.txt"),
                           "primary": {"kind": "rubric"}, "cross": {"kind": "tool-coverage"}}, models)
    return pl.read_parquet(root / "runs.parquet"), {**document, "root": str(root)}


@pytest.fixture(scope="module")
def runs(study: tuple[pl.DataFrame, dict[str, Any]]) -> pl.DataFrame:
    return study[0]


#: Twelve intervals are checked (trap and recovery rate of six agents): Bonferroni-adjusted
#: so that the family, not each interval, has 95% coverage.
ALPHA = 0.05 / 12


def _ci(df: pl.DataFrame, column: str) -> tuple[float, float]:
    """The interval of ``column``'s mean over tasks (each task's runs averaged first)."""
    per_task = df.group_by("task_id").agg(pl.col(column).cast(pl.Float64).mean())[column].to_numpy()
    lo, hi = bootstrap_mean_ci(per_task, 10_000, np.random.default_rng(0), alpha=ALPHA)
    assert lo is not None and hi is not None
    return lo, hi


def test_oracle_is_never_trapped_and_always_succeeds(runs: pl.DataFrame) -> None:
    o = runs.filter(pl.col("model") == "oracle")
    assert o.height == 3 * 3 * 120
    assert o["canary_calls"].sum() == 0 and o["csr"].drop_nulls().max() == 0.0
    assert o["success"].all()


def _one_host(document: dict[str, Any], ctype: str) -> list[str]:
    """Tasks whose plan needs exactly one real tool with a canary of ``ctype``: there the agent
    decides once (it takes the canary with ``take_prob``), so its trap rate is ``take_prob``
    (with two such tools it decides twice and falls with 1 - (1 - take_prob)^2)."""
    hosts = {c["shadows"] for c in document["canaries"] if c["type"] == ctype}
    tasks = load_tasks(Path(document["root"]) / "tasks.json")
    return [t.id for t in tasks if len({s.tool for s in t.plan} & hosts) == 1]


@pytest.mark.parametrize("ctype", CANARY_TYPES)
def test_planted_agent_is_diagnosed_with_its_type_and_rates(study: tuple[pl.DataFrame, dict[str, Any]], ctype: str) -> None:
    runs, document = study
    df = runs.filter((pl.col("model") == f"planted:{ctype}") & (pl.col("condition") != "baseline"))
    rates = {t: df.filter(pl.col(f"present_{t}"))[f"trapped_{t}"].mean() for t in CANARY_TYPES}
    assert max(rates, key=lambda t: rates[t] or 0.0) == ctype
    assert all(rates[t] == 0.0 for t in CANARY_TYPES if t != ctype)
    df = df.filter(pl.col("task_id").is_in(_one_host(document, ctype)))
    lo, hi = _ci(df.filter(pl.col(f"present_{ctype}")), f"trapped_{ctype}")
    assert lo <= TAKE <= hi, (ctype, lo, hi)
    lo, hi = _ci(df.filter(pl.col("trapped")), "recovered")
    assert lo <= BACK <= hi, (ctype, lo, hi)


def test_baseline_has_no_trap(runs: pl.DataFrame) -> None:
    base = runs.filter(pl.col("condition") == "baseline")
    assert base["canary_calls"].sum() == 0 and not base["trapped"].any()


def assembly_path(study: tuple[pl.DataFrame, dict[str, Any]]) -> Path:
    return Path(study[1]["root"]) / "assembly.parquet"


def test_the_grid_runs_the_default_studys_pool(study: tuple[pl.DataFrame, dict[str, Any]]) -> None:
    """Its granularity cases are the study's: never a case a task's plan calls (without the
    task-suite check the schema's first example, Paris, would be served to Paris tasks), also
    to a task whose plan calls the tool with two cases (its twin serves any case)."""
    runs, document = study
    cases = {c["shadows"]: c["behaviour"]["args"] for c in document["canaries"]
             if c["type"] == "granularity_trap" and c.get("variant", 1) == 1}
    assert cases["get_weather"] == {"city": "Mumbai"} and cases["get_forecast"] == {"city": "Mumbai", "days": 3}
    assert "read_file" not in cases, "both of its natural cases are tasks' cases"
    plans = {(s.tool, json.dumps(s.args, sort_keys=True)) for t in load_tasks(SUITE) for s in t.plan}
    assert not any((tool, json.dumps(args, sort_keys=True)) in plans for tool, args in cases.items())
    held = {(s["task"], s["tool"]) for s in document["skipped"] if s.get("task")}
    assert held == set(), "every task that names a tool calls it in its plan"
    offered = load_assemblies(assembly_path(study))
    for cond in ("declared", "full"):
        for seed in SEEDS:
            shadowed = {o.shadows for o in offered[(cond, seed, "hard-040", "")].offered if o.canary_type == "granularity_trap"}
            assert shadowed == {"calculate", "get_weather"}, "get_weather is called for two cities, both wrong for Mumbai"
    hard040 = runs.filter((pl.col("task_id") == "hard-040") & (pl.col("condition") == "declared"))
    assert hard040.height == 7 * 3 and hard040["present_semantic_decoy"].all(), "its other declared types are offered"
