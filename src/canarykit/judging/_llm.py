"""The LLM outcome judge (Appendix B): a filled template, temperature 0, a strict JSON verdict,
sent through the same model layer as every agent (:class:`LLMJudge`)."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from ..agents.backends import LiteLLMBackend
from ..agents.cache import ResponseCache
from ..agents.calls import BackendFailure, Budget, CallStats, ModelCaller, RetryPolicy, run_sync
from ..agents.protocol import ChatRequest
from ..agents.secrets import register_secret_envs, scrub
from ..errors import ConfigError
from ..store.jsonio import safe_json_loads
from ._base import RAW_CAP, JudgeInput, Verdict, register_judge, truncate

#: Bump when :func:`parse_verdict` accepts or rejects differently (it keys the verdict cache).
PARSER_VERSION: Final[str] = "1"
PLACEHOLDERS: Final[tuple[str, ...]] = ("prompt", "correct_tools", "trace", "final")
_PLACEHOLDER_RE = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")
_FENCE_RE = re.compile(r"\A```(?:json|JSON)?[ \t]*\n(.*)\n```\Z", re.DOTALL)

CompletionFn = Callable[..., Any]


def fill_template(template: str, values: dict[str, str]) -> str:
    """Replace the four placeholders ``{prompt}``, ``{correct_tools}``, ``{trace}``, ``{final}``.

    Literal substitution (never ``str.format``: the template's JSON example has braces), done
    in one pass so that a placeholder appearing inside an inserted value (a task prompt that
    mentions ``{trace}``) is left alone.
    """
    return _PLACEHOLDER_RE.sub(lambda m: values[m.group(1)], template)


def judge_prompt(template: str, run: JudgeInput) -> str:
    return fill_template(
        template,
        {
            "prompt": run.prompt,
            "correct_tools": ", ".join(run.correct_tools) if run.correct_tools else "(none)",
            "trace": run.trace,
            "final": run.final_answer if run.final_answer else "(no final answer)",
        },
    )


def parse_verdict(text: str) -> tuple[bool, str]:
    """Parse a judge reply: exactly a JSON object ``{"success": bool, "reason": str}``,
    optionally wrapped in one ```json fence. Anything else raises ``ValueError``."""
    if not isinstance(text, str):
        raise ValueError("the reply has no text content")
    body = text.strip()
    fenced = _FENCE_RE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    obj = safe_json_loads(body, max_chars=100_000, max_depth=8)
    if not isinstance(obj, dict):
        raise ValueError("the verdict is not a JSON object")
    extra = set(obj) - {"success", "reason"}
    if extra:
        raise ValueError(f"unexpected keys {sorted(extra)}")
    if not isinstance(obj.get("success"), bool):
        raise ValueError(f"'success' must be true or false, got {obj.get('success')!r}")
    if not isinstance(obj.get("reason"), str):
        raise ValueError("'reason' must be a string")
    return obj["success"], obj["reason"]


class LLMJudge:
    """Grades a run by asking an LLM, through the one model layer of :mod:`canarykit.agents`.

    The model is reached like an agent's (``LiteLLMBackend``: any provider or an
    OpenAI-compatible ``api_base``; the SDK's own retries off) and called through a
    :class:`~canarykit.agents.ModelCaller`: the shared retry policy (delays and the
    ``Retry-After`` cap of ``agent.retries``), every error text scrubbed of every configured
    key, malformed replies retried, the response cache (``judge.cache_dir``/responses) and the
    judging budget (``judge.budget_usd``). ``max_attempts`` bounds the *requests* per verdict:
    transport retries and re-asks after an unparseable reply draw on the same allowance, so a
    failing judge with ``max_attempts: 3`` sends 3 requests per verdict, not 3 x the SDK's.

    Each request of a verdict has its own entry in the response cache, keyed by where it
    stands, never by how often this process asked: the j-th re-ask after an unparseable reply
    is draw ``j``, and the r-th stability re-grading (``repeat=r``) has its own draws. A rerun
    thus replays the same answers, and a repeat that failed is asked again instead of being
    answered from another repeat's cached reply.
    ``completion_fn`` replaces ``litellm.completion`` (tests inject canned replies); its reply
    goes through the same checks. ``sleep`` replaces ``asyncio.sleep`` between attempts (tests
    read the waits the retry policy asked for).
    """

    name = "llm"
    deterministic = False

    def __init__(
        self,
        model: str,
        template: str,
        *,
        provider: str | None = None,
        api_base: str | None = None,
        api_key_env: str | None = None,
        timeout_s: float = 120.0,
        temperature: float = 0.0,
        max_attempts: int = 3,
        completion_fn: CompletionFn | None = None,
        retry_delay_s: float = 1.0,
        retry: RetryPolicy | None = None,
        response_cache: ResponseCache | None = None,
        budget: Budget | None = None,
        stats: CallStats | None = None,
        concurrency: int = 8,
        source: str = "params.yaml",
        key: str = "judge",
        sleep: Any = None,
    ) -> None:
        if max_attempts < 1:
            raise ConfigError(source, "judge.max_attempts", "must be at least 1")
        self.model = model
        self.template = template
        self.provider = provider
        self.api_base = api_base
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        self.temperature = temperature
        self.max_attempts = max_attempts
        self.concurrency = max(1, int(concurrency))
        self.source = source
        self.key = key
        register_secret_envs([api_key_env])
        spec = {"name": key, "backend": "litellm", "model": model, "provider": provider, "api_base": api_base,
                "api_key_env": api_key_env, "decoding": {"temperature": temperature}}
        self.backend = LiteLLMBackend(spec, completion_fn=completion_fn)
        policy = retry or RetryPolicy(max_attempts, retry_delay_s, max(30.0, retry_delay_s))
        self.stats = stats or CallStats()
        self.caller = ModelCaller(self.backend, cache=response_cache, retry=policy.with_attempts(max_attempts),
                                  stats=self.stats, timeout_s=timeout_s, budget=budget,
                                  **({"sleep": sleep} if sleep is not None else {}))

    def identity(self) -> dict[str, Any]:
        return {
            "kind": "llm",
            "model": self.model,
            "decoding": {"temperature": self.temperature},
            "template_sha256": hashlib.sha256(self.template.encode("utf-8")).hexdigest(),
            "parser_version": PARSER_VERSION,
        }

    def cache_inputs(self, run: JudgeInput) -> dict[str, Any]:
        return {
            "prompt": run.prompt,
            "correct_tools": list(run.correct_tools),
            "trace": run.trace,
            "final": run.final_answer,
        }

    def _check_key(self) -> None:
        if self.api_key_env and not os.environ.get(self.api_key_env):
            raise ConfigError(self.source, f"{self.key}.api_key_env", f"environment variable {self.api_key_env} is not set")

    def judge(self, run: JudgeInput, *, repeat: int | None = None) -> Verdict:
        if run.error:
            return Verdict(None, "the run ended with a backend error; not judged", "error", attempts=0)
        self._check_key()
        return run_sync(self.ajudge(run, repeat=repeat))

    async def ajudge(self, run: JudgeInput, *, repeat: int | None = None) -> Verdict:
        """The verdict on one run (see the class doc); never raises for a failing model.
        ``repeat``: the index of a stability re-grading (its own draws in the response cache)."""
        if run.error:
            return Verdict(None, "the run ended with a backend error; not judged", "error", attempts=0)
        self._check_key()
        prompt = judge_prompt(self.template, run)
        request = ChatRequest(messages=[{"role": "user", "content": prompt}], tools=[], turn=0, timeout_s=self.timeout_s)
        used = 0
        raw = ""
        problem = ""
        for sample in range(self.max_attempts):  # the j-th ask of this verdict is draw j
            if used >= self.max_attempts:
                break
            try:
                resp, _cached, sent = await self.caller.call(request, max_attempts=self.max_attempts - used, sample=sample,
                                                             repeat=repeat)
            except BackendFailure as fail:
                e = fail.error
                return Verdict(None, truncate(scrub(f"{ERROR_PREFIX}{e.reason}: {e.message}"), 1000), "error",
                               attempts=used + fail.attempts, raw=truncate(scrub(raw), RAW_CAP))
            used += max(1, sent)
            text = resp.content
            raw = text if isinstance(text, str) else repr(text)
            try:
                success, reason = parse_verdict(text)  # type: ignore[arg-type]  # None: "no text content"
            except ValueError as exc:
                problem = f"unparseable verdict: {exc}"
                continue
            return Verdict(success, scrub(reason), "ok", attempts=used, raw=truncate(scrub(raw), RAW_CAP))
        return Verdict(None, truncate(scrub(problem), 1000), "unparseable", attempts=used, raw=truncate(scrub(raw), RAW_CAP))


#: Start of the reason of a verdict whose judge call failed: ``judge call failed: <Type (status)>: ...``.
ERROR_PREFIX: Final[str] = "judge call failed: "


def failure_reason(reason: str) -> str:
    """``ErrorType (status)`` of an error verdict's reason (how failures are grouped)."""
    if reason.startswith(ERROR_PREFIX):
        return reason[len(ERROR_PREFIX):].split(": ", 1)[0]
    return reason.split(": ", 1)[0][:80]


def read_template(path: str | os.PathLike[str], source: str = "params.yaml") -> str:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            source, "judge.template", f"cannot read the judge template {str(p)!r}: {exc}"
        ) from exc
    missing = [ph for ph in PLACEHOLDERS if "{" + ph + "}" not in text]
    if missing:
        raise ConfigError(
            source,
            "judge.template",
            f"{p}: the template lacks the placeholder(s) {', '.join('{' + m + '}' for m in missing)}",
        )
    return text


#: The options :func:`make_judge` hands on that an llm judge takes (with :class:`LLMJudge`'s
#: defaults); the others are for other kinds of judge.
_JUDGE_OPTIONS = ("max_attempts", "temperature", "completion_fn", "retry_delay_s", "retry", "response_cache", "budget",
                  "stats", "concurrency", "sleep")


@register_judge("llm")
def _make_llm(
    cfg: dict[str, Any],
    *,
    source: str = "params.yaml",
    key: str = "judge",
    template_path: str | os.PathLike[str] | None = None,
    **options: Any,
) -> LLMJudge:
    model = cfg.get("model")
    if not isinstance(model, str) or not model:
        raise ConfigError(source, f"{key}.model", "an llm judge needs a litellm model id")
    path = template_path or cfg.get("template") or "data/prompts/judge_appendix_b.txt"
    return LLMJudge(
        model,
        read_template(path, source),
        provider=cfg.get("provider"),
        api_base=cfg.get("api_base"),
        api_key_env=cfg.get("api_key_env"),
        timeout_s=float(cfg.get("timeout_s") or 120.0),
        source=source,
        key=key,
        **{k: v for k, v in options.items() if k in _JUDGE_OPTIONS},
    )
