"""Paths as a person reads them on a screen: many output files in a few shell-brace groups
(the console's closing block and the statistics stage's summary both print them)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def brace_paths(paths: Sequence[str]) -> list[str]:
    """``paths`` in shell-brace groups: ``results/{table1,table2}.{csv,md}``."""
    by_suffix: dict[tuple[str, str], list[str]] = {}
    for p in paths:
        path = Path(p)
        by_suffix.setdefault((str(path.parent), path.suffix), []).append(path.stem)
    merged: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for (parent, suffix), stems in by_suffix.items():
        merged.setdefault((parent, tuple(stems)), []).append(suffix)

    def brace(items: Sequence[str]) -> str:
        return items[0] if len(items) == 1 else "{" + ",".join(items) + "}"

    return [f"{parent}/{brace(stems)}.{brace([s.lstrip('.') for s in suffixes])}"
            for (parent, stems), suffixes in merged.items()]
