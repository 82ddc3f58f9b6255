"""Easy tasks: one tool call each, one small function per task family."""

from __future__ import annotations

from collections.abc import Iterator

from ._draft import Draft, Family, Spec, calc, figure, search_hit


def weather_now() -> Iterator[Spec]:
    """A city's current weather (in the units asked for)."""
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


def forecast_day() -> Iterator[Spec]:
    """One figure of a city's multi-day forecast."""
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


def air_quality_index() -> Iterator[Spec]:
    """A city's air quality index and its category."""
    for city in ("Delhi", "Beijing", "London"):
        d = Draft()
        a = d.call("get_air_quality", city=city)
        d.num("AQI", a["aqi"], exact=True)
        d.text("AQI category", a["category"])
        yield f"How bad is the air in {city} today? Give me the AQI and what category it falls in.", d, "capability_mirage"


def arithmetic() -> Iterator[Spec]:
    """A calculation stated in the prompt."""
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


def unit_conversion() -> Iterator[Spec]:
    """A quantity stated in the prompt in other units."""
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


def listed_values_statistics() -> Iterator[Spec]:
    """Summary statistics of values listed in the prompt."""
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


def file_figure() -> Iterator[Spec]:
    """A figure read from a named file."""
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


def directory_listing() -> Iterator[Spec]:
    """How many files a folder holds, and one of their names."""
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


def web_figure() -> Iterator[Spec]:
    """A figure from a web search result."""
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


def news_figure() -> Iterator[Spec]:
    """A figure and a detail from a news search result."""
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


def cancelled_orders() -> Iterator[Spec]:
    """A count from one database query."""
    d = Draft()
    rows = d.call("query_database", sql="SELECT COUNT(*) AS cancelled_orders FROM orders WHERE status = 'cancelled'")["rows"]
    d.num("cancelled orders", rows[0][0], exact=True)
    yield "How many orders in our database have been cancelled?", d, "prerequisite_blindness"


def delivered_revenue_2026() -> Iterator[Spec]:
    """A sum from one database query with a date filter."""
    d = Draft()
    rows = d.call("query_database", sql="SELECT ROUND(SUM(total), 2) AS revenue FROM orders "
                  "WHERE status = 'delivered' AND order_date >= '2026-01-01'")["rows"]
    d.num("delivered revenue 2026 (USD)", rows[0][0])
    yield "What's the total value of delivered orders placed in 2026 so far?", d, "parameter_trap"


def top_category() -> Iterator[Spec]:
    """The top row of one grouped database query."""
    d = Draft()
    rows = d.call("query_database", sql="SELECT p.category, SUM(i.quantity) AS units FROM order_items i "
                  "JOIN products p ON p.product_id = i.product_id GROUP BY p.category ORDER BY units DESC")["rows"]
    d.num("units sold in the top category", rows[0][1], exact=True)
    d.text("top category", rows[0][0])
    yield "Which product category has sold the most units overall, and how many units?", d, "parameter_trap"


def order_items_schema() -> Iterator[Spec]:
    """A table's size and linking column from its description."""
    d = Draft()
    info = d.call("describe_table", table="order_items")
    d.num("rows in order_items", info["row_count"], exact=True)
    d.text("column linking to products", "product_id")
    yield ("How many rows does the order_items table have, and which column links it to products?",
           d, "granularity_trap")


#: The families in suite order: the order numbers the ids (easy-001, ...).
FAMILIES: tuple[Family, ...] = (
    weather_now, forecast_day, air_quality_index, arithmetic, unit_conversion,
    listed_values_statistics, file_figure, directory_listing, web_figure, news_figure,
    cancelled_orders, delivered_revenue_2026, top_category, order_items_schema,
)


def easy() -> Iterator[Spec]:
    """Every easy task, family by family."""
    for family in FAMILIES:
        yield from family()
