"""The committed dvc.lock is part of the result (canarykit.study.lockfile): every stage's code, data
and params dependencies are the ones on disk, so no stage of a fresh clone is out of date
because of them. When this fails after a change of code or params: `make lock`, then commit
dvc.lock with the change."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from canarykit.study.lockfile import dir_md5, expected_stages, file_md5, lock_mismatches

ROOT = Path(__file__).resolve().parents[1]


def test_the_committed_lock_matches_the_code_and_params() -> None:
    problems = lock_mismatches(ROOT)
    assert not problems, "\n".join([*problems[:30], f"({len(problems)} in all) refresh it: make lock"])


def test_the_hashes_are_dvcs() -> None:
    """A file's md5 and a directory's .dir hash as DVC computes them (dvc_data)."""
    from dvc_data.hashfile.build import build
    from dvc_data.hashfile.db import HashFileDB
    from dvc_objects.fs.local import LocalFileSystem

    fs = LocalFileSystem()
    odb = HashFileDB(fs, tempfile.mkdtemp())
    for path in (ROOT / "report", ROOT / "scripts/stats/stats.py"):
        _, _, obj = build(odb, str(path), fs, "md5")
        assert obj.hash_info.value == (dir_md5(path) if path.is_dir() else file_md5(path)), path


def _current_lock(root: Path) -> dict[str, Any]:
    """A lock as `dvc commit` writes it for the files in ``root`` (outputs left out: not compared)."""
    params = yaml.safe_load((root / "params.yaml").read_text())
    stages = {}
    for name, spec in expected_stages(root, params).items():
        deps = []
        for d in spec["deps"]:
            p = root / d
            md5 = dir_md5(p) if p.is_dir() else file_md5(p) if p.is_file() else "0" * 32
            deps.append({"path": d, "hash": "md5", "md5": md5})
        values = {}
        for key in spec["params"]:
            node: Any = params
            for part in key.split("."):
                node = node[part]
            values[key] = node
        stages[name] = {"cmd": spec["cmd"], "deps": deps, "params": {"params.yaml": values}}
    return {"schema": "2.0", "stages": stages}


def test_an_edit_of_a_stages_code_or_params_is_named(tmp_path: Path) -> None:
    for item in ("dvc.yaml", "params.yaml", "scripts", "src", "report", "data"):
        src = ROOT / item
        if src.is_dir():
            shutil.copytree(src, tmp_path / item, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(src, tmp_path / item)
    lock = _current_lock(tmp_path)
    (tmp_path / "dvc.lock").write_text(yaml.safe_dump(lock, sort_keys=False))
    assert lock_mismatches(tmp_path) == []

    with (tmp_path / "scripts/report/figures.py").open("a") as fh:
        fh.write("\n# an edit\n")
    (tmp_path / "report/new_caption.rst").write_text("a new caption\n")
    params = yaml.safe_load((tmp_path / "params.yaml").read_text())
    params["stats"]["seed"] = params["stats"]["seed"] + 1
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    del lock["stages"]["assemble"]
    (tmp_path / "dvc.lock").write_text(yaml.safe_dump(lock, sort_keys=False))

    problems = lock_mismatches(tmp_path)
    assert "dvc.lock: stage figures: scripts/report/figures.py: changed since the lock" in problems
    assert "dvc.lock: stage report: report: changed since the lock" in problems
    assert "dvc.lock: stage stats: params.yaml: stats: differs from the lock" in problems
    assert "dvc.lock: stage report: params.yaml: stats.seed: differs from the lock" in problems
    assert "dvc.lock: stage assemble: in dvc.yaml, not in the lock" in problems
    assert not any("stage metrics" in p for p in problems), "an unrelated stage stays current"
    # the docs' command: the same check, exit status 1 and what to do
    from fakes.readme import command, sh

    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    proc = sh(tmp_path, command(".venv/bin/python -m canarykit.study.lockfile check").text, check=False, timeout=120)
    assert proc.returncode == 1 and problems[0] in proc.stderr and proc.stderr.rstrip().endswith("`make lock`")


def test_make_run_does_not_record_a_study_whose_failed_runs_wait_for_a_retry(tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """`make run` ends with `dvc commit` (lockfile.record), but never while the study's retry
    gates mark failed runs: the lock must not call a study with failures finished."""
    import json
    import subprocess

    from canarykit.study.lockfile import record

    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / ".dvc").mkdir()
    (tmp_path / "dvc.yaml").write_text("stages: {}\n")
    (tmp_path / "params.yaml").write_text("study: {output_dir: results/mine}\n")
    gate = tmp_path / "results/mine/runs/retry/gw_standard-declared-0.parquet.json"
    gate.parent.mkdir(parents=True)
    gate.write_text(json.dumps({"failed": 6, "retry": 4}))
    assert record(tmp_path) == 0
    assert "4 failed runs wait for a retry: dvc.lock not updated" in capsys.readouterr().err
    assert not (tmp_path / "dvc.lock").exists()
