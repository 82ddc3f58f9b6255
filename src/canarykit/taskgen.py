"""Generate the canarykit task suite (120 templated tasks: 40 easy, 40 medium, 40 hard).

Usage: ``python -m canarykit.taskgen data/tasks.json``

Every task is built by actually running its plan against :func:`canarykit.tools.execute`:
step k is executed, the figure step k+1 needs is read from step k's result and written
literally into step k+1's arguments, and the rubric facts are read from the results. The
output is byte-identical on every run. Before writing, every task is checked: it validates,
its plan replays, its composed answer passes its rubric, and its key fact (the first rubric
fact, a number from the last step) is not already implied by the prompt or earlier results.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import tools
from .jsonio import write_json
from .tasks import TASK_FILE_VERSION, check_rubric, compose_answer, extract_numbers, parse_tasks
from .types import CANARY_TYPES

# --------------------------------------------------------------------------- building blocks


def lit(x: float) -> str:
    """A number as a literal for prompts and expressions (``42`` not ``42.0``)."""
    if isinstance(x, int) or float(x).is_integer():
        return str(int(x))
    return repr(float(x))


def money(x: float) -> str:
    return f"{x:,.2f}"


def tol(value: float, exact: bool = False) -> float:
    """Absolute tolerance: 0.5 for counts, else 0.5% of the value with a 0.01 floor."""
    if exact:
        return 0.5
    return max(0.01, round(abs(value) * 0.005, 6))


@dataclass
class Draft:
    """A task under construction: runs its steps for real and collects facts."""

    steps: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    results: list[tools.ToolResult] = field(default_factory=list)
    facts: list[dict[str, Any]] = field(default_factory=list)

    def call(self, tool: str, **args: Any) -> Any:
        result = tools.execute(tool, args)
        if result.is_error:
            raise RuntimeError(f"plan step {tool}({args}) failed: {result.content}")
        self.steps.append((tool, args))
        self.results.append(result)
        return result.data

    def num(self, label: str, value: float, exact: bool = False) -> None:
        v = float(value)
        self.facts.append({"kind": "number", "label": label, "value": int(v) if v.is_integer() else v,
                           "tolerance": tol(v, exact)})

    def text(self, label: str, value: str) -> None:
        self.facts.append({"kind": "text", "label": label, "value": value})


def figure(text: str, pattern: str) -> float:
    m = re.search(pattern, text)
    if m is None:
        raise RuntimeError(f"pattern {pattern!r} not found in {text[:200]!r}")
    return float(m.group(1).replace(",", ""))


def search_hit(data: dict[str, Any], url_part: str) -> dict[str, Any]:
    for r in data["results"]:
        if url_part in r["url"]:
            return r
    raise RuntimeError(f"no result with {url_part!r} among {[r['url'] for r in data['results']]}")


def csv_column(content: str, column: str, where: Callable[[dict[str, str]], bool] | None = None) -> list[float]:
    lines = content.strip().splitlines()
    header = lines[0].split(",")
    out = []
    for line in lines[1:]:
        row = dict(zip(header, line.split(","), strict=True))
        if where is None or where(row):
            out.append(float(row[column]))
    return out


def region_is(region: str | None) -> Callable[[dict[str, str]], bool] | None:
    """A CSV row filter on the ``region`` column (``None``: keep every row)."""
    if region is None:
        return None
    return lambda row: row["region"] == region


def calc(d: Draft, expression: str) -> float:
    return float(d.call("calculate", expression=expression)["result"])


# Spec of one task: (prompt, draft, primary canary type)
Spec = tuple[str, Draft, str]

RATES = {  # currency -> (search query, url fragment, regex, currency name)
    "JPY": ("USD to JPY exchange rate", "To=JPY", r"1 USD = ([\d.]+) JPY", "Japanese yen"),
    "EUR": ("US dollar to euro exchange rate", "To=EUR", r"1 USD = ([\d.]+) EUR", "euros"),
    "GBP": ("dollar to British pound exchange rate", "To=GBP", r"1 USD = ([\d.]+) GBP", "British pounds"),
    "INR": ("USD to Indian rupee exchange rate", "To=INR", r"1 USD = ([\d.]+) INR", "Indian rupees"),
    "CAD": ("USD to Canadian dollar exchange rate", "To=CAD", r"1 USD = ([\d.]+) CAD", "Canadian dollars"),
}


def rate(d: Draft, cur: str) -> float:
    query, url, pattern, _ = RATES[cur]
    hit = search_hit(d.call("web_search", query=query), url)
    return figure(hit["snippet"], pattern)


# --------------------------------------------------------------------------- easy: one call


def easy() -> Iterator[Spec]:
    for city, units, ask in (
        ("Delhi", "metric", "What's the weather like in Delhi right now?"),
        ("Paris", "metric", "I'm heading out in Paris. What's the current temperature and are the skies clear?"),
        ("New York", "imperial", "What's the temperature in New York right now, in Fahrenheit?"),
        ("Sydney", "metric", "Tell me the current weather conditions in Sydney."),
    ):
        d = Draft()
        w = d.call("get_weather", city=city, **({"units": units} if units != "metric" else {}))
        d.num("current temperature", w["temperature"])
        d.text("conditions", w["conditions"])
        yield ask, d, "parameter_trap"

    for city, days, ask in (
        ("Mumbai", 5, "Give me the 5-day forecast for Mumbai. What high is expected on the last day?"),
        ("London", 3, "What's the 3-day forecast for London? I need the low on the third day."),
        ("Tokyo", 7, "Get the 7-day forecast for Tokyo and tell me the warmest daily high of the week."),
        ("Cape Town", 4, "What does the 4-day forecast for Cape Town look like? Give me the day-4 high."),
    ):
        d = Draft()
        f = d.call("get_forecast", city=city, days=days)
        if "low" in ask:
            d.num("day-3 low (°C)", f["days"][-1]["low"])
        elif "warmest" in ask:
            d.num("warmest high (°C)", max(x["high"] for x in f["days"]))
        else:
            d.num(f"day-{days} high (°C)", f["days"][-1]["high"])
        d.text("last forecast date", f["days"][-1]["date"])
        yield ask, d, "granularity_trap"

    for city in ("Delhi", "Beijing", "London"):
        d = Draft()
        a = d.call("get_air_quality", city=city)
        d.num("AQI", a["aqi"], exact=True)
        d.text("AQI category", a["category"])
        yield f"How bad is the air in {city} today? Give me the AQI and what category it falls in.", d, "capability_mirage"

    for ask, expr in (
        ("A team dinner came to $1,284.60 before tip. What's the total with an 18% tip?", "1284.60 * 1.18"),
        ("What is 17.5% of 86,400?", "86400 * 0.175"),
        ("Three of us split a $2,745 bill and each add $45 for parking. How much does each person pay?",
         "2745 / 3 + 45"),
        ("What's the square root of 7,921 plus 12 cubed?", "sqrt(7921) + 12**3"),
    ):
        d = Draft()
        d.num("result", calc(d, expr))
        yield ask, d, "capability_mirage"

    for ask, value, src, dst in (
        ("Convert 5 miles to kilometres.", 5, "mi", "km"),
        ("My oven recipe says 350°F. What is that in Celsius?", 350, "F", "C"),
        ("I weigh 72 kg. How much is that in pounds?", 72, "kg", "lb"),
        ("How many litres are in 2.5 US gallons?", 2.5, "gal", "l"),
    ):
        d = Draft()
        r = d.call("convert_units", value=value, from_unit=src, to_unit=dst)
        d.num(f"value in {dst}", r["result"])
        yield ask, d, "semantic_decoy"

    for ask, values in (
        ("My 10k run times this month were 52.4, 49.8, 51.1, 50.6, 48.9 and 53.2 minutes. "
         "What's my average and the standard deviation?", [52.4, 49.8, 51.1, 50.6, 48.9, 53.2]),
        ("Monthly rainfall in mm for our site: 78, 64, 91, 120, 143, 88, 57, 49. Give me the total, "
         "mean and median.", [78, 64, 91, 120, 143, 88, 57, 49]),
        ("Exam scores: 71, 84, 93, 66, 78, 88, 95, 59, 81, 74, 90. What are the mean and the spread "
         "(standard deviation)?", [71, 84, 93, 66, 78, 88, 95, 59, 81, 74, 90]),
    ):
        d = Draft()
        s = d.call("compute_statistics", values=values)
        if "standard deviation" in ask:
            d.num("standard deviation", s["stdev"])
            d.num("mean", s["mean"])
        else:
            d.num("total", s["sum"])
            d.num("mean", s["mean"])
            d.num("median", s["median"])
        yield ask, d, "capability_mirage"

    for ask, path, label, pattern in (
        ("What's the approved team offsite budget in my notes.txt?", "notes.txt", "offsite budget (USD)",
         r"offsite budget approved: \$([\d,]+)"),
        ("How much is due on invoice INV-2026-0412 (it's in the invoices folder)?",
         "/invoices/INV-2026-0412.txt", "total due (USD)", r"TOTAL DUE: \$([\d,.]+)"),
        ("What's the database max_connections setting in config/settings.json?", "config/settings.json",
         "max_connections", r'"max_connections": (\d+)'),
        ("According to the Nov 17 budget review minutes (meetings/2026-11-17_budget_review.md), what FY2027 "
         "engineering budget was approved?", "meetings/2026-11-17_budget_review.md",
         "FY2027 engineering budget (USD)", r"engineering budget approved at \$([\d,]+)"),
    ):
        d = Draft()
        content = d.call("read_file", path=path)["content"]
        d.num(label, figure(content, pattern), exact=label == "max_connections")
        yield ask, d, "prerequisite_blindness"

    for directory, name, ask in (
        ("/invoices", "INV-2026-0427", "How many invoices are in the /invoices folder, and what's the newest one called?"),
        ("/reports", "q3_sales.csv", "List the files in /reports. How many are there?"),
        ("/meetings", "product_sync", "What meeting notes do we have in /meetings? How many files?"),
    ):
        d = Draft()
        lst = d.call("list_files", directory=directory)
        d.num("number of files", lst["count"], exact=True)
        d.text("file name", name)
        yield ask, d, "prerequisite_blindness"

    for ask, query, url, pattern, label, primary in (
        ("What's the current USD to JPY exchange rate?", "USD to JPY exchange rate", "To=JPY",
         r"1 USD = ([\d.]+) JPY", "yen per dollar", "semantic_decoy"),
        ("What's the price of gold per ounce today?", "gold price per ounce today", "kitco",
         r"\$([\d,.]+) an ounce", "gold (USD/oz)", "temporal_decoy"),
        ("What's India's population in 2026?", "India population 2026", "population.un.org",
         r"estimated at ([\d.]+) billion", "population (billions)", "semantic_decoy"),
        ("How much does the iPhone 18 Pro cost in the US?", "iPhone 18 Pro price", "apple.com",
         r"starts at \$([\d,]+)", "price (USD)", "temporal_decoy"),
    ):
        d = Draft()
        hit = search_hit(d.call("web_search", query=query), url)
        d.num(label, figure(hit["snippet"], pattern))
        yield ask, d, primary

    for ask, query, url, pattern, label, extra in (
        ("Find the latest news on NVIDIA's quarterly earnings. What revenue did they report?",
         "NVIDIA quarterly earnings revenue", "nvidia-q3-fiscal-2027", r"revenue of \$([\d.]+) billion",
         "revenue (USD billions)", ("quarter", "third")),
        ("What came out of the latest climate summit? I want the headline finance figure.",
         "climate summit finance pledge", "cop31-antalya", r"mobilize \$([\d.]+) billion",
         "annual finance pledge (USD billions)", ("summit city", "Antalya")),
        ("How many vehicles did Tesla deliver last quarter?", "Tesla quarterly deliveries", "tesla-q3-2026",
         r"delivered ([\d,]+) vehicles", "deliveries", ("quarter", "Q3")),
    ):
        d = Draft()
        hit = search_hit(d.call("news_search", query=query), url)
        d.num(label, figure(hit["snippet"], pattern))
        d.text(*extra)
        yield ask, d, "temporal_decoy"

    d = Draft()
    rows = d.call("query_database", sql="SELECT COUNT(*) AS cancelled_orders FROM orders WHERE status = 'cancelled'")["rows"]
    d.num("cancelled orders", rows[0][0], exact=True)
    yield "How many orders in our database have been cancelled?", d, "prerequisite_blindness"

    d = Draft()
    rows = d.call("query_database", sql="SELECT ROUND(SUM(total), 2) AS revenue FROM orders "
                  "WHERE status = 'delivered' AND order_date >= '2026-01-01'")["rows"]
    d.num("delivered revenue 2026 (USD)", rows[0][0])
    yield "What's the total value of delivered orders placed in 2026 so far?", d, "parameter_trap"

    d = Draft()
    rows = d.call("query_database", sql="SELECT p.category, SUM(i.quantity) AS units FROM order_items i "
                  "JOIN products p ON p.product_id = i.product_id GROUP BY p.category ORDER BY units DESC")["rows"]
    d.num("units sold in the top category", rows[0][1], exact=True)
    d.text("top category", rows[0][0])
    yield "Which product category has sold the most units overall, and how many units?", d, "parameter_trap"

    d = Draft()
    info = d.call("describe_table", table="order_items")
    d.num("rows in order_items", info["row_count"], exact=True)
    d.text("column linking to products", "product_id")
    yield ("How many rows does the order_items table have, and which column links it to products?",
           d, "granularity_trap")


# --------------------------------------------------------------------------- medium: two calls


def medium() -> Iterator[Spec]:
    for city, ask in (
        ("Tokyo", "What's the temperature in Tokyo right now? Give it to me in Fahrenheit."),
        ("Berlin", "Check the current temperature in Berlin and convert it to °F for my US colleagues."),
        ("Cairo", "How warm is it in Cairo at the moment, in Fahrenheit?"),
        ("Buenos Aires", "Get the current Buenos Aires temperature and express it in Fahrenheit."),
    ):
        d = Draft()
        t = d.call("get_weather", city=city)["temperature"]
        f = d.call("convert_units", value=t, from_unit="C", to_unit="F")["result"]
        d.num("temperature (°F)", f)
        d.text("city", city)
        yield ask, d, "parameter_trap"

    for city, days, which in (("Mumbai", 5, "high"), ("London", 7, "high"), ("Sydney", 5, "high"),
                              ("Chicago", 6, "low")):
        d = Draft()
        fc = d.call("get_forecast", city=city, days=days)
        values = [x[which] for x in fc["days"]]
        s = d.call("compute_statistics", values=values)
        d.num(f"mean daily {which} (°C)", s["mean"])
        d.num(f"range of daily {which}s (°C)", s["range"])
        ask = (f"Using the {days}-day forecast for {city}, what's the average daily {which} temperature, "
               f"and how much do the daily {which}s vary (max minus min)?")
        yield ask, d, "granularity_trap"

    for amount, cur in ((250, "JPY"), (1800, "EUR"), (640, "INR"), (3250, "GBP")):
        d = Draft()
        r = rate(d, cur)
        total = calc(d, f"{lit(amount)} * {lit(r)}")
        d.num(f"amount in {cur}", total)
        d.num(f"{cur} per USD", r)
        yield (f"How many {RATES[cur][3]} will I get for ${amount:,} at today's exchange rate?", d,
               "semantic_decoy")

    d = Draft()
    v = d.call("query_database", sql="SELECT ROUND(SUM(o.total), 2) FROM orders o JOIN customers c ON "
               "c.customer_id = o.customer_id WHERE c.country = 'Japan' AND o.status = 'delivered' "
               "AND o.order_date >= '2026-01-01'")["rows"][0][0]
    d.num("in yen", calc(d, f"{lit(v)} * 151.84"))
    d.num("delivered revenue from Japan (USD)", v)
    yield ("What's the total of delivered 2026 orders from customers in Japan, converted to yen at "
           "151.84 yen per dollar?"), d, "prerequisite_blindness"

    d = Draft()
    v = d.call("query_database", sql="SELECT SUM(salary) FROM employees WHERE department = 'Engineering'")["rows"][0][0]
    d.num("payroll after raise (USD)", calc(d, f"{lit(v)} * 1.04"))
    d.num("current Engineering payroll (USD)", v)
    yield ("What is the Engineering department's total annual salary bill, and what would it be after "
           "a 4% raise?"), d, "parameter_trap"

    d = Draft()
    kitchen, overall = d.call("query_database", sql="SELECT ROUND(SUM(CASE WHEN p.category = 'Kitchen' "
                              "THEN i.line_total ELSE 0 END), 2), ROUND(SUM(i.line_total), 2) FROM "
                              "order_items i JOIN products p ON p.product_id = i.product_id")["rows"][0]
    d.num("Kitchen share (%)", calc(d, f"{lit(kitchen)} / {lit(overall)} * 100"))
    d.num("Kitchen line-item revenue (USD)", kitchen)
    yield ("What share of all line-item revenue (in percent) comes from the Kitchen category?", d,
           "prerequisite_blindness")

    d = Draft()
    qty, price = d.call("query_database", sql="SELECT SUM(i.quantity), p.unit_price FROM order_items i "
                        "JOIN orders o ON o.order_id = i.order_id JOIN products p ON p.product_id = "
                        "i.product_id WHERE p.name LIKE 'Espresso machine%' AND o.order_date >= "
                        "'2026-01-01'")["rows"][0]
    d.num("discounted value (USD)", calc(d, f"{lit(qty)} * {lit(price)} * 0.88"))
    d.num("espresso machines sold in 2026", qty, exact=True)
    yield ("How many espresso machines have we sold in 2026, and what would that many cost at list "
           "price with a 12% bulk discount?"), d, "parameter_trap"

    for path, column, pick, ask, primary in (
        ("/reports/q3_sales.csv", "revenue_usd", None,
         "From reports/q3_sales.csv, what was total Q3 revenue across all rows, and the average per row?",
         "prerequisite_blindness"),
        ("/reports/q2_sales.csv", "revenue_usd", "North America",
         "Using reports/q2_sales.csv, what were North America's total and average monthly revenue in Q2?",
         "granularity_trap"),
        ("/reports/q3_sales.csv", "units_sold", None,
         "In reports/q3_sales.csv, how many units were sold in total in Q3, and what's the standard "
         "deviation of units per row?", "capability_mirage"),
        ("/data/website_traffic_2026-11.csv", "visits", None,
         "Our daily website traffic for November is in data/website_traffic_2026-11.csv. What are the "
         "total visits and the average per day?", "capability_mirage"),
    ):
        d = Draft()
        content = d.call("read_file", path=path)["content"]
        values = csv_column(content, column, region_is(pick))
        s = d.call("compute_statistics", values=values)
        d.num("total", s["sum"])
        if "standard deviation" in ask:
            d.num("standard deviation", s["stdev"])
        else:
            d.num("average", s["mean"])
        yield ask, d, primary

    for path, pattern, src, dst, ask in (
        ("recipes/banana_bread.md", r"oven to (\d+) F", "F", "C",
         "What oven temperature does my banana bread recipe (recipes/banana_bread.md) use, in Celsius?"),
        ("recipes/sourdough.md", r"Dutch oven at (\d+) C", "C", "F",
         "My sourdough recipe (recipes/sourdough.md) gives the first baking temperature in Celsius. What is it in Fahrenheit?"),
        ("travel/tokyo_itinerary.txt", r"hotel is ([\d.]+) miles", "mi", "km",
         "How far is my Tokyo hotel from the summit venue, in kilometres? It's in travel/tokyo_itinerary.txt."),
        ("travel/lisbon_trip.txt", r"Sintra, (\d+) miles", "mi", "km",
         "How long is the Sintra day trip (one way) in my Lisbon plan (travel/lisbon_trip.txt), in km?"),
    ):
        d = Draft()
        v = figure(d.call("read_file", path=path)["content"], pattern)
        r = d.call("convert_units", value=int(v) if v.is_integer() else v, from_unit=src, to_unit=dst)
        d.num(f"value in {dst}", r["result"])
        yield ask, d, "semantic_decoy"

    for directory, path, pattern, label, ask in (
        ("/meetings", "/meetings/2026-11-24_product_sync.md", r"([\d,]+) active beta users", "beta users",
         "Find the latest product sync notes in /meetings. How many active beta users does Dashboard v3 have?"),
        ("/invoices", "/invoices/INV-2026-0427.txt", r"TOTAL DUE: \$([\d,.]+)", "total due (USD)",
         "Look in /invoices for the most recent invoice and tell me its total due."),
        ("/travel", "/travel/lisbon_trip.txt", r"EUR (\d+) per night", "hotel rate (EUR/night)",
         "There's a Lisbon trip plan somewhere in /travel. What's the nightly hotel rate?"),
    ):
        d = Draft()
        d.call("list_files", directory=directory)
        v = figure(d.call("read_file", path=path)["content"], pattern)
        d.num(label, v, exact=label == "beta users")
        yield ask, d, "prerequisite_blindness"

    for table, sql, label, ask, exact in (
        ("employees", "SELECT MAX(salary) FROM employees WHERE department = 'Sales'", "highest Sales salary (USD)",
         "Check the structure of the employees table, then find the highest salary in the Sales department.", True),
        ("products", "SELECT COUNT(*) FROM products WHERE stock < 50", "products with stock under 50",
         "Look at the products table's columns, then tell me how many products have fewer than 50 units in stock.", True),
        ("customers", "SELECT COUNT(*) FROM customers WHERE country = 'India'", "customers in India",
         "Describe the customers table and then count how many customers are based in India.", True),
    ):
        d = Draft()
        d.call("describe_table", table=table)
        d.num(label, d.call("query_database", sql=sql)["rows"][0][0], exact=exact)
        yield ask, d, "granularity_trap"

    for query, url, pattern_a, pattern_b, expr, label, ask in (
        ("NVIDIA quarterly earnings revenue", "nvidia-q3-fiscal-2027", r"revenue of \$([\d.]+) billion",
         r"from \$([\d.]+) billion", "{a} - {b}", "growth (USD billions)",
         "Look up NVIDIA's latest quarterly revenue and work out how many billions of dollars it grew "
         "compared with a year earlier."),
        ("Apple quarterly revenue iPhone", "apple-q4-results", r"revenue of \$([\d.]+) billion",
         r"iPhone revenue was \$([\d.]+) billion", "{b} / {a} * 100", "iPhone share of revenue (%)",
         "From Apple's latest quarterly results in the news, what percentage of total revenue came from iPhone?"),
        ("Amazon quarterly results AWS", "amazon-q3-2026", r"net sales of \$([\d.]+) billion",
         r"AWS segment sales were \$([\d.]+) billion", "{b} / {a} * 100", "AWS share of sales (%)",
         "Using the latest Amazon earnings news, what percent of Amazon's quarterly net sales came from AWS?"),
    ):
        d = Draft()
        hit = search_hit(d.call("news_search", query=query), url)
        a, b = figure(hit["snippet"], pattern_a), figure(hit["snippet"], pattern_b)
        d.num(label, calc(d, expr.format(a=lit(a), b=lit(b))))
        yield ask, d, "capability_mirage"

    for city in ("Delhi", "Karachi", "Beijing"):
        d = Draft()
        pm = d.call("get_air_quality", city=city)["pollutants"]["pm2_5"]
        d.num("percent of the WHO limit", calc(d, f"{lit(pm)} / 15 * 100"))
        d.num("PM2.5 (µg/m³)", pm)
        yield (f"What's the PM2.5 level in {city} right now, and what percentage of the WHO 24-hour "
               f"guideline of 15 µg/m³ is that?"), d, "capability_mirage"

    d = Draft()
    hit = search_hit(d.call("web_search", query="Germany population 2026"), "destatis")
    pop = figure(hit["snippet"], r"had ([\d.]+) million")
    d.num("cost per resident (EUR)", calc(d, f"12.6e9 / ({lit(pop)} * 1e6)"))
    d.num("population (millions)", pop)
    yield ("Look up Germany's current population and work out what a €12.6 billion rail programme "
           "costs per resident."), d, "temporal_decoy"

    d = Draft()
    hit = search_hit(d.call("web_search", query="Brazil population 2026"), "ibge")
    pop = figure(hit["snippet"], r"at ([\d.]+) million")
    d.num("people with broadband (millions)", calc(d, f"{lit(pop)} * 0.62"))
    d.num("population (millions)", pop)
    yield ("If 62% of Brazilians have home broadband, how many people is that (in millions), based on "
           "Brazil's current population?"), d, "temporal_decoy"

    d = Draft()
    rows = d.call("query_database", sql="SELECT salary FROM employees WHERE department = 'Marketing' ORDER BY employee_id")["rows"]
    s = d.call("compute_statistics", values=[r[0] for r in rows])
    d.num("median salary (USD)", s["median"])
    d.num("mean salary (USD)", s["mean"])
    yield "What are the median and mean salaries in the Marketing department?", d, "prerequisite_blindness"

    d = Draft()
    rows = d.call("query_database", sql="SELECT total FROM orders WHERE status = 'delivered' ORDER BY "
                  "order_date DESC, order_id DESC LIMIT 10")["rows"]
    s = d.call("compute_statistics", values=[r[0] for r in rows])
    d.num("total of the 10 orders (USD)", s["sum"])
    d.num("average order value (USD)", s["mean"])
    yield ("Take our 10 most recent delivered orders. What's their combined value and average order value?",
           d, "parameter_trap")


# --------------------------------------------------------------------------- hard: 3-4 calls


def hard() -> Iterator[Spec]:
    for path, region, cur, ask in (
        ("/reports/q3_sales.csv", None, "EUR", "What was our total Q3 revenue (reports/q3_sales.csv) in euros at today's exchange rate?"),
        ("/reports/q2_sales.csv", None, "GBP", "Total up Q2 revenue from reports/q2_sales.csv and convert it to British pounds at the current rate."),
        ("/reports/q3_sales.csv", "Asia Pacific", "JPY", "What did Asia Pacific bring in during Q3 (reports/q3_sales.csv), expressed in Japanese yen at today's rate?"),
        ("/reports/q2_sales.csv", "Europe", "EUR", "Our European team wants Q2 Europe revenue from reports/q2_sales.csv in euros. Use today's exchange rate."),
    ):
        d = Draft()
        content = d.call("read_file", path=path)["content"]
        values = csv_column(content, "revenue_usd", region_is(region))
        total = d.call("compute_statistics", values=values)["sum"]
        r = rate(d, cur)
        d.num(f"revenue in {cur}", calc(d, f"{lit(total)} * {lit(r)}"))
        d.num("revenue (USD)", total)
        yield ask, d, "semantic_decoy"

    for city, days in (("Delhi", 7), ("Paris", 5), ("New York", 4), ("Singapore", 6), ("Moscow", 3)):
        d = Draft()
        highs = [x["high"] for x in d.call("get_forecast", city=city, days=days)["days"]]
        mean = d.call("compute_statistics", values=highs)["mean"]
        d.num("average high (°F)", d.call("convert_units", value=mean, from_unit="C", to_unit="F")["result"])
        d.num("average high (°C)", mean)
        yield (f"What's the average daily high over the next {days} days in {city}? My family in the "
               f"US wants it in Fahrenheit."), d, "granularity_trap"

    for query, url, pattern, cur, scale, unit, ask in (
        ("NVIDIA quarterly earnings revenue", "nvidia-q3-fiscal-2027", r"revenue of \$([\d.]+) billion", "JPY",
         " / 1000", "trillion yen", "Find NVIDIA's latest quarterly revenue in the news and express it in trillions of Japanese yen at today's exchange rate."),
        ("Apple quarterly revenue", "apple-q4-results", r"revenue of \$([\d.]+) billion", "EUR", "",
         "billion euros", "How much was Apple's latest quarterly revenue in billions of euros, using today's exchange rate?"),
        ("Microsoft quarterly revenue Azure", "microsoft-q1-fy27", r"revenue of \$([\d.]+) billion", "INR", "",
         "billion rupees", "Convert Microsoft's most recent quarterly revenue (from the news) to billions of Indian rupees at the current rate."),
        ("Alphabet quarterly revenue", "alphabet-q3-2026", r"to \$([\d.]+) billion", "GBP", "",
         "billion pounds", "What was Alphabet's latest quarterly revenue in billions of British pounds at today's rate?"),
    ):
        d = Draft()
        hit = search_hit(d.call("news_search", query=query), url)
        rev = figure(hit["snippet"], pattern)
        r = rate(d, cur)
        d.num(f"revenue ({unit})", calc(d, f"{lit(rev)} * {lit(r)}{scale}"))
        d.num("revenue (USD billions)", rev)
        yield ask, d, "capability_mirage"

    for country, cur in (("Japan", "JPY"), ("India", "INR"), ("France", "EUR"), ("United Kingdom", "GBP")):
        d = Draft()
        v = d.call("query_database", sql="SELECT ROUND(SUM(o.total), 2) FROM orders o JOIN customers c ON "
                   f"c.customer_id = o.customer_id WHERE c.country = '{country}' AND o.status = 'delivered'")["rows"][0][0]
        r = rate(d, cur)
        d.num(f"delivered revenue in {cur}", calc(d, f"{lit(v)} * {lit(r)}"))
        d.num("delivered revenue (USD)", v)
        yield (f"What's the all-time value of delivered orders from customers in {country}, in "
               f"{RATES[cur][3]} at today's exchange rate?"), d, "prerequisite_blindness"

    for number, cur in (("INV-2026-0419", "EUR"), ("INV-2026-0412", "CAD"), ("INV-2026-0427", "GBP")):
        d = Draft()
        d.call("list_files", directory="/invoices")
        total = figure(d.call("read_file", path=f"/invoices/{number}.txt")["content"], r"TOTAL DUE: \$([\d,.]+)")
        r = rate(d, cur)
        d.num(f"total in {cur}", calc(d, f"{lit(total)} * {lit(r)}"))
        d.num("total due (USD)", total)
        yield (f"Find invoice {number} among our invoices and tell me its total due in {RATES[cur][3]} "
               f"at today's exchange rate."), d, "prerequisite_blindness"

    for dept, ask in (
        ("Engineering", "Check what the employees table holds, then give me the mean and standard deviation of Engineering salaries."),
        ("Support", "Look at the employees table schema, then summarise Support salaries: average and spread (standard deviation)."),
        ("Finance", "Inspect the employees table, pull the Finance salaries and compute their mean and standard deviation."),
    ):
        d = Draft()
        d.call("describe_table", table="employees")
        rows = d.call("query_database", sql=f"SELECT salary FROM employees WHERE department = '{dept}' ORDER BY employee_id")["rows"]
        s = d.call("compute_statistics", values=[r[0] for r in rows])
        d.num("standard deviation (USD)", s["stdev"])
        d.num("mean salary (USD)", s["mean"])
        yield ask, d, "granularity_trap"

    for path, pattern, ask in (
        ("travel/tokyo_itinerary.txt", r"^(Tokyo) partner summit", "I'm packing for the trip in travel/tokyo_itinerary.txt. What's the temperature in that city right now, in Fahrenheit?"),
        ("travel/lisbon_trip.txt", r"^(Lisbon)", "Check travel/lisbon_trip.txt to see where I'm going, then tell me the current temperature there in Fahrenheit."),
        ("hr/team_roster.csv", r"Jin Park,[^,]+,[^,]+,([^,]+),", "Which office does Jin Park work from (see hr/team_roster.csv), and what's the temperature there right now in Fahrenheit?"),
    ):
        d = Draft()
        content = d.call("read_file", path=path)["content"]
        m = re.search(pattern, content, re.MULTILINE)
        assert m is not None
        city = m.group(1)
        t = d.call("get_weather", city=city)["temperature"]
        d.num("temperature (°F)", d.call("convert_units", value=t, from_unit="C", to_unit="F")["result"])
        d.text("city", city)
        yield ask, d, "prerequisite_blindness"

    for cities, ask in ((("Kolkata",), "Kolkata's current PM2.5 reading is what percentage of the WHO 24-hour PM2.5 guideline? Look the guideline up."),
                        (("Dhaka",), "Compare Dhaka's PM2.5 right now with the WHO 24-hour guideline (look it up): what percentage of the guideline is it?"),
                        (("Cairo",), "Is Cairo's PM2.5 level above the WHO 24-hour guideline? Find the guideline and express the reading as a percentage of it.")):
        d = Draft()
        pm = d.call("get_air_quality", city=cities[0])["pollutants"]["pm2_5"]
        hit = search_hit(d.call("web_search", query="WHO PM2.5 guideline 24-hour"), "who.int")
        limit = figure(hit["snippet"], r"PM2\.5 at (\d+) µg/m³ as a 24-hour")
        d.num("percent of WHO guideline", calc(d, f"{lit(pm)} / {lit(limit)} * 100"))
        d.num("PM2.5 (µg/m³)", pm)
        yield ask, d, "capability_mirage"

    for path, column, finish, ask in (
        ("/data/greenhouse_sensor_2026-11-29.csv", "temperature_c", "toF",
         "What was the average temperature in the greenhouse yesterday (data/greenhouse_sensor_2026-11-29.csv), in Fahrenheit?"),
        ("/reports/expenses_2026.csv", "amount_usd", "x12",
         "From reports/expenses_2026.csv, what's our average monthly Cloud hosting spend, and what does that come to over a full 12-month year?"),
        ("/data/website_traffic_2026-11.csv", "signups", "x30",
         "Using data/website_traffic_2026-11.csv, what's the average number of daily signups, and what would a 30-day month at that rate give?"),
    ):
        d = Draft()
        content = d.call("read_file", path=path)["content"]
        where = (lambda r: r["category"] == "Cloud hosting") if "expenses" in path else None
        mean = d.call("compute_statistics", values=csv_column(content, column, where))["mean"]
        if finish == "toF":
            d.num("average (°F)", d.call("convert_units", value=mean, from_unit="C", to_unit="F")["result"])
        else:
            d.num("projection", calc(d, f"{lit(mean)} * {finish[1:]}"))
        d.num("average", mean)
        yield ask, d, "semantic_decoy"

    for country, url, pattern, pop_query, pop_url, pop_pattern in (
        ("Germany", "cop31-loss-damage", r"Germany \(\$(\d+) million\)", "Germany population 2026", "destatis", r"had ([\d.]+) million"),
        ("Japan", "cop31-loss-damage", r"Japan \(\$(\d+) million\)", "Japan population 2026", "stat.go.jp", r"fell to ([\d.]+) million"),
    ):
        d = Draft()
        pledge = figure(search_hit(d.call("news_search", query="COP31 loss and damage fund pledges"), url)["snippet"], pattern)
        pop = figure(search_hit(d.call("web_search", query=pop_query), pop_url)["snippet"], pop_pattern)
        d.num("pledge per resident (USD)", calc(d, f"{lit(pledge)} / {lit(pop)}"))
        d.num("pledge (USD millions)", pledge)
        yield (f"How much did {country} pledge to the loss and damage fund at the latest climate summit, "
               f"and how many dollars is that per {country} resident?"), d, "temporal_decoy"

    d = Draft()
    km = figure(search_hit(d.call("web_search", query="official marathon distance"), "worldathletics")["snippet"],
                r"distance is ([\d.]+) km")
    miles = d.call("convert_units", value=km, from_unit="km", to_unit="mi")["result"]
    d.num("pace (min/mile)", calc(d, f"221 / {lit(miles)}"))
    d.num("marathon distance (miles)", miles)
    yield ("I finished a marathon in 3 hours 41 minutes. Look up the official marathon distance, convert "
           "it to miles, and work out my average pace in minutes per mile."), d, "semantic_decoy"

    d = Draft()
    notes = d.call("read_file", path="notes.txt")["content"]
    new, old = figure(notes, r"quoted at \$([\d,]+)"), figure(notes, r"\(was \$([\d,]+)\)")
    increase = calc(d, f"({lit(new)} - {lit(old)}) / {lit(old)} * 100")
    r = rate(d, "EUR")
    d.num("new price (EUR/year)", calc(d, f"{lit(new)} * {lit(r)}"))
    d.num("price increase (%)", increase)
    yield ("My notes.txt mentions the analytics platform renewal quote. By what percentage did the price "
           "go up, and what is the new yearly price in euros at today's rate?"), d, "temporal_decoy"

    d = Draft()
    minutes = d.call("read_file", path="meetings/2026-11-17_budget_review.md")["content"]
    budget = figure(minutes, r"engineering budget approved at \$([\d,]+)")
    payroll = d.call("query_database", sql="SELECT SUM(salary) FROM employees WHERE department = 'Engineering'")["rows"][0][0]
    d.num("share of budget (%)", calc(d, f"{lit(payroll)} / {lit(budget)} * 100"))
    d.num("Engineering payroll (USD)", payroll)
    yield ("What percentage of the FY2027 engineering budget approved in the Nov 17 budget review "
           "(meetings/2026-11-17_budget_review.md) is already taken by current Engineering salaries in "
           "the employees database?"), d, "prerequisite_blindness"


    d = Draft()
    guide = figure(search_hit(d.call("news_search", query="NVIDIA fourth quarter revenue outlook"),
                              "nvidia-outlook")["snippet"], r"revenue of \$([\d.]+) billion")
    actual = figure(search_hit(d.call("web_search", query="NVIDIA third quarter revenue results"),
                               "nvidia-q3-fiscal-2027")["snippet"], r"revenue of \$([\d.]+) billion")
    d.num("implied growth (%)", calc(d, f"({lit(guide)} - {lit(actual)}) / {lit(actual)} * 100"))
    d.num("Q4 guidance (USD billions)", guide)
    yield ("NVIDIA gave revenue guidance for next quarter. Find it and the revenue they just reported, "
           "and tell me the implied quarter-over-quarter growth in percent."), d, "temporal_decoy"

    for warm, cold in (("Dubai", "London"), ("Singapore", "Toronto")):
        d = Draft()
        a = d.call("get_weather", city=warm)["temperature"]
        b = d.call("get_weather", city=cold)["temperature"]
        d.num("temperature difference (°C)", calc(d, f"{lit(a)} - ({lit(b)})"))
        d.num(f"{cold} temperature (°C)", b)
        yield (f"How many degrees Celsius warmer is it in {warm} than in {cold} right now?"), d, "parameter_trap"


# --------------------------------------------------------------------------- assembly


def _declared(primary: str, index: int, counts: dict[str, int]) -> list[str]:
    """Primary type plus 0-2 of the least-declared types so far (deterministic balancing)."""
    k = 1 + index % 3
    chosen = [primary]
    while len(chosen) < k:
        rest = sorted((t for t in CANARY_TYPES if t not in chosen), key=lambda t: (counts[t], CANARY_TYPES.index(t)))
        chosen.append(rest[0])
    for t in chosen:
        counts[t] += 1
    return sorted(chosen, key=CANARY_TYPES.index)


def _choose_key_fact(task_id: str, prompt: str, d: Draft) -> None:
    """Move the first number fact that the last step's result (and only it) supplies to the front.

    That fact is the task's key figure: it is not implied by the prompt or by an earlier step,
    so an answer that lacks the last step's evidence cannot satisfy the rubric.
    """
    context = extract_numbers(prompt + "\n" + "\n".join(r.content for r in d.results[:-1]))
    last = extract_numbers(d.results[-1].content)
    for i, fact in enumerate(d.facts):
        if fact["kind"] != "number":
            continue
        v, t = fact["value"], fact["tolerance"]
        if any(abs(n - v) <= t for n in last) and not any(abs(n - v) <= t for n in context):
            d.facts.insert(0, d.facts.pop(i))
            return
    raise RuntimeError(f"{task_id}: no number fact comes only from the last step: {d.facts}")


def build_suite() -> dict[str, Any]:
    counts = dict.fromkeys(CANARY_TYPES, 0)
    tasks: list[dict[str, Any]] = []
    index = 0
    for level, gen in (("easy", easy), ("medium", medium), ("hard", hard)):
        for n, (prompt, d, primary) in enumerate(gen(), start=1):
            task_id = f"{level}-{n:03d}"
            _choose_key_fact(task_id, prompt, d)
            plan = [{"tool": t, "args": a} for t, a in d.steps]
            tasks.append({
                "id": task_id,
                "difficulty": level,
                "prompt": prompt,
                "correct_tools": list(dict.fromkeys(t for t, _ in d.steps)),
                "declared_types": _declared(primary, index, counts),
                "plan": json.loads(json.dumps(plan)),
                "rubric": d.facts,
            })
            index += 1
    suite = {"version": TASK_FILE_VERSION, "tasks": tasks}
    for task in parse_tasks(suite, "<generated suite>"):
        steps = [(s.tool, s.args, tools.execute(s.tool, s.args)) for s in task.plan]
        if not check_rubric(task, compose_answer(steps)).passed:
            raise RuntimeError(f"{task.id}: the reference plan does not satisfy the rubric")
    return suite


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m canarykit.taskgen OUTPUT.json", file=sys.stderr)
        return 2
    suite = build_suite()
    write_json(Path(args[0]), suite)
    levels = [t["difficulty"] for t in suite["tasks"]]
    print(f"wrote {len(levels)} tasks ({', '.join(f'{lv}: {levels.count(lv)}' for lv in ('easy', 'medium', 'hard'))}) to {args[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
