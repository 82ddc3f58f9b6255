"""The content-addressed store: one small class behind every cache (run records, model
responses, verdicts, rewordings).

A value lives at ``root/<key[:2]>/<key><suffix>`` where ``key`` is a hex digest of what
decides it (:func:`canarykit.store.jsonio.content_hash`): two writers of one key write the same
value, so no write needs a lock. Writes are atomic (a reader sees the whole old file or the
whole new one, a killed writer leaves no partial entry), and a missing or damaged entry reads
as a miss, never as an error: the caller recomputes it. So writes are not flushed to the disk
one by one (no fsync: it cost more than the rest of writing a reference run's record); a power
loss may leave an empty entry, which is a miss like any damaged one.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .jsonio import MAX_JSON_CHARS, atomic_write_text, safe_json_loads


class ContentStore:
    """Text values by hex key under ``root`` (``suffix``: the file ending, ``.json`` by default)."""

    def __init__(self, root: str | os.PathLike[str], *, suffix: str = ".json") -> None:
        self.root = Path(root)
        self.suffix = suffix

    def path(self, key: str) -> Path:
        """Where the value of ``key`` lives (whether or not it exists)."""
        if len(key) < 3 or not key.isalnum():
            raise ValueError(f"not a content key: {key!r}")
        return self.root / key[:2] / f"{key}{self.suffix}"

    def exists(self, key: str) -> bool:
        return self.path(key).is_file()

    def read_text(self, key: str) -> str | None:
        """The stored text, or ``None`` when there is none or it cannot be read."""
        try:
            return self.path(key).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def read_json(self, key: str, *, max_chars: int = MAX_JSON_CHARS) -> Any | None:
        """The stored JSON value, or ``None`` when missing, unreadable or not JSON."""
        text = self.read_text(key)
        if text is None:
            return None
        try:
            return safe_json_loads(text, max_chars=max_chars)
        except ValueError:
            return None

    def write_text(self, key: str, text: str) -> Path:
        """Store ``text`` under ``key`` atomically; returns its path."""
        p = self.path(key)
        atomic_write_text(p, text, durable=False)
        return p

    def keys(self) -> Iterator[str]:
        """Every stored key (unordered)."""
        if not self.root.is_dir():
            return
        for shard in self.root.iterdir():
            if len(shard.name) == 2 and shard.is_dir():
                for p in shard.iterdir():
                    if p.name.endswith(self.suffix) and not p.name.startswith("."):
                        yield p.name[: len(p.name) - len(self.suffix)] if self.suffix else p.name
