"""The commands the README and the documentation site show, for tests that run them exactly
as printed.

The pages are ``README.md`` and every ``docs/**/*.md`` (:func:`pages`). A command is a line of a fenced ``bash`` block (its trailing ``# comment`` dropped, a line
ending in a backslash joined with the next), or a ``$ `` line of an output block (a block with
no language) followed by what it printed. Tests fetch a command by its start
(:func:`command`), run it with bash (:func:`sh`) and can hold its output against what the
page shows under it (:func:`shown`). ``tests/test_readme.py`` checks that every command of
every page is run by some test, so neither the README nor the docs can drift from the code.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def pages() -> list[Path]:
    """The pages whose commands are run: the README, then the documentation site's pages."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def text() -> str:
    """Every page's text, the README first (for tests that read a ```yaml or ```python block)."""
    return "\n".join(page.read_text(encoding="utf-8") for page in pages())


@dataclass(frozen=True)
class Command:
    line: int  #: 1-based line of its page
    text: str  #: the command as printed, comments dropped
    output: tuple[str, ...] = field(default=())  #: the lines shown under it (``$`` blocks, ``#   `` comments)
    page: Path = README  #: the page that shows it


def _strip_comment(line: str) -> str:
    # a comment starts at a '#' preceded by white space, outside quotes
    quote = None
    for i, ch in enumerate(line):
        if ch in "\"'" and quote in (None, ch):
            quote = None if quote else ch
        elif ch == "#" and quote is None and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def commands(path: Path | None = None) -> list[Command]:
    """Every command of one page, in order; without a page, of every page (:func:`pages`)."""
    if path is None:
        return [c for page in pages() for c in commands(page)]
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Command] = []
    lang: str | None = None
    pending = ""
    start = 0
    for no, raw in enumerate(lines, 1):
        fence = re.match(r"^```(\w*)\s*$", raw)
        if fence and lang is None:
            lang = fence.group(1)
            continue
        if raw.startswith("```") and lang is not None:
            lang = None
            continue
        if lang in ("bash", "sh"):
            if raw.lstrip().startswith("#   ") and out and not pending:  # output shown as comments
                out[-1] = replace(out[-1], output=(*out[-1].output, raw.lstrip()[4:].rstrip()))
                continue
            text = _strip_comment(raw)
            if not text.strip():
                continue
            if not pending:
                start = no
            if text.endswith("\\"):
                pending += text[:-1].strip() + " "
                continue
            out.append(Command(start, (pending + text.strip()).strip(), page=path))
            pending = ""
        elif lang == "":
            if raw.startswith("$ "):
                text = _strip_comment(raw[2:])
                if text.strip():
                    out.append(Command(no, text.strip(), page=path))
            elif out and out[-1].line < no and _in_same_block(lines, out[-1].line, no):
                out[-1] = replace(out[-1], output=(*out[-1].output, raw))
    return out


def _in_same_block(lines: list[str], a: int, b: int) -> bool:
    return not any(lines[i - 1].startswith("```") for i in range(a + 1, b))


def command(start: str) -> Command:
    """The one command (of any page) that starts with ``start`` (fails when none or several do)."""
    found = [c for c in commands() if c.text == start or c.text.startswith(start + " ")]
    exact = [c for c in found if c.text == start]
    found = exact or found
    texts = sorted({c.text for c in found})
    assert len(texts) == 1, f"README and docs: {len(texts)} commands start with {start!r}: {texts}"
    return found[0]


def shown(start: str) -> tuple[str, ...]:
    """What the pages show under the command (every copy of it that shows something)."""
    return tuple(line for c in commands() if c.text == command(start).text for line in c.output)


def sh(cwd: Path, text: str, *, env: dict[str, str] | None = None, check: bool = True,
       timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """Run a README command with bash, as a user would paste it."""
    from .workflow import (
        env as workflow_env,  # the venv's commands first on PATH, as after `source .venv/bin/activate`
    )

    proc = subprocess.run(["bash", "-c", text], cwd=cwd, env=env or workflow_env(), capture_output=True,
                          text=True, timeout=timeout)
    if check:
        assert proc.returncode == 0, f"README command failed: {text}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc
