"""The one key scrubber, as the model layer has always imported it.

It lives in :mod:`canarykit.store.secrets` (a package every layer may import, the MCP border
included, without an import circle); this module re-exports it.
"""

from __future__ import annotations

from ..store.secrets import (
    MASK,
    SECRET_ENVS_VAR,
    config_secret_envs,
    configured_values,
    export_secret_envs,
    register_secret_envs,
    scrub,
    scrub_values,
)

__all__ = [
    "MASK", "SECRET_ENVS_VAR", "config_secret_envs", "configured_values", "export_secret_envs",
    "register_secret_envs", "scrub", "scrub_values",
]
