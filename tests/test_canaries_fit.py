"""Canaries that fit their tools (issue 11): fit rules, granularity cases, the task suite,
the subtle pool's wording, and ``fit: paper`` reproducing the paper's pools exactly."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from fakes.cues import TYPE_CUE, cues

from canarykit import tools
from canarykit.canaries import (
    DEFAULT_SUFFIXES,
    PAPER_MIRAGE_CLAIM,
    PAPER_SUFFIXES,
    RECORD_KEYS,
    SuiteTask,
    TaskSuite,
    build_pool,
    candidate_cases,
    generate_command,
    is_placeholder,
    load_pool_document,
    profile_tool,
    read_task_suite,
    skipped_counts,
    suite_from_tasks,
)
from canarykit.errors import InputError
from canarykit.tasks.tasks import load_tasks
from canarykit.types import CANARY_TYPES

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures"
OFFICIAL = json.loads((FIXTURES / "mcp_servers" / "official.json").read_text())
TASKS = ROOT / "data" / "tasks.json"
PARAMS = yaml.safe_load((ROOT / "params.yaml").read_text())["canaries"]
PAPER_CASES = {"get_forecast": {"city": "Mumbai", "days": 3}, "read_file": {"path": "config/settings.json"}}


def suite() -> Any:
    return suite_from_tasks(load_tasks(TASKS), str(TASKS), tools.execute)


def fitted(pool: str = "standard", **kw: Any) -> Any:
    return build_pool(
        tools.mcp_definitions(), pool, DEFAULT_SUFFIXES[pool], fit="fitted", controls=True,
        special_cases=PARAMS["special_cases"], suite=suite(), **kw,
    )


# --- fit: paper reproduces the paper -----------------------------------------------------


@pytest.mark.parametrize("pool", ["standard", "subtle"])
def test_paper_fit_reproduces_todays_72_canaries_exactly(pool: str) -> None:
    """The fixture is the pool this generator wrote before fit modes existed (commit 45d75cc)."""
    old = json.loads((FIXTURES / f"paper_pool_{pool}.json").read_text())
    new = build_pool(tools.mcp_definitions(), pool, PAPER_SUFFIXES[pool], fit="paper",
                     special_cases=PAPER_CASES, suite=suite())
    keys = [k for k in RECORD_KEYS if k != "provenance"]
    assert [{k: r[k] for k in keys} for r in new.canaries] == [{k: r[k] for k in keys} for r in old]
    assert [r["provenance"]["transform"] for r in new.canaries] == [r["provenance"]["transform"] for r in old]
    assert not [s for s in new.skipped if not s.task], "every type for every tool"
    # every task that names a tool calls it in its plan (with one case or several: a
    # hard-coded case that is not the task's is a trap for each call), so nothing is withheld
    assert not [s for s in new.skipped if s.task]
    # the paper's cases that serve a task are reported (not refused: this is the reproduction)
    served = {c["canary"] for c in new.coincidences}
    assert served == {"granularity_trap:convert_units", "granularity_trap:read_file",
                      "granularity_trap:web_search", "granularity_trap:news_search"}
    assert len({c["task"] for c in new.coincidences if "search" in c["canary"]}) == 8


def test_paper_profile_generates_the_paper_pool(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tools_json = tmp_path / "tools.json"
    tools_json.write_text(json.dumps(tools.mcp_definitions()))
    profile = ROOT / "src/canarykit/resources/profiles/paper.yaml"
    out = tmp_path / "subtle.json"
    assert generate_command(str(tools_json), str(out), pool="subtle", params_path=str(profile), tasks_json=str(TASKS)) == 0
    old = json.loads((FIXTURES / "paper_pool_subtle.json").read_text())
    assert [c["description"] for c in load_pool_document(out)["canaries"]] == [c["description"] for c in old]
    assert "easy-025 (arguments)" in capsys.readouterr().err


# --- fit: fitted -----------------------------------------------------------------------------


#: The README's table: which of our tools get which types.
EXPECTED = {
    "get_weather": set(CANARY_TYPES),
    "get_forecast": set(CANARY_TYPES),
    "get_air_quality": set(CANARY_TYPES),
    "calculate": {"parameter_trap", "capability_mirage", "granularity_trap"},
    "convert_units": {"parameter_trap", "capability_mirage"},
    "compute_statistics": {"parameter_trap", "capability_mirage"},
    "read_file": set(CANARY_TYPES) - {"granularity_trap"},
    "list_files": set(CANARY_TYPES),
    "web_search": set(CANARY_TYPES) - {"granularity_trap"},
    "news_search": set(CANARY_TYPES) - {"granularity_trap"},
    "query_database": set(CANARY_TYPES) - {"granularity_trap"},
    "describe_table": set(CANARY_TYPES),
}


def test_fitted_pool_of_our_tools_matches_the_fit_table() -> None:
    pool = fitted()
    got: dict[str, set[str]] = {}
    for c in pool.canaries:
        got.setdefault(c["shadows"], set()).add(c["type"])
    assert got == EXPECTED
    assert len(pool.canaries) == 57 and len([s for s in pool.skipped if not s.task]) == 15 and not pool.warnings
    assert skipped_counts(pool.skipped) == {"semantic_decoy": 3, "prerequisite_blindness": 3, "temporal_decoy": 3,
                                            "granularity_trap": 6}
    codes = {(s.tool, s.type): s.code for s in pool.skipped}
    assert codes[("calculate", "semantic_decoy")] == "pure_function"
    assert codes[("read_file", "granularity_trap")] == "case_coincides"
    assert codes[("web_search", "granularity_trap")] == "no_natural_case"
    cases = {c["shadows"]: c["behaviour"]["args"] for c in pool.canaries if c["type"] == "granularity_trap"}
    assert cases["get_forecast"] == {"city": "Mumbai", "days": 3}, "the configured case"
    assert cases["get_weather"] == {"city": "Mumbai"}, "Paris, the schema's first example, is a task's case"
    assert cases["calculate"] == {"expression": "(1250 * 1.18) - 42.5"}, "the description's example"
    assert cases["list_files"] == {"directory": "/"}


def test_no_granularity_case_is_a_placeholder_or_a_tasks_case() -> None:
    pool = fitted()
    plans = [(s.tool, s.args) for t in load_tasks(TASKS) for s in t.plan]
    for c in pool.canaries:
        if c["type"] != "granularity_trap":
            continue
        args = c["behaviour"]["args"]
        assert not any(is_placeholder(v, k) for k, v in args.items()), args
        assert (c["shadows"], args) not in plans
        assert not re.search(r"_(default|2_2|1|hello|notes_txt|quarterly_earnings|select_1)$", c["name"])


def test_a_configured_case_a_task_needs_is_refused_naming_the_task() -> None:
    with pytest.raises(InputError) as exc:
        build_pool(tools.mcp_definitions(), "standard", DEFAULT_SUFFIXES["standard"], fit="fitted",
                   special_cases={"read_file": {"path": "config/settings.json"}}, suite=suite(),
                   special_cases_source="params.yaml", special_cases_field="canaries.special_cases")
    assert exc.value.file == "params.yaml" and exc.value.field == "canaries.special_cases.read_file"
    assert "easy-025" in exc.value.problem
    with pytest.raises(InputError) as exc:  # the paper's search case serves 8 tasks' evidence
        build_pool(tools.mcp_definitions(), "standard", DEFAULT_SUFFIXES["standard"], fit="fitted",
                   special_cases={"news_search": {"query": "quarterly earnings report"}}, suite=suite())
    assert "easy-034" in exc.value.problem and "every fact it needs" in exc.value.problem


def test_the_task_file_check_works_from_the_command_line(tmp_path: Path) -> None:
    tools_json = tmp_path / "tools.json"
    tools_json.write_text(json.dumps(tools.mcp_definitions()))
    params = tmp_path / "params.yaml"
    params.write_text("canaries:\n  special_cases:\n    convert_units: {value: 5, from_unit: mi, to_unit: km}\n")
    with pytest.raises(InputError, match="easy-016"):
        generate_command(str(tools_json), str(tmp_path / "o.json"), params_path=str(params), tasks_json=str(TASKS))
    assert len(read_task_suite(TASKS).tasks) == 120


def test_fit_rules_read_annotations_then_verbs() -> None:
    by_name = {t["name"]: t for t in OFFICIAL if t["server"] != "github-work"}
    assert profile_tool(by_name["git_commit"]).writes and profile_tool(by_name["git_commit"]).basis == "annotations"
    assert not profile_tool(by_name["git_log"]).writes
    assert profile_tool(by_name["git_reset"]).destructive
    assert profile_tool(by_name["create_or_update_file"]).writes and profile_tool(by_name["create_or_update_file"]).basis == "verb"
    assert not profile_tool(by_name["search_repositories"]).writes
    assert profile_tool(by_name["convert_time"]).pure and profile_tool(by_name["get-sum"]).pure
    assert profile_tool(by_name["echo"]).pure
    assert not profile_tool(by_name["get_current_time"]).pure, "the current time can be stale"
    assert not profile_tool(by_name["add_issue_comment"]).pure and profile_tool(by_name["add_issue_comment"]).writes


def _read_tool(name: str, annotations: dict[str, Any] | None) -> dict[str, Any]:
    tool: dict[str, Any] = {
        "name": name, "description": "Get the records of a ledger for one region.",
        "inputSchema": {"type": "object", "properties": {"region": {"type": "string", "enum": ["emea", "apac"]}},
                        "required": ["region"]}}
    if annotations is not None:
        tool["annotations"] = annotations
    return tool


#: (annotations, writes, destructive): a tool that declares any hint is read from its hints,
#: a hint it leaves out taking the MCP default (readOnlyHint false, destructiveHint true,
#: openWorldHint true); a tool that declares none is read from its verb (``get``: a read).
ANNOTATION_CASES = [
    (None, False, False),
    ({"title": "Ledger records"}, False, False),
    ({"destructiveHint": True}, True, True),
    ({"destructiveHint": False}, True, False),
    ({"idempotentHint": True}, True, True),
    ({"openWorldHint": False}, True, True),
    ({"readOnlyHint": False}, True, True),
    ({"readOnlyHint": False, "destructiveHint": False}, True, False),
    ({"readOnlyHint": True}, False, False),
    ({"readOnlyHint": True, "destructiveHint": True}, False, False),  # destructiveHint means nothing for a read
    ({"readOnlyHint": True, "openWorldHint": True, "idempotentHint": True}, False, False),
]


@pytest.mark.parametrize(("annotations", "writes", "destructive"), ANNOTATION_CASES)
def test_annotations_take_the_mcp_defaults(annotations: dict[str, Any] | None, writes: bool, destructive: bool) -> None:
    tool = _read_tool("get_ledger_records", annotations)
    p = profile_tool(tool)
    assert (p.writes, p.destructive) == (writes, destructive), p
    assert p.basis == ("annotations" if annotations and set(annotations) - {"title"} else "verb")
    calls: list[Any] = []

    def execute(name: str, args: Any) -> Any:  # the suite check must never run a tool that may write
        calls.append(name)
        return tools.execute("get_weather", {"city": "Paris"})

    task = SuiteTask("t1", (("get_ledger_records", {"region": "apac"}),))
    pool = build_pool([tool], "standard", DEFAULT_SUFFIXES["standard"], fit="fitted", controls=True,
                      suite=TaskSuite([task], "tasks.json", execute))
    types = {c["type"] for c in pool.canaries}
    stale = {"semantic_decoy", "temporal_decoy", "granularity_trap"}
    if writes:
        assert not types & stale, types
        assert not calls, "a tool that may write is never run by the suite check"
        mirages = [c for c in pool.canaries if c["type"] == "capability_mirage"]
        if destructive:  # no capability claim on a tool that deletes or overwrites
            assert not mirages
            assert next(s.code for s in pool.skipped if s.type == "capability_mirage") == "destructive_tool"
        else:
            assert mirages[0]["behaviour"]["kind"] == "preview"
        assert not any(re.search(r"cached|2023|snapshot", c["description"], re.I) for c in [*pool.canaries, *pool.controls])
        reason = next(s.reason for s in pool.skipped if s.type == "semantic_decoy")
        assert reason.startswith("write tool (" + p.evidence + ")")
        if annotations and "readOnlyHint" not in annotations:
            assert "readOnlyHint not declared (MCP default: false)" in reason
    else:
        assert stale <= types, types
        gran = next(c for c in pool.canaries if c["type"] == "granularity_trap")
        assert gran["behaviour"]["args"] == {"region": "emea"}, "apac is the task's case"
        assert next(c for c in pool.canaries if c["type"] == "capability_mirage")["behaviour"]["kind"] == "approximate"
    assert {c["type"] for c in pool.canaries} >= {"parameter_trap", "prerequisite_blindness"}
    assert ("capability_mirage" in {c["type"] for c in pool.canaries}) == (not destructive)


def test_a_closed_world_is_declared_not_assumed() -> None:
    calc = {"name": "calculate", "description": "Evaluate an arithmetic expression.",
            "inputSchema": {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}}
    assert profile_tool(calc).pure, "no hints: the verb says it computes"
    assert profile_tool({**calc, "annotations": {"readOnlyHint": True, "openWorldHint": False}}).pure
    # openWorldHint left out defaults to true: it may reach an open world, so its data can be stale
    assert not profile_tool({**calc, "annotations": {"readOnlyHint": True}}).pure
    assert not profile_tool({**calc, "annotations": {"readOnlyHint": True, "openWorldHint": True}}).pure
    # a write verb declared read-only is a read (the server's declaration wins over the verb)
    assert not profile_tool(_read_tool("delete_cache_preview", {"readOnlyHint": True})).writes


def test_no_cached_or_dated_decoy_on_write_tools_and_no_private_pure_function() -> None:
    pool = build_pool(OFFICIAL, "standard", DEFAULT_SUFFIXES["standard"], fit="fitted")
    for c in pool.canaries:
        tool = next(t for t in OFFICIAL if c["upstream"]["name"] == t["name"] and c["upstream"]["server"] == t["server"])
        p = profile_tool(tool)
        if p.writes:
            assert c["type"] not in ("semantic_decoy", "temporal_decoy", "granularity_trap"), c["id"]
            assert "cached" not in c["description"].lower()
            if c["type"] == "capability_mirage":
                assert c["behaviour"]["kind"] == "preview"
        if p.pure:
            assert c["type"] not in ("semantic_decoy", "temporal_decoy", "prerequisite_blindness"), c["id"]


# --- wording ----------------------------------------------------------------------------------


def test_mirage_keeps_the_tools_description_and_adds_its_entrys_claim() -> None:
    """A fitted mirage is the real tool's description and the claim of its bank entry (the
    claim's words vary with the entry, never per tool); its twin the same description and the
    entry's neutral phrasing. The paper's opener is the paper fit's only."""
    pool = build_pool(OFFICIAL, "standard", DEFAULT_SUFFIXES["standard"], fit="fitted", controls=True, variants=3)
    twins = {t["control_of"]: t for t in pool.controls}
    real = {t["name"]: t for t in OFFICIAL}
    mirages = [c for c in pool.canaries if c["type"] == "capability_mirage"]
    assert len({c["wording"] for c in mirages}) == 3 and mirages
    for m in mirages:
        body = (real[m["upstream"]["name"]]["description"] or "").strip()
        claim = m["tell"]["description"][-1]
        assert not m["description"].startswith(PAPER_MIRAGE_CLAIM) and m["description"].endswith(claim)
        assert body.rstrip(".") in m["description"] and body.rstrip(".") in twins[m["id"]]["description"]
        assert twins[m["id"]]["description"].endswith(twins[m["id"]]["tell"]["description"][-1])


def test_subtle_pool_keeps_each_tell_but_softens_it() -> None:
    standard, subtle = fitted("standard"), fitted("subtle")
    assert [c["id"] for c in standard.canaries] == [c["id"] for c in subtle.canaries]
    for a, b in zip(standard.canaries, subtle.canaries, strict=True):
        assert (a["name"], a["inputSchema"], a["behaviour"], a["wording"]) == (b["name"], b["inputSchema"], b["behaviour"], b["wording"])
    boast = re.compile(r"expert|state-of-the-art|research|unmatched|professional-grade|next-generation|hardest|ADVANCED", re.I)
    real = {t["name"]: t for t in tools.mcp_definitions()}
    for c in subtle.canaries:
        if c["type"] == "capability_mirage":
            assert not boast.search(c["description"]), c["description"]
            assert not c["description"].startswith("Expert-level engine that goes beyond the standard tool")
        if c["type"] in ("semantic_decoy", "temporal_decoy"):
            assert TYPE_CUE[c["type"]] in {k.split(":", 1)[0] for k in cues(c) - cues(real[c["shadows"]])}, c["description"]
        if c["type"] == "temporal_decoy":
            assert "2023" in c["description"]
    for c in standard.canaries:
        if c["type"] == "capability_mirage":
            assert TYPE_CUE[c["type"]] in {k.split(":", 1)[0] for k in cues(c) - cues(real[c["shadows"]])}


def test_candidate_cases_come_from_the_schema_only() -> None:
    tool = {"name": "get_events", "description": "Events of a day, e.g. '2026-03-01'.",
            "inputSchema": {"type": "object", "properties": {
                "day": {"type": "string", "description": "The day"},
                "calendar": {"type": "string", "enum": ["work", "home"]},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10}},
                "required": ["day", "calendar"]}}
    assert candidate_cases(tool).cases[:2] == [{"day": "2026-03-01", "calendar": "work"},
                                                {"day": "2026-03-01", "calendar": "home"}]
    bare = {"name": "lookup", "description": "Look up.",
            "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}
    assert candidate_cases(bare).cases == [] and candidate_cases(bare).missing == ["q"]
    for value, param in (("default", "q"), ("Hello", "text"), ("user@example.com", "email"), ("City, Country", "city"),
                         ("<path>", "path"), ([], "items"), ("", "q"), ("https://example.com/x", "url")):
        assert is_placeholder(value, param), value
    for value, param in (("Paris", "city"), ("America/New_York", "timezone"), (3, "days"), ("orders", "table")):
        assert not is_placeholder(value, param), value
