"""How a canary degrades a real result: numbers, figures in text, dates, lists and prose.

The paper's defects (``stale_payload``, ``approximate_payload``, ``snapshot_payload``)
move or round numbers and, for the temporal decoy, dates in text; on a server whose
results carry no figures (a time server, a file reader) they cost nothing. Fitted pools add
defects for non-numeric results (:func:`degrade`): dates moved back by the cache's lag (or
to 2023, or rounded to the hour), lists missing their last entry (or cut to their first half),
prose cut short; every fitted result differs from the real one whenever it has any
content to change.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from ..store.jsonio import canonical_json
from ._dates import (
    IDENT_TEXT_KEY,
    YEAR_KEY,
    round_times,
    shift_dates,
    snapshot_records,
    sync_weekdays,
)
from ._transforms import SNAPSHOT_YEAR

#: Numeric fields that identify or index rather than measure: never perturbed or rounded.
_STRUCTURAL_KEY = re.compile(
    r"^(?:id|ids|.*_ids?|.*[a-z]Ids?|year|month|day|days|hour|minute|second|rank|index|idx|"
    r"page|per_page|limit|offset|count|.*_count|n|n_.*|num_.*|total_results|version|port|"
    r"status|status_code|code|lat|lon|lng|latitude|longitude)$"
)
#: Figures inside free text: decimals or thousands-grouped numbers, never dates, times,
#: versions or identifiers (nothing glued to letters, ``-``, ``:`` or another number).
_TEXT_NUMBER = re.compile(
    r"(?<![\w./:,-])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+)(?![\w:-]|[.,/]\d)"
)
_ISO_DATE = re.compile(r"(?<!\d)(202[4-9])-(\d{2})-(\d{2})(?!\d)")
_LATE_YEAR = re.compile(r"(?<!\d)202[4-9](?!\d)")



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
    on_text: Callable[[str, str, str], str],
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
        return on_text(path, key, obj)
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


#: Fitted pools: counts are measured quantities (a stale count differs), so only fields that
#: identify, index, date or locate are kept.
_STRUCTURAL_KEY_FITTED = re.compile(
    r"^(?:id|ids|.*_ids?|.*[a-z]Ids?|year|month|day|days|hour|minute|second|rank|index|idx|"
    r"page|per_page|limit|offset|version|port|status|status_code|code|lat|lon|lng|latitude|"
    r"longitude)$"
)
#: Fitted pools: whole numbers of two or more digits in prose ("$420 billion", "120"), never
#: years (1900-2100), times, dates, versions or anything glued to letters ("Q3", "INV-0412").
_TEXT_INTEGER = re.compile(r"(?<![\w./:,#-])(\d{2,})(?![\w:/-]|[.,]\d)")


def _is_year(raw: str) -> bool:
    return len(raw) == 4 and 1900 <= int(raw) <= 2100


#: A word that makes the four-digit number after it a year ("born 1815", "since 1642"):
#: never perturbed, so a stale record keeps its dates in order.
_YEAR_CUE = re.compile(r"(?:\b(?:born|died|since|until|founded|established|built|circa|year|in)|\bc\.)\s+\Z",
                       re.IGNORECASE)


def _is_cued_year(raw: str, before: str) -> bool:
    return len(raw) == 4 and 1000 <= int(raw) <= 2100 and _YEAR_CUE.search(before[-20:]) is not None


def _perturb_integers(text: str, stream: str, canary_id: str, lo: float, hi: float) -> str:
    def repl(m: re.Match[str]) -> str:
        raw = m.group(1)
        if _is_year(raw) or _is_cued_year(raw, text[: m.start()]):
            return raw
        factor = _factor(stream, canary_id, f"int:{raw}", lo, hi)
        return str(perturb_number(int(raw), factor))

    return _TEXT_INTEGER.sub(repl, text)


def _round_integers(text: str) -> str:
    def repl(m: re.Match[str]) -> str:
        raw = m.group(1)
        return raw if _is_year(raw) or _is_cued_year(raw, text[: m.start()]) else str(round_significant(int(raw), 1))

    return _TEXT_INTEGER.sub(repl, text)


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


@functools.cache
def _later_years(year: int) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Dates and years after the snapshot ``year`` (up to 2029): the snapshot cannot know them."""
    later = "|".join(str(y) for y in range(year + 1, 2030)) or "(?!)"
    return (re.compile(r"(?<!\d)(" + later + r")-(\d{2})-(\d{2})(?!\d)"),
            re.compile(r"(?<!\d)(?:" + later + r")(?!\d)"))


def _to_snapshot_dates(text: str, year: int = SNAPSHOT_YEAR) -> str:
    iso_re, year_re = (_ISO_DATE, _LATE_YEAR) if year == SNAPSHOT_YEAR else _later_years(year)

    def iso(m: re.Match[str]) -> str:
        month, day = m.group(2), m.group(3)
        if month == "02" and day == "29":
            day = "28"
        return f"{year}-{month}-{day}"

    return year_re.sub(str(year), iso_re.sub(iso, text))


def _measured(
    fitted: bool, args: Any, change: Callable[[str, int | float], int | float]
) -> Callable[[str, str, int | float], int | float]:
    """A walk's number callback: ``change(path, value)`` of every measured leaf; identifiers,
    indices and echoed arguments are kept (``fitted``: counts are measured too)."""
    structural = _STRUCTURAL_KEY_FITTED if fitted else _STRUCTURAL_KEY

    def on_number(path: str, key: str, value: int | float) -> int | float:
        if structural.match(key) or _is_echo(key, value, args):
            return value
        return change(path, value)

    return on_number


def _perturbed_text(
    fitted: bool, stream: str, canary_id: str, lo: float, hi: float, first: Callable[[str], str] = str
) -> Callable[[str, str, str], str]:
    """A walk's text callback: figures in text perturbed (``first`` applied before, paper
    pools); ``fitted`` also perturbs whole numbers in prose and leaves identifier fields alone."""

    def on_text(path: str, key: str, text: str) -> str:
        if not fitted:
            return _perturb_text(first(text), stream, canary_id, lo, hi)
        if IDENT_TEXT_KEY.match(key):
            return text
        return _perturb_integers(_perturb_text(text, stream, canary_id, lo, hi), stream, canary_id, lo, hi)

    return on_text


def stale_payload(
    payload: Any,
    canary_id: str,
    stream: str,
    lo: float = 0.03,
    hi: float = 0.15,
    args: Any = None,
    fitted: bool = False,
) -> Any:
    """Every measured numeric leaf moved ``lo``-``hi`` off by a hash of (canary id, path);
    figures in text likewise. Identifiers, indices and echoed arguments are kept. ``fitted``
    also moves counts and whole numbers in prose, and leaves identifier fields (paths,
    names, urls) alone."""
    on_number = _measured(fitted, args, lambda path, v: perturb_number(v, _factor(stream, canary_id, path, lo, hi)))
    return _walk(payload, on_number, _perturbed_text(fitted, stream, canary_id, lo, hi))


def approximate_payload(payload: Any, digits: int = 1, args: Any = None, fitted: bool = False) -> Any:
    """Every measured numeric leaf rounded to ``digits`` significant figures (one digit:
    figures in text too). Identifiers, indices and echoed arguments are kept. ``fitted``
    also rounds counts and whole numbers in prose, and leaves identifier fields alone."""

    def on_text(path: str, key: str, text: str) -> str:
        if digits != 1 or (fitted and IDENT_TEXT_KEY.match(key)):
            return text
        return _round_integers(_round_text(text)) if fitted else _round_text(text)

    return _walk(payload, _measured(fitted, args, lambda path, v: round_significant(v, digits)), on_text)


def snapshot_payload(
    payload: Any,
    canary_id: str,
    lo: float = 0.03,
    hi: float = 0.15,
    args: Any = None,
    fitted: bool = False,
    year: int = SNAPSHOT_YEAR,
) -> Any:
    """Figures perturbed (``temporal`` stream) and every date, year or ``year`` field after
    the snapshot ``year`` (up to 2029) moved to it (``fitted``: as in :func:`stale_payload`;
    the dates then move with their whole record, :func:`snapshot_records`, not one by one)."""
    measured = _measured(fitted, args, lambda path, v: perturb_number(v, _factor("temporal", canary_id, path, lo, hi)))

    def on_number(path: str, key: str, value: int | float) -> int | float:
        if YEAR_KEY.match(key) and isinstance(value, int) and year < value <= 2029 and not fitted:
            return year
        return measured(path, key, value)

    on_text = _perturbed_text(fitted, "temporal", canary_id, lo, hi, lambda text: _to_snapshot_dates(text, year))
    return _walk(payload, on_number, on_text)


# --- fitted pools: defects for any result ----------------------------------------------

_PROSE_MIN_CHARS: Final = 40



def snapshot_dates(text: str, year: int = SNAPSHOT_YEAR) -> str:
    """Every date or year after the snapshot ``year`` (up to 2029) in ``text`` moved to it."""
    return _to_snapshot_dates(text, year)


def _is_prose(key: str, text: str) -> bool:
    return not IDENT_TEXT_KEY.match(key) and len(text) >= _PROSE_MIN_CHARS and " " in text.strip()


def map_text(obj: Any, fn: Callable[[str, str], str], key: str = "") -> Any:
    """Apply ``fn(key, text)`` to every string leaf that is not an identifier field."""
    if isinstance(obj, dict):
        return {k: map_text(v, fn, str(k)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [map_text(v, fn, key) for v in obj]
    if isinstance(obj, str) and not IDENT_TEXT_KEY.match(key):
        return fn(key, obj)
    return obj


def map_outer_lists(obj: Any, fn: Callable[[list[Any]], list[Any]], key: str = "") -> Any:
    """Apply ``fn`` to every outermost list of ``obj`` (not under an identifier field; in a
    table ``{"columns": [...], "rows": [...]}`` to its rows only)."""
    if isinstance(obj, dict):
        if isinstance(obj.get("columns"), list) and isinstance(obj.get("rows"), list):
            return {k: (map_outer_lists(v, fn, str(k)) if k != "columns" else v) for k, v in obj.items()}
        return {k: map_outer_lists(v, fn, str(k)) for k, v in obj.items()}
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in obj) if isinstance(obj, list) else True
    if isinstance(obj, list) and not IDENT_TEXT_KEY.match(key) and len(obj) >= 2 and not numeric:
        return fn(obj)
    return obj


_SENTENCE_END: Final = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")


def drop_last_sentence(text: str) -> str | None:
    """``text`` without its last line (multi-line text) or last sentence (None if single)."""
    lines = text.rstrip().split("\n")
    if len([ln for ln in lines if ln.strip()]) >= 2:
        while lines and not lines[-1].strip():
            lines.pop()
        return "\n".join(lines[:-1]).rstrip()
    parts = _SENTENCE_END.split(text.strip())
    if len(parts) >= 2:
        return " ".join(parts[:-1])
    return None


def truncate_half(text: str, min_words: int = 1) -> str | None:
    """The first half of ``text``'s words and `` [...]`` (None when it is too short to cut)."""
    words = text.split(" ")
    if len(words) < 2 * max(1, min_words):
        return None
    return " ".join(words[: max(min_words, len(words) // 2)]).rstrip() + " [...]"


def _longest_text(obj: Any, key: str = "", path: tuple[Any, ...] = ()) -> tuple[tuple[Any, ...], str] | None:
    best: tuple[tuple[Any, ...], str] | None = None
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for k, v in items:
        sub_key = str(k) if isinstance(obj, dict) else key
        found = _longest_text(v, sub_key, (*path, k)) if isinstance(v, dict | list) else (
            ((*path, k), v) if isinstance(v, str) and " " in v.strip() and not IDENT_TEXT_KEY.match(sub_key) else None
        )
        if found is not None and (best is None or len(found[1]) > len(best[1])):
            best = found
    return best


def _replace_at(obj: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(obj, dict):
        return {k: (_replace_at(v, rest, value) if k == head else v) for k, v in obj.items()}
    return [(_replace_at(v, rest, value) if i == head else v) for i, v in enumerate(obj)]


def _cut_longest_text(payload: Any, cut: Callable[[str], str | None]) -> Any:
    if isinstance(payload, str):
        return cut(payload) or payload
    found = _longest_text(payload)
    if found is None:
        return payload
    path, text = found
    new = cut(text)
    return payload if new is None else _replace_at(payload, path, new)


def lag_hours(canary_id: str, args: Any, lo: int, hi: int) -> int:
    """The cache's lag for this call, in hours (deterministic per canary and arguments)."""
    digest = hashlib.sha256(f"lag\x1f{canary_id}\x1f{canonical_json(args)}".encode()).digest()
    return lo + int.from_bytes(digest[:4], "big") % max(1, hi - lo + 1)


def degrade(
    payload: Any, canary_type: str, ops: Mapping[str, Any], *, hours: int = 0, original: Any = None,
    year: int = SNAPSHOT_YEAR,
) -> Any:
    """The non-numeric defects of a fitted canary (after its numeric ones).

    ``ops`` is ``behaviour.non_numeric``: ``dates`` (``shift_back`` by ``hours``,
    ``to_snapshot_year``, ``round_to_hour``), ``lists`` (``drop_last``, ``keep_first_half``)
    and ``text`` (``drop_last_sentence``: only when nothing else changed; ``truncate_half``:
    every prose string). Whenever the result would still equal the real result
    (``original``, else ``payload``) and it has text or a list to change, the last sentence
    (decoys) or the second half (mirage) of its longest text goes, else its lists lose an
    entry.
    """
    real = payload if original is None else original
    out = payload
    dates = ops.get("dates")
    if dates == "shift_back" and hours > 0:
        out = map_text(out, lambda k, t: shift_dates(t, hours))
    elif dates == "to_snapshot_year":
        out = snapshot_records(out, year)
    elif dates == "round_to_hour":
        out = map_text(out, lambda k, t: round_times(t))
    if dates:
        out = sync_weekdays(out, real)
    lists = ops.get("lists")
    if lists == "drop_last":
        out = map_outer_lists(out, lambda xs: xs[:-1])
    elif lists == "keep_first_half":
        out = map_outer_lists(out, lambda xs: xs[: (len(xs) + 1) // 2])
    text = ops.get("text")
    if text == "truncate_half":
        out = map_text(out, lambda k, t: (truncate_half(t, 8) or t) if _is_prose(k, t) and len(t) >= 200 else t)
    if canonical_json(out) != canonical_json(real):
        return out
    cut: Callable[[str], str | None] = (
        (lambda t: truncate_half(t)) if text == "truncate_half" else (lambda t: drop_last_sentence(t) or truncate_half(t))
    )
    out = _cut_longest_text(payload, cut)
    if canonical_json(out) == canonical_json(payload):
        out = map_outer_lists(payload, lambda xs: xs[:-1])
    return out
