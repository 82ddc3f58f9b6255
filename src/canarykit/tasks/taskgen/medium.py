"""Medium tasks: two tool calls each, one small function per task family."""

from __future__ import annotations

from collections.abc import Iterator

from ._draft import (
    RATES,
    Draft,
    Family,
    Spec,
    calc,
    csv_column,
    figure,
    lit,
    rate,
    region_is,
    search_hit,
)


def weather_in_fahrenheit() -> Iterator[Spec]:
    """A city's current temperature converted to Fahrenheit."""
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


def forecast_statistics() -> Iterator[Spec]:
    """Mean and range of a forecast's daily highs or lows."""
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


def currency_amount() -> Iterator[Spec]:
    """A dollar amount in another currency at the searched exchange rate."""
    for amount, cur in ((250, "JPY"), (1800, "EUR"), (640, "INR"), (3250, "GBP")):
        d = Draft()
        r = rate(d, cur)
        total = calc(d, f"{lit(amount)} * {lit(r)}")
        d.num(f"amount in {cur}", total)
        d.num(f"{cur} per USD", r)
        yield (f"How many {RATES[cur][3]} will I get for ${amount:,} at today's exchange rate?", d,
               "semantic_decoy")


def database_arithmetic() -> Iterator[Spec]:
    """A database figure (or two) worked on with the numbers given in the prompt."""
    for sql, expr, label, fact, exact, ask, primary in (
        ("SELECT ROUND(SUM(o.total), 2) FROM orders o JOIN customers c ON c.customer_id = o.customer_id WHERE "
         "c.country = 'Japan' AND o.status = 'delivered' AND o.order_date >= '2026-01-01'", "{0} * 151.84",
         "in yen", "delivered revenue from Japan (USD)", False,
         "What's the total of delivered 2026 orders from customers in Japan, converted to yen at 151.84 yen per dollar?",
         "prerequisite_blindness"),
        ("SELECT SUM(salary) FROM employees WHERE department = 'Engineering'", "{0} * 1.04",
         "payroll after raise (USD)", "current Engineering payroll (USD)", False,
         "What is the Engineering department's total annual salary bill, and what would it be after a 4% raise?",
         "parameter_trap"),
        ("SELECT ROUND(SUM(CASE WHEN p.category = 'Kitchen' THEN i.line_total ELSE 0 END), 2), "
         "ROUND(SUM(i.line_total), 2) FROM order_items i JOIN products p ON p.product_id = i.product_id",
         "{0} / {1} * 100", "Kitchen share (%)", "Kitchen line-item revenue (USD)", False,
         "What share of all line-item revenue (in percent) comes from the Kitchen category?",
         "prerequisite_blindness"),
        ("SELECT SUM(i.quantity), p.unit_price FROM order_items i JOIN orders o ON o.order_id = i.order_id JOIN "
         "products p ON p.product_id = i.product_id WHERE p.name LIKE 'Espresso machine%' AND o.order_date >= "
         "'2026-01-01'", "{0} * {1} * 0.88", "discounted value (USD)", "espresso machines sold in 2026", True,
         "How many espresso machines have we sold in 2026, and what would that many cost at list price with a "
         "12% bulk discount?", "parameter_trap"),
    ):
        d = Draft()
        row = d.call("query_database", sql=sql)["rows"][0]
        d.num(label, calc(d, expr.format(*map(lit, row))))
        d.num(fact, row[0], exact=exact)
        yield ask, d, primary


def csv_statistics() -> Iterator[Spec]:
    """Statistics of one column of a CSV report (optionally one region)."""
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


def file_value_conversion() -> Iterator[Spec]:
    """A quantity read from a file, converted to other units."""
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


def find_then_read() -> Iterator[Spec]:
    """A figure from a file found by listing its folder first."""
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


def describe_then_query() -> Iterator[Spec]:
    """A database figure after inspecting the table's structure."""
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


def news_ratio() -> Iterator[Spec]:
    """A difference or share of two figures from one news result."""
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


def pm25_share_of_guideline() -> Iterator[Spec]:
    """A city's PM2.5 as a percentage of a guideline given in the prompt."""
    for city in ("Delhi", "Karachi", "Beijing"):
        d = Draft()
        pm = d.call("get_air_quality", city=city)["pollutants"]["pm2_5"]
        d.num("percent of the WHO limit", calc(d, f"{lit(pm)} / 15 * 100"))
        d.num("PM2.5 (µg/m³)", pm)
        yield (f"What's the PM2.5 level in {city} right now, and what percentage of the WHO 24-hour "
               f"guideline of 15 µg/m³ is that?"), d, "capability_mirage"


def searched_population() -> Iterator[Spec]:
    """A figure from the prompt worked on with a searched population."""
    for query, url, pattern, expr, label, ask in (
        ("Germany population 2026", "destatis", r"had ([\d.]+) million", "12.6e9 / ({0} * 1e6)", "cost per resident (EUR)",
         "Look up Germany's current population and work out what a €12.6 billion rail programme costs per resident."),
        ("Brazil population 2026", "ibge", r"at ([\d.]+) million", "{0} * 0.62", "people with broadband (millions)",
         "If 62% of Brazilians have home broadband, how many people is that (in millions), based on Brazil's "
         "current population?"),
    ):
        d = Draft()
        pop = figure(search_hit(d.call("web_search", query=query), url)["snippet"], pattern)
        d.num(label, calc(d, expr.format(lit(pop))))
        d.num("population (millions)", pop)
        yield ask, d, "temporal_decoy"


def queried_statistics() -> Iterator[Spec]:
    """Two statistics of values queried from the database."""
    for sql, facts, ask, primary in (
        ("SELECT salary FROM employees WHERE department = 'Marketing' ORDER BY employee_id",
         (("median salary (USD)", "median"), ("mean salary (USD)", "mean")),
         "What are the median and mean salaries in the Marketing department?", "prerequisite_blindness"),
        ("SELECT total FROM orders WHERE status = 'delivered' ORDER BY order_date DESC, order_id DESC LIMIT 10",
         (("total of the 10 orders (USD)", "sum"), ("average order value (USD)", "mean")),
         "Take our 10 most recent delivered orders. What's their combined value and average order value?",
         "parameter_trap"),
    ):
        d = Draft()
        rows = d.call("query_database", sql=sql)["rows"]
        s = d.call("compute_statistics", values=[r[0] for r in rows])
        for label, key in facts:
            d.num(label, s[key])
        yield ask, d, primary


#: The families in suite order: the order numbers the ids (medium-001, ...).
FAMILIES: tuple[Family, ...] = (
    weather_in_fahrenheit, forecast_statistics, currency_amount, database_arithmetic, csv_statistics,
    file_value_conversion, find_then_read, describe_then_query, news_ratio, pm25_share_of_guideline,
    searched_population, queried_statistics,
)


def medium() -> Iterator[Spec]:
    """Every medium task, family by family."""
    for family in FAMILIES:
        yield from family()
