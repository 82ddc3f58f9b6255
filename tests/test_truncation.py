"""Issue 16: a run cut off by agent.max_turns is `truncated` (not a task failure), a max_turns
that would cut off the oracle is refused at validation (naming the key and the task), the
shipped profiles pass, and the oracle's rubric pass rate is checked as an instrument."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml
from fakes.study import make_study

from canarykit.agents import run_grid
from canarykit.errors import ConfigError
from canarykit.judging import JudgingJob, detect_and_judge, oracle_lines
from canarykit.store.records import RunRecord, read_record, write_record
from canarykit.study.config import check_study, turns_needed, validate_params
from canarykit.tasks.tasks import load_tasks

ROOT = Path(__file__).resolve().parents[1]
# the built-in suite's profiles (bfcl.yaml runs BFCL's entries: tests/test_bfcl.py checks its oracle)
PROFILES = sorted(p for p in (ROOT / "src/canarykit/resources/profiles").glob("*.yaml") if p.stem != "bfcl")
ORACLE = {"name": "oracle", "backend": "reference", "agent": "oracle", "group": "reference"}


def _params() -> dict[str, Any]:
    cfg = yaml.safe_load((ROOT / "params.yaml").read_text())
    cfg["study"]["tasks"] = str(ROOT / "data/tasks.json")
    return cfg


def _merged(profile: Path) -> dict[str, Any]:
    """params.yaml with a profile merged over it, as `snakemake --configfile` merges it."""
    cfg = _params()
    for key, value in yaml.safe_load(profile.read_text()).items():
        if isinstance(value, dict) and isinstance(cfg.get(key), dict):
            cfg[key].update(value)
        else:
            cfg[key] = value
    return cfg


def test_turns_needed_is_one_turn_per_plan_step_plus_the_answer() -> None:
    tasks = load_tasks(ROOT / "data/tasks.json")
    longest = max(tasks, key=lambda t: len(t.plan))
    assert turns_needed(longest) == len(longest.plan) + 1 == 5


def test_a_too_small_max_turns_is_refused_naming_the_key_and_the_task() -> None:
    cfg = _params()
    cfg["agent"]["max_turns"] = 4
    with pytest.raises(ConfigError) as err:
        check_study(validate_params(cfg), "params.yaml")
    msg = str(err.value)
    assert msg.startswith("params.yaml: agent.max_turns: 4 is below what task hard-")
    assert "(4 tool-call turns + 1 answer turn = 5)" in msg and "allow_short_max_turns" in msg
    cfg["agent"]["max_turns"] = 5
    assert len(check_study(validate_params(cfg), "params.yaml")) == 120


def test_the_check_covers_the_tasks_the_study_runs_not_the_whole_suite() -> None:
    """study.limit_tasks picks the tasks (as the pipeline does): only those must fit max_turns."""
    cfg = _params()
    cfg["agent"]["max_turns"] = 3
    cfg["study"]["limit_tasks"] = 2  # easy-001 (1 call + answer) and medium-001 (2 calls + answer)
    assert len(check_study(validate_params(cfg), "params.yaml")) == 120  # the suite, all of it loaded
    cfg["study"]["limit_tasks"] = 3  # now hard-001 too, which needs 5
    with pytest.raises(ConfigError) as err:
        check_study(validate_params(cfg), "params.yaml")
    msg = str(err.value)
    assert msg.startswith("params.yaml: agent.max_turns: 3 is below what task hard-001 needs") and "other task" not in msg


def test_the_override_only_warns_loudly() -> None:
    cfg = _params()
    cfg["agent"].update(max_turns=3, allow_short_max_turns=True)
    warnings: list[str] = []
    check_study(validate_params(cfg), "params.yaml", warn=warnings.append)
    (w,) = warnings
    assert "WARNING" in w and "agent.max_turns: 3 is below" in w and "oracle will be cut off on 40 tasks" in w


def test_a_missing_task_file_names_params_yaml_and_study_tasks() -> None:
    cfg = _params()
    cfg["study"]["tasks"] = "data/taks.json"
    with pytest.raises(ConfigError) as err:
        check_study(validate_params(cfg), "params.yaml")
    assert str(err.value).startswith("params.yaml: study.tasks: the task file 'data/taks.json' does not exist")


@pytest.mark.parametrize("key,value", [
    (("agent", "max_turns"), 100000), (("agent", "retries", "max_attempts"), 1000), (("agent", "timeout_s"), 1e9),
    (("judge", "max_attempts"), 500), (("judge", "stability", "sample"), 10**9), (("agent", "concurrency"), 10**6),
    (("judge", "stability", "seed"), 2**32), (("judge", "stability", "seed"), -1), (("judge", "agreement", "seed"), 2**64),
    (("study", "limit_tasks"), 10**12), (("agent", "budget_usd"), 1e12), (("judge", "budget_usd"), 1e12),
    (("canaries", "llm", "budget_usd"), -1), (("canaries", "llm", "max_attempts"), 0), (("canaries", "llm", "timeout_s"), 0),
])
def test_numeric_settings_have_sane_bounds(key: tuple[str, ...], value: Any) -> None:
    cfg = _params()
    node = cfg
    for k in key[:-1]:
        node = node.setdefault(k, {})
    node[key[-1]] = value
    with pytest.raises(ConfigError) as err:
        validate_params(cfg, "params.yaml")
    assert ".".join(key) in str(err.value)


def test_every_numeric_key_of_the_schema_is_bounded_on_both_sides() -> None:
    from canarykit.study.config import params_schema

    unbounded: list[str] = []

    def walk(node: Any, path: str) -> None:
        if not isinstance(node, dict):
            return
        types = node.get("type")
        types = types if isinstance(types, list) else [types]
        if {"integer", "number"} & set(types):
            low = "minimum" in node or "exclusiveMinimum" in node
            high = "maximum" in node or "exclusiveMaximum" in node
            if not (low and high):
                unbounded.append(path)
        for key, sub in (node.get("properties") or {}).items():
            walk(sub, f"{path}.{key}" if path else key)
        for key in ("items", "additionalProperties"):
            walk(node.get(key), f"{path}[{key}]")
        for key, sub in (node.get("$defs") or {}).items():
            walk(sub, f"$defs.{key}")

    walk(params_schema(), "")
    assert not unbounded, unbounded


def test_seeds_up_to_two_to_the_32_are_accepted() -> None:
    cfg = _params()
    cfg["judge"]["stability"] = {"seed": 2**32 - 1}
    cfg["judge"]["agreement"] = {"seed": 2**32 - 1}
    validated = validate_params(cfg, "params.yaml")
    assert validated["judge"]["stability"]["seed"] == validated["judge"]["agreement"]["seed"] == 2**32 - 1


@pytest.mark.parametrize("profile", PROFILES, ids=[p.stem for p in PROFILES])
def test_shipped_profiles_pass_the_check_and_the_oracle_passes_every_task_under_them(profile: Path, tmp_path: Path) -> None:
    cfg = validate_params(_merged(profile))
    tasks = check_study(cfg, str(profile))
    tasks_path, pools, _ = make_study(tmp_path / "study", pools={"standard": ["baseline"]})
    summary = run_grid([ORACLE], tasks_path, pools, [0], {**cfg["agent"], "cache_dir": str(tmp_path / "cache")},
                       tmp_path / "store", tmp_path / "index.parquet", tmp_path / "summary.json", progress=False)
    assert summary.total == len(tasks) == 120
    report = _judge(tmp_path, [ORACLE], tasks_path)
    check = report["oracle_check"]
    assert check["ok"] and check["passed"] == check["runs"] == 120 and check["pass_rate"] == 1.0


def _judge(tmp_path: Path, models: list[dict[str, Any]], tasks_path: Path, log: Any = None) -> dict[str, Any]:
    out = tmp_path / "out"
    job = JudgingJob(tmp_path / "index.parquet", tmp_path / "store", tasks_path, out / "runs.parquet", out / "verdicts",
                     out / "validation.json", cache=tmp_path / "verdicts-cache")
    return detect_and_judge(
        job,
        {"template": str(ROOT / "data/prompts/judge_appendix_b.txt"), "primary": {"kind": "rubric"},
         "cross": {"kind": "tool-coverage"}, "stability": {"sample": 0}},
        models, log=log,
    )


def test_a_run_cut_off_by_the_limit_is_truncated_and_flags_the_oracle_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tasks_path, pools, tasks = make_study(tmp_path / "study", pools={"standard": ["baseline"]})
    summary = run_grid([ORACLE], tasks_path, pools, [0], {"max_turns": 4, "cache_dir": str(tmp_path / "cache")},
                       tmp_path / "store", tmp_path / "index.parquet", tmp_path / "summary.json", progress=False)
    assert summary.failed == 0
    index = pl.read_parquet(tmp_path / "index.parquet")
    long = {t.id for t in tasks if turns_needed(t) > 4}
    assert set(index.filter(pl.col("status") == "truncated")["task_id"]) == long and len(long) == 8
    assert not index["error"].any()
    report = _judge(tmp_path, [ORACLE], tasks_path)
    runs = pl.read_parquet(tmp_path / "out/runs.parquet")
    assert runs.schema["truncated"] == pl.Boolean and runs["truncated"].null_count() == 0
    cut = runs.filter(pl.col("truncated"))
    assert set(cut["task_id"]) == long and not cut["error"].any() and (cut["tool_calls"] == 4).all()
    assert report["truncated_runs"] == 8
    check = report["oracle_check"]
    assert not check["ok"] and check["failed"] == 8 and check["passed"] == 112
    assert {f["task_id"] for f in check["failures"]} == long and {f["status"] for f in check["failures"]} == {"truncated"}
    saved = json.loads((tmp_path / "out/validation.json").read_text())["oracle_check"]
    assert saved["failed"] == 8
    err = capsys.readouterr().err
    assert "WARNING: oracle check FAILED: 8 of 120 oracle runs" in err and "configuration or task-suite problem" in err
    assert any("hard-" in line and "truncated" in line for line in oracle_lines(check))


def test_old_turn_limit_records_read_as_truncated(tmp_path: Path) -> None:
    tasks_path, pools, _ = make_study(tmp_path / "study", n_tasks=2, pools={"standard": ["baseline"]})
    run_grid([ORACLE], tasks_path, pools, [0], {"max_turns": 12, "cache_dir": str(tmp_path / "cache")},
             tmp_path / "store", tmp_path / "index.parquet", tmp_path / "summary.json", progress=False)
    path = next(p for p in (tmp_path / "store").rglob("*.json") if p.parent.name != ".retry")
    rec = read_record(path)
    old = copy.deepcopy(rec)
    old.status = "turn_limit"
    write_record(path, old)
    back = RunRecord.from_dict(json.loads(path.read_text()), str(path))
    assert back.status == "truncated" and back.truncated
    # the runner reuses it (a finished run) and reports it as truncated
    s = run_grid([ORACLE], tasks_path, pools, [0], {"max_turns": 12, "cache_dir": str(tmp_path / "cache")},
                 tmp_path / "store", tmp_path / "index.parquet", tmp_path / "summary.json", progress=False)
    assert s.reused == 2 and "truncated" in pl.read_parquet(tmp_path / "index.parquet")["status"].to_list()
