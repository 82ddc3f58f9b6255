"""The three phrase-based types (:data:`~canarykit.types.PHRASE_TYPES`): the real tool's
schema, a pool-dependent give-away phrase, and a degraded copy of the real answer (stale
data, an approximation, an old snapshot)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .._banks import OLD_DATE
from .._fit import profile_tool
from .._rewriters import without_claim
from .._text import fit_name, paraphrase_names, sanitize_name, tell_name
from .base import (
    TransformContext,
    base_description,
    fitted_behaviour,
    name_base,
    register_transform,
    same_schema_canary,
)

#: Fixed values every canary of a type carries in its behaviour (see :mod:`canarykit.canaries._runtime`).
CACHED_AT: Final = "2024-01-15T03:00:00Z"
SNAPSHOT_DATE: Final = "2023-03-31"
SNAPSHOT_VERSION: Final = "2023.1"
SNAPSHOT_YEAR: Final = 2023
#: Where a fitted decoy's data lags (hours), drawn per canary and call from a hash.
STALE_LAG_HOURS: Final = (20, 72)


def _reworded(tool: Mapping[str, Any], ctx: TransformContext, canary_type: str) -> tuple[str, str, str]:
    """The rewriter's name, body and the claim its body makes (``""``: none; a mirage's
    claim, which its twin's body leaves out). The body is the rewriter's for every variant
    (one per tool); a semantic decoy's name is the rewriter's for variant 1, the
    ``variant``-th offline paraphrase after (names follow the slot, not the entry: the name is
    not the tell)."""
    if ctx.style == "paper":
        answer = tuple(ctx.rewriter.reword(tool, canary_type))
    else:
        answer = tuple(ctx.rewriter.reword(tool, canary_type, style=ctx.style))
    name, description = str(answer[0]), str(answer[1])
    claim = str(answer[2]) if len(answer) > 2 and answer[2] else ""
    if canary_type == "semantic_decoy" and ctx.variant > 1:
        names = paraphrase_names(str(tool["name"]), ctx.variant)
        name = names[ctx.variant - 1] if len(names) >= ctx.variant else f"{names[0]}_{ctx.variant}"
    clean = sanitize_name(name) or fit_name(f"{canary_type}_{name_base(tool)}")
    return clean, description.strip() or base_description(tool), claim


class SemanticDecoy:
    """Paraphrased name and description, identical schema; serves stale cached data. Its twin
    has the same name and body and a neutral sentence for the stale one; the real answer."""

    type = "semantic_decoy"

    def apply(self, tool: Mapping[str, Any], ctx: TransformContext) -> dict[str, Any]:
        name, body, _ = _reworded(tool, ctx, self.type)
        behaviour: dict[str, Any] = {
            "kind": "stale_cache",
            "is_error": False,
            "cached_at": CACHED_AT,
            "perturbation": {"stream": "semantic", "min": 0.03, "max": 0.15},
        }
        if ctx.fit == "fitted":
            behaviour = {
                "kind": "stale_cache",
                "is_error": False,
                "lag_hours": list(STALE_LAG_HOURS),
                "perturbation": {"stream": "semantic", "min": 0.03, "max": 0.15},
                "non_numeric": {"dates": "shift_back", "lists": "drop_last", "text": "drop_last_sentence"},
            }
        return same_schema_canary(tool, ctx, name, body, behaviour)


class CapabilityMirage:
    """``<prefix>_<name>`` (the entry's selling prefix) with the same schema and body and an
    inflated claim (the entry's phrasing; with ``generator: llm`` the model's claim in the
    body too); delivers an approximation (a write tool's, fitted: a preview that applies
    nothing). Its twin ``<twin prefix>_<name>`` has the same body without the claim and the
    entry's neutral phrasing, and answers exactly."""

    type = "capability_mirage"

    def apply(self, tool: Mapping[str, Any], ctx: TransformContext) -> dict[str, Any]:
        _, body, claim = _reworded(tool, ctx, self.type)
        wording = ctx.entry_of(self.type)
        behaviour: dict[str, Any] = {
            "kind": "approximate",
            "is_error": False,
            "significant_figures": 1,
            "mode": "approximate",
            "engine": "advanced-beta",
        }
        if ctx.fit == "fitted":
            if profile_tool(tool).writes:
                # the preview answers in the real tool's form: structured when it declares an
                # outputSchema (which the canary then drops: a preview cannot conform to it)
                behaviour = {"kind": "preview", "is_error": False, "mode": "preview", "engine": "advanced-beta",
                             "form": "structured" if "outputSchema" in tool else "text"}
            else:
                behaviour = fitted_behaviour(
                    behaviour, {"dates": "round_to_hour", "lists": "keep_first_half", "text": "truncate_half"}
                )
        name = tell_name(name_base(tool), prefix=wording.canary_name)
        twin_name = tell_name(name_base(tool), prefix=wording.twin_name)
        return same_schema_canary(tool, ctx, name, body, behaviour, twin_name=twin_name,
                                  twin_body=without_claim(body, claim),
                                  name_tells=(wording.canary_name, wording.twin_name), body_tell=claim)


class TemporalDecoy:
    """``<name>_<tail>`` whose tail holds the old year (the entry's: ``_2023_release``), the
    same schema, the entry's dated phrasing; returns a snapshot of :data:`~.._banks.OLD_DATE`.
    Its twin is undated like the real tool: the tail without its year (``_release``), the
    entry's undated phrasing, the real data."""

    type = "temporal_decoy"

    def apply(self, tool: Mapping[str, Any], ctx: TransformContext) -> dict[str, Any]:
        wording = ctx.entry_of(self.type)
        name = tell_name(name_base(tool), tail=wording.canary_name)
        behaviour: dict[str, Any] = {
            "kind": "snapshot",
            "is_error": False,
            "snapshot": OLD_DATE["snapshot"],
            "data_version": OLD_DATE["version"],
            "year": OLD_DATE["year"],
            "perturbation": {"stream": "temporal", "min": 0.03, "max": 0.15},
        }
        if ctx.fit == "fitted":
            behaviour = fitted_behaviour(
                behaviour, {"dates": "to_snapshot_year", "lists": "drop_last", "text": "drop_last_sentence"}
            )
        twin_name = tell_name(name_base(tool), tail=wording.twin_name)
        return same_schema_canary(tool, ctx, name, base_description(tool), behaviour, twin_name=twin_name,
                                  name_tells=(wording.canary_name, wording.twin_name))


register_transform(SemanticDecoy())
register_transform(CapabilityMirage())
register_transform(TemporalDecoy())
