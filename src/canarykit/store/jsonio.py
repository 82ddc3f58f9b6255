"""Canonical JSON, content hashes, atomic writes and defensive parsing of hostile JSON."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

#: Model output is hostile input: never parse more than this many characters.
MAX_JSON_CHARS = 1_000_000
MAX_JSON_DEPTH = 64


def canonical_json(obj: Any) -> str:
    """Deterministic JSON text: sorted keys, no whitespace, UTF-8 kept, NaN refused."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def content_hash(obj: Any, length: int = 64) -> str:
    """SHA-256 of the canonical JSON of ``obj`` (hex, optionally truncated)."""
    return hashlib.sha256(canonical_json(obj).encode("utf-8")).hexdigest()[:length]


def source_hash(*paths: Path) -> str:
    """Hash of the code in ``paths`` (files, and every ``*.py`` below a folder): its file names
    and texts, so a run identity that holds it changes when that code does."""
    files = sorted(p for path in paths for p in ([path] if path.is_file() else path.rglob("*.py")))
    return content_hash([[f.name, f.read_text(encoding="utf-8")] for f in files], 16)


def pretty_json(obj: Any) -> str:
    """Stable human-readable JSON (sorted keys, 2-space indent, trailing newline)."""
    return json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` so that readers see either the old or the whole new file."""
    atomic_write_bytes(path, text.encode("utf-8"))


def _umask() -> int:
    """The process umask (read without changing it where /proc says it; else set and restore)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        # mkstemp creates the file 0600; a written output gets the mode any new file gets
        # under the caller's umask (0644 with the usual 022), like open() would give it.
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Atomically write ``obj`` as stable, pretty JSON (byte-identical for equal objects)."""
    atomic_write_text(path, pretty_json(obj))


class HostileJSONError(ValueError):
    """Text that claims to be JSON but is too large, too deep, non-finite or ambiguous."""


def _reject_constant(name: str) -> Any:
    raise HostileJSONError(f"non-finite number {name} is not valid JSON")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise HostileJSONError(f"duplicate key {key!r}")
        out[key] = value
    return out


def nesting_depth(obj: Any, limit: int) -> int:
    """How deep ``obj`` nests (objects and lists), counted without recursion up to ``limit + 1``."""
    stack: list[tuple[Any, int]] = [(obj, 1)]
    deepest = 0
    while stack:
        node, d = stack.pop()
        deepest = max(deepest, d)
        if deepest > limit:
            return deepest
        if isinstance(node, dict):
            stack.extend((v, d + 1) for v in node.values())
        elif isinstance(node, list | tuple):
            stack.extend((v, d + 1) for v in node)
    return deepest


def safe_json_loads(text: str, *, max_chars: int = MAX_JSON_CHARS, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Parse JSON from an untrusted source (model output, judge output).

    Refuses oversized input, nesting deeper than ``max_depth``, ``NaN``/``Infinity`` and
    duplicate keys. Every failure is a :class:`HostileJSONError` (a ``ValueError``), never a
    ``RecursionError``.
    """
    if not isinstance(text, str):
        raise HostileJSONError(f"expected JSON text, got {type(text).__name__}")
    if len(text) > max_chars:
        raise HostileJSONError(f"JSON text of {len(text)} characters exceeds the {max_chars} limit")
    # Bound nesting before the recursive parser sees it.
    depth = 0
    peak = 0
    in_str = False
    escape = False
    for ch in text:
        if in_str:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            peak = max(peak, depth)
            if peak > max_depth:
                raise HostileJSONError(f"JSON nesting deeper than {max_depth}")
        elif ch in "]}":
            depth -= 1
    try:
        value = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicates)
    except HostileJSONError:
        raise
    except (ValueError, RecursionError) as exc:
        raise HostileJSONError(f"invalid JSON: {exc}") from exc
    if nesting_depth(value, max_depth) > max_depth:  # pragma: no cover - guarded by the scan above
        raise HostileJSONError(f"JSON nesting deeper than {max_depth}")
    return value


def read_json_input(path: str | os.PathLike[str], what: str, *, max_chars: int = 50_000_000,
                    max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Read a JSON file a user supplied (tool list, task file, pool, record).

    Every failure is an :class:`~canarykit.errors.InputError` naming the file: missing,
    unreadable, not UTF-8, or not valid (or hostile) JSON (``max_depth``: the nesting allowed).
    """
    from ..errors import InputError

    src = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise InputError(src, "<file>", f"{what} not found") from exc
    except IsADirectoryError as exc:
        raise InputError(src, "<file>", f"is a directory, expected a JSON {what}") from exc
    except UnicodeDecodeError as exc:
        raise InputError(src, "<file>", f"not UTF-8 text: {exc}") from exc
    except OSError as exc:
        raise InputError(src, "<file>", f"cannot read the {what}: {exc.strerror or exc}") from exc
    try:
        return safe_json_loads(text, max_chars=max_chars, max_depth=max_depth)
    except HostileJSONError as exc:
        raise InputError(src, "<root>", f"not valid JSON: {exc}") from exc


def finite_or_none(x: float | None) -> float | None:
    """``None`` for NaN/inf, else ``x`` (keeps JSON outputs valid)."""
    if x is None or not math.isfinite(x):
        return None
    return float(x)
