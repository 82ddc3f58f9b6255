"""Issue 29, item 1: the lock is the result. On a fresh clone, `make run`, then `dvc status`
says up to date, `dvc repro` runs nothing and `git status` is clean.

The test does exactly that, from a clone, with the Makefile's own `run` recipe (`make -o install
run`: the recipe as printed, without reinstalling into the test's environment), on a small
study through the same code path as the default one: the same Snakefile, rules, dvc.yaml and
`canarykit.study.lockfile record`, with params.yaml cut to the oracle agent, one seed and
one task per difficulty (the default study's ~29,000 runs take ~10 minutes; this takes two
runs of ~1 minute each on an idle 2-core machine). The origin's committed lock is written the
way `make lock` writes it: by a run of the study and its DVC record, in another directory.
Slow-marked.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from fakes.workflow import ROOT, copy_workflow, run

pytestmark = pytest.mark.slow

VENV = Path(sys.executable).parent.parent


def make_run(repo: Path) -> str:
    """`make run` as the Makefile says, the clone's own package on the path."""
    proc = run(repo, "env", f"PYTHONPATH={repo / 'src'}", "make", "-o", "install", "run", f"VENV={VENV}", "CORES=2")
    return proc.stdout + proc.stderr


def test_make_run_on_a_fresh_clone_leaves_dvc_up_to_date_and_git_clean(tmp_path: Path) -> None:
    origin = copy_workflow(tmp_path / "origin", per_difficulty=1, models=("oracle",))
    (origin / "Makefile").write_text((ROOT / "Makefile").read_text())
    run(origin, "git", "init", "-q")
    run(origin, "dvc", "init", "-q")
    (origin / ".dvc/config").write_text((ROOT / ".dvc/config").read_text())
    out = make_run(origin)  # what `make lock` does in its scratch copy
    assert "recorded in dvc.lock" in out, out[-2000:]
    run(origin, "git", "add", "-A")
    run(origin, "git", "commit", "-qm", "the study and its lock")

    clone = tmp_path / "clone"
    run(tmp_path, "git", "clone", "-q", str(origin), str(clone))
    assert not (clone / "results").exists()
    out = make_run(clone)
    assert "recorded in dvc.lock" in out, out[-2000:]

    assert run(clone, "git", "status", "--porcelain").stdout == ""  # the lock make run wrote is the committed one
    status = run(clone, "dvc", "status").stdout
    assert status.strip() == "Data and pipelines are up to date.", status
    repro = run(clone, "dvc", "repro")
    assert "Running stage" not in repro.stdout and "Data and pipelines are up to date." in repro.stdout, repro.stdout
    assert run(clone, "git", "status", "--porcelain").stdout == ""

    # Another study's failed run and new records in the shared run store never change this one's
    # status: its failure markers live under its own output directory, the store is no output.
    gate = clone / "results/mine/runs/retry/fake_standard-declared-0.parquet.json"
    gate.parent.mkdir(parents=True)
    gate.write_text(json.dumps({"failed": 6, "retry": 6, "nonce": 1}))
    record = clone / "results/runs/store/ab/ab0123.json"
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text("{}")
    assert run(clone, "dvc", "status").stdout.strip() == "Data and pipelines are up to date."
    # and the history is in the logs: the run summary says this invocation executed every run
    summary = json.loads((clone / "results/logs/run-summary.json").read_text())
    assert summary["executed"] + summary["reused"] == summary["total"] > 0 and summary["failed"] == 0
