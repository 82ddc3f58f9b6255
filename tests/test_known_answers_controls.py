"""Calibration of the position effect and of the controls' bookkeeping (issue 11) against
known answers.

On a real grid (the whole task suite, one seed; the declared, control and mirrored
conditions: a control list per (task, type offered)) the planted reference agents must come out as built: none of them reads the
order of the list, so every position effect is 0 within its interval (family-wise level:
alpha is divided by the number of intervals checked), and the runs table tells controls and
order apart. Their control effects (blind on their own type, sensitive on the others) are
checked by tests/test_known_answers_text.py against twins, per type.

The pool is the default study's (the workflow's generator call with params.yaml's canaries
settings and the check against the whole task suite), so the granularity cases and the
withheld granularity offerings are the ones a study runs with.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from fakes.study import SUITE, no_fsync, write_assembly, write_study_pool

from canarykit import stats
from canarykit.agents import run_grid
from canarykit.assembly.assembly import load_assemblies
from canarykit.canaries import load_pool_document
from canarykit.judging import JudgingJob, detect_and_judge
from canarykit.tasks.tasks import load_tasks
from canarykit.types import CANARY_TYPES

#: The default study's take_prob for the planted and surface agents (params.yaml): their draws for a
#: list and its twin list are independent, and `blind` is shown through that noise at this rate.
TAKE = 0.995
CONDITIONS = ["declared", "control", "mirrored"]
SEEDS = [0]
PLANTED = [f"planted:{t}" for t in CANARY_TYPES]
#: intervals checked: 7 position effects
ALPHA = 0.05 / 7


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> tuple[pl.DataFrame, dict[str, Any]]:
    root: Path = tmp_path_factory.mktemp("known-controls")
    doc = json.loads(SUITE.read_text(encoding="utf-8"))  # 120 tasks: at least 29 per type
    tasks_path = root / "tasks.json"
    tasks_path.write_text(json.dumps(doc), encoding="utf-8")
    tasks = load_tasks(tasks_path)
    document = write_study_pool(root / "pool.json", "standard", load_tasks(SUITE), SUITE)
    records, controls = document["canaries"], load_pool_document(root / "pool.json")["controls"]
    write_assembly(root / "assembly.parquet", tasks, records, "standard", CONDITIONS, SEEDS, controls)
    pools = {"standard": {"canaries": root / "pool.json", "assembly": root / "assembly.parquet", "conditions": CONDITIONS}}
    models = [
        {"name": f"planted:{t}", "backend": "reference", "agent": "planted", "canary_type": t,
         "take_prob": TAKE, "backoff_prob": 0.5, "group": "planted"}
        for t in CANARY_TYPES
    ] + [{"name": "planted:surface", "backend": "reference", "agent": "surface", "take_prob": TAKE, "group": "planted"}]
    with no_fsync():
        summary = run_grid(models, tasks_path, pools, SEEDS, {"max_turns": 12}, root / "store", root / "index.parquet",
                           root / "summary.json", progress=False)
    lists = {k for k in load_assemblies(root / "assembly.parquet")}
    assert summary.failed == 0 and summary.total == len(models) * len(lists)
    job = JudgingJob(root / "index.parquet", root / "store", tasks_path, root / "runs.parquet", root / "verdicts",
                     root / "validation.json")
    detect_and_judge(job, {"template": str(Path(__file__).parents[1] / "data/prompts/judge_appendix_b.txt"),
                           "primary": {"kind": "rubric"}, "cross": {"kind": "tool-coverage"}, "stability": {"sample": 0}},
                     models)
    runs = stats.load_runs(root / "runs.parquet")
    result = stats.compute_all(runs, stats.StatsConfig(resamples=4000, alpha=ALPHA), validate=False)
    return runs, {**result, "pool": document}


def test_no_planted_agent_reads_the_order(study: tuple[pl.DataFrame, dict[str, Any]]) -> None:
    pos = study[1]["position_effect"]
    for m in [*PLANTED, "planted:surface"]:
        e = pos[m]["trapped"]
        assert e["n_pairs"] > 90 and e["before"] > 0 and e["after"] > 0
        assert e["lo"] <= 0.0 <= e["hi"], (m, e)


def test_the_runs_table_tells_controls_and_order_apart(study: tuple[pl.DataFrame, dict[str, Any]]) -> None:
    runs = study[0]
    assert runs.select(pl.struct("model", "condition", "pool", "seed", "task_id", "arm").n_unique()).item() == runs.height
    ctl = runs.filter(pl.col("condition") == "control")
    assert (ctl["arm"] != "").all() and (runs.filter(pl.col("condition") != "control")["arm"] == "").all()
    assert ctl["control_calls"].sum() > 0
    for t in CANARY_TYPES:  # arm T offers T's twin and never T's canary; the other types keep theirs
        arm = ctl.filter(pl.col("arm") == t)
        assert arm[f"control_present_{t}"].all() and not arm[f"present_{t}"].any()
        assert not ctl.filter(pl.col("arm") != t)[f"control_present_{t}"].any()
    assert ctl.filter(pl.col("model") == "planted:surface")["canary_calls"].sum() > 0
    dec = runs.filter(pl.col("condition") != "control")
    assert dec["control_calls"].sum() == 0
    assert not any(dec[f"control_present_{t}"].any() for t in CANARY_TYPES)
    # the pairs of a type: the declared run and the control run of its arm, same (task, seed)
    for t in CANARY_TYPES:
        d = runs.filter((pl.col("condition") == "declared") & pl.col(f"present_{t}")).select("model", "seed", "task_id")
        c = runs.filter((pl.col("condition") == "control") & (pl.col("arm") == t)).select("model", "seed", "task_id")
        assert d.sort(d.columns).equals(c.sort(c.columns)), t
    # every list with a canary has one order, and mirrored offers the other one
    one = runs.filter(pl.col("model") == "planted:surface")
    offered = pl.any_horizontal([pl.col(f"present_{t}") for t in CANARY_TYPES] + [pl.col(f"control_present_{t}") for t in CANARY_TYPES])
    assert one.filter(offered)["canary_before_real"].null_count() == 0
    pair = one.filter(pl.col("condition") == "declared").join(one.filter(pl.col("condition") == "mirrored"), on=["seed", "task_id"])
    pair = pair.filter(pl.col("canary_before_real").is_not_null())
    assert pair.height > 90 and (pair["canary_before_real"] != pair["canary_before_real_right"]).all()
    balance = study[1]["position_balance"]
    for t in CANARY_TYPES:
        assert balance["declared"][t]["before_real"] + balance["mirrored"][t]["before_real"] == pytest.approx(1.0)
        assert balance["control"][t] == balance["declared"][t]


def test_the_controls_table_and_figure(study: tuple[pl.DataFrame, dict[str, Any]], tmp_path: Path) -> None:
    from canarykit.report import figures

    written = stats.write_outputs(study[1], tmp_path)
    table = pl.read_csv(tmp_path / "table_controls.csv")
    assert table.height == 7 * len(CANARY_TYPES) and {"canary", "control", "delta", "lo", "hi", "n", "diagnosis"} <= set(table.columns)
    md = (tmp_path / "table_controls.md").read_text()
    assert (tmp_path / "table_controls.md") in written and "| blind | first pick |" in md and "| sensitive | first pick |" in md
    paths = figures.make_figures(study[1], tmp_path / "fig", formats=("svg",))
    svg = next(p for p in paths if p.stem == "fig10").read_text()
    assert "no data" not in svg and "Figure 10" in svg


def test_the_grid_runs_the_default_studys_pool(study: tuple[pl.DataFrame, dict[str, Any]]) -> None:
    """No granularity canary hard-codes a case that a task's plan calls (the suite check the
    workflow applies), so a granularity control, hard-coded to the task's case, always
    differs from its canary in the case it serves."""
    document = study[1]["pool"]
    plans = {(s.tool, json.dumps(s.args, sort_keys=True)) for t in load_tasks(SUITE) for s in t.plan}
    cases = [(c["shadows"], c["behaviour"]["args"]) for c in document["canaries"] if c["type"] == "granularity_trap"]
    # six tools with a case; the wording variants (canaries.variants) reword that one case (docs/canaries.md)
    per_tool = {t: {json.dumps(a, sort_keys=True) for tt, a in cases if tt == t} for t, _ in cases}
    assert len(per_tool) >= 6 and all(len(v) == 1 for v in per_tool.values()), per_tool
    assert not any((tool, json.dumps(args, sort_keys=True)) in plans for tool, args in cases)
    runs = study[0]
    ctl = runs.filter((pl.col("condition") == "control") & (pl.col("arm") == "granularity_trap"))
    dec = runs.filter((pl.col("condition") == "declared") & pl.col("present_granularity_trap"))
    key = ["model", "seed", "task_id"]
    assert ctl.height > 0 and ctl.select(key).sort(key).equals(dec.select(key).sort(key)), "offered on the same (task, seed)"
