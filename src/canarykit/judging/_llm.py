"""The LLM outcome judge (Appendix B): a filled template, temperature 0, a strict JSON verdict."""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from ..errors import ConfigError
from ..jsonio import safe_json_loads
from ._base import RAW_CAP, JudgeInput, Verdict, VerdictStatus, register_judge, truncate

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


def _reply_text(response: Any) -> Any:
    if isinstance(response, dict):
        return response["choices"][0]["message"]["content"]
    return response.choices[0].message.content


def _litellm_completion(**kwargs: Any) -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    return litellm.completion(**kwargs)


class LLMJudge:
    """Grades a run by asking an LLM through litellm (any provider or OpenAI-compatible base)."""

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
        source: str = "params.yaml",
        key: str = "judge",
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
        self.completion_fn: CompletionFn = completion_fn or _litellm_completion
        self.retry_delay_s = retry_delay_s
        self.source = source
        self.key = key

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

    def _api_key(self) -> str | None:
        if self.api_key_env:
            value = os.environ.get(self.api_key_env)
            if not value:
                raise ConfigError(
                    self.source,
                    f"{self.key}.api_key_env",
                    f"environment variable {self.api_key_env} is not set",
                )
            return value
        return "dummy" if self.api_base else None

    def judge(self, run: JudgeInput) -> Verdict:
        if run.error:
            return Verdict(
                None, "the run ended with a backend error; not judged", "error", attempts=0
            )
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "user", "content": judge_prompt(self.template, run)}],
            "temperature": self.temperature,
            "timeout": self.timeout_s,
        }
        api_key = self._api_key()
        if api_key is not None:
            kwargs["api_key"] = api_key
        if self.api_base:
            kwargs["api_base"] = self.api_base
        raw = ""
        problem = ""
        failed_by_exception = False
        for attempt in range(1, self.max_attempts + 1):
            try:
                text = _reply_text(self.completion_fn(**kwargs))
            except Exception as exc:  # network, provider and rate-limit errors of any backend
                failed_by_exception = True
                problem = f"judge call failed: {type(exc).__name__}: {exc}"
                if attempt < self.max_attempts and self.retry_delay_s > 0:
                    time.sleep(min(self.retry_delay_s * 2 ** (attempt - 1), 30.0))
                continue
            failed_by_exception = False
            raw = text if isinstance(text, str) else repr(text)
            try:
                success, reason = parse_verdict(text)
            except ValueError as exc:
                problem = f"unparseable verdict: {exc}"
                continue
            return Verdict(success, reason, "ok", attempts=attempt, raw=truncate(raw, RAW_CAP))
        status: VerdictStatus = "error" if failed_by_exception else "unparseable"
        return Verdict(
            None,
            truncate(problem, 1000),
            status,
            attempts=self.max_attempts,
            raw=truncate(raw, RAW_CAP),
        )


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


@register_judge("llm")
def _make_llm(
    cfg: dict[str, Any],
    *,
    source: str = "params.yaml",
    key: str = "judge",
    template_path: str | os.PathLike[str] | None = None,
    max_attempts: int = 3,
    temperature: float = 0.0,
    completion_fn: CompletionFn | None = None,
    retry_delay_s: float = 1.0,
    **_: Any,
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
        temperature=temperature,
        max_attempts=max_attempts,
        completion_fn=completion_fn,
        retry_delay_s=retry_delay_s,
        source=source,
        key=key,
    )
