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
  ``"authorization": "<token>"``.

:func:`scrub_values` removes only the configured values (exact matches): it is applied to whole
records and cache entries at write time, where a heuristic pattern could alter legitimate data.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

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
    values = [v for v in extra if v and len(v) >= MIN_SECRET_LEN] + _all_values()
    s = scrub_values(s, sorted(set(values), key=len, reverse=True))
    for pat in _PATTERNS:
        s = pat.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", s)
    return s


__all__ = [
    "MASK", "SECRET_ENVS_VAR", "config_secret_envs", "configured_values", "export_secret_envs",
    "register_secret_envs", "scrub", "scrub_values",
]
