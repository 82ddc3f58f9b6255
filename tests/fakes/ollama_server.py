"""A fake Ollama server: ``POST /api/chat`` (non-streaming JSON), scripted per request."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def chat_reply(content: str = "", tool_calls: list[tuple[str, dict[str, Any]]] | None = None, *,
               model: str = "fake:8b", done_reason: str = "stop") -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        msg["tool_calls"] = [{"function": {"name": n, "arguments": a}} for n, a in tool_calls]
    return {
        "model": model, "created_at": "2025-01-01T00:00:00Z", "message": msg, "done": True,
        "done_reason": done_reason, "prompt_eval_count": 13, "eval_count": 5,
    }


class FakeOllamaServer:
    def __init__(self, handler: Callable[[Any, int], tuple[int, Any]]) -> None:
        self.handler = handler
        self.requests: list[Any] = []
        self.lock = threading.Lock()
        server = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.loads(raw)
                with server.lock:
                    n = len(server.requests)
                    server.requests.append({"path": self.path, **body})
                if self.path != "/api/chat":
                    status, reply = 404, {"error": "not found"}
                else:
                    status, reply = server.handler(body, n)
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def host(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> FakeOllamaServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
