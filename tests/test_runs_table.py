"""The per-run table, the metrics JSON and the detect-and-judge command, on a tiny store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from fakes.records import FakeTask, call_events

from canarykit.detection.metrics import metrics_json
from canarykit.detection.runs_table import EXTRA_COLUMNS, INTERFACE_COLUMNS, build_runs_table
from canarykit.errors import ConfigError, InputError
from canarykit.judging import JudgingJob, detect_and_judge
from canarykit.store.records import OfferedTool, RunRecord, record_path, write_record
from canarykit.store.schemas import RunsTable, check_runs_type_columns, validate

OFFERED = [
    OfferedTool("get_weather"),
    OfferedTool("get_weather_v2", "pt-w", "parameter_trap", "get_weather"),
    OfferedTool("cached_weather", "sd-w", "semantic_decoy", "get_weather"),
]


TASKS = {"t1": FakeTask("t1", "Weather in Delhi?"), "t2": FakeTask("t2", "Weather in Pune?")}


def rec(
    run_id: str,
    calls: list[str],
    *,
    model: str = "m1",
    task_id: str = "t1",
    seed: int = 0,
    condition: str = "full",
    error: bool = False,
) -> RunRecord:
    statuses = [(name, "invalid_arguments" if name == "get_weather_v2" else "ok") for name in calls]
    events = call_events(statuses, arguments={}, content="31 C", refusal="api_key")
    offered = OFFERED if condition != "baseline" else OFFERED[:1]
    return RunRecord(
        run_id=run_id,
        identity={},
        model=f"old-{model}",
        group="old",
        backend="reference",
        condition=condition,
        pool="standard",
        seed=seed,
        task_id=task_id,
        difficulty="easy",
        offered=list(offered),
        correct_tools=["get_weather"],
        events=events,
        final_answer=None if error else "31 C",
        status="error" if error else "completed",
        error=error,
    )


RECORDS = [
    rec("aa01", ["get_weather_v2", "get_weather"]),  # trapped, recovered
    rec("aa02", ["cached_weather", "cached_weather"], seed=1),  # trapped twice, not recovered
    rec("bb03", [], task_id="t2"),  # zero-call
    rec("bb04", ["get_weather"], model="m2"),
    rec("cc05", ["cached_weather"], model="m2", seed=1, error=True),  # backend error
    rec("cc06", ["get_weather"], model="m2", condition="baseline"),
]


def write_store(
    tmp_path: Path, records: list[RunRecord] = RECORDS, missing_error_run: bool = False
) -> tuple[Path, Path]:
    store = tmp_path / "store"
    rows = []
    for r in records:
        write_record(record_path(store, r.run_id), r)
        rows.append(
            {
                "model": r.model.removeprefix("old-"),
                "group": "grp",
                "backend": "reference",
                "provider": "reference",
                "condition": r.condition,
                "pool": r.pool,
                "seed": r.seed,
                "task_id": r.task_id,
                "difficulty": r.difficulty,
                "run_id": r.run_id,
                "status": r.status,
                "error": r.error,
                "executed": True,
            }
        )
    if missing_error_run:
        rows.append(
            {
                **rows[0],
                "run_id": "dd07",
                "seed": 2,
                "status": "error",
                "error": True,
                "executed": False,
            }
        )
    index = tmp_path / "index.parquet"
    pl.DataFrame(rows).write_parquet(index)
    return index, store


def verdicts(success: dict[str, bool | None]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "run_id": list(success),
            "success": list(success.values()),
            "status": ["ok" if v is not None else "unparseable" for v in success.values()],
        },
        schema={"run_id": pl.String, "success": pl.Boolean, "status": pl.String},
    )


def test_build_runs_table_columns_and_values(tmp_path: Path) -> None:
    index, store = write_store(tmp_path, missing_error_run=True)
    primary = verdicts(
        {
            "aa01": True,
            "aa02": False,
            "bb03": None,
            "bb04": True,
            "cc05": None,
            "cc06": True,
            "dd07": None,
        }
    )
    df = build_runs_table(index, store, None, primary)
    assert tuple(df.columns) == INTERFACE_COLUMNS + EXTRA_COLUMNS
    validate(df, RunsTable, "t")
    check_runs_type_columns(df, "t")
    rows = {r["run_id"]: r for r in df.iter_rows(named=True)}
    assert rows["aa01"]["model"] == "m1" and rows["aa01"]["group"] == "grp"  # labels from the index
    assert (rows["aa01"]["csr"], rows["aa01"]["trapped"], rows["aa01"]["recovered"]) == (
        0.5,
        True,
        True,
    )
    assert rows["aa01"]["trapped_parameter_trap"] and rows["aa01"]["present_semantic_decoy"]
    assert (rows["aa02"]["canary_calls"], rows["aa02"]["csr"], rows["aa02"]["recovered"]) == (
        2,
        1.0,
        False,
    )
    assert (
        rows["bb03"]["csr"] is None
        and rows["bb03"]["zero_call"] is True
        and rows["bb03"]["judge_status"] == "unparseable"
    )
    e = rows["cc05"]
    assert (
        e["error"] and e["success"] is None and e["judge_status"] == "skipped" and e["csr"] is None
    )
    assert rows["dd07"]["error"] and rows["dd07"]["tool_calls"] == 0
    assert rows["cc06"]["present_semantic_decoy"] is False


def test_missing_verdict_or_record_is_an_error(tmp_path: Path) -> None:
    index, store = write_store(tmp_path)
    with pytest.raises(InputError, match="no primary verdict"):
        build_runs_table(index, store, None, verdicts({"aa01": True}))
    (store / "aa" / "aa01.json").unlink()
    with pytest.raises(InputError) as exc:
        build_runs_table(index, store, None, verdicts({r.run_id: True for r in RECORDS}))
    assert exc.value.field == "run_id" and "aa01" in str(exc.value)
    # a run id that is no content key (a hand-edited index) is one line naming the field
    write_record(record_path(store, "aa01"), RECORDS[0])
    pl.read_parquet(index).with_columns(pl.col("run_id").replace({"bb03": "../bb03"})).write_parquet(index)
    with pytest.raises(InputError) as exc:
        build_runs_table(index, store, None, verdicts({r.run_id: True for r in RECORDS}))
    assert exc.value.field == "run_id" and "../bb03" in str(exc.value)


def test_metrics_json(tmp_path: Path) -> None:
    index, store = write_store(tmp_path)
    df = build_runs_table(
        index,
        store,
        None,
        verdicts(
            {"aa01": True, "aa02": False, "bb03": None, "bb04": True, "cc05": None, "cc06": True}
        ),
    )
    m = metrics_json(df)
    assert list(m) == ["baseline", "full"]
    m1 = m["full"]["standard"]["m1"]
    assert m1 == {
        "csr": 0.75,
        "tsr": 0.5,
        "recovery": 0.5,
        "recovery_n": 2,
        "runs": 3,
        "error_runs": 0,
        "zero_call_runs": 1,
        "truncated_runs": 0,
    }
    m2 = m["full"]["standard"]["m2"]
    assert m2["runs"] == 2 and m2["error_runs"] == 1 and m2["csr"] == 0.0 and m2["recovery"] is None
    assert m2["recovery_n"] == 0
    json.dumps(m, allow_nan=False)


def test_detect_and_judge_end_to_end(tmp_path: Path) -> None:
    index, store = write_store(tmp_path)
    sheet = tmp_path / "human.csv"
    sheet.write_text("run_id,verdict\naa01,1\naa02,success\n")
    judge_cfg: dict[str, Any] = {
        "template": "data/prompts/judge_appendix_b.txt",
        "primary": {"kind": "llm", "model": "openai/judge", "api_base": "http://127.0.0.1:9/v1"},
        "cross": {"kind": "tool-coverage"},
        "max_attempts": 2,
        "stability": {"sample": 3, "repeats": 2, "temperature": 0.7, "seed": 0},
    }
    calls: list[dict[str, Any]] = []

    def fake(**kw: Any) -> dict[str, Any]:
        calls.append(kw)
        ok = "31 C" in kw["messages"][0]["content"]
        return {"choices": [{"message": {"content": json.dumps({"success": ok, "reason": "r"})}}]}

    root = Path(__file__).resolve().parents[1]
    judge_cfg["template"] = str(root / judge_cfg["template"])
    out = tmp_path / "out"
    job = JudgingJob(
        index=index,
        store=store,
        tasks=TASKS,
        runs=out / "runs.parquet",
        verdicts=out / "verdicts",
        validation=out / "validation.json",
        cache=tmp_path / "cache",
        calls=out / "calls.parquet",
        metrics=out / "metrics.json",
    )
    kwargs: dict[str, Any] = dict(
        job=job,
        judge_cfg=judge_cfg,
        models=[{"name": "m1", "backend": "reference", "agent": "oracle"}],
        human_sheet=sheet,
        completion_fn=fake,
        retry_delay_s=0,
    )
    rep = detect_and_judge(**kwargs)
    runs = pl.read_parquet(out / "runs.parquet")
    assert runs.height == 6 and runs["success_cross"].null_count() == 1
    assert rep["counts"]["primary"]["skipped"] == 1
    judged_first = rep["counts"]["primary"]["judged"]
    assert judged_first >= 1
    assert set(rep) >= {"cross", "stability", "human", "judges"}
    assert rep["human"]["primary"]["n"] == 2
    assert rep["stability"]["sample"] == 3
    assert json.loads((out / "validation.json").read_text())["runs"] == 6
    assert (out / "verdicts" / "primary.parquet").exists() and (out / "calls.parquet").exists()
    assert json.loads((out / "metrics.json").read_text()) == metrics_json(runs)
    assert json.loads((out / "verdicts" / "counts.json").read_text())["primary"] == rep["counts"]["primary"]
    n_calls = len(calls)
    rep2 = detect_and_judge(**kwargs)
    assert rep2["counts"]["primary"]["judged"] == 0 and rep2["counts"]["cross"]["judged"] == 0
    assert len(calls) == n_calls  # a re-run judges nothing, stability repeats included
    assert pl.read_parquet(out / "runs.parquet").equals(runs)
    # a judge from an evaluated model's provider is refused before anything runs
    kwargs["models"] = [{"name": "gpt-4.1", "backend": "litellm", "model": "openai/gpt-4.1"}]
    kwargs["judge_cfg"] = {**judge_cfg, "primary": {"kind": "llm", "model": "openai/gpt-5.2"}}
    with pytest.raises(ConfigError) as exc:
        detect_and_judge(**kwargs)
    assert exc.value.field == "judge.primary.model"


def test_judge_runs_counts_judged_and_reused(tmp_path: Path) -> None:
    from canarykit.judging import judge_runs

    index, store = write_store(tmp_path)
    index_df = pl.read_parquet(index)
    v1, c1 = judge_runs(
        index_df, store, TASKS, {"kind": "tool-coverage"}, tmp_path / "cache", "params.yaml"
    )
    assert v1.height == 6 and c1["skipped"] == 1 and c1["judged"] + c1["reused"] == 5
    v2, c2 = judge_runs(
        index_df, store, TASKS, {"kind": "tool-coverage"}, tmp_path / "cache", "params.yaml"
    )
    assert c2["judged"] == 0 and c2["reused"] == 5
    assert v1.select("run_id", "success", "status").equals(v2.select("run_id", "success", "status"))
    with pytest.raises(InputError) as exc:
        judge_runs(index_df, store, {"t1": TASKS["t1"]}, {"kind": "tool-coverage"}, None)
    assert exc.value.field == "task_id"
    with pytest.raises(ConfigError) as exc2:
        judge_runs(index_df, store, TASKS, {"kind": "oracle"}, None, key="judge.cross")
    assert exc2.value.field == "judge.cross.kind"


def test_planted_agents_known_answer_end_to_end(tmp_path: Path) -> None:
    """Real planted reference agents on a small real study: each planted agent's highest
    type-specific trap rate is its own type, and no other type is ever sprung."""
    pytest.importorskip("canarykit.agents")
    from fakes.study import make_study

    from canarykit.agents import run_grid
    from canarykit.detection.metrics import type_trap_rates
    from canarykit.types import CANARY_TYPES

    tasks_path, pools, _ = make_study(tmp_path / "study", n_tasks=30, pools={"standard": ["full"]})
    models = [
        {"name": f"planted:{t}", "backend": "reference", "agent": "planted", "canary_type": t,
         "take_prob": 0.5, "backoff_prob": 0.5, "group": "planted"}
        for t in CANARY_TYPES
    ]  # fmt: skip
    run_grid(
        models, tasks_path, pools, [0], {"max_turns": 12, "cache_dir": str(tmp_path / "rc")},
        tmp_path / "store", tmp_path / "index.parquet", tmp_path / "summary.json", progress=False,
    )  # fmt: skip
    detect_and_judge(
        JudgingJob(tmp_path / "index.parquet", tmp_path / "store", tasks_path, tmp_path / "runs.parquet",
                   tmp_path / "verdicts", tmp_path / "val.json", cache=tmp_path / "vc"),
        {"primary": {"kind": "rubric"}, "cross": {"kind": "tool-coverage"}, "stability": {"sample": 10}},
        models,
    )  # fmt: skip
    runs = pl.read_parquet(tmp_path / "runs.parquet")
    rates = type_trap_rates(runs)
    for t in CANARY_TYPES:
        mine = rates.filter(pl.col("model") == f"planted:{t}").sort("rate", descending=True)
        assert mine["canary_type"][0] == t and mine["rate"][0] > 0
        assert mine["rate"][1:].max() == 0.0
    assert runs["success"].null_count() == 0


def test_truncated_column_is_an_optional_non_null_extra(tmp_path: Path) -> None:
    cut = rec("ee08", ["get_weather"], model="m2", task_id="t2")
    cut.status, cut.final_answer = "truncated", None
    old = rec("ee09", ["get_weather"], model="m2", task_id="t2", seed=1)
    old.status = "turn_limit"  # what earlier versions wrote
    index, store = write_store(tmp_path, [*RECORDS, cut, old])
    df = build_runs_table(index, store, None, verdicts({r.run_id: None for r in [*RECORDS, cut, old]}))
    assert "truncated" in df.columns[len(INTERFACE_COLUMNS):] and df.schema["truncated"] == pl.Boolean
    flags = dict(zip(df["run_id"], df["truncated"], strict=True))
    assert flags["ee08"] and flags["ee09"] and not flags["cc05"] and not flags["aa01"]
    # other tools' run tables may leave the column out; when present it is never null
    validate(df.drop("truncated"), RunsTable, "other.parquet")
    with pytest.raises(InputError, match="truncated"):
        validate(df.with_columns(pl.lit(None, dtype=pl.Boolean).alias("truncated")), RunsTable, "bad.parquet")
    with pytest.raises(InputError):
        validate(df.with_columns(pl.col("error").alias("truncated")), RunsTable, "bad.parquet")
