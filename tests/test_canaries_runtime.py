"""Canaries with bite on any tool (issue 12): fitted canaries degrade text, dates, lists and
objects too, so a decoy on a time server or a file reader costs something; writes never
happen; results respect the real tool's output schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from canarykit import tools
from canarykit.canaries import DEFAULT_SUFFIXES, build_pool, run_canary, suite_from_tasks
from canarykit.tasks import tasks as task_mod
from canarykit.types import ToolResult

ROOT = Path(__file__).resolve().parents[1]
OFFICIAL = json.loads((Path(__file__).parent / "fixtures" / "mcp_servers" / "official.json").read_text())
MARKERS = {"cached", "cache_age_hours", "cached_at", "mode", "engine", "snapshot", "data_version"}


def canaries_of(server: str, fit: str = "fitted", *, read_only: bool = False) -> dict[str, dict[str, Any]]:
    """The server's canaries; ``read_only``: of its read tools alone (a read-only deployment, so
    its closed world is no local state that the server writes: its decoys are offered)."""
    listed = [t for t in OFFICIAL if t["server"] == server
              and (not read_only or (t.get("annotations") or {}).get("readOnlyHint") is True)]
    return {c["id"]: c for c in build_pool(listed, "standard", DEFAULT_SUFFIXES["standard"], fit=fit).canaries}


class Recorder:
    """A fake upstream server: canned results like the real servers', every call recorded."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def __call__(self, name: str, args: Any) -> ToolResult:
        self.calls.append((name, args))
        if name == "get_current_time":
            data = {"timezone": args["timezone"], "datetime": "2026-12-01T14:37:12+01:00", "day_of_week": "Tuesday", "is_dst": False}
            return ToolResult(json.dumps(data), data=data)
        if name == "fetch":
            return ToolResult("Contents of https://example.org/:\nRelease notes, published 2026-11-30.\n"
                              "The new API allows 120 requests per minute.\nOld clients keep working.")
        if name == "read_text_file":
            return ToolResult("x", data={"content": "first line of the notes\nsecond line of the notes"})
        if name == "search_nodes":
            data = {"entities": [{"name": "Ada", "entityType": "person", "observations": ["likes tea"]},
                                 {"name": "Bob", "entityType": "person", "observations": ["new hire"]}],
                    "relations": []}
            return ToolResult(json.dumps(data), data=data)
        if name in ("write_file", "create_or_update_file", "git_commit"):
            raise AssertionError(f"a canary wrote through {name}")
        return ToolResult(json.dumps({"error": "unknown"}), is_error=True, data={"error": "unknown"})


def content(result: ToolResult) -> Any:
    data = result.data if result.data is not None else result.content
    return {k: v for k, v in data.items() if k not in MARKERS} if isinstance(data, dict) else data


def test_time_server_canaries_cost_something() -> None:
    """The paper's decoys only moved numbers: on a time server they returned the real time."""
    ex = Recorder()
    args = {"timezone": "Europe/Paris"}
    real = ex("get_current_time", args).data
    paper = canaries_of("time", "paper")
    assert content(run_canary(paper["semantic_decoy:get_current_time"], args, ex)) == real, "no bite (paper)"
    fitted = canaries_of("time")
    stale = run_canary(fitted["semantic_decoy:get_current_time"], args, ex).data
    assert stale["datetime"] < real["datetime"] and stale["datetime"][:4] == "2026", "a cached time, hours old"
    assert stale["cached"] is True and 20 <= stale["cache_age_hours"] <= 72
    snap = run_canary(fitted["temporal_decoy:get_current_time"], args, ex).data
    assert snap["datetime"].startswith("2023-12-01T14:37:12") and snap["snapshot"] == "2023-03-31"
    approx = run_canary(fitted["capability_mirage:get_current_time"], args, ex).data
    assert approx["datetime"] == "2026-12-01T14:00:00+01:00" and approx["mode"] == "approximate"
    assert run_canary(fitted["semantic_decoy:get_current_time"], args, ex) == run_canary(
        fitted["semantic_decoy:get_current_time"], args, ex), "deterministic"


def test_text_results_stay_text_and_are_degraded() -> None:
    ex = Recorder()
    real = ex("fetch", {"url": "https://example.org/"}).content
    fitted = canaries_of("fetch")
    stale = run_canary(fitted["semantic_decoy:fetch"], {"url": "https://example.org/"}, ex)
    assert stale.data is None and "published 2026-11-2" in stale.content and "120 requests" not in stale.content
    assert stale.content.endswith("hours old)") and "cached copy" in stale.content
    approx = run_canary(fitted["capability_mirage:fetch"], {"url": "https://example.org/"}, ex)
    assert approx.content != real and "100 requests" in approx.content
    snap = run_canary(fitted["temporal_decoy:fetch"], {"url": "https://example.org/"}, ex)
    assert "2023-11-30" in snap.content and "2026" not in snap.content


def test_structured_results_respect_the_output_schema() -> None:
    """Filesystem and memory servers declare additionalProperties: false: no extra markers.
    (Their decoys exist only where the server writes nothing: see the local-state fit rule.)"""
    ex = Recorder()
    assert "semantic_decoy:read_text_file" not in canaries_of("filesystem"), "local state: no staleness claim"
    files = canaries_of("filesystem", read_only=True)
    stale = run_canary(files["semantic_decoy:read_text_file"], {"path": "notes.txt"}, ex)
    assert stale.data == {"content": "first line of the notes"}, "the newest line is missing; no marker fields"
    memory = canaries_of("memory", read_only=True)
    snap = run_canary(memory["temporal_decoy:search_nodes"], {"query": "person"}, ex)
    assert [e["name"] for e in snap.data["entities"]] == ["Ada"], "a 2023 graph lacks the new entity"
    assert set(snap.data) == {"entities", "relations"}


def test_write_tools_mirage_previews_and_never_writes() -> None:
    ex = Recorder()
    files = canaries_of("filesystem")
    assert "capability_mirage:write_file" not in files, "destructive: no capability claim"
    mirage = files["capability_mirage:create_directory"]
    assert mirage["behaviour"]["kind"] == "preview" and "outputSchema" not in mirage, "a preview cannot conform"
    ok = run_canary(mirage, {"path": "a"}, ex)
    assert not ok.is_error and '"applied": false' in ok.content and ok.data["applied"] is False
    bad = run_canary(mirage, {"path": 3}, ex)
    assert bad.is_error and "not of type" in bad.content
    assert ex.calls == [], "no call reached the real server"
    for cid in ("parameter_trap:write_file", "prerequisite_blindness:write_file"):
        assert run_canary(files[cid], {"path": "a", "content": "b"}, ex).is_error
    assert ex.calls == []


def test_our_decoys_fail_the_rubric_where_the_real_tool_passes() -> None:
    """On single-step tasks, a fitted decoy's or mirage's answer fails the task's rubric."""
    tasks = task_mod.load_tasks(ROOT / "data" / "tasks.json")
    pool = build_pool(tools.mcp_definitions(), "standard", DEFAULT_SUFFIXES["standard"], fit="fitted",
                      special_cases={"get_forecast": {"city": "Mumbai", "days": 3}},
                      suite=suite_from_tasks(tasks, "tasks", tools.execute))
    index = {(c["shadows"], c["type"]): c for c in pool.canaries}
    caught = total = 0
    for task in tasks:
        if len(task.plan) != 1:
            continue
        step = task.plan[0]
        real = tools.execute(step.tool, step.args)
        for ctype in ("semantic_decoy", "capability_mirage", "temporal_decoy"):
            c = index.get((step.tool, ctype))
            if c is None:
                continue
            result = run_canary(c, dict(step.args), tools.execute)
            assert content(result) != content(real), (task.id, ctype)
            total += 1
            passed_real = task_mod.check_rubric(task, task_mod.compose_answer([(step.tool, step.args, real)])).passed
            passed_canary = task_mod.check_rubric(task, task_mod.compose_answer([(c["name"], step.args, result)])).passed
            caught += passed_real and not passed_canary
    assert total == 98 and caught / total >= 0.9, (caught, total)


@pytest.mark.parametrize("ctype", ["semantic_decoy", "capability_mirage", "temporal_decoy"])
def test_real_errors_pass_through(ctype: str) -> None:
    ex = Recorder()
    canary = canaries_of("time")[f"{ctype}:get_current_time"]
    result = run_canary({**canary, "shadows": "unknown_tool"}, {"timezone": "X"}, ex)
    assert result.is_error and "unknown" in result.content
