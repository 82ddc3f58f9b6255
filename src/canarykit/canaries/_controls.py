"""Matched-surface controls: for every canary c, a control c0 that looks like c and works.

A control has c's name, schema and (in the assembler) slot, and a description of the same
length and register in which only the claim that makes c defective is made true or
neutral; it behaves exactly like the real tool it shadows:

============================  =============================================  ==================================
canary type                   the control's surface                          when called
============================  =============================================  ==================================
``semantic_decoy``            same paraphrase; "cached" -> "live data"         the real tool (live data)
``parameter_trap``            ``_v2``, the same renamed parameters, no         the real tool, arguments mapped
                              ``api_key``; "needs no api_key"                  back to the real names
``capability_mirage``         the same inflated claim                          the real tool, exact output
``prerequisite_blindness``    the same ``private_`` name and description       the real tool (the call succeeds)
``temporal_decoy``            ``_2023`` name, "2023.1", data kept current      the real tool (current data)
``granularity_trap``          a template: ``<name>_<case>`` hard-coded to      the real tool for that case
                              the task's own case (:func:`instantiate_control`)
============================  =============================================  ==================================

Record format (one JSON object per control, beside the canaries in a pool file): the
canary record's keys (``type``, ``shadows``, ``name``, ``description``, ``inputSchema``,
``pool``, ``behaviour``, ``provenance`` and the mirrored ``title``/``annotations``/
``outputSchema``/``upstream``) with ``id`` = ``control:<type>:<real tool>`` and
``control_of`` = the canary's id. ``behaviour.kind`` is ``passthrough``,
``renamed_passthrough`` (with ``renamed``: real name -> shown name) or ``task_case``
(granularity: ``template`` until the assembler instantiates it, then ``args``).

**Granularity controls depend on the task.** The control of ``get_forecast_mumbai`` for a
task whose plan calls ``get_forecast {"city": "Paris", "days": 5}`` is
``get_forecast_paris`` ("..., for city=Paris, days=5 only"), serving exactly that call.
The assembler calls :func:`control_for_task` (or :func:`instantiate_control` with
:func:`task_case`), which fills the case from the task's first plan step for the shadowed
tool; a task that does not call the tool gets no granularity control. The name names the
case, as the canary's does; its form (``<tool>_<case>``), schema (no parameters),
description and slot are the canary's.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any, Final

from ._cases import case_slug
from ._text import append_suffix, fit_name, join_sentences
from ._transforms import special_case_label, special_case_slug

CONTROL_PREFIX: Final = "control:"


def control_id(canary_type: str, tool_name: str) -> str:
    """Stable id of the control of the canary ``<canary_type>:<tool_name>``."""
    return f"{CONTROL_PREFIX}{canary_type}:{tool_name}"


def is_control(record: Mapping[str, Any]) -> bool:
    """True for a control record (it names the canary it controls)."""
    return isinstance(record.get("control_of"), str)


def is_template(record: Mapping[str, Any]) -> bool:
    """True for a granularity control that still needs the task's case."""
    behaviour = record.get("behaviour")
    return (
        isinstance(behaviour, Mapping)
        and behaviour.get("kind") == "task_case"
        and not isinstance(behaviour.get("args"), dict)
    )


def build_control(canary: Mapping[str, Any], part: Mapping[str, Any]) -> dict[str, Any]:
    """The control record of ``canary`` from the transform's ``control`` part."""
    record: dict[str, Any] = {}
    for key, value in canary.items():
        if key == "id":
            record["id"] = control_id(str(canary["type"]), str(canary["shadows"]))
            record["control_of"] = canary["id"]
        elif key in ("description", "inputSchema", "behaviour"):
            record[key] = copy.deepcopy(part[key])
        elif key == "provenance":
            record[key] = {**copy.deepcopy(value), "control": True}
        else:
            record[key] = copy.deepcopy(value)
    return record


def task_case(task: Any, shadows: str) -> dict[str, Any] | None:
    """The arguments of the task's first plan step that calls ``shadows`` (None if none).

    ``task`` is a :class:`canarykit.tasks.Task` or anything with ``plan`` steps that have
    ``tool`` and ``args`` (attributes or keys).
    """
    plan = task.get("plan") if isinstance(task, Mapping) else getattr(task, "plan", ())
    for step in plan or ():
        tool = step.get("tool") if isinstance(step, Mapping) else getattr(step, "tool", None)
        args = step.get("args") if isinstance(step, Mapping) else getattr(step, "args", None)
        if tool == shadows and isinstance(args, Mapping):
            return copy.deepcopy(dict(args))
    return None


def _unique(name: str, taken: Iterable[str]) -> str:
    used = set(taken)
    if name not in used:
        return name
    i = 2
    while True:
        suffix = f"_{i}"
        candidate = fit_name(name)[: 64 - len(suffix)] + suffix
        if candidate not in used:
            return candidate
        i += 1


def instantiate_control(
    control: Mapping[str, Any], case: Mapping[str, Any], *, taken: Iterable[str] = ()
) -> dict[str, Any]:
    """A granularity control template hard-coded to ``case`` (the task's own arguments).

    The name is ``<tool>_<case>`` (made unique against ``taken``: the other names of the
    tool list), the description the canary's with the case filled in. Any other control
    is returned unchanged (a copy).
    """
    out = copy.deepcopy(dict(control))
    if not is_template(control):
        return out
    template = control["behaviour"]["template"]
    args = copy.deepcopy(dict(case))
    label = special_case_label(args)
    slug_ = special_case_slug(args) if template.get("fit") == "paper" else case_slug(args)
    out["name"] = _unique(fit_name(f"{template['name_base']}_{slug_}"), taken)
    description = join_sentences(
        f"{template['first_sentence']}, for {label} only",
        "Hardcoded to this single case: it takes no parameters and serves no other request",
    )
    out["description"] = append_suffix(description, str(template.get("suffix", "")).replace("{special_case}", label))
    out["behaviour"] = {"kind": "task_case", "is_error": False, "args": args, "special_case": label}
    title = out.get("title")
    if isinstance(title, str) and isinstance(template.get("title_base"), str):
        out["title"] = f"{template['title_base']} ({label})"
    return out


def control_for_task(
    control: Mapping[str, Any], task: Any, *, taken: Iterable[str] = ()
) -> dict[str, Any] | None:
    """The control as offered to ``task``: granularity templates get the task's case
    (None when the task's plan never calls the shadowed tool); others are unchanged."""
    if not is_template(control):
        return copy.deepcopy(dict(control))
    case = task_case(task, str(control["shadows"]))
    if case is None:
        return None
    return instantiate_control(control, case, taken=taken)
