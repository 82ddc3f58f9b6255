"""What a canary does when called: deterministic, true to its type (see the package docstring)."""

from __future__ import annotations

import copy
import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from ..jsonio import HostileJSONError, safe_json_loads
from ..types import ToolResult
from ._transforms import (
    AUTH_ERROR,
    CACHED_AT,
    INVALID_KEY_ERROR,
    MISSING_KEY_ERROR,
    SNAPSHOT_DATE,
    SNAPSHOT_VERSION,
    SNAPSHOT_YEAR,
)

Executor = Callable[[str, Any], ToolResult]

#: Every canary result is defective by design: an error (parameter trap, prerequisite
#: blindness), stale data (semantic decoy), an approximation (capability mirage), an old
#: snapshot (temporal decoy) or the answer to a fixed case (granularity trap). Reference
#: agents that "back off after an error result" must treat any canary result as a defect.
CANARY_RESULT_IS_DEFECTIVE: Final = True

#: The defect each canary type's result carries (also ``behaviour.kind`` of the canary).
DEFECTS: Final[Mapping[str, str]] = {
    "semantic_decoy": "stale_cache",
    "parameter_trap": "unsatisfiable_parameter",
    "capability_mirage": "approximate",
    "prerequisite_blindness": "auth_error",
    "temporal_decoy": "snapshot",
    "granularity_trap": "hardcoded",
}


def defect_marker(canary_type: str) -> str:
    """The defect a result of ``canary_type`` carries (``stale_cache``, ``auth_error``, ...)."""
    try:
        return DEFECTS[canary_type]
    except KeyError:
        raise ValueError(f"unknown canary type {canary_type!r}") from None


#: Numeric fields that identify or index rather than measure: never perturbed or rounded.
_STRUCTURAL_KEY = re.compile(
    r"^(?:id|ids|.*_ids?|.*[a-z]Ids?|year|month|day|days|hour|minute|second|rank|index|idx|"
    r"page|per_page|limit|offset|count|.*_count|n|n_.*|num_.*|total_results|version|port|"
    r"status|status_code|code|lat|lon|lng|latitude|longitude)$"
)
_YEAR_KEY = re.compile(r"^(?:year|.*_year)$")
#: Figures inside free text: decimals or thousands-grouped numbers, never dates, times,
#: versions or identifiers (nothing glued to letters, ``-``, ``:`` or another number).
_TEXT_NUMBER = re.compile(
    r"(?<![\w./:,-])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+)(?![\w:-]|[.,/]\d)"
)
_ISO_DATE = re.compile(r"(?<!\d)(202[4-9])-(\d{2})-(\d{2})(?!\d)")
_LATE_YEAR = re.compile(r"(?<!\d)202[4-9](?!\d)")


def _error(message: str) -> ToolResult:
    payload = {"error": message}
    return ToolResult(content=json.dumps(payload, ensure_ascii=False), is_error=True, data=payload)


def _ok(payload: Any) -> ToolResult:
    return ToolResult(content=json.dumps(payload, ensure_ascii=False), is_error=False, data=payload)


def _execute(execute: Executor, name: str, args: Any) -> ToolResult:
    """Run a real tool; an executor that raises is answered as a tool error, never raised."""
    try:
        return execute(name, args)
    except Exception as exc:  # the executor is external code; its failure is a tool error
        return _error(f"tool {name!r} failed: {type(exc).__name__}: {exc}")


def _payload(result: ToolResult) -> Any:
    if result.data is not None:
        return copy.deepcopy(result.data)
    try:
        return safe_json_loads(result.content)
    except HostileJSONError:
        return result.content


def _with_fields(payload: Any, extra: Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(payload, dict):
        return {**payload, **extra}
    return {"result": payload, **extra}


# --- numeric leaves --------------------------------------------------------------------


def _factor(stream: str, canary_id: str, path: str, lo: float, hi: float) -> float:
    digest = hashlib.sha256(f"{stream}\x1f{canary_id}\x1f{path}".encode()).digest()
    u = int.from_bytes(digest[:8], "big") / 2**64
    magnitude = lo + (hi - lo) * u
    return 1 - magnitude if digest[8] & 1 else 1 + magnitude


def _decimals(x: float) -> int | None:
    text = repr(x)
    if "e" in text or "n" in text:
        return None
    return len(text.split(".")[1]) if "." in text else 0


def perturb_number(value: int | float, factor: float) -> int | float:
    """``value * factor`` rounded like ``value``; never equal to a non-zero ``value``."""
    up = factor > 1
    if isinstance(value, int):
        new = round(value * factor)
        if new == value and value != 0:
            new = value + 1 if up or value == 1 else value - 1
        return new
    if not math.isfinite(value):
        return value
    places = _decimals(value)
    if places is None:
        return float(f"{value * factor:.6g}")
    new_f = round(value * factor, places)
    if new_f == value and value != 0:
        new_f = round(value + (10.0**-places if up else -(10.0**-places)), places)
    return new_f


def round_significant(value: int | float, digits: int = 1) -> int | float:
    """Round to ``digits`` significant figures, keeping the type (``8.0467 -> 8.0``, ``1234 -> 1000``)."""
    if value == 0 or not math.isfinite(value):
        return value
    exponent = math.floor(math.log10(abs(value)))
    rounded = round(value, digits - 1 - exponent)
    return int(rounded) if isinstance(value, int) else float(rounded)


def _walk(
    obj: Any,
    on_number: Callable[[str, str, int | float], Any],
    on_text: Callable[[str, str], str],
    path: str = "",
    key: str = "",
) -> Any:
    """Map numeric and string leaves; ``key`` is the nearest field name of a leaf.

    Tabular payloads (``{"columns": [...], "rows": [[...], ...]}``) name each cell by its
    column, so an ``order_id`` cell is treated like an ``order_id`` field.
    """
    if isinstance(obj, dict):
        columns = obj.get("columns")
        rows = obj.get("rows")
        names = (
            columns
            if isinstance(columns, list) and all(isinstance(c, str) for c in columns)
            else None
        )
        tabular = (
            names is not None
            and isinstance(rows, list)
            and all(isinstance(r, list) and len(r) == len(names) for r in rows)
        )
        out: dict[str, Any] = {}
        for k, v in obj.items():
            if tabular and names is not None and k == "rows":
                out[k] = [
                    [
                        _walk(cell, on_number, on_text, f"{path}/rows/{i}/{j}", names[j])
                        for j, cell in enumerate(row)
                    ]
                    for i, row in enumerate(v)
                ]
            else:
                out[k] = _walk(v, on_number, on_text, f"{path}/{k}", str(k))
        return out
    if isinstance(obj, list):
        return [_walk(v, on_number, on_text, f"{path}/{i}", key) for i, v in enumerate(obj)]
    if isinstance(obj, bool) or obj is None:
        return obj
    if isinstance(obj, int | float):
        return on_number(path, key, obj)
    if isinstance(obj, str):
        return on_text(path, obj)
    return obj


def _is_echo(key: str, value: Any, args: Any) -> bool:
    """A leaf that repeats an argument of the call (``"value": 5`` for value=5) is kept."""
    return (
        isinstance(args, dict)
        and key in args
        and args[key] == value
        and not isinstance(value, bool)
    )


def _format_like(original: str, value: float) -> str:
    places = len(original.split(".")[1]) if "." in original else 0
    return f"{value:,.{places}f}" if "," in original else f"{value:.{places}f}"


def _perturb_text(text: str, stream: str, canary_id: str, lo: float, hi: float) -> str:
    """Figures in text move by a factor keyed on the figure itself, so a number quoted twice
    (a title and its snippet) stays consistent."""

    def repl(m: re.Match[str]) -> str:
        raw = m.group(1)
        number = float(raw.replace(",", ""))
        factor = _factor(stream, canary_id, f"text:{raw}", lo, hi)
        places = len(raw.split(".")[1]) if "." in raw else 0
        new = round(number * factor, places)
        if new == number and number != 0:
            new = number + (10.0**-places if factor > 1 else -(10.0**-places))
        return _format_like(raw, new)

    return _TEXT_NUMBER.sub(repl, text)


def _round_text(text: str) -> str:
    def repl(m: re.Match[str]) -> str:
        raw = m.group(1)
        number = float(raw.replace(",", ""))
        if number == 0:
            return raw
        exponent = math.floor(math.log10(abs(number)))
        rounded = round(number, -exponent)
        places = max(0, -exponent)
        return f"{rounded:,.{places}f}" if "," in raw else f"{rounded:.{places}f}"

    return _TEXT_NUMBER.sub(repl, text)


def _to_snapshot_dates(text: str) -> str:
    def iso(m: re.Match[str]) -> str:
        month, day = m.group(2), m.group(3)
        if month == "02" and day == "29":
            day = "28"
        return f"{SNAPSHOT_YEAR}-{month}-{day}"

    return _LATE_YEAR.sub(str(SNAPSHOT_YEAR), _ISO_DATE.sub(iso, text))


def stale_payload(
    payload: Any, canary_id: str, stream: str, lo: float = 0.03, hi: float = 0.15, args: Any = None
) -> Any:
    """Every measured numeric leaf moved ``lo``-``hi`` off by a hash of (canary id, path);
    figures in text likewise. Identifiers, indices and echoed arguments are kept."""

    def on_number(path: str, key: str, value: int | float) -> int | float:
        if _STRUCTURAL_KEY.match(key) or _is_echo(key, value, args):
            return value
        return perturb_number(value, _factor(stream, canary_id, path, lo, hi))

    def on_text(path: str, text: str) -> str:
        return _perturb_text(text, stream, canary_id, lo, hi)

    return _walk(payload, on_number, on_text)


def approximate_payload(payload: Any, digits: int = 1, args: Any = None) -> Any:
    """Every measured numeric leaf rounded to ``digits`` significant figures (one digit:
    figures in text too). Identifiers, indices and echoed arguments are kept."""

    def on_number(path: str, key: str, value: int | float) -> int | float:
        if _STRUCTURAL_KEY.match(key) or _is_echo(key, value, args):
            return value
        return round_significant(value, digits)

    return _walk(payload, on_number, lambda path, text: _round_text(text) if digits == 1 else text)


def snapshot_payload(
    payload: Any, canary_id: str, lo: float = 0.03, hi: float = 0.15, args: Any = None
) -> Any:
    """Figures perturbed (``temporal`` stream) and every 2024-2029 date, year or ``year``
    field moved to 2023."""

    def on_number(path: str, key: str, value: int | float) -> int | float:
        if _YEAR_KEY.match(key) and isinstance(value, int) and 2024 <= value <= 2029:
            return SNAPSHOT_YEAR
        if _STRUCTURAL_KEY.match(key) or _is_echo(key, value, args):
            return value
        return perturb_number(value, _factor("temporal", canary_id, path, lo, hi))

    def on_text(path: str, text: str) -> str:
        return _perturb_text(_to_snapshot_dates(text), "temporal", canary_id, lo, hi)

    return _walk(payload, on_number, on_text)


def _bounds(behaviour: Mapping[str, Any]) -> tuple[float, float]:
    spec = behaviour.get("perturbation")
    if isinstance(spec, Mapping):
        lo, hi = spec.get("min", 0.03), spec.get("max", 0.15)
        if isinstance(lo, int | float) and isinstance(hi, int | float) and 0 < lo <= hi < 1:
            return float(lo), float(hi)
    return 0.03, 0.15


def run_canary(canary: Mapping[str, Any], args: Any, execute: Executor) -> ToolResult:
    """Answer a call of ``canary`` with ``args``; ``execute(name, args)`` runs a REAL tool.

    Deterministic: the same canary and arguments always give the same result. Never raises
    for bad arguments or an unknown shadowed tool (the executor's error is returned); raises
    ``ValueError`` only for a record that is not a canary of a known type.
    """
    ctype = canary.get("type")
    shadows = canary.get("shadows")
    if ctype not in DEFECTS or not isinstance(shadows, str):
        raise ValueError(
            f"not a canary record of a known type: type={ctype!r}, shadows={shadows!r}"
        )
    behaviour = canary.get("behaviour")
    behaviour = behaviour if isinstance(behaviour, Mapping) else {}
    canary_id = str(canary.get("id") or f"{ctype}:{shadows}")

    if ctype == "parameter_trap":
        param = str(behaviour.get("parameter", "api_key"))
        supplied = args.get(param) if isinstance(args, dict) else None
        if supplied is None or supplied == "":
            return _error(str(behaviour.get("missing_error", MISSING_KEY_ERROR)))
        return _error(str(behaviour.get("invalid_error", INVALID_KEY_ERROR)))
    if ctype == "prerequisite_blindness":
        return _error(str(behaviour.get("error", AUTH_ERROR)))
    if ctype == "granularity_trap":
        fixed = behaviour.get("args", {})
        return _execute(execute, shadows, copy.deepcopy(fixed if isinstance(fixed, dict) else {}))

    real = _execute(execute, shadows, args)
    if real.is_error:
        return real
    payload = _payload(real)
    lo, hi = _bounds(behaviour)
    if ctype == "semantic_decoy":
        stale = stale_payload(payload, canary_id, "semantic", lo, hi, args)
        return _ok(
            _with_fields(
                stale, {"cached": True, "cached_at": behaviour.get("cached_at", CACHED_AT)}
            )
        )
    if ctype == "capability_mirage":
        digits = behaviour.get("significant_figures", 1)
        approx = approximate_payload(
            payload, digits if isinstance(digits, int) and digits > 0 else 1, args
        )
        return _ok(
            _with_fields(
                approx, {"mode": "approximate", "engine": behaviour.get("engine", "advanced-beta")}
            )
        )
    snap = snapshot_payload(payload, canary_id, lo, hi, args)
    return _ok(
        _with_fields(
            snap,
            {
                "snapshot": behaviour.get("snapshot", SNAPSHOT_DATE),
                "data_version": behaviour.get("data_version", SNAPSHOT_VERSION),
            },
        )
    )
