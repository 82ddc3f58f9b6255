"""Agent jobs at once: each job's work on its own environment, in threads, every environment closed after."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any


def at_once(envs: Mapping[str, Any], work: Callable[[str], None]) -> None:
    """Run ``work(job)`` for every job of ``envs`` at the same time; close every environment."""
    try:
        threads = [threading.Thread(target=work, args=(m,)) for m in envs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        for env in envs.values():
            env.close()
