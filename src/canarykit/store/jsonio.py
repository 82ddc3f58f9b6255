"""Canonical JSON, content hashes, atomic writes and defensive parsing of hostile JSON."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

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


def atomic_write_text(path: str | os.PathLike[str], text: str, *, durable: bool = True) -> None:
    """Write ``text`` to ``path`` so that readers see either the old or the whole new file
    (``durable``: :func:`atomic_write_bytes`)."""
    atomic_write_bytes(path, text.encode("utf-8"), durable=durable)


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


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, *, durable: bool = True) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename: a reader, or a process
    killed half-way, sees the old file or the whole new one. ``durable`` also flushes the data
    to the disk before the rename (fsync), so that even a power loss cannot leave an empty
    file under the name; a cache whose damaged entry reads as a miss does without (the fsync
    cost milliseconds per file, most of a reference run's cost)."""
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
            if durable:
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


#: Where a character of JSON text stands (:func:`json_char_roles`).
JsonCharRole = Literal["outside", "syntax", "content"]

#: What is not a bracket or a brace: a string literal (escapes included; one left open runs to
#: the end, so a failed match never restarts inside it and the scan stays linear), or a run of
#: other characters.
_NOT_BRACKET = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[^"\[\]{}]+', re.DOTALL)
_INNERMOST_PAIR = re.compile(r"\[\]|\{\}")


def _nesting(text: str, limit: int) -> int:
    """How deep ``text``'s arrays and objects nest (stops counting past ``limit``).

    Strings removed, only brackets kept, then each pass removes every innermost pair: the
    passes are the depth. All in the regex engine: a run record of a few thousand characters
    costs microseconds, where a Python loop over its characters cost milliseconds (the
    offline stages read thousands of records). Unbalanced text (invalid JSON, or a string
    left open) is scanned character by character, as it always was, so a deep hostile
    prefix is refused by its depth before the parser sees it."""
    brackets = _NOT_BRACKET.sub("", text)
    depth = 0
    while brackets:
        brackets, removed = _INNERMOST_PAIR.subn("", brackets)
        if not removed:
            return max(depth, _nesting_slow(text, limit))
        depth += 1
        if depth > limit:
            break
    return depth


def json_char_roles(text: str) -> Iterator[tuple[str, JsonCharRole]]:
    """Each character of JSON ``text`` with its role: ``"outside"`` every string literal,
    ``"syntax"`` of one (its quotes, a backslash and the character it escapes) or its plain
    ``"content"``. A string left open runs to the end."""
    in_str = escape = False
    for ch in text:
        if in_str:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_str = False
            else:
                yield ch, "content"
                continue
            yield ch, "syntax"
        elif ch == '"':
            in_str = True
            yield ch, "syntax"
        else:
            yield ch, "outside"


def _nesting_slow(text: str, limit: int) -> int:
    depth = peak = 0
    for ch, role in json_char_roles(text):
        if role != "outside":
            continue
        if ch in "[{":
            depth += 1
            peak = max(peak, depth)
            if peak > limit:
                return peak
        elif ch in "]}":
            depth -= 1
    return peak


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
    if _nesting(text, max_depth) > max_depth:
        raise HostileJSONError(f"JSON nesting deeper than {max_depth}")
    try:
        value = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicates)
    except HostileJSONError:
        raise
    except (ValueError, RecursionError) as exc:
        raise HostileJSONError(f"invalid JSON: {exc}") from exc
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
