"""Glue for the thin scripts under scripts/: logging to the rule's log and clean user errors."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from typing import Any, TextIO

from .errors import CanaryKitError


class _Tee:
    def __init__(self, *streams: TextIO) -> None:
        self.streams = streams

    def write(self, text: str) -> int:
        for s in self.streams:
            s.write(text)
            s.flush()
        return len(text)

    def flush(self) -> None:
        for s in self.streams:
            s.flush()


def run_script(snakemake: Any, main: Callable[[Any], None]) -> None:
    """Run ``main(snakemake)`` with stderr sent to the rule's log (and the terminal).

    A user error (:class:`CanaryKitError`) prints one message naming the file and the field
    and exits with status 2; outputs already written by earlier rules are left in place.
    """
    log_path = snakemake.log[0] if len(snakemake.log) else None
    log: TextIO | None = open(log_path, "w", buffering=1, encoding="utf-8") if log_path else None  # noqa: SIM115
    real_stderr = sys.stderr
    if log is not None:
        sys.stderr = _Tee(real_stderr, log)  # type: ignore[assignment]
    try:
        main(snakemake)
    except CanaryKitError as exc:
        print(f"canarykit: error: {exc}", file=sys.stderr)
        sys.exit(2)
    except Exception:
        traceback.print_exc(file=sys.stderr)
        raise
    finally:
        sys.stderr = real_stderr
        if log is not None:
            log.close()
