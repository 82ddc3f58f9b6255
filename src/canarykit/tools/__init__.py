"""The realistic tool environment: 12 real tools on 5 MCP-style servers.

- ``weather``: :func:`get_weather`, :func:`get_forecast`, :func:`get_air_quality`
- ``math``: :func:`calculate`, :func:`convert_units`, :func:`compute_statistics`
- ``file``: :func:`read_file`, :func:`list_files` (a read-only virtual workspace)
- ``search``: :func:`web_search`, :func:`news_search` (a fixed, dated corpus)
- ``database``: :func:`query_database`, :func:`describe_table` (read-only embedded SQLite)

What they are: :mod:`.definitions`; a call (:func:`execute`, the contract): :mod:`.run`;
arguments against a schema: :mod:`.arguments`.
"""

from __future__ import annotations

from ._common import MAX_RESULT_BYTES, TODAY, ToolError, cap_result, clip_message
from ._worker import CALL_TIME_LIMIT_S
from ._worker import shutdown as shutdown_workers
from .arguments import schema_validator_class, validation_error
from .definitions import REAL_TOOLS, SERVERS, get_tool, mcp_definitions, tool_names, tool_table
from .run import execute, execute_here

__all__ = [
    "CALL_TIME_LIMIT_S", "MAX_RESULT_BYTES", "REAL_TOOLS", "SERVERS", "TODAY", "ToolError", "cap_result", "clip_message",
    "execute", "execute_here", "get_tool", "mcp_definitions", "schema_validator_class", "shutdown_workers",
    "tool_names", "tool_table",
    "validation_error",
]
