"""bfcl-eval for the tests that need it: installed the way a user installs it (`make
install-bfcl`: pinned, without its heavy dependencies) into this interpreter's environment,
once, under a file lock (the slow suite runs its modules on both cores; CI runs a fresh clone)."""

from __future__ import annotations

import fcntl
import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOCK = Path("/tmp/canarykit-bfcl-install.lock")


def install_bfcl(printed: str = "make install-bfcl") -> None:
    """``printed`` (the docs' `make install-bfcl`) in the repository, into this interpreter's
    environment (``VENV``: the repository's .venv, as in CI), unless bfcl-eval is importable."""
    with LOCK.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        if importlib.util.find_spec("bfcl_eval") is None or importlib.util.find_spec("mpmath") is None:
            venv = "" if Path(sys.prefix).resolve() == (ROOT / ".venv").resolve() else f" VENV={sys.prefix}"
            proc = subprocess.run(["bash", "-c", printed + venv], cwd=ROOT, capture_output=True, text=True, timeout=900)
            assert proc.returncode == 0, f"make install-bfcl failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
            importlib.invalidate_caches()
