"""The official MCP reference servers from npm (everything, memory, filesystem), pinned, cached.

:func:`npm_server` installs ``@modelcontextprotocol/server-<name>@VERSION`` once per machine
into ``$CANARYKIT_TEST_CACHE/npm/<name>-<version>`` (default cache: ``~/.cache/canarykit/
test-servers``), under a file lock (parallel test runs wait for one install), and returns its
executable. These versions run on Node 20. The first install needs the npm registry (about
10-30 s each); later runs reuse the cache. Without npm the test is skipped, as for the other
npm servers' tests.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fakes.mcp_time import cache_root, cached_install

VERSION = "2026.8.31"


def npm_server(name: str) -> Path:
    """The executable of ``@modelcontextprotocol/server-<name>`` (installed on first use)."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("npm (Node.js) is not installed")
    prefix = cache_root() / "npm" / f"{name}-{VERSION}"
    package = f"@modelcontextprotocol/server-{name}@{VERSION}"
    steps = [["npm", "install", "--no-audit", "--no-fund", "--prefix", str(prefix), package]]
    return cached_install(f"npm-{name}", prefix, prefix / "node_modules" / ".bin" / f"mcp-server-{name}", steps, package)
