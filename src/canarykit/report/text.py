"""Readable text of the report's numbers and values, and JSON safe inside a ``<script>``.

The lowest module of the report: the page (:mod:`.report`), its first screen
(:mod:`.firstscreen`), the diagnosis in words (:mod:`.diagnosis`) and the figures
(:mod:`.figures`, whose HTML pages embed their specs as the report does) all write their
numbers and embed their JSON through it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..types import CANARY_TYPES

__all__ = ["TYPE_LABELS", "ci_text", "finite", "json_for_script", "num", "script_safe", "value_text"]

#: Short labels of the canary types (table headings, figure axes).
TYPE_LABELS: dict[str, str] = {t: t.replace("_", " ") for t in CANARY_TYPES}


def finite(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    return float(x) if math.isfinite(x) else None


def num(x: Any, digits: int = 2, *, signed: bool = False) -> str:
    """``x`` with ``digits`` decimals (``n/a`` when undefined); ``signed``: always a sign."""
    v = finite(x)
    if v is None:
        return "n/a"
    text = f"{v:+.{digits}f}" if signed else f"{v:.{digits}f}"
    return text.replace("-", "\u2212")


def ci_text(x: Any, lo: Any, hi: Any, digits: int = 2, *, signed: bool = False) -> str:
    """``0.58 [0.49, 0.66]``: an estimate with its interval (``n/a`` without an estimate)."""
    if finite(x) is None:
        return "n/a"
    if finite(lo) is None or finite(hi) is None:
        return f"{num(x, digits, signed=signed)} (no interval)"
    return f"{num(x, digits, signed=signed)} [{num(lo, digits, signed=signed)}, {num(hi, digits, signed=signed)}]"


def value_text(v: Any) -> str:
    """A parameter value as a reader writes it (YAML spelling, never a Python repr)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return v if v else '""'
    if isinstance(v, int | float):
        return str(v)
    if isinstance(v, Sequence):
        return ", ".join(value_text(x) for x in v) if v else "[]"
    if isinstance(v, Mapping):
        return ", ".join(f"{k}: {value_text(x)}" for k, x in v.items()) if v else "{}"
    return str(v)


def script_safe(text: str) -> str:
    """``text`` safe inside an HTML ``<script>`` element."""
    return text.replace("</script", "<\\/script").replace("<!--", "<\\!--")


def json_for_script(obj: Any) -> str:
    """JSON safe inside ``<script type="application/json">`` (no ``<``, ``>``, ``&`` left)."""
    return json.dumps(obj, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
