"""Helpers shared by the tool implementations: tool errors, deterministic jitter, number tidying."""

from __future__ import annotations

import hashlib
import math
from datetime import date
from typing import Final

#: The environment's fixed "today": every dated output is relative to it.
TODAY: Final[date] = date(2026, 11, 30)


class ToolError(Exception):
    """A failure the calling agent caused (bad city, bad SQL, ...): answered, never raised out."""


def unit_jitter(*parts: object) -> float:
    """A deterministic pseudo-random number in [-1, 1) derived from ``parts`` (SHA-256 based)."""
    key = "|".join(str(p) for p in parts).encode("utf-8")
    raw = int.from_bytes(hashlib.sha256(key).digest()[:8], "big")
    return raw / 2**63 - 1.0


def unit_fraction(*parts: object) -> float:
    """A deterministic pseudo-random number in [0, 1)."""
    return (unit_jitter(*parts) + 1.0) / 2.0


def tidy(x: float, sig: int = 12) -> float | int:
    """Round a float to ``sig`` significant digits (removes binary noise like 0.30000000000000004).

    Integral values that fit comfortably are returned as ``int`` so JSON shows ``42`` not ``42.0``.
    """
    if isinstance(x, bool):
        raise TypeError("booleans are not numbers here")
    if isinstance(x, int):
        return x
    if not math.isfinite(x):
        raise ToolError("the result is not a finite number")
    if x == 0:
        return 0
    y = float(f"{x:.{sig}g}")
    if y.is_integer() and abs(y) < 1e15:
        return int(y)
    return y
