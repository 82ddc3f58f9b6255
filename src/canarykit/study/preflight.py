"""Before a study spends anything: every model's key variable is set, and (on request) every
backend answers. ``canarykit validate-config`` runs these; each problem is one line naming
the model (its key in the config) and the variable or endpoint.

- :func:`missing_keys`: a model's ``api_key_env``, else, for a hosted LiteLLM model without
  an ``api_base``, the variables LiteLLM itself says the provider needs
  (``litellm.validate_environment``: ``OPENAI_API_KEY`` for ``openai/...``).
- :func:`unreachable_backends`: one cheap request per model (one user word, no tools, one
  attempt, :data:`PROBE_TIMEOUT_S`) through the model layer (:class:`~canarykit.agents.calls.ModelCaller`,
  without its cache: a cached answer would prove nothing).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

#: Seconds one probe request may take.
PROBE_TIMEOUT_S = 10.0


#: The key variables of the most used hosted providers, as ``litellm.validate_environment``
#: names them (written out by hand so that checking a profile of these does not pay
#: LiteLLM's 10-30 s import; any other provider asks LiteLLM itself).
KNOWN_PROVIDER_KEYS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": ("GEMINI_API_KEY",),  # or GOOGLE_API_KEY (ALTERNATIVES)
    "vertex_ai": ("VERTEXAI_PROJECT", "VERTEXAI_LOCATION"),
    "mistral": ("MISTRAL_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "together_ai": ("TOGETHERAI_API_KEY",),
}
#: A variable LiteLLM takes in place of another.
ALTERNATIVES = {"GEMINI_API_KEY": "GOOGLE_API_KEY"}


def key_variables(spec: Mapping[str, Any]) -> list[str]:
    """The environment variables a model's calls need (none for reference agents, Ollama and
    the embedded model)."""
    if spec.get("api_key_env"):
        return [str(spec["api_key_env"])]
    if spec.get("backend") != "litellm" or spec.get("api_base") or not spec.get("model"):
        return []
    provider = str(spec["model"]).split("/", 1)[0] if "/" in str(spec["model"]) else ""
    if provider in KNOWN_PROVIDER_KEYS:
        return [v for v in KNOWN_PROVIDER_KEYS[provider] if not (os.environ.get(v) or os.environ.get(ALTERNATIVES.get(v, "")))]
    from ..agents.backends import import_litellm

    try:
        found = import_litellm().validate_environment(model=str(spec["model"]))
    except Exception:  # a model id LiteLLM does not know: the run's own error will say so
        return []
    return [str(k) for k in found.get("missing_keys") or []]


def missing_keys(models: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per model whose key variable is unset, e.g. ``models[1] (gpt-4.1): OPENAI_API_KEY
    is not set (the openai/gpt-4.1 calls need it; export it, never write it into a file)``."""
    lines = []
    for i, m in enumerate(models):
        unset = [v for v in key_variables(m) if not os.environ.get(v)]
        if unset:
            lines.append(f"models[{i}] ({m.get('name')}): {', '.join(unset)} {'is' if len(unset) == 1 else 'are'} not set "
                         f"(the {m.get('model') or m.get('backend')} calls need it; export it in the shell, never write it "
                         "into a file)")
    return lines


def unreachable_backends(models: Sequence[Mapping[str, Any]], agent: Mapping[str, Any] | None = None,
                         timeout_s: float = PROBE_TIMEOUT_S) -> list[str]:
    """One line per model whose backend does not answer one cheap request within ``timeout_s``
    (reference agents are in-process and skipped): the model, where its calls go, and why."""
    from ..agents.calls import BackendFailure, ModelCaller, RetryPolicy, run_sync
    from ..agents.protocol import BackendError, ChatRequest, make_backend
    from .failures import model_host

    async def probe(spec: Mapping[str, Any]) -> str | None:
        try:
            backend = make_backend(spec, agent)
            caller = ModelCaller(backend, cache=None, retry=RetryPolicy(1, 0.0, 0.0), timeout_s=timeout_s)
            await caller(ChatRequest(messages=[{"role": "user", "content": "Say OK."}], tools=[], turn=0,
                                     timeout_s=timeout_s))
        except BackendFailure as exc:
            err = exc.__cause__ if isinstance(exc.__cause__, BackendError) else getattr(exc, "error", None)
            return _why(err if isinstance(err, BackendError) else exc)
        except BackendError as exc:
            return _why(exc)
        return None

    lines = []
    for i, m in enumerate(models):
        if m.get("backend") == "reference" or any(not os.environ.get(v) for v in key_variables(m)):
            continue  # in-process; or its key is missing (said already: a probe would only fail on it)
        why = run_sync(probe(m))
        if why:
            lines.append(f"models[{i}] ({m.get('name')}): its backend at {model_host(m)} did not answer: {why}")
    return lines


def _why(exc: BaseException) -> str:
    if hasattr(exc, "reason") and hasattr(exc, "message"):
        return f"{exc.reason}: {str(exc.message)[:300]}"
    return f"{type(exc).__name__}: {str(exc)[:300]}"
