"""The backend protocol: what the loop sends a model and what it gets back.

Every agent, a hosted model, a local one or a reference agent, speaks this one protocol, so
they all run through the same loop (section 4: "removes per-provider adapter confounds").
Backends are registered by name in :data:`BACKENDS`; ``params.yaml`` selects one per model
with ``backend:``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..registry import Registry
from ..store.records import OfferedTool, Usage
from .config import AgentConfig, agent_defaults
from .secrets import scrub

if TYPE_CHECKING:
    from ..types import ToolResult


@dataclass(frozen=True)
class ToolCall:
    """One tool call as the model sent it: ``arguments`` is the raw text, never trusted."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class RunContext:
    """Read-only facts about the run, for reference agents only (models never see it).

    ``evidence`` is the loop's structured view of the tool results already shown to the agent
    in the conversation: (tool name, parsed arguments, result), in call order.
    """

    run_id: str
    identity_hash: str
    task: Any
    offered: Sequence[OfferedTool]
    tools: Sequence[Mapping[str, Any]]
    evidence: Sequence[tuple[str, dict[str, Any], ToolResult]]
    compose_answer: Callable[[Sequence[tuple[str, dict[str, Any], ToolResult]]], str]


@dataclass
class ChatRequest:
    """One model call: the whole conversation so far plus the offered tools (OpenAI form)."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    turn: int
    #: seconds (the model layer sets its own; default: ``agent.timeout_s``'s schema default)
    timeout_s: float = field(default_factory=lambda: agent_defaults().timeout_s)
    context: RunContext | None = None


@dataclass
class ChatResponse:
    """A backend's answer, normalised across providers."""

    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None
    latency_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "content": self.content,
            "tool_calls": [[c.id, c.name, c.arguments] for c in self.tool_calls],
            "finish_reason": self.finish_reason,
            "usage": {"prompt_tokens": self.usage.prompt_tokens, "completion_tokens": self.usage.completion_tokens},
            "cost_usd": self.cost_usd,
            "latency_s": self.latency_s,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ChatResponse:
        calls = [ToolCall(str(c[0]), str(c[1]), str(c[2])) for c in d.get("tool_calls") or []]
        u = d.get("usage") or {}
        cost = d.get("cost_usd")
        return cls(
            content=d.get("content"),
            tool_calls=calls,
            finish_reason=d.get("finish_reason"),
            usage=Usage(int(u.get("prompt_tokens", 0)), int(u.get("completion_tokens", 0))),
            cost_usd=None if cost is None else float(cost),
            latency_s=float(d.get("latency_s", 0.0)),
        )


class BackendError(Exception):
    """A model call failed. ``retryable`` follows the retry policy (429/5xx/timeouts/connection,
    malformed replies). The message is scrubbed of every configured key when it is made."""

    def __init__(
        self,
        message: str,
        *,
        error_type: str = "BackendError",
        status_code: int | None = None,
        retryable: bool = False,
        retry_after_s: float | None = None,
    ) -> None:
        message = scrub(message)
        super().__init__(message)
        self.message = message
        self.error_type = error_type
        self.status_code = status_code
        self.retryable = retryable
        self.retry_after_s = retry_after_s


    @property
    def reason(self) -> str:
        """``ErrorType (status)``: how failures are grouped in summaries."""
        return f"{self.error_type} ({self.status_code})" if self.status_code else self.error_type


#: HTTP statuses worth another attempt; every other 4xx is the request's fault.
RETRYABLE_STATUS = frozenset({408, 409, 429})


def is_retryable_status(status: int | None) -> bool:
    return status is not None and (status in RETRYABLE_STATUS or status >= 500)


#: Failures without an HTTP status that a later attempt can cure: timeouts, connection errors,
#: malformed replies (``malformed_reply``; records written before it say ``MalformedResponse``),
#: a tool server that died, a spent budget (each invocation has its own).
TRANSIENT_ERROR_TYPES = frozenset({
    "Timeout", "TimeoutError", "APIConnectionError", "ConnectionError", "ConnectionRefused", "ServiceUnavailableError",
    "InternalServerError", "RateLimitError", "MalformedResponse", "ToolServerError", "BudgetExhausted",
    "malformed_reply",
})
_REASON = re.compile(r"^(?P<type>.*?)(?: \((?P<status>\d{3})\))?$")


def is_transient_reason(reason: str) -> bool:
    """Whether a failure reason (``ErrorType (status)``, :attr:`BackendError.reason`) is
    transient: a retryable status, or one of :data:`TRANSIENT_ERROR_TYPES`. Anything else
    (400, 401, 403, 404, 422, a missing key, an unexpected client error) is a refusal that
    a retry cannot fix."""
    m = _REASON.match(reason.strip())
    if m is None:  # pragma: no cover - the pattern matches every string
        return False
    if m.group("status"):
        return is_retryable_status(int(m.group("status")))
    return m.group("type") in TRANSIENT_ERROR_TYPES


@runtime_checkable
class Backend(Protocol):
    """A model (or reference agent) behind the loop.

    ``kind`` is the registered backend name recorded in run records; ``cache_scope`` is what,
    besides the conversation and tools, decides a response (endpoint, model, decoding; never
    a key) and keys the response cache; ``cacheable`` is false for reference agents, whose
    answers cost nothing; ``provider`` picks the concurrency pool.

    A backend may also define ``async def prepare(self) -> None``: one-off set-up (importing a
    heavy client, starting a local server) that the model layer awaits before the first
    request, outside the call's timeout (it is optional, so it is not part of the protocol).
    """

    @property
    def kind(self) -> str: ...

    @property
    def cache_scope(self) -> Mapping[str, Any]: ...

    @property
    def cacheable(self) -> bool: ...

    @property
    def provider(self) -> str: ...

    async def complete(self, request: ChatRequest) -> ChatResponse: ...


#: A backend factory: ``(model_spec, agent_config) -> Backend``, called with the
#: :class:`~.config.AgentConfig` (typed loosely: a factory may declare it as the mapping it was).
BackendFactory = Callable[[Mapping[str, Any], Any], Backend]

#: Every backend by name (``params.yaml`` ``models[].backend``). Implementations register
#: themselves where they are defined (``@register_backend("litellm")``); the entries below
#: name the module that does, so looking a backend up imports only that module and this one
#: never imports an implementation.
BACKENDS: Registry[BackendFactory] = Registry("backend", lazy={
    "litellm": "canarykit.agents.backends",
    "ollama": "canarykit.agents.backends",
    "local": "canarykit.agents.local",
    "reference": "canarykit.agents.reference",
})


def register_backend(name: str) -> Callable[[BackendFactory], BackendFactory]:
    """Register a backend factory ``(model_spec, agent_config) -> Backend`` under ``name``."""
    return BACKENDS.register(name)


def registered_backends() -> tuple[str, ...]:
    return tuple(BACKENDS.names())


def make_backend(spec: Mapping[str, Any], agent_cfg: AgentConfig | Mapping[str, Any] | None = None,
                 source: str = "params.yaml") -> Backend:
    """Build the backend a model spec names (``backend:`` key)."""
    factory = BACKENDS.get(str(spec.get("backend")), source=source, field=f"models[{spec.get('name')}].backend")
    return factory(spec, agent_defaults() if agent_cfg is None else AgentConfig.parse(agent_cfg, source))


def provider_of(spec: Mapping[str, Any]) -> str:
    """The concurrency pool of a model: ``provider``, else the model id's prefix, else the backend."""
    if spec.get("provider"):
        return str(spec["provider"])
    backend = str(spec.get("backend", ""))
    if backend in ("ollama", "reference", "local"):
        return backend
    model = str(spec.get("model") or "")
    return model.split("/", 1)[0] if "/" in model else (backend or "default")
