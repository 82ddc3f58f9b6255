"""bubblewrap for the tests that run isolated MCP servers: installed once (Debian's package, as
root, under the apt lock of :mod:`fakes.apt`) where it is missing, as a fresh CI machine has it.

The package lists of a fresh machine are usually there already, so the install is tried
without ``apt-get update`` first (a few seconds), and with it only when that fails.
"""

from __future__ import annotations

import fcntl
import os
import subprocess

import pytest

from canarykit.mcp.sandbox import sandbox_problem
from fakes.apt import LOCK


def ensure_bwrap() -> None:
    """Make :func:`canarykit.mcp.sandbox.sandbox_problem` say None, or fail the test saying why."""
    if sandbox_problem() is None:
        return
    if os.geteuid() != 0:
        pytest.fail(f"isolated MCP servers need bubblewrap: {sandbox_problem()} (as root: apt-get install bubblewrap)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "bubblewrap"]
    with LOCK.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        if subprocess.run(install, env=env, capture_output=True, timeout=600).returncode != 0:
            subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, timeout=900)
            subprocess.run(install, check=True, env=env, timeout=600)
    from canarykit.mcp import sandbox

    sandbox._probe.cache_clear()
    problem = sandbox_problem()
    assert problem is None, problem
