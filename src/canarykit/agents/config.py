"""The ``agent:`` section of params.yaml as one typed, frozen value, parsed once.

:class:`AgentConfig` (with its nested :class:`RetryConfig`) is what the runner, the model
layer and the loop read; nothing downstream unpacks a raw mapping or repeats a default. Every
default is the schema's (``src/canarykit/resources/params.schema.yaml``), filled in and
validated by :func:`canarykit.study.paramspec.validate_section`, so a mapping handed to an entry
point (``run_grid(..., {"max_turns": 4}, ...)``) means what the same keys in params.yaml
mean, and a bad value is one line naming its key (``params.yaml: agent.concurrency: ...``).

One key departs from its schema default on purpose: a mapping without ``cache_dir`` keeps
the response cache beside the run store (``<store>/../cache/responses``), not in the working
directory's ``results/``; params.yaml always names it (the schema fills it in).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from ..errors import ConfigError
from ..study.paramspec import validate_section

RerunFailed = Literal["all", "transient", "none"]


@dataclass(frozen=True)
class RetryConfig:
    """``agent.retries``: the one retry policy of model calls, and which failed runs rerun."""

    max_attempts: int
    base_delay_s: float
    max_delay_s: float
    rerun_failed: RerunFailed

    @classmethod
    def parse(cls, section: RetryConfig | Mapping[str, Any] | None, source: str = "params.yaml") -> RetryConfig:
        """From ``agent.retries`` (missing keys: the schema's defaults)."""
        if isinstance(section, RetryConfig):
            return section
        return _retry_from(validate_section("agent", {"retries": dict(section or {})}, source)["retries"])


@dataclass(frozen=True)
class AgentConfig:
    """``agent``: the shared tool-calling loop and its politeness (see the schema's descriptions)."""

    max_turns: int
    allow_short_max_turns: bool
    timeout_s: float
    concurrency: int
    workers: int | None
    provider_concurrency: Mapping[str, int]
    #: where a provider's adaptive lane may grow to (:mod:`.adaptive`)
    provider_concurrency_max: Mapping[str, int]
    retries: RetryConfig
    budget_usd: float | None
    #: ``None``: beside the run store (see the module notes)
    cache_dir: str | None

    @classmethod
    def parse(cls, section: AgentConfig | Mapping[str, Any] | None, source: str = "params.yaml") -> AgentConfig:
        """From the ``agent`` mapping (validated here; missing keys: the schema's defaults)."""
        if isinstance(section, AgentConfig):
            return section
        given = dict(section or {})
        d = validate_section("agent", given, source)
        return cls(
            max_turns=int(d["max_turns"]),
            allow_short_max_turns=bool(d["allow_short_max_turns"]),
            timeout_s=float(d["timeout_s"]),
            concurrency=int(d["concurrency"]),
            workers=None if d["workers"] is None else int(d["workers"]),
            provider_concurrency=MappingProxyType({str(k): int(v) for k, v in d["provider_concurrency"].items()}),
            provider_concurrency_max=MappingProxyType(_maxima(d, source)),
            retries=_retry_from(d["retries"]),
            budget_usd=d["budget_usd"],  # as given (the summary reports it as configured)
            cache_dir=str(given["cache_dir"]) if given.get("cache_dir") else None,
        )

    def response_cache_dir(self, store_dir: str | Path) -> Path:
        """Where model responses are cached: ``cache_dir``, else beside the run store."""
        return Path(self.cache_dir) if self.cache_dir else Path(store_dir).parent / "cache" / "responses"


def _maxima(d: Mapping[str, Any], source: str) -> dict[str, int]:
    """``provider_concurrency_max``, checked against where each lane starts."""
    out = {str(k): int(v) for k, v in d["provider_concurrency_max"].items()}
    for p, n in out.items():
        start = d["provider_concurrency"].get(p)
        if start is not None and int(start) > n:
            raise ConfigError(source, f"agent.provider_concurrency_max.{p}",
                              f"{n} is below agent.provider_concurrency.{p} ({start}), where the lane starts; raise it or lower the start")
    return out


def _retry_from(d: Mapping[str, Any]) -> RetryConfig:
    return RetryConfig(max_attempts=int(d["max_attempts"]), base_delay_s=float(d["base_delay_s"]),
                       max_delay_s=float(d["max_delay_s"]), rerun_failed=d["rerun_failed"])


@functools.cache
def agent_defaults() -> AgentConfig:
    """The configuration of an empty ``agent`` section: every key at its schema default."""
    return AgentConfig.parse({})
