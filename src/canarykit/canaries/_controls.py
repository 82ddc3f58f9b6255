"""Matched-surface controls: for every canary c, a control c0 that looks like c and works.

A control has c's name, schema and (in the assembler) slot, and a description of the same
length and register in which only the claim that makes c defective is made true or
neutral; it behaves exactly like the real tool it shadows:

============================  =============================================  ==================================
canary type                   the control's surface                          when called
============================  =============================================  ==================================
``semantic_decoy``            same paraphrase; "cached" -> "live data"         the real tool (live data)
``parameter_trap``            ``_v2``, the same renamed parameters, no         the real tool, arguments mapped
                              ``api_key``; "Requires valid arguments ..."      back to the real names
                              (the key's claim neutral, the key unnamed)
``capability_mirage``         the same inflated claim                          the real tool, exact output
``prerequisite_blindness``    the same ``private_`` name and description       the real tool (the call succeeds)
``temporal_decoy``            ``_2023`` name, "2023.1", data kept current      the real tool (current data)
``granularity_trap``          a template: ``<name>_<case>`` hard-coded to      the real tool for that case
                              the task's one case (:func:`instantiate_control`)
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
The name names the case, as the canary's does; its form (``<tool>_<case>``), schema (no
parameters), description and slot are the canary's.

A hard-coded tool is "exactly like the real tool" only for a task that needs exactly one
case of it, so **a task gets a granularity offering for a tool (the canary in any
condition, the control in ``control``) only when its plan calls that tool with exactly one
case** (arguments compared with the tool's schema defaults filled in). The canary's case
is then another case (the generator refuses a case that a task's plan calls), and the
control answers exactly the task's case. :func:`granularity_case` decides, for the
assembler and for the generator's skip list alike; it withholds both offerings when

- the plan calls the tool with several different cases (hard-040 asks for the weather in
  Singapore and in Toronto): any one hard-coded case is a granularity trap for the other
  call, so the control would carry the defect it is meant to remove, and a canary without
  a control would leave the type unpaired in the control effect;
- the task has no plan (or its plan never calls the tool): the case it needs is unknown,
  so neither can the control be hard-coded to it nor can the generator make sure the
  canary's case is not it.

:func:`control_for_task` (or :func:`instantiate_control` with :func:`task_case`) fills a
template with the task's case.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any, Final

from ..jsonio import canonical_json
from ._cases import describe_case, with_defaults
from ._text import fit_name
from ._transforms import case_description, case_name, special_case_label

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


def _plan_steps(task: Any) -> list[tuple[str, Any]] | None:
    """``(tool, args)`` of each plan step of a :class:`canarykit.tasks.Task`, a
    :class:`~._cases.SuiteTask` (``steps``) or a task mapping; None when it has no plan."""
    if isinstance(task, Mapping):
        plan: Any = task.get("plan")
    elif hasattr(task, "steps"):
        plan = task.steps
    else:
        plan = getattr(task, "plan", None)
    if not plan:
        return None
    out = []
    for step in plan:
        if isinstance(step, tuple) and len(step) == 2:
            out.append((step[0], step[1]))
        elif isinstance(step, Mapping):
            out.append((step.get("tool"), step.get("args")))
        else:
            out.append((getattr(step, "tool", None), getattr(step, "args", None)))
    return out


def task_cases(task: Any, shadows: str, schema: Mapping[str, Any] | None = None) -> list[dict[str, Any]] | None:
    """The distinct cases (argument objects, in plan order) with which the task's plan calls
    ``shadows``; two calls are the same case when their arguments are equal with the
    defaults of ``schema`` (the real tool's input schema) filled in. None without a plan."""
    steps = _plan_steps(task)
    if steps is None:
        return None
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    for tool, args in steps:
        if tool != shadows or not isinstance(args, Mapping):
            continue
        key = canonical_json(with_defaults(schema, args) if isinstance(schema, Mapping) else dict(args))
        if key not in seen:
            seen.add(key)
            out.append(copy.deepcopy(dict(args)))
    return out


def _decide(task: Any, shadows: str, schema: Mapping[str, Any] | None) -> tuple[dict[str, Any] | None, str, str]:
    cases = task_cases(task, shadows, schema)
    if cases is None:
        return None, "task_without_case", "the task has no plan, so the case it needs is unknown"
    if not cases:
        return None, "task_without_case", f"its plan never calls {shadows}, so the case it needs is unknown"
    if len(cases) > 1:
        shown = "; ".join(describe_case(c) for c in cases[:3]) + ("; ..." if len(cases) > 3 else "")
        return None, "task_several_cases", (
            f"its plan calls {shadows} with {len(cases)} different cases ({shown}): a tool hard-coded "
            "to one of them would be a granularity trap for the others")
    return cases[0], "", ""


#: Codes of withheld granularity offerings (``skipped[].code`` of entries with a ``task``).
WITHHELD_CODES: Final = ("task_several_cases", "task_without_case")


def granularity_case(
    task: Any, shadows: str, schema: Mapping[str, Any] | None = None
) -> tuple[dict[str, Any] | None, str]:
    """``(case, "")`` when the task's plan calls ``shadows`` with exactly one case (the
    granularity canary and control are offered to it), else ``(None, why not)``."""
    case, _, why = _decide(task, shadows, schema)
    return case, why


def withheld_from(task: Any, shadows: str, schema: Mapping[str, Any] | None = None) -> tuple[str, str] | None:
    """``(code, why)`` when a granularity offering for ``shadows`` is withheld from the task
    (a code of :data:`WITHHELD_CODES`), else None."""
    case, code, why = _decide(task, shadows, schema)
    return None if case is not None else (code, why)


def task_case(task: Any, shadows: str, schema: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The one case the task's plan calls ``shadows`` with (None when it has no plan, never
    calls the tool, or calls it with several different cases: see :func:`granularity_case`).

    ``task`` is a :class:`canarykit.tasks.Task` or anything with ``plan`` steps that have
    ``tool`` and ``args`` (attributes or keys).
    """
    return granularity_case(task, shadows, schema)[0]


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
    out["name"] = _unique(case_name(template["name_base"], args, template.get("fit")), taken)
    out["description"] = case_description(template["first_sentence"], label, str(template.get("suffix", "")))
    out["behaviour"] = {"kind": "task_case", "is_error": False, "args": args, "special_case": label}
    title = out.get("title")
    if isinstance(title, str) and isinstance(template.get("title_base"), str):
        out["title"] = f"{template['title_base']} ({label})"
    return out


def control_for_task(
    control: Mapping[str, Any],
    task: Any,
    *,
    taken: Iterable[str] = (),
    schema: Mapping[str, Any] | None = None,
) -> dict[str, Any] | None:
    """The control as offered to ``task``: granularity templates get the task's one case
    (None when :func:`granularity_case` withholds the offering; ``schema`` is the real
    tool's input schema, whose defaults decide whether two calls are the same case); other
    controls are returned unchanged."""
    if not is_template(control):
        return copy.deepcopy(dict(control))
    case = task_case(task, str(control["shadows"]), schema)
    if case is None:
        return None
    return instantiate_control(control, case, taken=taken)
