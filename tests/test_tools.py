"""The tool environment: correctness, determinism, safety and the never-raise contract."""

from __future__ import annotations

import json
import time
from typing import Any

import jsonschema
import pytest

from canarykit.tools import REAL_TOOLS, SERVERS, execute, get_tool, mcp_definitions, tool_table


def ok(name: str, args: dict[str, Any]) -> Any:
    r = execute(name, args)
    assert not r.is_error, r.content
    assert json.loads(r.content) == r.data
    return r.data


def err(name: str, args: Any) -> str:
    r = execute(name, args)
    assert r.is_error, r.content
    payload = json.loads(r.content)
    assert set(payload) == {"error"} and payload["error"]
    return str(payload["error"])


# ------------------------------------------------------------------ definitions


def test_twelve_tools_on_five_servers_with_strict_schemas() -> None:
    assert len(REAL_TOOLS) == 12
    assert {n for names in SERVERS.values() for n in names} == {t.name for t in REAL_TOOLS}
    assert set(SERVERS) == {"weather", "math", "file", "search", "database"}
    for t in REAL_TOOLS:
        jsonschema.Draft202012Validator.check_schema(t.input_schema)
        s = t.input_schema
        assert s["type"] == "object" and s["additionalProperties"] is False
        assert set(s["required"]) <= set(s["properties"])
        assert len(t.description) > 60
        assert get_tool(t.name) is t
    with pytest.raises(KeyError):
        get_tool("get_weather_v2")
    assert [d["name"] for d in mcp_definitions()] == [t.name for t in REAL_TOOLS]
    df = tool_table()
    assert df.height == 12 and df.columns == ["server", "name", "description", "input_schema"]
    assert json.loads(df.filter(df["name"] == "get_forecast")["input_schema"][0])["required"] == ["city", "days"]


# ------------------------------------------------------------------ determinism & contract


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("get_weather", {"city": "Mumbai"}),
    ("get_weather", {"city": "new delhi", "units": "imperial"}),
    ("get_forecast", {"city": "Tokyo", "days": 7}),
    ("get_air_quality", {"city": "Delhi"}),
    ("calculate", {"expression": "(1250 * 1.18) - 42.5"}),
    ("convert_units", {"value": 5, "from_unit": "mi", "to_unit": "km"}),
    ("compute_statistics", {"values": [3, 1, 4, 1, 5, 9, 2, 6]}),
    ("read_file", {"path": "notes.txt"}),
    ("list_files", {}),
    ("web_search", {"query": "USD to JPY exchange rate"}),
    ("news_search", {"query": "NVIDIA earnings", "max_results": 3}),
    ("query_database", {"sql": "SELECT * FROM customers ORDER BY customer_id LIMIT 5"}),
    ("describe_table", {"table": "orders"}),
]


@pytest.mark.parametrize(("name", "args"), CALLS)
def test_same_args_give_byte_identical_content(name: str, args: dict[str, Any]) -> None:
    a, b = execute(name, dict(args)), execute(name, json.loads(json.dumps(args)))
    assert not a.is_error and a.content == b.content


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("get_weather", {"city": 42}),
        ("get_weather", {}),
        ("get_weather", {"city": "Paris", "api_key": "x"}),
        ("get_weather", {"city": "Paris", "units": "kelvin"}),
        ("get_forecast", {"city": "Paris", "days": 0}),
        ("get_forecast", {"city": "Paris", "days": "5"}),
        ("get_forecast", {"city": "Paris"}),
        ("convert_units", {"value": "5", "from_unit": "mi", "to_unit": "km"}),
        ("compute_statistics", {"values": []}),
        ("compute_statistics", {"values": [1, True]}),
        ("read_file", {"path": ""}),
        ("web_search", {"query": "x", "max_results": 50}),
        ("query_database", {"sql": 1}),
        ("calculate", None),
        ("calculate", ["1+1"]),
        ("calculate", "1+1"),
        ("no_such_tool", {}),
    ],
)
def test_bad_arguments_are_tool_errors_not_exceptions(name: str, args: Any) -> None:
    err(name, args)


def test_unknown_tool_and_unknown_city_errors_name_them() -> None:
    assert "frobnicate" in err("frobnicate", {})
    assert "Atlantis" in err("get_weather", {"city": "Atlantis"})
    assert "Atlantis" in err("get_air_quality", {"city": "Atlantis"})


# ------------------------------------------------------------------ weather


def test_weather_is_plausible_for_the_season() -> None:
    cities = ("Mumbai", "Delhi", "Paris", "Tokyo", "New York", "London", "Sydney", "Moscow", "Singapore")
    temps = {c: ok("get_weather", {"city": c})["temperature"] for c in cities}
    # Late November: tropical cities are warm, Moscow is near freezing, Sydney is in late spring.
    assert temps["Singapore"] > 24 and temps["Mumbai"] > 24
    assert temps["Moscow"] < 8
    assert temps["Sydney"] > temps["London"]
    for c in cities:
        assert -40 < temps[c] < 50
    w = ok("get_weather", {"city": "paris, france"})
    assert w["city"] == "Paris" and w["observed_at"].startswith("2026-11-30")
    imperial = ok("get_weather", {"city": "Paris", "units": "imperial"})
    assert imperial["temperature_unit"] == "°F"
    assert abs(imperial["temperature"] - (w["temperature"] * 9 / 5 + 32)) < 0.2
    f = ok("get_forecast", {"city": "Mumbai", "days": 5})
    assert [d["date"] for d in f["days"]] == ["2026-11-30", "2026-12-01", "2026-12-02", "2026-12-03", "2026-12-04"]
    assert all(d["low"] < d["high"] for d in f["days"])
    aq = ok("get_air_quality", {"city": "Delhi"})
    assert aq["aqi"] > ok("get_air_quality", {"city": "Reykjavik"})["aqi"]
    assert aq["category"] in {"Unhealthy", "Very Unhealthy", "Hazardous"}


# ------------------------------------------------------------------ math


@pytest.mark.parametrize(
    ("value", "src", "dst", "expected"),
    [
        (5, "mi", "km", 8.04672),
        (100, "C", "F", 212),
        (32, "F", "C", 0),
        (350, "F", "C", 176.666666667),
        (0, "C", "K", 273.15),
        (-40, "fahrenheit", "celsius", -40),
        (300, "K", "F", 80.33),
        (1, "lb", "g", 453.59237),
        (72, "kg", "lb", 158.732828773),
        (2.5, "gal", "l", 9.46352946),
        (100, "km/h", "mph", 62.1371192237),
        (1, "acre", "m2", 4046.8564224),
        (1, "GiB", "MB", 1073.741824),
        (90, "min", "h", 1.5),
        (26.2, "miles", "kilometres", 42.1648128),
    ],
)
def test_convert_units_is_exact(value: float, src: str, dst: str, expected: float) -> None:
    assert ok("convert_units", {"value": value, "from_unit": src, "to_unit": dst})["result"] == pytest.approx(
        expected, abs=1e-9)


def test_convert_units_refuses_nonsense() -> None:
    assert "cannot convert" in err("convert_units", {"value": 1, "from_unit": "kg", "to_unit": "km"})
    assert "unknown unit" in err("convert_units", {"value": 1, "from_unit": "furlong", "to_unit": "km"})
    assert "absolute zero" in err("convert_units", {"value": -500, "from_unit": "C", "to_unit": "K"})


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("2 + 3 * 4", 14),
        ("(2 + 3) * 4", 20),
        ("-3 ** 2", -9),
        ("2 ** 10", 1024),
        ("17 % 5", 2),
        ("10 / 4", 2.5),
        ("sqrt(7921) + 12**3", 1817),
        ("round(2 / 3, 3)", 0.667),
        ("abs(-4.5) + max(1, 7, 3) - min(2, 8)", 9.5),
        ("0.1 + 0.2", 0.3),
        ("1,250.50 * 2", 2501),
    ],
)
def test_calculate(expression: str, expected: float) -> None:
    assert ok("calculate", {"expression": expression})["result"] == pytest.approx(expected)


@pytest.mark.parametrize(
    "expression",
    ["__import__('os')", "__import__('os').system('true')", "open('/etc/passwd')", "x + 1",
     "(1).__class__", "[1, 2]", "'a' * 3", "lambda: 1", "1 / 0", "2 ^ 3", "sqrt(-1)", "", "1 +"],
)
def test_calculate_refuses_code_and_bad_math(expression: str) -> None:
    err("calculate", {"expression": expression})


@pytest.mark.parametrize("expression", ["9 ** 9 ** 9", "10 ** 100000", "2 ** 2 ** 64", "(10 ** 90) * (10 ** 90)",
                                        "pow(99999, 99999)", "+".join(["9 ** 9"] * 80)])
def test_calculate_huge_numbers_error_quickly(expression: str) -> None:
    """Refused by a guard before the arithmetic runs (how long it takes: benchmarks, not tests)."""
    message = err("calculate", {"expression": expression})
    assert any(w in message for w in ("too large", "limit", "invalid arguments", "exceeds")), message


def test_compute_statistics() -> None:
    s = ok("compute_statistics", {"values": [2, 4, 4, 4, 5, 5, 7, 9]})
    assert (s["count"], s["sum"], s["mean"], s["median"], s["min"], s["max"]) == (8, 40, 5, 4.5, 2, 9)
    assert s["population_stdev"] == pytest.approx(2.0)
    assert s["stdev"] == pytest.approx(2.138089935)
    assert ok("compute_statistics", {"values": [3.5]})["stdev"] is None


# ------------------------------------------------------------------ files


def test_files_read_and_list() -> None:
    root = ok("list_files", {})
    names = {e["name"] for e in root["entries"]}
    assert {"notes.txt", "reports", "invoices", "config"} <= names
    reports = ok("list_files", {"directory": "reports"})
    assert "q3_sales.csv" in {e["name"] for e in reports["entries"]}
    csv = ok("read_file", {"path": "/reports/q3_sales.csv"})["content"]
    assert csv.splitlines()[0] == "month,region,units_sold,revenue_usd"
    assert ok("read_file", {"path": "reports/../notes.txt"})["path"] == "/notes.txt"
    settings = json.loads(ok("read_file", {"path": "config/settings.json"})["content"])
    assert settings["database"]["max_connections"] == 120


def test_invoices_add_up() -> None:
    import re
    from decimal import Decimal

    for entry in ok("list_files", {"directory": "/invoices"})["entries"]:
        text = ok("read_file", {"path": entry["path"]})["content"]
        amounts = [Decimal(a.replace(",", "")) for a in re.findall(r"\$([\d,]+\.\d\d)\s*$", text, re.M)]
        subtotal = Decimal(re.search(r"Subtotal: \$([\d,.]+)", text).group(1).replace(",", ""))  # type: ignore[union-attr]
        tax = Decimal(re.search(r"\): \$([\d,.]+)", text).group(1).replace(",", ""))  # type: ignore[union-attr]
        total = Decimal(re.search(r"TOTAL DUE: \$([\d,.]+)", text).group(1).replace(",", ""))  # type: ignore[union-attr]
        line_items = amounts[:-3]
        assert sum(line_items) == subtotal and subtotal + tax == total


@pytest.mark.parametrize("path", ["../etc/passwd", "/../../etc/passwd", "reports/../../secret", "..",
                                  "C:\\Windows\\win.ini", "~/.ssh/id_rsa", "/etc/passwd", "notes.txt\x00.png"])
def test_path_escape_and_outside_paths_are_refused(path: str) -> None:
    err("read_file", {"path": path})


def test_directory_and_file_confusion_are_errors() -> None:
    assert "directory" in err("read_file", {"path": "/reports"})
    assert "not a directory" in err("list_files", {"directory": "notes.txt"})
    err("list_files", {"directory": "../"})


# ------------------------------------------------------------------ search


def test_search_ranks_relevant_dated_sourced_snippets() -> None:
    r = ok("web_search", {"query": "USD to JPY exchange rate"})
    top = r["results"][0]
    assert "151.84" in top["snippet"] and top["published"].startswith("2026") and top["source"]
    n = ok("news_search", {"query": "NVIDIA quarterly earnings", "max_results": 2})
    assert len(n["results"]) == 2 and "71.3" in n["results"][0]["snippet"]
    assert ok("news_search", {"query": "latest climate summit"})["results"][0]["title"].startswith("COP31")
    empty = ok("web_search", {"query": "xylophone quokka"})
    assert empty["results"] == [] and empty["total_results"] == 0


# ------------------------------------------------------------------ database


def q(sql: str) -> list[list[Any]]:
    return ok("query_database", {"sql": sql})["rows"]


def test_database_rows_are_internally_consistent() -> None:
    assert q("SELECT COUNT(*) FROM orders o WHERE ABS(o.total - (SELECT SUM(i.line_total) FROM order_items i "
             "WHERE i.order_id = o.order_id)) > 0.005") == [[0]]
    assert q("SELECT COUNT(*) FROM order_items WHERE ABS(line_total - quantity * unit_price) > 0.005") == [[0]]
    assert q("SELECT COUNT(*) FROM orders WHERE customer_id NOT IN (SELECT customer_id FROM customers)") == [[0]]
    assert q("SELECT COUNT(*) FROM order_items WHERE product_id NOT IN (SELECT product_id FROM products)") == [[0]]
    assert q("SELECT COUNT(*) FROM orders WHERE order_id NOT IN (SELECT order_id FROM order_items)") == [[0]]
    assert q("SELECT COUNT(*) FROM employees WHERE manager_id IS NOT NULL AND manager_id NOT IN "
             "(SELECT employee_id FROM employees)") == [[0]]
    assert q("SELECT MAX(order_date) <= '2026-11-30' FROM orders") == [[1]]


def test_database_caps_rows_and_describes_tables() -> None:
    r = ok("query_database", {"sql": "SELECT * FROM order_items"})
    assert r["row_count"] == 200 and r["truncated"] is True
    d = ok("describe_table", {"table": "orders"})
    assert d["row_count"] == q("SELECT COUNT(*) FROM orders")[0][0]
    assert {c["name"] for c in d["columns"]} == {"order_id", "customer_id", "order_date", "status", "total"}
    assert "customers" in err("describe_table", {"table": "invoices"})


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO customers (name) VALUES ('x')",
        "UPDATE orders SET total = 0",
        "DELETE FROM orders",
        "DROP TABLE orders",
        "SELECT 1; DROP TABLE orders",
        "SELECT 1; DROP TABLE orders;",
        "ATTACH DATABASE '/tmp/canary.db' AS x",
        "PRAGMA query_only = OFF",
        "CREATE TABLE t (x)",
        "WITH x AS (SELECT 1) DELETE FROM orders",
        "REPLACE INTO products (product_id) VALUES (1)",
        "/* hi */ DROP TABLE orders",
        "VACUUM",
    ],
)
def test_writes_are_refused_and_data_is_intact(sql: str) -> None:
    before = q("SELECT COUNT(*), ROUND(SUM(total), 2) FROM orders")
    err("query_database", {"sql": sql})
    assert q("SELECT COUNT(*), ROUND(SUM(total), 2) FROM orders") == before


@pytest.mark.parametrize("sql", ["SELEC * FROM orders", "SELECT * FROM nope", "SELECT random()",
                                 "SELECT date('now')", ""])
def test_bad_or_nondeterministic_sql_is_a_tool_error(sql: str) -> None:
    err("query_database", {"sql": sql})


def test_runaway_query_is_stopped() -> None:
    message = err("query_database", {"sql": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                                            "SELECT COUNT(*) FROM c"})
    assert "execution limit" in message


def test_database_works_from_other_threads() -> None:
    from concurrent.futures import ThreadPoolExecutor

    sql = {"sql": "SELECT COUNT(*), ROUND(SUM(total), 2) FROM orders"}
    with ThreadPoolExecutor(4) as pool:
        contents = set(pool.map(lambda _: execute("query_database", sql).content, range(16)))
    assert len(contents) == 1


def test_execute_is_fast() -> None:
    start = time.perf_counter()
    for _ in range(200):
        for name, args in CALLS:
            execute(name, args)
    per_call = (time.perf_counter() - start) / (200 * len(CALLS))
    assert per_call < 0.005
