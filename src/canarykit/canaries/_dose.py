"""What the dose condition (issue 21, 27) offers beside a real tool: canaries of one type from
its bank, their twins, or k neutral look-alikes ("distractors").

:func:`bank_canaries` builds the canaries of the first k wordings of a pool's draw (the
study's wording seed over the bank's held-back entries) of one type for one tool, with
the generator itself (the same records a pool with ``variants: k`` holds for that tool and
type: ids ``<type>:<tool>`` then ``<type>:<tool>@v<i>``, names distinct and never a real
tool's). :func:`bank_pairs` builds every held-back entry of the bank (:func:`bank_size`) with its twin,
each record carrying ``variant`` (the entry, 1-based) and ``wording`` (``<type>/<nn>``):
the dose lists draw their k wordings from them at random (:mod:`canarykit.assembly.dose`).
:func:`distractors` builds k near-duplicates of a real tool: a name variant with
the real tool's description and schema, which works exactly like it. A distractor record::

    id "distractor:<tool>@<i>", kind "distractor", distractor_of "<tool>", shadows "<tool>",
    name, description, inputSchema (the real tool's), behaviour {"kind": "passthrough"},
    variant i, and the real tool's title, annotations, outputSchema and upstream, mirrored

:func:`~._runtime.run_canary` answers it with the real tool's result. Its names carry no cue
a defect detector reads (design.md section 3): neutral tails from :data:`DISTRACTOR_TAILS`.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any, Final

from ..errors import InputError
from ..types import CANARY_TYPES
from ._banks import MAX_VARIANTS, part_ids
from ._cases import TaskSuite
from ._generator import _unique_name, build_pool
from ._rewriters import Rewriter
from ._suffixes import DEFAULT_SUFFIXES
from ._text import fit_name, sanitize_name
from ._transforms.base import retitled_schema
from ._validate import ingest_tools

#: Name tails of distractors, in order (``get_forecast_alt``, ``get_forecast_service``, ...).
DISTRACTOR_TAILS: Final = ("alt", "service", "tool", "endpoint", "main", "svc", "copy", "b")


def _tool_list(tool: Mapping[str, Any], source: str) -> Any:
    listed = ingest_tools([dict(tool)], source)
    if not listed.tools:
        problem = listed.skipped[0].reason if listed.skipped else "not a tool definition"
        raise InputError(source, "tool", f"unusable tool definition: {problem}")
    return listed


def _check_k(k: Any, source: str) -> int:
    if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k <= MAX_VARIANTS:
        raise InputError(source, "k", f"expected a whole number from 0 to {MAX_VARIANTS}, got {k!r}")
    return k


def bank_canaries(
    tool: Mapping[str, Any],
    canary_type: str,
    k: int,
    *,
    pool: str = "standard",
    fit: str = "fitted",
    suffixes: Mapping[str, Any] | None = None,
    special_cases: Mapping[str, Mapping[str, Any]] | None = None,
    suite: TaskSuite | None = None,
    rewriter: Rewriter | None = None,
    taken: Iterable[str] = (),
    source: str = "<tool>",
) -> list[dict[str, Any]]:
    """The canaries of bank entries 1..k (k <= 8) of ``canary_type`` for ``tool`` (an MCP
    tool definition), all distinctly named and named unlike ``taken`` (the other tools of
    the list). Fewer than k when the bank runs out for this tool (a granularity trap takes
    as many distinct natural cases as the schema offers), none when the type does not fit
    the tool (``fit``). ``suffixes`` is one pool's phrasings (default: the pool's
    :data:`~._suffixes.DEFAULT_SUFFIXES`); ``suite`` checks granularity cases."""
    if canary_type not in CANARY_TYPES:
        raise InputError(source, "canary_type", f"expected one of {list(CANARY_TYPES)}, got {canary_type!r}")
    if _check_k(k, source) == 0:
        return []
    return _bank_pool(tool, canary_type, k, pool=pool, fit=fit, suffixes=suffixes, special_cases=special_cases,
                      suite=suite, rewriter=rewriter, taken=taken, source=source).canaries


def _bank_pool(tool: Mapping[str, Any], canary_type: str, k: int, *, pool: str = "standard", fit: str = "fitted",
               suffixes: Mapping[str, Any] | None = None, special_cases: Mapping[str, Mapping[str, Any]] | None = None,
               suite: TaskSuite | None = None, rewriter: Rewriter | None = None, taken: Iterable[str] = (),
               source: str = "<tool>", controls: bool = False,
               wordings: Mapping[str, tuple[str, ...]] | None = None) -> Any:
    return build_pool(
        _tool_list(tool, source), pool, suffixes if suffixes is not None else DEFAULT_SUFFIXES.get(pool, DEFAULT_SUFFIXES["standard"]),
        fit=fit, special_cases=special_cases, rewriter=rewriter, suite=suite, source=source,
        types=(canary_type,), variants=k, taken=list(taken), controls=controls, wordings=wordings,
    )


def bank_size(canary_type: str) -> int:
    """How many entries of ``canary_type``'s bank a dose list can draw from: its held-back
    part (:func:`~._banks.part_ids`), the wordings the reference agents' readers were not
    written against."""
    return len(part_ids(canary_type))


def wording_of(record: Mapping[str, Any]) -> str:
    """A canary's wording: its ``wording`` (``<type>/<nn>``, the bank entry), else the same
    label from its type and ``variant``."""
    found = record.get("wording")
    return str(found) if found else f"{record['type']}/{int(record.get('variant', 1)):02d}"


def bank_pairs(tool: Mapping[str, Any], canary_type: str, **options: Any) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Every held-back bank entry of ``canary_type`` for ``tool`` as (canary, twin), in entry order,
    each record with its ``wording``; fewer when the bank runs out for this tool, none when
    the type does not fit it. ``options``: :func:`bank_canaries`' keywords."""
    if canary_type not in CANARY_TYPES:
        raise InputError(str(options.get("source", "<tool>")), "canary_type", f"expected one of {list(CANARY_TYPES)}, got {canary_type!r}")
    ids = part_ids(canary_type)
    built = _bank_pool(tool, canary_type, len(ids), controls=True, wordings={canary_type: ids}, **options)
    return [({**c, "wording": wording_of(c)}, {**t, "wording": wording_of(c)})
            for c, t in zip(built.canaries, built.controls, strict=True)]


def distractors(tool: Mapping[str, Any], k: int, *, taken: Iterable[str] = (), source: str = "<tool>") -> list[dict[str, Any]]:
    """k (<= 8) neutral near-duplicates of ``tool``: ``<name>_alt``, ``<name>_service``, ...
    (unique against ``taken`` and each other), with the real tool's description and schema,
    answering exactly like it (see the module docstring)."""
    _check_k(k, source)
    real = _tool_list(tool, source).tools[0]
    base = sanitize_name(str(real["name"])) or "tool"
    used = {str(real["name"]), *taken}
    out: list[dict[str, Any]] = []
    for i, tail in enumerate(DISTRACTOR_TAILS[:k], start=1):
        name = _unique_name(fit_name(f"{base}_{tail}"), used)
        used.add(name)
        record: dict[str, Any] = {
            "id": f"distractor:{real['name']}@{i}",
            "kind": "distractor",
            "distractor_of": real["name"],
            "shadows": real["name"],
            "name": name,
            "description": str(real.get("description") or ""),
            "inputSchema": retitled_schema(real["inputSchema"], real, name),
            "behaviour": {"kind": "passthrough", "is_error": False},
            "variant": i,
        }
        for key in ("title", "annotations", "outputSchema"):
            if key in real:
                record[key] = copy.deepcopy(real[key])
        if "server" in real:
            record["upstream"] = {"server": real["server"], "name": real.get("mcp_name", real["name"])}
        out.append(record)
    return out
