"""A raw JSON-RPC client over a stdio MCP server's pipes: it sends bytes no SDK would send
(10,000-deep arguments, lone surrogates, invalid UTF-8) and reads every line the server writes."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from typing import Any

LIMIT_S = 120


class RawClient:
    """``argv`` started with pipes; :meth:`request` sends one line and waits for the reply to its id."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env={**os.environ, **(env or {})})
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line.decode("utf-8", "replace"))

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def request(self, rid: Any, data: bytes | None = None, method: str = "", params: Any = None,
                timeout: float = LIMIT_S) -> tuple[dict[str, Any], float]:
        """(the reply to ``rid``, seconds it took); ``data`` is sent as it is when given."""
        if data is None:
            data = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}).encode()
        t0 = time.monotonic()
        self.send(data)
        while True:
            left = timeout - (time.monotonic() - t0)
            assert left > 0, f"no reply to request {rid!r} within {timeout} s; stderr: {''.join(self.stderr)[-2000:]}"
            try:
                msg = json.loads(self.lines.get(timeout=left))
            except queue.Empty:
                continue
            if isinstance(msg, dict) and msg.get("id") == rid and "method" not in msg:
                return msg, time.monotonic() - t0

    def initialize(self) -> dict[str, Any]:
        reply, _ = self.request(0, method="initialize", params={
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw-client", "version": "1"}})
        self.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())
        return reply

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(LIMIT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(LIMIT_S)


def bad_requests(tool: str, arg: str) -> dict[str, bytes]:
    """The requests the SDK never answered (issue 28), as raw lines calling ``tool`` with argument ``arg``."""
    def call(rid: int, value: bytes) -> bytes:
        return (b'{"jsonrpc": "2.0", "id": ' + str(rid).encode() + b', "method": "tools/call", "params": {"name": "'
                + tool.encode() + b'", "arguments": {"' + arg.encode() + b'": ' + value + b"}}}")
    return {
        "deep": call(101, b"[" * 10000 + b"]" * 10000),
        "surrogate": call(102, b'"half \\ud800 a pair"'),
        "utf8": call(103, b'"caf\xe9 \xff"'),
        "garbage": call(104, b'"cut'),
    }
