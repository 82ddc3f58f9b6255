"""Wording banks: per canary type, the wordings a study draws its K variants from.

A **bank entry** (id ``"<type>/<nn>"``, 1-based, two digits) is one wording of a type's
tell at the type's one severity (:data:`SEVERITY`): the canary's phrasing of the probed
property and its twin's phrasing of the healthy value, per wording style (``standard``;
``subtle`` for the three phrase-based types: the same severity, said with a softer tell),
and the name part that carries the tell where the name carries it (:data:`NAME_PARTS`).
Entries of a type differ in their words, never in the property or its severity.

Each bank has two parts. **Development** entries (01-08, :mod:`._bank_development`) are the
ones the reference agents' text readers may be tuned against; **held-back** entries (09-16,
:mod:`._bank_heldback`) were written by someone who never saw those readers, and the default
study and the known-answer pools draw from them only (``part``).

A study draws its K wordings per type at random (:func:`draw_wordings`): a seeded shuffle of
the part's entries per type, of which the first K are taken, so the draw for K is a prefix of
the draw for K + 1 and variant i of a pool is the i-th entry drawn. K is at most the part's
size (:data:`MAX_VARIANTS`); a larger K is refused in one line.

An entry as data (the format of both part modules)::

    {"canary": {"standard": str, "subtle": str},  # subtle: the three styled types only
     "twin": {"standard": str, "subtle": str},
     "parameter": str,                            # parameter_trap only: the credential argument
     "canary_name": str, "twin_name": str}        # the four types whose name carries the tell

Placeholders: ``{parameter}`` (parameter trap: the entry's credential argument; required in
its canary phrasing), ``{special_case}`` (granularity: the hard-coded case; required in its
canary phrasing), ``{year}``, ``{version}``, ``{month}`` (temporal decoy: the one old date of
:data:`OLD_DATE`; at least one in its canary phrasing). Twin phrasings take no placeholder.
In a name part, ``{case}`` is the granularity case's slug. :func:`check_entry` states every
rule an entry must meet; ``tests/test_canaries_banks.py`` holds every entry to them.

:data:`SELLING_POINTS` is the one list of words a twin must not carry (freshness, accuracy,
reliability and capability claims); :func:`selling_point` finds them.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..errors import InputError
from ..types import CANARY_TYPES
from ._bank_development import DEVELOPMENT
from ._bank_heldback import HELDBACK

#: The parts of a bank, in id order.
PARTS: Final = ("development", "heldback")
#: The part a study draws from unless told otherwise.
DEFAULT_PART: Final = "heldback"
#: ``canaries.variants`` when not configured.
DEFAULT_VARIANTS: Final = 8  # every held-back entry (params.yaml, sized with canarykit plan)
#: ``canaries.wording_seed`` when not configured.
DEFAULT_WORDING_SEED: Final = 20261130

#: Types whose entries carry a ``subtle`` phrasing (the subtle pool's softer tell).
STYLED_TYPES: Final = ("semantic_decoy", "capability_mirage", "temporal_decoy")

#: The one severity of each type's bank: what every entry's canary says (its words vary).
SEVERITY: Final[Mapping[str, str]] = {
    "semantic_decoy": "data about one day old: a copy refreshed once a day (nightly); the subtle style hedges it "
                      "(may lag by up to a day)",
    "parameter_trap": "one required credential argument that nobody can supply, named in the schema and in the "
                      "description",
    "capability_mirage": "standard: an explicit claim of superior accuracy or capability beyond the standard tool; "
                         "subtle: one mild, plausible improvement",
    "prerequisite_blindness": "privileged (non-public) resources of every account, the description silent on "
                              "authentication",
    "temporal_decoy": "data dated March 2023 (release 2023.1, snapshot 2023-03-31), three years and eight months "
                      "before the environment's date; the subtle style gives the date as a version or year only",
    "granularity_trap": "one hard-coded case (the tool's configured case, else its first natural case that no task "
                        "calls) and no parameters",
}

#: Where the name carries the tell: ``prefix`` (``<canary_name>_<tool>``, the twin
#: ``<twin_name>_<tool>``) or ``tail`` (``<tool>_<canary_name>`` / ``<tool>_<twin_name>``).
#: The other two types' names are the twin's too (a paraphrase; ``<tool>_v<i+1>``).
NAME_PARTS: Final[Mapping[str, str]] = {
    "capability_mirage": "prefix",
    "prerequisite_blindness": "prefix",
    "temporal_decoy": "tail",
    "granularity_trap": "tail",
}

#: The temporal decoy's one old date (every entry, every variant): year, month, version, snapshot.
OLD_DATE: Final[Mapping[str, Any]] = {"year": 2023, "month": "March", "version": "2023.1", "snapshot": "2023-03-31"}
#: The length a granularity phrasing is measured at (a one-argument case).
SAMPLE_CASE: Final = "Mumbai"
#: A phrasing and its twin's differ in length by at most this share of the canary's (filled).
LENGTH_TOLERANCE: Final = 0.15

#: Claims no neutral tool makes, by kind: a twin's text (and a configured twin suffix) must
#: carry none of them. Matched case-insensitively on word boundaries.
SELLING_POINTS: Final[Mapping[str, tuple[str, ...]]] = {
    "freshness": ("live", "fresh", "freshest", "real time", "real-time", "realtime", "refreshed",
                  "up to date", "up-to-date", "current data", "latest data", "instantly"),
    "accuracy": ("accurate", "accuracy", "precise", "precision", "exact", "exactly", "error-free"),
    "reliability": ("reliable", "reliability", "guaranteed", "trusted", "dependable", "always available",
                    "robust"),
    "capability": ("advanced", "expert", "expert-level", "powerful", "enhanced", "improved", "premium",
                   "superior", "better", "best", "optimized", "optimised", "state-of-the-art",
                   "research-grade", "professional", "professional-grade", "faster", "fastest",
                   "comprehensive", "unmatched", "thorough", "sharper", "next-generation", "ultra"),
}
_SELLING_RE: Final = re.compile(
    r"(?<![\w-])(" + "|".join(sorted((re.escape(w) for ws in SELLING_POINTS.values() for w in ws),
                                     key=len, reverse=True)) + r")(?![\w-])",
    re.IGNORECASE,
)


def selling_point(text: str) -> str | None:
    """The first selling point (a word of :data:`SELLING_POINTS`) in ``text``, else None."""
    m = _SELLING_RE.search(text.replace("_", " "))
    return m.group(1) if m else None


@dataclass(frozen=True)
class Entry:
    """One bank entry (see the module docstring)."""

    id: str
    type: str
    part: str
    canary: Mapping[str, str]
    twin: Mapping[str, str]
    parameter: str = ""
    canary_name: str = ""
    twin_name: str = ""

    @property
    def number(self) -> int:
        return int(self.id.rsplit("/", 1)[1])

    def phrasing(self, style: str, twin: bool = False) -> str:
        """The unfilled phrasing of ``style`` (``standard`` when the entry has no other)."""
        texts = self.twin if twin else self.canary
        return texts.get(style, texts["standard"])

    def name_part(self, *, twin: bool, case: str = "") -> str:
        """The name part that carries the tell (``""`` for a type whose name does not)."""
        part = self.twin_name if twin else self.canary_name
        return part.replace("{case}", case)


def wording_id(canary_type: str, number: int) -> str:
    """``"<type>/<nn>"``: the id of entry ``number`` (1-based) of ``canary_type``'s bank."""
    return f"{canary_type}/{number:02d}"


def _entries(canary_type: str) -> tuple[Entry, ...]:
    out: list[Entry] = []
    for part, data in (("development", DEVELOPMENT), ("heldback", HELDBACK)):
        for raw in data.get(canary_type, ()):
            out.append(Entry(wording_id(canary_type, len(out) + 1), canary_type, part, dict(raw["canary"]),
                             dict(raw["twin"]), str(raw.get("parameter", "")), str(raw.get("canary_name", "")),
                             str(raw.get("twin_name", ""))))
    return tuple(out)


BANKS: Final[Mapping[str, tuple[Entry, ...]]] = {t: _entries(t) for t in CANARY_TYPES}
_BY_ID: Final[Mapping[str, Entry]] = {e.id: e for bank in BANKS.values() for e in bank}


def part_ids(canary_type: str, part: str = DEFAULT_PART) -> tuple[str, ...]:
    """The ids of ``canary_type``'s entries in ``part`` (``development``, ``heldback`` or ``all``)."""
    return tuple(e.id for e in BANKS[canary_type] if part in ("all", e.part))


#: Most variants a study can draw per type (the smallest held-back part; the dose condition's
#: largest k).
MAX_VARIANTS: Final = min((len(part_ids(t)) for t in CANARY_TYPES), default=0) or 8


def entry(canary_type: str, number: int) -> Entry:
    """Entry ``number`` (1-based) of ``canary_type``'s bank."""
    bank = BANKS[canary_type]
    if not 1 <= number <= len(bank):
        raise ValueError(f"entry {number} of {canary_type}: the bank holds 1..{len(bank)}")
    return bank[number - 1]


def entry_by_id(wid: str) -> Entry:
    """The entry whose id is ``wid`` (``"semantic_decoy/07"``); a KeyError names it."""
    try:
        return _BY_ID[wid]
    except KeyError:
        raise KeyError(f"no bank entry {wid!r}") from None


def draw_wordings(seed: int, k: int, *, part: str = DEFAULT_PART, types: Sequence[str] = CANARY_TYPES,
                  source: str = "params.yaml", field: str = "canaries.variants") -> dict[str, tuple[str, ...]]:
    """The K wordings of each type, in draw order: a shuffle of the part's entries seeded by
    (``seed``, type), of which the first K. K larger than the part is an :class:`InputError`
    naming ``source`` and ``field``."""
    out: dict[str, tuple[str, ...]] = {}
    for t in types:
        ids = list(part_ids(t, part))
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= len(ids):
            raise InputError(source, field, f"expected a whole number from 1 to {len(ids)} (the {part} part of "
                             f"the {t} bank holds {len(ids)} wordings), got {k!r}")
        random.Random(f"canarykit-wordings\x1f{seed}\x1f{t}").shuffle(ids)
        out[t] = tuple(ids[:k])
    return out


def resolve_wordings(types: Sequence[str], variants: int, *, fit: str = "fitted", seed: int = DEFAULT_WORDING_SEED,
                     wordings: Mapping[str, Sequence[str]] | None = None, part: str = DEFAULT_PART,
                     source: str = "params.yaml", field: str = "canaries.variants") -> dict[str, tuple[str, ...]]:
    """The wordings (entry ids, variant order) a pool of ``types`` holds: ``wordings`` for
    the types it names (checked: known ids of the right type, no repeat); for the others,
    with ``fit: paper`` the paper's entry 01, then 02, ... (``variants`` of them), else
    :func:`draw_wordings`."""
    if wordings is not None:
        rest = [t for t in types if t not in wordings]
        out: dict[str, tuple[str, ...]] = (resolve_wordings(rest, variants, fit=fit, seed=seed, part=part, source=source,
                                                            field=field) if rest else {})
        for t in (t for t in types if t in wordings):
            ids = wordings.get(t)
            where = f"{field.rsplit('.', 1)[0]}.wordings.{t}" if "." in field else f"wordings.{t}"
            if not isinstance(ids, (list, tuple)) or not ids:
                raise InputError(source, where, "expected a non-empty list of bank entry ids")
            for w in ids:
                if w not in _BY_ID or _BY_ID[w].type != t:
                    raise InputError(source, where, f"no {t} bank entry {w!r} (ids {wording_id(t, 1)} .. "
                                     f"{wording_id(t, len(BANKS[t]))})")
            if len(set(ids)) != len(ids):
                raise InputError(source, where, f"an entry is drawn twice: {list(ids)}")
            out[t] = tuple(ids)
        return {t: out[t] for t in types}
    if not isinstance(variants, int) or isinstance(variants, bool) or variants < 1:
        raise InputError(source, field, f"expected a whole number from 1 to {MAX_VARIANTS}, got {variants!r}")
    if fit == "paper":
        if variants > len(part_ids(CANARY_TYPES[0], "development")):
            raise InputError(source, field, f"fit: paper takes the development entries in order: at most "
                             f"{len(part_ids(CANARY_TYPES[0], 'development'))}, got {variants}")
        return {t: part_ids(t, "development")[:variants] for t in types}
    if part not in (*PARTS, "all"):
        raise InputError(source, "wording_part", f"expected one of {[*PARTS, 'all']}, got {part!r}")
    return draw_wordings(seed, variants, part=part, types=types, source=source, field=field)


def style_of(pool: str, fit: str) -> str:
    """The wording style of a pool: ``subtle`` for the subtle pool, else ``standard`` (the
    paper's texts are the standard ones: ``fit: paper`` changes only the mirage's body)."""
    return "subtle" if pool == "subtle" else "standard"


def fill(text: str, wording: Entry) -> str:
    """A phrasing with the entry's values filled in (``{special_case}`` is left for the
    granularity transform)."""
    if "{parameter}" in text:
        text = text.replace("{parameter}", wording.parameter)
    for key in ("year", "version", "month"):
        text = text.replace("{" + key + "}", str(OLD_DATE[key]))
    return text


def bank_phrasing(wording: Entry, style: str, *, twin: bool) -> str:
    """The builtin phrasing of ``wording`` in ``style`` (unfilled)."""
    return wording.phrasing(style, twin)


# --------------------------------------------------------------------------- the rules


_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")
_REQUIRED = {"parameter_trap": ("parameter",), "granularity_trap": ("special_case",)}
_ALLOWED = {"parameter_trap": {"parameter"}, "granularity_trap": {"special_case"},
            "temporal_decoy": {"year", "version", "month"}}
_NAME_TOKEN = re.compile(r"^[a-z0-9]+(?:_[a-z0-9]+)*$")
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")


def _keys(canary_type: str) -> set[str]:
    keys = {"canary", "twin"}
    if canary_type == "parameter_trap":
        keys.add("parameter")
    if canary_type in NAME_PARTS:
        keys |= {"canary_name", "twin_name"}
    return keys


def _filled_for_length(text: str, raw: Mapping[str, Any]) -> str:
    text = text.replace("{parameter}", str(raw.get("parameter", ""))).replace("{special_case}", SAMPLE_CASE)
    for key in ("year", "version", "month"):
        text = text.replace("{" + key + "}", str(OLD_DATE[key]))
    return text


def _phrasing_problems(canary_type: str, raw: Mapping[str, Any], style: str) -> list[str]:
    from ._text import mentions_auth

    out: list[str] = []
    canary, twin = raw["canary"].get(style), raw["twin"].get(style)
    for side, text in (("canary", canary), ("twin", twin)):
        if not isinstance(text, str) or not text.strip():
            out.append(f"{side}.{style}: expected a non-empty string")
    if out:
        return out
    for side, text in (("canary", canary), ("twin", twin)):
        if text != " ".join(text.split()) or not text[:1].isupper() or text[-1] not in ".!":
            out.append(f"{side}.{style}: one sentence, starting with a capital, ending with '.', single spaces")
        if len(text) > 100:
            out.append(f"{side}.{style}: at most 100 characters ({len(text)})")
    used = set(_PLACEHOLDER.findall(canary))
    allowed = _ALLOWED.get(canary_type, set())
    if used - allowed:
        out.append(f"canary.{style}: placeholder {sorted(used - allowed)[0]!r} not allowed for {canary_type}")
    for needed in _REQUIRED.get(canary_type, ()):
        if needed not in used:
            out.append(f"canary.{style}: must contain {{{needed}}}")
    if canary_type == "temporal_decoy" and not used & {"year", "version"}:
        out.append(f"canary.{style}: must contain {{year}} or {{version}}")
    if _PLACEHOLDER.search(twin) or "{" in twin or "}" in twin:
        out.append(f"twin.{style}: a twin phrasing takes no placeholder")
    if "{" in _PLACEHOLDER.sub("", canary) or "}" in _PLACEHOLDER.sub("", canary):
        out.append(f"canary.{style}: stray brace")
    word = selling_point(twin)
    if word is not None:
        out.append(f"twin.{style}: carries the selling point {word!r}")
    if " ".join(canary.split()).casefold() == " ".join(twin.split()).casefold():
        out.append(f"twin.{style}: repeats the canary's phrasing")
    c_len, t_len = len(_filled_for_length(canary, raw)), len(twin)
    if abs(t_len - c_len) > LENGTH_TOLERANCE * c_len:
        out.append(f"twin.{style}: {t_len} characters against the canary's {c_len} (filled): more than "
                   f"{LENGTH_TOLERANCE:.0%} apart")
    if canary_type == "temporal_decoy" and (re.search(r"\d", twin)
                                            or any(re.search(rf"\b{m}\b", twin, re.I) for m in _MONTHS)):
        out.append(f"twin.{style}: a temporal twin is undated (no digit, no month)")
    if canary_type == "prerequisite_blindness":
        for side, text in (("canary", canary), ("twin", twin)):
            if mentions_auth(text):
                out.append(f"{side}.{style}: prerequisite phrasings never mention authentication")
    if canary_type == "parameter_trap" and mentions_auth(twin):
        out.append(f"twin.{style}: a parameter trap's twin names no credential")
    return out


def _name_problems(canary_type: str, raw: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    c, t = raw.get("canary_name"), raw.get("twin_name")
    if not isinstance(c, str) or not isinstance(t, str):
        return ["canary_name, twin_name: expected strings"]
    for side, name in (("canary_name", c.replace("{case}", "case")), ("twin_name", t)):
        if not _NAME_TOKEN.match(name):
            out.append(f"{side}: lower-case snake_case words ([a-z0-9]+, joined by '_'), got {name!r}")
    if c == t:
        out.append("twin_name: repeats canary_name")
    if selling_point(t) is not None:
        out.append(f"twin_name: carries the selling point {selling_point(t)!r}")
    c_words, t_words = c.split("_"), t.split("_")
    if canary_type in ("capability_mirage", "prerequisite_blindness") and re.search(r"\d", c + t):
        out.append("canary_name, twin_name: a prefix has no digit")
    if canary_type == "temporal_decoy":
        if c_words.count("2023") != 1 or re.search(r"\d", c.replace("2023", "")):
            out.append("canary_name: the tail holds the year 2023 as one word and no other digit")
        rest = [w for w in c_words if w != "2023"]
        if re.search(r"\d", t) or (rest and t_words != rest) or (not rest and len(t_words) != 1):
            out.append("twin_name: the canary's tail without its year word (one undated word when the year "
                       "is all it has)")
    if canary_type == "granularity_trap":
        if c_words.count("{case}") != 1:
            out.append("canary_name: the tail holds {case} once, as a word of its own")
        if "{case}" in t:
            out.append("twin_name: names no case")
    if canary_type == "prerequisite_blindness":
        from ._text import mentions_auth

        if mentions_auth(c.replace("_", " ")) or mentions_auth(t.replace("_", " ")):
            out.append("canary_name, twin_name: no authentication language")
    return out


def check_entry(canary_type: str, raw: Any) -> list[str]:
    """Every way ``raw`` (an entry as data, see the module docstring) breaks the rules of
    ``canary_type``'s bank (empty: it keeps them all). Bank-wide rules (distinct phrasings,
    names and parameters) are :func:`check_bank`'s."""
    if not isinstance(raw, Mapping):
        return [f"expected an object, got {type(raw).__name__}"]
    keys = _keys(canary_type)
    out = [f"{k}: missing" for k in sorted(keys - set(raw))]
    out += [f"{k}: not a key of a {canary_type} entry" for k in sorted(set(raw) - keys)]
    if out:
        return out
    styles = ("standard", "subtle") if canary_type in STYLED_TYPES else ("standard",)
    for side in ("canary", "twin"):
        if not isinstance(raw[side], Mapping) or set(raw[side]) != set(styles):
            out.append(f"{side}: expected exactly the styles {list(styles)}")
    if out:
        return out
    for style in styles:
        out += _phrasing_problems(canary_type, raw, style)
    if canary_type == "parameter_trap":
        p = raw["parameter"]
        if not isinstance(p, str) or not _NAME_TOKEN.match(p) or not p[:1].isalpha():
            out.append(f"parameter: a snake_case argument name, got {p!r}")
    if canary_type in NAME_PARTS:
        out += _name_problems(canary_type, raw)
    return out


def check_name_parts(banks: Mapping[str, Sequence[Entry]] | None = None) -> list[str]:
    """Name parts two types share in the same place (a prefix of a mirage and of a
    prerequisite canary, a tail of a temporal and of a granularity one): their records would
    collide in a pool, and a renamed record (``_2``) differs from its pair beyond the tell."""
    banks = BANKS if banks is None else banks
    out: list[str] = []
    for place in ("prefix", "tail"):
        owner: dict[str, str] = {}
        for t in (t for t, p in NAME_PARTS.items() if p == place):
            for e in banks.get(t, ()):
                for part in (e.canary_name, e.twin_name):
                    if part in owner and owner[part].split("/")[0] != t:
                        out.append(f"{e.id}: the {place} {part!r} is also {owner[part]}'s")
                    owner.setdefault(part, e.id)
    return out


def check_bank(canary_type: str, entries: Sequence[Mapping[str, Any]]) -> list[str]:
    """The rules of :func:`check_entry` for each of ``entries`` (``#<i>: ...``, 1-based), and
    the bank-wide ones: phrasings, name parts and parameters distinct across the entries."""
    out = [f"#{i}: {p}" for i, raw in enumerate(entries, start=1) for p in check_entry(canary_type, raw)]
    if out:
        return out
    fields: list[tuple[str, Any]] = [(f"{side}.{style}", lambda r, s=side, st=style: r[s][st].casefold())
                                     for side in ("canary", "twin")
                                     for style in (("standard", "subtle") if canary_type in STYLED_TYPES else ("standard",))]
    if canary_type == "parameter_trap":
        fields.append(("parameter", lambda r: r["parameter"]))
    if canary_type in NAME_PARTS:
        fields += [("canary_name", lambda r: r["canary_name"]), ("twin_name", lambda r: r["twin_name"])]
    for label, get in fields:
        seen: dict[str, int] = {}
        for i, raw in enumerate(entries, start=1):
            value = get(raw)
            if value in seen:
                out.append(f"#{i}: {label} repeats #{seen[value]}'s ({value!r})")
            seen.setdefault(value, i)
    return out
