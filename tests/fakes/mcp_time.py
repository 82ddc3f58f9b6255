"""mcp-server-time (the official MCP time server, from PyPI) in a venv of its own, cached.

The slow tests drive it as a real third-party server: through ``canarykit proxy`` and as the
tool environment of a study. :func:`time_server` installs the pinned version once per machine
into ``$CANARYKIT_TEST_CACHE`` (default ``~/.cache/canarykit/test-servers``), under a file lock
(parallel test runs wait for one install), and returns the path of its executable. Its own
venv: it pins ``mcp``, and a server's dependencies must never move the project's. Needs PyPI
the first time (about 20-60 s); later runs reuse the cache.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

PACKAGE = "mcp-server-time"
VERSION = "2026.10.19"
INSTALL_TIMEOUT_S = 900


def cache_root() -> Path:
    return Path(os.environ.get("CANARYKIT_TEST_CACHE") or Path.home() / ".cache" / "canarykit" / "test-servers")


def cached_install(name: str, prefix: Path, exe: Path, steps: list[list[str]], what: str) -> Path:
    """``exe``, installed into ``prefix`` by ``steps`` once per machine under a file lock named
    after ``name`` in :func:`cache_root` (a half-finished install is started over)."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    done = prefix / ".canarykit-installed"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.lockf(lock, fcntl.LOCK_EX)
        if done.exists() and exe.exists():
            return exe
        shutil.rmtree(prefix, ignore_errors=True)  # a half-finished install
        for cmd in steps:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
            if proc.returncode != 0:
                raise RuntimeError(f"installing {what} into {prefix} failed ({' '.join(cmd[:3])} ...):\n"
                                   f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
        done.write_text(f"{what}\n")
        return exe


def time_server() -> Path:
    """The ``mcp-server-time`` executable (installed on first use; see the module doc)."""
    venv = cache_root() / f"{PACKAGE}-{VERSION}"
    base = getattr(sys, "_base_executable", sys.executable)
    steps = [[base, "-m", "venv", str(venv)],
             [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
              f"{PACKAGE}=={VERSION}"]]
    return cached_install(PACKAGE, venv, venv / "bin" / PACKAGE, steps, f"{PACKAGE}=={VERSION}")
