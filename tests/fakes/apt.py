"""Debian packages a slow test needs (chromium, SLURM and munge), installed one apt-get at a
time: the slow suite runs its modules on both cores, and two concurrent apt-get runs would
fight over dpkg's lock. A file lock serializes them across the test processes."""

from __future__ import annotations

import fcntl
import os
import subprocess
from pathlib import Path

LOCK = Path("/tmp/canarykit-apt.lock")


def apt_install(*packages: str, timeout: float = 1800) -> None:
    """``apt-get update`` then ``apt-get install`` of ``packages`` (root), holding the lock."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    with LOCK.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, timeout=900)
        subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages], check=True, env=env,
                       timeout=timeout)
