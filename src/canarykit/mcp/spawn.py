"""Starting a stdio MCP server so that nothing it says can break its connection, and nothing of it outlives us.

:func:`stdio_upstream` replaces the SDK's ``stdio_client`` for every server canarykit starts
(the proxy's upstreams, a study's servers, ``list-mcp-tools``):

- **Every line checked** (:func:`canarykit.mcp.wire.check_line`). A reply that cannot be read
  (invalid UTF-8, nested too deep, a lone surrogate, not JSON, over
  :data:`~canarykit.mcp.wire.MAX_MESSAGE_BYTES`) becomes a JSON-RPC error
  (:data:`~canarykit.mcp.wire.MALFORMED_REPLY`) for the one call waiting for it, at once; the
  connection carries on. A bad request of the server gets an error back. A line without a
  readable id is skipped and noted in the server's stderr log.
- **No server left behind.** The server runs in a process group (a session) of its own,
  and a watchdog (:class:`Watchdog`: a tiny ``sh`` in a session of its own, which ignores
  SIGINT, SIGTERM and SIGHUP) holds the read end of a pipe whose only write end is ours.
  When our process ends in any way, ``kill -9`` included, the kernel closes that end; the
  watchdog then sends SIGTERM to the server's whole process group and SIGKILL 2 s later. A
  normal shutdown closes the server's stdin, waits 2 s, then does the same itself.
- **stderr scrubbed**: the server's stderr goes to ``errlog`` line by line through the key
  scrubber (:func:`canarykit.store.secrets.scrub` with the values it was handed).
- **Sandboxed when isolated**: ``workdir`` runs the server under bubblewrap with that
  directory its only writable path (:mod:`canarykit.mcp.sandbox`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, Final

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

from ..store.secrets import scrub
from .sandbox import sandboxed
from .wire import MALFORMED_REPLY, LineReader, WireError, checked_lines, error_reply

__all__ = ["EXIT_GRACE_S", "KILL_GRACE_S", "Launch", "Watchdog", "stdio_upstream"]

#: Seconds a server has to exit after its stdin closes, then after SIGTERM (then SIGKILL).
EXIT_GRACE_S: Final = 1.0
KILL_GRACE_S: Final = 2.0

#: The watchdog: waits for EOF on its stdin (our death), then SIGTERM, then SIGKILL to the group
#: (``kill -15 -PGID``: the form dash's builtin takes for a process group).
_WATCHDOG: Final = ('trap "" INT TERM HUP; cat >/dev/null; kill -15 -"$1" 2>/dev/null || exit 0; '
                    f'sleep {KILL_GRACE_S:g}; kill -9 -"$1" 2>/dev/null; exit 0')
_OPEN_ENDS: set[int] = set()
_ENDS_LOCK = threading.Lock()


def _close_in_child() -> None:
    """A forked child must not keep a watchdog's pipe open (its parent's death would go unseen)."""
    for fd in list(_OPEN_ENDS):
        with contextlib.suppress(OSError):
            os.close(fd)
    _OPEN_ENDS.clear()


os.register_at_fork(after_in_child=_close_in_child)


class Watchdog:
    """Kills process group ``pgid`` (SIGTERM, SIGKILL after :data:`KILL_GRACE_S`) when this
    process ends, however it ends (module doc); :meth:`release` when the group is gone."""

    def __init__(self, pgid: int) -> None:
        read_end, self._write_end = os.pipe()
        try:
            self.proc: subprocess.Popen[bytes] | None = subprocess.Popen(
                ["/bin/sh", "-c", _WATCHDOG, "canarykit-watchdog", str(pgid)], stdin=read_end,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True,
                env={"PATH": os.defpath})  # nothing of ours (no key) in its environment
        except BaseException:
            os.close(self._write_end)
            raise
        finally:
            os.close(read_end)
        with _ENDS_LOCK:
            _OPEN_ENDS.add(self._write_end)

    def release(self) -> None:
        """Stop watching (the group is already gone, or is being stopped by us)."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with _ENDS_LOCK:
            _OPEN_ENDS.discard(self._write_end)
        with contextlib.suppress(OSError):
            os.close(self._write_end)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5)


@dataclass(frozen=True)
class Launch:
    """How to start one stdio server: argv, the variables added to the SDK's safe default
    environment, its working directory, its sandbox directory (None: not sandboxed) and the
    secret values its stderr log is scrubbed of."""

    command: Sequence[str]
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    workdir: str | None = None
    secrets: Sequence[str] = ()

    def argv(self) -> list[str]:
        if self.workdir is not None:
            return sandboxed(self.command, self.workdir, self.cwd)
        return list(self.command)


@contextlib.asynccontextmanager
async def stdio_upstream(
    launch: Launch, errlog: IO[str], on_noise: Callable[[str], None] | None = None,
) -> AsyncIterator[tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]]:
    """Start the server of ``launch`` and yield its (read, write) message streams (module doc).
    ``on_noise(why)`` hears of every line of its stdout that is not an MCP message at all."""
    process = await anyio.open_process(launch.argv(), env={**get_default_environment(), **launch.env}, cwd=launch.cwd,
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       start_new_session=True)
    watchdog = Watchdog(process.pid)
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
    back = write_send.clone()  # errors answering the server's own bad requests
    secrets = list(launch.secrets)

    def note(text: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            errlog.write(scrub(text, secrets) + "\n")
            errlog.flush()

    async def stdout_reader() -> None:
        assert process.stdout is not None
        async with read_send, back:
            async for checked in checked_lines(_receiver(process.stdout)):
                if isinstance(checked, SessionMessage):
                    await read_send.send(checked)
                else:
                    await _contain(checked, read_send, back, note)
                    if on_noise is not None and checked.request_id is None:
                        on_noise(checked.reason)

    async def stderr_pump() -> None:
        assert process.stderr is not None
        lines = LineReader(_receiver(process.stderr), limit=65536)
        while (line := await lines.readline()) is not None:
            note(line[0].decode("utf-8", errors="replace").rstrip())

    async def stdin_writer() -> None:
        assert process.stdin is not None
        try:
            async with write_recv:
                async for message in write_recv:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8", "replace")
                    await process.stdin.send(data + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_send.aclose()  # the session sees the connection end, not a call waiting forever

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(stdout_reader)
            tg.start_soon(stderr_pump)
            tg.start_soon(stdin_writer)
            try:
                yield read_recv, write_send
            finally:
                with anyio.CancelScope(shield=True):
                    await _stop(process)
                tg.cancel_scope.cancel()
    finally:
        watchdog.release()


def _receiver(stream: anyio.abc.ByteReceiveStream) -> Any:
    async def receive() -> bytes:
        try:
            return await stream.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            return b""

    return receive


async def _contain(bad: WireError, to_session: MemoryObjectSendStream[SessionMessage | Exception],
                   to_server: MemoryObjectSendStream[SessionMessage], note: Any) -> None:
    """A line of the server that is not a usable message: an error for the call it answers, an
    error back to the server for its own request, a note in its log for the rest."""
    if bad.is_reply:
        assert bad.request_id is not None
        note(f"canarykit: the server's reply to request {bad.request_id!r} cannot be read: {bad.reason}")
        await to_session.send(error_reply(bad.request_id, MALFORMED_REPLY,
                                          f"the server's reply cannot be read: {bad.reason}"))
    elif bad.is_request:
        assert bad.request_id is not None
        note(f"canarykit: the server's request {bad.request_id!r} cannot be read: {bad.reason}")
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await to_server.send(error_reply(bad.request_id, bad.code, f"canarykit cannot read this request: {bad.reason}"))
    else:
        note(f"canarykit: skipped a line of the server's stdout that is not an MCP message: {bad.reason}")


async def _stop(process: anyio.abc.Process) -> None:
    """Close stdin, wait :data:`EXIT_GRACE_S`, then SIGTERM the group, then SIGKILL it."""
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        if process.stdin is not None:
            await process.stdin.aclose()
    for sig, grace in ((None, EXIT_GRACE_S), (signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, KILL_GRACE_S)):
        if sig is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, sig)
        with anyio.move_on_after(grace):
            while process.returncode is None:
                await anyio.sleep(0.02)
        if process.returncode is not None:
            break
    if process.returncode is not None:  # the server is gone; anything it left in its group goes too
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await stream.aclose()
    # the subprocess transport would otherwise stay open (and complain when collected after its
    # event loop closed); nothing public reaches it, so the attribute walk the SDK uses too
    close = getattr(getattr(getattr(process, "_process", None), "_transport", None), "close", None)
    if callable(close):
        with contextlib.suppress(Exception):
            close()
