"""``canarykit audit-twins`` (issue 27 item 3): every span in which a twin differs from its
canary, per pair, and a non-zero exit when one is not the type's declared tell; clean on the
shipped pools and on the official filesystem and git servers' tool definitions; the twins it
catches (the old dated, same-as-the-base-tool and narrower twins) fail it."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fakes.readme import command, sh, shown
from fakes.study import write_study_pool

from canarykit import canaries, tools
from canarykit.canaries import (
    DEFAULT_SUFFIXES,
    audit_pair,
    audit_pool,
    build_pool,
    ingest_tools,
    selling_point,
)
from canarykit.tasks.tasks import load_tasks

ROOT = Path(__file__).resolve().parents[1]
OFFICIAL = json.loads((Path(__file__).parent / "fixtures" / "mcp_servers" / "official.json").read_text())
#: Two foreign tool sets: the official MCP filesystem and git servers' definitions (fixtures).
FOREIGN = {server: [t for t in OFFICIAL if t.get("server") == server] for server in ("filesystem", "git")}


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it (a cold start: used once per test file)."""
    return subprocess.run([sys.executable, "-m", "canarykit", "audit-twins", *args], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)


def _main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], list[str]]:
    """The same command in process: exit status, stdout lines, stderr lines."""
    from canarykit.cli import main

    code = main(["audit-twins", *args])
    out = capsys.readouterr()
    return code, out.out.splitlines(), out.err.strip().splitlines()


def test_the_shipped_pools_differ_in_their_tells_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The workflow's two pools (params.yaml: K = 8 held-back wordings per type, the task
    suite's check) and the paper profile's: every pair clean, every span listed."""
    tasks = load_tasks(ROOT / "data" / "tasks.json")
    (tmp_path / "results" / "canaries").mkdir(parents=True)
    for pool in ("standard", "subtle"):
        path = tmp_path / "results" / "canaries" / f"{pool}.json"
        doc = write_study_pool(path, pool, tasks, ROOT / "data" / "tasks.json")
        if pool == "standard":  # docs/canaries.md's command, as printed, with the output it shows
            assert sh(tmp_path, command("canarykit audit-twins").text).stdout.splitlines() == list(shown("canarykit audit-twins"))
        code, lines, _ = _main(capsys, str(path))
        assert code == 0, lines[:3]
        spans = sum(len(a.spans) for a in audit_pool(doc))
        assert lines[0] == f"audit-twins: {path}: {len(doc['canaries'])} pairs, {spans} differing spans, 0 not a declared tell"
        assert len(lines) == 1 + spans and all(line.endswith("(tell)") for line in lines[1:])
        assert {line.split(" ", 1)[0] for line in lines[1:]} == {c["id"] for c in doc["canaries"]}, "every pair listed"
    paper = tmp_path / "paper.json"
    tools_json = tmp_path / "tools.json"
    tools_json.write_text(json.dumps(tools.mcp_definitions()))
    canaries.generate_command(str(tools_json), str(paper), pool="subtle", controls=True,
                              params_path=str(ROOT / "src/canarykit/resources/profiles/paper.yaml"))
    capsys.readouterr()
    code, lines, _ = _main(capsys, str(paper), "--quiet")
    assert code == 0 and len(lines) == 1 and lines[0].startswith(f"audit-twins: {paper}: 72 pairs, ")
    assert "0 not a declared tell; 12 pairs with a configured phrasing" in lines[0], "the paper's subtle tells"


@pytest.mark.parametrize("server", sorted(FOREIGN))
def test_foreign_servers_twins_differ_in_their_tells_only(server: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """All 16 wordings of each type (development and held-back) in the standard style, the
    held-back ones in the subtle style, and the paper fit, on the official server's own tool
    definitions."""
    listed = ingest_tools(FOREIGN[server], server)
    assert len(listed.tools) >= 5
    for fit, pool, k, part in (("fitted", "standard", 16, "all"), ("fitted", "subtle", 8, "heldback"),
                               ("paper", "standard", 1, "heldback")):
        suffixes = DEFAULT_SUFFIXES[pool] if fit == "fitted" else canaries.PAPER_SUFFIXES[pool]
        built = build_pool(listed, pool, suffixes, fit=fit, controls=True, variants=k, wording_part=part)
        audits = audit_pool(built.document())
        assert audits and all(a.ok for a in audits), [(a.canary_id, [s for s in a.spans if not s.declared], a.problems)
                                                     for a in audits if not a.ok][:3]
        assert {a.type for a in audits} >= {"parameter_trap", "capability_mirage"}
    path = tmp_path / f"{server}.json"
    canaries.write_pool(build_pool(listed, "standard", DEFAULT_SUFFIXES["standard"], controls=True, variants=3), path)
    code, lines, _ = _main(capsys, str(path), "--quiet")
    assert code == 0 and len(lines) == 1 and lines[0].endswith("0 not a declared tell"), lines


def _pairs() -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    built = build_pool([t for t in tools.mcp_definitions() if t["name"] == "get_forecast"], "standard",
                       DEFAULT_SUFFIXES["standard"], controls=True, special_cases={"get_forecast": {"city": "Mumbai", "days": 3}})
    twins = {t["control_of"]: t for t in built.controls}
    return {c["type"]: (c, copy.deepcopy(twins[c["id"]])) for c in built.canaries if c["shadows"] == "get_forecast"}


def test_twins_that_differ_beyond_the_tell_fail_the_audit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The twins issue 27 found: dated (``_2026``, "data as of November 2026"), a sameness
    statement, a narrower scope, a schema or body changed beyond the tell."""
    pairs = _pairs()
    c, t = pairs["temporal_decoy"]
    dated = {**t, "name": "get_forecast_2026", "description": t["description"] + " Release 2026.11 (data as of November 2026)."}
    c2, t2 = pairs["capability_mirage"]
    same = {**t2, "description": t2["description"] + " STANDARD: handles the same requests as the base tool."}
    c3, t3 = pairs["prerequisite_blindness"]
    narrower = {**t3, "description": t3["description"].replace(t3["tell"]["description"][-1],
                                                               "Covers public workspace resources of this account.")}
    c4, t4 = pairs["parameter_trap"]
    schema = copy.deepcopy(t4["inputSchema"])
    schema["properties"]["extra"] = {"type": "string"}
    wider = {**t4, "inputSchema": schema}
    c5, t5 = pairs["semantic_decoy"]
    body = {**t5, "description": "Another body. " + t5["description"]}
    for canary, twin in ((c, dated), (c2, same), (c3, narrower), (c4, wider), (c5, body)):
        audit = audit_pair(canary, twin)
        assert not audit.ok and any(not s.declared for s in audit.spans), (canary["id"], audit.spans)
    assert audit_pair(c, t).ok and audit_pair(c5, t5).ok
    # through the command: exit 1, the bad spans named
    built = build_pool(tools.mcp_definitions(), "standard", DEFAULT_SUFFIXES["standard"], controls=True,
                       special_cases={"get_forecast": {"city": "Mumbai", "days": 3}})
    doc = built.document()
    i = next(i for i, k in enumerate(doc["controls"]) if k["id"] == f"control:{c['id']}")
    doc["controls"][i] = {**doc["controls"][i], "name": doc["controls"][i]["name"] + "_2026"}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    code, bad, _ = _main(capsys, str(path), "--quiet")
    assert code == 1 and bad[0].endswith("1 not a declared tell")
    assert len(bad) == 2 and bad[1].startswith(f"{c['id']} [{c['wording']}] name: ") and "NOT THE TELL" in bad[1]


def test_an_llm_mirages_twin_is_derived_from_its_own_rewritten_text() -> None:
    """With ``generator: llm`` the mirage's body is the model's, its claim marked; the twin is
    that same body without the claim (never the offline template), and the pair audits clean."""

    class Model:
        name, model = "llm", "m"

        def reword(self, tool: Any, canary_type: str, *, style: str = "paper") -> tuple[str, ...]:
            if canary_type == "capability_mirage":
                return ("advanced_x", "Reports the weather of a city, with expert-level precision, as JSON.",
                        "with expert-level precision")
            return "obtain_skies", "Reports the skies of a city."

    built = build_pool(tools.mcp_definitions()[:1], "standard", DEFAULT_SUFFIXES["standard"], controls=True,
                       rewriter=Model(), variants=2)
    twins = {t["control_of"]: t for t in built.controls}
    mirages = [c for c in built.canaries if c["type"] == "capability_mirage"]
    assert len(mirages) == 2
    for c in mirages:
        t = twins[c["id"]]
        assert c["description"].startswith("Reports the weather of a city, with expert-level precision, as JSON.")
        assert t["description"].startswith("Reports the weather of a city, as JSON.") and selling_point(t["description"]) is None
        assert "with expert-level precision" in c["tell"]["description"] and audit_pair(c, t).ok
    semantic = next(c for c in built.canaries if c["type"] == "semantic_decoy")
    assert twins[semantic["id"]]["description"].startswith("Reports the skies of a city.")


def test_bad_pools_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    without = tmp_path / "no_twins.json"
    canaries.write_pool(build_pool(tools.mcp_definitions()[:1], "standard", DEFAULT_SUFFIXES["standard"]), without)
    code, _, err = _main(capsys, str(without))
    assert code == 2 and err == [
        f"canarykit: error: {without}: controls: this pool has no twins: generate it with --controls (the workflow's "
        "pools have them)"]
    old = tmp_path / "old.json"
    doc = build_pool(tools.mcp_definitions()[:1], "standard", DEFAULT_SUFFIXES["standard"], controls=True).document()
    doc["format_version"] = 3
    for r in [*doc["canaries"], *doc["controls"]]:
        r.pop("tell"), r.pop("wording")
    old.write_text(json.dumps(doc))
    code, _, err = _main(capsys, str(old))
    assert code == 2 and len(err) == 1 and "regenerate it" in err[0]
