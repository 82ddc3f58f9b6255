"""Helpers shared by the tool implementations: tool errors, deterministic jitter, number tidying,
and the cap on every tool result."""

from __future__ import annotations

import hashlib
import math
from datetime import date
from typing import Final

#: The environment's fixed "today": every dated output is relative to it.
TODAY: Final[date] = date(2026, 11, 30)


#: Every tool result an agent reads (real tools and canaries, in-process and over MCP) is at
#: most this many bytes of UTF-8; a longer one is cut and ends with a marker the model can see.
MAX_RESULT_BYTES: Final = 64 * 1024
#: An error message quotes at most this many characters (of a value, a name, a path).
MAX_MESSAGE_CHARS: Final = 600


class ToolError(Exception):
    """A failure the calling agent caused (bad city, bad SQL, ...): answered, never raised out."""

    def __init__(self, message: str) -> None:
        super().__init__(clip_message(message))


def clip_message(message: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """A message quoting at most ``limit`` characters (head and tail kept, the rest counted)."""
    from ..errors import clip

    return clip(message, limit)


def truncation_marker(total_bytes: int, shown_bytes: int, limit: int) -> str:
    return (f"\n[canarykit: result truncated: showing the first {shown_bytes:,} of {total_bytes:,} bytes "
            f"(tool results are capped at {limit:,} bytes); ask for less, e.g. add a filter or a LIMIT]")


def cap_result(content: str, limit: int = MAX_RESULT_BYTES) -> tuple[str, bool]:
    """``content`` cut to at most ``limit`` UTF-8 bytes, with a visible truncation marker.

    Returns ``(text, truncated)``. Cheap for the common case (no encoding when the text is
    short enough in characters to be short enough in bytes).
    """
    if len(content) * 4 <= limit:
        return content, False
    data = content.encode("utf-8", errors="surrogatepass")
    if len(data) <= limit:
        return content, False
    marker = truncation_marker(len(data), 0, limit)
    room = max(0, limit - len(marker.encode("utf-8")) - 16)
    head = data[:room].decode("utf-8", errors="ignore")  # never half a character
    shown = len(head.encode("utf-8", errors="surrogatepass"))
    return head + truncation_marker(len(data), shown, limit), True


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
