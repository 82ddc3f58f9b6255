"""Atomic writes: readers see a whole file, with the mode the user's umask gives new files."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from canarykit.store.jsonio import HostileJSONError, atomic_write_text, safe_json_loads, write_json


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_written_files_follow_the_umask(tmp_path: Path, umask: int, mode: int) -> None:
    old = os.umask(umask)
    try:
        write_json(tmp_path / "a.json", {"x": 1})
        atomic_write_text(tmp_path / "sub" / "b.txt", "text")
    finally:
        os.umask(old)
    for p in (tmp_path / "a.json", tmp_path / "sub" / "b.txt"):
        assert stat.S_IMODE(p.stat().st_mode) == mode
    assert (tmp_path / "a.json").read_text() == '{\n  "x": 1\n}\n'


def test_a_rewrite_replaces_the_whole_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "t.txt"
    atomic_write_text(target, "old" * 1000)
    atomic_write_text(target, "new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["t.txt"]


@pytest.mark.parametrize(
    "text, depth",
    [
        ('{"a": "[[[[{{{{", "b": [1, {"c": "\\"]]}}"}]}', 3),  # brackets inside strings never count
        ('[1, "\\\\", [2]]', 2),  # an escaped backslash ends before the closing quote
        ("[" * 64 + "]" * 64, 64),
        ("[]", 1),
        ('"plain"', 0),
    ],
)
def test_nesting_within_the_limit_parses_and_strings_do_not_count(text: str, depth: int) -> None:
    from canarykit.store.jsonio import _nesting

    assert _nesting(text, 64) == depth
    safe_json_loads(text)


@pytest.mark.parametrize(
    "text",
    ["[" * 65 + "]" * 65, "[" * 100_000, '{"a": ' * 70 + "1" + "}" * 70, '["open string' + "[" * 100],
)
def test_nesting_beyond_the_limit_or_unbalanced_is_refused_not_crashed(text: str) -> None:
    with pytest.raises(HostileJSONError):
        safe_json_loads(text)
