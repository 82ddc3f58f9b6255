"""Canaries on a user's own server (issue 22 items 3, 4 and 6): strict clients accept every
canary and twin answer, answers keep the real tool's form, the fit rules read the data
(local state, destructive tools), stale answers stay consistent, and twins refuse bad
arguments the way the real tool does.

The official MCP Python SDK client (``mcp.Client``, whose ``call_tool`` raises "has an output
schema but did not return structured content" and "Invalid structured content") talks, in
process, to canarykit's proxy handlers over fake upstream servers that answer like the real
ones (``tests/fixtures/mcp_servers/official.json``: the memory server, which writes, the
filesystem server, the time server and the git server, whose tools answer text only).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from jsonschema import Draft202012Validator
from mcp import Client
from mcp_types import CallToolResult, TextContent

from canarykit.canaries import DEFAULT_SUFFIXES, build_pool, run_canary, snapshot_records
from canarykit.mcp.proxy import Proxy, ProxySettings, build_catalog, make_server
from canarykit.types import ToolResult

OFFICIAL = json.loads((Path(__file__).parent / "fixtures" / "mcp_servers" / "official.json").read_text())
SERVERS = ("memory", "filesystem", "time", "git")
TOOLS = [t for t in OFFICIAL if t["server"] in SERVERS]
BY_NAME = {t["name"]: t for t in TOOLS}
STAMP = "Noted 2026-11-30; checked 2026-12-01T09:15:00Z, 42.5 units"


def instance(schema: Any, root: Mapping[str, Any] | None = None, depth: int = 0) -> Any:
    """A value valid against ``schema`` (every property filled, two items per array, dated text)."""
    root = root if root is not None else schema
    if not isinstance(schema, Mapping) or depth > 8:
        return STAMP
    if "$ref" in schema:
        target: Any = root
        for part in str(schema["$ref"]).lstrip("#/").split("/"):
            target = target[part]
        return instance(target, root, depth + 1)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return instance(schema[key][0], root, depth + 1)
    if "enum" in schema:
        return schema["enum"][0]
    typ = schema.get("type", "object")
    typ = typ[0] if isinstance(typ, list) else typ
    if typ == "object":
        props = schema.get("properties") or {}
        return {k: instance(v, root, depth + 1) for k, v in props.items()}
    if typ == "array":
        return [instance(schema.get("items", {}), root, depth + 1) for _ in range(2)]
    if typ in ("number", "integer"):
        return 7
    if typ == "boolean":
        return True
    return STAMP


class FakeUpstreams:
    """Answers like the real servers: the input schema checked (a refusal in the TypeScript
    SDK's words), structured content with its JSON as text (memory), with a text of its own
    (filesystem: the file's text), or text only (git). Every call is recorded."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def call(self, name: str, args: dict[str, Any]) -> CallToolResult:
        self.calls.append((name, dict(args)))
        tool = BY_NAME[name]
        errors = list(Draft202012Validator(tool["inputSchema"]).iter_errors(args))
        if errors:
            issues = [{"path": [*e.absolute_path, *re.findall(r"^'(.+)' is a required property$", e.message)],
                       "message": "Required" if e.validator == "required" else e.message} for e in errors]
            text = f"MCP error -32602: Invalid arguments for tool {name}: {json.dumps(issues)}"
            return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
        if "outputSchema" not in tool:
            text = f"Repository status for {name}:\nOn branch main, {STAMP}.\nChanged: 12 files since 2019."
            return CallToolResult(content=[TextContent(type="text", text=text)])
        data = instance(tool["outputSchema"])
        text = data["content"] if tool["server"] == "filesystem" else json.dumps(data, indent=2)
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def catalog(controls: bool) -> Any:
    return build_catalog(TOOLS, {}, ProxySettings(controls=controls))


async def call_every_offering(controls: bool) -> tuple[list[tuple[str, Any, Any]], FakeUpstreams]:
    """Every canary (or twin) called through the official client, with valid arguments and
    with none: ``(offered name, args, result)``. A strict client's refusal raises."""
    up = FakeUpstreams()
    cat = catalog(controls)
    server = make_server(Proxy(up, cat, None), "fake", "1", None)  # type: ignore[arg-type]
    seen = []
    with anyio.fail_after(60):
        async with Client(server) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            for offering in cat.offered:
                if offering.kind == "real":
                    continue
                tool = listed[offering.name]
                for args in (instance(tool.input_schema), {}):
                    seen.append((offering, args, await client.call_tool(offering.name, args)))
    return seen, up


@pytest.fixture(scope="module")
def answered() -> dict[bool, tuple[list[tuple[Any, Any, Any]], FakeUpstreams]]:
    return {controls: anyio.run(call_every_offering, controls) for controls in (False, True)}


@pytest.mark.parametrize("controls", [False, True], ids=["canaries", "twins"])
def test_a_strict_client_accepts_every_canary_and_twin_of_four_servers(answered: Any, controls: bool) -> None:
    """Item 3: no call raises in the official client; a result of a tool that keeps an
    outputSchema has structured content valid against it (the client checked it)."""
    seen, up = answered[controls]
    records = [o.record for o, _, _ in seen]
    servers = {r["upstream"]["server"] if "upstream" in r else BY_NAME[r["shadows"]]["server"] for r in records}
    assert servers == set(SERVERS)
    types = {r["type"] for r in records}
    assert types == {"semantic_decoy", "parameter_trap", "capability_mirage", "prerequisite_blindness",
                     "temporal_decoy", "granularity_trap"}
    kinds = {r["behaviour"]["kind"] for r in records}
    assert "preview" in kinds or controls, "the memory server's write tools have previews"
    for offering, _args, result in seen:
        schema = offering.record.get("outputSchema")
        if schema is not None and not result.is_error:
            assert result.structured_content is not None
            assert not list(Draft202012Validator(schema).iter_errors(result.structured_content))
    previews = [(o, r) for o, a, r in seen if o.record["behaviour"]["kind"] == "preview" and a]
    assert all(not r.is_error and "no change was applied" in r.content[0].text for _, r in previews)
    memory = [r for o, r in previews if o.record["shadows"] == "create_entities"]
    assert controls or memory[0].structured_content["applied"] is False, "the issue's advanced_create_entities"
    structured_ok = [r for o, _, r in seen if o.record.get("outputSchema") and not r.is_error]
    assert len(structured_ok) >= 20, "the test reaches the structured paths, not errors only"
    writes = {n for n, _ in up.calls if not (BY_NAME[n].get("annotations") or {}).get("readOnlyHint")}
    if not controls:
        assert not writes, f"a canary reached a real write tool: {writes}"


def test_answers_keep_the_real_tools_form(answered: Any) -> None:
    """Item 3: text stays text (git answers text: no JSON, no ``cached`` field), a file's text
    stays the file's text beside its structured content, and a text write tool's preview is text."""
    seen, _ = answered[False]
    for offering, args, result in seen:
        if result.is_error or not args:
            continue
        real = BY_NAME[offering.record["shadows"]]
        text = "\n".join(b.text for b in result.content if b.type == "text")
        if "outputSchema" not in real:
            assert result.structured_content is None, offering.record["id"]
            assert not text.lstrip().startswith("{") and '"cached"' not in text, (offering.record["id"], text)
        elif real["server"] == "filesystem" and offering.record["behaviour"]["kind"] != "preview":
            assert not text.lstrip().startswith("{"), (offering.record["id"], text)
    git_preview = [r for o, a, r in seen if o.record["shadows"] == "git_commit" and a and not r.is_error]
    assert git_preview and all(r.structured_content is None and "no change was applied" in r.content[0].text
                               for r in git_preview)


def test_fit_rules_read_the_data() -> None:
    """Item 4: no staleness or date claims on local state (closed world, written by its
    server), none on a read-only closed world's absence of writers either way; no capability
    claims on destructive tools."""
    pool = build_pool(TOOLS, "standard", DEFAULT_SUFFIXES["standard"], controls=True)
    offered = {(c["shadows"], c["type"]) for c in pool.canaries}
    skipped = {(s.tool, s.type): s for s in pool.skipped}
    for tool in ("read_graph", "search_nodes", "read_text_file", "git_status", "git_log"):
        for ctype in ("semantic_decoy", "temporal_decoy"):
            assert (tool, ctype) not in offered
            assert skipped[(tool, ctype)].code == "local_state"
    assert "'create_entities' writes it" in skipped[("read_graph", "semantic_decoy")].reason
    texts = " ".join(c["description"] for c in [*pool.canaries, *pool.controls]
                     if BY_NAME[c["shadows"]]["server"] in ("memory", "filesystem", "git"))
    assert not re.search(r"nightly sync|as of March 2023|cached", texts)
    # the time server writes nothing: its closed world may be a copy, so its decoys stay
    assert ("get_current_time", "temporal_decoy") in offered
    for tool in ("delete_entities", "delete_relations", "write_file", "move_file", "git_reset"):
        assert (tool, "capability_mirage") not in offered and skipped[(tool, "capability_mirage")].code == "destructive_tool"
    assert not any("research-grade" in c["description"] for c in pool.canaries if c["shadows"].startswith("delete"))
    assert ("create_entities", "capability_mirage") in offered, "an additive write keeps its preview mirage"


def test_a_stale_record_keeps_the_order_of_its_dates() -> None:
    """Item 4: a snapshot shifts whole records; a person never dies before being born."""
    person = {"name": "Ada", "born": "2024-06-01", "died": "2025-01-15",
              "observations": ["Born 2024-06-01 in Paris", "Died in 2025"], "year": 2025}
    old = {"name": "Bob", "born": "1950-02-03", "died": "2020-05-06"}
    out = snapshot_records({"entities": [person, old]}, 2023)
    ada, bob = out["entities"]
    assert ada["born"] < ada["died"] and ada["died"].startswith("2023")
    assert (ada["born"], ada["died"], ada["year"]) == ("2022-06-01", "2023-01-15", 2023)
    assert ada["observations"] == ["Born 2022-06-01 in Paris", "Died in 2023"]
    assert bob == old, "a record dated before the snapshot stays"
    ex = lambda name, args: ToolResult("Ada was born 1815 and died in 1852; 1,200 letters survive.")  # noqa: E731
    pool = build_pool([{"name": "get_biography", "description": "Get a biography.",
                        "inputSchema": {"type": "object", "properties": {"who": {"type": "string"}}}}],
                      "standard", DEFAULT_SUFFIXES["standard"])
    decoy = next(c for c in pool.canaries if c["type"] == "semantic_decoy")
    stale = run_canary(decoy, {"who": "Ada"}, ex).content
    assert "born 1815" in stale and "in 1852" in stale and "1,200 letters" not in stale


def test_twins_refuse_bad_arguments_in_the_real_tools_words(answered: Any) -> None:
    """Item 6: a parameter trap's twin refuses arguments lacking its own required key (even
    under the real name), with the real tool's error form and its own names, and returns no
    real data; a write tool is never called with bad arguments."""
    seen, _ = answered[True]
    twins = [(o, a, r) for o, a, r in seen if o.record["type"] == "parameter_trap" and o.record["behaviour"].get("renamed")]
    assert twins
    for offering, args, result in twins:
        if args:
            continue
        assert result.is_error, offering.name
        text = result.content[0].text
        real = offering.record["shadows"]
        if (BY_NAME[real].get("annotations") or {}).get("readOnlyHint"):
            assert result.structured_content is None, "the real tool's refusal has none"
            assert text.startswith("MCP error -32602: Invalid arguments for tool " + offering.name), text
            for real_key, shown in offering.record["behaviour"]["renamed"].items():
                if real_key in BY_NAME[real]["inputSchema"].get("required", []):
                    assert f'"{shown}"' in text and f'"{real_key}"' not in text, text
        else:
            assert text.startswith('{"error": "invalid arguments for ' + offering.name), text
    search = next(o for o, _, _ in twins if o.record["shadows"] == "search_nodes")
    up = FakeUpstreams()

    def execute(name: str, args: Any) -> ToolResult:
        from canarykit.mcp.upstream import tool_result

        return tool_result(anyio.run(up.call, name, args))

    result = run_canary(search.record, {"query": "Ada"}, execute)  # the real name: unknown to the twin
    assert result.is_error and "search_text" in result.content and "entities" not in result.content
    assert up.calls == [("search_nodes", {})], "the real tool is asked the same bad call, never with the real name"


def test_a_text_tools_json_stays_its_own_json() -> None:
    """Item 3, the issue's case: a text tool whose text is JSON (the notes server's
    ``list_notes``) gets a decoy answer in the same JSON form, with no ``cached`` field, no
    wrapper and no structured content."""
    notes = {"name": "list_notes", "description": "List every note of the notebook.",
             "inputSchema": {"type": "object", "properties": {}},
             "annotations": {"readOnlyHint": True, "destructiveHint": False}}
    real = '["buy milk on 2026-11-30", "call Ada about the 42.5 kg parcel", "water the plants"]'
    pool = build_pool([notes], "standard", DEFAULT_SUFFIXES["standard"])
    for c in pool.canaries:
        if c["type"] not in ("semantic_decoy", "temporal_decoy", "capability_mirage"):
            continue
        answer = run_canary(c, {}, lambda name, args: ToolResult(real))
        assert not answer.is_error and answer.data is None, c["id"]
        value = json.loads(answer.content)
        assert isinstance(value, list) and answer.content != real, (c["id"], answer.content)
        assert "cached" not in answer.content and "result" not in answer.content


def test_the_docs_memory_server_example_prints_what_it_shows(tmp_path: Path) -> None:
    """docs/server-fit.md's commands as printed, from a repository root: the memory server's
    pool skips its decoys (local state) and its destructive tools' mirages, with the lines shown."""
    from fakes.readme import command, sh

    fixture = tmp_path / "tests/fixtures/mcp_servers/official.json"
    fixture.parent.mkdir(parents=True)
    fixture.write_text((Path(__file__).parent / "fixtures/mcp_servers/official.json").read_text())
    example = "python -c \"import json; d = json.load(open('tests/fixtures/mcp_servers/official.json')); json.dump([t for t in d if t['server'] == 'memory'], open('memory-tools.json', 'w'))\""
    sh(tmp_path, command(example).text)
    proc = sh(tmp_path, command("canarykit generate-canaries memory-tools.json").text)
    printed = proc.stdout + proc.stderr
    assert "24 canaries" in printed
    # the skip lines the page shows
    assert "skipped: delete_entities: capability_mirage: destructive tool (destructiveHint true)" in printed
    assert "skipped: read_graph: semantic_decoy: local state (openWorldHint false, and 'create_entities' writes it)" in printed
