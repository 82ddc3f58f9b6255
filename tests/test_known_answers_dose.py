"""The dose study's known answers through the real reference agents (issues 21, 27): the
pool's dose look-alikes (wordings drawn per task and seed), the dose lists, the runner, the
detector and judges, then the curves.

- ``uniform`` picks uniformly among the real tool and its k look-alikes: at every level the
  interval of its first-pick rate holds k / (k + 1) (family-wise 95% over the levels), its
  growth holds ln 2 per doubling on every kind, and every type's curve is its twins' (level
  and growth: it reads no text);
- ``planted:temporal_decoy`` cannot see stale data and sees every other defect: it takes what
  it cannot tell from the real tool half the time from k = 1 on, so every curve is flat from
  k = 1 (growth 0, no interaction), its temporal curve is its twins' curve, and the other
  types' curves sit below their twins' at one look-alike (level).
"""

from __future__ import annotations

import json
import math
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
from canarykit.types import DOSE_LEVELS

#: 60 tasks x 2 seeds x 7 kinds x 5 levels for two reference agents (about 8,000 runs): about a
#: minute. Two types and their twins (the planted agent's own and one it sees through) and
#: the distractors stand for the thirteen kinds.
pytestmark = pytest.mark.slow

SEEDS = [0, 1]
KINDS = ("temporal_decoy", "capability_mirage", "semantic_decoy", "twin:temporal_decoy", "twin:capability_mirage",
         "twin:semantic_decoy", "distractor")
OTHERS = ("capability_mirage", "semantic_decoy")


@pytest.fixture(scope="module")
def curves(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root: Path = tmp_path_factory.mktemp("dose")
    tasks_path = root / "tasks.json"
    suite = write_tasks(tasks_path)
    tasks = select_tasks(suite, 60)
    real = tools.mcp_definitions()
    document = write_study_pool(root / "pool.json", "standard", suite, tasks_path)
    # as generate_canaries writes it
    document["dose"] = dose_records(real, [t.correct_tools[0] for t in suite], "standard", kinds=KINDS)
    (root / "pool.json").write_text(json.dumps(document))
    lists, _ = dose_assemblies(tasks, real, document["dose"], "standard", SEEDS, kinds=KINDS)
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
    return {"default": dose_response(runs), "familywise": dose_response(runs, alpha=0.05 / (len(levels) * len(KINDS)))}


def test_uniform_every_level_holds_k_over_k_plus_one_and_grows_by_log_2(curves: dict[str, Any]) -> None:
    for kind, block in curves["familywise"]["uniform"].items():
        for k, lo, hi in zip(block["levels"], block["lo"], block["hi"], strict=True):
            if lo is not None:
                assert lo <= k / (k + 1) <= hi, (kind, k, lo, hi)
        g = block["growth"]
        assert 0 < g["lo"] <= math.log(2) <= g["hi"], (kind, g)


def test_uniform_typed_curves_are_its_twin_curves(curves: dict[str, Any]) -> None:
    block = curves["default"]["uniform"]
    for t in ("temporal_decoy", *OTHERS):
        for estimand in ("growth", "level"):
            vs = block[t]["vs_twin"][estimand]
            assert vs["lo"] <= 0 <= vs["hi"], (t, estimand, vs)


def test_planted_flat_from_one_look_alike_its_type_like_its_twins_others_below_theirs(curves: dict[str, Any]) -> None:
    block = curves["default"]["planted:temporal_decoy"]
    for kind, b in curves["familywise"]["planted:temporal_decoy"].items():
        assert b["growth"]["lo"] <= 0 <= b["growth"]["hi"], (kind, b["growth"])  # flat from k = 1
    own = block["temporal_decoy"]["vs_twin"]
    assert own["level"]["lo"] <= 0 <= own["level"]["hi"] and own["growth"]["lo"] <= 0 <= own["growth"]["hi"]
    for t in OTHERS:
        assert set(block[t]["rate"]) - {None} == {0.0}, t
        vs = block[t]["vs_twin"]
        assert vs["level"]["hi"] < 0 and vs["level"]["p_holm"] < 0.05, (t, vs["level"])
        assert vs["growth"]["lo"] <= 0 <= vs["growth"]["hi"], (t, vs["growth"])  # no property x density interaction
