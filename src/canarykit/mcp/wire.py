"""The wire of canarykit's MCP stdio connections: every line is checked before the SDK reads it.

A stdio MCP connection is one JSON-RPC message per line. The SDK parses each line whole and,
on a line it cannot parse, has nobody to answer: a client's request that is nested too deep or
holds a lone surrogate gets no reply at all, and an upstream's reply with invalid UTF-8 ends
the connection (every later call waiting out its timeout). So both ends of canarykit's stdio
connections read lines through :func:`check_line` first:

- a line longer than :data:`MAX_MESSAGE_BYTES`, not UTF-8, not JSON, nested deeper than
  :data:`MAX_NESTING` levels, holding a string with a lone surrogate (``"\\ud800"``: not
  Unicode text) or not a JSON-RPC message is a :class:`WireError` naming the limit it broke;
- its request id is read from the raw text even so (:func:`top_level_id`: the ``id`` member of
  the top-level object, found by a scanner that never recurses), so that the one message it
  belongs to is answered at once: a client's request gets a JSON-RPC error
  (:func:`error_reply`, code :data:`INVALID_PARAMS` or :data:`PARSE_ERROR`); an upstream's
  reply becomes an error for the call that waits for it (code :data:`MALFORMED_REPLY`), and
  an upstream's request gets an error sent back. The connection carries on;
- a bad line without a readable id (a stray print, a banner) is skipped and reported.

:func:`guarded_stdio_server` is the server side (``canarykit proxy`` and ``serve-tools``
serve through it); :mod:`canarykit.mcp.spawn` is the client side (upstream servers).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import sys
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import IO, Any, Final

import anyio
import anyio.from_thread
import anyio.lowlevel
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

__all__ = [
    "INVALID_PARAMS", "INVALID_REQUEST", "MALFORMED_REPLY", "MAX_MESSAGE_BYTES", "MAX_NESTING", "PARSE_ERROR",
    "LineReader", "WireError", "check_line", "checked_lines", "error_reply", "guarded_stdio_server", "top_level_id",
]

#: One MCP message (one line) larger than this is refused (32 MiB).
MAX_MESSAGE_BYTES: Final = 32 * 1024 * 1024
#: JSON nesting allowed in one MCP message, its JSON-RPC envelope included (the SDK's own
#: parser gives up near 200; a tool definition may nest 32 levels, canarykit's own limit).
MAX_NESTING: Final = 192
#: JSON-RPC's codes, and canarykit's for an upstream reply that cannot be read (JSON-RPC
#: leaves -32000..-32099 to implementations).
PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
INVALID_PARAMS: Final = -32602
MALFORMED_REPLY: Final = -32050

_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_TOKEN: Final = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|-?\d+|true|false|null|[^\s{}\[\]:,"]+')


@dataclass(frozen=True)
class WireError:
    """A line that is not a usable MCP message: why (naming the limit), its JSON-RPC code, and
    what could still be read of it (its ``id``; whether it has a ``method``: a request)."""

    reason: str
    code: int
    request_id: int | str | None = None
    has_method: bool = False

    @property
    def is_request(self) -> bool:
        return self.has_method and self.request_id is not None

    @property
    def is_reply(self) -> bool:
        return not self.has_method and self.request_id is not None


def _depth_over(obj: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        node, d = stack.pop()
        if isinstance(node, dict | list):
            if d > limit:
                return True
            stack.extend((v, d + 1) for v in (node.values() if isinstance(node, dict) else node))
    return False


def _lone_surrogate(obj: Any) -> str | None:
    """The first string (key or value) of ``obj`` that holds a lone surrogate, escaped."""
    stack = [obj]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            try:
                node.encode("utf-8")
            except UnicodeEncodeError as exc:
                return f"\\u{ord(node[exc.start]):04x}"
        elif isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return None


def top_level_id(text: str) -> tuple[int | str | None, bool]:
    """(the ``id`` of the top-level JSON object in ``text``, whether it has a ``method``), read
    without parsing the rest: works on text that is cut, nested 10,000 deep or not valid JSON
    further on. (None, False) when there is no top-level object or no such member."""
    depth = 0
    key: str | None = None
    after_colon = False
    found_id: int | str | None = None
    has_method = False
    last: str | None = None
    for m in _TOKEN.finditer(text):
        tok = m.group()
        if tok in "{[":
            if depth == 0 and tok == "[":
                return None, False
            depth += 1
        elif tok in "}]":
            depth -= 1
            if depth <= 0:
                break
        elif depth == 1:
            if tok == ":":
                key = _string(last)
                after_colon = True
            elif tok == ",":
                key, after_colon = None, False
            elif after_colon and key is not None:
                if key == "id" and found_id is None:
                    found_id = _scalar_id(tok)
                elif key == "method":
                    has_method = True
                after_colon = False
        if depth == 1 and tok not in ",:":
            last = tok
        if found_id is not None and has_method:
            break
    return found_id, has_method


def _string(tok: str | None) -> str | None:
    if tok is None or not tok.startswith('"'):
        return None
    try:
        value = json.loads(tok)
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def _scalar_id(tok: str) -> int | str | None:
    if tok.startswith('"'):
        return _string(tok)
    try:
        return int(tok)
    except ValueError:
        return None


def check_line(raw: bytes, *, cut: bool = False, limit: int = MAX_MESSAGE_BYTES) -> SessionMessage | WireError:
    """One line of a stdio connection as an MCP message, or why it is not one (module doc).
    ``cut``: ``raw`` is the head of a line longer than ``limit`` (:class:`LineReader`)."""
    if cut or len(raw) > limit:
        rid, has_method = top_level_id(raw[:65536].decode("utf-8", errors="replace"))
        return WireError(f"a message of over {limit:,} bytes: over canarykit's limit for one MCP message",
                         INVALID_REQUEST, rid, has_method)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        rid, has_method = top_level_id(raw.decode("utf-8", errors="replace"))
        return WireError(f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})", PARSE_ERROR, rid,
                         has_method)
    try:
        obj = json.loads(text)
    except RecursionError:
        rid, has_method = top_level_id(text)
        return WireError(f"nested deeper than {MAX_NESTING} levels (canarykit's limit for one MCP message)",
                         INVALID_PARAMS, rid, has_method)
    except ValueError as exc:
        rid, has_method = top_level_id(text)
        return WireError(f"not JSON ({str(exc)[:120]})", PARSE_ERROR, rid, has_method)
    rid, has_method = _ids(obj, text)
    if _depth_over(obj, MAX_NESTING):
        return WireError(f"nested deeper than {MAX_NESTING} levels (canarykit's limit for one MCP message)",
                         INVALID_PARAMS, rid, has_method)
    if _SURROGATE_ESCAPE.search(text) is not None:
        lone = _lone_surrogate(obj)
        if lone is not None:
            return WireError(f"a string holds a lone surrogate ({lone}), which is not Unicode text", INVALID_PARAMS,
                             rid, has_method)
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(text, by_name=False))
    except ValueError as exc:
        first = str(exc).strip().splitlines()
        return WireError(f"not a JSON-RPC message ({first[-1].strip()[:160] if first else type(exc).__name__})",
                         INVALID_REQUEST, rid, has_method)


def _ids(obj: Any, text: str) -> tuple[int | str | None, bool]:
    if not isinstance(obj, dict):
        return None, False
    rid = obj.get("id")
    if isinstance(rid, bool) or not isinstance(rid, int | str):
        rid = None
    return rid, "method" in obj


def error_reply(request_id: int | str, code: int, message: str) -> SessionMessage:
    """A JSON-RPC error answering ``request_id``."""
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id,
                                             error=types.ErrorData(code=code, message=message)))


class LineReader:
    """Lines of a byte stream, each at most ``limit`` bytes: of a longer line only its first
    64 KiB are kept (enough to read its id) and the rest is read and dropped, so no line fills
    the memory."""

    def __init__(self, receive: Callable[[], Any], limit: int = MAX_MESSAGE_BYTES) -> None:
        self._receive = receive
        self.limit = limit
        self._buffer = bytearray()
        self._eof = False

    async def readline(self) -> tuple[bytes, bool] | None:
        """(the next line without its newline, whether it was cut); None at the end."""
        head: bytes | None = None  # set while dropping the rest of an over-long line
        while True:
            at = self._buffer.find(b"\n")
            if at >= 0:
                line = bytes(self._buffer[:at])
                del self._buffer[: at + 1]
                if head is not None:
                    return head, True
                return (line[:65536], True) if len(line) > self.limit else (line, False)
            if head is None and len(self._buffer) > self.limit:
                head = bytes(self._buffer[:65536])
            if head is not None:
                self._buffer.clear()
            if self._eof:
                if head is not None:
                    return head, True
                if self._buffer:
                    line = bytes(self._buffer)
                    self._buffer.clear()
                    return line, False
                return None
            chunk = await self._receive()
            if not chunk:
                self._eof = True
            else:
                self._buffer.extend(chunk)


async def checked_lines(receive: Callable[[], Any], limit: int = MAX_MESSAGE_BYTES) -> AsyncIterator[SessionMessage | WireError]:
    """Every non-blank line of a byte stream, checked (:func:`check_line`), until its end."""
    lines = LineReader(receive, limit)
    while (line := await lines.readline()) is not None:
        raw, cut = line
        if raw.strip():
            yield check_line(raw, cut=cut)


def _divert(fd: int, mode: int) -> int:
    """A private duplicate of ``fd``; ``fd`` itself then points at /dev/null (stdin) or stderr
    (stdout), so that a handler's stray print or a child process cannot reach the wire."""
    private = os.dup(fd)
    try:
        target = os.open(os.devnull, os.O_RDONLY) if mode == os.O_RDONLY else os.dup(2)
        os.dup2(target, fd)
        os.close(target)
    except OSError:
        pass
    return private


class _Pipes:
    """This process's stdin and stdout for an MCP server, each served by a daemon thread of its
    own: a read blocked on a client that neither writes nor closes (or a write blocked on one
    that does not read) never keeps the process from exiting once it is told to stop."""

    def __init__(self, token: Any) -> None:
        self.in_fd, self.out_fd = _divert(0, os.O_RDONLY), _divert(1, os.O_WRONLY)
        self.chunks_in, self.chunks = anyio.create_memory_object_stream[bytes](16)
        self.out: queue.Queue[bytes | None] = queue.Queue()
        self.token = token
        threading.Thread(target=self._read, name="canarykit-stdin", daemon=True).start()
        threading.Thread(target=self._write, name="canarykit-stdout", daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.in_fd, 65536)
            except OSError:
                chunk = b""
            try:
                anyio.from_thread.run(self.chunks_in.send, chunk, token=self.token)
            except Exception:  # noqa: BLE001 - the server stopped listening: nothing more to do
                return
            if not chunk:
                return

    def _write(self) -> None:
        while (data := self.out.get()) is not None:
            try:
                _write_all(self.out_fd, data)
            except OSError:
                pass
            finally:
                self.out.task_done()
        self.out.task_done()

    async def receive(self) -> bytes:
        try:
            return await self.chunks.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            return b""

    async def close(self) -> None:
        """Let what was written go out (up to 2 s), then give the process its stdin and stdout back."""
        self.out.put(None)
        with anyio.move_on_after(2):
            while self.out.unfinished_tasks:
                await anyio.sleep(0.01)
        self.chunks.close()
        for fd, private in ((0, self.in_fd), (1, self.out_fd)):
            with contextlib.suppress(OSError):
                os.dup2(private, fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


@contextlib.asynccontextmanager
async def guarded_stdio_server(
    log: IO[str] | None = None, on_rejected: Callable[[WireError], None] | None = None,
) -> AsyncIterator[tuple[MemoryObjectReceiveStream[SessionMessage | Exception],
                         MemoryObjectSendStream[SessionMessage]]]:
    """The (read, write) streams of an MCP server on this process's stdin and stdout, every
    line checked (module doc): a request the server could not read is answered at once with a
    JSON-RPC error naming the limit it broke; anything else that is not a message is reported
    on ``log`` (default stderr) and skipped. ``on_rejected`` sees every refused line. While it
    serves, fds 0 and 1 point at /dev/null and stderr, so a stray print or a child process
    cannot reach the wire."""
    say = log if log is not None else sys.stderr
    pipes = _Pipes(anyio.lowlevel.current_token())
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
    replies = write_send.clone()

    async def reader() -> None:
        async with read_send, replies:
            async for checked in checked_lines(pipes.receive):
                if isinstance(checked, SessionMessage):
                    await read_send.send(checked)
                    continue
                if on_rejected is not None:
                    on_rejected(checked)
                if checked.is_request:
                    assert checked.request_id is not None
                    await replies.send(error_reply(checked.request_id, checked.code,
                                                   f"canarykit refused this request: {checked.reason}"))
                else:
                    print(f"canarykit: skipped a line of stdin that is not an MCP request: {checked.reason}",
                          file=say, flush=True)

    async def writer() -> None:
        async with write_recv:
            async for message in write_recv:
                pipes.out.put(message.message.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8") + b"\n")

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            tg.start_soon(writer)
            try:
                yield read_recv, write_send
            finally:
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await pipes.close()
