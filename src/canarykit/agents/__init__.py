"""Agent execution: the tool-calling loop, model backends, reference agents and the run store.

- :func:`run_one` runs one task through the loop and returns its :class:`~canarykit.store.records.RunRecord`.
- :func:`run_grid` runs (or reuses) a whole study grid and writes the run index and summary.
- :class:`AgentConfig` is the ``agent`` section of params.yaml, typed and parsed once (its
  defaults are the schema's).
- Backends (:class:`Backend`, registered by name in :data:`BACKENDS`: ``litellm``, ``ollama``,
  ``local``, ``reference``) speak one protocol (:class:`ChatRequest` -> :class:`ChatResponse`).
"""

from __future__ import annotations

from .cache import ResponseCache, response_key
from .calls import BackendFailure, CallStats, ModelCaller, RetryPolicy
from .config import AgentConfig, RetryConfig, agent_defaults
from .loop import (
    LOOP_VERSION,
    SYSTEM_PROMPT,
    Environment,
    RunSpec,
    ToolSet,
    build_toolset,
    code_version,
    default_environment,
    run_one,
    toolset_from_assembly,
)
from .protocol import (
    BACKENDS,
    Backend,
    BackendError,
    ChatRequest,
    ChatResponse,
    RunContext,
    ToolCall,
    make_backend,
    register_backend,
    registered_backends,
)
from .runner import INDEX_SCHEMA, ModelTally, RunSummary, exit_with_parent, failure_lines, run_grid
from .store import RunStore, model_identity, run_identity

__all__ = [
    "INDEX_SCHEMA", "LOOP_VERSION", "SYSTEM_PROMPT", "BACKENDS", "AgentConfig", "Backend", "BackendError",
    "BackendFailure", "CallStats", "ChatRequest", "ChatResponse", "Environment", "ModelCaller", "ModelTally",
    "ResponseCache", "RetryConfig", "RetryPolicy", "RunContext", "RunSpec", "RunStore", "RunSummary",
    "ToolCall", "ToolSet", "agent_defaults", "build_toolset", "code_version", "default_environment",
    "exit_with_parent", "failure_lines", "make_backend", "model_identity", "register_backend",
    "registered_backends", "response_key", "run_grid", "run_identity", "run_one", "toolset_from_assembly",
]
