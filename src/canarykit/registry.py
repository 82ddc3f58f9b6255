"""One registry for every pluggable kind: model backends, reference agents, judges, canary
transforms, rewriters.

Each kind is a :class:`Registry` of named entries. An implementation registers itself where
it is defined (``@BACKENDS.register("litellm")``); the module that *uses* a kind never
imports the implementations, so registering never needs an import cycle. Entries whose module
has not been imported yet are declared lazily by dotted path (``lazy={"local":
"canarykit.agents.local"}``): the first lookup of such a name imports that module, which
registers the entry.

A lookup of an unknown name raises :class:`~canarykit.errors.ConfigError` naming the
configuration key and the names that are known, so a typo in ``params.yaml`` reads as one
line, never as a ``KeyError``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import Generic, TypeVar

from .errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """Named entries of one kind (``what`` says which, in error messages)."""

    def __init__(self, what: str, *, lazy: Mapping[str, str] | None = None) -> None:
        self.what = what
        self._entries: dict[str, T] = {}
        self._lazy: dict[str, str] = dict(lazy or {})

    def register(self, name: str) -> Callable[[T], T]:
        """A decorator that registers its target as ``name`` (and returns it unchanged)."""

        def deco(entry: T) -> T:
            self.add(name, entry)
            return entry

        return deco

    def add(self, name: str, entry: T) -> None:
        """Register ``entry`` as ``name``; a later registration of the same name replaces it."""
        self._entries[name] = entry
        self._lazy.pop(name, None)

    def _load(self, name: str) -> None:
        module = self._lazy.pop(name, None)
        if module is not None:
            importlib.import_module(module)

    def get(self, name: str, *, source: str = "params.yaml", field: str = "") -> T:
        """The entry ``name``; unknown: a :class:`ConfigError` naming ``source`` and ``field``."""
        if name not in self._entries:
            self._load(name)
        if name not in self._entries:
            raise ConfigError(source, field or self.what, f"unknown {self.what} {name!r}; expected one of {self.names()}")
        return self._entries[name]

    def names(self) -> list[str]:
        """Every registered or declared name, sorted."""
        return sorted(set(self._entries) | set(self._lazy))

    def __contains__(self, name: object) -> bool:
        return name in self._entries or name in self._lazy

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())
