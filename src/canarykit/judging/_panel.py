"""The study's judges as params.yaml configures them: one object for every judging step.

:class:`StudyJudges` holds the ``judge:`` block, the ``models:`` list (for the oracle check),
the options every judge of the study is built with (:func:`~._run.judge_options`: the model
layer's response cache, one budget, the retry policy, the concurrency), the verdict cache and
the model-call counters of each role (``primary``, ``cross``, ``stability``). A role's judge
is built once, on first use.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from ..agents.calls import CallStats
from ..agents.secrets import config_secret_envs, register_secret_envs
from ._base import Judge, JudgeInput, make_judge
from ._run import VerdictCache, judge_all, judge_options

#: The roles a study judges every run with (``judge.<role>``).
ROLES: tuple[str, ...] = ("primary", "cross")


@dataclass
class StudyJudges:
    """The judges of a study (see the module docstring). ``stats`` holds the call counters of
    the roles this step reports (``model_calls`` of ``counts.json``)."""

    cfg: Mapping[str, Any]
    models: Sequence[Mapping[str, Any]]
    options: dict[str, Any]
    cache: VerdictCache | None
    stats: dict[str, CallStats]
    source: str = "params.yaml"
    _built: dict[str, Judge] = field(default_factory=dict, repr=False)

    @classmethod
    def from_config(
        cls,
        judge_cfg: Mapping[str, Any],
        models: Sequence[Mapping[str, Any]],
        retries: Mapping[str, Any] | None = None,
        *,
        cache_dir: str | os.PathLike[str] | None,
        ledger: Any = None,
        stats: Mapping[str, CallStats] | None = None,
        source: str = "params.yaml",
        **options: Any,
    ) -> StudyJudges:
        """The judges of the ``judge:`` block ``judge_cfg``; ``cache_dir`` is the verdict cache
        (and, below it, the judges' response cache; None: neither), ``retries`` the one retry
        policy (``agent.retries``), ``ledger`` the invocation's spend ledger, ``stats`` the
        counters to keep (default: every role and the stability re-grading), ``options`` more
        options of :func:`~._base.make_judge` (``completion_fn``, ``retry_delay_s``). Registers
        the judges' key variables, so their values are scrubbed from every error text."""
        register_secret_envs(config_secret_envs({"models": models, "judge": judge_cfg}))
        block = {**judge_cfg, "cache_dir": cache_dir}
        opts = {**judge_options(block, retries, model_layer=True, ledger=ledger), **options}
        counters = dict(stats) if stats is not None else {r: CallStats() for r in (*ROLES, "stability")}
        return cls(judge_cfg, models, opts, VerdictCache(cache_dir) if cache_dir else None, counters, source)

    def role_cfg(self, role: str) -> dict[str, Any] | None:
        """``judge.<role>`` (the primary judge defaults to the rubric; no cross-judge: None)."""
        cfg = self.cfg.get(role)
        if role == "primary":
            return dict(cfg or {"kind": "rubric"})
        return dict(cfg) if cfg else None

    def roles(self) -> list[str]:
        """The configured roles, primary first."""
        return [r for r in ROLES if self.role_cfg(r) is not None]

    def judge(self, role: str) -> Judge:
        """The judge of ``role`` (built on first use, counting its calls in ``stats[role]``)."""
        if role not in self._built:
            cfg = self.role_cfg(role)
            if cfg is None:
                raise KeyError(f"no judge.{role} is configured")
            counters = {"stats": self.stats[role]} if role in self.stats else {}
            self._built[role] = make_judge(cfg, source=self.source, key=f"judge.{role}", **self.options, **counters)
        return self._built[role]

    def at_temperature(self, temperature: float, role: str = "primary") -> Judge:
        """A fresh judge of ``role`` at ``temperature`` (the stability re-grading; its calls
        count in ``stats["stability"]``)."""
        cfg = self.role_cfg(role)
        assert cfg is not None
        options = {**self.options, "temperature": temperature, "stats": self.stats.setdefault("stability", CallStats())}
        return make_judge(cfg, source=self.source, key=f"judge.{role}", **options)

    def judge_all(self, role: str, inputs: Sequence[JudgeInput]) -> tuple[pl.DataFrame, dict[str, int]]:
        """Every input judged by ``role`` (cached verdicts reused; progress on stderr)."""
        return judge_all(self.judge(role), inputs, self.cache, label=role)

    def identities(self) -> dict[str, Any]:
        """``{role: judge identity or None}`` for ``validation.json``."""
        return {r: (self.judge(r).identity() if self.role_cfg(r) is not None else None) for r in ROLES}

    def add_model_calls(self, counts: dict[str, Any]) -> None:
        """Add each counted role's model calls (requests, cached, retries, cost) to
        ``counts["model_calls"]``."""
        model_calls = counts.setdefault("model_calls", {})
        for role, st in self.stats.items():
            prev = model_calls.get(role) or {"requests": 0, "cached": 0, "retries": 0, "cost_usd": 0.0}
            model_calls[role] = {
                "requests": prev["requests"] + st.backend_calls, "cached": prev["cached"] + st.cached_calls,
                "retries": prev["retries"] + st.retries, "cost_usd": round(prev["cost_usd"] + st.cost_usd, 8),
            }
