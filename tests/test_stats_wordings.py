"""Wordings as data (issue 27): the runs table's ``wording_<T>`` from the pools, the wording
factor of the statistics, and what ``stats.json`` says about the wordings a study drew."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from fakes.records import call_events

from canarykit import stats
from canarykit.detection.detect import detect
from canarykit.detection.runs_table import RUNS_COLUMNS, assemble_runs_table, pool_wordings
from canarykit.stats._simstudy import crossed_runs
from canarykit.stats._simulate import CrossedDesign
from canarykit.store.records import OfferedTool, RunRecord
from canarykit.types import CANARY_TYPES

SD = "semantic_decoy"


def _record(run_id: str, canary_id: str, *, twin: bool = False) -> RunRecord:
    stand_in = (OfferedTool("cached_weather", control_id=f"control:{canary_id}", control_type=SD, shadows="get_weather")
                if twin else OfferedTool("cached_weather", canary_id, SD, "get_weather"))
    return RunRecord(run_id=run_id, identity={}, model="m1", group="g", backend="reference",
                     condition="control" if twin else "declared", pool="standard", seed=0, task_id=run_id,
                     difficulty="easy", offered=[OfferedTool("get_weather"), stand_in], correct_tools=["get_weather"],
                     events=call_events([("cached_weather", "ok")]), final_answer="x", status="completed", error=False,
                     arm=SD if twin else "")


def _pool(path: Path, records: list[dict], **top: object) -> Path:
    path.write_text(json.dumps({"format": "canarykit-pool", "pool": "standard", "canaries": records, **top}),
                    encoding="utf-8")
    return path


def test_the_runs_table_names_each_runs_wording_from_the_pool_or_its_variant(tmp_path: Path) -> None:
    pool = _pool(tmp_path / "standard.json", [
        {"id": f"{SD}:get_weather", "type": SD, "variant": 1, "wording": f"{SD}/07"},
        {"id": f"{SD}:get_weather@v2", "type": SD, "variant": 2},  # a record without a wording
        {"id": f"control:{SD}:get_weather", "type": SD, "control_of": f"{SD}:get_weather", "wording": f"{SD}/07"},
    ])
    wordings = pool_wordings([pool])
    assert wordings == {f"{SD}:get_weather": f"{SD}/07", f"{SD}:get_weather@v2": f"{SD}/v2"}
    records = [_record("r1", f"{SD}:get_weather"), _record("r2", f"{SD}:get_weather@v2"),
               _record("r3", f"{SD}:get_weather", twin=True), _record("r4", f"{SD}:get_weather@v3")]
    index = pl.DataFrame({"model": "m1", "group": "g", "backend": "reference", "condition": [r.condition for r in records],
                          "pool": "standard", "seed": 0, "task_id": [r.task_id for r in records], "difficulty": "easy",
                          "run_id": [r.run_id for r in records], "error": False, "arm": [r.arm for r in records]})
    verdicts = pl.DataFrame({"run_id": [r.run_id for r in records], "success": True, "status": "ok"})
    df = assemble_runs_table(index, records, verdicts, metrics=detect(records)[1], wordings=wordings)
    assert tuple(df.columns) == RUNS_COLUMNS and df.schema[f"wording_{SD}"] == pl.String
    got = dict(zip(df["run_id"], df[f"wording_{SD}"], strict=True))
    # the pool's id where it names one (a twin carries its canary's), else <type>/v<variant> from the id
    assert got == {"r1": f"{SD}/07", "r2": f"{SD}/v2", "r3": f"{SD}/07", "r4": f"{SD}/v3"}
    assert df["wording_temporal_decoy"].null_count() == df.height
    # a table written before the column: the statistics derive it from item_<T>
    old = stats.validate_runs(df.drop([f"wording_{t}" for t in CANARY_TYPES]))
    assert dict(zip(old["run_id"], old[f"wording_{SD}"], strict=True)) == {
        "r1": f"{SD}/v1", "r2": f"{SD}/v2", "r3": f"{SD}/v1", "r4": f"{SD}/v3"}


def test_one_wording_across_many_tools_is_one_level_of_the_factor() -> None:
    """A wording shared by every tool is one cluster of the wording factor: the estimate's
    variance counts three wordings, not tools x wordings items, and the tool factor counts
    the real tools (the type prefix and the variant dropped)."""
    rng = np.random.default_rng(1)
    tasks = np.repeat([f"t{i:02d}" for i in range(24)], 3)
    tool = np.repeat(np.arange(24) // 3, 3)
    word = (np.tile(np.arange(3), 24) + np.repeat(np.arange(24), 3)) % 3
    items = np.array([f"{SD}:tool{o}@v{w + 1}" for o, w in zip(tool, word, strict=True)])
    y = (rng.random(tasks.size) < 0.3).astype(float)
    boot = stats.make_resampler("task_x_item", np.unique(tasks), 10, 1)
    lin = boot.draws(None, [stats.Sample(y, tasks, None, items)])
    assert (lin.items()[0], lin.tools()[0], lin.wordings()[0]) == (24, 8, 3)
    named = boot.draws(None, [stats.Sample(y, tasks, None, items, np.array([f"{SD}/{w + 4:02d}" for w in word]))])
    assert named.se()[0] == pytest.approx(lin.se()[0]) and named.wordings()[0] == 3


def test_stats_json_reports_the_wordings_offered_drawn_and_their_seed(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    designs = {t: CrossedDesign(tasks=12, canary_type=t) for t in CANARY_TYPES}
    df = crossed_runs(designs, rng, tasks=30)
    pool = _pool(tmp_path / "standard.json", [], wording_seed=1234, wordings={SD: [f"{SD}/03", f"{SD}/07", f"{SD}/11"]})
    r = stats.compute_all(df, stats.StatsConfig(resamples=100), pools=[str(pool)])
    meta = r["meta"]
    offered = sorted(df.filter(pl.col(f"wording_{SD}").is_not_null())[f"wording_{SD}"].unique().to_list())
    assert meta["wordings"][SD] == {"offered": offered, "k": 3, "drawn": [f"{SD}/03", f"{SD}/07", f"{SD}/11"]}
    assert meta["wordings"]["temporal_decoy"]["drawn"] is None and meta["wording_seed"] == 1234
    e = r["control_effect"]["m1"][SD]
    assert e["wordings"] == 3 and e["few_wordings"] is True and e["tools"] == 4
    assert meta["few_wordings_threshold"] == stats.FEW_WORDINGS and meta["few_wordings_rows"] > 0
    assert "fewer than 8 wordings (3 a type" in meta["few_wordings_note"]
    assert any("few_wordings" in line for line in stats.console_notes(r))
    # without pools the offered wordings are still reported, the seed is not known
    bare = stats.compute_all(df, stats.StatsConfig(resamples=100))["meta"]
    assert bare["wordings"][SD]["offered"] == offered and bare["wording_seed"] is None


def test_the_stats_command_reads_the_pools(tmp_path: Path) -> None:
    df = crossed_runs({SD: CrossedDesign(tasks=10)}, np.random.default_rng(2), tasks=20)
    runs = tmp_path / "runs.parquet"
    df.write_parquet(runs)
    pool = _pool(tmp_path / "standard.json", [], wording_seed=77, wordings={SD: ["a", "b", "c"]})
    out = subprocess.run([sys.executable, "-m", "canarykit", "stats", str(runs), "-o", str(tmp_path / "out"),
                          "--resamples", "100", "--pools", str(pool)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    meta = json.loads((tmp_path / "out" / "stats.json").read_text())["meta"]
    assert meta["wording_seed"] == 77 and meta["wordings"][SD]["drawn"] == ["a", "b", "c"]
