"""Judge validation as the paper ran it: a stratified cross-judge sample, per-type kappa on
disjoint subsets, and a blinded, stratified human-grading sheet (``canarykit human-sheet``)."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from fakes.study import SUITE, write_assembly, write_pool
from sklearn.metrics import cohen_kappa_score

from canarykit import canaries
from canarykit.cli import main
from canarykit.judging import (
    blind_record,
    cross_judge_report,
    read_human_sheet,
    stratified_sample,
)
from canarykit.judging._agreement import RUNTIME_MARKERS
from canarykit.store.records import (
    Event,
    FinalAnswerEvent,
    ModelTurnEvent,
    OfferedTool,
    RunRecord,
    ToolCallEvent,
    ToolResultEvent,
)
from canarykit.types import CANARY_TYPES, ToolResult

# --------------------------------------------------------------------------- sampling and kappa


def _runs(n: int = 600, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    declared = rng.integers(1, 4, n)  # tasks declare 1-3 types
    rows: list[dict[str, Any]] = []
    for i in range(n):
        cond = ["baseline", "declared", "full"][i % 3]
        types = set(rng.choice(len(CANARY_TYPES), declared[i], replace=False)) if cond == "declared" else set()
        if cond == "full":
            types = set(range(len(CANARY_TYPES)))
        s = bool(rng.random() < 0.6)
        rows.append({
            "run_id": f"r{i:04d}", "model": f"m{i % 4}", "condition": cond, "pool": "standard" if i % 5 else "subtle",
            "error": bool(rng.random() < 0.03), "success": s, "success_cross": s if rng.random() < 0.85 else not s,
            **{f"present_{t}": j in types for j, t in enumerate(CANARY_TYPES)},
        })
    return pl.DataFrame(rows)


def test_stratified_sample_is_seeded_proportional_and_even() -> None:
    runs = _runs()
    a = stratified_sample(runs, 120, 3, ["model", "condition"])
    assert a.height == 120 and a.equals(stratified_sample(runs, 120, 3, ["model", "condition"]))
    assert not a.equals(stratified_sample(runs, 120, 4, ["model", "condition"]))
    sizes = runs.group_by("model", "condition").len()
    got = a.group_by("model", "condition").len().rename({"len": "k"}).join(sizes, on=["model", "condition"])
    assert (abs(got["k"] - 120 * got["len"] / runs.height) < 1).all()  # largest-remainder shares
    # equal allocation: as even as the strata allow, a short stratum gives its deficit away
    small = pl.DataFrame({"run_id": [f"x{i}" for i in range(23)], "g": ["a"] * 2 + ["b"] * 10 + ["c"] * 11})
    counts = dict(stratified_sample(small, 12, 0, ["g"], allocation="equal").group_by("g").len().iter_rows())
    assert counts["a"] == 2 and {counts["b"], counts["c"]} == {5} and sum(counts.values()) == 12
    assert stratified_sample(small, 100, 0, ["g"], allocation="equal").height == 23


def test_cross_judge_sample_and_disjoint_per_type_kappa() -> None:
    runs = _runs()
    rep = cross_judge_report(runs, sample=300, seed=7)
    s = rep["sample"]
    assert s["drawn"] == 300 and s["strata"] == ["model", "condition", "pool"] and len(s["run_ids"]) == 300
    sampled = runs.filter(pl.col("run_id").is_in(s["run_ids"]))
    assert not sampled["error"].any()
    assert s["kappa"] == pytest.approx(cohen_kappa_score(sampled["success"].to_list(), sampled["success_cross"].to_list()))
    valid = runs.filter(~pl.col("error"))
    assert rep["overall"]["kappa"] == pytest.approx(cohen_kappa_score(valid["success"].to_list(), valid["success_cross"].to_list()))
    assert set(rep["by_condition"]) == {f"{p}/{c}" for p in ("standard", "subtle") for c in ("baseline", "declared", "full")}
    # per type: declared runs offering only that type -> disjoint subsets, no full-condition run
    decl = valid.filter(pl.col("condition") == "declared")
    n_offered = decl.select(pl.sum_horizontal([pl.col(f"present_{t}").cast(pl.Int32) for t in CANARY_TYPES])).to_series()
    assert sum(rep["per_type"][t]["n"] for t in CANARY_TYPES) == int((n_offered == 1).sum())
    t0 = CANARY_TYPES[0]
    only = decl.filter(pl.col(f"present_{t0}") & (n_offered == 1))
    assert rep["per_type"][t0]["kappa"] == pytest.approx(cohen_kappa_score(only["success"].to_list(), only["success_cross"].to_list()))
    assert rep["per_type_declared"][t0]["n"] == decl.filter(pl.col(f"present_{t0}")).height
    assert rep["per_type_declared"][t0]["shared"] > 0


# --------------------------------------------------------------------------- blinding


def _record(offered: list[OfferedTool], events: list[Event], final: str) -> RunRecord:
    return RunRecord(
        run_id="ab" * 20, identity={"task": {"prompt": "Weather in Delhi?"}}, model="m", group="g", backend="reference",
        condition="declared", pool="standard", seed=0, task_id="t1", difficulty="easy", offered=offered,
        correct_tools=["get_weather"], events=events, final_answer=final, status="completed", error=False,
    )


def test_kappa_gets_a_task_clustered_interval() -> None:
    """Kappa's interval clusters by task: its squared half-width over 2 t-quantiles is the
    leave-one-task-out jackknife variance (within 15%; measured 1%), it is wider than
    treating runs as independent when the judges disagree on whole tasks, and it is flagged
    below 30 tasks."""
    from canarykit.judging._agreement import agreement, cohen_kappa

    rng = np.random.default_rng(9)
    tasks = np.repeat([f"t{i:02d}" for i in range(60)], 5)
    truth = rng.random(tasks.size) < 0.6
    hard = np.repeat(rng.random(60) < 0.25, 5)  # the cross judge errs on whole tasks
    a = truth.tolist()
    b = np.where(hard, ~truth, np.where(rng.random(tasks.size) < 0.05, ~truth, truth)).tolist()
    got = agreement(a, b, tasks.tolist())
    assert got["kappa_lo"] < got["kappa"] < got["kappa_hi"] and got["clusters"] == 60 and got["few_clusters"] is False
    jack = np.array([cohen_kappa([x for x, t in zip(a, tasks, strict=True) if t != g],
                                 [y for y, t in zip(b, tasks, strict=True) if t != g]) for g in np.unique(tasks)])
    var_jack = (59 / 60) * ((jack - jack.mean()) ** 2).sum()
    half = (got["kappa_hi"] - got["kappa_lo"]) / 2 / 2.0  # t(59) quantile 2.0
    assert half**2 == pytest.approx(var_jack, rel=0.15)
    runs = agreement(a, b, [str(i) for i in range(tasks.size)])  # every run its own cluster
    assert runs["kappa_hi"] - runs["kappa_lo"] < 0.8 * (got["kappa_hi"] - got["kappa_lo"])
    few = agreement(a[:40], b[:40], tasks[:40].tolist())
    assert few["few_clusters"] is True and few["clusters"] == 8
    same = agreement([True, False] * 10, [True, False] * 10, [f"t{i}" for i in range(20)])
    assert same["kappa"] == 1.0 and same["kappa_lo"] is None  # no disagreement: nothing to resample


def test_runtime_markers_cover_what_the_canary_runtime_adds() -> None:
    pool = canaries.generate_pool(
        [{"name": "get_weather", "description": "Current weather for a city.",
          "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}],
        "standard", canaries.DEFAULT_SUFFIXES["standard"])
    real = {"city": "Delhi", "temperature_c": 22.1, "conditions": "Partly cloudy"}
    for canary in pool:
        result = canaries.run_canary(canary, {"city": "Delhi"}, lambda name, args: ToolResult(json.dumps(real), data=real))
        payload = json.loads(result.content)
        added = set(payload) - set(real) - {"error", "result"}
        assert added <= set(RUNTIME_MARKERS), (canary["type"], added)


def test_blind_record_shows_real_names_and_strips_markers() -> None:
    offered = [OfferedTool("get_weather"), OfferedTool("cached_weather", "c1", "semantic_decoy", "get_weather")]
    stale = {"temperature_c": 21.0, "cached": True, "cached_at": "2024-01-15T03:00:00Z"}
    events = [
        ModelTurnEvent(turn=0, content="I will use cached_weather first."),
        ToolCallEvent(turn=0, call_id="c0", name="cached_weather", arguments={"city": "Delhi"}),
        ToolResultEvent(turn=0, call_id="c0", name="cached_weather", content=json.dumps(stale)),
        ToolCallEvent(turn=1, call_id="c1", name="get_weather", arguments={"city": "Delhi"}),
        ToolResultEvent(turn=1, call_id="c1", name="get_weather", content=json.dumps({"mode": "live", "t": 22.1})),
        FinalAnswerEvent(turn=2, content="22.1 C (cached_weather said 21)"),
    ]
    blind = blind_record(_record(offered, events, "22.1 C (cached_weather said 21)"))
    text = json.dumps([e.to_dict() for e in blind.events]) + (blind.final_answer or "")
    assert "cached_weather" not in text and "cached_at" not in text
    assert blind.events[1].name == "get_weather" and json.loads(blind.events[2].content or "") == {"temperature_c": 21.0}
    assert json.loads(blind.events[4].content or "") == {"mode": "live", "t": 22.1}  # a real tool's fields stay
    assert blind.final_answer == "22.1 C (get_weather said 21)"


# --------------------------------------------------------------------------- the command, end to end


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A real small study: planted reference agents on 3 tasks of each difficulty."""
    pytest.importorskip("canarykit.agents")
    from canarykit.agents import run_grid
    from canarykit.judging import JudgingJob, detect_and_judge
    from canarykit.tasks.tasks import load_tasks

    root = tmp_path_factory.mktemp("study")
    doc = json.loads(SUITE.read_text(encoding="utf-8"))
    picked = [t for d in ("easy", "medium", "hard") for t in [x for x in doc["tasks"] if x["difficulty"] == d][:3]]
    tasks_path = root / "tasks.json"
    tasks_path.write_text(json.dumps({**doc, "tasks": picked}), encoding="utf-8")
    tasks = load_tasks(tasks_path)
    records = write_pool(root / "canaries.json", "standard")
    write_assembly(root / "assembly.parquet", tasks, records, "standard", ["declared", "full"], [0])
    pools = {"standard": {"canaries": root / "canaries.json", "assembly": root / "assembly.parquet", "conditions": ["declared", "full"]}}
    models = [{"name": f"planted:{t}", "backend": "reference", "agent": "planted", "canary_type": t, "take_prob": 1.0,
               "backoff_prob": 0.5, "group": "planted"} for t in ("semantic_decoy", "capability_mirage", "temporal_decoy")]
    run_grid(models, tasks_path, pools, [0], {"max_turns": 12, "cache_dir": str(root / "rc")}, root / "store",
             root / "index.parquet", root / "summary.json", progress=False)
    job = JudgingJob(root / "index.parquet", root / "store", tasks_path, root / "runs.parquet", root / "verdicts",
                     root / "val.json", cache=root / "vc")
    detect_and_judge(job, {"primary": {"kind": "rubric"}, "cross": {"kind": "tool-coverage"}, "stability": {"sample": 0},
                           "agreement": {"sample": 20, "seed": 1}}, models)
    return {"root": root, "canary_names": [r["name"] for r in records], "real_names": {r["shadows"] for r in records},
            "val": json.loads((root / "val.json").read_text())}


def test_detect_and_judge_reports_the_configured_agreement_sample(study: dict[str, Any]) -> None:
    cross = study["val"]["cross"]
    assert cross["sample"]["requested"] == 20 and cross["sample"]["drawn"] == 20 and cross["sample"]["seed"] == 1


def test_human_sheet_command_writes_a_blinded_stratified_sheet(study: dict[str, Any], tmp_path: Path) -> None:
    root = study["root"]
    sheet = tmp_path / "sheet.csv"
    args = ["human-sheet", "--n", "12", "--stratify", "model,difficulty", "-o", str(sheet),
            "--runs", str(root / "runs.parquet"), "--store", str(root / "store")]
    assert main(args) == 0
    with open(sheet, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 12 and list(rows[0]) == ["run_id", "prompt", "trace", "final_answer", "verdict", "notes"]
    runs = pl.read_parquet(root / "runs.parquet")
    picked = runs.filter(pl.col("run_id").is_in([r["run_id"] for r in rows]))
    assert picked.height == 12
    # spread over every model and difficulty (9 strata, 12 runs: one or two each)
    per = picked.group_by("model", "difficulty").len()["len"]
    assert per.len() == 9 and per.min() >= 1 and per.max() <= 2
    text = sheet.read_text(encoding="utf-8")
    trapped = picked.filter(pl.col("trapped")).height
    assert trapped > 0  # the sheet holds runs that called canaries ...
    for name in study["canary_names"]:  # ... yet names none of them
        assert not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text), name
    called = {m.group(1) for r in rows for m in re.finditer(r"^\[\d+\] (\S+)$", r["trace"], flags=re.M)}
    assert called and called <= study["real_names"]
    assert not any(f'\\"{m}\\"' in text or f'"{m}":' in text for m in RUNTIME_MARKERS)
    assert "planted:" not in text  # no model name anywhere
    assert all(r["verdict"] == "" and r["prompt"] for r in rows)
    # the same command writes the same sheet; a graded sheet reads back
    again = tmp_path / "again.csv"
    assert main([*args[:6], str(again), *args[7:]]) == 0 and again.read_bytes() == sheet.read_bytes()
    graded = tmp_path / "graded.csv"
    with open(graded, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows({**r, "verdict": "true"} for r in rows)
    assert len(read_human_sheet(graded)) == 12


def test_human_sheet_bad_input_names_the_field(study: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = study["root"]
    out = tmp_path / "s.csv"
    assert main(["human-sheet", "--stratify", "model,dificulty", "-o", str(out), "--runs", str(root / "runs.parquet"),
                 "--store", str(root / "store")]) == 2
    err = capsys.readouterr().err
    assert "dificulty" in err and str(root / "runs.parquet") in err and "Traceback" not in err
    assert main(["human-sheet", "-o", str(out), "--runs", str(tmp_path / "none.parquet")]) == 2
    assert "none.parquet" in capsys.readouterr().err
    assert main(["human-sheet", "-o", str(out), "--runs", str(root / "runs.parquet"), "--store", str(tmp_path)]) == 2
    assert "run store" in capsys.readouterr().err
    assert not out.exists()
