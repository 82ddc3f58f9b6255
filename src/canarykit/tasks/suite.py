"""The task suite by task id, however a stage holds it: a task file, a mapping or a list.

The judges, the runs table and the judging jobs read tasks by id (:func:`task_map`). A file is
loaded with :func:`canarykit.tasks.tasks.load_tasks`, its structure checked only: the tool names were
checked against the study's tool environment where that is known (the canary and assembly
stages); what reads tasks by id needs the prompts, rubrics and the tools they name.

This lives beside :mod:`canarykit.tasks.tasks`, not in it, because that module's source is part of
two identities: the rubric judge's (``checker_sha256``: an edit re-judges every run) and the
reference agents' code hash (an edit re-runs them).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from .tasks import ANY_TOOLS, Task, load_tasks

#: Where a stage has its tasks: a task file, ``{id: task}`` or the tasks themselves.
TaskSource = str | os.PathLike[str] | Mapping[str, Task] | Iterable[Task]


def task_map(tasks: TaskSource) -> dict[str, Task]:
    """Tasks by id, from a task file (structure checked only), a mapping or a list."""
    if isinstance(tasks, str | os.PathLike):
        return {t.id: t for t in load_tasks(Path(tasks), tools=ANY_TOOLS)}
    if isinstance(tasks, Mapping):
        return dict(tasks)
    return {t.id: t for t in tasks}


def task_source(tasks: TaskSource) -> str:
    """How errors name ``tasks``: the file's path, else ``tasks``."""
    return str(tasks) if isinstance(tasks, str | os.PathLike) else "tasks"
