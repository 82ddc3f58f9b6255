"""The official MCP reference servers from npm (everything, memory, filesystem), pinned, cached.

:func:`npm_server` installs ``@modelcontextprotocol/server-<name>@VERSION`` once per machine
into ``$CANARYKIT_TEST_CACHE/npm/<name>-<version>`` (default cache: ``~/.cache/canarykit/
test-servers``), under a file lock (parallel test runs wait for one install), and returns its
executable. These versions run on Node 20. The first install needs the npm registry (about
10-30 s each); later runs reuse the cache. Without npm the test is skipped, as for the other
npm servers' tests.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from pathlib import Path

import pytest
from fakes.mcp_time import cache_root

VERSION = "2026.8.31"
INSTALL_TIMEOUT_S = 900


def npm_server(name: str) -> Path:
    """The executable of ``@modelcontextprotocol/server-<name>`` (installed on first use)."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("npm (Node.js) is not installed")
    root = cache_root() / "npm"
    root.mkdir(parents=True, exist_ok=True)
    prefix = root / f"{name}-{VERSION}"
    exe = prefix / "node_modules" / ".bin" / f"mcp-server-{name}"
    done = prefix / ".canarykit-installed"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.lockf(lock, fcntl.LOCK_EX)
        if done.exists() and exe.exists():
            return exe
        shutil.rmtree(prefix, ignore_errors=True)  # a half-finished install
        package = f"@modelcontextprotocol/server-{name}@{VERSION}"
        proc = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(prefix), package],
                              capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
        if proc.returncode != 0:
            pytest.fail(f"npm install {package} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
        done.write_text(package + "\n")
        return exe
