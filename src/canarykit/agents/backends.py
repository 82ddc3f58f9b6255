"""Model backends: ``litellm`` (hosted or any OpenAI-compatible gateway) and ``ollama``; the
embedded ``local`` model (:mod:`.local`) reaches its server through :class:`LiteLLMBackend`.

Every backend turns a :class:`~.protocol.ChatRequest` into a normalised
:class:`~.protocol.ChatResponse` and maps failures to :class:`~.protocol.BackendError`
(retryable for 408/409/429, 5xx, timeouts and connection errors). Retrying is the caller's
job (:mod:`.calls`); backends make exactly one attempt.

Keys come only from the environment variable a model spec names (``api_key_env``) and are
passed to the client explicitly; nothing here records request arguments, and every error
message is scrubbed of every configured key (:func:`.secrets.scrub`) before it leaves.
A malformed reply (no choices, a choice without a message, a 200 body that is not a chat
completion) is a retryable :class:`~.protocol.BackendError` labelled ``malformed_reply``
(never ``InternalServerError (500)``: no server failed), never an empty final answer. litellm is imported only when a litellm/local model is used
(the import costs seconds), with ``LITELLM_LOCAL_MODEL_COST_MAP`` set so it never fetches the
cost map over the network; the model layer imports it through a backend's ``prepare()``, before
the first request and outside its timeout (:mod:`.calls`).
"""

from __future__ import annotations

import asyncio
import datetime
import email.utils
import errno
import os
import re
import threading
import time
from collections.abc import Mapping
from typing import Any

from ..store.jsonio import canonical_json, safe_json_loads
from ..store.records import Usage
from .config import AgentConfig
from .protocol import (
    BackendError,
    ChatRequest,
    ChatResponse,
    ToolCall,
    is_retryable_status,
    provider_of,
    register_backend,
)
from .secrets import scrub

#: Characters of a provider's error text kept in a BackendError (after scrubbing).
MAX_ERROR_CHARS = 1000

#: Sent to endpoints that need no key (local servers, fake gateways): litellm would otherwise
#: send OPENAI_API_KEY to a custom api_base.
NO_KEY = "sk-no-key"

_LITELLM_LOCK = threading.Lock()


def import_litellm() -> Any:
    """Import litellm once, offline (bundled cost map), quietly."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    with _LITELLM_LOCK:
        import litellm

        litellm.suppress_debug_info = True
        litellm.telemetry = False
    return litellm


def parse_retry_after(headers: Mapping[str, Any] | None) -> float | None:
    """Seconds from ``retry-after-ms`` / ``retry-after`` (seconds or an HTTP date)."""
    if not headers:
        return None
    lower = {str(k).lower(): v for k, v in dict(headers).items()}
    ms = lower.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except (TypeError, ValueError):
            pass
    ra = lower.get("retry-after")
    if ra is None:
        return _rate_limit_reset(lower)
    try:
        return max(0.0, float(ra))
    except (TypeError, ValueError):
        pass
    try:
        when = email.utils.parsedate_to_datetime(str(ra))
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


#: Rate-limit reset headers (OpenAI's durations such as ``1s`` or ``6m0s``, Anthropic's RFC 3339
#: times, the IETF draft's seconds), read when a 429 carries no Retry-After.
_RESET_HEADERS = ("x-ratelimit-reset-requests", "x-ratelimit-reset-tokens", "anthropic-ratelimit-requests-reset",
                  "anthropic-ratelimit-tokens-reset", "ratelimit-reset")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def _rate_limit_reset(lower: Mapping[str, Any]) -> float | None:
    """Seconds until the earliest rate-limit window named in the headers resets (``None``: none given)."""
    waits = []
    for name in _RESET_HEADERS:
        raw = lower.get(name)
        if raw is None:
            continue
        text = str(raw).strip()
        try:
            waits.append(max(0.0, float(text)))
            continue
        except ValueError:
            pass
        parts = _DURATION.findall(text)
        if parts and "".join(n + u for n, u in parts) == text.replace(" ", ""):
            waits.append(sum(float(n) * _UNIT_S[u] for n, u in parts))
            continue
        try:
            when = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            continue
        if when.tzinfo is not None:
            waits.append(max(0.0, when.timestamp() - time.time()))
    return min(waits) if waits else None


def _exception_headers(exc: BaseException) -> dict[str, Any]:
    out: dict[str, Any] = {}
    response = getattr(exc, "response", None)
    for source in (getattr(response, "headers", None), getattr(exc, "litellm_response_headers", None), getattr(exc, "headers", None)):
        if source:
            try:
                out.update({str(k).lower(): v for k, v in dict(source).items()})
            except (TypeError, ValueError):
                continue
    return out


def _scrub(text: str, secret: str | None) -> str:
    """Scrub first (a key cut in half by clipping would no longer match), then clip."""
    return scrub(text, [secret if secret != NO_KEY else None])[:MAX_ERROR_CHARS]


def _field(obj: Any, name: str) -> Any:
    """``obj.name`` or ``obj[name]`` (LiteLLM objects and OpenAI-shaped dicts alike)."""
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


#: The failure label of a reply that arrived (HTTP 200) but is not a chat completion.
MALFORMED_REPLY = "malformed_reply"
#: How litellm words a 200 reply it could not read (it raises them as InternalServerError
#: with a made-up status 500, indistinguishable from a server's real 500 otherwise).
_LITELLM_MALFORMED = ("Empty or invalid response from LLM endpoint", "provider returned a response with no 'choices'",
                      "provider returned 'choices' that is not a list", "Invalid response object")


def _malformed(problem: str) -> BackendError:
    return BackendError(f"malformed reply: {problem}", error_type=MALFORMED_REPLY, retryable=True)


# --------------------------------------------------------------------------- refused connections

#: The error type of a call whose endpoint refused the connection (nothing listens there).
CONNECTION_REFUSED = "ConnectionRefused"


def host_port(url: str) -> tuple[str, int] | None:
    """``(host, port)`` of an endpoint URL (``http://127.0.0.1:11434``), None without a host."""
    from urllib.parse import urlsplit

    parts = urlsplit(url if "://" in url else f"http://{url}")
    if not parts.hostname:
        return None
    return parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)


def _refused_in_chain(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    for _ in range(12):
        if seen is None:
            return False
        if isinstance(seen, ConnectionRefusedError) or getattr(seen, "errno", None) == errno.ECONNREFUSED:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


async def _refuses(host: str, port: int) -> bool:
    """Whether ``host:port`` refuses a TCP connection now (a client that dropped the cause,
    as Ollama's does, is asked again this way; 2 s at most)."""
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout=2.0)
    except ConnectionRefusedError:
        return True
    except (TimeoutError, OSError):
        return False
    writer.close()
    return False


async def refused_connection(exc: BaseException, url: str | None) -> BackendError | None:
    """A connection failure to ``url`` labelled as what it is when the endpoint refused it:
    ``ConnectionRefused``, naming ``host:port`` (else None: the caller's own mapping stands)."""
    where = host_port(url) if url else None
    if where is None:
        return None
    if not (_refused_in_chain(exc) or await _refuses(*where)):
        return None
    return BackendError(f"connection refused by {where[0]}:{where[1]} (nothing listens there: is the server running?)",
                        error_type=CONNECTION_REFUSED, retryable=True)


# --------------------------------------------------------------------------- litellm


class LiteLLMBackend:
    """Any model litellm reaches: hosted providers or an OpenAI-compatible ``api_base``."""

    cacheable = True

    def __init__(self, spec: Mapping[str, Any], agent_cfg: AgentConfig | None = None, *, kind: str = "litellm",
                 api_base: str | None = None, model: str | None = None, scope_endpoint: str | None = None,
                 default_decoding: Mapping[str, Any] | None = None, completion_fn: Any = None) -> None:
        self.kind = kind
        self.model = str(model or spec.get("model") or "")
        if not self.model:
            raise BackendError(f"model {spec.get('name')!r}: no `model` identifier configured", error_type="ConfigError")
        self.api_base = api_base if api_base is not None else spec.get("api_base")
        self.api_key_env = spec.get("api_key_env")
        self.decoding = {**dict(default_decoding or {}), **dict(spec.get("decoding") or {})}
        self.provider = provider_of(spec)
        endpoint = scope_endpoint or f"{kind}:{self.api_base or ''}"
        self.cache_scope = {"endpoint": endpoint, "model": self.model, "decoding": self.decoding}
        self._litellm: Any = None
        self._price_unknown = False
        #: A synchronous stand-in for ``litellm.completion`` (tests, custom clients): it gets the
        #: same keyword arguments and its reply goes through the same checks and error mapping.
        self.completion_fn = completion_fn

    def _api_key(self) -> str | None:
        if self.api_key_env:
            value = os.environ.get(str(self.api_key_env))
            if not value:
                raise BackendError(f"environment variable {self.api_key_env} (api_key_env) is not set", error_type="MissingAPIKey")
            return value
        return NO_KEY if self.api_base else None

    async def prepare(self) -> None:
        """Import litellm (once per process, in a thread: the event loop keeps serving).

        The model layer awaits this before the first request, outside the call's timeout, so a
        cold import (10-17 s on a loaded machine) never counts against an attempt."""
        if self._litellm is None and self.completion_fn is None:
            self._litellm = await asyncio.to_thread(import_litellm)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        if self._litellm is None and self.completion_fn is None:
            self._litellm = import_litellm()  # a caller that skipped prepare()
        litellm = self._litellm
        key = self._api_key()
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": request.messages,
            "tools": request.tools or None,
            "timeout": request.timeout_s,
            "num_retries": 0,
            "max_retries": 0,  # the OpenAI SDK's own retries too: the retry policy is ours alone
            **self.decoding,
        }
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if key is not None:
            kwargs["api_key"] = key
        t0 = time.perf_counter()
        try:
            if self.completion_fn is not None:
                resp = self.completion_fn(**kwargs)
            else:
                resp = await litellm.acompletion(**kwargs)
        except BackendError:
            raise
        except Exception as exc:  # mapped and classified, never re-raised raw
            mapped = self._map_error(exc, key)
            # LiteLLM reports a refused connection as an InternalServerError (500) "Connection error."
            if self.api_base and mapped.retryable and (mapped.status_code is None or "Connection error" in str(exc)
                                                         or _refused_in_chain(exc)):
                mapped = await refused_connection(exc, str(self.api_base)) or mapped
            raise mapped from None
        latency = time.perf_counter() - t0
        return self._normalise(resp, latency)

    def _map_error(self, exc: Exception, key: str | None) -> BackendError:
        litellm = self._litellm
        status = getattr(exc, "status_code", None)
        try:
            status = int(status) if status is not None else None
        except (TypeError, ValueError):
            status = None
        transient_types: tuple[type[BaseException], ...] = (asyncio.TimeoutError, ConnectionError)
        if litellm is not None:
            transient_types += (litellm.Timeout, litellm.APIConnectionError)
            if isinstance(exc, litellm.Timeout):
                status = status or 408
        if isinstance(exc, asyncio.TimeoutError):
            status = status or 408
        text = str(exc)
        marker = next((m for m in _LITELLM_MALFORMED if m in text), None)
        if marker is not None:  # a 200 reply that is not a chat completion, not a server error
            detail = text[text.index(marker):].splitlines()[0][:300]
            return _malformed(f"the endpoint answered with something that is not a chat completion ({_scrub(detail, key)})")
        return BackendError(
            _scrub(str(exc), key),
            error_type=type(exc).__name__,
            status_code=status,
            retryable=isinstance(exc, transient_types) or is_retryable_status(status),
            retry_after_s=parse_retry_after(_exception_headers(exc)),
        )

    def _normalise(self, resp: Any, latency: float) -> ChatResponse:
        choices = _field(resp, "choices")
        if not isinstance(choices, list | tuple) or not choices:
            raise _malformed("the reply has no choices")
        choice = choices[0]
        msg = _field(choice, "message")
        if msg is None:
            raise _malformed("the first choice has no message")
        calls = []
        for i, tc in enumerate(_field(msg, "tool_calls") or []):
            fn = _field(tc, "function")
            if fn is None:
                raise _malformed(f"tool call {i} has no function")
            args = _field(fn, "arguments")
            if args is None:
                args = ""
            elif not isinstance(args, str):
                try:
                    args = canonical_json(args)
                except (TypeError, ValueError):
                    args = str(args)
            calls.append(ToolCall(id=str(_field(tc, "id") or f"call_{i}"), name=str(_field(fn, "name") or ""), arguments=args))
        content = _field(msg, "content")
        if content is not None and not isinstance(content, str):
            raise _malformed(f"the message content is a {type(content).__name__}, not text")
        usage = _field(resp, "usage")
        u = Usage(int(_field(usage, "prompt_tokens") or 0), int(_field(usage, "completion_tokens") or 0)) if usage else Usage()
        return ChatResponse(
            content=content,
            tool_calls=calls,
            finish_reason=_field(choice, "finish_reason"),
            usage=u,
            cost_usd=self._cost(resp),
            latency_s=latency,
        )

    def _cost(self, resp: Any) -> float | None:
        if self._litellm is None or isinstance(resp, Mapping):
            return None
        hidden = getattr(resp, "_hidden_params", None) or {}
        cost = hidden.get("response_cost") if isinstance(hidden, dict) else None
        if cost is None and not self._price_unknown:
            try:
                cost = self._litellm.completion_cost(completion_response=resp)
            except Exception:  # unknown model: litellm does not know its price; do not ask again
                self._price_unknown = True
                cost = None
        try:
            return None if cost is None else float(cost)
        except (TypeError, ValueError):
            return None


@register_backend("litellm")
def _make_litellm(spec: Mapping[str, Any], agent_cfg: AgentConfig) -> LiteLLMBackend:
    return LiteLLMBackend(spec, agent_cfg)


# --------------------------------------------------------------------------- ollama

_OLLAMA_OPTION_NAMES = {"max_tokens": "num_predict"}


def ollama_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI-form messages in Ollama's form (arguments as objects, tool results by name)."""
    names: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for m in messages:
        role = m.get("role")
        if role == "assistant" and m.get("tool_calls"):
            calls = []
            for tc in m["tool_calls"]:
                fn = tc["function"]
                names[tc["id"]] = fn["name"]
                try:
                    args = safe_json_loads(fn.get("arguments") or "{}", max_chars=100_000)
                except ValueError:
                    args = {}
                calls.append({"function": {"name": fn["name"], "arguments": args if isinstance(args, dict) else {}}})
            out.append({"role": "assistant", "content": m.get("content") or "", "tool_calls": calls})
        elif role == "tool":
            out.append({"role": "tool", "content": m.get("content") or "", "tool_name": names.get(m.get("tool_call_id", ""), "")})
        else:
            out.append({"role": role, "content": m.get("content") or ""})
    return out


def _import_ollama() -> None:
    import httpx  # noqa: F401
    import ollama  # noqa: F401


class OllamaBackend:
    """A local model served by Ollama (``/api/chat``, non-streaming, with tools)."""

    kind = "ollama"
    cacheable = True

    def __init__(self, spec: Mapping[str, Any], agent_cfg: AgentConfig | None = None) -> None:
        self.model = str(spec.get("model") or "")
        if not self.model:
            raise BackendError(f"model {spec.get('name')!r}: no `model` identifier configured", error_type="ConfigError")
        self.host = str(spec.get("host") or spec.get("api_base") or os.environ.get("OLLAMA_HOST") or "http://127.0.0.1:11434")
        self.decoding = dict(spec.get("decoding") or {})
        self.provider = provider_of(spec)
        self.cache_scope = {"endpoint": f"ollama:{self.host}", "model": self.model, "decoding": self.decoding}
        self._clients: dict[int, Any] = {}

    def _client(self, timeout_s: float) -> Any:
        import ollama

        loop_id = id(asyncio.get_running_loop())
        client = self._clients.get(loop_id)
        if client is None:
            client = ollama.AsyncClient(host=self.host, timeout=timeout_s)
            self._clients = {loop_id: client}  # one event loop at a time
        return client

    async def prepare(self) -> None:
        """Import the Ollama client off the event loop, before any timed call."""
        await asyncio.to_thread(_import_ollama)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        import httpx
        import ollama

        options = {_OLLAMA_OPTION_NAMES.get(k, k): v for k, v in self.decoding.items()}
        t0 = time.perf_counter()
        try:
            resp = await self._client(request.timeout_s).chat(
                model=self.model,
                messages=ollama_messages(request.messages),
                tools=request.tools or None,
                options=options or None,
                stream=False,
            )
        except ollama.ResponseError as exc:
            status = getattr(exc, "status_code", None)
            raise BackendError(_scrub(str(exc), None), error_type="ResponseError", status_code=status, retryable=is_retryable_status(status)) from None
        except httpx.TimeoutException as exc:
            raise BackendError(_scrub(f"timeout: {exc}", None), error_type="Timeout", status_code=408, retryable=True) from None
        except (httpx.TransportError, ConnectionError) as exc:
            refused = await refused_connection(exc, self.host)
            raise refused or BackendError(_scrub(f"connection error at {self.host}: {exc}", None), error_type=type(exc).__name__,
                                          retryable=True) from None
        latency = time.perf_counter() - t0
        msg = getattr(resp, "message", None)
        if msg is None:
            raise _malformed("the reply has no message")
        calls = [
            ToolCall(id=f"call_{request.turn}_{i}", name=str(tc.function.name), arguments=canonical_json(dict(tc.function.arguments or {})))
            for i, tc in enumerate(msg.tool_calls or [])
        ]
        return ChatResponse(
            content=msg.content,
            tool_calls=calls,
            finish_reason=getattr(resp, "done_reason", None),
            usage=Usage(int(getattr(resp, "prompt_eval_count", 0) or 0), int(getattr(resp, "eval_count", 0) or 0)),
            cost_usd=None,
            latency_s=latency,
        )


@register_backend("ollama")
def _make_ollama(spec: Mapping[str, Any], agent_cfg: AgentConfig) -> OllamaBackend:
    return OllamaBackend(spec, agent_cfg)
