"""Twins (issue 19 items 1-2, issue 22 item 6): for every canary, a twin that differs in the
probed property only, set to its healthy value; it reads like a neutral tool, works like the
real one and checks its arguments as the real one does; the pool file that carries both."""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from fakes.cues import TYPE_CUE, cues

from canarykit import tools
from canarykit.canaries import (
    BANKS,
    DEFAULT_SUFFIXES,
    PAPER_CONTROL_SUFFIXES,
    PAPER_SUFFIXES,
    SELLING_POINTS,
    audit_pair,
    build_pool,
    control_for_task,
    entry_by_id,
    granularity_case,
    ingest_tools,
    is_control,
    load_controls,
    load_pool,
    load_pool_document,
    run_canary,
    selling_point,
    suite_from_tasks,
    summary_lines,
    task_case,
    validate_pool,
    write_pool,
)
from canarykit.errors import InputError
from canarykit.tasks.tasks import load_tasks
from canarykit.tools import TODAY
from canarykit.types import CANARY_TYPES, ToolResult

ROOT = Path(__file__).resolve().parents[1]
TASKS = load_tasks(ROOT / "data" / "tasks.json")
FIXTURES = Path(__file__).parent / "fixtures"
CASES = {"get_forecast": {"city": "Mumbai", "days": 3}}
#: Every tool list the tests know: ours and the fixtures (real servers, hand-made quirks).
LISTS = {
    "builtin": tools.mcp_definitions(),
    **{name: json.loads((FIXTURES / name).read_text())
       for name in ("foreign_tools.json", "mcp_servers/official.json", "mcp_servers/odd_tools.json",
                    "mcp_servers/workspace.json")},
}


def pool(name: str = "standard", tool_list: Any = None, variants: int = 3, **kw: Any) -> Any:
    return build_pool(
        tool_list if tool_list is not None else tools.mcp_definitions(), name, DEFAULT_SUFFIXES[name],
        fit="fitted", controls=True, special_cases=CASES, variants=variants,
        suite=suite_from_tasks(TASKS, "tasks", tools.execute) if tool_list is None else None, **kw,
    )


def pairs(result: Any) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    twins = {k["control_of"]: k for k in result.controls}
    assert len(twins) == len(result.canaries), "every canary has its twin"
    return [(c, twins[c["id"]]) for c in result.canaries]


# --- one property flipped, nothing else ----------------------------------------------------


#: A twin says nothing of its sameness with another tool (issue 27: "STANDARD: handles the
#: same requests as the base tool" must go).
SAMENESS = re.compile(r"\bsame (?:requests?|parameters|inputs?|outputs?|as)\b|\bbase tool\b|\bstandard tool\b|"
                      r"\blike the (?:real|original|standard)\b", re.I)


def _words(text: str) -> list[str]:
    return re.findall(r"[\w'-]+", text.lower())


@pytest.mark.parametrize("name", ["standard", "subtle"])
def test_each_twin_flips_only_its_canarys_property(name: str) -> None:
    result = pool(name)
    real = {t["name"]: t for t in tools.mcp_definitions()}
    for c, k in pairs(result):
        assert is_control(k) and not is_control(c) and k["id"] == f"control:{c['id']}"
        assert (k["type"], k["shadows"], k["pool"], k["variant"], k["wording"]) == (c["type"], c["shadows"], c["pool"],
                                                                                  c["variant"], c["wording"])
        assert k.get("outputSchema") == c.get("outputSchema")
        assert (k["name"], k["description"], k["inputSchema"]) != (c["name"], c["description"], c["inputSchema"])
        assert k["selection_visible"] is c["selection_visible"] is True
        audit = audit_pair(c, k)
        assert audit.ok and audit.phrasing == "bank", [s for s in audit.spans if not s.declared] + audit.problems
        wording = entry_by_id(c["wording"])
        tool = real[c["shadows"]]
        t = c["type"]
        c_tell, k_tell = c["tell"]["description"][-1], k["tell"]["description"][-1]
        body = c["description"][: -len(c_tell)]
        assert k["description"] == body + k_tell, "the same text but the tell"
        assert not SAMENESS.search(k_tell), k_tell
        if t != "granularity_trap":  # a granularity tell names its case, of any length
            assert 0.85 <= len(k["description"]) / len(c["description"]) <= 1.15, (c["description"], k["description"])
        if t in ("semantic_decoy", "parameter_trap"):
            assert k["name"] == c["name"], "the name does not carry the property"
        if t == "semantic_decoy":
            assert k["inputSchema"] == c["inputSchema"] == tool["inputSchema"]
        if t == "parameter_trap":
            param = wording.parameter
            assert c["name"] == f"{tool['name']}_v{c['variant'] + 1}" and param in c_tell
            schema = json.loads(json.dumps(c["inputSchema"]))
            del schema["properties"][param]
            schema["required"].remove(param)
            assert k["inputSchema"] == schema, "the same renamed parameters, no credential"
            assert not re.search(r"api[ _-]?key|token|secret|credential", k_tell, re.I)
        if t in ("capability_mirage", "prerequisite_blindness"):
            assert (c["name"], k["name"]) == (f"{wording.canary_name}_{tool['name']}", f"{wording.twin_name}_{tool['name']}")
            assert k["inputSchema"] == c["inputSchema"]
        if t == "prerequisite_blindness":  # the same breadth: the sentences differ in the scope's words only
            ops = [o for o in difflib.SequenceMatcher(None, _words(c_tell), _words(k_tell)).get_opcodes() if o[0] != "equal"]
            assert len(ops) == 1 and ops[0][2] - ops[0][1] <= 2, (c_tell, k_tell)
        if t == "temporal_decoy":
            assert "2023" in c["name"] and "2023" not in k["name"] and not re.search(r"\d", k["name"].replace(tool["name"], ""))
            assert k["name"] == f"{tool['name']}_{wording.twin_name}"
            assert not re.search(r"\d", k_tell) and str(TODAY.year) not in k["description"], "undated like the real tool"
        if t == "granularity_trap":
            assert c["inputSchema"]["properties"] == {} and k["inputSchema"] == tool["inputSchema"], "any case, the real schema"
            assert k["name"] == f"{tool['name']}_{wording.twin_name}" and k["behaviour"]["kind"] == "passthrough"
    assert {c["type"] for c, _ in pairs(result)} == set(CANARY_TYPES)


@pytest.mark.parametrize("listed", sorted(LISTS))
def test_twins_read_like_neutral_tools_and_canaries_show_their_cue(listed: str) -> None:
    """On every tool list, every bank entry (all 16 of each type: 8 development, 8 held-back;
    the first drawn on the 110 official tools) and both pools: a twin never equals its canary,
    differs from it in the declared tell only (audit-twins), shows no defect cue its real tool
    does not show itself (an independent reader) and no selling point, its description is
    within 15% of its canary's (but a granularity trap's, whose tell names its case, and the
    paper's mirage, whose opener is a tell), and the canary shows its type's cue. The paper
    fit's pools (the paper's one wording) too."""
    real_tools = ingest_tools(LISTS[listed], listed).tools
    real = {t["name"]: (t, cues(t), selling_point(t["description"])) for t in real_tools}
    k = 1 if listed == "mcp_servers/official.json" else 16  # its filesystem and git servers: all 16 (test_canaries_audit.py)
    checked = 0
    for fit, variants in (("fitted", k), ("paper", 1)):
        for name in ("standard", "subtle"):
            suffixes = DEFAULT_SUFFIXES[name] if fit == "fitted" else PAPER_SUFFIXES[name]
            result = build_pool(real_tools, name, suffixes, fit=fit, controls=True, variants=variants, wording_part="all")
            for c, twin in pairs(result):
                tool, real_cues, real_sell = real[c["shadows"]]
                assert (twin["name"], twin["description"], twin["inputSchema"]) != (c["name"], c["description"], c["inputSchema"])
                assert twin["selection_visible"] is c["selection_visible"] is True
                shown = {key.split(":", 1)[0] for key in cues(twin) - real_cues}
                assert not shown, (twin["name"], twin["description"], cues(twin) - real_cues)
                assert selling_point(f"{twin['name']} {twin['description']}") in (None, real_sell), twin["description"]
                assert TYPE_CUE[c["type"]] in {key.split(":", 1)[0] for key in cues(c) - real_cues}, c["description"]
                # a granularity tell names its case; the paper's mirage opener and hard-coded sentence are tells
                if c["type"] != "granularity_trap" and not (fit == "paper" and c["type"] == "capability_mirage"):
                    assert 0.85 <= len(twin["description"]) / len(c["description"]) <= 1.15, (c["description"], twin["description"])
                assert audit_pair(c, twin).ok, [s for s in audit_pair(c, twin).spans if not s.declared]
                checked += 1
    assert checked > 100


def test_the_selling_point_list_is_one_list_and_catches_claims() -> None:
    for words in SELLING_POINTS.values():
        for word in words:
            assert selling_point(f"Returns {word} results.") == word, word
    for claim in ("Returns live data from the source on every request.", "Data refreshed on every request.",
                  "Real-time figures.", "Highly ACCURATE answers.", "Always up to date.", "Current data only."):
        assert selling_point(claim) is not None, claim
    for neutral in (*PAPER_CONTROL_SUFFIXES["standard"].values(), *PAPER_CONTROL_SUFFIXES["subtle"].values(),
                    *(e.phrasing(s, True) for bank in BANKS.values() for e in bank for s in ("standard", "subtle"))):
        assert selling_point(neutral) is None, neutral


# --- behaviour ---------------------------------------------------------------------------


def test_twins_answer_exactly_like_the_real_tool() -> None:
    result = pool()
    twins: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for k in result.controls:
        twins.setdefault((k["shadows"], k["type"]), []).append(k)
    checked = 0
    for task in TASKS:
        for step in task.plan:
            real = tools.execute(step.tool, step.args)
            for ctype in CANARY_TYPES:
                for k in twins.get((step.tool, ctype), []):
                    renamed = k["behaviour"].get("renamed", {})
                    args = {renamed.get(a, a): v for a, v in step.args.items()}
                    assert run_canary(k, args, tools.execute) == real, (k["id"], step.args)
                    checked += 1
    assert checked > 1500


def test_a_parameter_trap_twin_checks_its_own_arguments() -> None:
    """Issue 22 item 6: called without its own required key (or with the real tool's names),
    the twin answers the invalid-arguments error the real tool would, never real data."""
    twin = next(k for k in pool().controls if k["id"] == "control:parameter_trap:get_forecast")
    assert twin["behaviour"]["renamed"] == {"city": "location", "days": "num_days"}
    good = run_canary(twin, {"location": "Paris", "num_days": 2}, tools.execute)
    assert good == tools.execute("get_forecast", {"city": "Paris", "days": 2})
    for args, problem in (({"location": "Paris"}, "'num_days' is a required property"),
                          ({"city": "Paris", "days": 2}, "'location' is a required property"),
                          ({"location": "Paris", "num_days": "two"}, "'two' is not of type 'integer' (at num_days)")):
        out = run_canary(twin, args, tools.execute)
        assert out.is_error and json.loads(out.content) == {"error": f"invalid arguments for get_forecast_v2: {problem}"}
    assert "must be a JSON object" in run_canary(twin, ["Paris"], tools.execute).content


def test_the_granularity_twin_is_general_and_offered_when_the_plan_calls_the_tool() -> None:
    """No per-task template: the twin takes the real schema and answers every case; a task
    whose plan calls the tool (once or with several cases) is offered canary and twin, one
    whose plan never calls it is not (its case could not be checked against the canary's)."""
    result = pool()
    twin = next(k for k in result.controls if k["id"] == "control:granularity_trap:get_weather")
    canary = next(c for c in result.canaries if c["id"] == "granularity_trap:get_weather")
    assert twin["name"] == f"get_weather_{entry_by_id(canary['wording']).twin_name}"
    assert twin["description"].endswith(twin["tell"]["description"][-1])
    for city in ("Singapore", "Toronto"):
        assert run_canary(twin, {"city": city}, tools.execute) == tools.execute("get_weather", {"city": city})
    hard040 = next(t for t in TASKS if t.id == "hard-040")  # Singapore, then Toronto
    assert task_case(hard040, "get_weather") is None and granularity_case(hard040, "get_weather")[0] == {"city": "Singapore"}
    assert control_for_task(twin, hard040) == twin
    assert canary["behaviour"]["args"] not in ({"city": "Singapore"}, {"city": "Toronto"})
    other = next(t for t in TASKS if "get_weather" not in t.correct_tools and all(s.tool != "get_weather" for s in t.plan))
    assert control_for_task(twin, other) is None and "never calls get_weather" in granularity_case(other, "get_weather")[1]
    assert granularity_case({"id": "t"}, "get_weather")[0] is None, "no plan: no case to check against"
    assert not [s for s in result.skipped if s.task], "every task naming a tool calls it in its plan"


# --- invisible types ------------------------------------------------------------------------


def test_a_type_whose_tell_is_behaviour_only_is_marked_invisible(tmp_path: Path) -> None:
    """An empty suffix for the semantic decoy (its name does not carry freshness): canary and
    twin show the same surface; the pool is accepted and both records say so."""
    quiet = {**DEFAULT_SUFFIXES["standard"], "semantic_decoy": ""}
    result = build_pool(tools.mcp_definitions(), "standard", quiet, controls=True, variants=2)
    for c, k in pairs(result):
        same = (c["name"], c["description"], c["inputSchema"]) == (k["name"], k["description"], k["inputSchema"])
        assert same is (c["type"] == "semantic_decoy")
        assert c["selection_visible"] is k["selection_visible"] is (not same)
        if same:
            assert c["behaviour"]["kind"] == "stale_cache" and k["behaviour"]["kind"] == "passthrough"
    path = tmp_path / "quiet.json"
    write_pool(result, path)
    doc = load_pool_document(path)
    assert [c["selection_visible"] for c in doc["canaries"]] == [c["selection_visible"] for c in result.canaries]
    assert any(line.startswith("note: semantic_decoy: canary and twin show the same name")
               for line in summary_lines(result, str(path)))


# --- pool files and names --------------------------------------------------------------------


def test_pool_file_carries_canaries_twins_variants_and_reads_older_files(tmp_path: Path) -> None:
    result = pool()
    path = tmp_path / "standard.json"
    write_pool(result, path)
    doc = load_pool_document(path)
    assert (doc["format"], doc["format_version"], doc["fit"], doc["variants"]) == ("canarykit-pool", 4, "fitted", 3)
    assert load_pool(path) == result.canaries and load_controls(path) == result.controls
    assert doc["wording_seed"] == result.wording_seed and doc["wordings"] == result.wordings
    old = json.loads(path.read_text())  # a format-2 file: no variants, no flags, no wordings
    old["format_version"] = 2
    for key in ("wording_seed", "wordings"):
        old.pop(key)
    for r in [*old["canaries"], *old["controls"]]:
        for key in ("variant", "selection_visible", "wording", "tell"):
            r.pop(key)
    path.write_text(json.dumps(old))
    assert len(load_pool(path)) == len(result.canaries)
    broken = json.loads(json.dumps(old))
    broken["controls"][0]["control_of"] = "semantic_decoy:nope"
    path.write_text(json.dumps(broken))
    with pytest.raises(InputError, match=r"controls\[0\]\.control_of"):
        load_pool(path)
    broken = json.loads(json.dumps(old))
    broken["canaries"][1]["selection_visible"] = "yes"
    path.write_text(json.dumps(broken))
    with pytest.raises(InputError, match=r"canaries\[1\] \(.*\)\.selection_visible"):
        load_pool(path)


@pytest.mark.parametrize("listed", sorted(LISTS))
def test_names_are_unique_valid_and_never_a_real_tools(listed: str) -> None:
    """Canaries and twins of every variant: function-safe names, unique in the pool (a twin
    may carry its own canary's name: they are never in one list), never a real tool's; valid
    schemas; the fixture lists' pools validate."""
    real_tools = ingest_tools(LISTS[listed], listed).tools
    real = {t["name"] for t in real_tools}
    result = build_pool(real_tools, "standard", DEFAULT_SUFFIXES["standard"], controls=True, variants=3)
    validate_pool(result.canaries, listed, "canaries")
    validate_pool(result.controls, listed, "controls")
    owner: dict[str, str] = {}
    for c, k in pairs(result):
        for r in (c, k):
            assert re.match(r"^[a-zA-Z0-9_-]{1,64}$", r["name"]) and r["name"] not in real, r["name"]
            assert owner.setdefault(r["name"], c["id"]) == c["id"], f"{r['name']} taken by {owner[r['name']]}"


def test_twins_on_real_servers_map_back_to_their_real_tool() -> None:
    """On the official servers: every twin passes calls through, a parameter trap's twin
    with its arguments mapped back to exactly the real tool's parameter names."""
    official = ingest_tools(LISTS["mcp_servers/official.json"], "official.json")
    real = {t["name"]: t for t in official.tools}
    result = build_pool(official, "standard", DEFAULT_SUFFIXES["standard"], controls=True)
    assert {k["behaviour"]["kind"] for k in result.controls} == {"passthrough", "renamed_passthrough"}
    calls: list[tuple[str, Any]] = []

    def upstream(name: str, args: Any) -> ToolResult:
        calls.append((name, args))
        return ToolResult("ok")

    for k in result.controls:
        if k["type"] != "parameter_trap":
            continue
        props = real[k["shadows"]]["inputSchema"].get("properties", {})
        back = {v: p for p, v in k["behaviour"]["renamed"].items()}
        assert {back.get(p, p) for p in k["inputSchema"].get("properties", {})} == set(props), k["id"]
        if not k["inputSchema"].get("required"):
            assert run_canary(k, {}, upstream) == ToolResult("ok") and calls[-1] == (k["shadows"], {})
