"""Glue for the thin scripts under scripts/: logging to the rule's log and clean user errors."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from .errors import CanaryKitError


class _Tee:
    def __init__(self, *streams: TextIO) -> None:
        self.streams = streams

    def write(self, text: str) -> int:
        for s in self.streams:
            s.write(text)
            s.flush()
        return len(text)

    def flush(self) -> None:
        for s in self.streams:
            s.flush()


def run_script(snakemake: Any, main: Callable[[Any], None]) -> None:
    """Run ``main(snakemake)`` with stderr sent to the rule's log (and the terminal).

    A user error (:class:`CanaryKitError`) prints one message naming the file and the field
    and exits with status 2; outputs already written by earlier rules are left in place.
    """
    log_path = snakemake.log[0] if len(snakemake.log) else None
    log: TextIO | None = open(log_path, "w", buffering=1, encoding="utf-8") if log_path else None  # noqa: SIM115
    real_stderr = sys.stderr
    if log is not None:
        sys.stderr = _Tee(real_stderr, log)  # type: ignore[assignment]
    try:
        main(snakemake)
    except CanaryKitError as exc:
        print(f"canarykit: error: {exc}", file=sys.stderr)
        sys.exit(2)
    except Exception:
        traceback.print_exc(file=sys.stderr)
        raise
    finally:
        sys.stderr = real_stderr
        if log is not None:
            log.close()


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

