"""The numbers the README and docs quote about the shipped default study (issue 29 item 6):
generated from the study the committed dvc.lock records, and a stale one fails here."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

from canarykit.report.quoted import FACTS, check, render, sync

ROOT = Path(__file__).resolve().parents[1]


def test_every_quoted_number_is_the_locked_studys() -> None:
    """Each region of README.md and docs/*.md says what docs/quoted.json gives, and those facts
    come from the outputs the committed dvc.lock records (`make lock` regenerates both)."""
    assert check(ROOT) == []
    quoted = sum(p.read_text().count("<!-- quoted:") for p in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
    assert quoted >= 8, "the README's run count and known-answer table, the docs' run counts"
    facts = json.loads((ROOT / FACTS).read_text())["facts"]
    assert facts["known"]["total"] == facts["known"]["found"] + facts["known"]["open"] + facts["known"]["missed"] > 0
    assert render("known-table", facts).count("\n| ") >= 5  # a row per kind of reference agent


def _copy(tmp: Path) -> Path:
    (tmp / "docs").mkdir(parents=True)
    for rel in ("README.md", "dvc.lock", FACTS, *(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))):
        shutil.copy2(ROOT / rel, tmp / rel)
    return tmp


def test_a_hand_edited_number_or_a_changed_study_is_named(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    readme = (root / "README.md").read_text()
    facts = json.loads((root / FACTS).read_text())["facts"]
    runs = render("runs", facts)
    (root / "README.md").write_text(readme.replace(f"<!-- quoted:runs -->{runs}<", "<!-- quoted:runs -->12,345<", 1))
    (problem,) = check(root)
    assert problem.startswith("README.md: quoted:runs: says '12,345'") and repr(runs) in problem
    assert sync(root) == 1 and check(root) == []  # `make docs` rewrites it from the facts
    (root / "docs/dose.md").write_text((root / "docs/dose.md").read_text() + "\n<!-- quoted:nothing -->1<!-- /quoted:nothing -->\n")
    assert check(root) == ["docs/dose.md: quoted:nothing: no such fact in docs/quoted.json"]
    (root / "docs/dose.md").write_text((ROOT / "docs/dose.md").read_text())
    lock = yaml.safe_load((root / "dvc.lock").read_text())
    for o in lock["stages"]["stats"]["outs"]:
        if o["path"].endswith("/stats.json"):
            o["md5"] = "0" * 32
    (root / "dvc.lock").write_text(yaml.safe_dump(lock))
    (problem,) = check(root)
    assert problem.startswith("docs/quoted.json: sources.stats.json:") and "make lock" in problem
