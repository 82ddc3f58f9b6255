"""Generate the canarykit task suite (120 templated tasks: 40 easy, 40 medium, 40 hard).

Usage: ``python -m canarykit.tasks.taskgen data/tasks.json``

Every task is built by actually running its plan against :func:`canarykit.tools.execute`:
step k is executed, the figure step k+1 needs is read from step k's result and written
literally into step k+1's arguments, and the rubric facts are read from the results. The
output is byte-identical on every run. Before writing, every task is checked: it validates,
its plan replays, its composed answer passes its rubric, and its key fact (the first rubric
fact, a number from the last step) is not already implied by the prompt or earlier results.

Layout: ``_draft`` (the :class:`Draft` and the helpers that read figures from results),
``easy`` / ``medium`` / ``hard`` (one small function per task family, composed in suite
order), ``_suite`` (ids, declared types, the key fact, the check through the task loader
:func:`canarykit.tasks.tasks.parse_tasks`, writing), ``__main__`` (the command).
"""

from __future__ import annotations

from ._draft import Draft, Spec
from ._suite import build_suite, check_suite, main
from .easy import easy
from .hard import hard
from .medium import medium

__all__ = ["Draft", "Spec", "build_suite", "check_suite", "easy", "hard", "main", "medium"]
