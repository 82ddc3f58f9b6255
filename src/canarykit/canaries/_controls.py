"""Twins (the code says "controls"): for every canary c, a twin that differs from c in
exactly the property c probes, set to its healthy value everywhere it lives (name,
description, schema, behaviour). Everything else is c's: the slot (the assembler's), the
rest of the schema and the text but the tell (the bank entry's healthy phrasing, and the
name part that carries the tell), and no selling point (:data:`~._banks.SELLING_POINTS`):
see docs/canaries.md, "Twins", and :mod:`._audit`. A twin answers like the real tool it
shadows.

============================  =============================================  ==================================
canary type                   the twin's surface                             when called
============================  =============================================  ==================================
``semantic_decoy``            same paraphrase; the entry's neutral sentence  the real tool
                              instead of its "a day old" one
``parameter_trap``            ``_v2``, the same renamed parameters, no       validates its arguments against
                              credential; "Requires valid arguments ..."     its own schema, then the real
                                                                             tool (arguments mapped back)
``capability_mirage``         ``<twin prefix>_<name>``, the same body        the real tool, exact output
                              without a claim; a neutral sentence
``prerequisite_blindness``    ``<twin prefix>_<name>``, the same breadth,    the real tool (the call succeeds)
                              public resources
``temporal_decoy``            ``<name>_<tail without the year>``, undated    the real tool
                              like the real tool
``granularity_trap``          ``<name>_<twin tail>``, the real tool's        the real tool for the arguments
                              schema, "serves the case it is given"          given
============================  =============================================  ==================================

Record format (one JSON object per twin, beside the canaries in a pool file): the canary
record's keys with the twin's ``name``, ``description``, ``inputSchema``, ``behaviour``,
``title`` (and annotation title), ``id`` = ``control:<canary id>`` and ``control_of`` = the
canary's id. ``behaviour.kind`` is ``passthrough`` or ``renamed_passthrough`` (with
``renamed``: real name -> shown name). Pool files written before twins (generator 2) may
hold granularity templates (``task_case``): :func:`control_for_task` still fills them.

**Granularity offerings need a plan call of the tool.** The twin needs no task case any
more, and a canary whose hard-coded case is not the task's (the generator refuses a case a
task's plan calls) is a valid trap for a task that calls the tool with one case or with
several. A task whose plan never calls the tool (or that has no plan) still gets no
granularity canary: the generator could not check the canary's case against the case the
task needs. :func:`granularity_case` decides, for the assembler and for the generator's
skip list alike.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any, Final

from ..store.jsonio import canonical_json
from ._cases import with_defaults
from ._text import fit_name
from ._transforms import case_description, case_name, special_case_label

CONTROL_PREFIX: Final = "control:"


def control_id(canary_type: str, tool_name: str, variant: int = 1) -> str:
    """Stable id of the twin of the canary ``<canary_type>:<tool_name>`` (``@v<i>`` from
    variant 2 on)."""
    suffix = f"@v{variant}" if variant > 1 else ""
    return f"{CONTROL_PREFIX}{canary_type}:{tool_name}{suffix}"


def is_control(record: Mapping[str, Any]) -> bool:
    """True for a twin (control) record (it names the canary it controls)."""
    return isinstance(record.get("control_of"), str)


def is_template(record: Mapping[str, Any]) -> bool:
    """True for a granularity control of an older pool file that still needs the task's case."""
    behaviour = record.get("behaviour")
    return (
        isinstance(behaviour, Mapping)
        and behaviour.get("kind") == "task_case"
        and not isinstance(behaviour.get("args"), dict)
    )


def build_control(canary: Mapping[str, Any], part: Mapping[str, Any], mirrored: Mapping[str, Any]) -> dict[str, Any]:
    """The twin record of ``canary`` from the transform's ``control`` part (its ``name``,
    ``description``, ``inputSchema``, ``behaviour``) and the twin's ``mirrored`` metadata
    (``title``, ``annotations``)."""
    record: dict[str, Any] = {}
    for key, value in canary.items():
        if key == "id":
            record["id"] = f"{CONTROL_PREFIX}{canary['id']}"
            record["control_of"] = canary["id"]
        elif key in ("name", "description", "inputSchema", "behaviour", "tell"):
            record[key] = copy.deepcopy(part[key])
        elif key in ("title", "annotations") and key in mirrored:
            record[key] = copy.deepcopy(mirrored[key])
        elif key == "provenance":
            record[key] = {**copy.deepcopy(value), "control": True}
        else:
            record[key] = copy.deepcopy(value)
    return record


def _plan_steps(task: Any) -> list[tuple[str, Any]] | None:
    """``(tool, args)`` of each plan step of a :class:`canarykit.tasks.tasks.Task`, a
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
        return None, "task_without_case", "the task has no plan, so the generator cannot check its case against it"
    if not cases:
        return None, "task_without_case", (f"its plan never calls {shadows}, so the generator cannot check the "
                                           "canary's case against the case it needs")
    return cases[0], "", ""


#: Codes of withheld granularity offerings (``skipped[].code`` of entries with a ``task``).
WITHHELD_CODES: Final = ("task_without_case",)


def granularity_case(
    task: Any, shadows: str, schema: Mapping[str, Any] | None = None
) -> tuple[dict[str, Any] | None, str]:
    """``(first case, "")`` when the task's plan calls ``shadows`` (with one case or several:
    the granularity canary and its twin are offered to it), else ``(None, why not)``."""
    case, _, why = _decide(task, shadows, schema)
    return case, why


def withheld_from(task: Any, shadows: str, schema: Mapping[str, Any] | None = None) -> tuple[str, str] | None:
    """``(code, why)`` when a granularity offering for ``shadows`` is withheld from the task
    (a code of :data:`WITHHELD_CODES`), else None."""
    case, code, why = _decide(task, shadows, schema)
    return None if case is not None else (code, why)


def task_case(task: Any, shadows: str, schema: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The one case the task's plan calls ``shadows`` with (None when it has no plan, never
    calls the tool, or calls it with several different cases).

    ``task`` is a :class:`canarykit.tasks.tasks.Task` or anything with ``plan`` steps that have
    ``tool`` and ``args`` (attributes or keys).
    """
    cases = task_cases(task, shadows, schema)
    return cases[0] if cases is not None and len(cases) == 1 else None


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
    """A granularity template of an older pool file hard-coded to ``case`` (the task's own
    arguments; the name made unique against ``taken``). Any other twin is returned
    unchanged (a copy)."""
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
    """The twin as offered to ``task``: a copy, or None for a granularity twin when
    :func:`granularity_case` withholds the offering (``schema``: the real tool's input
    schema, whose defaults decide whether two calls are the same case). An older pool
    file's granularity template gets the task's one case (None without exactly one)."""
    if not is_template(control):
        if control.get("type") == "granularity_trap" and granularity_case(task, str(control["shadows"]), schema)[0] is None:
            return None
        return copy.deepcopy(dict(control))
    case = task_case(task, str(control["shadows"]), schema)
    if case is None:
        return None
    return instantiate_control(control, case, taken=taken)
