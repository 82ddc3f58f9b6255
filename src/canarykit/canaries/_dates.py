"""Dates in a degraded answer: moved back by a cache's lag, rounded to the hour, or shifted
record by record into a snapshot's year, so that a stale copy stays consistent (its dates in
order, weekday names beside them moved along, identifiers never re-dated)."""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta
from typing import Any, Final

from ._transforms import SNAPSHOT_YEAR

#: Integer fields that are years (moved with their record by a snapshot).
YEAR_KEY: Final = re.compile(r"^(?:year|.*_year)$")

#: String fields that identify rather than describe (names, paths, urls, ids, codes): never
#: re-dated, truncated or cut (a changed path is another file, not a stale one).
IDENT_TEXT_KEY: Final = re.compile(
    r"^(?:id|ids|uuid|.*_ids?|.*[a-z]Ids?|name|.*_name|.*[a-z]Name|path|.*_path|.*[a-z]Path|"
    r"file|filename|url|.*_url|uri|href|link|sha|hash|key|email|timezone|tz|type|.*_type|"
    r"kind|status|mime|mime_?type|format|encoding|language|lang|locale|unit|units|currency|"
    r"symbol|code|slug|ref|branch|owner|repo|repository|entityType|relationType|from|to)$"
)
_ISO_DATETIME: Final = re.compile(
    r"(?<![\w-])(\d{4})-(\d{2})-(\d{2})"
    r"(?:([T ])(\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?(?![\w-])"
)


def _format_datetime(m: re.Match[str], moved: datetime) -> str:
    out = moved.strftime("%Y-%m-%d")
    if m.group(4) is None:
        return out
    out += m.group(4) + moved.strftime("%H:%M")
    if m.group(7) is not None:
        out += moved.strftime(":%S")
        if m.group(8) is not None:
            out += "." + "0" * (len(m.group(8)) - 1)
    return out + (m.group(9) or "")


def _parse(m: re.Match[str]) -> datetime | None:
    try:
        return datetime(
            int(m.group(1)), int(m.group(2)), int(m.group(3)),
            int(m.group(5) or 0), int(m.group(6) or 0), int(m.group(7) or 0),
        )
    except ValueError:
        return None


def shift_dates(text: str, hours: int) -> str:
    """Every ISO date and date-time in ``text`` moved ``hours`` back (a date by whole days,
    at least one): what a cache that old would have shown."""

    def repl(m: re.Match[str]) -> str:
        when = _parse(m)
        if when is None:
            return m.group(0)
        delta = timedelta(hours=hours) if m.group(4) else timedelta(days=max(1, math.ceil(hours / 24)))
        return _format_datetime(m, when - delta)

    return _ISO_DATETIME.sub(repl, text)


def round_times(text: str) -> str:
    """Every ISO date-time in ``text`` rounded down to the hour (an approximate time)."""

    def repl(m: re.Match[str]) -> str:
        when = _parse(m)
        if when is None or m.group(4) is None:
            return m.group(0)
        return _format_datetime(m, when.replace(minute=0, second=0))

    return _ISO_DATETIME.sub(repl, text)


#: A year on its own in text (``Q3 2025``, ``since 2019``), not part of a date, version or number.
_YEAR_TOKEN: Final = re.compile(r"(?<![\w.:/,-])(19\d\d|20\d\d)(?![\w:/-]|[.,]\d)")


def _text_years(text: str) -> list[int]:
    found = [int(m.group(1)) for m in _ISO_DATETIME.finditer(text)]
    return found + [int(m.group(1)) for m in _YEAR_TOKEN.finditer(text)]


def _shift_text_years(text: str, years: int) -> str:
    def iso(m: re.Match[str]) -> str:
        month, day = int(m.group(2)), int(m.group(3))
        if month == 2 and day == 29:
            day = 28
        return f"{int(m.group(1)) - years:04d}-{month:02d}-{day:02d}" + m.group(0)[10:]

    return _YEAR_TOKEN.sub(lambda m: str(int(m.group(1)) - years), _ISO_DATETIME.sub(iso, text))


def _own_leaves(record: dict[str, Any]) -> list[tuple[str, Any]]:
    """A record's own dated leaves: its strings, the strings of its lists of strings and its
    ``year`` fields (a nested object is a record of its own)."""
    out: list[tuple[str, Any]] = []
    for k, v in record.items():
        key = str(k)
        if isinstance(v, str) and not IDENT_TEXT_KEY.match(key):
            out.append((key, v))
        elif isinstance(v, list) and not IDENT_TEXT_KEY.match(key):
            out.extend((key, x) for x in v if isinstance(x, str))
        elif YEAR_KEY.match(key) and isinstance(v, int) and not isinstance(v, bool):
            out.append((key, v))
    return out


def _record_offset(leaves: list[tuple[str, Any]], year: int) -> int:
    latest = max((y for _, v in leaves for y in ([v] if isinstance(v, int) else _text_years(v))), default=0)
    return latest - year if latest > year else 0


def snapshot_records(obj: Any, year: int = SNAPSHOT_YEAR) -> Any:
    """A snapshot of ``year``: every record (object) that carries a date or year after ``year``
    moved back as a whole, by the whole years that bring its latest date to ``year``, so that
    its dates keep their order and spacing (a person is never re-dated to die before being
    born); records dated before stay as they are. A text (or list of texts) on its own is one
    record. Identifier fields are never re-dated."""
    if isinstance(obj, str):
        offset = _record_offset([("", obj)], year)
        return _shift_text_years(obj, offset) if offset else obj
    if isinstance(obj, list):
        if obj and all(isinstance(x, str) for x in obj):
            offset = _record_offset([("", x) for x in obj], year)
            return [_shift_text_years(x, offset) for x in obj] if offset else obj
        return [snapshot_records(x, year) for x in obj]
    if not isinstance(obj, dict):
        return obj
    offset = _record_offset(_own_leaves(obj), year)
    out: dict[str, Any] = {}
    for k, v in obj.items():
        key = str(k)
        if isinstance(v, dict) or (isinstance(v, list) and not all(isinstance(x, str) for x in v)):
            out[k] = snapshot_records(v, year)
        elif not offset or IDENT_TEXT_KEY.match(key):
            out[k] = v
        elif isinstance(v, str):
            out[k] = _shift_text_years(v, offset)
        elif isinstance(v, list):
            out[k] = [_shift_text_years(x, offset) for x in v]
        elif YEAR_KEY.match(key) and isinstance(v, int) and not isinstance(v, bool):
            out[k] = v - offset
        else:
            out[k] = v
    return out


_WEEKDAYS: Final = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def _weekday_form(value: str) -> tuple[int, str] | None:
    """(weekday index, form) of a weekday name: full or 3-letter, in its case; else None."""
    for i, day in enumerate(_WEEKDAYS):
        for form in (day, day[:3]):
            for cased, kind in ((form, "title"), (form.lower(), "lower"), (form.upper(), "upper")):
                if value == cased:
                    return i, f"{'full' if form == day else 'short'}:{kind}"
    return None


def _weekday_name(index: int, form: str) -> str:
    length, case = form.split(":")
    name = _WEEKDAYS[index] if length == "full" else _WEEKDAYS[index][:3]
    return name.lower() if case == "lower" else name.upper() if case == "upper" else name


def _first_date(text: str) -> datetime | None:
    m = _ISO_DATETIME.search(text)
    return _parse(m) if m else None


def sync_weekdays(new: Any, old: Any) -> Any:
    """A weekday name beside a date that moved (``{"date": ..., "weekday": "Monday"}``) moves
    with it, so a stale or snapshot copy stays self-consistent (no give-away but its defect)."""
    if isinstance(new, list) and isinstance(old, list) and len(new) == len(old):
        return [sync_weekdays(n, o) for n, o in zip(new, old, strict=True)]
    if not (isinstance(new, dict) and isinstance(old, dict)):
        return new
    out = {k: sync_weekdays(v, old.get(k)) for k, v in new.items()}
    moved = []
    for k, v in out.items():
        before = old.get(k)
        if isinstance(v, str) and isinstance(before, str) and v != before:
            was, now = _first_date(before), _first_date(v)
            if was is not None and now is not None and was != now:
                moved.append((was, now))
    if not moved:
        return out
    for k, v in out.items():
        day = _weekday_form(v) if isinstance(v, str) and v == old.get(k) else None
        if day is None:
            continue
        match = next((now for was, now in moved if was.weekday() == day[0]), None)
        if match is not None:
            out[k] = _weekday_name(match.weekday(), day[1])
    return out
