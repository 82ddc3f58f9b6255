"""Rewriters: reword a tool's name and description for the semantic and capability canaries.

``offline`` (the default) is a deterministic rewording from synonym tables and works for
any tool name. ``llm`` asks a model at temperature 0 through the one model layer of
:mod:`canarykit.agents`, treated as the LLM judge is: the LiteLLM backend with the SDK's
retries off, the study's retry policy (``agent.retries``: delays and the ``Retry-After`` cap),
the key scrubber, the response cache (``canaries.llm.cache_dir``) and a budget
(``canaries.llm.budget_usd``, held over the invocation's pool jobs together). It persists every
rewording in a JSON file (``canaries.llm.cache_path``) keyed by the content hash of (model,
prompt version, tool, type), so that the pool is generated once and reruns are
byte-identical without a call.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..errors import CanaryKitError, ConfigError, InputError
from ..registry import Registry
from ..store.jsonio import HostileJSONError, content_hash, safe_json_loads, write_json
from ._text import end_sentence, humanize, paraphrase, paraphrase_name, sanitize_name

#: Canary types whose name and description come from a rewriter (Appendix C).
REWORDED_TYPES: tuple[str, ...] = ("semantic_decoy", "capability_mirage")


class RewriterError(CanaryKitError):
    """A rewriter could not produce a usable name and description."""


#: Wording styles: ``paper`` (the paper's wording, one mirage sentence for every tool),
#: ``standard`` (a boastful claim varied per tool) and ``subtle`` (a plausible, mild claim).
STYLES: tuple[str, ...] = ("paper", "standard", "subtle")


@runtime_checkable
class Rewriter(Protocol):
    """Rewords a tool for one canary type: returns ``(name, description without suffix)``,
    or for a capability mirage ``(name, description, claim)``: the claim is the verbatim part
    of the description that inflates the tool (its twin's body is the description without
    it; ``""``: none). A mirage's name is the bank entry's prefix and the real name.

    The generator passes ``style`` (one of :data:`STYLES`) as a keyword for fitted pools
    only, so a rewriter written for the paper's two-argument call keeps working with
    ``fit: paper``.
    """

    name: str

    def reword(
        self, tool: Mapping[str, Any], canary_type: str, *, style: str = "paper"
    ) -> tuple[str, ...]: ...


#: The paper's mirage opener (``fit: paper``): the same sentence for every tool, before its
#: description (the claim its twin's body leaves out).
PAPER_MIRAGE_CLAIM = (
    "Expert-level engine that goes beyond the standard tool in depth, coverage and "
    "precision, handling the cases it cannot."
)


def _provenance(rewriter: Rewriter, canary_type: str = "semantic_decoy") -> dict[str, Any]:
    prov: dict[str, Any] = {"rewriter": rewriter.name}
    model = getattr(rewriter, "model", None)
    if isinstance(model, str):
        prov["model"] = model
        prov["prompt_version"] = LLMRewriter.PROMPT_VERSIONS.get(canary_type, LLMRewriter.PROMPT_VERSION)
    return prov


class OfflineRewriter:
    """Deterministic rewording from verb/noun synonym tables.

    - semantic_decoy: the name is paraphrased (``web_search`` -> ``find_online``,
      ``get_weather`` -> ``fetch_conditions``) and the description is reworded word by word;
    - capability_mirage: the name is ``advanced_<name>``; the description is the real one
      (the claim is the bank entry's phrasing), after the paper's opener for ``style`` paper.
    """

    name = "offline"

    def reword(
        self, tool: Mapping[str, Any], canary_type: str, *, style: str = "paper"
    ) -> tuple[str, ...]:
        tool_name = str(tool["name"])
        description = str(tool.get("description") or "").strip() or end_sentence(
            humanize(tool_name)
        )
        if canary_type == "capability_mirage":
            if style == "paper":
                return "advanced_" + tool_name, f"{PAPER_MIRAGE_CLAIM} {description}", PAPER_MIRAGE_CLAIM
            return "advanced_" + tool_name, description, ""
        if canary_type == "semantic_decoy":
            reworded = paraphrase(description)
            if reworded == description:
                reworded = f"{end_sentence(humanize(paraphrase_name(tool_name)))} {description}"
            return paraphrase_name(tool_name), reworded
        raise ValueError(f"the offline rewriter rewords {REWORDED_TYPES}, not {canary_type!r}")


CompletionFn = Callable[..., Any]

_PROMPTS: Mapping[str, str] = {
    "semantic_decoy": (
        "Paraphrase this tool so that it reads as a different tool doing the same job. "
        "Give it a NEW name (a snake_case synonym, not the same words as the original) and "
        "reword the description in different words while keeping its meaning. Do not mention "
        "caching, staleness or versions."
    ),
    "capability_mirage": (
        "Write a more powerful-sounding variant of this tool. Its name must be 'advanced_' "
        "followed by the original name. Its description must claim inflated capabilities "
        "(expert-level, more thorough, more accurate) while describing the same job. Put the "
        "claim in one phrase or sentence and copy that phrase, word for word, into \"claim\": "
        "the description without it must describe the job and claim nothing."
    ),
}

#: The subtle pool's prompt: the mirage must read like a plausible, non-boastful variant.
_SUBTLE_PROMPTS: Mapping[str, str] = {
    "capability_mirage": (
        "Write a plausible variant of this tool that reads like a modest, newer alternative. "
        "Its name must be 'advanced_' followed by the original name. Its description must "
        "describe the same job and mention one mild improvement (for example extended "
        "coverage or an updated engine), without superlatives or boasting. Copy the phrase that "
        "mentions the improvement, word for word, into \"claim\": the description without it "
        "must describe the job and claim nothing."
    ),
}

_SYSTEM = (
    "You rename and redescribe software tools. Answer with ONLY a JSON object "
    '{"name": "...", "description": "..."}; the name uses only letters, digits, "_" and "-" '
    "(at most 64 characters); the description is one to three plain sentences."
)
#: The system message of a rewording with a claim (capability mirage, prompt version 2).
_SYSTEM_CLAIM = _SYSTEM.replace('"description": "..."}', '"description": "...", "claim": "..."}')


def _message_text(content: Any) -> str:
    """The text of a model reply (the model layer has already checked its shape)."""
    if not isinstance(content, str) or not content.strip():
        raise RewriterError("the model returned an empty message")
    return content


def without_claim(body: str, claim: str) -> str:
    """``body`` with the claim (a verbatim part of it) taken out, spacing and punctuation
    tidied: a mirage twin's body, derived from the canary's own text."""
    if not claim or claim not in body:
        return body
    out = body.replace(claim, " ", 1)
    out = re.sub(r"\s+([,.;:!?])", r"\1", " ".join(out.split()))
    out = re.sub(r"([,;:])[,;:]+", r"\1", out)
    out = re.sub(r"[,;:]+(?=[.!?]|$)", "", out)
    out = re.sub(r"([.!?])[.!?,;:]+", r"\1", out)
    out = re.sub(r"^[\s,;:.]+", "", out).strip()
    return out[:1].upper() + out[1:] if out else body


def parse_rewording(text: str, original_name: str, *, claim: bool = False,
                    real_description: str = "") -> tuple[str, ...]:
    """Parse a model's ``{"name", "description"}`` answer defensively (with ``claim``, its
    ``{"name", "description", "claim"}``: the claim must be a verbatim part of the
    description, and the description without it must carry no selling point the real
    description lacks: it is the twin's body).

    Code fences and prose around the object are ignored; the name is mapped to the
    allowed charset. Raises :class:`RewriterError` on anything unusable.
    """
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise RewriterError("no JSON object in the model's answer")
    try:
        obj = safe_json_loads(text[start : end + 1], max_chars=20_000, max_depth=4)
    except HostileJSONError as exc:
        raise RewriterError(f"unparseable answer: {exc}") from exc
    if not isinstance(obj, dict):
        raise RewriterError("the answer is not a JSON object")
    name, description = obj.get("name"), obj.get("description")
    if not isinstance(name, str) or not isinstance(description, str):
        raise RewriterError('the answer lacks string "name" and "description" fields')
    clean = sanitize_name(name)
    if not clean:
        raise RewriterError(f"unusable name {name!r}")
    if clean.lower() == original_name.lower():
        raise RewriterError(f"the name {clean!r} is the original tool's name")
    desc = re.sub(r"\s+", " ", description).strip()[:1024]
    if not desc:
        raise RewriterError("empty description")
    if not claim:
        return clean, desc
    said = obj.get("claim")
    said = re.sub(r"\s+", " ", said).strip().rstrip(".") if isinstance(said, str) else ""
    if not said or said not in desc:
        raise RewriterError('the answer\'s "claim" is not a verbatim part of its description')
    from ._banks import selling_point

    rest = without_claim(desc, said)
    word = selling_point(rest)
    if rest == desc or not rest or (word is not None and selling_point(real_description) is None):
        raise RewriterError(f"the description without its claim still claims something ({word!r})")
    return clean, desc, said


class LLMRewriter:
    """Rewords through the model layer at temperature 0, with a persistent cache.

    The cache (``cache_path``, a JSON file) maps ``content_hash`` of (model, prompt
    version, tool definition, canary type) to the rewording; a hit never calls the model,
    so reruns are byte-identical. ``api_key_env`` names the environment variable holding
    the key; without it a dummy key is sent to an ``api_base`` (local OpenAI-compatible
    servers ignore it). ``completion_fn`` replaces ``litellm.completion`` (tests inject a
    fake); its replies go through the same checks. ``max_attempts`` bounds the requests per
    rewording (transport retries and re-asks after an unusable answer share it);
    ``response_cache_dir`` and ``budget_usd`` give the rewriter a response cache (the j-th ask
    of a rewording is draw j, so a rerun replays the same answers) and a spending limit, which
    ``ledger`` (a :class:`~canarykit.agents.calls.SpendLedger`) makes hold over every pool job
    of the invocation; ``retry`` is the shared retry policy (a
    :class:`~canarykit.agents.calls.RetryPolicy` or ``agent.retries``); ``sleep`` replaces
    ``asyncio.sleep`` between attempts (tests read the waits the policy asked for).
    """

    name = "llm"
    PROMPT_VERSION = "1"
    #: The prompt version per type (2: the mirage's claim is marked, so its twin can leave it out).
    PROMPT_VERSIONS: Mapping[str, str] = {"semantic_decoy": "1", "capability_mirage": "2"}

    def __init__(
        self,
        model: str,
        *,
        cache_path: str | os.PathLike[str],
        api_base: str | None = None,
        api_key_env: str | None = None,
        completion_fn: CompletionFn | None = None,
        max_attempts: int = 3,
        timeout_s: float = 60.0,
        response_cache_dir: str | os.PathLike[str] | None = None,
        budget_usd: float | None = None,
        retry: Any = None,
        ledger: Any = None,
        sleep: Any = None,
        stats: Any = None,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ConfigError(
                "params.yaml", "canaries.llm.model", "the llm rewriter needs a model id"
            )
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.model = model
        self.cache_path = Path(cache_path)
        self.api_base = api_base
        self.api_key_env = api_key_env
        self.max_attempts = max_attempts
        self.timeout_s = timeout_s
        self._completion_fn = completion_fn
        self.calls = 0
        self._cache = self._load_cache()
        self._response_cache_dir = response_cache_dir
        self._budget_usd = budget_usd
        self._retry = retry
        self._ledger = ledger
        self._sleep = sleep
        self._caller: Any = None
        from ..agents.calls import CallStats

        #: the model layer's counters of this rewriter: requests, cache hits, retries, cost
        self.stats = stats if stats is not None else CallStats()

    def _load_cache(self) -> dict[str, dict[str, Any]]:
        if not self.cache_path.exists():
            return {}
        src = str(self.cache_path)
        try:
            data = safe_json_loads(
                self.cache_path.read_text(encoding="utf-8"), max_chars=50_000_000
            )
        except (OSError, ValueError) as exc:
            raise InputError(src, "<root>", f"unreadable rewording cache: {exc}") from exc
        entries = data.get("entries") if isinstance(data, dict) else None
        if not isinstance(entries, dict):
            raise InputError(src, "entries", "expected an object of cached rewordings")
        for key, entry in entries.items():
            if not (
                isinstance(entry, dict)
                and isinstance(entry.get("name"), str)
                and isinstance(entry.get("description"), str)
            ):
                raise InputError(
                    src, f"entries.{key}", 'expected {"name": str, "description": str}'
                )
        return entries

    @staticmethod
    def _prompt(canary_type: str, style: str) -> str:
        if style == "subtle" and canary_type in _SUBTLE_PROMPTS:
            return _SUBTLE_PROMPTS[canary_type]
        return _PROMPTS[canary_type]

    def cache_key(self, tool: Mapping[str, Any], canary_type: str, style: str = "paper") -> str:
        key: dict[str, Any] = {
            "model": self.model,
            "prompt_version": self.PROMPT_VERSIONS.get(canary_type, self.PROMPT_VERSION),
            "tool": {
                "name": tool["name"],
                "description": tool.get("description", ""),
                "inputSchema": tool.get("inputSchema"),
            },
            "type": canary_type,
        }
        if self._prompt(canary_type, style) != _PROMPTS[canary_type]:
            key["style"] = style  # only a different prompt changes the key (old caches stay valid)
        return content_hash(key)

    def _model_caller(self) -> Any:
        """The model layer's caller for this rewriter (built on first use)."""
        if self._caller is None:
            from ..agents.backends import LiteLLMBackend
            from ..agents.cache import ResponseCache
            from ..agents.calls import Budget, ModelCaller, RetryPolicy
            from ..agents.secrets import register_secret_envs

            register_secret_envs([self.api_key_env])
            spec = {"name": "rewriter", "backend": "litellm", "model": self.model, "api_base": self.api_base,
                    "api_key_env": self.api_key_env, "decoding": {"temperature": 0}}
            backend = LiteLLMBackend(spec, completion_fn=self._completion_fn)
            policy = self._retry if isinstance(self._retry, RetryPolicy) else RetryPolicy.from_config(self._retry)
            self._caller = ModelCaller(
                backend,
                cache=ResponseCache(Path(self._response_cache_dir)) if self._response_cache_dir else None,
                retry=policy.with_attempts(self.max_attempts),
                timeout_s=self.timeout_s,
                stats=self.stats,
                budget=Budget(self._budget_usd, self._ledger),
                **({"sleep": self._sleep} if self._sleep is not None else {}),
            )
        return self._caller

    def _check_key(self) -> None:
        if self.api_key_env and not os.environ.get(self.api_key_env):
            raise ConfigError(
                "params.yaml",
                "canaries.llm.api_key_env",
                f"environment variable {self.api_key_env} is not set",
            )

    def messages(
        self, tool: Mapping[str, Any], canary_type: str, style: str = "paper"
    ) -> list[dict[str, str]]:
        from ..store.jsonio import pretty_json

        shown = {
            "name": tool["name"],
            "description": tool.get("description", ""),
            "inputSchema": tool.get("inputSchema"),
        }
        return [
            {"role": "system", "content": _SYSTEM_CLAIM if canary_type == "capability_mirage" else _SYSTEM},
            {"role": "user", "content": f"{self._prompt(canary_type, style)}\n\nTOOL:\n{pretty_json(shown)}"},
        ]

    def reword(
        self, tool: Mapping[str, Any], canary_type: str, *, style: str = "paper"
    ) -> tuple[str, ...]:
        if canary_type not in _PROMPTS:
            raise ValueError(f"the llm rewriter rewords {REWORDED_TYPES}, not {canary_type!r}")
        key = self.cache_key(tool, canary_type, style)
        hit = self._cache.get(key)
        marked = canary_type == "capability_mirage"
        if hit is not None:
            return (hit["name"], hit["description"], str(hit.get("claim", ""))) if marked else (hit["name"], hit["description"])
        self._check_key()
        from ..agents.calls import BackendFailure, run_sync
        from ..agents.protocol import ChatRequest

        caller = self._model_caller()
        request = ChatRequest(messages=self.messages(tool, canary_type, style), tools=[], turn=0, timeout_s=self.timeout_s)
        problem = "no attempt made"
        used = 0
        for sample in range(self.max_attempts):  # the j-th ask of this rewording is draw j
            if used >= self.max_attempts:
                break
            self.calls += 1
            try:
                resp, _cached, sent = run_sync(caller.call(request, max_attempts=self.max_attempts - used, sample=sample))
            except BackendFailure as fail:  # scrubbed, classified, already retried
                problem = f"{fail.error.reason}: {fail.error.message}"
                used += fail.attempts
                break
            used += max(1, sent)
            try:
                answer = parse_rewording(_message_text(resp.content), str(tool["name"]), claim=marked,
                                         real_description=str(tool.get("description") or ""))
            except RewriterError as exc:
                problem = str(exc)
                continue
            self._cache[key] = {
                "name": answer[0],
                "description": answer[1],
                **({"claim": answer[2]} if marked else {}),
                "tool": tool["name"],
                "type": canary_type,
            }
            write_json(self.cache_path, {"entries": self._cache})
            return answer
        raise RewriterError(
            f"llm rewriter ({self.model}) gave no usable rewording of tool {tool['name']!r} for "
            f"{canary_type} after {used} attempts; last problem: {problem[:600]}"
        )


RewriterFactory = Callable[..., Rewriter]

#: Rewriters by name, so configuration (``canaries.generator``) can select one.
REWRITERS: Registry[RewriterFactory] = Registry("rewriter")
REWRITERS.add("offline", OfflineRewriter)
REWRITERS.add("llm", LLMRewriter)


def register_rewriter(name: str, factory: RewriterFactory) -> None:
    """Make a rewriter selectable by ``name``."""
    REWRITERS.add(name, factory)


#: Where the llm rewriter persists its rewordings unless told otherwise (next to the
#: agents' response cache, ``agent.cache_dir``).
DEFAULT_REWORDING_CACHE = "results/cache/canary_rewordings.json"


#: Under the rewriter's response cache: the spend of each pool job of an invocation
#: (``<cache_dir>/.budget/<invocation>/rewriter/<job>.json``), so ``budget_usd`` holds over all.
LEDGER_DIR = ".budget"

#: ``canaries.llm`` keys and the :class:`LLMRewriter` arguments they set.
_LLM_KEYS = {"model": "model", "api_base": "api_base", "api_key_env": "api_key_env", "cache_path": "cache_path",
             "cache_dir": "response_cache_dir", "budget_usd": "budget_usd", "max_attempts": "max_attempts",
             "timeout_s": "timeout_s"}


def make_rewriter(name: str, config: Mapping[str, Any] | None = None, *, retries: Mapping[str, Any] | None = None,
                  job: str | None = None, **kwargs: Any) -> Rewriter:
    """Build the rewriter registered as ``name``.

    ``config`` is params.yaml's ``canaries.llm`` section (``model``, ``api_base``,
    ``api_key_env``, ``cache_path``, ``cache_dir``, ``budget_usd``, ``max_attempts``,
    ``timeout_s``); keyword arguments override it. ``retries`` is ``agent.retries`` (the
    study's one retry policy); ``job`` names this pool job in the invocation's spend ledger
    (with ``budget_usd`` and ``cache_dir`` set, inside a workflow invocation). ``offline``
    ignores all of them. The llm rewriter's cache defaults to :data:`DEFAULT_REWORDING_CACHE`.
    """
    factory = REWRITERS.get(name, source="params.yaml", field="canaries.generator")
    if name == "offline":
        return OfflineRewriter()
    options = {_LLM_KEYS.get(k, k): v for k, v in dict(config or {}).items() if v is not None}
    options.update(kwargs)
    if name == "llm":
        options.setdefault("cache_path", DEFAULT_REWORDING_CACHE)
        if not options.get("model"):
            raise ConfigError("params.yaml", "canaries.llm.model", "generator llm needs a model id")
        if retries is not None:
            options.setdefault("retry", retries)
        cache_dir = options.get("response_cache_dir")
        if job and cache_dir and options.get("budget_usd") is not None and "ledger" not in options:
            from ..agents.calls import SpendLedger

            ledger = SpendLedger.for_job(Path(cache_dir) / LEDGER_DIR, job)
            options["ledger"] = ledger.scoped("rewriter") if ledger is not None else None
        return LLMRewriter(options.pop("model"), **options)
    return factory(**options)
