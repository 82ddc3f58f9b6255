"""The 12 real tools as a model sees them: names, descriptions, JSON Schemas, MCP titles and
annotations, and the server each lives on (the implementations: :mod:`.weather`,
:mod:`.mathtools`, :mod:`.files`, :mod:`.search`, :mod:`.database`)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

from ..store.jsonio import canonical_json
from ..types import ToolDef

if TYPE_CHECKING:
    import polars as pl


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

def tool_names() -> tuple[str, ...]:
    return tuple(_BY_NAME)


def get_tool(name: str) -> ToolDef:
    """The definition of real tool ``name`` (``KeyError`` if there is none)."""
    return _BY_NAME[name]


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
