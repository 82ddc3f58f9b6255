"""The dose study's known answers through the real reference agents (issue 21): the pool's
dose look-alikes, the dose lists, the runner, the detector and judges, then the curves.

- ``uniform`` picks uniformly among the real tool and its k look-alikes: at every level the
  interval of its first-pick rate holds k / (k + 1) (family-wise 95% over the levels), and
  every type's slope is the distractor slope (it reads no text, and its draws do not depend
  on the look-alikes' texts: the contrast is exactly 0);
- ``planted:temporal_decoy`` cannot see stale data and sees every other defect: its slope on
  temporal decoys is its distractor slope, and on every other type it falls below it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from fakes.study import no_fsync, write_study_pool, write_tasks

from canarykit import tools
from canarykit.agents import run_grid
from canarykit.assembly.assembly import write_assemblies
from canarykit.assembly.dose import dose_assemblies, dose_records
from canarykit.judging import JudgingJob, detect_and_judge
from canarykit.stats import dose_response, dose_runs, first_tools
from canarykit.tasks.tasks import select_tasks
from canarykit.types import CANARY_TYPES, DOSE_LEVELS

#: 60 tasks x 2 seeds x 7 kinds x 5 levels for two reference agents (about 9,600 runs): about a
#: minute. Fewer tasks leave the planted agent's contrast (about -0.4, SE 0.15 on 24 tasks) unresolved.
pytestmark = pytest.mark.slow

SEEDS = [0, 1]


@pytest.fixture(scope="module")
def curves(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root: Path = tmp_path_factory.mktemp("dose")
    tasks_path = root / "tasks.json"
    suite = write_tasks(tasks_path)
    tasks = select_tasks(suite, 60)
    real = tools.mcp_definitions()
    document = write_study_pool(root / "pool.json", "standard", suite, tasks_path)
    document["dose"] = dose_records(real, [t.correct_tools[0] for t in suite], "standard")  # as generate_canaries writes it
    (root / "pool.json").write_text(json.dumps(document))
    lists, _ = dose_assemblies(tasks, real, document["dose"], "standard", SEEDS)
    write_assemblies(lists, root / "assembly.parquet")
    pools = {"standard": {"canaries": root / "pool.json", "assembly": root / "assembly.parquet", "conditions": ["dose"]}}
    models = [{"name": "uniform", "backend": "reference", "agent": "uniform", "group": "reference"},
              {"name": "planted:temporal_decoy", "backend": "reference", "agent": "planted", "canary_type": "temporal_decoy",
               "take_prob": 0.5, "backoff_prob": 0.5, "group": "planted"}]
    with no_fsync():
        summary = run_grid(models, tasks_path, pools, SEEDS, {"max_turns": 12}, root / "store",
                           root / "index.parquet", root / "summary.json", progress=False, tasks=tasks)
    assert summary.failed == 0 and summary.total == 2 * len(lists)
    job = JudgingJob(root / "index.parquet", root / "store", tasks_path, root / "runs.parquet", root / "verdicts",
                     root / "validation.json", cache=root / "verdicts-cache", calls=root / "calls.parquet")
    detect_and_judge(job, {"template": str(Path(__file__).parents[1] / "data/prompts/judge_appendix_b.txt"),
                           "primary": {"kind": "rubric"}, "cross": {"kind": "tool-coverage"}}, models)
    runs = dose_runs(pl.read_parquet(root / "runs.parquet"), pl.read_parquet(root / "calls.parquet"), first_tools(tasks_path))
    levels = [k for k in DOSE_LEVELS if k > 0]
    return {"default": dose_response(runs), "familywise": dose_response(runs, alpha=0.05 / len(levels))}


def test_uniform_every_level_holds_k_over_k_plus_one(curves: dict[str, Any]) -> None:
    for kind, block in curves["familywise"]["uniform"].items():
        for k, lo, hi in zip(block["levels"], block["lo"], block["hi"], strict=True):
            if lo is not None:
                assert lo <= k / (k + 1) <= hi, (kind, k, lo, hi)


def test_uniform_typed_slopes_are_the_distractor_slope(curves: dict[str, Any]) -> None:
    block = curves["default"]["uniform"]
    assert block["distractor"]["slope_lo"] > 0
    for t in CANARY_TYPES:
        vs = block[t]["vs_distractor"]
        assert abs(vs["delta_slope"]) < 1e-9 and vs["lo"] <= 0 <= vs["hi"], (t, vs)


def test_planted_own_type_like_distractor_others_below(curves: dict[str, Any]) -> None:
    block = curves["default"]["planted:temporal_decoy"]
    # on the same cells (temporal decoys do not fit every tool, so its rates are over fewer tasks)
    assert abs(block["temporal_decoy"]["vs_distractor"]["delta_slope"]) < 1e-9
    for t in CANARY_TYPES:
        if t != "temporal_decoy":
            assert set(block[t]["rate"]) - {None} == {0.0}, t
            vs = block[t]["vs_distractor"]
            assert vs["hi"] < 0 and vs["p_holm"] < 0.05, (t, vs)
