"""Errors a user can cause. Each names the file and the field that is wrong."""

from __future__ import annotations


class CanaryKitError(Exception):
    """Base class for every error canarykit reports to a user (exit status 2)."""


class InputError(CanaryKitError):
    """A user-supplied file (config, task file, tool schema, ...) is invalid.

    The message always names the file and the field, and says what was expected.
    """

    def __init__(self, file: str, field: str, problem: str) -> None:
        self.file = str(file)
        self.field = field
        self.problem = problem
        super().__init__(f"{self.file}: {field}: {problem}")


class ConfigError(InputError):
    """params.yaml (or an override of it) is invalid."""


class StageNotBuiltError(CanaryKitError):
    """A pipeline stage was asked for that this version does not implement."""
