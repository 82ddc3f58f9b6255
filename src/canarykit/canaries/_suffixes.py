"""Suffix configuration: the canaries' give-away phrasings and their twins', per pool.

By default (``null``) a canary's phrasing is its bank entry's (:mod:`._banks`: the wording
the study drew for its variant) and its twin's the same entry's healthy phrasing.
``canaries.suffixes.<pool>.<type>`` may instead configure a string (variant 1's phrasing;
later variants take their entries'; ``""`` is no phrasing for any variant) or a list of
strings (the phrasings of variants 1, 2, ...; variants past its end take their entries').
``canaries.control_suffixes.<pool>.<type>`` is the same for the twins; ``null`` there means
the entry's twin phrasing. A canary phrasing that is empty has an empty twin phrasing (a
twin says nothing where its canary says nothing). Placeholders: ``{special_case}``
(granularity), ``{parameter}`` (parameter trap: the entry's credential argument),
``{year}``, ``{version}``, ``{month}`` (temporal: the one old date of
:data:`~._banks.OLD_DATE`; a twin is undated and takes none).

:func:`check_twin_suffixes` refuses a twin phrasing that repeats its canary's configured
non-empty phrasing or that carries a selling point (:data:`~._banks.SELLING_POINTS`),
naming the file and field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ..errors import ConfigError, InputError
from ..types import CANARY_TYPES
from ._banks import BANKS, MAX_VARIANTS, Entry, fill, selling_point

#: The paper's give-away suffixes (Appendix C, section 6.7): ``fit: paper`` with these
#: reproduces the paper's two pools.
PAPER_SUFFIXES: Final[dict[str, dict[str, str]]] = {
    "standard": {
        "semantic_decoy": "Returns cached data from the last nightly sync.",
        "parameter_trap": "Requires a valid api_key for every request.",
        "capability_mirage": "ADVANCED: solves the hardest cases with research-grade accuracy.",
        "prerequisite_blindness": "Covers private workspace resources across all accounts.",
        "temporal_decoy": "Snapshot release 2023.1 (data as of March 2023).",
        "granularity_trap": "Dedicated endpoint for {special_case}.",
    },
    "subtle": {
        "semantic_decoy": "Served from a fast regional mirror.",
        "parameter_trap": "Requires a valid api_key for every request.",
        "capability_mirage": "Optimized variant with extended precision.",
        "prerequisite_blindness": "Covers private workspace resources across all accounts.",
        "temporal_decoy": "Long-term-support release 2023.1.",
        "granularity_trap": "Dedicated endpoint for {special_case}.",
    },
}

#: The give-away suffix of each canary type, per pool (params.yaml ``canaries.suffixes``):
#: ``None`` everywhere, the bank entries' phrasings (the subtle pool takes each entry's
#: subtle style: the same severity, a softer tell).
DEFAULT_SUFFIXES: Final[dict[str, dict[str, str | None]]] = {
    "standard": {t: None for t in CANARY_TYPES},
    "subtle": {t: None for t in CANARY_TYPES},
}

#: The twins' suffixes, per pool (params.yaml ``canaries.control_suffixes``): ``None``, the
#: bank entries' twin phrasings.
DEFAULT_CONTROL_SUFFIXES: Final[dict[str, dict[str, str | None]]] = {
    "standard": {t: None for t in CANARY_TYPES},
    "subtle": {t: None for t in CANARY_TYPES},
}

#: The twins' suffixes for :data:`PAPER_SUFFIXES` (the paper had no twins): the healthy value
#: of each paper tell, undated, with the canary's breadth, no sameness statement.
PAPER_CONTROL_SUFFIXES: Final[dict[str, dict[str, str]]] = {
    "standard": {
        "semantic_decoy": "Returns the data in the format of the source service.",
        "parameter_trap": "Requires valid arguments for every request.",
        "capability_mirage": "STANDARD: takes the parameters above and returns one result per call.",
        "prerequisite_blindness": "Covers public workspace resources across all accounts.",
        "temporal_decoy": "Dataset release (data in the layout of the service).",
        "granularity_trap": "General endpoint for every case.",
    },
    "subtle": {
        "semantic_decoy": "Served from a regional endpoint.",
        "parameter_trap": "Requires valid arguments for every request.",
        "capability_mirage": "Separate variant with its own parameters.",
        "prerequisite_blindness": "Covers public workspace resources across all accounts.",
        "temporal_decoy": "Regular release of this dataset.",
        "granularity_trap": "General endpoint for every case.",
    },
}

Phrasings = Mapping[str, "str | list[str] | None"]


def check_suffixes(
    suffixes: Any, source: str, field: str, *, allow_none: bool = True
) -> dict[str, Any]:
    """Every canary type must map to ``None`` (the bank's phrasings; a missing type too), a
    string (possibly empty) or a list of 1 to :data:`~._banks.MAX_VARIANTS` strings (the
    phrasings of variants 1, 2, ...)."""
    if suffixes is None:
        suffixes = {}
    if not isinstance(suffixes, Mapping):
        raise InputError(
            source,
            field,
            f"expected a mapping of canary type to suffix, got {type(suffixes).__name__}",
        )
    unknown = sorted(set(suffixes) - set(CANARY_TYPES))
    if unknown:
        raise InputError(
            source,
            f"{field}.{unknown[0]}",
            f"unknown canary type; expected one of {list(CANARY_TYPES)}",
        )
    out: dict[str, Any] = {}
    for t in CANARY_TYPES:
        value = suffixes.get(t)
        if isinstance(value, list):
            if not 1 <= len(value) <= MAX_VARIANTS:
                raise InputError(source, f"{field}.{t}", f"expected 1 to {MAX_VARIANTS} phrasings, got {len(value)}")
            for i, v in enumerate(value):
                if not isinstance(v, str):
                    raise InputError(source, f"{field}.{t}[{i}]", f"expected a string, got {type(v).__name__}")
            out[t] = list(value)
        elif isinstance(value, str) or (allow_none and value is None):
            out[t] = value
        else:
            raise InputError(
                source, f"{field}.{t}", f"expected a string, a list of strings or null, got {type(value).__name__}"
            )
    return out


def _configured(value: Any, variant: int) -> str | None:
    """Variant ``variant``'s configured phrasing, or None when its entry's applies (an empty
    string is no phrasing for every variant)."""
    if isinstance(value, str):
        return value if variant == 1 or not value.strip() else None
    if isinstance(value, list) and variant <= len(value):
        return str(value[variant - 1])
    return None


def phrasing(suffixes: Phrasings, controls: Phrasings, canary_type: str, variant: int, style: str,
             wording: Entry) -> tuple[str, str]:
    """The (canary, twin) suffixes of a variant whose bank entry is ``wording``, placeholders
    filled but ``{special_case}``."""
    canary = _configured(suffixes.get(canary_type), variant)
    if canary is None:
        canary = wording.phrasing(style)
    if not canary.strip():
        return "", ""
    twin = _configured(controls.get(canary_type), variant)
    if twin is None:
        twin = wording.phrasing(style, twin=True)
    return fill(canary, wording), fill(twin, wording)


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def check_twin_suffixes(
    suffixes: Phrasings, controls: Phrasings, style: str, source: str, field: str
) -> None:
    """Refuse a configured twin phrasing (``field.<type>`` or ``field.<type>[i]``) equal to
    its canary's configured non-empty phrasing, or carrying a selling point."""
    for t in CANARY_TYPES:
        value = controls.get(t)
        texts = [value] if isinstance(value, str) else list(value) if isinstance(value, list) else []
        for i, twin in enumerate(texts, start=1):
            where = f"{field}.{t}" if isinstance(value, str) else f"{field}.{t}[{i - 1}]"
            canary = _configured(suffixes.get(t), i)
            # unconfigured, the canary's phrasing is a drawn entry's: any of the bank's
            said = [canary] if canary is not None else [e.phrasing(st) for e in BANKS[t] for st in ("standard", "subtle")]
            repeated = next((c for c in said if c.strip() and _norm(twin) == _norm(c)), None)
            if repeated is not None:
                raise InputError(source, where, f"the twin's suffix repeats its canary's ({repeated!r}): a twin "
                                 "carries the probed property at its healthy value (docs/canaries.md, \"Twins\")")
            word = selling_point(twin)
            if word is not None:
                raise InputError(source, where, f"the twin's suffix carries the selling point {word!r}: a twin "
                                 "makes no freshness, accuracy, reliability or capability claim")


def check_canary_settings(canaries: Mapping[str, Any], source: str = "params.yaml") -> None:
    """The suffix settings of a params file's ``canaries`` section (both forms, both pools),
    and the twins' rules: one line naming the file and field on the first problem."""
    suffixes = canaries.get("suffixes") or {}
    controls = canaries.get("control_suffixes") or {}
    try:
        for pool in sorted(set(suffixes) | set(controls)):
            style = "subtle" if pool == "subtle" else "standard"
            canary = check_suffixes(suffixes.get(pool), source, f"canaries.suffixes.{pool}")
            twin = check_suffixes(controls.get(pool), source, f"canaries.control_suffixes.{pool}")
            check_twin_suffixes(canary, twin, style, source, f"canaries.control_suffixes.{pool}")
    except ConfigError:
        raise
    except InputError as exc:  # a configuration error: the config's own kind (blamed on the file that set it)
        raise ConfigError(exc.file, exc.field, exc.problem) from None
