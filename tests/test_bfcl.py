"""BFCL's executable multi-turn benchmark as a study environment (issue 30, items 3-4): its
entries as tasks and its classes as tools, a fresh world per run, a canary that never changes
the world, BFCL's own checker as the judge (the oracle passes it), and the bfcl profile run
offline from the workflow with the reference agents' known answers recovered. Installs
bfcl-eval the way a user does (`make install-bfcl`)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml
from fakes.bfcl import install_bfcl
from fakes.readme import command, sh

pytestmark = pytest.mark.slow  # installs bfcl-eval; the profile test runs the whole workflow

CATEGORIES = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")


@pytest.fixture(scope="module", autouse=True)
def _bfcl() -> None:
    install_bfcl(command("make install-bfcl").text)  # as the page prints it


def _run(task: Any, tools: list[dict[str, Any]], model: dict[str, Any], *, max_turns: int = 40,
         stand_ins: list[dict[str, Any]] = ()) -> Any:  # type: ignore[assignment]
    """One run of ``task`` through the loop in a fresh BFCL world (its tools, plus ``stand_ins``)."""
    from canarykit.agents.loop import RunSpec, build_toolset, run_one
    from canarykit.agents.protocol import make_backend
    from canarykit.assembly.assembly import stand_in, tool_list_hash
    from canarykit.bfcl.environment import make_environment
    from canarykit.store.records import OfferedTool

    by = {t["name"]: t for t in tools}
    defs = [{"name": n, "description": by[n]["description"], "inputSchema": by[n]["inputSchema"]} for n in task.tools]
    offered = [OfferedTool(d["name"]) for d in defs]
    for record in stand_ins:
        d, o = stand_in(record, twin="control_of" in record)
        defs.append(d)
        offered.append(o)
    ts = build_toolset(defs, offered, tool_list_hash(defs), {r["id"]: r for r in stand_ins})
    env = make_environment({"kind": "bfcl"}, {"tools": tools})
    spec = RunSpec(model, task, "declared", "standard", 0, ts, max_turns=max_turns, environment=env.identity)
    return asyncio.run(run_one(spec, make_backend(model, {}), env=env))


ORACLE = {"name": "oracle", "backend": "reference", "agent": "oracle"}


def _suite(category: str) -> tuple[Any, list[Any]]:
    from canarykit.bfcl.entries import task_suite
    from canarykit.tasks.tasks import parse_tasks

    suite = task_suite([category])
    return suite, parse_tasks(suite.document, category, suite.tools)


def test_the_profile_validates_and_an_unknown_category_is_named() -> None:
    from canarykit import cli

    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "-m", "canarykit", "validate-config", "params.yaml", "--configfile",
                           "src/canarykit/resources/profiles/bfcl.yaml"], cwd=root, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "valid. 12 agents, 199 tasks" in proc.stdout, proc.stderr
    assert cli.main(["validate-config", "--configfile", str(_write(root, {"environment": {"kind": "bfcl",
                                                                         "categories": ["multi_turn_bass"]}}))]) == 2


def _write(root: Path, cfg: dict[str, Any]) -> Path:
    import tempfile

    path = Path(tempfile.mkdtemp()) / "profile.yaml"
    path.write_text(yaml.safe_dump({**cfg, "judge": {"primary": {"kind": "bfcl"}}}))
    return path


def test_every_category_is_tasks_the_oracle_passes_bfcls_checker_on() -> None:
    from canarykit.judging import judge_input, make_judge

    judge = make_judge({"kind": "bfcl"})
    for category in CATEGORIES:
        suite, tasks = _suite(category)
        assert suite.entries == 200 and len(tasks) + len(suite.skipped) == 200
        assert all(s.reason for s in suite.skipped) and len(suite.skipped) <= 2, suite.skipped
        failed = []
        # every multi_turn_base entry (the bar: 95%); a sample of the other categories
        for task in tasks if category == "multi_turn_base" else tasks[::25]:
            record = _run(task, suite.tools, ORACLE)
            assert record.status == "completed" and len(task.user_turns) > 0
            assert sum(e.kind == "final_answer" for e in record.events) == len(task.user_turns)
            verdict = judge.judge(judge_input(record, task))
            if verdict.success is not True:
                failed.append((task.id, verdict.reason))
        assert not failed, failed  # bfcl-eval 2026.3.23: the oracle passes every entry it runs
    base, _ = _suite("multi_turn_base")
    assert [s.id for s in base.skipped] == ["multi_turn_base_173"] and "is not of type 'integer'" in base.skipped[0].reason


def test_a_held_back_function_waits_for_the_turn_bfcl_adds_it() -> None:
    suite, tasks = _suite("multi_turn_miss_func")
    task = next(t for t in tasks if t.tools_from)
    (name, turn), = task.tools_from[:1]
    assert task.user_turns[turn] == "I have updated some more functions you can choose from. What about now?"
    record = _run(task, suite.tools, ORACLE)
    calls = [e for e in record.events if e.kind == "tool_call"]
    answered_before = [sum(1 for f in record.events[:record.events.index(c)] if f.kind == "final_answer") for c in calls]
    assert all(n >= turn for c, n in zip(calls, answered_before, strict=True) if c.name == name)


def test_a_canary_never_changes_the_world_a_twin_does_and_the_checker_sees_the_difference() -> None:
    from canarykit import canaries
    from canarykit.judging import judge_input, make_judge

    suite, tasks = _suite("multi_turn_base")
    tools = suite.annotated_tools()
    assert {t["name"]: t["annotations"]["readOnlyHint"] for t in tools if t["name"] in ("cd", "mkdir", "ls", "cat")} == {
        "cd": False, "mkdir": False, "ls": True, "cat": True}, "measured: cd moves the working directory"
    pool = canaries.build_pool([t for t in tools if t["server"] == "GorillaFileSystem"], "standard",
                               dict(canaries.DEFAULT_SUFFIXES["standard"]), controls=True)
    mirage = next(c for c in pool.canaries if c["shadows"] == "mkdir" and c["type"] == "capability_mirage")
    twin = next(c for c in pool.controls if c["control_of"] == mirage["id"])
    # a task whose other functions have no look-alike among its real tools (mv reads like cp):
    # a careful agent then takes the twin and nothing else
    task = next(t for t in tasks if "mkdir" in t.correct_tools and not _real_lookalikes(t, suite.tools))
    judge = make_judge({"kind": "bfcl"})
    taker = {"name": "claims", "backend": "reference", "agent": "claims", "take_prob": 1.0, "backoff_prob": 0.0}
    record = _run(task, suite.tools, taker, stand_ins=[mirage])
    took = [e for e in record.events if e.kind == "tool_result" and e.name == mirage["name"]]
    assert took and all(e.executed == [] for e in took), "a canary runs nothing in the world"
    assert "no change was applied" in took[0].content.lower()
    verdict = judge.judge(judge_input(record, task))
    assert verdict.success is False and "state" in verdict.reason  # the directory was never made
    careful = {"name": "careful", "backend": "reference", "agent": "careful", "take_prob": 1.0, "backoff_prob": 0.0}
    record = _run(task, suite.tools, careful, stand_ins=[twin])
    ran = [e.executed for e in record.events if e.kind == "tool_result" and e.name == twin["name"]]
    assert ran and ran[0][0]["name"] == "mkdir", "a twin works like its real tool, in the world"
    assert judge.judge(judge_input(record, task)).success is True


def _real_lookalikes(task: Any, tools: list[dict[str, Any]]) -> list[str]:
    from canarykit.agents.reference_text import ToolText, lookalike_indices

    offered = [t for t in tools if t["name"] in task.tools]
    texts = [ToolText.of(t) for t in offered]
    return [t["name"] for t in offered if t["name"] in task.correct_tools and lookalike_indices(ToolText.of(t), texts)]


def test_a_run_cut_off_before_its_last_user_turn_fails_as_in_bfcl() -> None:
    from canarykit.judging import judge_input, make_judge

    suite, tasks = _suite("multi_turn_base")
    task = next(t for t in tasks if len(t.user_turns) >= 3 and max(sum(1 for s in t.plan if s.turn == k)
                                                                   for k in range(len(t.user_turns))) >= 2)
    record = _run(task, suite.tools, ORACLE, max_turns=2)
    assert record.status == "truncated"
    verdict = make_judge({"kind": "bfcl"}).judge(judge_input(record, task))
    assert verdict.success is False and verdict.reason.startswith("multi_turn:force_terminated")


def test_the_bfcl_profile_runs_offline_and_recovers_the_known_answers(tmp_path: Path) -> None:
    """The profile through the workflow, overlaid like any profile (tasks, seeds, conditions,
    models): BFCL's checker judges, the oracle passes it, the report names the categories and
    the skipped entry, and each planted answer a type's clusters can decide is recovered."""
    from fakes.workflow import copy_workflow

    from canarykit.agents.known import known_diagnoses

    repo = copy_workflow(tmp_path / "repo")
    # Reference agents draw independently for a list and its twin list: on 20 tasks and one seed
    # the equivalence test behind `blind` has power only for near-certain picks, so both agents
    # take what they accept at params.yaml's planted rate (0.995).
    models = [{"name": "oracle", "backend": "reference", "agent": "oracle", "group": "reference"},
              {"name": "planted:capability_mirage", "backend": "reference", "agent": "planted", "group": "planted",
               "canary_type": "capability_mirage", "take_prob": 0.995, "backoff_prob": 0.5},
              {"name": "careful", "backend": "reference", "agent": "careful", "group": "reference", "take_prob": 0.995,
               "backoff_prob": 0.5}]
    (repo / "overlay.yaml").write_text(yaml.safe_dump({
        "study": {"limit_tasks": 20, "seeds": [0], "conditions": ["baseline", "declared", "control"]}, "models": models,
        "stats": {"bootstrap_resamples": 300}, "figures": {"formats": ["svg"]}}))
    # the page's command, with the overlay as a second --configfile
    printed = command("snakemake --cores 2 results/bfcl/report.html --configfile src/canarykit/resources/profiles/bfcl.yaml")
    sh(repo, f"{printed.text} overlay.yaml", timeout=3000)
    out = repo / "results/bfcl"
    tools = json.loads((out / "tools.json").read_text())
    assert tools["environment"] == "bfcl" and tools["bfcl"]["categories"] == ["multi_turn_base"]
    assert all("readOnlyHint" in t["annotations"] for t in tools["tools"])
    runs = pl.read_parquet(out / "runs.parquet")
    assert runs["task_id"].n_unique() == 20 and set(runs["condition"]) == {"baseline", "declared", "control"}
    assert set(runs["model"]) == {m["name"] for m in models}
    check = json.loads((out / "judge/validation.json").read_text())["oracle_check"]
    assert check["judge"] == "bfcl" and check["ok"] and check["runs"] > 20
    assert runs.filter(pl.col("model") == "oracle")["success"].all()
    report = (out / "report.html").read_text()
    assert "BFCL multi-turn (bfcl-eval" in report and "1 skipped (multi_turn_base_173" in report
    assert "oracle runs pass the task checker (BFCL)" in report
    controls = pl.read_csv(out / "table_controls.csv")
    configs = {m["name"]: m for m in yaml.safe_load((out / "params.resolved.yaml").read_text())["models"]}
    for row in controls.iter_rows(named=True):
        expected = (known_diagnoses(configs[row["model"]]) or {}).get(row["type"])
        if expected is None or row["diagnosis"] in ("inconclusive", "n/a"):
            continue
        assert row["diagnosis"] == expected, row
    words = {(r["model"], r["type"]): r["diagnosis"] for r in controls.iter_rows(named=True)}
    # the types every BFCL function offers (decoys fit only read tools of open worlds; no
    # granularity case here): at least five of the six answers decided (20 tasks: a planted
    # agent's twin is its first pick only where no mirage of the same tool comes first, so a
    # `sensitive` may stay inconclusive at Holm's level), every decided one right (above)
    core = [(a, t) for a in ("planted:capability_mirage", "careful")
            for t in ("parameter_trap", "capability_mirage", "prerequisite_blindness")]
    shown = [k for k in core if words[k] == (known_diagnoses(configs[k[0]]) or {})[k[1]]]
    assert len(shown) >= 5 and words[("planted:capability_mirage", "capability_mirage")] == "blind", words
