"""Real tool lists: multi-server lists with repeated names, odd schemas, MCP metadata.

The fixtures are what `list-mcp-tools` exported from nine official MCP servers (and a
second GitHub account), and hand-made entries modelled on quirks of real servers (see
tests/fixtures/mcp_servers/README.md). A seeded fuzz test adds schemas nobody wrote down.
"""

from __future__ import annotations

import copy
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from jsonschema.validators import validator_for

from canarykit.canaries import (
    DEFAULT_SUFFIXES,
    SERVER_SEPARATOR,
    build_pool,
    canary_table,
    entry_by_id,
    ingest_tools,
    run_canary,
    validate_pool,
)
from canarykit.errors import InputError
from canarykit.types import CANARY_TYPES, ToolResult

FIXTURES = Path(__file__).parent / "fixtures" / "mcp_servers"
OFFICIAL = json.loads((FIXTURES / "official.json").read_text())
ODD = json.loads((FIXTURES / "odd_tools.json").read_text())
NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def check_records(records: list[dict[str, Any]], real_names: set[str]) -> None:
    """What every canary and control list must satisfy, on any tool list."""
    names = [r["name"] for r in records]
    assert len(set(names)) == len(names), "names unique"
    assert not set(names) & real_names, "never a real tool's name"
    for r in records:
        assert NAME.match(r["name"]), r["name"]
        validator_for(r["inputSchema"]).check_schema(r["inputSchema"])
        assert r["inputSchema"]["type"] == "object"
        assert r["description"].strip()
    validate_pool(records, "<test>")
    canary_table(records)


def pool(tools: Any, fit: str = "fitted", **kw: Any) -> Any:
    return build_pool(tools, "standard", DEFAULT_SUFFIXES["standard"], fit=fit, controls=True, **kw)


@pytest.mark.parametrize("fit", ["fitted", "paper"])
def test_official_servers_with_repeated_names_give_valid_canaries_and_controls(fit: str) -> None:
    listed = ingest_tools(OFFICIAL, "official.json")
    assert len(listed.tools) == len(OFFICIAL) == 110 and not listed.skipped
    real = {t["name"] for t in listed.tools}
    assert len(real) == 110, "every exposed name is unique"
    # the two GitHub accounts: each repeated name is server-prefixed, as MCP clients do
    both = [t for t in listed.tools if t.get("mcp_name") == "create_or_update_file"]
    assert {t["name"] for t in both} == {
        f"github{SERVER_SEPARATOR}create_or_update_file",
        f"github-work{SERVER_SEPARATOR}create_or_update_file",
    }
    assert "get_current_time" in real, "names offered by one server only are unchanged"
    result = pool(listed, fit)
    check_records(result.canaries, real)
    check_records(result.controls, real)
    assert len(result.controls) == len(result.canaries)
    built = {(c["shadows"], c["type"]) for c in result.canaries}
    skipped = {(s.tool, s.type) for s in result.skipped}
    assert built | skipped == {(t["name"], ct) for t in listed.tools for ct in CANARY_TYPES}
    assert not built & skipped
    for c in result.canaries:
        tool = next(t for t in listed.tools if t["name"] == c["shadows"])
        assert c["upstream"] == {"server": tool["server"], "name": tool.get("mcp_name", tool["name"])}
    if fit == "paper":
        assert len(result.canaries) == 6 * 110 - len([s for s in result.skipped if s.warning])


def test_titles_annotations_and_output_schemas_are_mirrored() -> None:
    listed = ingest_tools(OFFICIAL, "official.json")
    by_name = {t["name"]: t for t in listed.tools}
    result = pool(listed)
    for c in result.canaries:
        real = by_name[c["shadows"]]
        assert ("title" in c) == ("title" in real), c["id"]
        if c["behaviour"]["kind"] == "preview":  # a preview cannot return what the schema describes
            assert "outputSchema" not in c, c["id"]
        else:
            assert c.get("outputSchema") == real.get("outputSchema")
        if "annotations" in real:
            hints = {k: v for k, v in real["annotations"].items() if k != "title"}
            assert {k: v for k, v in c["annotations"].items() if k != "title"} == hints
    ids = {c["id"]: c for c in result.canaries}
    assert "temporal_decoy:read_text_file" not in ids, "local state (the server writes it): no date claim"
    read_only = [t for t in OFFICIAL if t["server"] == "filesystem" and t["annotations"].get("readOnlyHint")]
    alone = {c["id"]: c for c in pool(read_only).canaries}  # a read-only deployment: a copy may be dated
    dated = alone["temporal_decoy:read_text_file"]
    assert dated["title"] == f"Read Text File ({entry_by_id(dated['wording']).canary_name.replace('_', ' ')})"
    assert "2023" in dated["title"]
    mirage = ids["capability_mirage:read_text_file"]
    assert mirage["title"] == f"{entry_by_id(mirage['wording']).canary_name.capitalize()} Read Text File"


def test_parameter_traps_do_not_keep_the_real_titles_or_schema_title() -> None:
    time_tools = [t for t in OFFICIAL if t["server"] == "time"]
    trap = next(c for c in pool(time_tools).canaries if c["id"] == "parameter_trap:get_current_time")
    props = trap["inputSchema"]["properties"]
    assert "timezone" not in props and props["timezone_value"]["title"] == "Timezone Value"
    assert trap["inputSchema"]["title"] == "get_current_time_v2Arguments"
    for c in pool(time_tools).canaries:  # no copied schema names the real tool in its title
        assert "get_current_time" not in str(c["inputSchema"].get("title", "")).replace(c["name"], "")


def test_odd_schemas_never_abort_the_list_and_each_problem_is_listed() -> None:
    result = pool(ODD)
    warnings = {(s.tool, s.type, s.code) for s in result.skipped if s.warning}
    assert ("legacy_echo", "*", "invalid_tool") in warnings
    assert ("broken_types", "*", "invalid_tool") in warnings
    assert ("tools[9]", "*", "invalid_tool") in warnings, "an entry that is not an object"
    assert ("docs.search", "*", "duplicate_tool") in warnings, "same name twice on one server"
    assert ("list_tickets", "granularity_trap", "unsatisfiable_schema") in warnings, (
        "an enum of strings on an array can host no hard-coded case"
    )
    assert {s.field for s in result.skipped if s.tool == "get_status"} >= {
        "tools[5] (get_status).annotations.readOnlyHint",
        "tools[5] (get_status).outputSchema.type",
    }
    shadowed = {c["shadows"] for c in result.canaries}
    assert {"set_labels", "list_tickets", "ping", "get_status", "docs.search", "create_event", "get_events"} <= shadowed
    real = {t["name"] for t in ingest_tools(ODD, "odd").tools}
    check_records(result.canaries, real)
    check_records(result.controls, real)
    status = next(c for c in result.canaries if c["shadows"] == "get_status")
    assert "outputSchema" not in status and status["annotations"] == {"openWorldHint": True}
    long_one = next(c for c in result.canaries if c["shadows"].endswith(".lookup"))
    assert len(long_one["shadows"]) == 107 and len(long_one["name"]) <= 64


def test_strict_makes_the_first_problem_an_error() -> None:
    with pytest.raises(InputError) as exc:
        pool(ODD, strict=True, source="odd.json")
    assert exc.value.file == "odd.json" and exc.value.field.startswith("tools[")


def test_repeated_names_rules() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    tools = [
        {"name": "search", "server": "web.1", "description": "Search one.", "inputSchema": schema},
        {"name": "search", "server": "web2", "description": "Search two.", "inputSchema": schema},
        {"name": "search", "description": "Search, no server.", "inputSchema": schema},
        {"name": "web2___search", "server": "other", "description": "Taken already.", "inputSchema": schema},
        {"name": "fetch", "server": "web2", "description": "Fetch.", "inputSchema": schema},
    ]
    listed = ingest_tools(tools, "t.json")
    assert [t["name"] for t in listed.tools] == [
        "web_1___search", "web2___search_2", "search", "web2___search", "fetch"
    ]
    assert [t.get("mcp_name") for t in listed.tools] == ["search", "search", None, None, None]
    dup = ingest_tools([tools[0], copy.deepcopy(tools[0])], "t.json")
    assert len(dup.tools) == 1 and dup.skipped[0].code == "duplicate_tool"
    assert dup.skipped[0].field == "tools[1] (search).name"


# --- fuzz: schemas nobody wrote down ---------------------------------------------------------


def _random_spec(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    kind = rng.choice(["string", "integer", "number", "boolean", "array", "object", "enum", "anyOf", "odd"])
    if kind == "string":
        spec: dict[str, Any] = {"type": "string"}
        if rng.random() < 0.3:
            spec["description"] = rng.choice(['e.g. "alpha"', "Some text", "One of 'x' or 'y'", "Path, e.g. `/tmp/a`"])
        if rng.random() < 0.2:
            spec["format"] = rng.choice(["date", "date-time", "uri", "email", "uuid"])
        if rng.random() < 0.2:
            spec["minLength"] = rng.randint(0, 5)
        if rng.random() < 0.1:
            spec["pattern"] = "^[a-z]+$"
        return spec
    if kind in ("integer", "number"):
        spec = {"type": kind}
        if rng.random() < 0.5:
            spec["minimum"] = rng.randint(-5, 5)
            spec["maximum"] = spec["minimum"] + rng.randint(0, 10)
        if rng.random() < 0.3:
            spec["default"] = spec.get("minimum", 3)
        return spec
    if kind == "boolean":
        return {"type": "boolean"}
    if kind == "array":
        return {"type": "array", "items": _random_spec(rng, depth + 1) if depth < 2 else {"type": "string"},
                "minItems": rng.randint(0, 2)}
    if kind == "object" and depth < 2:
        props = {f"p{i}": _random_spec(rng, depth + 1) for i in range(rng.randint(0, 3))}
        return {"type": "object", "properties": props, "required": [p for p in props if rng.random() < 0.5]}
    if kind == "enum":
        return {"type": "string", "enum": rng.sample(["red", "green", "blue", "test", ""], rng.randint(1, 3))}
    if kind == "anyOf":
        return {"anyOf": [_random_spec(rng, depth + 1) if depth < 2 else {"type": "string"}, {"type": "null"}]}
    return {"type": "array", "enum": ["a", "b"]}  # self-contradictory


def _random_tools(seed: int, n: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    verbs = ["get", "list", "create", "delete", "compute", "search", "update", "convert", "frobnicate", "sync"]
    nouns = ["item", "user", "report", "time", "value", "file", "graph", "ticket"]
    servers = ["alpha", "beta", "gamma.io", None]
    tools = []
    for i in range(n):
        name = f"{rng.choice(verbs)}_{rng.choice(nouns)}" + (f"_{i}" if rng.random() < 0.5 else "")
        props = {rng.choice(["id", "name", "path", "query", "value", "days", "x"]) + str(j): _random_spec(rng) for j in range(rng.randint(0, 4))}
        tool: dict[str, Any] = {
            "name": name,
            "description": rng.choice(["", "Does a thing.", "Gets data, e.g. \"alpha\". Requires a token.", None]),
            "inputSchema": {"type": "object", "properties": props, "required": [p for p in props if rng.random() < 0.6]},
        }
        server = rng.choice(servers)
        if server is not None:
            tool["server"] = server
        if rng.random() < 0.3:
            tool["annotations"] = {"readOnlyHint": rng.random() < 0.5, "destructiveHint": rng.random() < 0.3}
        if rng.random() < 0.2:
            tool["title"] = name.replace("_", " ").title()
        tools.append(tool)
    return tools


@pytest.mark.parametrize("seed", range(6))
def test_fuzzed_tool_lists_give_valid_canaries_controls_and_cases(seed: int) -> None:
    tools = _random_tools(seed, 60)
    listed = ingest_tools(tools, "fuzz.json")
    real = {t["name"] for t in listed.tools}
    by_name = {t["name"]: t for t in listed.tools}
    for fit in ("fitted", "paper"):
        result = pool(listed, fit)
        check_records(result.canaries, real)
        check_records(result.controls, real)
        for c in result.canaries:
            if c["type"] == "granularity_trap":  # the hard-coded case is a valid call of the real tool
                schema = by_name[c["shadows"]]["inputSchema"]
                assert not list(validator_for(schema)(schema).iter_errors(c["behaviour"]["args"]))

        def echo(name: str, args: Any) -> ToolResult:
            data = {"tool": name, "args": args, "when": "2026-05-01T10:20:30Z", "items": ["a b c", "d e f"]}
            return ToolResult(json.dumps(data), data=data)

        for record in result.canaries + [c for c in result.controls if c["type"] != "granularity_trap"]:
            out = run_canary(record, {}, echo)
            assert isinstance(out, ToolResult)
