"""The three phrase-based types (:data:`~canarykit.types.PHRASE_TYPES`): the real tool's
schema, a pool-dependent give-away phrase, and a degraded copy of the real answer (stale
data, an approximation, an old snapshot)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .._banks import TWIN_YEAR, entry
from .._fit import profile_tool
from .._rewriters import OfflineRewriter, mirage_claim, mirage_neutral
from .._text import fit_name, paraphrase_names, sanitize_name
from .base import (
    TransformContext,
    base_description,
    fitted_behaviour,
    name_base,
    register_transform,
    same_schema_canary,
)

#: Fixed values every canary of a type carries in its behaviour (see the package docstring).
CACHED_AT: Final = "2024-01-15T03:00:00Z"
SNAPSHOT_DATE: Final = "2023-03-31"
SNAPSHOT_VERSION: Final = "2023.1"
SNAPSHOT_YEAR: Final = 2023
#: Where a fitted decoy's data lags (hours), drawn per canary and call from a hash.
STALE_LAG_HOURS: Final = (20, 72)


def _reworded(tool: Mapping[str, Any], ctx: TransformContext, canary_type: str) -> tuple[str, str]:
    """Variant 1: the rewriter's name and body; later variants: the offline bank's (a further
    paraphrase of the name, the mirage's further claims)."""
    rewriter = ctx.rewriter if ctx.variant == 1 else OfflineRewriter()
    if ctx.style == "paper" and ctx.variant == 1:
        name, description = rewriter.reword(tool, canary_type)
    else:
        name, description = rewriter.reword(tool, canary_type, style=ctx.style)
    if ctx.variant > 1:
        if canary_type == "semantic_decoy":
            names = paraphrase_names(str(tool["name"]), ctx.variant)
            name = names[ctx.variant - 1] if len(names) >= ctx.variant else f"{names[0]}_{ctx.variant}"
        else:
            name = f"{entry(canary_type, ctx.variant).values['prefix']}_{tool['name']}"
            description = mirage_claim(tool, ctx.style, ctx.variant)
    clean = sanitize_name(name) or fit_name(f"{canary_type}_{name_base(tool)}")
    return clean, description.strip() or base_description(tool)


class SemanticDecoy:
    """Paraphrased name and description, identical schema; serves stale cached data. Its twin
    has the same name and body and a neutral sentence for the stale one; the real answer."""

    type = "semantic_decoy"

    def apply(self, tool: Mapping[str, Any], ctx: TransformContext) -> dict[str, Any]:
        name, body = _reworded(tool, ctx, self.type)
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
    """``advanced_<name>`` with inflated claims and the same schema; delivers an approximation
    (a write tool's, fitted: a preview that applies nothing). Its twin ``standard_<name>``
    has the claim replaced by a neutral phrase of about its length and answers exactly."""

    type = "capability_mirage"

    def apply(self, tool: Mapping[str, Any], ctx: TransformContext) -> dict[str, Any]:
        name, body = _reworded(tool, ctx, self.type)
        values = entry(self.type, ctx.variant).values
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
        twin_name = sanitize_name(f"{values['twin_prefix']}_{tool['name']}") or fit_name(f"standard_{name_base(tool)}")
        return same_schema_canary(tool, ctx, name, body, behaviour, twin_name=twin_name,
                                  twin_body=mirage_neutral(tool, ctx.style, ctx.variant))


class TemporalDecoy:
    """``<name>_2023``: same schema, outdated date/version; returns a 2023 snapshot. Its twin
    carries the environment's date in the same places (``<name>_2026``, "Release 2026.11")
    and answers with the real data. Later variants: older years, other name forms."""

    type = "temporal_decoy"

    def apply(self, tool: Mapping[str, Any], ctx: TransformContext) -> dict[str, Any]:
        values = entry(self.type, ctx.variant).values
        form = str(values["form"])
        name = fit_name(form.format(base=name_base(tool), year=values["year"]))
        behaviour: dict[str, Any] = {
            "kind": "snapshot",
            "is_error": False,
            "snapshot": values["snapshot"],
            "data_version": values["version"],
            "year": values["year"],
            "perturbation": {"stream": "temporal", "min": 0.03, "max": 0.15},
        }
        if ctx.fit == "fitted":
            behaviour = fitted_behaviour(
                behaviour, {"dates": "to_snapshot_year", "lists": "drop_last", "text": "drop_last_sentence"}
            )
        twin_name = fit_name(form.format(base=name_base(tool), year=TWIN_YEAR))
        return same_schema_canary(tool, ctx, name, base_description(tool), behaviour, twin_name=twin_name)


register_transform(SemanticDecoy())
register_transform(CapabilityMirage())
register_transform(TemporalDecoy())
