"""Hard tasks: three or four tool calls each, one small function per task family."""

from __future__ import annotations

import re
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


def csv_revenue_in_currency() -> Iterator[Spec]:
    """A CSV report's revenue total in another currency at the searched rate."""
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


def forecast_high_fahrenheit() -> Iterator[Spec]:
    """The mean of a forecast's daily highs, converted to Fahrenheit."""
    for city, days in (("Delhi", 7), ("Paris", 5), ("New York", 4), ("Singapore", 6), ("Moscow", 3)):
        d = Draft()
        highs = [x["high"] for x in d.call("get_forecast", city=city, days=days)["days"]]
        mean = d.call("compute_statistics", values=highs)["mean"]
        d.num("average high (°F)", d.call("convert_units", value=mean, from_unit="C", to_unit="F")["result"])
        d.num("average high (°C)", mean)
        yield (f"What's the average daily high over the next {days} days in {city}? My family in the "
               f"US wants it in Fahrenheit."), d, "granularity_trap"


def news_revenue_in_currency() -> Iterator[Spec]:
    """A revenue figure from the news in another currency at the searched rate."""
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


def country_revenue_in_currency() -> Iterator[Spec]:
    """A country's delivered revenue from the database in its currency."""
    for country, cur in (("Japan", "JPY"), ("India", "INR"), ("France", "EUR"), ("United Kingdom", "GBP")):
        d = Draft()
        v = d.call("query_database", sql="SELECT ROUND(SUM(o.total), 2) FROM orders o JOIN customers c ON "
                   f"c.customer_id = o.customer_id WHERE c.country = '{country}' AND o.status = 'delivered'")["rows"][0][0]
        r = rate(d, cur)
        d.num(f"delivered revenue in {cur}", calc(d, f"{lit(v)} * {lit(r)}"))
        d.num("delivered revenue (USD)", v)
        yield (f"What's the all-time value of delivered orders from customers in {country}, in "
               f"{RATES[cur][3]} at today's exchange rate?"), d, "prerequisite_blindness"


def invoice_in_currency() -> Iterator[Spec]:
    """An invoice found in its folder, its total in another currency."""
    for number, cur in (("INV-2026-0419", "EUR"), ("INV-2026-0412", "CAD"), ("INV-2026-0427", "GBP")):
        d = Draft()
        d.call("list_files", directory="/invoices")
        total = figure(d.call("read_file", path=f"/invoices/{number}.txt")["content"], r"TOTAL DUE: \$([\d,.]+)")
        r = rate(d, cur)
        d.num(f"total in {cur}", calc(d, f"{lit(total)} * {lit(r)}"))
        d.num("total due (USD)", total)
        yield (f"Find invoice {number} among our invoices and tell me its total due in {RATES[cur][3]} "
               f"at today's exchange rate."), d, "prerequisite_blindness"


def salary_statistics() -> Iterator[Spec]:
    """Mean and standard deviation of a department's salaries, table inspected first."""
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


def city_from_file_weather() -> Iterator[Spec]:
    """The temperature in Fahrenheit of a city named in a file."""
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


def pm25_vs_searched_guideline() -> Iterator[Spec]:
    """A city's PM2.5 as a percentage of the guideline found by search."""
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


def csv_average_projection() -> Iterator[Spec]:
    """The mean of a CSV column, converted or projected."""
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


def pledge_per_resident() -> Iterator[Spec]:
    """A country's pledge from the news divided by its searched population."""
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


def marathon_pace() -> Iterator[Spec]:
    """A pace from a searched distance converted to miles."""
    d = Draft()
    km = figure(search_hit(d.call("web_search", query="official marathon distance"), "worldathletics")["snippet"],
                r"distance is ([\d.]+) km")
    miles = d.call("convert_units", value=km, from_unit="km", to_unit="mi")["result"]
    d.num("pace (min/mile)", calc(d, f"221 / {lit(miles)}"))
    d.num("marathon distance (miles)", miles)
    yield ("I finished a marathon in 3 hours 41 minutes. Look up the official marathon distance, convert "
           "it to miles, and work out my average pace in minutes per mile."), d, "semantic_decoy"


def renewal_price() -> Iterator[Spec]:
    """A price increase from a file and the new price in euros."""
    d = Draft()
    notes = d.call("read_file", path="notes.txt")["content"]
    new, old = figure(notes, r"quoted at \$([\d,]+)"), figure(notes, r"\(was \$([\d,]+)\)")
    increase = calc(d, f"({lit(new)} - {lit(old)}) / {lit(old)} * 100")
    r = rate(d, "EUR")
    d.num("new price (EUR/year)", calc(d, f"{lit(new)} * {lit(r)}"))
    d.num("price increase (%)", increase)
    yield ("My notes.txt mentions the analytics platform renewal quote. By what percentage did the price "
           "go up, and what is the new yearly price in euros at today's rate?"), d, "temporal_decoy"


def budget_share() -> Iterator[Spec]:
    """A database payroll as a share of a budget read from meeting minutes."""
    d = Draft()
    minutes = d.call("read_file", path="meetings/2026-11-17_budget_review.md")["content"]
    budget = figure(minutes, r"engineering budget approved at \$([\d,]+)")
    payroll = d.call("query_database", sql="SELECT SUM(salary) FROM employees WHERE department = 'Engineering'")["rows"][0][0]
    d.num("share of budget (%)", calc(d, f"{lit(payroll)} / {lit(budget)} * 100"))
    d.num("Engineering payroll (USD)", payroll)
    yield ("What percentage of the FY2027 engineering budget approved in the Nov 17 budget review "
           "(meetings/2026-11-17_budget_review.md) is already taken by current Engineering salaries in "
           "the employees database?"), d, "prerequisite_blindness"


def guidance_growth() -> Iterator[Spec]:
    """The growth implied by a news guidance figure over a searched result."""
    d = Draft()
    guide = figure(search_hit(d.call("news_search", query="NVIDIA fourth quarter revenue outlook"),
                              "nvidia-outlook")["snippet"], r"revenue of \$([\d.]+) billion")
    actual = figure(search_hit(d.call("web_search", query="NVIDIA third quarter revenue results"),
                               "nvidia-q3-fiscal-2027")["snippet"], r"revenue of \$([\d.]+) billion")
    d.num("implied growth (%)", calc(d, f"({lit(guide)} - {lit(actual)}) / {lit(actual)} * 100"))
    d.num("Q4 guidance (USD billions)", guide)
    yield ("NVIDIA gave revenue guidance for next quarter. Find it and the revenue they just reported, "
           "and tell me the implied quarter-over-quarter growth in percent."), d, "temporal_decoy"


def temperature_difference() -> Iterator[Spec]:
    """The difference between two cities' current temperatures."""
    for warm, cold in (("Dubai", "London"), ("Singapore", "Toronto")):
        d = Draft()
        a = d.call("get_weather", city=warm)["temperature"]
        b = d.call("get_weather", city=cold)["temperature"]
        d.num("temperature difference (°C)", calc(d, f"{lit(a)} - ({lit(b)})"))
        d.num(f"{cold} temperature (°C)", b)
        yield (f"How many degrees Celsius warmer is it in {warm} than in {cold} right now?"), d, "parameter_trap"


#: The families in suite order: the order numbers the ids (hard-001, ...).
FAMILIES: tuple[Family, ...] = (
    csv_revenue_in_currency, forecast_high_fahrenheit, news_revenue_in_currency,
    country_revenue_in_currency, invoice_in_currency, salary_statistics, city_from_file_weather,
    pm25_vs_searched_guideline, csv_average_projection, pledge_per_resident, marathon_pace,
    renewal_price, budget_share, guidance_growth, temperature_difference,
)


def hard() -> Iterator[Spec]:
    """Every hard task, family by family."""
    for family in FAMILIES:
        yield from family()
