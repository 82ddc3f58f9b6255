"""Pool files: the canaries, their twins and the skip list of one pool, persisted once.

A pool file is a JSON object::

    {"format": "canarykit-pool", "format_version": 4, "pool": "standard", "fit": "fitted",
     "generator_version": 4, "variants": 3, "wording_seed": 20261130,
     "wordings": {"semantic_decoy": ["semantic_decoy/13", ...], ...},
     "canaries": [...], "controls": [...], "skipped": [...], "coincidences": [...]}

``wording_seed`` and ``wordings`` record the study's draw of wordings from the banks
(:mod:`._banks`: per type, the entry ids of variants 1, 2, ...; the seed is null when the
wordings were given, or are the paper's).

``controls`` (the twins) is empty unless generated with them; ``skipped`` lists every (tool,
type) without a canary (``tool``, ``type`` (``*`` = all), ``code``, ``reason``,
``warning``, ``field``) and, with a ``task``, every granularity offering withheld from one
task of the suite (code ``task_without_case``: the task's plan never calls the tool);
``coincidences`` lists granularity cases that serve a task (only ``fit: paper`` keeps such
canaries). Every record carries ``variant`` (1..K within the pool), ``wording`` (its bank
entry's id, ``"<type>/<nn>"``: the same for every tool given that entry; a twin carries its
canary's), ``tell`` (the name part and description fragments that carry the probed property,
or in a twin its healthy value: what ``canarykit audit-twins`` allows a pair to differ in)
and ``selection_visible`` (false when a canary and its twin show the same name, description
and input schema). Older files read as they were written (format 3: no ``wording``, no
``tell``; format 2: no ``variants``, read as variant 1, visible); a plain JSON list of
canary records (the format before controls) is still read.
:func:`load_pool` returns the canaries, :func:`load_controls` the twins,
:func:`load_pool_document` everything.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import polars as pl

from ..errors import InputError
from ..store.jsonio import canonical_json, read_json_input, write_json
from ..store.schemas import CanariesTable, validate
from ..types import CANARY_TYPES
from ._controls import CONTROL_PREFIX
from ._text import NAME_RE
from ._validate import HINTS, Skip, check_input_schema

POOL_FORMAT: Final = "canarykit-pool"
#: A bank entry id: ``<type>/<nn>`` (two digits, 1-based).
WORDING_RE: Final = re.compile(r"^[a-z_]+/\d{2}$")
POOL_FORMAT_VERSION: Final = 4

#: Keys every persisted canary (and control) record carries.
RECORD_KEYS: Final = (
    "id",
    "type",
    "shadows",
    "name",
    "description",
    "inputSchema",
    "pool",
    "behaviour",
    "provenance",
)
#: Keys a record carries when the real tool has them (mirrored MCP metadata, its server).
OPTIONAL_KEYS: Final = ("title", "annotations", "outputSchema", "upstream", "control_of", "variant",
                        "selection_visible", "wording", "tell")


@dataclass
class Pool:
    """One generated pool: canaries, controls (when asked for), skips and coincidences."""

    pool: str
    fit: str
    canaries: list[dict[str, Any]]
    controls: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    coincidences: list[dict[str, Any]] = field(default_factory=list)
    generator_version: int = 4
    #: the seed of the draw of wordings (None: given, or the paper's)
    wording_seed: int | None = None
    #: per type, the bank entry ids of variants 1, 2, ... (the draw)
    wordings: dict[str, list[str]] = field(default_factory=dict)

    @property
    def variants(self) -> int:
        """The most variants any (tool, type) of the pool has."""
        return max((int(c.get("variant", 1)) for c in self.canaries), default=1)

    def document(self) -> dict[str, Any]:
        return {
            "format": POOL_FORMAT,
            "format_version": POOL_FORMAT_VERSION,
            "pool": self.pool,
            "fit": self.fit,
            "generator_version": self.generator_version,
            "variants": self.variants,
            "wording_seed": self.wording_seed,
            "wordings": self.wordings,
            "canaries": self.canaries,
            "controls": self.controls,
            "skipped": [s.to_dict() for s in self.skipped],
            "coincidences": self.coincidences,
        }

    @property
    def warnings(self) -> list[Skip]:
        return [s for s in self.skipped if s.warning]


def write_pool(records: list[dict[str, Any]] | Pool, path: str | Path) -> None:
    """Persist a pool (a :class:`Pool` as a pool document, a list of records as a list) as
    stable pretty JSON (byte-identical for equal pools)."""
    write_json(path, records.document() if isinstance(records, Pool) else records)


def _check_record(rec: Any, i: int, source: str, where: str) -> str:
    if not isinstance(rec, dict):
        raise InputError(source, f"{where}[{i}]", f"expected an object, got {type(rec).__name__}")
    label = f"{where}[{i}] ({rec.get('id')})" if isinstance(rec.get("id"), str) else f"{where}[{i}]"
    for key, typ in (
        ("id", str),
        ("type", str),
        ("shadows", str),
        ("name", str),
        ("description", str),
        ("inputSchema", dict),
        ("pool", str),
        ("behaviour", dict),
    ):
        if key not in rec:
            raise InputError(source, f"{label}.{key}", "missing")
        if not isinstance(rec[key], typ):
            raise InputError(
                source, f"{label}.{key}", f"expected {typ.__name__}, got {type(rec[key]).__name__}"
            )
    if rec["type"] not in CANARY_TYPES:
        raise InputError(
            source, f"{label}.type", f"expected one of {list(CANARY_TYPES)}, got {rec['type']!r}"
        )
    if not NAME_RE.match(rec["name"]):
        raise InputError(
            source, f"{label}.name", f"expected 1-64 characters of [a-zA-Z0-9_-], got {rec['name']!r}"
        )
    if not rec["description"].strip():
        raise InputError(source, f"{label}.description", "empty")
    if "provenance" in rec and not isinstance(rec["provenance"], dict):
        raise InputError(source, f"{label}.provenance", "expected an object")
    check_input_schema(rec["inputSchema"], source, f"{label}.inputSchema")
    if "title" in rec and not isinstance(rec["title"], str):
        raise InputError(source, f"{label}.title", "expected a string")
    if "annotations" in rec:
        ann = rec["annotations"]
        if not isinstance(ann, dict) or any(k in HINTS and not isinstance(v, bool) for k, v in ann.items()):
            raise InputError(source, f"{label}.annotations", "expected MCP tool annotations (boolean hints)")
    if "outputSchema" in rec:
        check_input_schema(rec["outputSchema"], source, f"{label}.outputSchema")
    if "variant" in rec and not (isinstance(rec["variant"], int) and not isinstance(rec["variant"], bool)
                                 and rec["variant"] >= 1):
        raise InputError(source, f"{label}.variant", f"expected a whole number from 1, got {rec['variant']!r}")
    if "selection_visible" in rec and not isinstance(rec["selection_visible"], bool):
        raise InputError(source, f"{label}.selection_visible", "expected true or false")
    if "wording" in rec and not (isinstance(rec["wording"], str) and WORDING_RE.match(rec["wording"])
                                 and rec["wording"].split("/")[0] == rec["type"]):
        raise InputError(source, f"{label}.wording", f'expected "{rec["type"]}/<nn>", got {rec["wording"]!r}')
    if "tell" in rec and not (isinstance(rec["tell"], dict) and isinstance(rec["tell"].get("name"), str)
                              and isinstance(rec["tell"].get("description"), list)
                              and all(isinstance(f, str) for f in rec["tell"]["description"])):
        raise InputError(source, f"{label}.tell", 'expected {"name": str, "description": [str, ...]}')
    if "upstream" in rec:
        up = rec["upstream"]
        if not (isinstance(up, dict) and isinstance(up.get("server"), str) and isinstance(up.get("name"), str)):
            raise InputError(source, f"{label}.upstream", 'expected {"server": str, "name": str}')
    control = rec["id"].startswith(CONTROL_PREFIX)
    if control != isinstance(rec.get("control_of"), str):
        raise InputError(
            source,
            f"{label}.control_of",
            "a twin (id control:<canary id>) names the canary it controls in control_of, "
            "and only a twin does",
        )
    return label


def validate_pool(obj: Any, source: str, where: str = "") -> list[dict[str, Any]]:
    """Check a list of canary (or control) records; :class:`InputError` names the record and
    field. Ids and names must be unique within the list."""
    if not isinstance(obj, list):
        raise InputError(
            source, where or "<root>", f"expected a JSON list of canary records, got {type(obj).__name__}"
        )
    ids: dict[str, int] = {}
    names: dict[str, int] = {}
    for i, rec in enumerate(obj):
        label = _check_record(rec, i, source, where)
        for seen, key in ((ids, "id"), (names, "name")):
            if rec[key] in seen:
                raise InputError(
                    source,
                    f"{label}.{key}",
                    f"duplicate {key} {rec[key]!r} (also {where}[{seen[rec[key]]}])",
                )
            seen[rec[key]] = i
    return obj


def load_pool_document(path: str | Path) -> dict[str, Any]:
    """Read and validate a pool file: ``canaries``, ``controls``, ``skipped``,
    ``coincidences`` and the header keys (a plain list reads as canaries only)."""
    src = str(path)
    obj = read_json_input(path, "canary pool")
    if isinstance(obj, list):
        return {"canaries": validate_pool(obj, src), "controls": [], "skipped": [], "coincidences": []}
    if not isinstance(obj, dict) or obj.get("format") != POOL_FORMAT:
        raise InputError(src, "<root>", f'expected a pool file ({{"format": "{POOL_FORMAT}", ...}}) or a list of canaries')
    version = obj.get("format_version")
    if not isinstance(version, int) or version > POOL_FORMAT_VERSION:
        raise InputError(src, "format_version", f"expected at most {POOL_FORMAT_VERSION}, got {version!r} (a newer canarykit wrote it)")
    out = dict(obj)
    out["canaries"] = validate_pool(obj.get("canaries"), src, "canaries")
    controls = validate_pool(obj.get("controls", []), src, "controls")
    canary_ids = {c["id"] for c in out["canaries"]}
    for i, c in enumerate(controls):
        if c["control_of"] not in canary_ids:
            raise InputError(src, f"controls[{i}].control_of", f"no canary {c['control_of']!r} in this pool")
    out["controls"] = controls
    for key in ("skipped", "coincidences"):
        if not isinstance(obj.get(key, []), list):
            raise InputError(src, key, "expected a list")
        out[key] = obj.get(key, [])
    seed = obj.get("wording_seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise InputError(src, "wording_seed", f"expected a whole number or null, got {seed!r}")
    drawn = obj.get("wordings", {})
    if not isinstance(drawn, dict) or not all(
            isinstance(ids, list) and all(isinstance(w, str) and WORDING_RE.match(w) for w in ids) for ids in drawn.values()):
        raise InputError(src, "wordings", 'expected {"<type>": ["<type>/<nn>", ...], ...}')
    out["wording_seed"], out["wordings"] = seed, drawn
    return out


def load_pool(path: str | Path) -> list[dict[str, Any]]:
    """The canaries of a pool file written by :func:`write_pool` (validated)."""
    return load_pool_document(path)["canaries"]


def load_controls(path: str | Path) -> list[dict[str, Any]]:
    """The controls of a pool file; an :class:`InputError` when it holds none."""
    doc = load_pool_document(path)
    if not doc["controls"]:
        raise InputError(str(path), "controls", "this pool has no controls; generate it with --controls")
    return doc["controls"]


def canary_table(records: list[dict[str, Any]], source: str = "canaries") -> pl.DataFrame:
    """One row per canary (schemas and behaviours as canonical JSON), validated by pandera."""
    rows = [
        {
            "id": r["id"],
            "type": r["type"],
            "shadows": r["shadows"],
            "name": r["name"],
            "description": r["description"],
            "input_schema": canonical_json(r["inputSchema"]),
            "pool": r["pool"],
            "behaviour": canonical_json(r.get("behaviour", {})),
        }
        for r in records
    ]
    schema = {
        c: pl.String
        for c in ("id", "type", "shadows", "name", "description", "input_schema", "pool", "behaviour")
    }
    return validate(pl.DataFrame(rows, schema=schema), CanariesTable, source)


def skipped_counts(skipped: list[Mapping[str, Any]] | list[Skip]) -> dict[str, int]:
    """Skips per canary type (``*`` = whole tools); offerings withheld from one task (with
    a ``task``) are not skips of the type and are not counted."""
    out: dict[str, int] = {}
    for s in skipped:
        if (s.task if isinstance(s, Skip) else s.get("task")):
            continue
        t = s.type if isinstance(s, Skip) else str(s.get("type"))
        out[t] = out.get(t, 0) + 1
    return out
