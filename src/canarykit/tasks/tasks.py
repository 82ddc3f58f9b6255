"""The task suite: typed tasks, loading and validation, reference plans and outcome rubrics.

A task file is ``{"version": "1", "tasks": [...]}`` (schema: ``resources/tasks.schema.json``).
:func:`load_tasks` checks the JSON Schema first and then what a schema cannot say: unique ids,
tool names that exist in the study's tool environment (the built-in tools, or the tool list
of the user's MCP servers: ``tools=``), plan arguments valid for each tool's input schema,
``correct_tools`` equal to the distinct tools of the plan. Every failure is an
:class:`~canarykit.errors.InputError` naming the file and the JSON path of the field
(``tasks[17].plan[1].tool``).

``plan`` and ``rubric`` are optional: a task without a plan names its ``correct_tools``
itself (reference agents, which follow plans, then cannot run it: the study check says so),
and a task without a rubric needs a judge other than ``rubric`` (same).

**Several user turns.** A task may carry ``follow_ups``: user messages fed one by one after
``prompt``, each once the agent has answered the one before (user turn 0 is the prompt, turn
``i`` is ``follow_ups[i - 1]``); each plan step says which user turn it answers (``turn``).
``tools`` names the real tools the task is offered (default: every tool of the environment),
``tools_from`` holds back a tool (and its look-alikes) until a later user turn, and
``setup`` is the task's starting state in an environment that keeps state per run (BFCL's
entries: :mod:`canarykit.bfcl`). All four are optional and absent from single-turn tasks.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Final, Literal

import polars as pl
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

from .. import tools
from ..errors import InputError
from ..store.jsonio import content_hash, read_json_input
from ..store.schemas import TasksTable, validate
from ..tools.arguments import schema_problem, schema_validator_class
from ..types import CANARY_TYPES, ToolResult

__all__ = [
    "ANY_TOOLS", "Fact", "PlanStep", "RubricResult", "Task", "check_rubric", "compose_answer", "execute_plan",
    "extract_numbers", "load_tasks", "parse_tasks", "select_tasks", "task_hash", "tasks_table",
]

TASK_FILE_VERSION = "1"


@dataclass(frozen=True)
class PlanStep:
    """One tool call of a reference plan; ``args`` are literal values; ``turn`` is the user
    turn the call answers (0: the prompt; only a task with ``follow_ups`` has others)."""

    tool: str
    args: dict[str, Any] = field(hash=False)
    turn: int = 0

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"tool": self.tool, "args": self.args}
        if self.turn:
            d["turn"] = self.turn
        return d


@dataclass(frozen=True)
class Fact:
    """A fact the final answer must contain (see :func:`check_rubric`)."""

    kind: Literal["number", "text"]
    label: str
    value: float | str
    tolerance: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind, "label": self.label, "value": self.value}
        if self.kind == "number":
            d["tolerance"] = self.tolerance
        return d


@dataclass(frozen=True)
class Task:
    id: str
    difficulty: str
    prompt: str
    correct_tools: tuple[str, ...]
    declared_types: tuple[str, ...]
    plan: tuple[PlanStep, ...]
    rubric: tuple[Fact, ...]
    #: user messages after ``prompt``, fed one by one (module docstring, "Several user turns")
    follow_ups: tuple[str, ...] = ()
    #: the real tools the task is offered; None: every tool of the environment
    tools: tuple[str, ...] | None = None
    #: (tool, user turn): the tool and its look-alikes are offered from that user turn on
    tools_from: tuple[tuple[str, int], ...] = ()
    #: the task's starting state in an environment that keeps state per run (None: none)
    setup: dict[str, Any] | None = field(default=None, hash=False)

    @property
    def user_turns(self) -> tuple[str, ...]:
        """Every user message of the task in order: the prompt, then the follow-ups."""
        return (self.prompt, *self.follow_ups)

    def offered_from(self, tool: str) -> int:
        """The user turn from which ``tool`` (and its look-alikes) is offered (0: from the start)."""
        return dict(self.tools_from).get(tool, 0)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "difficulty": self.difficulty,
            "prompt": self.prompt,
            "correct_tools": list(self.correct_tools),
            "declared_types": list(self.declared_types),
        }
        if self.plan:
            out["plan"] = [s.to_dict() for s in self.plan]
        if self.rubric:
            out["rubric"] = [f.to_dict() for f in self.rubric]
        if self.follow_ups:
            out["follow_ups"] = list(self.follow_ups)
        if self.tools is not None:
            out["tools"] = list(self.tools)
        if self.tools_from:
            out["tools_from"] = dict(self.tools_from)
        if self.setup is not None:
            out["setup"] = self.setup
        return out


@dataclass
class RubricResult:
    passed: bool
    facts: list[tuple[Fact, bool]]


# --------------------------------------------------------------------------- loading


@lru_cache(maxsize=1)
def _task_validator() -> Draft202012Validator:
    text = resources.files("canarykit").joinpath("resources/tasks.schema.json").read_text(encoding="utf-8")
    schema = json.loads(text)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _jpath(parts: Sequence[str | int]) -> str:
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += ("." if out else "") + p
    return out or "<root>"


def _schema_error_field(err: ValidationError) -> str:
    parts: list[str | int] = list(err.absolute_path)
    if err.validator == "required" and isinstance(err.instance, dict):
        missing = [p for p in err.validator_value if p not in err.instance]
        if missing:
            parts.append(missing[0])
    elif err.validator == "additionalProperties" and isinstance(err.instance, dict):
        allowed = err.schema.get("properties", {}) if isinstance(err.schema, dict) else {}
        extra = sorted(k for k in err.instance if k not in allowed)
        if extra:
            parts.append(extra[0])
    return _jpath(parts)


#: ``tools=ANY_TOOLS``: check the task file's structure only, not its tool names (they are
#: checked where the environment's tool list is known, e.g. after the MCP servers are listed).
ANY_TOOLS: Final = "any"


class _ToolCatalog:
    """Tool names and argument validation of one tool environment."""

    def __init__(self, definitions: Sequence[Mapping[str, Any]] | None) -> None:
        self.builtin = definitions is None
        self.schemas: dict[str, Any] = {}
        if definitions is not None:
            for d in definitions:
                self.schemas[str(d["name"])] = d.get("inputSchema") or {}
        self.known: tuple[str, ...] = tools.tool_names() if definitions is None else tuple(self.schemas)

    def problem(self, name: str, args: Any) -> str | None:
        if self.builtin:
            return tools.validation_error(name, args)
        schema = self.schemas[name]
        return schema_problem(name, schema_validator_class(schema)(schema), args)

    def known_text(self) -> str:
        names = list(self.known)
        return ", ".join(names) if len(names) <= 40 else ", ".join(names[:40]) + f", ... ({len(names)} tools)"


def parse_tasks(
    obj: Any, source: str | Path = "<tasks>", tools: Sequence[Mapping[str, Any]] | str | None = None
) -> list[Task]:
    """Validate a parsed task document and build the :class:`Task` list (see :func:`load_tasks`).

    ``tools``: the tool environment's definitions (``name``, ``inputSchema``) the tasks must
    use; ``None`` for the built-in tools; :data:`ANY_TOOLS` to check the structure only.
    """
    src = str(source)
    errors = sorted(_task_validator().iter_errors(obj), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        err = best_match(errors)
        assert err is not None
        raise InputError(src, _schema_error_field(err), err.message)

    if isinstance(tools, str) and tools != ANY_TOOLS:
        raise ValueError(f"tools must be a tool list, None or ANY_TOOLS, got {tools!r}")
    check_tools = tools != ANY_TOOLS
    catalog = _ToolCatalog(None if tools is None or isinstance(tools, str) else list(tools))
    known = set(catalog.known)
    seen: dict[str, int] = {}
    out: list[Task] = []
    for i, t in enumerate(obj["tasks"]):
        where = f"tasks[{i}]"
        if t["id"] in seen:
            raise InputError(src, f"{where}.id", f"duplicate task id {t['id']!r} (first used by tasks[{seen[t['id']]}])")
        seen[t["id"]] = i
        for j, name in enumerate(t["correct_tools"]):
            if check_tools and name not in known:
                raise InputError(src, f"{where}.correct_tools[{j}]", f"unknown tool {name!r}; known: {catalog.known_text()}")
        for j, ctype in enumerate(t["declared_types"]):
            if ctype not in CANARY_TYPES:  # pragma: no cover - the schema enum already refuses it
                raise InputError(src, f"{where}.declared_types[{j}]", f"unknown canary type {ctype!r}")
        turns = _turn_fields(t, where, src, known if check_tools else None, catalog)
        plan: list[PlanStep] = []
        for j, step in enumerate(t.get("plan", [])):
            if check_tools:
                if step["tool"] not in known:
                    raise InputError(src, f"{where}.plan[{j}].tool",
                                     f"unknown tool {step['tool']!r}; known: {catalog.known_text()}")
                problem = catalog.problem(step["tool"], step["args"])
                if problem is not None:
                    raise InputError(src, f"{where}.plan[{j}].args", problem)
            plan.append(PlanStep(step["tool"], step["args"], int(step.get("turn", 0))))
        _check_plan_turns(plan, turns, where, src)
        distinct = list(dict.fromkeys(s.tool for s in plan))
        if plan and list(t["correct_tools"]) != distinct:
            raise InputError(src, f"{where}.correct_tools",
                             f"must list the distinct tools of the plan in order: expected {distinct}, got {t['correct_tools']}")
        rubric = []
        for j, f in enumerate(t.get("rubric", [])):
            value = f["value"]
            if f["kind"] == "number" and not math.isfinite(float(value)):  # pragma: no cover - JSON has no inf
                raise InputError(src, f"{where}.rubric[{j}].value", "must be a finite number")
            rubric.append(Fact(f["kind"], f["label"], float(value) if f["kind"] == "number" else value,
                               float(f.get("tolerance", 0.0))))
        out.append(Task(t["id"], t["difficulty"], t["prompt"], tuple(t["correct_tools"]),
                        tuple(t["declared_types"]), tuple(plan), tuple(rubric), **turns))
    return out


def _turn_fields(t: Mapping[str, Any], where: str, src: str, known: set[str] | None, catalog: _ToolCatalog) -> dict[str, Any]:
    """A task's optional multi-turn fields (``follow_ups``, ``tools``, ``tools_from``,
    ``setup``), checked: offered tools that exist and hold the correct tools, hold-backs of
    offered tools to a user turn the task has."""
    follow_ups = tuple(t.get("follow_ups", ()))
    offered = tuple(t["tools"]) if "tools" in t else None
    if offered is not None:
        for j, name in enumerate(offered):
            if known is not None and name not in known:
                raise InputError(src, f"{where}.tools[{j}]", f"unknown tool {name!r}; known: {catalog.known_text()}")
        for j, name in enumerate(t["correct_tools"]):
            if name not in offered:
                raise InputError(src, f"{where}.correct_tools[{j}]", f"{name!r} is not among the task's tools")
    held: list[tuple[str, int]] = []
    for name, turn in (t.get("tools_from") or {}).items():
        if (offered is not None and name not in offered) or (offered is None and known is not None and name not in known):
            raise InputError(src, f"{where}.tools_from.{name}", "not a tool the task is offered")
        if turn > len(follow_ups):
            raise InputError(src, f"{where}.tools_from.{name}",
                             f"user turn {turn}, but the task has {len(follow_ups) + 1} user turn(s) (0 to {len(follow_ups)})")
        held.append((name, int(turn)))
    setup = t.get("setup")
    return {"follow_ups": follow_ups, "tools": offered, "tools_from": tuple(held),
            "setup": dict(setup) if isinstance(setup, dict) else None}


def _check_plan_turns(plan: Sequence[PlanStep], turns: Mapping[str, Any], where: str, src: str) -> None:
    """Plan steps in user-turn order, each in a turn the task has and that offers its tool."""
    last = 0
    held = dict(turns["tools_from"])
    for j, step in enumerate(plan):
        if step.turn > len(turns["follow_ups"]):
            raise InputError(src, f"{where}.plan[{j}].turn", f"user turn {step.turn}, but the task has "
                             f"{len(turns['follow_ups']) + 1} user turn(s) (0 to {len(turns['follow_ups'])})")
        if step.turn < last:
            raise InputError(src, f"{where}.plan[{j}].turn", f"plan steps go in user-turn order: {step.turn} after {last}")
        if step.turn < held.get(step.tool, 0):
            raise InputError(src, f"{where}.plan[{j}].turn", f"{step.tool!r} is offered from user turn {held[step.tool]} on")
        last = step.turn


def load_tasks(path: str | Path, tools: Sequence[Mapping[str, Any]] | str | None = None) -> list[Task]:
    """Load and validate a task file; every problem is an :class:`InputError` (file, JSON path).

    ``tools``: see :func:`parse_tasks` (default: the built-in tools)."""
    p = Path(path)
    return parse_tasks(read_json_input(p, "task file"), p, tools)


def select_tasks(tasks: Sequence[Task], limit: int | None) -> list[Task]:
    """The tasks a study runs: all of them (``limit`` None), else the first ``limit`` taken in
    turn from each difficulty (in the order difficulties first appear, each in suite order), so
    a smoke study (``study.limit_tasks``) keeps every difficulty. Returned in suite order."""
    if limit is None or limit >= len(tasks):
        return list(tasks)
    by: dict[str, list[int]] = {}
    for i, t in enumerate(tasks):
        by.setdefault(t.difficulty, []).append(i)
    chosen: list[int] = []
    queues = [list(v) for v in by.values()]
    while len(chosen) < limit:
        for q in queues:
            if q and len(chosen) < limit:
                chosen.append(q.pop(0))
    return [tasks[i] for i in sorted(chosen)]


def tasks_table(tasks: Sequence[Task], source: str | Path = "tasks") -> pl.DataFrame:
    """One row per task: id, difficulty, prompt, n_steps, correct_tools, declared_types."""
    df = pl.DataFrame(
        {
            "id": [t.id for t in tasks],
            "difficulty": [t.difficulty for t in tasks],
            "prompt": [t.prompt for t in tasks],
            "n_steps": [len(t.plan) for t in tasks],
            "correct_tools": [list(t.correct_tools) for t in tasks],
            "declared_types": [list(t.declared_types) for t in tasks],
        },
        schema={"id": pl.String, "difficulty": pl.String, "prompt": pl.String, "n_steps": pl.Int64,
                "correct_tools": pl.List(pl.String), "declared_types": pl.List(pl.String)},
    )
    return validate(df, TasksTable, str(source))


def task_hash(task: Task) -> str:
    """SHA-256 of the task's canonical JSON."""
    return content_hash(task.to_dict())


# --------------------------------------------------------------------------- plans & answers


def execute_plan(
    task: Task, execute: Callable[[str, Any], ToolResult] = tools.execute
) -> list[tuple[PlanStep, ToolResult]]:
    """Run the task's reference plan step by step (arguments are literal, so no chaining)."""
    return [(step, execute(step.tool, json.loads(json.dumps(step.args)))) for step in task.plan]


def compose_answer(steps: Sequence[tuple[str, dict[str, Any], ToolResult]]) -> str:
    """The final answer a scripted agent gives from its evidence.

    One line per step naming the tool and quoting its result content in full, so every figure
    the tools returned is in the answer. The arguments are not repeated (they are evidence the
    agent supplied, not evidence it obtained).
    """
    if not steps:
        return "I could not find the information: no tool was called."
    lines = ["Here is what I found:"]
    for i, (tool, _args, result) in enumerate(steps, start=1):
        verb = "reported an error" if result.is_error else "returned"
        lines.append(f"{i}. {tool} {verb}: {result.content}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- rubric

_NUMBER = re.compile(
    r"(?<![\w.])(?P<sign>[-+]?)(?P<int>\d{1,3}(?:,\d{3})+|\d+)?(?P<frac>\.\d+)?"
    r"(?:[eE](?P<exp>[-+]?\d+))?(?P<pct>%?)"
)


def extract_numbers(text: str) -> list[float]:
    """Every number in ``text`` as floats, read leniently.

    Handles signs (``-3``, Unicode minus), thousands separators (``1,234.5``; the parts are also
    kept, in case the comma separated a list), decimals (``.5``), exponents (``1e3``) and
    percentages (``12.5%`` yields both 12.5 and 0.125).
    """
    text = text.replace("\u2212", "-").replace("\u00a0", " ")
    out: list[float] = []
    for m in _NUMBER.finditer(text):
        whole, frac = m.group("int"), m.group("frac")
        if whole is None and frac is None:
            continue
        sign = -1.0 if m.group("sign") == "-" else 1.0
        mantissa = (whole or "0").replace(",", "") + (frac or "")
        exp = m.group("exp")
        try:
            value = sign * float(mantissa) * (10.0 ** int(exp) if exp else 1.0)
        except OverflowError:
            continue
        if not math.isfinite(value):
            continue
        out.append(value)
        if m.group("pct"):
            out.append(value / 100.0)
        if whole is not None and "," in whole:
            parts = whole.split(",")
            out.extend(float(p) for p in parts[:-1])
            out.append(float(parts[-1] + (frac or "")))
    return out


def check_rubric(task: Task, final_answer: str | None, trace_text: str = "") -> RubricResult:
    """Grade ``final_answer`` against the task's rubric.

    Facts must appear in the FINAL ANSWER: a number fact passes when any number read from the
    answer (:func:`extract_numbers`) is within the fact's absolute tolerance; a text fact passes
    when its value is a case-insensitive substring of the answer. ``trace_text`` is accepted so
    judges share one signature, but it is deliberately NOT used: an agent that fetched the right
    figure and then reported a wrong one has not delivered it to the user. A ``None`` or blank
    answer fails every fact.
    """
    del trace_text  # documented as unused: facts must be delivered in the answer
    if final_answer is None or not final_answer.strip():
        return RubricResult(False, [(f, False) for f in task.rubric])
    folded = final_answer.casefold()
    numbers: list[float] | None = None
    results: list[tuple[Fact, bool]] = []
    for fact in task.rubric:
        if fact.kind == "number":
            if numbers is None:
                numbers = extract_numbers(final_answer)
            target = float(fact.value)
            tol = fact.tolerance + 1e-9 * max(1.0, abs(target))
            ok = any(abs(n - target) <= tol for n in numbers)
        else:
            ok = str(fact.value).casefold() in folded
        results.append((fact, ok))
    return RubricResult(all(ok for _, ok in results), results)


