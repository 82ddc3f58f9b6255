"""The whole workflow on a small reference study, end to end, and what it computes held
byte for byte against tests/fixtures/golden_study.json.

The study: 2 tasks of each difficulty, one seed, the five conditions and the ablation, five
reference agents (the oracle, the chance and BM25 baselines, a planted capability-mirage
agent and the surface-attracted agent), the default judges. Reference agents need no model,
so every number they produce is a pure function of the code and the configuration: a
change that is meant to be a refactoring must leave them all as they were.

What is compared: every file the study writes except timings (``benchmarks/``, ``logs/``),
caches and the run store. A run's id hashes its identity, which holds the code of the tool
environment, the canaries and the reference agents (editing that code re-executes the runs:
README, "Reruns"), and the rubric judge's identity holds the code of the task checker; so
every such hash (a hex string of 12 to 64 characters with letters and digits) reads as
``<id>``, Parquet tables are compared as their rows with the id columns dropped and the rows
sorted, and every other file byte for byte once its hashes are masked.

A change of behaviour that is intended updates the fixture:
``CANARYKIT_UPDATE_GOLDEN=1 python -m pytest tests/test_golden.py`` (then review the diff).
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import sys
from pathlib import Path

import polars as pl
import pytest
from fakes.readme import command, sh, shown
from fakes.workflow import copy_workflow, run

#: The reference study end to end, then commands run on it: minutes on a loaded machine.
pytestmark = pytest.mark.slow

FIXTURE = Path(__file__).parent / "fixtures" / "golden_study.json"
AGENTS = ("oracle", "random", "lexical", "planted:capability_mirage", "planted:surface")
#: Timings and caches: not results. The run store, the run index and the per-job indexes
#: hold run ids and records whose identity includes code hashes (see the module docstring).
SKIP_DIRS = ("benchmarks", "logs", "cache", "runs")
#: Columns that hold a run id or a content hash derived from one.
ID_COLUMNS = ("run_id", "verdict_key")


#: A run id, a verdict key, a code hash: hex with at least one letter and one digit.
HASH = re.compile(rb"(?<![0-9a-f])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{12,64}(?![0-9a-f])")
TEXT = {".json", ".csv", ".md", ".html", ".yaml", ".svg", ".txt"}


# (The judging counts, judged vs reused from the shared verdict cache, depend on which parallel
# judge job reached a verdict first: they are logs under logs/, not results; issue 29.)


def _digest(path: Path, rel: str = "") -> str:
    if path.suffix == ".parquet":
        df = pl.read_parquet(path)
        df = df.drop([c for c in ID_COLUMNS if c in df.columns])
        data = df.write_csv().encode("utf-8")
        lines = HASH.sub(b"<id>", data).splitlines(keepends=True)
        data = b"".join(lines[:1] + sorted(lines[1:]))
    else:
        data = path.read_bytes()
        if path.suffix in TEXT:
            data = HASH.sub(b"<id>", data)
    return hashlib.sha256(data).hexdigest()


def study_digests(results: Path) -> dict[str, str]:
    """Every result file of the study (relative path -> digest), as compared by this test."""
    out = {}
    for p in sorted(results.rglob("*")):
        rel = p.relative_to(results)
        if p.is_file() and rel.parts[0] not in SKIP_DIRS and not any(part.startswith(".") for part in rel.parts):
            out[rel.as_posix()] = _digest(p, rel.as_posix())
    return out


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = copy_workflow(tmp_path_factory.mktemp("golden") / "repo", per_difficulty=2, models=AGENTS)
    # as `make run` runs it: with canarykit's console (the full Snakemake log in results/logs)
    proc = run(repo, "snakemake", "--cores", "2", "--scheduler", "greedy", "--logger=canarykit")
    (repo / "console.txt").write_text(proc.stdout + proc.stderr)
    return repo


def test_the_study_runs_and_the_oracle_is_perfect(study: Path) -> None:
    table = (study / "results/table1.csv").read_text().splitlines()
    assert table[0].startswith("model,tier,csr,csr_lo,csr_hi,tsr,recovery,recovery_n")
    rows = [dict(zip(table[0].split(","), line.split(","), strict=True)) for line in table[1:]]
    oracle = next(r for r in rows if r["model"] == "oracle")
    assert float(oracle["csr"]) == 0.0 and float(oracle["tsr"]) == 1.0
    assert {r["model"] for r in rows} == set(AGENTS), "every agent keeps its row"
    for fig in ("fig2", "fig4", "fig5", "fig6", "fig7", "fig8", "fig9", "fig10"):
        assert (study / f"results/figures/{fig}.svg").stat().st_size > 1000
    # DVC metrics: one file per (model, grid cell), the ablation cell named by its role
    assert sorted(p.name for p in (study / "results/metrics/oracle").iterdir()) == [
        "ablation.json", "baseline.json", "control.json", "declared.json", "full.json", "mirrored.json"]
    assert set(json.loads((study / "results/metrics/oracle/declared.json").read_text())) == {"csr", "tsr", "recovery", "runs"}
    # dvc plots render offline: the template inlines Vega (no CDN)
    page = (study / "results/plots/vega-offline.html").read_text()
    assert "{plot_divs}" in page and "cdn.jsdelivr" not in page and "vegaEmbed" in page


def test_the_readme_commands_on_a_study_as_printed(study: Path) -> None:
    summary = json.loads(sh(study, command("cat results/logs/run-summary.json").text).stdout)
    assert summary["failed"] == 0 and summary["executed"] + summary["reused"] == summary["total"] > 0
    head = sh(study, command("head -3 results/table1.csv").text).stdout.splitlines()
    assert len(head) == 3 and head[0] == shown("head -3 results/table1.csv")[0], "Table 1's columns as the README shows them"
    sh(study, command("canarykit human-sheet --n 40 --stratify model,difficulty -o sheet.csv").text)
    with open(study / "sheet.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 40 and "planted:" not in (study / "sheet.csv").read_text(), "40 runs, blinded"


def test_a_second_invocation_has_nothing_to_do(study: Path) -> None:
    dry = run(study, "snakemake", "--cores", "2", "-n")
    assert "Nothing to be done" in dry.stdout + dry.stderr  # a dry run shows Snakemake's own plan


def test_what_the_study_computes_is_byte_identical_to_the_fixture(study: Path) -> None:
    got = study_digests(study / "results")
    assert "stats.json" in got and "runs.parquet" in got and "canaries/standard.json" in got
    if os.environ.get("CANARYKIT_UPDATE_GOLDEN"):
        FIXTURE.write_text(json.dumps({"agents": list(AGENTS), "files": got}, indent=1, sort_keys=True) + "\n")
    want = json.loads(FIXTURE.read_text())["files"]
    changed = sorted(k for k in want.keys() & got.keys() if want[k] != got[k])
    assert not changed and got.keys() == want.keys(), (
        f"changed: {changed}; new: {sorted(got.keys() - want.keys())}; gone: {sorted(want.keys() - got.keys())} "
        "(an intended change of behaviour: CANARYKIT_UPDATE_GOLDEN=1 python -m pytest tests/test_golden.py)")


def test_the_console_is_one_screen_ending_with_where_to_look(study: Path) -> None:
    console = (study / "console.txt").read_text().splitlines()
    assert len(console) <= 40, "\n".join(console)
    text = "\n".join(console)
    assert "instrument check: ok: the oracle passed" in text and "report:    results/report.html" in text
    assert "results/table1.csv" in text and "runs/s" in text and console[-1].lstrip().startswith("next:")
    assert "Job stats" not in text and "SNAKEMAKE" not in text
    assert "Job stats" in (study / "results/logs/snakemake.log").read_text(), "the full log keeps everything"


def test_dvc_takes_a_snakemake_run_as_its_own(study: Path) -> None:
    """What `make lock` records (`dvc commit` after a Snakemake run, canarykit.study.lockfile) is a
    lock DVC keeps: `dvc status` is up to date and `dvc repro` executes no stage. (The
    committed dvc.lock of the default study is held to its code and params by
    tests/test_lockfile.py.)"""
    run(study, "git", "init", "-q")
    run(study, "dvc", "init", "-q")
    run(study, "dvc", "commit", "--force", "--quiet")
    assert "Data and pipelines are up to date" in run(study, "dvc", "status").stdout
    out = run(study, "dvc", "repro").stdout
    assert "Running stage" not in out and "Data and pipelines are up to date" in out, out


def test_a_script_runs_by_hand_as_its_job_would(study: Path) -> None:
    """Scripts run outside Snakemake for debugging (the job chosen by its wildcards) and
    write what the rule's job wrote; the last test here: it rewrites a result."""
    target = study / "results/detect/oracle.parquet"
    before = target.read_bytes()
    target.unlink()
    proc = run(study, sys.executable, "scripts/judging/detect.py", "model=oracle")
    assert target.read_bytes() == before, proc.stderr
    proc = run(study, sys.executable, "scripts/judging/detect.py", check=False)
    assert proc.returncode == 2 and "choose one of: model=lexical; model=oracle;" in proc.stderr
    assert "Traceback" not in proc.stderr
