"""Wording variants (issue 20 item 1, issue 27 item 1; the dose condition of issue 21):
``canaries.variants: K`` puts K wordings per type, drawn from the held-back bank with a
recorded seed, in the pool; the dose condition takes k canaries of a type, or k neutral
look-alikes; suffixes configure the variants, and bad twin suffixes are refused. The banks
themselves: tests/test_canaries_banks.py."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from fakes.cues import TYPE_CUE, cues

from canarykit import tools
from canarykit.canaries import (
    DEFAULT_SUFFIXES,
    OLD_DATE,
    bank_canaries,
    build_pool,
    distractors,
    entry_by_id,
    generate_command,
    part_ids,
    run_canary,
    suite_from_tasks,
)
from canarykit.errors import InputError
from canarykit.tasks.tasks import load_tasks
from canarykit.types import CANARY_TYPES

ROOT = Path(__file__).resolve().parents[1]
REAL = {t["name"]: t for t in tools.mcp_definitions()}


SUITE = suite_from_tasks(load_tasks(ROOT / "data" / "tasks.json"), "tasks", tools.execute)


def pool(variants: int, **kw: Any) -> Any:
    """The study's pool of our tools (granularity cases checked against the task suite)."""
    kw.setdefault("suffixes", DEFAULT_SUFFIXES["standard"])
    return build_pool(tools.mcp_definitions(), "standard", kw.pop("suffixes"), controls=True, variants=variants,
                      special_cases={"get_forecast": {"city": "Mumbai", "days": 3}}, suite=SUITE, **kw)


def test_k_variants_are_k_drawn_wordings_of_one_property() -> None:
    """Each (tool, type) gets one canary per drawn wording (variant i: the i-th entry drawn,
    all from the held-back part), distinct in name and text, with one defect and its cue;
    a granularity trap's wordings reword one case."""
    result = pool(8)
    by: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for c in result.canaries:
        by.setdefault((c["shadows"], c["type"]), []).append(c)
    twins = {k["control_of"]: k for k in result.controls}
    for (tool, ctype), found in by.items():
        assert [c["variant"] for c in found] == list(range(1, 9)), (tool, ctype)
        assert [c["wording"] for c in found] == result.wordings[ctype]
        assert set(result.wordings[ctype]) == set(part_ids(ctype, "heldback"))
        for field in ("name", "description"):
            assert len({c[field] for c in found}) == len(found), (tool, ctype, field)
            assert len({twins[c["id"]][field] for c in found}) == len(found), (tool, ctype, field, "twins")
        assert len({c["behaviour"]["kind"] for c in found}) == 1, "the same defect in every variant"
        assert len({json.dumps(c["behaviour"].get("args"), sort_keys=True) for c in found}) == 1, "one case"
        for c in found:
            assert TYPE_CUE[ctype] in {k.split(":", 1)[0] for k in cues(c) - cues(REAL[tool])}, c["description"]
    assert sum(1 for (_, t) in by if t == "granularity_trap") == 6


def test_the_draw_is_seeded_recorded_and_k_is_a_prefix_of_k_plus_one() -> None:
    one, three = pool(1), pool(3)
    assert len(one.canaries) == 57 and all(re.fullmatch(rf"{c['type']}:{c['shadows']}", c["id"]) for c in one.canaries)
    assert {c["variant"] for c in one.canaries} == {1} and one.wording_seed == three.wording_seed == 20261130
    assert [k["id"] for k in one.controls] == [f"control:{c['id']}" for c in one.canaries]
    assert {t: ids[:1] for t, ids in three.wordings.items()} == one.wordings, "the draw for K is a prefix of K + 1's"
    first = [c for c in three.canaries if c["variant"] == 1]
    assert first == one.canaries, "variant 1 of a K-variant pool is the one-variant pool"
    assert [k for k in three.controls if k["variant"] == 1] == one.controls
    later = [c for c in three.canaries if c["variant"] > 1]
    assert all(c["id"] == f"{c['type']}:{c['shadows']}@v{c['variant']}" for c in later)
    assert len(three.canaries) == len(three.controls) == 57 * 3 and len({c["name"] for c in three.canaries}) == len(three.canaries)
    other = pool(3, wording_seed=7)
    assert other.wording_seed == 7 and other.wordings != three.wordings
    assert pool(3).wordings == three.wordings, "the same seed, the same draw"
    # every tool given an entry carries its id
    for wid in {c["wording"] for c in three.canaries}:
        assert len({c["variant"] for c in three.canaries if c["wording"] == wid}) == 1


def test_bank_canaries_give_the_dose_condition_k_distinct_canaries() -> None:
    forecast = REAL["get_forecast"]
    taken = list(REAL)
    for ctype in CANARY_TYPES:
        got = bank_canaries(forecast, ctype, 8, taken=taken)
        assert len(got) == 8, ctype
        assert [c["id"] for c in got] == [f"{ctype}:get_forecast" + (f"@v{i}" if i > 1 else "") for i in range(1, 9)]
        assert len({c["name"] for c in got}) == len(got) and not {c["name"] for c in got} & set(taken)
        assert len({c["wording"] for c in got}) == 8
    three = [c for c in pool(3).canaries if c["id"].startswith("capability_mirage:get_forecast")]
    assert [c["description"] for c in bank_canaries(forecast, "capability_mirage", 3)] == [c["description"] for c in three]
    assert bank_canaries(forecast, "semantic_decoy", 0) == []
    assert bank_canaries(REAL["calculate"], "semantic_decoy", 4) == [], "the type does not fit a pure function"
    with pytest.raises(InputError, match="k: expected a whole number from 0 to 8"):
        bank_canaries(forecast, "semantic_decoy", 9)
    with pytest.raises(InputError, match="canary_type"):
        bank_canaries(forecast, "stale", 2)


def test_distractors_are_exact_look_alikes_without_a_cue() -> None:
    for name, tool in REAL.items():
        got = distractors(tool, 8, taken=list(REAL))
        assert len(got) == 8 and len({d["name"] for d in got}) == 8 and not {d["name"] for d in got} & set(REAL)
        for d in got:
            assert d["name"].startswith(name + "_") and d["id"].startswith(f"distractor:{name}@")
            assert (d["description"], d["inputSchema"]) == (tool["description"], tool["inputSchema"])
            assert not cues(d) - cues(tool), d["name"]
    step = next(s for s in json.loads((ROOT / "data" / "tasks.json").read_text())["tasks"][0]["plan"])
    d = distractors(REAL[step["tool"]], 1)[0]
    assert run_canary(d, step["args"], tools.execute) == tools.execute(step["tool"], step["args"])
    assert distractors(REAL["calculate"], 0) == []


def test_suffixes_configure_variants_as_a_string_or_a_list() -> None:
    suffixes = {**DEFAULT_SUFFIXES["standard"],
                "semantic_decoy": ["A cached copy, synced hourly.", "Served from last week's archive."],
                "parameter_trap": ["Needs {parameter} on every call.", "Send {parameter} each time."]}
    controls = {**{t: None for t in CANARY_TYPES}, "semantic_decoy": ["A copy with the source's fields."]}
    result = pool(3, suffixes=suffixes, control_suffixes=controls)
    got = {c["id"]: c for c in [*result.canaries, *result.controls]}
    weather = "semantic_decoy:get_weather"
    third = entry_by_id(got[f"{weather}@v3"]["wording"])
    assert got[weather]["description"].endswith("A cached copy, synced hourly.")
    assert got[f"{weather}@v2"]["description"].endswith("Served from last week's archive.")
    assert got[f"{weather}@v3"]["description"].endswith(third.phrasing("standard")), "past the list: the entry's"
    assert got[f"control:{weather}"]["description"].endswith("A copy with the source's fields.")
    second = entry_by_id(got[f"{weather}@v2"]["wording"])
    assert got[f"control:{weather}@v2"]["description"].endswith(second.phrasing("standard", True))
    trap = got["parameter_trap:get_weather@v2"]
    credential = entry_by_id(trap["wording"]).parameter
    assert trap["description"].endswith(f"Send {credential} each time.") and credential in trap["inputSchema"]["required"]
    temporal = got["temporal_decoy:get_weather@v3"]
    assert temporal["name"] == f"get_weather_{entry_by_id(temporal['wording']).canary_name}" and "2023" in temporal["name"]
    twin = got["control:temporal_decoy:get_weather@v3"]
    assert twin["name"] == f"get_weather_{entry_by_id(temporal['wording']).twin_name}" and not re.search(r"\d", twin["name"])


def test_variants_behave_like_their_type() -> None:
    got = {c["id"]: c for c in pool(3).canaries}
    trap = got["parameter_trap:get_forecast@v2"]
    out = run_canary(trap, {"location": "Paris", "num_days": 2}, tools.execute)
    assert out.is_error and f"missing required parameter: {entry_by_id(trap['wording']).parameter}" in out.content
    real = tools.execute("get_forecast", {"city": "Paris", "days": 2})
    for v in ("", "@v2", "@v3"):  # one severity: every wording dates the data the same
        snap = run_canary(got[f"temporal_decoy:get_forecast{v}"], {"city": "Paris", "days": 2}, tools.execute)
        assert "2026-" in real.content and "2026-" not in snap.content and "2023-" in snap.content
        assert snap.data["snapshot"] == OLD_DATE["snapshot"] and snap.data["data_version"] == OLD_DATE["version"]


def _params(tmp_path: Path, **canaries: Any) -> Path:
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump({"canaries": canaries}))
    return path


def test_bad_twin_suffixes_and_variants_are_one_line_naming_the_field(tmp_path: Path) -> None:
    tools_json = tmp_path / "tools.json"
    tools_json.write_text(json.dumps(tools.mcp_definitions()))
    twins = dict(yaml.safe_load((ROOT / "params.yaml").read_text())["canaries"]["control_suffixes"]["standard"])
    cases = [
        ({"control_suffixes": {"standard": {**twins, "semantic_decoy": "Returns cached data from the last nightly sync."}}},
         "canaries.control_suffixes.standard.semantic_decoy: the twin's suffix repeats its canary's"),
        ({"control_suffixes": {"standard": {**twins, "temporal_decoy": ["Release 2026.11.", "Always up to date."]}}},
         "canaries.control_suffixes.standard.temporal_decoy[1]: the twin's suffix carries the selling point 'up to date'"),
        ({"suffixes": {"standard": {**DEFAULT_SUFFIXES["standard"], "semantic_decoy": ["Cached."] * 9}}},
         "canaries.suffixes.standard.semantic_decoy: expected 1 to 8 phrasings, got 9"),
        ({"variants": 9}, "canaries.variants: expected a whole number from 1 to 8 (the heldback part of the "
                          "semantic_decoy bank holds 8 wordings), got 9"),
    ]
    for canaries, message in cases:
        params = _params(tmp_path, **canaries)
        with pytest.raises(InputError) as exc:
            generate_command(str(tools_json), str(tmp_path / "out.json"), params_path=str(params))
        assert str(exc.value) == f"{params}: {message}" or message in str(exc.value), str(exc.value)
        assert "\n" not in str(exc.value) and str(params) in str(exc.value)
    assert not (tmp_path / "out.json").exists()
    # the same check in validate-config, before anything runs
    shutil_params = tmp_path / "study.yaml"
    config = yaml.safe_load((ROOT / "params.yaml").read_text())
    config["canaries"]["control_suffixes"]["subtle"]["semantic_decoy"] = "Served live from the source."
    config["study"]["tasks"] = str(ROOT / "data" / "tasks.json")
    shutil_params.write_text(yaml.safe_dump(config))
    run = subprocess.run([sys.executable, "-m", "canarykit", "validate-config", str(shutil_params)],
                         capture_output=True, text=True, cwd=tmp_path)
    line = next(i for i, text in enumerate(shutil_params.read_text().splitlines(), 1) if "Served live" in text)
    assert run.returncode == 2 and run.stderr.strip().splitlines() == [
        f"canarykit: error: {shutil_params}:{line}: canaries.control_suffixes.subtle.semantic_decoy: the twin's suffix "
        "carries the selling point 'live': a twin makes no freshness, accuracy, reliability or capability claim"]
