"""A fake OpenAI-compatible chat-completions server on 127.0.0.1, scripted per request.

``FakeOpenAIServer(handler)`` serves ``POST /v1/chat/completions`` (and ``GET /v1/models``)
from a thread. ``handler(body, headers, n)`` returns a :class:`Reply`; ``n`` counts requests
from 0. Every request is logged (``requests``), with a per-body counter (``counts``) so
tests can assert that no request was ever repeated.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    body: Any
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


def completion(content: str | None = None, tool_calls: Sequence[tuple[str, str, str]] = (), *,
               finish_reason: str | None = None, prompt_tokens: int = 11, completion_tokens: int = 7,
               model: str = "fake-model") -> dict[str, Any]:
    """A chat.completion body; ``tool_calls`` are (id, name, raw arguments text)."""
    msg: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        msg["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in tool_calls
        ]
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "choices": [{"index": 0, "message": msg, "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop")}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def error_body(message: str, kind: str = "server_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": None}}


def body_key(body: Any) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]


def run_key(body: Any) -> str:
    """Identifies the run a request belongs to: the user prompt and the offered tool names."""
    msgs = body.get("messages", [])
    user = next((m.get("content") for m in msgs if m.get("role") == "user"), "")
    names = [t["function"]["name"] for t in body.get("tools") or []]
    return hashlib.sha256(json.dumps([user, names]).encode()).hexdigest()[:16]


def n_tool_messages(body: Any) -> int:
    return sum(1 for m in body.get("messages", []) if m.get("role") == "tool")


def simple_agent(body: Any, headers: dict[str, str], n: int) -> Reply:
    """Calls the first offered tool once (schema-minimal arguments), then answers."""
    if n_tool_messages(body) == 0 and body.get("tools"):
        fn = body["tools"][0]["function"]
        params = fn.get("parameters") or {}
        args = {k: "x" for k in params.get("required", [])}
        return Reply(completion(None, [("call_a", fn["name"], json.dumps(args))]))
    return Reply(completion("All done: the answer is 42."))


class FakeOpenAIServer:
    def __init__(self, handler: Callable[[Any, dict[str, str], int], Reply] = simple_agent, latency_s: float = 0.0) -> None:
        self.handler = handler
        self.latency_s = latency_s
        self.requests: list[tuple[Any, dict[str, str]]] = []
        self.counts: Counter[str] = Counter()
        self.lock = threading.Lock()
        server = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:
                pass

            def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self) -> None:
                self._send(200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._send(400, error_body("bad json", "invalid_request_error"))
                    return
                hdrs = {k.lower(): v for k, v in self.headers.items()}
                with server.lock:
                    n = len(server.requests)
                    server.requests.append((body, hdrs))
                    server.counts[body_key(body)] += 1
                reply = server.handler(body, hdrs, n)
                delay = server.latency_s + reply.delay_s
                if delay:
                    time.sleep(delay)
                self._send(reply.status, reply.body, reply.headers)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FakeOpenAIServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
