"""Isolated state for the user's MCP servers: the directory each ``{workdir}`` names.

A server of an MCP environment with ``isolate: job`` or ``isolate: model``
(``environment.servers[]``) keeps its state in a directory canarykit gives it: every
``{workdir}`` of its ``command``, ``env`` and ``cwd`` is replaced by that directory's
absolute path (``MEMORY_FILE_PATH={workdir}/memory.jsonl``), so a server that writes
(a memory graph, a database file) writes into a copy of its own, never into the user's
state and never into another job's.

- ``job``: ``<jobs>/<model>/workdirs/<cell>/<server>/`` for the agent job whose summary file is
  ``<jobs>/<model>/<cell>.json``; emptied and seeded each time the job starts its servers.
- ``model``: ``<jobs>/<model>/workdirs/_model/<server>/``, seeded when it is first made and kept
  across the model's jobs and invocations (one history per model; delete it to start afresh).
- Seeding copies ``seed_dir``'s files into the fresh directory.
- While a job uses a directory it holds an exclusive lock on ``<directory>.lock`` (``flock``): a
  second job that would reach the same directory at the same time stops with one line instead.
- Listing the servers' tools (``export_tools``) runs them in a scratch directory of their own,
  seeded the same way and removed afterwards (:meth:`Workdirs.scratch`).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any, Final

from ..errors import ToolEnvironmentError

__all__ = ["MODEL_DIR", "WORKDIR", "Workdirs", "isolated_servers", "seed_hash"]

#: The placeholder a server's command, env and cwd use for its directory.
WORKDIR: Final = "{workdir}"
#: The directory name of ``isolate: model`` (cell names never start with ``_``).
MODEL_DIR: Final = "_model"


def isolated_servers(env_cfg: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The servers of ``environment`` with ``isolate`` job or model."""
    return [s for s in env_cfg.get("servers") or [] if s.get("isolate", "none") != "none"]


def _seed(target: Path, seed_dir: str | None) -> None:
    target.mkdir(parents=True, exist_ok=True)
    if seed_dir:
        shutil.copytree(os.path.expanduser(seed_dir), target, dirs_exist_ok=True, symlinks=True)


def seed_hash(seed_dir: str | None) -> str | None:
    """Content hash of a seed directory (relative paths and bytes of its files), for the run
    identity: another seed is another starting state."""
    if not seed_dir:
        return None
    root = Path(os.path.expanduser(seed_dir))
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(root)).encode("utf-8") + b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


class Workdirs:
    """The directories of one job's isolated servers (server name -> absolute path), locked
    while the job runs; :meth:`close` releases them (and removes a scratch directory)."""

    def __init__(self, dirs: dict[str, Path], locks: list[IO[str]], scratch: Path | None = None) -> None:
        self.dirs = dirs
        self._locks = locks
        self._scratch = scratch

    @classmethod
    def for_job(cls, env_cfg: Mapping[str, Any], job: str | os.PathLike[str] | None) -> Workdirs:
        """The directories of the agent job whose summary file is ``job`` (module doc); with
        no job (a direct call of the runner), a scratch directory removed at :meth:`close`."""
        servers = isolated_servers(env_cfg)
        if not servers:
            return cls({}, [])
        if job is None:
            return cls._scratch_dirs(servers)
        job_path = Path(job).resolve()
        base = job_path.parent / "workdirs"
        dirs: dict[str, Path] = {}
        locks: list[IO[str]] = []
        try:
            for s in servers:
                where = base / (job_path.stem if s["isolate"] == "job" else MODEL_DIR) / str(s["name"])
                where.parent.mkdir(parents=True, exist_ok=True)
                locks.append(_lock(where))
                if s["isolate"] == "job":
                    shutil.rmtree(where, ignore_errors=True)
                    _seed(where, s.get("seed_dir"))
                elif not where.exists():
                    fresh = Path(tempfile.mkdtemp(prefix=f".{where.name}-", dir=where.parent))
                    _seed(fresh, s.get("seed_dir"))
                    os.replace(fresh, where)
                dirs[str(s["name"])] = where
        except BaseException:
            for fh in locks:
                fh.close()
            raise
        return cls(dirs, locks)

    @classmethod
    def _scratch_dirs(cls, servers: list[Mapping[str, Any]]) -> Workdirs:
        root = Path(tempfile.mkdtemp(prefix="canarykit-workdir-"))
        dirs = {}
        for s in servers:
            dirs[str(s["name"])] = root / str(s["name"])
            _seed(dirs[str(s["name"])], s.get("seed_dir"))
        return cls(dirs, [], root)

    @classmethod
    @contextlib.contextmanager
    def scratch(cls, env_cfg: Mapping[str, Any]) -> Iterator[dict[str, Path]]:
        """Seeded throw-away directories for the isolated servers, removed on exit."""
        servers = isolated_servers(env_cfg)
        if not servers:
            yield {}
            return
        dirs = cls._scratch_dirs(servers)
        try:
            yield dirs.dirs
        finally:
            dirs.close()

    def close(self) -> None:
        for fh in self._locks:
            with contextlib.suppress(OSError):
                fh.close()
        self._locks = []
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None


def _lock(where: Path) -> IO[str]:
    """An exclusive lock on ``<where>.lock``, or one line naming the directory that is in use."""
    fh: IO[str] = open(where.parent / f"{where.name}.lock", "a+", encoding="utf-8")  # noqa: SIM115 - held by Workdirs
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.close()
        raise ToolEnvironmentError(f"{where} is in use by another running agent job (another invocation of the same "
                                   "study?): each isolated directory serves one job at a time") from None
    fh.seek(0)
    fh.truncate()
    fh.write(f"{os.getpid()}\n")
    fh.flush()
    return fh
