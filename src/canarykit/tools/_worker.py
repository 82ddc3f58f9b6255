"""A hard wall-clock limit on every built-in tool call: the call runs in a worker process that
is killed when it overruns.

Some work cannot be stopped from inside: one SQLite function call (``instr`` over two
60-million-character strings) runs for minutes without giving the progress handler a chance,
and Python cannot interrupt a C function. So :func:`call` sends ``(name, args)`` to a
persistent worker process (:func:`main`, in a Python of its own), waits at most
:data:`CALL_TIME_LIMIT_S` for its answer, and otherwise kills the worker (SIGKILL: it stops
mid-function) and answers a one-line tool error. The next call starts a fresh worker; a
worker that answers in time serves the next call, so the usual cost is one round trip over a
socket (tens of microseconds), not a process per call (``benchmarks/bench_tool_limits.py``).

- Workers are per process (a forked child starts its own) and per concurrent caller: a call
  takes an idle worker or starts one, and gives it back when it answered.
- The time limit starts when the request is sent to a worker that is ready (its start-up,
  about 0.2 s, is not counted).
- A worker ends when its parent dies (it watches ``getppid()``), when its socket closes, and
  is killed at interpreter exit (:func:`shutdown`), so no worker is left computing.
- Inside the worker the call is :func:`canarykit.tools.execute_here`, exactly what an
  in-process call was: the answer (content, error flag, structured data) is byte-identical.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any, Final

from ..types import ToolResult
from ._common import clip_message

__all__ = ["CALL_TIME_LIMIT_S", "call", "shutdown", "worker_count"]

#: Seconds one built-in tool call may take before its worker is killed. The database's own
#: limit (2 s, checked by SQLite's progress handler) answers first whenever SQLite can stop;
#: this one stops what it cannot.
CALL_TIME_LIMIT_S: Final = 3.0
#: Seconds a new worker has to import the tools and report ready.
START_TIMEOUT_S: Final = 60.0
#: Idle workers kept per process (more callers at once start more; the extra ones are closed).
MAX_IDLE: Final = 4


#: The worker process: :func:`canarykit.tools.run.serve` hands :func:`main` the call it answers.
_MAIN: Final = "import sys; from canarykit.tools.run import serve; sys.exit(serve(sys.argv[1:]))"


class _Worker:
    """One worker process and the parent's end of its socket."""

    def __init__(self) -> None:
        parent_sock, child_sock = socket.socketpair()
        try:
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(p for p in (os.path.dirname(os.path.dirname(os.path.dirname(
                os.path.abspath(__file__)))), env.get("PYTHONPATH", "")) if p)
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _MAIN, str(child_sock.fileno()), str(os.getpid())],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, pass_fds=(child_sock.fileno(),), env=env,
                close_fds=True,
            )
        finally:
            child_sock.close()
        self.conn = Connection(parent_sock.detach())
        self.pid = os.getpid()
        if not self.conn.poll(START_TIMEOUT_S):
            self.kill()
            raise RuntimeError(f"the tool worker did not start within {START_TIMEOUT_S:g} s")
        try:
            hello = self.conn.recv()
        except (EOFError, OSError):
            self.kill()
            raise RuntimeError(f"the tool worker exited at start (status {self.proc.wait()})") from None
        if hello != "ready":  # pragma: no cover - a protocol error is a bug
            self.kill()
            raise RuntimeError(f"the tool worker said {hello!r} instead of ready")

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.kill()
        with contextlib.suppress(OSError):
            self.conn.close()
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=5)


class _Pool:
    """The workers of this process: idle ones ready for a call, all of them for shutdown."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle: list[_Worker] = []
        self.all: set[_Worker] = set()
        self.pid = os.getpid()

    def take(self) -> _Worker:
        with self.lock:
            if self.idle:
                return self.idle.pop()
        worker = _Worker()
        with self.lock:
            self.all.add(worker)
        return worker

    def give_back(self, worker: _Worker) -> None:
        with self.lock:
            if len(self.idle) < MAX_IDLE:
                self.idle.append(worker)
                return
            self.all.discard(worker)
        worker.kill()

    def drop(self, worker: _Worker) -> None:
        worker.kill()
        with self.lock:
            self.all.discard(worker)

    def close(self) -> None:
        with self.lock:
            workers, self.all, self.idle = list(self.all), set(), []
        for w in workers:
            w.kill()


_pool: _Pool | None = None
_pool_lock = threading.Lock()


def _the_pool() -> _Pool:
    global _pool
    with _pool_lock:
        if _pool is None or _pool.pid != os.getpid():  # a forked child never touches its parent's workers
            _pool = _Pool()
        return _pool


def worker_count() -> int:
    """Worker processes this process holds (for tests and benchmarks)."""
    pool = _pool
    return len(pool.all) if pool is not None and pool.pid == os.getpid() else 0


def shutdown() -> None:
    """Kill every worker of this process (at exit, and when a served environment stops)."""
    pool = _pool
    if pool is not None and pool.pid == os.getpid():
        pool.close()


atexit.register(shutdown)


def _error(message: str) -> ToolResult:
    return ToolResult(content=json.dumps({"error": clip_message(message)}, ensure_ascii=False, sort_keys=True),
                      is_error=True)


def call(name: str, args: Any, limit_s: float = CALL_TIME_LIMIT_S) -> ToolResult:
    """Run built-in tool ``name`` in a worker, stopped after ``limit_s`` seconds (module doc)."""
    pool = _the_pool()
    for attempt in range(2):  # an idle worker that died meanwhile: the call goes to a fresh one
        try:
            worker = pool.take()
        except (OSError, RuntimeError) as exc:
            return _error(f"{name}: the tool could not be run: {exc}")
        try:
            worker.conn.send((name, args))
            break
        except (OSError, ValueError) as exc:
            pool.drop(worker)
            if attempt:
                return _error(f"{name}: the tool could not be run: {type(exc).__name__}: {exc}")
        except Exception as exc:  # an argument that cannot be sent (pickled): the caller's doing
            pool.give_back(worker)
            return _error(f"arguments for {name} cannot be read: {type(exc).__name__}: {exc}")
    try:
        ready = worker.conn.poll(limit_s)
    except OSError:
        ready = False
    if not ready:
        pool.drop(worker)
        return _error(f"{name} was stopped: the call took longer than the tool's time limit of {limit_s:g} s; "
                      "ask for less (add filters or a LIMIT, smaller inputs)")
    try:
        content, is_error, data = worker.conn.recv()
    except (EOFError, OSError):
        try:
            status: int | None = worker.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            status = None
        pool.drop(worker)
        how = f"signal {-status}" if status is not None and status < 0 else f"status {status}"
        return _error(f"{name} failed: the process running it exited ({how}); ask for less")
    pool.give_back(worker)
    return ToolResult(content=content, is_error=is_error, data=data)


# ----------------------------------------------------------------------------- the worker side


def _watch_parent(parent: int) -> None:
    """End this worker when the process that started it is gone (a parent *thread* ending does
    not matter, unlike ``PR_SET_PDEATHSIG``)."""
    while True:
        time.sleep(0.2)
        if os.getppid() != parent:
            os._exit(0)


def main(argv: list[str], execute_here: Callable[[str, Any], ToolResult]) -> int:
    """The worker: answer ``(name, args)`` requests with ``execute_here``'s
    ``(content, is_error, data)``."""
    fd, parent = int(argv[0]), int(argv[1])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C goes to the parent, which kills us
    conn = Connection(fd)
    threading.Thread(target=_watch_parent, args=(parent,), name="canarykit-worker-parent", daemon=True).start()
    from . import database

    database.warm()
    conn.send("ready")
    while True:
        try:
            name, args = conn.recv()
        except (EOFError, OSError):
            return 0
        result = execute_here(name, args)
        try:
            conn.send((result.content, result.is_error, result.data))
        except (OSError, ValueError):
            return 0

