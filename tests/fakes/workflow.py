"""A copy of this workflow in a temporary directory, on a small study, for end-to-end tests."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
COPY = ["Snakefile", "rules", "scripts", "report", "src", "profiles", "dvc.yaml", ".dvcignore", ".gitignore", "data/prompts"]


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PATH"] = f"{BIN}{os.pathsep}{e.get('PATH', '')}"
    e.update(DVC_NO_ANALYTICS="1", GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org",
             GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.org")
    return e


def run(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(args, cwd=cwd, env=env(), capture_output=True, text=True, timeout=900)
    if check:
        assert proc.returncode == 0, f"{' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def copy_workflow(dst: Path, *, per_difficulty: int = 8, models: Sequence[str] = ("oracle", "lexical", "planted:capability_mirage")) -> Path:
    """The workflow with the first ``per_difficulty`` tasks of each difficulty, one seed, and
    the named agents of params.yaml; 500 bootstrap resamples and SVG figures only."""
    dst.mkdir(parents=True, exist_ok=True)
    for item in COPY:
        src, target = ROOT / item, dst / item
        if src.is_dir():
            shutil.copytree(src, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)
    doc = json.loads((ROOT / "data/tasks.json").read_text())
    tasks = [t for d in ("easy", "medium", "hard") for t in [t for t in doc["tasks"] if t["difficulty"] == d][:per_difficulty]]
    (dst / "data/tasks.json").write_text(json.dumps({**doc, "tasks": tasks}, indent=1))
    cfg = yaml.safe_load((ROOT / "params.yaml").read_text())
    cfg["study"]["seeds"] = [0]
    cfg["models"] = [m for m in cfg["models"] if m["name"] in models]
    cfg["stats"]["bootstrap_resamples"] = 500
    cfg["figures"]["formats"] = ["svg"]
    (dst / "params.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    return dst


def set_param(repo: Path, path: Sequence[str], value: object) -> None:
    p = repo / "params.yaml"
    cfg = yaml.safe_load(p.read_text())
    node = cfg
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    p.write_text(yaml.safe_dump(cfg, sort_keys=False))
