"""The sandbox an isolated MCP server runs in: bubblewrap, whose only writable path is its directory.

``isolate: job`` or ``model`` (``environment.servers[]``) is enforced, not declared: the
server runs under Debian's ``bubblewrap`` (``bwrap``) with

- the whole filesystem mounted read-only (``--ro-bind / /``): the server can read its own
  code, its interpreter and whatever else a normal process may read, and write nothing;
- its ``{workdir}`` mounted read-write over it (``--bind DIR DIR``): the only place a write
  lands, and each agent job has its own (:mod:`canarykit.mcp.workdirs`, locked while the job
  runs, so no two jobs ever write one file);
- a fresh ``/dev`` and ``/proc``, a PID namespace of its own (``--unshare-pid``: the server
  and everything it starts die together) and ``--die-with-parent`` (they die with the
  process that started them, ``kill -9`` included); the network is shared (a server may need
  it).

A write anywhere else (a ``MEMORY_FILE_PATH`` pointing at your own file, a filesystem server
given your real directory) fails in the server with "Read-only file system" and your file is
not touched. Where bubblewrap is missing or cannot create its namespaces (a container that
forbids them), an isolated server is refused with one line saying so
(:func:`require_sandbox`); ``make sandbox`` installs it (``apt-get install bubblewrap``).
``CANARYKIT_BWRAP`` names another bwrap binary.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from ..errors import ConfigError

__all__ = ["BWRAP_ENV", "INSTALL_HINT", "require_sandbox", "sandbox_problem", "sandboxed"]

#: Environment variable naming the bwrap binary (default: ``bwrap`` on PATH).
BWRAP_ENV: Final = "CANARYKIT_BWRAP"
INSTALL_HINT: Final = "install bubblewrap (as root: apt-get install bubblewrap, or make sandbox)"


def _bwrap() -> str | None:
    named = os.environ.get(BWRAP_ENV)
    if named:
        return named if os.access(named, os.X_OK) else None
    return shutil.which("bwrap")


@functools.lru_cache(maxsize=4)
def _probe(bwrap: str) -> str | None:
    try:
        proc = subprocess.run([bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid",
                               "--die-with-parent", "true"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{bwrap} does not run: {exc}"
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        return f"{bwrap} cannot create its sandbox here: {last[:200]}"
    return None


def sandbox_problem() -> str | None:
    """Why no isolated server can run here (None: bubblewrap works)."""
    bwrap = _bwrap()
    if bwrap is None:
        return f"bubblewrap (bwrap) is not installed; {INSTALL_HINT}"
    return _probe(bwrap)


def require_sandbox(source: str, key: str) -> None:
    """Refuse an isolated server where the sandbox cannot run (one line naming ``key``)."""
    problem = sandbox_problem()
    if problem is not None:
        raise ConfigError(source, key, f"isolate: job/model runs the server in a sandbox whose only writable path "
                                       f"is its {{workdir}}, and {problem}")


def sandboxed(command: Sequence[str], workdir: str | os.PathLike[str], cwd: str | None = None) -> list[str]:
    """``command`` run by bubblewrap with ``workdir`` its only writable path (module doc)."""
    bwrap = _bwrap()
    if bwrap is None:
        raise RuntimeError(f"bubblewrap (bwrap) is not installed; {INSTALL_HINT}")
    where = str(Path(workdir).resolve())
    program = command[0]
    if os.sep not in program:  # resolved outside, where the caller's PATH is the one meant
        program = shutil.which(program) or program
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--bind", where, where,
            "--unshare-pid", "--die-with-parent"]
    if cwd:
        argv += ["--chdir", str(Path(cwd).resolve())]
    return [*argv, "--", program, *command[1:]]
