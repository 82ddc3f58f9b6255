"""Numbers the README and docs quote about the shipped default study, generated from its
outputs so they cannot go stale.

A quoted number sits in a marked region of a page: ``<!-- quoted:NAME -->...<!-- /quoted:NAME -->``
(inline, or a whole table). :func:`update` reads a finished study's outputs (``stats.json``,
``runs.parquet``, ``params.resolved.yaml``), writes the facts to ``docs/quoted.json`` with the
md5 of each output they come from, and rewrites every region from them. ``make lock`` calls it
on the study it runs for ``dvc.lock``, ``make docs`` re-renders the regions, and
:func:`check` (tests/test_quoted.py) fails when a region says anything else than its fact,
names a fact that does not exist, or when the facts come from outputs other than the ones the
committed ``dvc.lock`` records (the study changed: ``make lock`` regenerates both).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..types import CANARY_TYPES
from .firstscreen import findings

__all__ = ["FACTS", "check", "render", "study_facts", "update"]

#: where the facts live, relative to the project root
FACTS = "docs/quoted.json"
#: the outputs the facts are computed from (relative to the study's output directory)
SOURCES = ("stats.json", "runs.parquet", "params.resolved.yaml")
REGION = re.compile(r"<!-- quoted:([\w-]+) -->(.*?)<!-- /quoted:\1 -->", re.S)

_PICKS = {
    "oracle": "the plan's real tool",
    "planted": "with `take_prob`, a look-alike whose text shows no defect but the type's",
    "surface": "with `take_prob`, any look-alike",
    "claims": "with `take_prob`, a look-alike claiming an inflated capability",
    "careful": "with `take_prob`, a look-alike showing no defect",
    "random": "uniformly among the tool and its look-alikes",
    "lexical": "the tool whose name and description share most words with the task",
}
_MUST = {
    "oracle": "csr 0, every rubric passes; `not drawn` on all six types",
    "planted": "`blind` on its type, `sensitive` on the others",
    "surface": "`blind` on every type",
    "claims": "`lured` on capability mirages, `not drawn` elsewhere",
    "careful": "`sensitive` on every type",
}


def pages(root: Path) -> list[Path]:
    """The pages that may quote the study: the README and the docs site's pages."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def study_facts(out: str | Path) -> dict[str, Any]:
    """The facts a page may quote, from the study in ``out``."""
    import polars as pl
    import yaml

    out = Path(out)
    result = json.loads((out / "stats.json").read_text(encoding="utf-8"))
    params = yaml.safe_load((out / "params.resolved.yaml").read_text(encoding="utf-8"))
    runs = pl.read_parquet(out / "runs.parquet", columns=["model", "success", "condition", "arm", "task_id", "seed", "pool"])
    per_model = dict(runs.group_by("model").len().iter_rows())
    seen = findings(result, params)
    configs = {str(m["name"]): m for m in params.get("models") or []}
    agents = []
    for row in seen["instruments"]:
        cfg = configs.get(row["name"], {})
        agents.append({"name": row["name"], "agent": str(cfg.get("agent", "")), "known": row["known"],
                       "words": {c["type"]: c["word"] for c in row["types"]},
                       "status": {c["type"]: c["status"] for c in row["types"] if c["status"]}})
    oracle = runs.filter(pl.col("model") == "oracle")
    one = runs.filter((pl.col("model") == runs["model"].min()) & (pl.col("pool") == (params.get("canaries") or {}).get("pool")))
    control = one.filter(pl.col("condition") == "control")
    arms = dict(control.group_by("arm").len().iter_rows())
    return {
        "runs": runs.height,
        "models": len(per_model),
        "runs_per_model": max(per_model.values()) if per_model else 0,
        # one model's control lists (one per task, seed and type offered) against one per (task, seed)
        "control_lists": control.height,
        "task_seeds": one.filter(pl.col("condition") == "baseline").select("task_id", "seed").unique().height,
        "control_arms": {t: int(arms.get(t, 0)) for t in CANARY_TYPES},
        "oracle": {"runs": oracle.height, "passed": int(oracle["success"].fill_null(False).sum())},
        "known": {k: seen["known"][k] for k in ("total", "found", "open", "missed")},
        "agents": agents,
    }


def _words(words: Mapping[str, str]) -> str:
    """``blind`` on all six types / ``blind`` on 5; ``inconclusive`` on semantic_decoy."""
    by: dict[str, list[str]] = {}
    for t in CANARY_TYPES:
        by.setdefault(words.get(t, "n/a"), []).append(t)
    if len(by) == 1:
        return f"`{next(iter(by))}` on all six types"
    main = max(by, key=lambda w: len(by[w]))
    rest = "; ".join(f"`{w}` on {', '.join(ts)}" for w, ts in by.items() if w != main)
    return f"`{main}` on {len(by[main])}; {rest}"


def _planted_cell(rows: Sequence[Mapping[str, Any]]) -> str:
    statuses = [s for r in rows for s in r["status"].values()]
    found = statuses.count("found")
    if found == len(statuses):
        return f"exactly that, all {len(rows)} agents ({found} of {len(statuses)} answers)"
    others = [f"{r['name']} on {t} (`{r['words'][t]}`)" for r in rows for t, s in r["status"].items() if s != "found"]
    return f"{found} of {len(statuses)} answers; not shown: {', '.join(others)}"


def _known_table(facts: Mapping[str, Any]) -> str:
    lines = ["| reference agent | picks | the diagnosis it must get | what the default study gave |", "|---|---|---|---|"]
    agents = list(facts["agents"])
    planted = [a for a in agents if a["agent"] == "planted"]
    done = False
    for a in agents:
        kind = a["agent"]
        if kind == "planted":
            if not done:
                lines.append(f"| `planted:<type>` ({len(planted)}) | {_PICKS['planted']} | {_MUST['planted']} | "
                             f"{_planted_cell(planted)} |")
                done = True
            continue
        gave = _words(a["words"])
        if kind == "oracle":
            o = facts["oracle"]
            gave = f"{o['passed']:,} of {o['runs']:,} runs passed; {gave}"
        must = _MUST.get(kind, "no known answer (not counted)") if a["known"] else "no known answer (not counted)"
        lines.append(f"| `{a['name']}` | {_PICKS.get(kind, kind)} | {must} | {gave} |")
    return "\n".join(lines)


def render(name: str, facts: Mapping[str, Any]) -> str:
    """The text of region ``name`` (KeyError for a name that is not a fact)."""
    k = facts["known"]
    inline = {
        "runs": f"{facts['runs']:,}",
        "models": f"{facts['models']}",
        "runs-per-model": f"{facts['runs_per_model']:,}",
        "oracle-passed": f"{facts['oracle']['passed']:,} of {facts['oracle']['runs']:,}",
        "known-found": f"{k['found']} of {k['total']}",
        "known-open": f"{k['open']}",
        "known-missed": f"{k['missed']}",
        "control-lists": f"{facts['control_lists']:,}",
        "control-extra": f"{facts['control_lists'] - facts['task_seeds']:,}",
        "control-arms": ", ".join(f"{t} {n}" for t, n in facts["control_arms"].items()),
    }
    if name in inline:
        return inline[name]
    if name == "known-table":
        return "\n\n" + _known_table(facts) + "\n\n"
    raise KeyError(name)


def _rewrite(text: str, facts: Mapping[str, Any]) -> str:
    return REGION.sub(lambda m: f"<!-- quoted:{m.group(1)} -->{render(m.group(1), facts)}<!-- /quoted:{m.group(1)} -->", text)


def _locked_md5(root: Path, out_dir: str) -> dict[str, str | None]:
    import yaml

    lock = yaml.safe_load((root / "dvc.lock").read_text(encoding="utf-8")) or {}
    md5: dict[str, str | None] = dict.fromkeys(SOURCES)
    for stage in (lock.get("stages") or {}).values():
        for o in stage.get("outs") or []:
            rel = str(o.get("path", "")).removeprefix(f"{out_dir}/")
            if rel in md5:
                md5[rel] = o.get("md5")
    return md5


def update(root: str | Path, out: str | Path) -> Path:
    """Facts from the study in ``out`` into ``root/docs/quoted.json``, and every page's regions
    rewritten from them."""
    root, out = Path(root), Path(out)
    facts = study_facts(out)
    doc = {"sources": {s: _md5(out / s) for s in SOURCES}, "facts": facts}
    (root / FACTS).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    sync(root)
    return root / FACTS


def sync(root: str | Path) -> int:
    """Rewrite every page's regions from ``docs/quoted.json``; the number of pages changed."""
    root = Path(root)
    facts = json.loads((root / FACTS).read_text(encoding="utf-8"))["facts"]
    changed = 0
    for page in pages(root):
        text = page.read_text(encoding="utf-8")
        new = _rewrite(text, facts)
        if new != text:
            page.write_text(new, encoding="utf-8")
            changed += 1
    return changed


def check(root: str | Path, out_dir: str = "results") -> list[str]:
    """What is stale: a region whose text is not its fact, a region naming no fact, facts
    computed from outputs other than those ``dvc.lock`` records. Empty when all holds."""
    root = Path(root)
    doc = json.loads((root / FACTS).read_text(encoding="utf-8"))
    problems = []
    locked = _locked_md5(root, out_dir)
    for source, md5 in doc["sources"].items():
        if locked.get(source) != md5:
            problems.append(f"{FACTS}: sources.{source}: computed from md5 {md5}, dvc.lock records {locked.get(source)}"
                            " (the study changed: `make lock` regenerates the quoted numbers)")
    for page in pages(root):
        for m in REGION.finditer(page.read_text(encoding="utf-8")):
            name = m.group(1)
            try:
                want = render(name, doc["facts"])
            except KeyError:
                problems.append(f"{page.relative_to(root)}: quoted:{name}: no such fact in {FACTS}")
                continue
            if m.group(2) != want:
                problems.append(f"{page.relative_to(root)}: quoted:{name}: says {m.group(2).strip()[:80]!r}, "
                                f"the study gives {want.strip()[:80]!r} (`make docs` rewrites it)")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m canarykit.report.quoted update --study DIR | sync | check``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["update"] and "--study" in args[:-1]:
        print(f"wrote {update('.', args[args.index('--study') + 1])} and the pages' quoted numbers", file=sys.stderr)
        return 0
    if args[:1] == ["sync"]:
        sync(".")
        return 0
    if args[:1] == ["check"]:
        problems = check(".")
        for line in problems:
            print(line, file=sys.stderr)
        return 1 if problems else 0
    print("usage: python -m canarykit.report.quoted update --study DIR | sync | check", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
