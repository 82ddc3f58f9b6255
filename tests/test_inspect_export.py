"""Inspect logs out (issue 30, item 1): a small real study (reference agents through the real
runner, detector, judges and statistics: test_report's) exported with `canarykit export
inspect`, read back with inspect_ai's own reader: a log per (model, condition), a sample per
run, a trapped run's canary call and metadata, results with the study's intervals; and
`canarykit diagnose` over the logs gives the detector's numbers for each run."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml
from fakes.readme import command, sh
from test_report import Study, make_study

from canarykit import cli
from canarykit.canaries import load_pool_document
from canarykit.store.records import read_record, record_path
from canarykit.study.layout import slug

MODELS = ("oracle", "planted:capability_mirage")
CONDITIONS = ("baseline", "declared", "control")


def workflow_layout(root: Path, study: Study) -> Study:
    """The study moved into the workflow's layout under ``root``: ``results/`` with its pools
    (``results/canaries/``) and run store (``results/runs/store``), the task file where
    ``params.resolved.yaml`` says it is."""
    (study.out / "canaries").mkdir()
    shutil.copy(root / "canaries-standard.json", study.out / "canaries" / "standard.json")
    (study.out / "runs").mkdir()
    shutil.move(study.store, study.out / "runs" / "store")
    params = yaml.safe_load((study.out / "params.resolved.yaml").read_text())
    params["study"]["tasks"] = "tasks.json"
    (study.out / "params.resolved.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return Study(study.out, study.out / "runs" / "store", params, study.result)


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Study, Path, Path]:
    root = tmp_path_factory.mktemp("inspect") / "study"
    study = make_study(root, models=MODELS, per_difficulty=2, seeds=(0, 1), conditions=CONDITIONS, ablation=False)
    study = workflow_layout(root, study)
    sh(root, command("canarykit export inspect --study results -o results/inspect").text)  # as the page prints it
    return study, root / "results" / "inspect", root / "tasks.json"


def _logs(out: Path) -> dict[str, Any]:
    from inspect_ai.log import read_eval_log

    return {p.name: read_eval_log(str(p)) for p in sorted(out.glob("*.eval"))}


def test_a_log_per_model_and_condition_and_a_sample_per_run(exported: tuple[Study, Path, Path]) -> None:
    study, out, _ = exported
    runs = pl.read_parquet(study.out / "runs.parquet")
    logs = _logs(out)
    assert set(logs) == {f"{slug(m)}_{c}.eval" for m in MODELS for c in CONDITIONS}
    for name, log in logs.items():
        meta = log.eval.metadata["canarykit"]
        cell = runs.filter((pl.col("model") == meta["model"]["name"]) & (pl.col("condition") == meta["condition"]))
        assert len(log.samples) == cell.height > 0, name
        assert sorted(s.metadata["run_id"] for s in log.samples) == sorted(cell["run_id"].to_list())
        assert {(s.id, s.epoch) for s in log.samples} == {
            (r["task_id"] + (f"/{r['arm']}" if r["arm"] else ""), r["seed"] + 1) for r in cell.iter_rows(named=True)}
        assert log.eval.task == f"canarykit/{meta['condition']}" and log.status == "success"
        assert meta["params"] == yaml.safe_load((study.out / "params.resolved.yaml").read_text())
        assert {"canarykit", "inspect_ai"} <= set(log.eval.packages)
        # results: csr and tsr with the study's own intervals (stats.json), per (condition, model)
        for score in log.results.scores:
            ci = study.result[f"{score.name}_ci"][meta["condition"]][meta["model"]["name"]]
            assert score.metrics[score.name].value == pytest.approx(ci[score.name])
            assert (score.metrics["ci_lower"].value, score.metrics["ci_upper"].value) == pytest.approx((ci["lo"], ci["hi"]))
        assert [s.name for s in log.results.scores] == ["csr", "tsr"]
    assert sum(len(log.samples) for log in logs.values()) == runs.height


def test_a_trapped_run_carries_its_canary_call_and_metadata(exported: tuple[Study, Path, Path]) -> None:
    study, out, _ = exported
    runs = pl.read_parquet(study.out / "runs.parquet")
    row = runs.filter(pl.col("trapped") & (pl.col("condition") == "declared")).sort("run_id").row(0, named=True)
    log = _logs(out)[f"{slug(row['model'])}_declared.eval"]
    (sample,) = [s for s in log.samples if s.metadata["run_id"] == row["run_id"]]
    record = read_record(record_path(study.store, row["run_id"]))
    pool = load_pool_document(study.out / "canaries" / "standard.json")
    canaries = {c["id"]: c for c in pool["canaries"]}
    meta = sample.metadata
    assert (meta["task"], meta["seed"], meta["condition"], meta["pool"], meta["arm"]) == (
        row["task_id"], row["seed"], "declared", "standard", "")
    assert meta["truncated"] is False and meta["error"] is False and meta["offered"] == [o.name for o in record.offered]
    offered = [c for c in meta["canaries"] if c["kind"] == "canary"]
    assert offered and all(c["wording"] == canaries[c["item"]]["description"] and record.offered[c["position"]].name == c["name"]
                           and c["type"] == canaries[c["item"]]["type"] for c in offered)
    names = {c["name"] for c in offered}
    called = [(m, c) for m in sample.messages if m.role == "assistant" for c in m.tool_calls or [] if c.function in names]
    assert called, "the canary call is in the messages"
    answer = next(m for m in sample.messages if m.role == "tool" and m.tool_call_id == called[0][1].id)
    assert answer.function == called[0][1].function
    assert sample.scores["canary"].value["trapped"] is True and sample.scores["canary"].value["csr"] == pytest.approx(row["csr"])
    assert sample.scores["outcome"].value == ("C" if row["success"] else "I")
    assert sample.scores["outcome"].metadata["judge"] == "rubric" and sample.scores["cross"].metadata["judge"] == "tool-coverage"
    assert [m.role for m in sample.messages[:2]] == ["system", "user"] and sample.input == sample.messages[1].text


def test_diagnose_reads_the_exported_logs_with_the_detectors_numbers(exported: tuple[Study, Path, Path]) -> None:
    import json

    study, out, _ = exported
    sh(out.parents[1], command("canarykit diagnose results/inspect -o diagnosis").text)
    doc = json.loads((out.parents[1] / "diagnosis" / "diagnosis.json").read_text())
    runs = {r["run_id"]: r for r in pl.read_parquet(study.out / "runs.parquet").iter_rows(named=True)}
    assert len(doc["sessions"]) == len(runs)
    logs = _logs(out)
    by_session = {f"{Path(name).stem}:{s.id}:{s.epoch}": s.metadata["run_id"] for name, log in logs.items() for s in log.samples}
    for s in doc["sessions"]:
        row = runs[by_session[s["session"]]]
        assert (s["trapped"], s["csr"], s["calls"]["canary"]) == (row["trapped"], row["csr"], row["canary_calls"])


def test_export_refuses_bad_input_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["export", "inspect", "--study", str(tmp_path / "nowhere"), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("canarykit: error: ") and "runs.parquet" in err and "\n" not in err
    assert not (tmp_path / "out").exists()


def test_a_call_inspect_refused_is_still_the_call_of_the_tool_the_model_chose(tmp_path: Path) -> None:
    """An Inspect log canarykit did not write, its tools named by a canarykit pool file: a
    canary call whose arguments Inspect refused (it never reached a server) counts as that
    canary's call (invalid_arguments), as in the study's loop; a name not offered is unknown."""
    from fakes.study import write_pool
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalLog,
        EvalSample,
        EvalSpec,
        write_eval_log,
    )
    from inspect_ai.model import ChatMessageAssistant, ChatMessageTool, ChatMessageUser
    from inspect_ai.tool import ToolCall, ToolCallError

    pool = tmp_path / "pool.json"
    trap = next(c for c in write_pool(pool, "standard") if c["type"] == "parameter_trap" and c["shadows"] == "get_weather")
    messages = [ChatMessageUser(content="Weather in Paris?"),
                ChatMessageAssistant(content="", tool_calls=[ToolCall("c1", trap["name"], {"city": "Paris"})]),
                ChatMessageTool(content="", tool_call_id="c1", function=trap["name"],
                                error=ToolCallError("parsing", "'api_key' is a required property")),
                ChatMessageAssistant(content="", tool_calls=[ToolCall("c2", "get_weather", {"city": "Paris"}),
                                                             ToolCall("c3", "no_such_tool", {})]),
                ChatMessageTool(content='{"temp_c": 12}', tool_call_id="c2", function="get_weather"),
                ChatMessageTool(content="", tool_call_id="c3", function="no_such_tool",
                                error=ToolCallError("parsing", "Tool no_such_tool not found"))]
    log = EvalLog(eval=EvalSpec(created="2026-01-01T00:00:00Z", task="mine", dataset=EvalDataset(), model="openai/x",
                                config=EvalConfig()),
                  samples=[EvalSample(id=1, epoch=1, input="Weather in Paris?", target="", messages=messages)])
    write_eval_log(log, tmp_path / "mine.eval")
    assert cli.main(["diagnose", str(tmp_path / "mine.eval"), "-o", str(tmp_path / "d")]) == 2, "which tools are canaries?"
    assert cli.main(["diagnose", str(tmp_path / "mine.eval"), "--tools", str(pool), "-o", str(tmp_path / "d")]) == 0
    calls = pl.read_csv(tmp_path / "d" / "calls.csv")
    assert calls.select("name", "status", "cls").rows() == [
        (trap["name"], "invalid_arguments", "canary"), ("get_weather", "ok", "real"), ("no_such_tool", "unknown_tool", "unknown")]
