"""Provider independence: a judge must not share a provider with any evaluated model (§4).

Provider of a model entry (judge or evaluated model), first rule that applies:

1. an explicit ``provider`` key;
2. ``vertex_ai/<publisher>/<model>`` -> the publisher segment
   (``vertex_ai/deepseek-ai/deepseek-v3.2-maas`` -> ``deepseek-ai``), and the two-segment
   ``vertex_ai/<model>`` -> ``google`` (Vertex AI's own Gemini models);
3. ``openai/<x>`` with an ``api_base`` (an OpenAI-compatible server, so ``openai`` is only the
   protocol): the first segment of ``<x>`` if it has one, else unknown;
4. any other litellm id ``<prefix>/<model>`` -> the prefix (``openai/gpt-4.1`` -> ``openai``);
5. a bare id (an Ollama tag such as ``qwen3:8b``) -> the model family's maker when the family
   is known (qwen -> alibaba, llama -> meta, gemma/gemini -> google, mistral -> mistral,
   deepseek -> deepseek, phi -> microsoft, glm -> zai), else unknown.

Every derived or explicit name is then normalised through a small alias table so that the same
organisation compares equal (``deepseek-ai`` -> ``deepseek``, ``zai-org``/``z-ai``/``zhipuai``
-> ``zai``, ``meta-llama`` -> ``meta``, ``qwen`` -> ``alibaba``, ``gemini``/``vertex_ai`` ->
``google``, ``mistralai`` -> ``mistral``). Offline judges and reference agents have no
provider; a model whose provider stays unknown cannot be checked (set ``provider``).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ..errors import ConfigError

PROVIDER_ALIASES: Final[dict[str, str]] = {
    "deepseek-ai": "deepseek",
    "zai-org": "zai",
    "z-ai": "zai",
    "zhipuai": "zai",
    "z.ai": "zai",
    "meta-llama": "meta",
    "qwen": "alibaba",
    "gemini": "google",
    "vertex_ai": "google",
    "vertex_ai_beta": "google",
    "mistralai": "mistral",
}

#: Model-family prefixes of bare ids (Ollama tags) -> maker.
FAMILY_MAKERS: Final[tuple[tuple[str, str], ...]] = (
    ("qwen", "alibaba"),
    ("llama", "meta"),
    ("gemma", "google"),
    ("gemini", "google"),
    ("mistral", "mistral"),
    ("mixtral", "mistral"),
    ("deepseek", "deepseek"),
    ("phi", "microsoft"),
    ("glm", "zai"),
)

_NO_PROVIDER_BACKENDS: Final[frozenset[str]] = frozenset({"reference"})


def normalise_provider(name: str) -> str:
    key = name.strip().lower()
    return PROVIDER_ALIASES.get(key, key)


def provider_of(
    model: str | None, provider: str | None = None, *, api_base: str | None = None
) -> str | None:
    """The provider (organisation) behind a model id; None when it cannot be told."""
    if provider:
        return normalise_provider(provider)
    if not model:
        return None
    parts = model.split("/")
    if len(parts) == 1:
        family = re.split(r"[^a-z]", model.lower(), maxsplit=1)[0]
        for prefix, maker in FAMILY_MAKERS:
            if family.startswith(prefix):
                return maker
        return None
    head = parts[0].lower()
    if head in ("vertex_ai", "vertex_ai_beta"):
        return normalise_provider(parts[1]) if len(parts) >= 3 else "google"
    if head == "openai" and api_base:
        return normalise_provider(parts[1]) if len(parts) >= 3 else None
    return normalise_provider(head)


def _entry_provider(entry: Mapping[str, Any]) -> str | None:
    return provider_of(entry.get("model"), entry.get("provider"), api_base=entry.get("api_base"))


def _roles(
    judge_cfgs: Sequence[Mapping[str, Any]] | Mapping[str, Any],
) -> list[tuple[str, Mapping[str, Any]]]:
    if isinstance(judge_cfgs, Mapping):
        return [(str(role), cfg) for role, cfg in judge_cfgs.items() if isinstance(cfg, Mapping)]
    default = ("primary", "cross")
    out = []
    for i, cfg in enumerate(judge_cfgs):
        if cfg is None:
            continue
        role = cfg.get("role") or (default[i] if i < len(default) else str(i))
        out.append((str(role), cfg))
    return out


def check_judge_independence(
    judge_cfgs: Sequence[Mapping[str, Any]] | Mapping[str, Any],
    models: Sequence[Mapping[str, Any]],
    source: str = "params.yaml",
) -> None:
    """Refuse an LLM judge whose provider is also the provider of an evaluated model.

    ``judge_cfgs``: ``{role: cfg}`` or a list of cfgs (role from a ``role`` key, else
    ``primary``, ``cross`` by position). Raises :class:`ConfigError` naming
    ``judge.<role>.model``.
    """
    evaluated = [
        (m, _entry_provider(m)) for m in models if m.get("backend") not in _NO_PROVIDER_BACKENDS
    ]
    for role, cfg in _roles(judge_cfgs):
        if cfg.get("kind") != "llm":
            continue
        judge_provider = _entry_provider(cfg)
        if judge_provider is None:
            print(
                f"canarykit: warning: {source}: judge.{role}: the provider of judge model "
                f"{cfg.get('model')!r} cannot be derived; set judge.{role}.provider to check independence",
                file=sys.stderr,
            )
            continue
        for model, model_provider in evaluated:
            if model_provider == judge_provider:
                raise ConfigError(
                    source,
                    f"judge.{role}.model",
                    f"judge provider {judge_provider!r} is also the provider of evaluated model "
                    f"{model.get('name')!r} ({model.get('model')}); the judge must be "
                    "provider-independent (choose a judge from another provider)",
                )
