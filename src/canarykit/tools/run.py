"""One call of a real tool.

:func:`execute` is the single entry point agents use. It validates the arguments against the
tool's JSON Schema, never raises for bad input (every problem is a ``ToolResult`` with
``is_error=True`` and ``{"error": ...}`` content), and is a pure function of ``(name, args)``:
the same call always returns byte-identical content. ``ToolResult.data`` is shared with no
one else but should be treated as read-only.

Every call has a hard wall-clock limit (:data:`CALL_TIME_LIMIT_S`): it runs in a worker
process that is killed if it overruns (:mod:`._worker`), so even work that
cannot be interrupted from inside (one long SQLite function call) stops, with a one-line
error. :func:`execute_here` is the same call in this process, without that limit.

Every result is bounded: at most :data:`MAX_RESULT_BYTES` (64 KiB) of UTF-8, a longer one cut
with a marker the model can see (``[canarykit: result truncated: ...]``, ``data`` then None);
error messages quote at most a few hundred characters of any value.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

from ..types import ToolResult
from . import database, files, mathtools, search, weather
from ._common import ToolError, cap_result, clip_message
from .arguments import validation_error
from .definitions import tool_names

_IMPLS: Final[dict[str, Callable[..., dict[str, Any]]]] = {
    "get_weather": lambda a: weather.get_weather(a["city"], a.get("units", "metric")),
    "get_forecast": lambda a: weather.get_forecast(a["city"], int(a["days"])),
    "get_air_quality": lambda a: weather.get_air_quality(a["city"]),
    "calculate": lambda a: mathtools.calculate(a["expression"]),
    "convert_units": lambda a: mathtools.convert_units(a["value"], a["from_unit"], a["to_unit"]),
    "compute_statistics": lambda a: mathtools.compute_statistics(a["values"]),
    "read_file": lambda a: files.read_file(a["path"]),
    "list_files": lambda a: files.list_files(a.get("directory", "/")),
    "web_search": lambda a: search.web_search(a["query"], int(a.get("max_results", 5))),
    "news_search": lambda a: search.news_search(a["query"], int(a.get("max_results", 5))),
    "query_database": lambda a: database.query_database(a["sql"]),
    "describe_table": lambda a: database.describe_table(a["table"]),
}

def _error(message: str) -> ToolResult:
    return ToolResult(content=json.dumps({"error": clip_message(message)}, ensure_ascii=False, sort_keys=True), is_error=True)


def execute(name: str, args: Any) -> ToolResult:
    """Run real tool ``name`` with ``args``; never raises for bad input.

    Unknown tools, arguments that fail the tool's schema, and failures the caller caused
    (unknown city, write SQL, a path outside the workspace, a call that overran
    :data:`CALL_TIME_LIMIT_S`, ...) all come back as
    ``ToolResult(content='{"error": "..."}', is_error=True)``. The call runs in a worker
    process killed at the time limit (module doc); the answer is :func:`execute_here`'s.
    """
    from . import _worker

    return _worker.call(name, args)


def execute_here(name: str, args: Any) -> ToolResult:
    """:func:`execute` in this process, without the hard time limit (the worker's side)."""
    if not isinstance(name, str) or name not in _IMPLS:
        return _error(f"unknown tool {clip_message(repr(name), 200)}; available tools: {', '.join(tool_names())}")
    problem = validation_error(name, args)
    if problem is not None:
        return _error(problem)
    try:
        payload = _IMPLS[name](args)
        content = json.dumps(payload, ensure_ascii=False, sort_keys=True, allow_nan=False)
    except ToolError as exc:
        return _error(str(exc))
    except Exception as exc:  # defensive: a tool never takes the agent loop down
        return _error(f"internal error in {name}: {type(exc).__name__}: {exc}")
    capped, truncated = cap_result(content)
    if truncated:
        return ToolResult(content=capped, is_error=False, data=None)
    return ToolResult(content=content, is_error=False, data=payload)


def serve(argv: list[str]) -> int:
    """A worker process's life (started by :mod:`._worker`): answer calls with :func:`execute_here`."""
    from . import _worker

    return _worker.main(argv, execute_here)
