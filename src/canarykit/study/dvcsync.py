"""Keeping Snakemake's view of a study in step with DVC's after a checkout.

DVC restores outputs by content and does not preserve modification times; Snakemake decides
what to run by them. In a fresh clone after ``dvc pull`` the outputs come back in no
particular mtime order, and Snakemake would re-run jobs whose outputs are in fact current.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def align_mtimes_with_dvc_lock(root: str | Path = ".") -> bool:
    """After ``dvc pull``/``dvc checkout`` in a fresh clone, restore pipeline-order mtimes.

    DVC does not preserve modification times, so checked-out outputs appear in an arbitrary
    order and Snakemake would re-run jobs whose outputs are in fact current. When (and only
    when) ``dvc status`` reports that every output matches ``dvc.lock`` by content, this sets
    the outputs' mtimes in the order of the lock file's stages (each stage after the stages
    before it, all after every source file). Returns whether it did so.
    """
    import subprocess
    import time

    import yaml

    base = Path(root)
    lock_path = base / "dvc.lock"
    if not lock_path.exists() or os.environ.get("DVC_STAGE"):
        # Inside a `dvc repro` stage DVC holds the repository lock and decides itself.
        return False
    try:
        status = subprocess.run([sys.executable, "-m", "dvc", "status", "--json", "-q"], cwd=base, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired):
        return False
    if status.returncode != 0 or status.stdout.strip() not in ("{}", ""):
        return False
    lock = yaml.safe_load(lock_path.read_text(encoding="utf-8")) or {}
    now = time.time()
    for i, stage in enumerate((lock.get("stages") or {}).values()):
        stamp = now + 0.001 * (i + 1)
        for out in stage.get("outs", []):
            target = base / out["path"]
            paths = [target] if target.is_file() else [p for p in target.rglob("*") if p.is_file()] if target.is_dir() else []
            for p in paths:
                os.utime(p, (stamp, stamp))
    return True

