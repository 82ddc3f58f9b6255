"""Agent execution: the tool-calling loop, model backends, reference agents and the run store.

- :func:`run_one` runs one task through the loop and returns its :class:`~canarykit.store.records.RunRecord`.
- :func:`run_grid` runs (or reuses) a whole study grid and writes the run index and summary.
- :class:`AgentConfig` is the ``agent`` section of params.yaml, typed and parsed once (its
  defaults are the schema's).
- Backends (:class:`Backend`, registered by name in :data:`BACKENDS`: ``litellm``, ``ollama``,
  ``local``, ``reference``) speak one protocol (:class:`ChatRequest` -> :class:`ChatResponse`).
"""

from .cache import ResponseCache, response_key
from .calls import BackendFailure, CallStats, ModelCaller, RetryPolicy
from .config import AgentConfig, RetryConfig, agent_defaults
from .loop import (
    LOOP_VERSION, SYSTEM_PROMPT, Environment, RunSpec, ToolSet, build_toolset, code_version,
    default_environment, run_one, toolset_from_assembly)
from .protocol import (
    BACKENDS, Backend, BackendError, ChatRequest, ChatResponse, RunContext, ToolCall, make_backend,
    register_backend, registered_backends)
from .runner import INDEX_SCHEMA, ModelTally, RunSummary, exit_with_parent, failure_lines, run_grid
from .store import RunStore, model_identity, run_identity
