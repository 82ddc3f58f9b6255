"""Errors a user can cause. Each names the file and the field that is wrong."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

#: An error message quotes at most this many characters of the value it complains about.
MAX_PROBLEM_CHARS = 600
#: ... and lists at most this many lines (one per problem found).
MAX_PROBLEM_LINES = 40


def clip(text: str, limit: int = MAX_PROBLEM_CHARS) -> str:
    """At most ``limit`` characters of ``text``: its head and tail, saying how much is left out.

    Error messages quote the offending value (jsonschema's ``'<value>' is too long``); a 10 MB
    task prompt must not make a 10 MB message (nor a 20 MB log).
    """
    if len(text) <= limit:
        return text
    head = (limit * 2) // 3
    tail = limit - head
    return f"{text[:head]}...[{len(text) - head - tail:,} characters elided]...{text[-tail:]}"


def close_match(word: str, choices: Iterable[str]) -> str | None:
    """The one of ``choices`` closest to ``word`` (difflib), or None when none is close: what
    an error about an unknown key, target or name suggests instead."""
    close = difflib.get_close_matches(str(word), sorted({str(c) for c in choices}), n=1, cutoff=0.6)
    return close[0] if close else None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` when ``word`` is close to one of ``choices``, else ``""``."""
    match = close_match(word, choices)
    return f" (did you mean {match!r}?)" if match else ""


class CanaryKitError(Exception):
    """Base class for every error canarykit reports to a user (exit status 2)."""


class InputError(CanaryKitError):
    """A user-supplied file (config, task file, tool schema, ...) is invalid.

    The message always names the file and the field, and says what was expected; the value
    it quotes is clipped (:func:`clip`).
    """

    def __init__(self, file: str, field: str, problem: str) -> None:
        self.file = clip(str(file), 300)
        self.field = clip(str(field), 300)
        lines = str(problem).split("\n")
        if len(lines) > MAX_PROBLEM_LINES:
            lines = [*lines[: MAX_PROBLEM_LINES - 1], f"... and {len(lines) - MAX_PROBLEM_LINES + 1} more lines"]
        self.problem = "\n".join(clip(line) for line in lines)
        super().__init__(f"{self.file}: {self.field}: {self.problem}")


class ConfigError(InputError):
    """params.yaml (or an override of it) is invalid."""


class ToolEnvironmentError(CanaryKitError):
    """A tool server failed: it exited, stopped answering or cannot be reached. Not the
    agent's doing, so never recorded as the tool's answer: a study run that meets one is a
    failed run (retried by the next invocation); the proxy answers its client an error."""


class StageNotBuiltError(CanaryKitError):
    """A pipeline stage was asked for that this version does not implement."""
