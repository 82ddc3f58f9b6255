"""The one key scrubber: API keys never reach a file, a log or a cache, error paths included.

Every text that leaves the model layer (a :class:`~.protocol.BackendError` message, a judge's
error verdict, a rewriter's error, a run record, a cached response or verdict) goes through
:func:`scrub` first. It removes

- the value of every *configured* key variable: each ``api_key_env`` named anywhere in the
  configuration (``models[*]``, ``judge.primary``/``judge.cross``, ``canaries.llm``), not only
  the calling model's own. The workflow exports their names in ``CANARYKIT_SECRET_ENVS``
  (``rules/common.smk``), so every script process knows all of them; the library also
  registers the names it is given (:func:`register_secret_envs`);
- the value of any environment variable whose name says it holds a secret (``*_API_KEY``,
  ``*_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*PASSWORD``), at least 8 characters long;
- anything that looks like a credential in transit: ``Bearer <token>``, ``api_key=<token>``,
  ``"authorization": "<token>"``;
- known key shapes wherever they appear (:data:`KEY_SHAPES`: OpenAI/Anthropic ``sk-...``,
  GitHub ``ghp_...``/``github_pat_...``, Slack ``xox?-...``, AWS ``AKIA...``, Google
  ``AIza...``, Hugging Face ``hf_...``, JSON Web Tokens, PEM private keys).

The MCP border (proxy traces, upstream stderr logs, ``canarykit diagnose`` outputs) passes
every text through :func:`scrub` too, with the values of the variables it hands to servers
(:func:`handed_on_secrets`). This module lives in :mod:`canarykit.store` so that every layer
can import it without an import circle; :mod:`canarykit.agents.secrets` re-exports it.

:func:`scrub_values` removes only the configured values (exact matches): it is applied to whole
records and cache entries at write time, where a heuristic pattern could alter legitimate data.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

#: Environment variable listing the names of every configured key variable (comma-separated).
SECRET_ENVS_VAR = "CANARYKIT_SECRET_ENVS"
#: Key values shorter than this are never treated as secrets (they would match ordinary text).
MIN_SECRET_LEN = 8
MASK = "***"

_REGISTERED: set[str] = set()
_SECRET_NAME = re.compile(r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$", re.IGNORECASE)
_PATTERNS = (
    # Authorization: Bearer <token> (and Basic), in headers or echoed bodies
    re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=:-]{6,}"),
    # api_key=..., "api-key": "...", x-api-key: ..., "authorization": "..."
    re.compile(r"""(?i)((?:x-)?api[_-]?key|authorization|access[_-]?token)(["']?\s*[:=]\s*["']?)(?!\*\*\*)[^\s"',;}]{6,}"""),
)

#: Credentials recognisable by their shape alone (replaced whole, wherever they appear).
KEY_SHAPES: Final = (
    re.compile(r"(?<![A-Za-z0-9_-])sk-(?:proj-|ant-|or-v1-|svcacct-)?[A-Za-z0-9_-]{16,}"),
    re.compile(r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
    re.compile(r"(?<![A-Za-z0-9_-])xox[abposr]-[A-Za-z0-9-]{10,}"),
    re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Z0-9])"),
    re.compile(r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}"),
    re.compile(r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}"),
    re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)"),
)


def looks_secret(name: str) -> bool:
    """Whether an environment variable's name says it holds a secret (``*_API_KEY``, ``*_TOKEN``, ...)."""
    return bool(_SECRET_NAME.search(name))


def handed_on_secrets(env: Mapping[str, str], by_name: Iterable[str] = ()) -> list[str]:
    """The values of ``env`` (what a server is handed) that are secrets: every variable whose
    name says so (:func:`looks_secret`) and every one in ``by_name`` (passed by name, as
    ``--env KEY`` and ``pass_env`` do, precisely to keep the value out of files); values
    shorter than :data:`MIN_SECRET_LEN` are not treated as secrets."""
    named = set(by_name)
    return sorted({v for k, v in env.items() if (k in named or looks_secret(k)) and len(v) >= MIN_SECRET_LEN},
                  key=len, reverse=True)


def register_secret_envs(names: Iterable[str | None]) -> None:
    """Remember key variable names (their values are scrubbed from every error text)."""
    for n in names:
        if n:
            _REGISTERED.add(str(n))


def config_secret_envs(cfg: Mapping[str, Any]) -> list[str]:
    """Every ``api_key_env`` a (validated or raw) params.yaml names, sorted."""
    names: set[str] = set()
    for m in cfg.get("models") or []:
        if isinstance(m, Mapping) and m.get("api_key_env"):
            names.add(str(m["api_key_env"]))
    judge = cfg.get("judge") or {}
    for role in ("primary", "cross"):
        j = judge.get(role) if isinstance(judge, Mapping) else None
        if isinstance(j, Mapping) and j.get("api_key_env"):
            names.add(str(j["api_key_env"]))
    llm = (cfg.get("canaries") or {}).get("llm") if isinstance(cfg.get("canaries"), Mapping) else None
    if isinstance(llm, Mapping) and llm.get("api_key_env"):
        names.add(str(llm["api_key_env"]))
    return sorted(names)


def export_secret_envs(cfg: Mapping[str, Any]) -> None:
    """Put the configured key variable names into ``CANARYKIT_SECRET_ENVS`` (child processes
    inherit it) and register them here."""
    names = config_secret_envs(cfg)
    register_secret_envs(names)
    known = {n for n in os.environ.get(SECRET_ENVS_VAR, "").split(",") if n}
    os.environ[SECRET_ENVS_VAR] = ",".join(sorted(known | set(names)))


def configured_names() -> set[str]:
    return _REGISTERED | {n for n in os.environ.get(SECRET_ENVS_VAR, "").split(",") if n}


def configured_values() -> list[str]:
    """Values of the configured key variables that are set (longest first)."""
    values = {os.environ.get(n) or "" for n in configured_names()}
    return sorted((v for v in values if len(v) >= MIN_SECRET_LEN), key=len, reverse=True)


def _all_values() -> list[str]:
    values = set(configured_values())
    for name, value in os.environ.items():
        if len(value) >= MIN_SECRET_LEN and _SECRET_NAME.search(name):
            values.add(value)
    return sorted(values, key=len, reverse=True)


def scrub_values(text: str, values: Iterable[str] | None = None) -> str:
    """``text`` with every configured key value (or each of ``values``) replaced by ``***``."""
    for v in configured_values() if values is None else values:
        if v and v in text:
            text = text.replace(v, MASK)
    return text


def scrub(text: Any, extra: Iterable[str | None] = ()) -> str:
    """An error text safe to log, cache or store: every key value and credential removed.

    ``extra``: more secret values to remove (e.g. the key a call was just made with).
    """
    s = text if isinstance(text, str) else str(text)
    return _apply(s, _values_with(extra))


def _values_with(extra: Iterable[str | None]) -> list[str]:
    values = [v for v in extra if v and len(v) >= MIN_SECRET_LEN] + _all_values()
    return sorted(set(values), key=len, reverse=True)


def _apply(s: str, values: list[str]) -> str:
    s = scrub_values(s, values)
    for pat in _PATTERNS:
        s = pat.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", s)
    for shape in KEY_SHAPES:
        s = shape.sub(MASK, s)
    return s


def scrub_data(obj: Any, extra: Iterable[str | None] = ()) -> Any:
    """``obj`` (JSON-like data: a trace event, a diagnosis) with every string, keys included,
    passed through :func:`scrub`; the structure is kept (a masked value stays a string)."""
    values = _values_with(extra)

    def walk(node: Any) -> Any:
        if isinstance(node, str):
            return _apply(node, values)
        if isinstance(node, dict):
            return {(_apply(k, values) if isinstance(k, str) else k): walk(v) for k, v in node.items()}
        if isinstance(node, list | tuple):
            return [walk(v) for v in node]
        return node

    return walk(obj)


__all__ = [
    "KEY_SHAPES", "MASK", "SECRET_ENVS_VAR", "config_secret_envs", "configured_values", "export_secret_envs",
    "handed_on_secrets", "looks_secret", "register_secret_envs", "scrub", "scrub_data", "scrub_values",
]
