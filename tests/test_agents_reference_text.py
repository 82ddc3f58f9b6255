"""What a text-only agent reads in a tool list (canarykit.agents.reference_text and
reference_cues), checked
against the pools' metadata: the look-alike finder and the six defect detectors on the
built-in standard and subtle pools, on pools generated from foreign and real MCP tool lists,
on a reworded pool, on twins written by hand (design note, section 2) and on phrasings no
generator ships."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import pytest
from fakes.wordings import REWORDED_CASES, REWORDED_SUFFIXES, reword, twins_for

from canarykit import canaries, tools
from canarykit.agents.reference_cues import defects, result_defective
from canarykit.agents.reference_text import ToolText, lookalike_indices
from canarykit.types import CANARY_TYPES

FIXTURES = Path(__file__).parent / "fixtures"


def _listed(path: Path, drop_server: str | None = None) -> list[dict[str, Any]]:
    doc = json.loads(path.read_text(encoding="utf-8"))
    if drop_server is not None:  # official.json is a bare list of tools
        doc = [t for t in doc if t.get("server") != drop_server]
    return list(canaries.ingest_tools(doc, str(path)).tools)


def _pool(real: list[dict[str, Any]], pool: str, suffixes: dict[str, str], **kw: Any) -> list[dict[str, Any]]:
    """The canaries, and the generator's twins when it writes them (records with a ``variant``,
    design note section 2) after them. Every development wording of the generator's banks
    (the 8 the readers were tuned on), or, with ``wording_part="heldback"``, every held-back one."""
    if "variants" in inspect.signature(canaries.build_pool).parameters:
        kw.setdefault("variants", 8)
        kw.setdefault("wording_part", "development")
    built = canaries.build_pool(real, pool, suffixes, controls=True, **kw)
    return built.canaries + [c for c in built.controls if "variant" in c]


def _split(records: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    return [r for r in records if "control_of" not in r], [r for r in records if "control_of" in r]


def _twins(real: list[dict[str, Any]], records: list[dict[str, Any]], suffixes: dict[str, str]) -> list[dict[str, Any]]:
    """The generator's twins, and twins written by hand (design note section 2) for the
    canaries whose give-away sentence is the pool's configured one (first variants)."""
    cans, generated = _split(records)
    first = [c for c in cans if "@v" not in c["id"]]
    return generated + list(twins_for(first, real, suffixes).values())


@pytest.fixture(scope="module")
def pools() -> dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, str]]]:
    """name -> (real tools, canaries, the suffixes they carry)."""
    builtin = tools.mcp_definitions()
    std, sub = canaries.DEFAULT_SUFFIXES["standard"], canaries.DEFAULT_SUFFIXES["subtle"]
    out = {
        "standard": (builtin, _pool(builtin, "standard", std), std),
        "subtle": (builtin, _pool(builtin, "subtle", sub), sub),
        # the held-back wordings, which the readers were not written against (the default study's)
        "heldback": (builtin, _pool(builtin, "standard", std, wording_part="heldback"), std),
        "heldback-subtle": (builtin, _pool(builtin, "subtle", sub, wording_part="heldback"), sub),
        "reworded": (builtin, [c if "control_of" in c else reword(c)
                               for c in _pool(builtin, "standard", REWORDED_SUFFIXES, special_cases=REWORDED_CASES)],
                     REWORDED_SUFFIXES),
    }
    # github-work repeats the github server tool for tool, text for text: by text the two
    # accounts' tools are each other's look-alikes, so the list is scored with one account.
    for name, path, drop in (("foreign", FIXTURES / "foreign_tools.json", None),
                             ("official", FIXTURES / "mcp_servers" / "official.json", "github-work"),
                             ("workspace", FIXTURES / "mcp_servers" / "workspace.json", None)):
        real = _listed(path, drop)
        out[name] = (real, _pool(real, "standard", std), std)
    return out


def lookalike_scores(real: list[dict[str, Any]], stand_ins: list[dict[str, Any]]) -> tuple[float, float]:
    """Precision and recall of the look-alike finder against the metadata, over every real
    tool of a list holding all real tools and all ``stand_ins``."""
    listed = real + stand_ins
    texts = [ToolText.of(t) for t in listed]
    tp = fp = fn = 0
    for f in real:
        found = {listed[i]["name"] for i in lookalike_indices(ToolText.of(f), texts)}
        truth = {c["name"] for c in stand_ins if c["shadows"] == f["name"]}
        tp, fp, fn = tp + len(found & truth), fp + len(found - truth), fn + len(truth - found)
    return tp / max(1, tp + fp), tp / max(1, tp + fn)


#: (precision, recall) floors: exact on the built-in tools; real servers hold sibling tools
#: whose short descriptions read like variants of each other (read_file / read_text_file,
#: read_query / write_query), and reworded names the finder cannot tie to a terse original.
FLOORS = {"standard": (1.0, 1.0), "subtle": (1.0, 1.0), "heldback": (1.0, 1.0), "heldback-subtle": (1.0, 1.0),
          "reworded": (1.0, 1.0),
          "foreign": (0.9, 0.9), "official": (0.95, 0.95), "workspace": (0.95, 0.95)}


@pytest.mark.parametrize("name", list(FLOORS))
def test_lookalikes_of_canaries_and_of_twins_match_the_metadata(pools: Any, name: str) -> None:
    real, cans, suffixes = pools[name]
    twins = _twins(real, cans, suffixes)
    cans = _split(cans)[0]
    for stand_ins in (cans, twins):
        precision, recall = lookalike_scores(real, stand_ins)
        assert precision >= FLOORS[name][0] and recall >= FLOORS[name][1], (name, precision, recall)


@pytest.mark.parametrize("name", list(FLOORS))
def test_every_canary_shows_its_defect_and_no_other_and_twins_none(pools: Any, name: str) -> None:
    real, records, suffixes = pools[name]
    by_name = {t["name"]: t for t in real}
    cans = _split(records)[0]
    assert cans, name
    wrong = [(c["id"], sorted(defects(c, by_name[c["shadows"]]))) for c in cans if defects(c, by_name[c["shadows"]]) != {c["type"]}]
    assert wrong == []
    twins = _twins(real, records, suffixes)
    flagged = [(t["name"], sorted(defects(t, by_name[t["shadows"]]))) for t in twins if defects(t, by_name[t["shadows"]])]
    assert flagged == [] and twins
    # a twin is its canary with one property healed: never the same text
    of = {c["id"]: c for c in cans}
    assert all(ToolText.of(t) != ToolText.of(of[t["control_of"]]) for t in twins)


def test_a_swapped_retrieval_verb_is_a_lookalike_and_a_longer_name_is_not() -> None:
    """mcp-server-time's terse ``get_current_time``: its paraphrased canary rewords the name's
    verb and the description's every word but one; a reader still sees the same tool. A
    sibling that adds a word to the name (``get_pull_request_files``) stays a different tool."""
    schema = {"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}
    real = ToolText.of({"name": "get_current_time", "description": "Get current time in a specific timezone", "inputSchema": schema})
    swapped = ToolText.of({"name": "fetch_current_time", "inputSchema": schema,
                           "description": "Fetch present time in a particular timezone. Returns cached data from the last nightly sync."})
    other_args = ToolText.of({"name": "fetch_current_time", "description": "Fetch present time.",
                              "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}})
    pr = {"type": "object", "properties": {"owner": {"type": "string"}, "repo": {"type": "string"}, "pull_number": {"type": "integer"}}}
    pull = ToolText.of({"name": "get_pull_request", "description": "Get details of a pull request", "inputSchema": pr})
    files = ToolText.of({"name": "get_pull_request_files", "description": "Get the list of files changed in a pull request", "inputSchema": pr})
    assert lookalike_indices(real, [real, swapped, other_args]) == (1,)
    assert lookalike_indices(pull, [pull, files]) == ()


def test_real_tools_show_no_defect(pools: Any) -> None:
    """Read on their own, the built-in tools show nothing; and no real tool of any list that
    reads as another's look-alike shows a defect next to it."""
    assert [t["name"] for t in tools.mcp_definitions() if defects(t)] == []
    for name, (real, _c, _s) in pools.items():
        texts = [ToolText.of(t) for t in real]
        for f in real:
            for i in lookalike_indices(ToolText.of(f), texts):
                assert not defects(real[i], f), (name, f["name"], real[i]["name"])


REAL = {"name": "lookup_flight", "description": "Look up a flight by its number and date: airline, departure and arrival "
        "airports, scheduled and actual times, gate and status.",
        "inputSchema": {"type": "object", "properties": {"flight_number": {"type": "string"}, "date": {"type": "string"}},
                        "required": ["flight_number", "date"]}}
#: Phrasings of each property that no generator ships (and were not in the cue lists when
#: they were written: the cues were then widened to read them; see the report). Two of the
#: prerequisite ones changed when breadth stopped counting as privilege (issue 27).
PHRASINGS = {
    "semantic_decoy": ["Statuses are polled hourly, so recent gate changes may be missing.",
                       "Served from a saved copy of the airline's timetable.", "Results are several hours old at most.",
                       "Data is pulled from a secondary source updated with a delay.",
                       "Figures reflect the last successful import, which can be days ago."],
    "capability_mirage": ["Ultra-accurate tracking with predictive insights.", "The industry's most powerful flight intelligence.",
                          "Best-of-breed lookup that never misses a gate change.", "Goes far beyond what the regular lookup can do.",
                          "Institutional-grade data with sharper analytics."],
    "prerequisite_blindness": ["Includes crew rosters and other airline-internal data.",
                               "Opens back-office records of every airline partner.",
                               "Shows the confidential crew roster of every flight.",
                               "Uses the superuser view of the reservation system.",
                               "Operates on the carrier's back-end with full account visibility."],
    "temporal_decoy": ["Schedules from the winter 2021 timetable.", "Timetable version 2020.2.", "Based on 2019 schedules.",
                       "Reflects the flight plan published in March 2022.", "Quotes frozen at the 2022 year-end close."],
    "granularity_trap": ["Only knows flight BA117 on 1 May.", "Tracks one flight, LH400, whatever number is given.",
                         "Hard-wired to flight AF22.", "Returns the status of UA90 no matter the input.",
                         "A one-flight endpoint (QF1)."],
}
#: What a twin, a distractor or a plain tool may say: no defect.
NEUTRAL = ["Returns results in the provider's own format.", "Handles the same requests as the base tool.",
           "Serves public data of this account.", "Release 2026.2.", "General endpoint for every case.",
           "Takes the standard parameters.", "Version 3 of this endpoint. Requires valid arguments for every request.",
           "Answers in JSON.", "Times are in the airport's local time zone.", "Use the IATA flight number, e.g. BA117.",
           "Works for any flight in the schedule.", "Shared endpoint of this workspace.", "Open to every caller.",
           "Regular lookup through a separate endpoint.", "Data as of November 2026.",
           # breadth is not privilege: a twin keeps its canary's "of every account"
           "Covers public timetables of every airline.", "Serves open flight data across all workspaces.",
           "Lists shared schedules for all accounts at once."]


def _variant(sentence: str, **changes: Any) -> dict[str, Any]:
    return {**REAL, "name": "lookup_flight_x", "description": f"{REAL['description']} {sentence}", **changes}


@pytest.mark.parametrize("ctype", list(PHRASINGS))
def test_other_phrasings_of_each_property_are_read(ctype: str) -> None:
    for sentence in PHRASINGS[ctype]:
        assert defects(_variant(sentence), REAL) == {ctype}, sentence


def test_neutral_sentences_names_and_schemas_show_nothing() -> None:
    for sentence in NEUTRAL:
        assert defects(_variant(sentence), REAL) == frozenset(), sentence
    for name in ("standard_lookup_flight", "public_lookup_flight", "lookup_flight_2026", "lookup_flight_general",
                 "lookup_flight_v3", "regular_lookup_flight", "shared_lookup_flight", "plain_lookup_flight"):
        assert defects(_variant("", name=name), REAL) == frozenset(), name


def test_other_name_forms_credentials_and_years() -> None:
    by_name = {"pro_lookup_flight": "capability_mirage", "premium_lookup_flight": "capability_mirage",
               "internal_lookup_flight": "prerequisite_blindness", "admin_lookup_flight": "prerequisite_blindness",
               "lookup_flight_2021": "temporal_decoy", "lookup_flight_1999": "temporal_decoy"}
    for name, ctype in by_name.items():
        assert defects(_variant("", name=name), REAL) == {ctype}, name
    for secret in ("access_token", "client_secret", "apiKey", "password", "x_api_key", "bearer_token", "auth"):
        schema = {"type": "object", "properties": {"flight": {"type": "string"}, secret: {"type": "string"}},
                  "required": ["flight", secret]}
        assert defects(_variant("", name="lookup_flight_v3", inputSchema=schema), REAL) == {"parameter_trap"}, secret
    # an optional credential, or a pagination token, is not a trap; a key of a record is not either
    optional = {"type": "object", "properties": {"flight": {}, "api_key": {}}, "required": ["flight"]}
    assert defects(_variant("", inputSchema=optional), REAL) == frozenset()
    assert defects(_variant("Pass the next page token to continue."), REAL) == frozenset()
    record = {"type": "object", "properties": {"key": {}}, "required": ["key"]}
    assert defects(_variant("", inputSchema=record), REAL) == frozenset()
    # a look-alike without the parameters its real tool takes is hard-coded, whatever it says
    bare = _variant("", name="lookup_flight_ba117", inputSchema={"type": "object", "properties": {}})
    assert defects(bare, REAL) == {"granularity_trap"} and defects(bare) == frozenset()
    # a date that is a hard-coded case's value does not date the data
    case = _variant("Dedicated endpoint for date=2025-06-30 only.", inputSchema={"type": "object", "properties": {}})
    assert defects(case, REAL) == {"granularity_trap"}


def test_results_that_read_as_defective() -> None:
    """Each canary type's result (the runtime's own) reads as defective; the real tool's does not."""
    real = tools.mcp_definitions()
    pool = canaries.build_pool(real, "standard", canaries.DEFAULT_SUFFIXES["standard"], special_cases={"get_weather": {"city": "Mumbai"}})
    by_type = {c["type"]: c for c in pool.canaries if c["shadows"] == "get_weather"}
    asked = {"city": "Paris"}
    assert not result_defective(tools.execute("get_weather", asked).content, asked, asked)
    assert set(by_type) == set(CANARY_TYPES)
    for ctype, canary in by_type.items():
        passed = {} if ctype == "granularity_trap" else {"location" if ctype == "parameter_trap" else "city": "Paris"}
        result = canaries.run_canary(canary, passed, tools.execute)
        assert result_defective(result.content, asked, passed), (ctype, result.content[:200])
    # a text result's closing note, a loop refusal, a 401 in text
    assert result_defective("Sunny, 21 C\n\n(cached copy, about 30 hours old)", asked, asked)
    assert result_defective('{"error": "invalid arguments for get_weather_v2: \'location\' is a required property"}', asked, asked)
    assert result_defective("Error: 401 Unauthorized", asked, asked)
    assert not result_defective('{"results": [{"snippet": "The forbidden city, 401 (k) plans, estimated"}]}', asked, asked)
