"""The realistic tool environment: 12 real tools on 5 MCP-style servers.

- ``weather``: :func:`get_weather`, :func:`get_forecast`, :func:`get_air_quality`
- ``math``: :func:`calculate`, :func:`convert_units`, :func:`compute_statistics`
- ``file``: :func:`read_file`, :func:`list_files` (a read-only virtual workspace)
- ``search``: :func:`web_search`, :func:`news_search` (a fixed, dated corpus)
- ``database``: :func:`query_database`, :func:`describe_table` (read-only embedded SQLite)

:func:`execute` is the single entry point agents use. It validates the arguments against the
tool's JSON Schema, never raises for bad input (every problem is a ``ToolResult`` with
``is_error=True`` and ``{"error": ...}`` content), and is a pure function of ``(name, args)``:
the same call always returns byte-identical content. ``ToolResult.data`` is shared with no
one else but should be treated as read-only.

Every call has a hard wall-clock limit (:data:`CALL_TIME_LIMIT_S`): it runs in a worker
process that is killed if it overruns (:mod:`canarykit.tools._worker`), so even work that
cannot be interrupted from inside (one long SQLite function call) stops, with a one-line
error. :func:`execute_here` is the same call in this process, without that limit.

Every result is bounded: at most :data:`MAX_RESULT_BYTES` (64 KiB) of UTF-8, a longer one cut
with a marker the model can see (``[canarykit: result truncated: ...]``, ``data`` then None);
error messages quote at most a few hundred characters of any value.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from ..store.jsonio import canonical_json
from ..types import ToolDef, ToolResult
from . import database, files, mathtools, search, weather
from ._common import MAX_RESULT_BYTES, TODAY, ToolError, cap_result, clip_message
from ._worker import CALL_TIME_LIMIT_S

if TYPE_CHECKING:
    import polars as pl

__all__ = [
    "CALL_TIME_LIMIT_S", "MAX_RESULT_BYTES", "REAL_TOOLS", "SERVERS", "TODAY", "ToolError", "cap_result", "execute",
    "execute_here", "get_tool",
    "mcp_definitions", "tool_names", "tool_table",
]


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


_CITY = {"type": "string", "minLength": 1, "maxLength": 100,
         "description": "City name, e.g. \"Paris\" or \"Mumbai\" (optionally \"City, Country\")."}
_MAX_RESULTS = {"type": "integer", "minimum": 1, "maximum": 10, "default": 5,
                "description": "Maximum number of results to return (1-10, default 5)."}

_DEFINITIONS: Final[tuple[ToolDef, ...]] = (
    ToolDef(
        "get_weather",
        "Get the current weather for a city: temperature, feels-like temperature, conditions, "
        "humidity, wind speed and direction, pressure, visibility and UV index. Units are metric "
        "(°C, km/h) by default; pass units=\"imperial\" for °F and mph.",
        _schema({"city": _CITY,
                 "units": {"type": "string", "enum": ["metric", "imperial"], "default": "metric",
                           "description": "Unit system: \"metric\" (°C, km/h) or \"imperial\" (°F, mph)."}},
                ["city"]),
        "weather",
    ),
    ToolDef(
        "get_forecast",
        "Get a daily weather forecast for a city for the next 1-7 days, starting today: daily high "
        "and low temperature (°C), conditions, chance and amount of precipitation, humidity and wind.",
        _schema({"city": _CITY,
                 "days": {"type": "integer", "minimum": 1, "maximum": 7,
                          "description": "Number of days to forecast, 1-7 (day 1 is today)."}},
                ["city", "days"]),
        "weather",
    ),
    ToolDef(
        "get_air_quality",
        "Get the current air quality for a city: US EPA air quality index (AQI) and category, the "
        "dominant pollutant, concentrations of PM2.5, PM10, O3, NO2, SO2 and CO, and health advice.",
        _schema({"city": _CITY}, ["city"]),
        "weather",
    ),
    ToolDef(
        "calculate",
        "Evaluate an arithmetic expression and return the numeric result. Supports + - * / // % ** "
        "and parentheses, unary minus, the constants pi and e, and the functions sqrt, abs, round, "
        "min, max, floor, ceil, exp, log, log10, log2, sin, cos, tan and pow. Example: "
        "\"(1250 * 1.18) - 42.5\".",
        _schema({"expression": {"type": "string", "minLength": 1, "maxLength": 500,
                                "description": "The arithmetic expression to evaluate."}},
                ["expression"]),
        "math",
    ),
    ToolDef(
        "convert_units",
        "Convert a value between units of the same kind: length (m, km, cm, mm, mi, yd, ft, in, "
        "nmi), mass (kg, g, mg, t, lb, oz, st), temperature (C, F, K), volume (l, ml, m3, gal, qt, "
        "pt, cup, fl_oz, tbsp, tsp, imp_gal), speed (m/s, km/h, mph, knot, ft/s), area (m2, km2, "
        "cm2, ha, acre, ft2, mi2, in2, yd2), time (s, ms, min, h, day, week, year) and data (bit, "
        "B, kB, MB, GB, TB, KiB, MiB, GiB, TiB). Full unit names such as \"miles\" also work.",
        _schema({"value": {"type": "number", "description": "The quantity to convert."},
                 "from_unit": {"type": "string", "minLength": 1, "maxLength": 40,
                               "description": "Unit of the given value, e.g. \"mi\"."},
                 "to_unit": {"type": "string", "minLength": 1, "maxLength": 40,
                             "description": "Unit to convert to, e.g. \"km\"."}},
                ["value", "from_unit", "to_unit"]),
        "math",
    ),
    ToolDef(
        "compute_statistics",
        "Compute descriptive statistics for a list of numbers: count, sum, mean, median, min, max, "
        "range, standard deviation (n-1) and population standard deviation.",
        _schema({"values": {"type": "array", "items": {"type": "number"}, "minItems": 1,
                            "maxItems": 10000, "description": "The numbers to summarise."}},
                ["values"]),
        "math",
    ),
    ToolDef(
        "read_file",
        "Read a text file from the workspace and return its contents with size, modification time "
        "and MIME type. Paths are relative to the workspace root, e.g. \"notes.txt\" or "
        "\"/reports/q3_sales.csv\".",
        _schema({"path": {"type": "string", "minLength": 1, "maxLength": 1024,
                          "description": "Path of the file inside the workspace."}},
                ["path"]),
        "file",
    ),
    ToolDef(
        "list_files",
        "List the files and subdirectories of a workspace directory (non-recursive), with file "
        "sizes and modification times. Defaults to the workspace root \"/\".",
        _schema({"directory": {"type": "string", "minLength": 1, "maxLength": 1024, "default": "/",
                               "description": "Directory to list, e.g. \"/reports\" (default \"/\")."}},
                []),
        "file",
    ),
    ToolDef(
        "web_search",
        "Search the web and return ranked results with title, snippet, source, URL and publication "
        "date. Good for facts and figures such as exchange rates, prices, populations and reference "
        "data.",
        _schema({"query": {"type": "string", "minLength": 1, "maxLength": 500,
                           "description": "The search query."},
                 "max_results": _MAX_RESULTS},
                ["query"]),
        "search",
    ),
    ToolDef(
        "news_search",
        "Search recent news articles and return ranked results with headline, snippet, publisher, "
        "URL and publication date. Good for company earnings, economic and world events.",
        _schema({"query": {"type": "string", "minLength": 1, "maxLength": 500,
                           "description": "The news search query."},
                 "max_results": _MAX_RESULTS},
                ["query"]),
        "search",
    ),
    ToolDef(
        "query_database",
        "Run a read-only SQL (SQLite dialect) SELECT query against the company database (tables: "
        "customers, products, orders, order_items, employees) and return columns and rows. At most "
        "200 rows are returned; writes are refused.",
        _schema({"sql": {"type": "string", "minLength": 1, "maxLength": 5000,
                         "description": "A single SELECT (or WITH ... SELECT) statement."}},
                ["sql"]),
        "database",
    ),
    ToolDef(
        "describe_table",
        "Describe a table of the company database: its columns with types, primary and foreign "
        "keys, and the number of rows.",
        _schema({"table": {"type": "string", "minLength": 1, "maxLength": 128,
                           "description": "Table name, e.g. \"orders\"."}},
                ["table"]),
        "database",
    ),
)

#: MCP titles, shown by clients next to (or instead of) the name.
_TITLES: Final[dict[str, str]] = {
    "get_weather": "Current weather",
    "get_forecast": "Weather forecast",
    "get_air_quality": "Air quality",
    "calculate": "Calculator",
    "convert_units": "Unit converter",
    "compute_statistics": "Descriptive statistics",
    "read_file": "Read file",
    "list_files": "List files",
    "web_search": "Web search",
    "news_search": "News search",
    "query_database": "Query database",
    "describe_table": "Describe table",
}

#: MCP tool annotations per server. Every tool is read-only, non-destructive and idempotent;
#: weather and search reach the outside world (``openWorldHint``), the others a closed one.
#: The canary generator reads these hints (which canary types fit a tool).
_ANNOTATIONS: Final[dict[str, dict[str, bool]]] = {
    server: {
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": server in ("weather", "search"),
    }
    for server in ("weather", "math", "file", "search", "database")
}

REAL_TOOLS: Final[tuple[ToolDef, ...]] = tuple(
    replace(t, title=_TITLES[t.name], annotations=dict(_ANNOTATIONS[t.server or ""]))
    for t in _DEFINITIONS
)

_BY_NAME: Final[dict[str, ToolDef]] = {t.name: t for t in REAL_TOOLS}

SERVERS: Final[dict[str, tuple[str, ...]]] = {
    server: tuple(t.name for t in REAL_TOOLS if t.server == server)
    for server in ("weather", "math", "file", "search", "database")
}

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

_VALIDATORS: Final[dict[str, Draft202012Validator]] = {
    t.name: Draft202012Validator(t.input_schema) for t in REAL_TOOLS
}
for _t in REAL_TOOLS:
    Draft202012Validator.check_schema(_t.input_schema)


def tool_names() -> tuple[str, ...]:
    return tuple(_BY_NAME)


def get_tool(name: str) -> ToolDef:
    """The definition of real tool ``name`` (``KeyError`` if there is none)."""
    return _BY_NAME[name]


def _error(message: str) -> ToolResult:
    return ToolResult(content=json.dumps({"error": clip_message(message)}, ensure_ascii=False, sort_keys=True), is_error=True)


def validation_error(name: str, args: Any) -> str | None:
    """Why ``args`` is not a valid argument object for tool ``name`` (``None`` when it is)."""
    if not isinstance(args, dict):
        return f"arguments for {name} must be a JSON object, got {type(args).__name__}"
    err = best_match(_VALIDATORS[name].iter_errors(args))
    if err is None:
        return None
    where = "/".join(str(p) for p in err.absolute_path)
    return f"invalid arguments for {name}: {err.message}" + (f" (at {where})" if where else "")


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
        return _error(f"unknown tool {clip_message(repr(name), 200)}; available tools: {', '.join(_BY_NAME)}")
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


def mcp_definitions() -> list[dict[str, Any]]:
    """The tool list of every real tool: its MCP definition (``name``, ``title``,
    ``description``, ``inputSchema``, ``annotations``) and its ``server``."""
    return [t.to_tool_list_entry() for t in REAL_TOOLS]


def tool_table() -> pl.DataFrame:
    """One row per real tool: server, name, description, input_schema (canonical JSON)."""
    import polars as pl

    from ..store.schemas import ToolsTable, validate

    df = pl.DataFrame(
        {
            "server": [t.server or "" for t in REAL_TOOLS],
            "name": [t.name for t in REAL_TOOLS],
            "description": [t.description for t in REAL_TOOLS],
            "input_schema": [canonical_json(t.input_schema) for t in REAL_TOOLS],
        },
        schema={"server": pl.String, "name": pl.String, "description": pl.String, "input_schema": pl.String},
    )
    return validate(df, ToolsTable, "tools")
