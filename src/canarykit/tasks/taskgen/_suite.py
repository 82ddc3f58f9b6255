"""Building, checking and writing the task suite from the three difficulties' drafts."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ...store.jsonio import write_json
from ...types import CANARY_TYPES
from ..tasks import (
    TASK_FILE_VERSION,
    PlanStep,
    Task,
    check_rubric,
    compose_answer,
    execute_plan,
    extract_numbers,
    parse_tasks,
)
from ._draft import Draft
from .easy import easy
from .hard import hard
from .medium import medium


def _declared(primary: str, index: int, counts: dict[str, int]) -> list[str]:
    """Primary type plus 0-2 of the least-declared types so far (deterministic balancing)."""
    k = 1 + index % 3
    chosen = [primary]
    while len(chosen) < k:
        rest = sorted((t for t in CANARY_TYPES if t not in chosen), key=lambda t: (counts[t], CANARY_TYPES.index(t)))
        chosen.append(rest[0])
    for t in chosen:
        counts[t] += 1
    return sorted(chosen, key=CANARY_TYPES.index)


def _choose_key_fact(task_id: str, prompt: str, d: Draft) -> None:
    """Move the first number fact that the last step's result (and only it) supplies to the front.

    That fact is the task's key figure: it is not implied by the prompt or by an earlier step,
    so an answer that lacks the last step's evidence cannot satisfy the rubric.
    """
    context = extract_numbers(prompt + "\n" + "\n".join(r.content for r in d.results[:-1]))
    last = extract_numbers(d.results[-1].content)
    for i, fact in enumerate(d.facts):
        if fact.kind != "number":
            continue
        v, t = float(fact.value), fact.tolerance
        if any(abs(n - v) <= t for n in last) and not any(abs(n - v) <= t for n in context):
            d.facts.insert(0, d.facts.pop(i))
            return
    raise RuntimeError(f"{task_id}: no number fact comes only from the last step: {d.facts}")


def _task(task_id: str, level: str, prompt: str, d: Draft, declared: list[str]) -> Task:
    """The drafted task; its plan's arguments as they read back from JSON."""
    steps = json.loads(json.dumps(d.steps))
    return Task(task_id, level, prompt, tuple(dict.fromkeys(t for t, _ in steps)), tuple(declared),
                tuple(PlanStep(t, a) for t, a in steps), tuple(d.facts))


def check_suite(suite: dict[str, Any]) -> list[Task]:
    """The suite read back by the task loader (:func:`canarykit.tasks.tasks.parse_tasks`), every
    task's plan replayed (:func:`canarykit.tasks.tasks.execute_plan`) and its composed answer graded
    by its own rubric. A generator defect is a ``RuntimeError`` (or an ``InputError`` from the
    loader) naming the task."""
    tasks = parse_tasks(suite, "<generated suite>")
    for task in tasks:
        steps = [(s.tool, s.args, result) for s, result in execute_plan(task)]
        if not check_rubric(task, compose_answer(steps)).passed:
            raise RuntimeError(f"{task.id}: the reference plan does not satisfy the rubric")
    return tasks


def build_suite() -> dict[str, Any]:
    """The task document (``{"version", "tasks"}``), checked by :func:`check_suite`."""
    counts = dict.fromkeys(CANARY_TYPES, 0)
    tasks: list[Task] = []
    for level, gen in (("easy", easy), ("medium", medium), ("hard", hard)):
        for n, (prompt, d, primary) in enumerate(gen(), start=1):
            task_id = f"{level}-{n:03d}"
            _choose_key_fact(task_id, prompt, d)
            tasks.append(_task(task_id, level, prompt, d, _declared(primary, len(tasks), counts)))
    suite = {"version": TASK_FILE_VERSION, "tasks": [t.to_dict() for t in tasks]}
    check_suite(suite)
    return suite


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m canarykit.tasks.taskgen OUTPUT.json", file=sys.stderr)
        return 2
    suite = build_suite()
    write_json(Path(args[0]), suite)
    levels = [t["difficulty"] for t in suite["tasks"]]
    print(f"wrote {len(levels)} tasks ({', '.join(f'{lv}: {levels.count(lv)}' for lv in ('easy', 'medium', 'hard'))}) to {args[0]}")
    return 0
