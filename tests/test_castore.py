"""The content-addressed store every cache uses: layout, atomic writes, misses on damage."""

from __future__ import annotations

from pathlib import Path

import pytest

from canarykit.store.castore import ContentStore
from canarykit.store.jsonio import content_hash


def test_layout_roundtrip_and_keys(tmp_path: Path) -> None:
    store = ContentStore(tmp_path / "s")
    key = content_hash({"a": 1})
    assert store.read_text(key) is None and not store.exists(key)
    p = store.write_text(key, '{"a": 1}')
    assert p == tmp_path / "s" / key[:2] / f"{key}.json"
    assert store.read_json(key) == {"a": 1} and list(store.keys()) == [key]
    assert not list(p.parent.glob(".*")), "no temporary file is left behind"
    bare = ContentStore(tmp_path / "ids", suffix="")
    bare.write_text(key, "run-1\n")
    assert (tmp_path / "ids" / key[:2] / key).read_text() == "run-1\n" and list(bare.keys()) == [key]


def test_a_damaged_entry_is_a_miss(tmp_path: Path) -> None:
    store = ContentStore(tmp_path)
    key = content_hash("x")
    store.write_text(key, '{"truncated": ')
    assert store.read_text(key) == '{"truncated": ' and store.read_json(key) is None


def test_keys_that_would_escape_the_root_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        ContentStore(tmp_path).path("../../etc/passwd")
