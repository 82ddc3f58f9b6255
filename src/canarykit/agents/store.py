"""Run identity and the run store: a finished run is never executed twice.

A run's *identity* is everything that decides what happens in it: the loop version (which
includes the system message), the model spec minus its labels, the offered tool list (its
hash covers every definition and the order), the task (its prompt; plus its plan for
reference agents, which follow it; a task of several user turns adds its follow-ups, its
held-back tools and its starting state), ``max_turns`` and the version of the tool environment
(the source of the real tools and of the canaries' runtime, which decide every tool result
the model reads; with the user's MCP servers, ``environment.kind: mcp``, the hash of their
exported tool list and versions, the runtime's code and ``environment.revision`` instead:
see :mod:`canarykit.mcp.environments`). For reference agents the model *is* code: their implementation (and the
scripted answer they compose) is part of the identity too. Editing the environment thus
re-executes runs, but a model's calls are replayed from the response cache for as long as
the conversation is unchanged, so only conversations that really differ cost a call. Two
runs with one identity are the same experiment: the runner executes it once and copies the
record to the other.

The *run id* is the identity hash plus the run's coordinates (model name, group, condition,
pool, seed, task, and the arm of a ``control`` list), so every (model, condition, pool, seed,
task, arm) has its own record file,
``store_dir/<run_id[:2]>/<run_id>.json``, whose labels are its own.

**Claims.** Before executing a run, a runner claims its identity (:meth:`RunStore.try_claim`):
an exclusive POSIX record lock (``fcntl.lockf``) on ``<store>/../.<store name>.claims/<identity>.lock``.
Two invocations (or shards, or cluster jobs) on one store thus never execute the same run at
once; the second one waits and then reuses the first one's record. The kernel drops the lock
when its process dies (``kill -9`` included), so a crashed run is claimable at once; on a
shared filesystem the lock is held across nodes where the filesystem supports POSIX locks
across clients (NFSv4, NFSv3 with NLM, Lustre mounted ``-o flock``, GPFS/Spectrum Scale,
CephFS, BeeGFS): the lock server releases a crashed node's locks when its lease expires. On a
mount without cross-node locking (NFS ``nolock`` or ``local_lock=all``, Lustre ``localflock``)
claims only hold within a node. Records are written by atomic rename, which every POSIX
filesystem provides.

**Retry gate.** A run index that records failed runs marks its *retry gate*
(:func:`mark_retry_gate`), a small file in the study's own ``runs/retry`` directory
(:func:`retry_gate_path`; never in the shared store, so another study's failures never
change this study's ``dvc status``) that the run rule takes as input: the run stage's
``runs/retry`` output has changed for DVC, and the next Snakemake invocation, when it builds its DAG, dates a
marked gate to that moment (:func:`retry_gate_input`), newer than the index, so the rule is out
of date: a plain ``snakemake`` or ``dvc repro`` re-executes exactly the failed runs. (The job
itself never dates its gate after its outputs: Snakemake refuses a finished job whose outputs
are older than an input.)
A run that leaves none to retry *settles* the gate (:func:`settle_retry_gate`: the same
content every time, dated before the index), so a rerun that fixes the failures is up to date
however quickly it finished. ``agent.retries.rerun_failed`` decides which failures count:
``all`` (default), ``transient`` (runs refused for good, e.g. a 401, are accepted as failed)
or ``none``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import json
import os
import re
import socket
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..store.castore import ContentStore
from ..store.jsonio import content_hash, source_hash, write_json
from ..store.records import RunRecord, normalise_status, read_record, record_json, record_store
from .secrets import configured_values, scrub_values

#: Model-spec keys that name or group a model, or say where its key lives: not part of what
#: the model does, so renaming or regrouping a model never re-runs it.
LABEL_KEYS = frozenset({"name", "group", "api_key_env", "provider"})


@functools.cache
def environment_version() -> str:
    """Hash of the code that answers tool calls: the real tools and the canaries' runtime."""
    pkg = Path(__file__).resolve().parents[1]
    return source_hash(pkg / "tools", pkg / "canaries")


@functools.cache
def reference_version() -> str:
    """Hash of the reference agents' code and of the answer they compose (tasks.compose_answer)."""
    pkg = Path(__file__).resolve().parents[1]
    return source_hash(*sorted((pkg / "agents").glob("reference*.py")), pkg / "agents" / "refparams.py", pkg / "tasks" / "tasks.py")


def model_identity(spec: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in spec.items() if k not in LABEL_KEYS and v is not None}


def run_identity(
    loop_version: str,
    spec: Mapping[str, Any],
    task: Any,
    tool_list_hash: str,
    max_turns: int,
    model_ident: Mapping[str, Any] | None = None,
    *,
    environment: Any = None,
) -> dict[str, Any]:
    """What decides a run (see the module docstring). ``environment``: the tool environment's
    identity (an MCP environment's, :func:`canarykit.mcp.environments.environment_identity`);
    ``None`` for the built-in tools (:func:`environment_version`)."""
    task_ident: dict[str, Any] = {"prompt": task.prompt}
    if spec.get("backend") == "reference":
        task_ident["plan"] = [[step.tool, dict(step.args), *([step.turn] if getattr(step, "turn", 0) else [])]
                              for step in task.plan]
    # a task of several user turns: what they say, what is held back, where the state starts
    for key in ("follow_ups", "tools_from", "setup"):
        if getattr(task, key, None):
            task_ident[key] = getattr(task, key)
    model = dict(model_ident if model_ident is not None else model_identity(spec))
    if spec.get("backend") == "reference":
        model["implementation"] = reference_version()
    return {
        "loop_version": loop_version,
        "environment": environment if environment is not None else environment_version(),
        "model": model,
        "tool_list_hash": tool_list_hash,
        "task": task_ident,
        "max_turns": int(max_turns),
    }


def identity_hash(identity: Mapping[str, Any]) -> str:
    return content_hash(dict(identity))


def run_id_for(
    ident_hash: str, model: str, group: str, condition: str, pool: str, seed: int, task_id: str, arm: str = ""
) -> str:
    """The run id: its identity hash and its coordinates. ``arm`` enters only when it is set
    (a ``control`` list's type), so the ids of every other run are the ids they always had."""
    coords: dict[str, Any] = {"identity": ident_hash, "model": model, "group": group, "condition": condition, "pool": pool,
                              "seed": seed, "task_id": task_id}
    if arm:
        coords["arm"] = arm
    return content_hash(coords, length=40)


#: Claims held by this process. POSIX locks belong to a process, so a second claim of the same
#: identity from this process would succeed (and closing it would drop the first): refuse it here.
_HELD: set[tuple[str, str]] = set()
_HELD_PID = os.getpid()
_HELD_LOCK = threading.Lock()


def _hold_locally(claims_dir: Path, key: str) -> bool:
    global _HELD_PID
    with _HELD_LOCK:
        if os.getpid() != _HELD_PID:  # a forked child holds none of its parent's locks
            _HELD.clear()
            _HELD_PID = os.getpid()
        item = (str(claims_dir), key)
        if item in _HELD:
            return False
        _HELD.add(item)
        return True


def _release_locally(claims_dir: Path, key: str) -> None:
    with _HELD_LOCK:
        _HELD.discard((str(claims_dir), key))


class RunClaim:
    """An exclusive claim on one run identity; :meth:`release` it when the record is saved."""

    def __init__(self, store: RunStore, key: str, path: Path, fd: int) -> None:
        self.store, self.key, self.path, self.fd = store, key, path, fd
        self.released = False

    def release(self) -> None:
        if self.released:
            return
        self.released = True
        try:
            # Unlink while still holding the lock: a waiter that opened the old file sees, once
            # it gets the lock, that the path no longer names it, and starts over.
            os.unlink(self.path)
        except OSError:
            pass
        finally:
            os.close(self.fd)
            self.store._release_local(self.key)

    def __enter__(self) -> RunClaim:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


class RunStore:
    """Run records on disk, one JSON file each (by run id, in a content store), written
    atomically; pointers from identity to a finished record; claims per run identity."""

    def __init__(self, store_dir: str | Path) -> None:
        self.dir = Path(store_dir)
        self.records = record_store(self.dir)
        #: ``<store>/.identities/<h[:2]>/<h>``: the run id of a finished record of identity ``h``.
        self.identities = ContentStore(self.dir / IDENTITY_DIR, suffix="")
        self.claims_dir = self.dir.parent / f".{self.dir.name}.claims"
        #: Configured key values, removed from every record at write time (none: no cost).
        self._secrets = configured_values()

    def try_claim(self, key: str) -> RunClaim | None:
        """Claim run identity ``key`` without waiting; ``None`` if another process (or this
        one) holds it. See the module doc for what the claim relies on."""
        if not _hold_locally(self.claims_dir, key):
            return None
        try:
            self.claims_dir.mkdir(parents=True, exist_ok=True)
            path = self.claims_dir / f"{key}.lock"
            while True:
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
                try:
                    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError as exc:
                    os.close(fd)
                    if exc.errno in (errno.EACCES, errno.EAGAIN):
                        self._release_local(key)
                        return None
                    raise
                try:
                    same = os.fstat(fd).st_ino == os.stat(path).st_ino
                except FileNotFoundError:
                    same = False
                if not same:  # released (and unlinked) between our open and our lock: again
                    os.close(fd)
                    continue
                note = f"{socket.gethostname()} pid {os.getpid()} since {datetime.now(UTC).isoformat()}\n"
                os.ftruncate(fd, 0)
                os.write(fd, note.encode("utf-8"))
                return RunClaim(self, key, path, fd)
        except BaseException:
            self._release_local(key)
            raise

    def _release_local(self, key: str) -> None:
        _release_locally(self.claims_dir, key)

    def path(self, run_id: str) -> Path:
        return self.records.path(run_id)

    def load(self, run_id: str) -> RunRecord | None:
        """The stored record, or ``None`` when there is none or it cannot be read."""
        p = self.path(run_id)
        if not p.exists():
            return None
        try:
            return read_record(p)
        except (InputError, OSError):
            return None

    def finished_json(self, run_id: str) -> dict[str, Any] | None:
        """The stored record's JSON object if the run finished without a backend error (else
        ``None``: re-execute it), its status in today's vocabulary. A plain parse of the
        store's own file that builds no record: the runner checks a whole grid with it."""
        text = self.records.read_text(run_id)
        if text is None:
            return None
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            return None
        if not isinstance(data, dict) or data.get("run_id") != run_id or data.get("error") is not False or not isinstance(data.get("status"), str):
            return None
        data["status"] = normalise_status(data["status"])
        return data

    def finished(self, run_id: str) -> RunRecord | None:
        """The stored record if the run finished without a backend error (else re-execute)."""
        data = self.finished_json(run_id)
        if data is None:
            return None
        try:
            return RunRecord.from_dict(data, str(self.path(run_id)))
        except InputError:
            return None

    def save(self, record: RunRecord) -> Path:
        """Write atomically, byte for byte what :func:`~canarykit.store.records.write_record` writes
        (with any configured key value a reply may have echoed replaced by ``***``).

        A finished record (no backend error) is also indexed by its identity
        (:meth:`finished_by_identity`), so a run whose labels changed (a renamed model, the
        same list under the other pool) reuses it instead of executing again.
        """
        text = record_json(record)
        if self._secrets:
            text = scrub_values(text, self._secrets)
        p = self.records.write_text(record.run_id, text)
        if not record.error and record.identity:
            ident = identity_hash(record.identity)
            if not self.identities.exists(ident):
                self.identities.write_text(ident, record.run_id + "\n")
        return p

    def finished_by_identity(self, ident_hash: str) -> RunRecord | None:
        """A finished record with this identity, whatever its labels (model name, group,
        condition, pool, seed, task id), or ``None``. The identity is what the run sends and
        what answers it (see the module doc): two runs with one identity are one experiment."""
        run_id = (self.identities.read_text(ident_hash) or "").strip()
        try:
            rec = self.finished(run_id) if run_id else None
        except ValueError:  # a damaged pointer: not a run id
            return None
        if rec is None or identity_hash(rec.identity) != ident_hash:
            return None
        return rec


#: Under the store: one small file per identity naming a finished record of it.
IDENTITY_DIR = ".identities"


# --------------------------------------------------------------------------- retry gate

#: The directory of a study's retry gates, beside its ``jobs`` directory of run indexes.
RETRY_DIR = "retry"

#: Seconds a marked gate is dated after the index (and after now): more than the coarsest
#: common mtime granularity (2 s on FAT/exFAT, 1 s on HFS+ and some NFS servers), so the gate
#: is newer than the index on any filesystem. Never relied on to *un*-mark a gate: a run that
#: leaves nothing to retry settles it explicitly (:func:`settle_retry_gate`).
MARK_AHEAD_S = 2.0

#: ``agent.retries.rerun_failed``: which failed runs keep their job out of date.
RERUN_FAILED = ("all", "transient", "none")


def retry_gate_path(index_path: str | Path) -> Path:
    """The retry gate of the run index ``index_path`` (one per index: one per run job), in the
    study's own state, never in the shared run store (another study's failures must not change
    this study's outputs): an index ``<out>/runs/jobs/<model>/<cell>.parquet`` has its gate at
    ``<out>/runs/retry/<model>_<cell>.parquet.json``; an index outside a ``jobs`` directory at
    ``<its directory>/retry/<its name>.json``."""
    p = Path(index_path)
    parents = list(p.parents)
    jobs = next((d for d in parents if d.name == "jobs"), None)
    base, rel = (jobs.parent, p.relative_to(jobs)) if jobs is not None else (p.parent, Path(p.name))
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", rel.as_posix().strip("/")) or "index"
    return base / RETRY_DIR / f"{slug}.json"


def ensure_retry_gate(gate: str | Path) -> Path:
    """Create the gate if it is missing, dated to the epoch (it never triggers a rerun by itself)."""
    p = Path(gate)
    if not p.exists():
        write_json(p, {"failed": 0, "retry": 0})
        os.utime(p, (0, 0))
    return p


def retry_gate_input(index_path: str | Path, *, dry_run: bool = False) -> str | list[str]:
    """What the run rule takes as its ``retry`` input (``rules/common.smk``): the index's gate,
    created (epoch-dated) when missing, except in a dry run (``snakemake -n``), which creates
    nothing: a missing gate is then no input (it would not have triggered a rerun anyway).

    A *marked* gate (runs to retry) is dated now, when the DAG is built: newer than the index
    written by an earlier invocation, so the rule is out of date, and older than the outputs
    the job is about to write, so Snakemake accepts them (a dry run dates it too: it then shows
    the job that a real run would execute)."""
    gate = retry_gate_path(index_path)
    if gate.exists():
        state = read_retry_gate(gate) or {}
        if isinstance(state.get("retry"), int) and state["retry"] > 0:
            _date_marked_gate(gate, index_path)
        return str(gate)
    if dry_run:
        return []
    return str(ensure_retry_gate(gate))


def _date_marked_gate(gate: Path, index_path: str | Path) -> None:
    stamp = time.time()
    index_mtime = _index_mtime(index_path)
    if index_mtime is not None and stamp <= index_mtime:  # an index from the future (clock skew)
        stamp = index_mtime + 0.01
    with contextlib.suppress(OSError):  # a read-only store: the gate keeps its date (rerun with --forcerun)
        os.utime(gate, (stamp, stamp))


def read_retry_gate(gate: str | Path) -> dict[str, Any] | None:
    """The gate's content, or ``None`` when it is missing or unreadable."""
    try:
        data = json.loads(Path(gate).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def failed_runs_in_index(index_path: str | Path) -> int:
    """Rows of a run index marked ``error`` (0 when the index is missing or unreadable)."""
    try:
        import polars as pl

        return int(pl.read_parquet(Path(index_path), columns=["error"])["error"].sum())
    except Exception:  # noqa: BLE001 - no readable index: nothing to retry
        return 0


def _index_mtime(index_path: str | Path) -> float | None:
    try:
        return Path(index_path).stat().st_mtime
    except OSError:
        return None


def mark_retry_gate(gate: str | Path, index_path: str | Path, failed: int, *, retry: int | None = None,
                    accepted: Mapping[str, int] | None = None, policy: str = "all", ahead: bool = False) -> None:
    """Record the failures of ``index_path`` in its gate: ``failed`` runs failed, ``retry`` of
    them (default: all) keep the run rule out of date, the rest (``accepted``: reason -> runs)
    were accepted as failed by ``agent.retries.rerun_failed``.

    With runs to retry the gate is *marked*: its content changes every time (a nonce: DVC sees
    the run stage's ``runs/retry`` output modified). ``ahead``: date it :data:`MARK_AHEAD_S` after the index and
    after now (a job that reads the index, not the gate, may); otherwise (the run job itself,
    whose input the gate is) it is dated at the index, and the next invocation brings it
    forward (:func:`retry_gate_input`). Without runs to retry it is *settled*
    (:func:`settle_retry_gate`)."""
    retry = int(failed) if retry is None else int(retry)
    if retry <= 0:
        settle_retry_gate(gate, index_path, failed, accepted=accepted, policy=policy)
        return
    p = Path(gate)
    write_json(p, {"failed": int(failed), "retry": retry, "accepted": dict(accepted or {}), "policy": policy,
                   "index": str(index_path), "marked_at": datetime.now(UTC).isoformat(), "nonce": time.time_ns()})
    index_mtime = _index_mtime(index_path)
    if ahead:
        stamp = max(time.time(), index_mtime if index_mtime is not None else 0.0) + MARK_AHEAD_S
    else:
        stamp = index_mtime if index_mtime is not None else time.time()
    os.utime(p, (stamp, stamp))


def settle_retry_gate(gate: str | Path, index_path: str | Path, failed: int = 0, *,
                      accepted: Mapping[str, int] | None = None, policy: str = "all") -> None:
    """The index leaves nothing to retry: the gate's content is the same on every such run
    (DVC sees no change) and it is dated before the index, however fast the run was
    (Snakemake sees nothing newer than the rule's outputs), whatever it was marked before."""
    p = Path(gate)
    doc: dict[str, Any] = {"failed": int(failed), "retry": 0}
    if failed:
        doc.update(accepted=dict(accepted or {}), policy=policy)
    write_json(p, doc)
    index_mtime = _index_mtime(index_path)
    # before the index (by more than any mtime granularity), never in the future; distinct
    # from run to run (the index is rewritten), so no content cache keyed on mtime goes stale
    stamp = max(0.0, (index_mtime if index_mtime is not None else time.time()) - MARK_AHEAD_S)
    os.utime(p, (stamp, stamp))


def mark_failed_runs_for_retry(index_path: str | Path) -> int:
    """Mark the retry gate of ``index_path`` again (for DVC: every job that reads the index
    after the run stage) if the run job left runs to retry; return their number.

    The gate's ``retry`` (what the run job decided under ``agent.retries.rerun_failed``) is
    authoritative; a gate without it (missing, unreadable, or older) retries every failed run."""
    gate = retry_gate_path(index_path)
    failed = failed_runs_in_index(index_path)
    if not failed:
        return 0
    state = read_retry_gate(gate) or {}
    retry = state.get("retry")
    if not isinstance(retry, int) or state.get("failed") != failed:
        retry = failed
    if retry:
        mark_retry_gate(gate, index_path, failed, retry=retry, accepted=state.get("accepted") or {},
                        policy=str(state.get("policy") or "all"), ahead=True)
    return int(retry)
