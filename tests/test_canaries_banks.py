"""Wording banks (issue 27 items 1 and 5): per type 16 wordings of one property at one
severity, 8 development entries (the ones the reference agents' readers were tuned against)
and 8 held-back ones (written separately; the default study draws from these only), every
entry held to its type's rules; a study draws K per type at random with a recorded seed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from canarykit import tools
from canarykit.canaries import (
    BANKS,
    DEFAULT_PART,
    DEFAULT_WORDING_SEED,
    MAX_VARIANTS,
    NAME_PARTS,
    SEVERITY,
    build_pool,
    check_bank,
    check_entry,
    check_name_parts,
    draw_wordings,
    entry,
    entry_by_id,
    part_ids,
    study_pool,
)
from canarykit.canaries._bank_development import DEVELOPMENT
from canarykit.canaries._bank_heldback import HELDBACK
from canarykit.errors import InputError
from canarykit.study.config import load_params
from canarykit.types import CANARY_TYPES

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("ctype", CANARY_TYPES)
def test_each_bank_holds_eight_development_and_eight_held_back_entries_that_keep_the_rules(ctype: str) -> None:
    bank = BANKS[ctype]
    assert [e.id for e in bank] == [f"{ctype}/{i:02d}" for i in range(1, 17)]
    assert [e.part for e in bank] == ["development"] * 8 + ["heldback"] * 8
    assert part_ids(ctype, "heldback") == tuple(f"{ctype}/{i:02d}" for i in range(9, 17))
    assert check_bank(ctype, [*DEVELOPMENT[ctype], *HELDBACK[ctype]]) == [], "every rule, distinct across both parts"
    assert SEVERITY[ctype] and entry(ctype, 9) is entry_by_id(f"{ctype}/09") is bank[8]
    if ctype in NAME_PARTS:
        assert all(e.canary_name and e.twin_name for e in bank)
    assert check_name_parts() == [], "no two types' records can collide by name"


def test_the_rules_reject_what_a_twin_must_not_say() -> None:
    good = dict(DEVELOPMENT["temporal_decoy"][3])
    assert check_entry("temporal_decoy", good) == []
    dated = {**good, "twin": {**good["twin"], "standard": "Release of November 2026, with its fields."}}
    assert any("undated" in p for p in check_entry("temporal_decoy", dated))
    selling = {**good, "twin": {**good["twin"], "standard": "Release with live, up-to-date fields and units."}}
    assert any("selling point" in p for p in check_entry("temporal_decoy", selling))
    assert any("within" in p or "apart" in p for p in check_entry(
        "temporal_decoy", {**good, "twin": {**good["twin"], "standard": "Release."}}))
    assert any("year" in p for p in check_entry("temporal_decoy", {**good, "canary_name": "release"}))
    prereq = dict(DEVELOPMENT["prerequisite_blindness"][0])
    auth = {**prereq, "canary": {"standard": "Covers private resources of every account; needs a token."}}
    assert any("authentication" in p for p in check_entry("prerequisite_blindness", auth))
    trap = dict(DEVELOPMENT["parameter_trap"][0])
    assert any("{parameter}" in p for p in check_entry("parameter_trap", {**trap, "canary": {"standard": "Needs a key."}}))
    assert any("not a key" in p for p in check_entry("semantic_decoy", {**DEVELOPMENT["semantic_decoy"][0], "x": 1}))


def test_one_severity_per_type() -> None:
    """Every temporal wording dates the data to the same date; every other type's entries
    vary the words of one property (the old design varied the year and the sync interval)."""
    for e in BANKS["temporal_decoy"]:
        for style in ("standard", "subtle"):
            years = set(re.findall(r"(?:19|20)\d\d", e.phrasing(style)))
            assert not years, e.id  # the date comes only through {year}, {version}, {month}
            assert "{year}" in e.phrasing(style) or "{version}" in e.phrasing(style)
        assert "2023" in e.canary_name.split("_")
    for e in BANKS["semantic_decoy"]:  # about a day: never a week or a month, never "hourly"
        for style in ("standard", "subtle"):
            assert not re.search(r"\b(?:weeks?|weekly|months?|monthly|hourly)\b", e.phrasing(style), re.I), e.id


def test_the_draw_is_seeded_from_the_held_back_part_and_k_beyond_it_is_one_line() -> None:
    drawn = draw_wordings(DEFAULT_WORDING_SEED, 3)
    assert drawn == draw_wordings(DEFAULT_WORDING_SEED, 3) and DEFAULT_PART == "heldback"
    for t, ids in drawn.items():
        assert len(set(ids)) == 3 and set(ids) <= set(part_ids(t, "heldback"))
        assert draw_wordings(DEFAULT_WORDING_SEED, 8)[t][:3] == ids, "K's draw is a prefix of K + 1's"
    assert any(draw_wordings(1, 3)[t] != drawn[t] for t in CANARY_TYPES)
    # over many seeds every held-back entry is drawn, none of the development ones
    seen = {w for seed in range(60) for ids in draw_wordings(seed, 3).values() for w in ids}
    assert seen == {w for t in CANARY_TYPES for w in part_ids(t, "heldback")}
    assert MAX_VARIANTS == 8
    with pytest.raises(InputError) as exc:
        draw_wordings(DEFAULT_WORDING_SEED, 9)
    assert str(exc.value) == ("params.yaml: canaries.variants: expected a whole number from 1 to 8 (the heldback part "
                              "of the semantic_decoy bank holds 8 wordings), got 9")


def test_records_carry_their_entry_and_the_pool_its_draw() -> None:
    cfg = load_params(ROOT / "params.yaml")["canaries"]
    listed = build_pool(tools.mcp_definitions(), "standard", cfg["suffixes"]["standard"], controls=True,
                        variants=cfg["variants"], wording_seed=cfg["wording_seed"])
    assert listed.wording_seed == cfg["wording_seed"] and listed.document()["wordings"] == listed.wordings
    assert listed.wordings == {t: list(ids) for t, ids in draw_wordings(cfg["wording_seed"], cfg["variants"]).items()}
    twins = {k["control_of"]: k for k in listed.controls}
    for c in listed.canaries:
        assert re.fullmatch(r"[a-z_]+/\d\d", c["wording"]) and c["wording"] == listed.wordings[c["type"]][c["variant"] - 1]
        assert twins[c["id"]]["wording"] == c["wording"]
    # explicit wordings (the dose condition's per-(task, seed) draws use them) and their errors
    given = build_pool(tools.mcp_definitions()[:1], "standard", cfg["suffixes"]["standard"],
                       wordings={"capability_mirage": ["capability_mirage/12", "capability_mirage/03"]},
                       types=("capability_mirage",))
    assert [c["wording"] for c in given.canaries] == ["capability_mirage/12", "capability_mirage/03"]
    assert given.wording_seed is None
    with pytest.raises(InputError, match=r"wordings\.capability_mirage: no capability_mirage bank entry 'semantic_decoy/01'"):
        build_pool(tools.mcp_definitions()[:1], "standard", {}, wordings={"capability_mirage": ["semantic_decoy/01"]},
                   types=("capability_mirage",))


def test_the_study_pool_records_the_params_seed_and_generate_canaries_reads_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from canarykit.canaries import ingest_tools, load_pool_document
    from canarykit.tasks.tasks import load_tasks

    tasks = load_tasks(ROOT / "data" / "tasks.json")[:6]
    listed = ingest_tools(tools.mcp_definitions(), "tools.json", strict=True)
    made = study_pool(listed, tasks, "subtle", fit="fitted", suffixes={}, control_suffixes={}, special_cases=None,
                      variants=2, wording_seed=11)
    assert made.wording_seed == 11 and made.wordings == {t: list(ids) for t, ids in draw_wordings(11, 2).items()}
    tools_json, params = tmp_path / "tools.json", tmp_path / "params.yaml"
    tools_json.write_text(__import__("json").dumps(tools.mcp_definitions()))
    params.write_text(yaml.safe_dump({"canaries": {"variants": 2, "wording_seed": 11}}))
    out = tmp_path / "pool.json"
    run = subprocess.run([sys.executable, "-m", "canarykit", "generate-canaries", str(tools_json), "-o", str(out),
                          "--params", str(params), "--controls"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    doc = load_pool_document(out)
    assert doc["wording_seed"] == 11 and doc["wordings"] == made.wordings
    params.write_text(yaml.safe_dump({"canaries": {"variants": 12}}))
    from canarykit.cli import main

    code = main(["generate-canaries", str(tools_json), "-o", str(out), "--params", str(params)])
    assert code == 2 and capsys.readouterr().err.strip().splitlines() == [
        f"canarykit: error: {params}: canaries.variants: expected a whole number from 1 to 8 (the heldback part of the "
        "semantic_decoy bank holds 8 wordings), got 12"]
