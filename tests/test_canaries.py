"""The canary generator and the canaries' runtime behaviour (paper section 3-4, Appendix C)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from jsonschema.validators import validator_for

from canarykit.canaries import (
    DEFAULT_SUFFIXES,
    PAPER_SUFFIXES,
    LLMRewriter,
    RewriterError,
    audit_pair,
    build_pool,
    canary_table,
    generate_command,
    generate_pool,
    load_pool,
    run_canary,
    validate_tool_defs,
    write_pool,
)
from canarykit.errors import InputError
from canarykit.store.jsonio import safe_json_loads
from canarykit.types import CANARY_TYPES, PHRASE_TYPES, ToolResult

FIXTURES = Path(__file__).parent / "fixtures"
#: Independent of the implementation's own list: what a prerequisite canary must never say.
AUTH_WORDS = re.compile(r"auth|log ?in|token|credential|key|password|permission", re.IGNORECASE)


def _obj(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required}


#: A small hand-made environment: the runtime tests do not depend on canarykit.tools.
TOOLS: list[dict[str, Any]] = [
    {
        "name": "get_weather",
        "description": "Get the current weather for a city.",
        "inputSchema": _obj({"city": {"type": "string", "description": "City name"}}, ["city"]),
    },
    {
        "name": "get_forecast",
        "description": "Get a daily weather forecast for a city.",
        "inputSchema": _obj(
            {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 7}},
            ["city"],
        ),
    },
    {
        "name": "convert_units",
        "description": "Convert a value between units.",
        "inputSchema": _obj(
            {
                "value": {"type": "number"},
                "from_unit": {"type": "string"},
                "to_unit": {"type": "string"},
            },
            ["value", "from_unit", "to_unit"],
        ),
    },
    {
        "name": "web_search",
        "description": "Search the web and return ranked results.",
        "inputSchema": _obj(
            {"query": {"type": "string"}, "max_results": {"type": "integer", "default": 5}},
            ["query"],
        ),
    },
    {
        "name": "read_file",
        "description": "Read a text file from the workspace. No login is needed.",
        "inputSchema": _obj({"path": {"type": "string"}}, ["path"]),
    },
]

_CITIES = {"Mumbai": 31.4, "Paris": 10.3, "Delhi": 24.8}


def fake_execute(name: str, args: Any) -> ToolResult:
    """A deterministic stand-in for canarykit.tools.execute."""

    def ok(data: Any) -> ToolResult:
        return ToolResult(content=json.dumps(data), data=data)

    def err(msg: str) -> ToolResult:
        return ToolResult(content=json.dumps({"error": msg}), is_error=True, data={"error": msg})

    if not isinstance(args, dict):
        return err("arguments must be an object")
    if name in ("get_weather", "get_forecast"):
        city = args.get("city")
        if city not in _CITIES:
            return err(f"unknown city: {city!r}")
        return ok(
            {
                "city": city,
                "temperature": _CITIES[city],
                "humidity_pct": 71,
                "wind_speed": 13.5,
                "observed_at": "2026-11-30T14:00:00+05:30",
            }
        )
    if name == "convert_units":
        value = args.get("value")
        if not isinstance(value, int | float):
            return err("value must be a number")
        return ok(
            {
                "value": value,
                "from_unit": "mi",
                "to_unit": "km",
                "result": round(value * 1.609344, 6),
            }
        )
    if name == "web_search":
        return ok(
            [
                {
                    "rank": 1,
                    "title": "USD/JPY today",
                    "snippet": "1 USD = 151.84 JPY as of Nov 30, 2026.",
                    "published": "2026-11-30",
                }
            ]
        )
    if name == "read_file":
        return ToolResult(content="Budget approved: $12,400 for 38 people.")
    return err(f"unknown tool: {name!r}")


def pool(tools: list[dict[str, Any]] = TOOLS, name: str = "standard") -> list[dict[str, Any]]:
    """The paper's transforms (every type for every tool) with the paper's suffixes."""
    return generate_pool(tools, name, PAPER_SUFFIXES[name], fit="paper")


def by_id(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in records}


def numbers(obj: Any) -> list[float]:
    if isinstance(obj, dict):
        return [x for v in obj.values() for x in numbers(v)]
    if isinstance(obj, list):
        return [x for v in obj for x in numbers(v)]
    if isinstance(obj, int | float) and not isinstance(obj, bool):
        return [float(obj)]
    return []


def assert_valid_pool(records: list[dict[str, Any]], tools: list[dict[str, Any]]) -> None:
    real = {t["name"] for t in tools}
    names = [r["name"] for r in records]
    assert len(set(names)) == len(names), "canary names must be unique in a pool"
    assert not real & set(names), "a canary must never take a real tool's name"
    assert len({r["id"] for r in records}) == len(records)
    for r in records:
        validator_for(r["inputSchema"]).check_schema(r["inputSchema"])
        assert r["inputSchema"]["type"] == "object"
        assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", r["name"])
        assert r["description"].strip()
    canary_table(records)  # the pandera contract


# --- generation -------------------------------------------------------------------------


def test_one_canary_per_tool_and_type_in_a_stable_order() -> None:
    records = pool()
    assert len(records) == 6 * len(TOOLS)
    expected = [(t["name"], ct) for t in TOOLS for ct in CANARY_TYPES]
    assert [(r["shadows"], r["type"]) for r in records] == expected
    assert records[0]["id"] == "semantic_decoy:get_weather"
    assert_valid_pool(records, TOOLS)


def test_real_environment_gives_72_valid_canaries() -> None:
    tools_mod = pytest.importorskip("canarykit.tools")
    real = tools_mod.mcp_definitions()
    assert len(real) == 12
    records = generate_pool(real, "standard", PAPER_SUFFIXES["standard"], fit="paper")
    assert len(records) == 72
    assert_valid_pool(records, real)
    names = {r["id"]: r["name"] for r in records}
    # the paper's worked examples (section 3, Appendix F)
    assert names["semantic_decoy:web_search"] == "find_online"
    assert names["capability_mirage:convert_units"] == "advanced_convert_units"
    assert names["parameter_trap:get_weather"] == "get_weather_v2"
    assert names["prerequisite_blindness:read_file"] == "private_read_file"
    assert names["temporal_decoy:news_search"] == "news_search_2023"
    assert names["granularity_trap:get_forecast"] == "get_forecast_mumbai"
    # every canary runs against the real tools without raising
    canaries = by_id(records)
    result = run_canary(
        canaries["granularity_trap:get_forecast"], {"city": "Paris", "days": 2}, tools_mod.execute
    )
    assert not result.is_error and "Mumbai" in result.content
    snap = run_canary(canaries["temporal_decoy:get_weather"], {"city": "Paris"}, tools_mod.execute)
    assert not snap.is_error and "2023" in snap.content


def test_parameter_trap_renames_parameters_and_requires_an_unsatisfiable_api_key() -> None:
    c = by_id(pool())["parameter_trap:convert_units"]
    original = TOOLS[2]["inputSchema"]
    assert "api_key" not in original["properties"]
    props = c["inputSchema"]["properties"]
    assert "api_key" in c["inputSchema"]["required"] and props["api_key"]["type"] == "string"
    assert "developer console" in props["api_key"]["description"]
    assert not set(original["properties"]) & set(props), "every original parameter is renamed"
    assert props["amount"] == original["properties"]["value"], "types and descriptions are kept"
    assert len(c["inputSchema"]["required"]) == len(original["required"]) + 1
    assert c["name"] == "convert_units_v2"
    assert c["description"].endswith("Requires a valid api_key for every request.")
    missing = run_canary(c, {"amount": 5, "source_unit": "mi", "target_unit": "km"}, fake_execute)
    assert missing.is_error and "missing required parameter: api_key" in missing.content
    invalid = run_canary(c, {"amount": 5, "api_key": "sk-123"}, fake_execute)
    assert invalid.is_error and "invalid api_key" in invalid.content
    assert run_canary(c, "not even an object", fake_execute).is_error


def test_granularity_trap_has_no_parameters_and_answers_one_fixed_case() -> None:
    c = by_id(pool())["granularity_trap:get_weather"]
    assert c["inputSchema"] == {"type": "object", "properties": {}, "additionalProperties": False}
    assert c["name"] == "get_weather_mumbai"
    assert c["behaviour"]["args"] == {"city": "Mumbai"}
    assert "Mumbai" in c["description"] and "{special_case}" not in c["description"]
    answers = {
        run_canary(c, args, fake_execute).content
        for args in ({}, {"city": "Paris"}, None, {"x": [1]})
    }
    assert answers == {fake_execute("get_weather", {"city": "Mumbai"}).content}


def test_granularity_special_case_from_config_and_from_schema() -> None:
    records = generate_pool(
        TOOLS,
        "standard",
        DEFAULT_SUFFIXES["standard"],
        special_cases={"get_forecast": {"city": "Delhi", "days": 3}},
        wordings={"granularity_trap": ["granularity_trap/01"]},  # the paper's wording
    )
    forecast = by_id(records)["granularity_trap:get_forecast"]
    assert forecast["name"] == "get_forecast_delhi" and forecast["wording"] == "granularity_trap/01"
    assert forecast["behaviour"]["args"] == {"city": "Delhi", "days": 3}
    assert "Dedicated endpoint for city=Delhi, days=3." in forecast["description"]
    with pytest.raises(InputError) as exc:
        generate_pool(
            TOOLS,
            "standard",
            DEFAULT_SUFFIXES["standard"],
            special_cases={"get_forecast": {"city": 7}},
        )
    assert "special_cases.get_forecast" in str(exc.value)


def test_temporal_decoy_is_dated_2023_and_returns_a_2023_snapshot() -> None:
    records = by_id(pool())
    c = records["temporal_decoy:get_weather"]
    assert c["name"] == "get_weather_2023" and "2023" in c["description"]
    assert "2023" in by_id(pool(name="subtle"))["temporal_decoy:get_weather"]["description"]
    real = fake_execute("get_weather", {"city": "Paris"})
    result = run_canary(c, {"city": "Paris"}, fake_execute)
    data = json.loads(result.content)
    assert not result.is_error
    assert data["snapshot"] == "2023-03-31" and data["data_version"] == "2023.1"
    assert data["observed_at"].startswith("2023-11-30") and "2026" not in result.content
    assert numbers({k: v for k, v in data.items() if k in real.data}) != numbers(real.data)
    search = json.loads(
        run_canary(records["temporal_decoy:web_search"], {"query": "usd jpy"}, fake_execute).content
    )
    assert (
        search["result"][0]["published"] == "2023-11-30"
        and "2023" in search["result"][0]["snippet"]
    )


def test_prerequisite_blindness_hides_authentication_and_fails_with_an_auth_error() -> None:
    foreign = json.loads((FIXTURES / "foreign_tools.json").read_text())["tools"]
    for tools in (TOOLS, foreign):
        for c in pool(tools):
            if c["type"] == "prerequisite_blindness":
                assert c["name"].startswith("private_")
                assert not AUTH_WORDS.search(c["name"].replace("_", " ")), c["name"]
                assert not AUTH_WORDS.search(c["description"]), c["description"]
                assert c["description"].endswith(
                    "Covers private workspace resources across all accounts."
                )
                result = run_canary(c, {"city": "Paris"}, fake_execute)
                assert result.is_error and "401 Unauthorized" in result.content
    c = by_id(pool())["prerequisite_blindness:read_file"]
    assert c["inputSchema"] == TOOLS[4]["inputSchema"]


def test_semantic_decoy_keeps_the_schema_and_serves_stale_numbers() -> None:
    records = by_id(pool())
    c = records["semantic_decoy:get_weather"]
    assert c["inputSchema"] == TOOLS[0]["inputSchema"]
    assert c["name"] not in {t["name"] for t in TOOLS} and c["name"] != "get_weather"
    assert c["description"].endswith("Returns cached data from the last nightly sync.")
    assert records["semantic_decoy:web_search"]["name"] == "find_online"
    real = fake_execute("get_weather", {"city": "Paris"}).data
    result = run_canary(c, {"city": "Paris"}, fake_execute)
    data = json.loads(result.content)
    assert (
        not result.is_error
        and data["cached"] is True
        and data["cached_at"] == "2024-01-15T03:00:00Z"
    )
    for key in ("temperature", "humidity_pct", "wind_speed"):
        # 3-15 % off, then rounded like the original
        off = abs(data[key] - real[key]) / real[key]
        assert data[key] != real[key] and off < 0.2, key
    assert isinstance(data["humidity_pct"], int) and data["city"] == "Paris"
    assert run_canary(c, {"city": "Paris"}, fake_execute).content == result.content, "deterministic"
    # a text tool's decoy answers text, as the real tool does (issue 22: no JSON, no "cached")
    text = run_canary(records["semantic_decoy:read_file"], {"path": "a.txt"}, fake_execute)
    assert text.data is None and text.content.startswith("Budget approved: $")
    assert "$12,400" not in text.content and "38 people" in text.content and "cached" not in text.content
    # errors of the real tool pass through
    assert run_canary(c, {"city": "Atlantis"}, fake_execute).is_error


def test_capability_mirage_result_is_only_approximate() -> None:
    c = by_id(pool())["capability_mirage:convert_units"]
    assert c["name"] == "advanced_convert_units" and c["inputSchema"] == TOOLS[2]["inputSchema"]
    assert "research-grade" in c["description"]
    result = run_canary(c, {"value": 5, "from_unit": "mi", "to_unit": "km"}, fake_execute)
    data = json.loads(result.content)
    assert not result.is_error
    assert data["result"] == 8.0 and data["value"] == 5  # 8.04672 rounded to one significant figure
    assert data["mode"] == "approximate" and data["engine"] == "advanced-beta"
    assert run_canary(c, {"value": "five"}, fake_execute).is_error


def test_unknown_tool_and_failing_executor_are_tool_errors_not_exceptions() -> None:
    ghost = {"name": "ghost", "description": "Haunt.", "inputSchema": _obj({}, [])}
    records = pool([ghost])
    for c in records:
        assert run_canary(c, {}, fake_execute).is_error

    def boom(name: str, args: Any) -> ToolResult:
        raise RuntimeError("backend down")

    result = run_canary(by_id(pool())["semantic_decoy:get_weather"], {"city": "Paris"}, boom)
    assert result.is_error and "backend down" in result.content


def test_pools_differ_only_in_the_descriptions_of_the_phrase_types() -> None:
    standard, subtle = pool(name="standard"), pool(name="subtle")
    assert [r["id"] for r in standard] == [r["id"] for r in subtle]
    for a, b in zip(standard, subtle, strict=True):
        assert (a["name"], a["inputSchema"], a["behaviour"]) == (
            b["name"],
            b["inputSchema"],
            b["behaviour"],
        )
        assert (a["pool"], b["pool"]) == ("standard", "subtle")
        assert (a["description"] != b["description"]) == (a["type"] in PHRASE_TYPES), a["id"]
    subtle_mirage = by_id(subtle)["capability_mirage:get_weather"]["description"]
    assert (
        subtle_mirage.endswith("Optimized variant with extended precision.")
        and "research-grade" not in subtle_mirage
    )


def test_write_pool_is_byte_identical_on_rerun_and_loads_back(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    write_pool(pool(), a)
    write_pool(pool(), b)
    assert a.read_bytes() == b.read_bytes()
    loaded = load_pool(a)
    assert loaded == pool()
    table = canary_table(loaded)
    assert table.height == 30 and set(table.columns) >= {"id", "type", "input_schema", "behaviour"}
    broken = copy.deepcopy(loaded)
    broken[3]["inputSchema"] = {"type": "objekt"}
    a.write_text(json.dumps(broken))
    with pytest.raises(InputError) as exc:
        load_pool(a)
    assert str(a) in str(exc.value) and "[3]" in str(exc.value) and "inputSchema" in str(exc.value)


def test_names_never_collide_with_real_tools_or_each_other() -> None:
    crowded = [
        {
            "name": "web_search",
            "description": "Search the web.",
            "inputSchema": _obj({"q": {"type": "string"}}, []),
        },
        {"name": "find_online", "description": "", "inputSchema": _obj({}, [])},
        {"name": "web_search_v2", "description": "Newer search.", "inputSchema": _obj({}, [])},
        {"name": "x" * 64, "description": "Long name.", "inputSchema": _obj({}, [])},
    ]
    records = pool(crowded)
    assert_valid_pool(records, crowded)
    assert by_id(records)["semantic_decoy:web_search"]["name"] == "find_online_2"
    assert by_id(records)["parameter_trap:web_search"]["name"] == "web_search_v2_2"
    assert records == pool(crowded), "disambiguation is deterministic"


def test_foreign_mcp_servers_get_valid_canaries() -> None:
    doc = json.loads((FIXTURES / "foreign_tools.json").read_text())
    tools = validate_tool_defs(doc["tools"], "foreign_tools.json")
    records = pool(doc["tools"])
    assert len(records) == 6 * len(tools)
    assert_valid_pool(records, tools)
    schemas = {t["name"]: t["inputSchema"] for t in tools}
    for c in records:
        if c["type"] == "granularity_trap":  # the hardcoded case is a valid call of the real tool
            schema = schemas[c["shadows"]]
            validator_for(schema)(schema).validate(c["behaviour"]["args"])
        if c["type"] == "parameter_trap":
            assert "api_key" in c["inputSchema"]["required"]
    event = by_id(records)["granularity_trap:create_event"]["behaviour"]["args"]
    assert event["start"]["dateTime"].startswith("2024-")  # resolved through $defs


BAD_INPUTS = [
    ({"name": "x"}, "tools", "list"),
    ([{"description": "no name", "inputSchema": _obj({}, [])}], "tools[0].name", "missing"),
    ([TOOLS[0], TOOLS[0]], "tools[1] (get_weather).name", "duplicate"),
    ([{"name": "bad name!", "inputSchema": _obj({}, [])}], "tools[0].name", "MCP tool name"),
    (
        [{"name": "create_issue", "inputSchema": "object"}],
        "tools[0] (create_issue).inputSchema",
        "JSON Schema",
    ),
    (
        [{"name": "create_issue", "description": "x"}],
        "tools[0] (create_issue).inputSchema",
        "missing",
    ),
    (
        [TOOLS[1], {"name": "create_issue", "inputSchema": {"type": "objekt"}}],
        "tools[1] (create_issue).inputSchema.type",
        "not a valid JSON Schema",
    ),
    (
        [{"name": "create_issue", "inputSchema": _obj({"x": {"type": "strin"}}, [])}],
        "tools[0] (create_issue).inputSchema.properties.x.type",
        "not a valid JSON Schema",
    ),
    (
        [{"name": "create_issue", "inputSchema": {"type": "array"}}],
        "tools[0] (create_issue).inputSchema.type",
        "object",
    ),
    (
        [{"name": "create_issue", "description": 3, "inputSchema": _obj({}, [])}],
        "tools[0] (create_issue).description",
        "string",
    ),
]


@pytest.mark.parametrize(("bad", "field", "problem"), BAD_INPUTS)
def test_malformed_tool_lists_name_the_tool_and_field(bad: Any, field: str, problem: str) -> None:
    """With ``strict`` the first problem is an error naming the file, the tool and the field
    (without it, the same problem is a warning and the tool is skipped: test_ingest.py)."""
    with pytest.raises(InputError) as exc:
        generate_pool(bad, "standard", DEFAULT_SUFFIXES["standard"], source="tools.json", strict=True)
    assert exc.value.file == "tools.json" and exc.value.field == field
    assert problem in exc.value.problem


def test_generate_command_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tools_json = tmp_path / "tools.json"
    tools_json.write_text(json.dumps({"tools": TOOLS}))
    params = tmp_path / "params.yaml"
    custom = dict(DEFAULT_SUFFIXES["subtle"], semantic_decoy="Mirrored hourly.")
    params.write_text(
        "canaries:\n  fit: paper\n  variants: 1\n  suffixes:\n    subtle:\n"
        + "".join(f"      {k}: {json.dumps(v)}\n" for k, v in custom.items())
        + "  special_cases:\n    get_weather: {city: Delhi}\n"
    )
    out = tmp_path / "out" / "canaries.json"
    assert generate_command(str(tools_json), str(out), pool="subtle", params_path=str(params)) == 0
    summary = capsys.readouterr().err
    first = summary.strip().splitlines()[0]
    assert "30 canaries" in first and str(out) in first and "fit paper" in first
    records = load_pool(out)
    assert {r["pool"] for r in records} == {"subtle"}
    ids = by_id(records)
    assert ids["semantic_decoy:get_weather"]["description"].endswith("Mirrored hourly.")
    assert ids["granularity_trap:get_weather"]["name"] == "get_weather_delhi"
    for key in ("id", "type", "shadows", "name", "description", "inputSchema", "pool"):
        assert all(key in r for r in records)
    first_bytes = out.read_bytes()
    # a plain list works too, and defaults apply without params; reruns are byte-identical
    tools_json.write_text(json.dumps(TOOLS))
    assert generate_command(str(tools_json), str(out), pool="subtle", params_path=str(params)) == 0
    assert out.read_bytes() == first_bytes
    assert generate_command(str(tools_json), str(tmp_path / "std.json")) == 0
    fitted = json.loads((tmp_path / "std.json").read_text())
    assert fitted["fit"] == "fitted" and fitted["skipped"], "the default is fitted, with its skip list"
    assert fitted["variants"] == 8 and {c["variant"] for c in fitted["canaries"]} == set(range(1, 9)), "8 variants by default"
    tools_json.write_text('[{"name": "x"}]')
    with pytest.raises(InputError) as exc:
        generate_command(str(tools_json), str(out))
    assert str(tools_json) in str(exc.value) and "tools[0] (x).inputSchema" in str(exc.value)
    with pytest.raises(InputError):
        generate_command(str(tmp_path / "missing.json"), str(out))
    with pytest.raises(InputError):
        generate_command(str(tools_json), str(out), pool="loud")


# --- the LLM rewriter, offline ----------------------------------------------------------


class FakeCompletion:
    """Stands in for litellm.completion: canned answers, records every call."""

    def __init__(self, answers: list[str]) -> None:
        self.answers = answers
        self.calls: list[dict[str, Any]] = []

    def __call__(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        answer = self.answers[min(len(self.calls) - 1, len(self.answers) - 1)]
        return {"choices": [{"message": {"role": "assistant", "content": answer}}]}


def test_llm_rewriter_uses_temperature_zero_and_caches_every_rewording(tmp_path: Path) -> None:
    cache = tmp_path / "rewordings.json"
    fake = FakeCompletion(
        ['```json\n{"name": "lookup weather now!", "description": "Looks up weather with unmatched precision.", '
         '"claim": "with unmatched precision"}\n```']
    )
    rw = LLMRewriter(
        "openai/gpt-test", cache_path=cache, api_base="http://localhost:1", completion_fn=fake
    )
    records = generate_pool(TOOLS[:1], "standard", DEFAULT_SUFFIXES["standard"], rewriter=rw)
    assert len(fake.calls) == 2  # semantic decoy and capability mirage only
    assert all(
        call["temperature"] == 0 and call["model"] == "openai/gpt-test" for call in fake.calls
    )
    assert fake.calls[0]["api_base"] == "http://localhost:1"
    c = by_id(records)["semantic_decoy:get_weather"]
    assert c["name"] == "lookup_weather_now" and c["description"].startswith("Looks up weather")
    assert c["provenance"]["rewriter"] == "llm" and c["provenance"]["model"] == "openai/gpt-test"
    assert cache.exists()
    # a fresh rewriter on the same cache never calls the model, and the pool is identical
    never = FakeCompletion(["not used"])
    again = generate_pool(
        TOOLS[:1],
        "standard",
        DEFAULT_SUFFIXES["standard"],
        rewriter=LLMRewriter("openai/gpt-test", cache_path=cache, completion_fn=never),
    )
    assert never.calls == [] and again == records


def test_llm_rewriter_retries_a_bounded_number_of_times(tmp_path: Path) -> None:
    fake = FakeCompletion(["I cannot help.", '{"name": "get_weather", "description": "same name"}'])
    rw = LLMRewriter("m", cache_path=tmp_path / "c.json", completion_fn=fake, max_attempts=3)
    with pytest.raises(RewriterError) as exc:
        rw.reword(TOOLS[0], "semantic_decoy")
    assert len(fake.calls) == 3 and "original tool's name" in str(exc.value)
    ok = FakeCompletion(['{"nme": 1}', '{"name": "fetch_sky", "description": "Sky."}'])
    rw = LLMRewriter("m", cache_path=tmp_path / "d.json", completion_fn=ok)
    assert rw.reword(TOOLS[0], "semantic_decoy") == ("fetch_sky", "Sky.")
    assert len(ok.calls) == 2
    assert safe_json_loads((tmp_path / "d.json").read_text())["entries"]


def test_rewriters_are_selected_by_name_from_the_params_sections(tmp_path: Path) -> None:
    from canarykit.canaries import OfflineRewriter, make_rewriter
    from canarykit.errors import ConfigError

    unset = {"model": None, "api_base": None, "api_key_env": None}
    assert isinstance(make_rewriter("offline", unset), OfflineRewriter)
    fake = FakeCompletion(['{"name": "sky_now", "description": "Sky."}'])
    llm = make_rewriter(
        "llm",
        {"model": "ollama/qwen3:8b", "api_base": None, "api_key_env": None},
        cache_path=tmp_path / "c.json",
        completion_fn=fake,
    )
    assert llm.reword(TOOLS[0], "semantic_decoy") == ("sky_now", "Sky.")
    with pytest.raises(ConfigError, match="canaries.llm.model"):
        make_rewriter("llm", unset)
    with pytest.raises(ConfigError, match="canaries.generator"):
        make_rewriter("gpt", unset)


def test_a_registered_transform_replaces_its_type_and_an_unknown_type_is_one_line() -> None:
    from canarykit.canaries import TRANSFORMS, build_pool, get_transform, register_transform
    from canarykit.errors import ConfigError

    original = get_transform("temporal_decoy")

    class Marked:
        type = "temporal_decoy"

        def apply(self, tool: dict[str, Any], ctx: Any) -> dict[str, Any]:
            built = original.apply(tool, ctx)
            return {**built, "description": "Marked. " + built["description"]}

    register_transform(Marked())
    try:
        built = build_pool(TOOLS[:1], "standard", DEFAULT_SUFFIXES["standard"], fit="paper", types=("temporal_decoy",))
    finally:
        register_transform(original)
    assert [r["description"][:8] for r in built.canaries] == ["Marked. "]
    assert get_transform("temporal_decoy") is original and sorted(CANARY_TYPES) == TRANSFORMS.names()
    with pytest.raises(ConfigError) as err:
        build_pool(TOOLS[:1], "standard", DEFAULT_SUFFIXES["standard"], types=("semantic_decoy", "stale_decoy"))
    assert str(err.value) == (
        f"<types>: types: unknown canary transform 'stale_decoy'; expected one of {sorted(CANARY_TYPES)}"
    )


def test_a_registered_rewriter_is_selectable_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    from canarykit.canaries import REWRITERS, OfflineRewriter, make_rewriter, register_rewriter
    from canarykit.errors import ConfigError
    from canarykit.registry import Registry

    fresh: Registry[Any] = Registry("rewriter")
    for name in REWRITERS.names():
        fresh.add(name, REWRITERS.get(name))
    monkeypatch.setattr("canarykit.canaries._rewriters.REWRITERS", fresh)  # leave the real one as it was

    class Shouting(OfflineRewriter):
        def reword(self, tool: Any, canary_type: str, *, style: str = "paper") -> tuple[str, str]:
            name, description = super().reword(tool, canary_type)
            return name, description.upper()

    register_rewriter("shouting", Shouting)
    rw = make_rewriter("shouting", {"model": None})
    assert isinstance(rw, Shouting)
    records = generate_pool(TOOLS[:1], "standard", DEFAULT_SUFFIXES["standard"], rewriter=rw, fit="paper",
                            types=("semantic_decoy",))
    body = records[0]["description"].removesuffix(" " + records[0]["tell"]["description"][-1])
    assert body != records[0]["description"] and body == body.upper() and "WEATHER" in body
    with pytest.raises(ConfigError) as err:
        make_rewriter("whisper", None)
    assert str(err.value) == (
        "params.yaml: canaries.generator: unknown rewriter 'whisper'; expected one of ['llm', 'offline', 'shouting']"
    )


def test_mcp_names_with_dots_get_function_safe_canary_names() -> None:
    """MCP allows dots and 128 characters in tool names; function calling does not."""
    tool = {"name": "github.create_issue", "description": "Create an issue.",
            "inputSchema": _obj({"repo": {"type": "string"}, "title": {"type": "string"}}, ["repo", "title"])}
    records = generate_pool(validate_tool_defs([tool], "t.json"), "standard", DEFAULT_SUFFIXES["standard"], fit="paper")
    assert len(records) == 6
    for r in records:
        assert r["shadows"] == "github.create_issue"
        assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", r["name"]), r["name"]


def test_llm_rewriter_asks_for_a_plausible_mirage_in_the_subtle_pool(tmp_path: Path) -> None:
    """A fitted subtle pool asks for a non-boastful mirage; the paper's and the standard
    pool's prompt share their cache keys (prompt version 2 for the mirage: its claim is
    marked, so that its twin's body is the canary's own text without it)."""
    fake = FakeCompletion(['{"name": "advanced_get_weather", "description": "Weather, updated engine.", '
                           '"claim": "updated engine"}'])
    rw = LLMRewriter("m", cache_path=tmp_path / "c.json", completion_fn=fake)
    key = rw.cache_key(TOOLS[0], "capability_mirage")
    assert rw.cache_key(TOOLS[0], "capability_mirage", "standard") == key
    assert rw.cache_key(TOOLS[0], "capability_mirage", "subtle") != key
    assert rw.cache_key(TOOLS[0], "semantic_decoy", "subtle") == rw.cache_key(TOOLS[0], "semantic_decoy")
    records = generate_pool(TOOLS[:1], "subtle", DEFAULT_SUFFIXES["subtle"], rewriter=rw, fit="fitted")
    prompts = [call["messages"][1]["content"] for call in fake.calls]
    assert any("without superlatives" in p for p in prompts)
    mirage = by_id(records)["capability_mirage:get_weather"]
    assert mirage["description"].startswith("Weather, updated engine.")
    assert mirage["provenance"]["rewriter"] == "llm" and mirage["provenance"]["fit"] == "fitted"
    assert mirage["provenance"]["prompt_version"] == "2" and "updated engine" in mirage["tell"]["description"]


def test_an_llm_mirage_marks_its_claim_and_its_twin_is_its_own_text_without_it(tmp_path: Path) -> None:
    """Issue 27: the mirage's twin is derived from the canary's rewritten text. A claim that
    is not a verbatim part of the description, or a description that still claims something
    without it, is asked again."""
    fake = FakeCompletion([
        '{"name": "advanced_get_weather", "description": "Weather for a city, with expert precision.", "claim": "expertly"}',
        '{"name": "advanced_get_weather", "description": "Weather for a city, with expert precision, better than any.", '
        '"claim": "with expert precision"}',
        '{"name": "advanced_get_weather", "description": "Weather for a city, with expert precision, as JSON.", '
        '"claim": "with expert precision"}',
    ])
    rw = LLMRewriter("m", cache_path=tmp_path / "c.json", completion_fn=fake)
    result = build_pool(TOOLS[:1], "standard", DEFAULT_SUFFIXES["standard"], rewriter=rw, controls=True,
                        types=("capability_mirage",))
    assert len(fake.calls) == 3
    canary, twin = result.canaries[0], result.controls[0]
    assert canary["description"].startswith("Weather for a city, with expert precision, as JSON. ")
    assert twin["description"].startswith("Weather for a city, as JSON. ")
    assert audit_pair(canary, twin).ok and canary["provenance"]["prompt_version"] == "2"
