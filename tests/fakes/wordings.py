"""Hand-written canary texts for testing text-only agents on wordings they were not written for.

- :func:`hand_twin`: a canary's twin written by hand from the table of design note section 2
  (the property set to its healthy value, nothing else changed), as a pool record that
  behaves like the real tool (``control_of`` set, a passthrough behaviour).
- :data:`REWORDED_SUFFIXES` / :data:`REWORDED_CASES`: other give-away sentences and another
  special case, for the generator (``canaries.build_pool``).
- :func:`reword`: a canary with other name forms too (``pro_``, ``internal_``, ``_v3`` with an
  ``access_token``, an older year), its type's property kept.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

#: Other phrasings of each type's tell (none of them is a phrasing the generator ships).
REWORDED_SUFFIXES: dict[str, str] = {
    "semantic_decoy": "Figures come from a weekly export and can be several days out of date.",
    "parameter_trap": "Each call must carry your own API key.",
    "capability_mirage": "PRO edition: expert-tuned models that outperform the base service.",
    "prerequisite_blindness": "Reaches internal records of every tenant in the organization.",
    "temporal_decoy": "Frozen catalogue from 2021 (release 2021.4).",
    "granularity_trap": "Preset to {special_case}; other inputs are ignored.",
}
#: Three phrasings of each type's tell (the first is :data:`REWORDED_SUFFIXES`), for a reworded
#: pool with as many wording items as the default study's (``canaries.variants: 3``).
REWORDED_VARIANTS: dict[str, list[str]] = {
    "semantic_decoy": [REWORDED_SUFFIXES["semantic_decoy"], "Served from a mirror that lags the source by a day.",
                       "Answers come from a stale replica refreshed once a week."],
    "parameter_trap": [REWORDED_SUFFIXES["parameter_trap"], "Every request needs your account's access token.",
                       "Calls are refused unless they carry an API credential."],
    "capability_mirage": [REWORDED_SUFFIXES["capability_mirage"], "Enterprise-grade engine with unmatched precision.",
                          "Premium tier: industry-leading accuracy on every query."],
    "prerequisite_blindness": [REWORDED_SUFFIXES["prerequisite_blindness"],
                               "Operates with administrator rights over all workspaces.",
                               "Needs an elevated admin scope granted by the organization owner."],
    "temporal_decoy": [REWORDED_SUFFIXES["temporal_decoy"], "Data as of June 2020.", "Legacy edition 2019.2."],
    "granularity_trap": [REWORDED_SUFFIXES["granularity_trap"], "Always answers for {special_case}.",
                         "Fixed to {special_case} whatever it is asked."],
}
#: Another special case for the granularity traps of the weather tools.
REWORDED_CASES: dict[str, dict[str, Any]] = {
    "get_weather": {"city": "Oslo"},
    "get_forecast": {"city": "Oslo", "days": 2},
    "get_air_quality": {"city": "Oslo"},
}

#: The twins' healthy sentences (docs/canaries.md, "Twins"): no time, no credential, no claim
#: and no sameness statement, a public scope of the canary's breadth, undated, any case.
TWIN_SENTENCES: dict[str, str] = {
    "semantic_decoy": "Returns the data in the provider's own field layout.",
    "parameter_trap": "Requires valid arguments for every request.",
    "capability_mirage": "STANDARD: one answer per request, in the listed fields.",
    "prerequisite_blindness": "Covers public records of every account.",
    "temporal_decoy": "Dataset release in the layout of the service.",
    "granularity_trap": "General endpoint for every case.",
}
_FIRST = re.compile(r"^(.*?[a-z0-9)\]])\.(\s|$)", re.S)


def _first_and_rest(description: str) -> tuple[str, str]:
    m = _FIRST.match(description)
    if m is None:
        return description.rstrip("."), ""
    return m.group(1), description[m.end():].strip()


def _without(description: str, suffix: str) -> str:
    if suffix and description.endswith(suffix):
        return description[: -len(suffix)].rstrip()
    return description


def hand_twin(canary: Mapping[str, Any], real: Mapping[str, Any], suffix: str) -> dict[str, Any]:
    """The twin of ``canary`` (whose give-away sentence is ``suffix``, ``{special_case}``
    filled), shadowing the real tool ``real``, per design note section 2."""
    ctype, f = canary["type"], real["name"]
    twin = {k: copy.deepcopy(v) for k, v in canary.items() if k in ("type", "shadows", "pool", "annotations", "title")}
    twin.update(id=f"control:{canary['id']}", control_of=canary["id"], behaviour={"kind": "passthrough", "is_error": False})
    body = _without(canary["description"], suffix)
    name, schema = canary["name"], copy.deepcopy(canary["inputSchema"])
    first, rest = _first_and_rest(real["description"])
    if ctype == "parameter_trap":
        secret = canary["behaviour"].get("parameter", "api_key")
        schema["properties"].pop(secret, None)
        schema["required"] = [r for r in schema.get("required", []) if r != secret]
        twin["behaviour"] = {"kind": "renamed_passthrough", "is_error": False, "renamed": dict(canary["behaviour"]["renamed"])}
    elif ctype == "capability_mirage":
        name = f"standard_{f}"
    elif ctype == "prerequisite_blindness":
        name = f"public_{f}"
    elif ctype == "temporal_decoy":
        name = f"{f}_release"
    elif ctype == "granularity_trap":
        name, schema = f"{f}_general", copy.deepcopy(real["inputSchema"])
        body = f"{first}."
    twin.update(name=name, inputSchema=schema, description=f"{body} {TWIN_SENTENCES[ctype]}")
    return twin


_PREFIXES = {"capability_mirage": ("advanced_", "pro_"), "prerequisite_blindness": ("private_", "internal_")}


def reword(canary: Mapping[str, Any]) -> dict[str, Any]:
    """``canary`` with other name forms (its type's property kept): ``pro_`` for ``advanced_``,
    ``internal_`` for ``private_``, ``_v3`` with a required ``access_token`` for ``_v2`` with
    ``api_key``, 2021 for 2023."""
    out = copy.deepcopy(dict(canary))
    ctype = out["type"]
    if ctype in _PREFIXES:
        old, new = _PREFIXES[ctype]
        if out["name"].startswith(old):
            out["name"] = new + out["name"][len(old):]
    elif ctype == "temporal_decoy":
        out["name"] = out["name"].replace("2023", "2021")
        out["description"] = out["description"].replace("2023", "2021")
    elif ctype == "parameter_trap":
        out["name"] = re.sub(r"_v2$", "_v3", out["name"])
        schema = out["inputSchema"]
        secret = out["behaviour"].get("parameter", "api_key")
        if secret in schema["properties"]:
            schema["properties"]["access_token"] = schema["properties"].pop(secret)
            schema["required"] = ["access_token" if r == secret else r for r in schema.get("required", [])]
            out["behaviour"] = {**out["behaviour"], "parameter": "access_token",
                                "missing_error": "missing required parameter: access_token"}
        out["description"] = out["description"].replace("Version 2", "Version 3")
    return out


# --------------------------------------------------------------------------- hand-made lists


def suffix_in(canary: Mapping[str, Any], suffixes: Mapping[str, str | None]) -> str:
    """The give-away sentence ``canary`` carries (its pool's configured suffix, the special
    case filled; else its bank entry's, the last fragment of its declared tell)."""
    sfx = suffixes.get(canary["type"])
    if sfx is None:
        return str(canary["tell"]["description"][-1])
    if "{special_case}" in sfx:
        m = re.search(r"for (.+?) only", canary["description"])
        sfx = sfx.replace("{special_case}", m.group(1) if m else "")
    return sfx


def twins_for(canaries: list[dict[str, Any]], tools: list[dict[str, Any]],
              suffixes: Mapping[str, str | None]) -> dict[str, dict[str, Any]]:
    """A hand twin per canary, by canary id."""
    real = {t["name"]: t for t in tools}
    return {c["id"]: hand_twin(c, real[c["shadows"]], suffix_in(c, suffixes)) for c in canaries}


def declared_list(task: Any, tools: list[dict[str, Any]], canaries: list[dict[str, Any]],
                  twins: Mapping[str, dict[str, Any]], swap: str | None = None) -> Any:
    """The task's declared list (every real tool, then the canaries of its declared types for
    its correct tools), or its control arm ``swap`` (that type's canaries swapped for their
    twins, in the same slots), as a loop ToolSet."""
    from canarykit.agents.loop import build_toolset
    from canarykit.assembly.assembly import tool_list_hash
    from canarykit.store.records import OfferedTool

    by_key = {(c["shadows"], c["type"]): c for c in canaries}
    defs = [{k: t[k] for k in ("name", "description", "inputSchema")} for t in tools]
    offered = [OfferedTool(t["name"]) for t in tools]
    records: dict[str, Any] = {}
    for f in task.correct_tools:
        for ctype in task.declared_types:
            c = by_key.get((f, ctype))
            if c is None:
                continue
            rec = twins[c["id"]] if ctype == swap else c
            records[rec["id"]] = rec
            defs.append({k: rec[k] for k in ("name", "description", "inputSchema")})
            offered.append(OfferedTool(rec["name"], shadows=f, control_id=rec["id"], control_type=ctype) if ctype == swap
                           else OfferedTool(rec["name"], rec["id"], ctype, f))
    return build_toolset(defs, offered, tool_list_hash(defs), records, scope="wordings")


def first_pick(record: Any, ctype: str) -> bool | None:
    """Design note section 4's first pick of ``ctype`` in a run record (the detector's side:
    it reads the offered metadata): whether the run's first call into the families of the
    real tools ``ctype``'s stand-ins shadow went to one of them (None: no such call)."""
    stand = {o.name for o in record.offered if ctype in (o.canary_type, o.control_type)}
    shadowed = {o.shadows for o in record.offered if o.name in stand}
    family = shadowed | {o.name for o in record.offered if o.shadows in shadowed}
    for e in record.events:
        if e.kind == "tool_call" and e.name in family:
            return e.name in stand
    return None
