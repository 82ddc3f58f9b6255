"""The file server: a read-only virtual workspace of realistic business files.

Paths are POSIX-style and resolved against the workspace root ``/``: ``notes.txt``,
``/notes.txt`` and ``reports/../notes.txt`` name the same file. A path that climbs above the
root (``../etc/passwd``), a Windows or home-relative path, or a NUL byte is refused.
CSV totals, invoice sums and meeting figures are computed from the same numbers, so every
file is internally consistent.
"""

from __future__ import annotations

import json
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Final

from ._common import ToolError

_MONEY = Decimal("0.01")


def _money(x: Decimal) -> Decimal:
    return x.quantize(_MONEY, rounding=ROUND_HALF_UP)


def _fmt(x: Decimal) -> str:
    return f"{x:,.2f}"


# ------------------------------------------------------------------ sales reports


#: (month, region) -> (units sold, revenue in USD). Q2 and Q3 2026.
SALES: Final[dict[str, tuple[tuple[str, str, int, str], ...]]] = {
    "q2": (
        ("2026-04", "North America", 1842, "221040.00"), ("2026-04", "Europe", 1315, "150562.50"),
        ("2026-04", "Asia Pacific", 1128, "124080.00"), ("2026-04", "Latin America", 486, "46656.00"),
        ("2026-05", "North America", 1967, "236040.00"), ("2026-05", "Europe", 1402, "160529.00"),
        ("2026-05", "Asia Pacific", 1204, "132440.00"), ("2026-05", "Latin America", 521, "50016.00"),
        ("2026-06", "North America", 2105, "252600.00"), ("2026-06", "Europe", 1388, "158926.00"),
        ("2026-06", "Asia Pacific", 1297, "142670.00"), ("2026-06", "Latin America", 553, "53088.00"),
    ),
    "q3": (
        ("2026-07", "North America", 2214, "270108.00"), ("2026-07", "Europe", 1296, "151632.00"),
        ("2026-07", "Asia Pacific", 1389, "156957.00"), ("2026-07", "Latin America", 602, "59598.00"),
        ("2026-08", "North America", 2087, "254614.00"), ("2026-08", "Europe", 1174, "137358.00"),
        ("2026-08", "Asia Pacific", 1452, "164076.00"), ("2026-08", "Latin America", 648, "64152.00"),
        ("2026-09", "North America", 2341, "285602.00"), ("2026-09", "Europe", 1433, "167661.00"),
        ("2026-09", "Asia Pacific", 1518, "171534.00"), ("2026-09", "Latin America", 671, "66429.00"),
    ),
}


def _sales_csv(quarter: str) -> str:
    lines = ["month,region,units_sold,revenue_usd"]
    for month, region, units, revenue in SALES[quarter]:
        lines.append(f"{month},{region},{units},{revenue}")
    return "\n".join(lines) + "\n"


def _expenses_csv() -> str:
    cats = (("Travel", 18400), ("Software licenses", 9650), ("Cloud hosting", 22300),
            ("Office supplies", 1850), ("Contractors", 31200))
    lines = ["month,category,amount_usd"]
    for m in range(1, 11):
        for i, (cat, base) in enumerate(cats):
            # A fixed, gently varying pattern: +/- a few percent per month.
            delta = ((m * 7 + i * 13) % 11 - 5) * base // 100
            lines.append(f"2026-{m:02d},{cat},{base + delta}.00")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ invoices

_INVOICES: Final[tuple[dict[str, Any], ...]] = (
    {"number": "INV-2026-0412", "date": "2026-11-03", "due": "2026-12-03",
     "vendor": "Brightline Office Furniture Co.", "bill_to": "Northwind Analytics LLC, 410 Pine St, Seattle WA",
     "tax_rate": "10.25", "items": (("Ergonomic task chair, mesh back", 6, "389.00"),
                                    ("Sit-stand desk frame, dual motor", 4, "612.50"),
                                    ("Monitor arm, gas spring", 8, "74.95"))},
    {"number": "INV-2026-0419", "date": "2026-11-10", "due": "2026-12-10",
     "vendor": "Cobalt Cloud Services Inc.", "bill_to": "Northwind Analytics LLC, 410 Pine St, Seattle WA",
     "tax_rate": "0", "items": (("Managed Postgres, 8 vCPU, Oct 2026", 1, "1840.00"),
                                ("Object storage, 42 TB-month", 42, "21.50"),
                                ("Premium support plan, Oct 2026", 1, "950.00"))},
    {"number": "INV-2026-0427", "date": "2026-11-21", "due": "2026-12-21",
     "vendor": "Harbor & Finch Catering", "bill_to": "Northwind Analytics LLC, 410 Pine St, Seattle WA",
     "tax_rate": "10.25", "items": (("Team offsite lunch buffet, per guest", 38, "27.50"),
                                    ("Coffee and pastry service", 2, "185.00"),
                                    ("Delivery and setup", 1, "65.00"))},
)


def invoice_totals(inv: dict[str, Any]) -> tuple[Decimal, Decimal, Decimal]:
    """(subtotal, tax, total) of an invoice, rounded to cents."""
    subtotal = sum((_money(Decimal(price) * qty) for _, qty, price in inv["items"]), Decimal(0))
    tax = _money(subtotal * Decimal(inv["tax_rate"]) / 100)
    return subtotal, tax, subtotal + tax


def _invoice_text(inv: dict[str, Any]) -> str:
    subtotal, tax, total = invoice_totals(inv)
    lines = [
        f"INVOICE {inv['number']}",
        f"Vendor: {inv['vendor']}",
        f"Bill to: {inv['bill_to']}",
        f"Invoice date: {inv['date']}    Due date: {inv['due']}    Terms: Net 30",
        "",
        f"{'Description':<42}{'Qty':>5}{'Unit price':>14}{'Amount':>14}",
    ]
    for desc, qty, price in inv["items"]:
        amount = _money(Decimal(price) * qty)
        lines.append(f"{desc:<42}{qty:>5}{'$' + _fmt(Decimal(price)):>14}{'$' + _fmt(amount):>14}")
    lines += [
        "",
        f"Subtotal: ${_fmt(subtotal)}",
        f"Sales tax ({inv['tax_rate']}%): ${_fmt(tax)}",
        f"TOTAL DUE: ${_fmt(total)}",
        "",
        "Remit by ACH to account ending 4417. Questions: billing@" + inv["vendor"].split()[0].lower() + ".com",
    ]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ other files

_NOTES = """Notes - week of Nov 23, 2026

- Team offsite budget approved: $12,400 for 38 people (Dec 11-12, Skamania Lodge).
- Flight to Tokyo for the partner summit: depart SEA Dec 14, 11:05, return Dec 19.
- Priya asked for the Q3 regional sales numbers before Thursday's board prep.
- Renew the analytics platform contract by Dec 15: quoted at $48,000/year (was $42,500).
- Target for Q4: 9,200 units across all regions, stretch goal 10,000.
- Dentist Tuesday 8:30. Pick up the dry cleaning.
"""

_SETTINGS: Final[dict[str, Any]] = {
    "service": "northwind-reporting",
    "environment": "production",
    "region": "us-west-2",
    "database": {"host": "db.internal.northwind.io", "port": 5432, "pool_size": 20,
                 "max_connections": 120, "statement_timeout_ms": 15000},
    "cache": {"backend": "redis", "ttl_seconds": 900, "max_memory_mb": 2048},
    "http": {"timeout_seconds": 30, "max_retries": 4, "rate_limit_per_minute": 600},
    "reports": {"currency": "USD", "fiscal_year_start": "02-01", "default_timezone": "America/Los_Angeles"},
    "feature_flags": {"new_dashboard": True, "export_to_parquet": True, "legacy_pdf_reports": False},
}

_BUDGET_REVIEW = """# Budget review - 2026-11-17

Attendees: Priya Raman (Finance), Marcus Lee (Engineering), Ana Souza (Sales), Tom Becker (Ops)

## Decisions
- FY2027 engineering budget approved at $1,850,000 (up from $1,620,000 in FY2026).
- Cloud hosting capped at $24,000 per month; Marcus to report overruns weekly.
- Sales travel budget reduced by 12% to $158,400 for FY2027.

## Action items
- Priya: circulate the final budget spreadsheet by Nov 21.
- Tom: renegotiate the office lease (current rent $31,750/month) before Jan 15.
- Ana: split the travel budget by region by Dec 1.
"""

_PRODUCT_SYNC = """# Product sync - 2026-11-24

Attendees: Marcus Lee, Jin Park, Lucia Fernandez, Sam Okafor

## Status
- Dashboard v3 beta: 1,240 active beta users, crash-free sessions 99.2%.
- Export to Parquet shipped on Nov 19; 318 exports in the first week.
- Median report load time down from 2.8 s to 1.9 s after the cache rollout.

## Decisions
- General availability of Dashboard v3 set for January 12, 2027.
- Hire 3 more backend engineers in Q1 (approved headcount: 42 in Engineering).

## Action items
- Jin: fix the timezone bug in scheduled exports by Dec 3.
- Lucia: draft the GA launch announcement.
"""

_TOKYO = """Tokyo partner summit - itinerary

Dec 14  SEA 11:05 -> HND 15:40 (+1 day), JL 67, seat 24C. Flight distance 4,771 miles.
Dec 15  Check in: Hotel Gracery Shinjuku (conf. #HG-88213), 3 nights at 24,800 yen per night.
        The hotel is 2.4 miles from the summit venue (Tokyo International Forum).
Dec 16  Summit day 1, keynote 09:30. Team dinner in Ginza, 19:00.
Dec 17  Summit day 2. Afternoon: partner meetings (Kobayashi-san, Ito-san).
Dec 18  Free morning; train to Kamakura (31 miles each way).
Dec 19  HND 17:20 -> SEA 10:05, JL 68.
"""

_LISBON = """Lisbon sales kickoff - travel plan

Mar 2   SEA -> LIS via AMS, KL 6036 / KL 1693. Total flight distance 5,720 miles.
Mar 3   Hotel: Memmo Alfama, 4 nights, EUR 265 per night.
        Venue (Centro de Congressos de Lisboa) is 4.1 miles from the hotel.
Mar 4-5 Kickoff sessions. Bring 25 printed copies of the regional plan.
Mar 6   Day trip to Sintra, 17 miles each way.
Mar 7   LIS -> SEA.
"""

_BANANA_BREAD = """# Banana bread

Makes one 9x5 inch loaf.

- 3 ripe bananas (about 340 g), mashed
- 1/3 cup melted butter
- 3/4 cup sugar
- 1 egg, beaten
- 1 teaspoon vanilla extract
- 1 teaspoon baking soda, pinch of salt
- 1 1/2 cups all-purpose flour

Preheat the oven to 350 F. Mix butter into the bananas, then sugar, egg and vanilla.
Stir in soda, salt and flour. Bake for 60 minutes, until a skewer comes out clean.
"""

_SOURDOUGH = """# Country sourdough

- 500 g bread flour, 375 g water, 100 g active starter, 10 g salt
- Bulk ferment 4 to 5 hours at 24 C, shape, then cold-proof overnight.
- Bake in a preheated Dutch oven at 250 C: 20 minutes lid on, then 25 minutes lid off at 230 C.
"""


def _sensor_csv() -> str:
    # Greenhouse sensor, hourly readings on 2026-11-29 (fixed pattern: cool nights, warm afternoon).
    temps = (17.8, 17.5, 17.2, 17.0, 16.8, 16.9, 17.4, 18.6, 20.1, 21.7, 23.0, 24.1,
             24.9, 25.3, 25.1, 24.4, 23.2, 21.9, 20.8, 19.9, 19.2, 18.7, 18.3, 18.0)
    hums = (71, 72, 73, 74, 75, 75, 73, 69, 64, 60, 56, 53, 51, 50, 51, 53, 56, 60, 63, 66, 68, 69, 70, 71)
    lines = ["timestamp,sensor_id,temperature_c,humidity_pct"]
    for h, (t, hu) in enumerate(zip(temps, hums, strict=True)):
        lines.append(f"2026-11-29T{h:02d}:00:00,GH-02,{t},{hu}")
    return "\n".join(lines) + "\n"


def _traffic_csv() -> str:
    lines = ["date,visits,signups,bounce_rate_pct"]
    for d in range(1, 29):
        weekday = (d + 6) % 7  # 2026-11-01 is a Sunday
        visits = 4200 + 37 * d + (-900 if weekday in (0, 6) else 150) + ((d * 53) % 17) * 11
        signups = visits // 58 + (d * 7) % 5
        bounce = 38.0 + ((d * 29) % 13) * 0.7
        lines.append(f"2026-11-{d:02d},{visits},{signups},{bounce:.1f}")
    return "\n".join(lines) + "\n"


def _roster_csv() -> str:
    rows = (("Priya Raman", "Finance", "Director of Finance", "Seattle", 2019),
            ("Marcus Lee", "Engineering", "VP Engineering", "Seattle", 2018),
            ("Ana Souza", "Sales", "Head of Sales, Americas", "Sao Paulo", 2020),
            ("Tom Becker", "Operations", "Operations Manager", "Berlin", 2021),
            ("Jin Park", "Engineering", "Staff Engineer", "Seoul", 2020),
            ("Lucia Fernandez", "Marketing", "Product Marketing Lead", "Madrid", 2022),
            ("Sam Okafor", "Engineering", "Engineering Manager", "Lagos", 2021),
            ("Hannah Cho", "Support", "Support Lead", "Toronto", 2023))
    lines = ["name,department,title,office,start_year"]
    lines += [f"{n},{d},{t},{o},{y}" for n, d, t, o, y in rows]
    return "\n".join(lines) + "\n"


def _build() -> dict[str, tuple[str, str]]:
    files: dict[str, tuple[str, str]] = {
        "/notes.txt": (_NOTES, "2026-11-27T17:42:10Z"),
        "/config/settings.json": (json.dumps(_SETTINGS, indent=2) + "\n", "2026-10-02T09:15:00Z"),
        "/reports/q2_sales.csv": (_sales_csv("q2"), "2026-07-06T16:20:31Z"),
        "/reports/q3_sales.csv": (_sales_csv("q3"), "2026-10-05T15:58:02Z"),
        "/reports/expenses_2026.csv": (_expenses_csv(), "2026-11-04T08:12:45Z"),
        "/meetings/2026-11-17_budget_review.md": (_BUDGET_REVIEW, "2026-11-17T18:03:11Z"),
        "/meetings/2026-11-24_product_sync.md": (_PRODUCT_SYNC, "2026-11-24T17:25:40Z"),
        "/travel/tokyo_itinerary.txt": (_TOKYO, "2026-11-20T21:10:05Z"),
        "/travel/lisbon_trip.txt": (_LISBON, "2026-11-25T10:44:19Z"),
        "/recipes/banana_bread.md": (_BANANA_BREAD, "2026-09-13T11:30:00Z"),
        "/recipes/sourdough.md": (_SOURDOUGH, "2026-10-18T07:55:00Z"),
        "/data/greenhouse_sensor_2026-11-29.csv": (_sensor_csv(), "2026-11-30T00:05:00Z"),
        "/data/website_traffic_2026-11.csv": (_traffic_csv(), "2026-11-29T00:10:00Z"),
        "/hr/team_roster.csv": (_roster_csv(), "2026-11-02T13:00:00Z"),
    }
    for inv in _INVOICES:
        files[f"/invoices/{inv['number']}.txt"] = (_invoice_text(inv), f"{inv['date']}T10:00:00Z")
    return files


FILES: Final[dict[str, tuple[str, str]]] = _build()
_DIRS: Final[frozenset[str]] = frozenset(
    {"/"} | {"/" + "/".join(p.strip("/").split("/")[:i]) for p in FILES for i in range(1, p.count("/"))}
)

_MIME: Final[dict[str, str]] = {".txt": "text/plain", ".csv": "text/csv", ".json": "application/json",
                                ".md": "text/markdown"}


def resolve(path: str, field: str = "path") -> str:
    """Normalise ``path`` against the workspace root; refuse escapes."""
    if "\x00" in path:
        raise ToolError(f"{field} contains a NUL byte")
    text = path.strip()
    if not text:
        raise ToolError(f"{field} must not be empty")
    if "\\" in text or (len(text) > 1 and text[1] == ":") or text.startswith("~"):
        raise ToolError(f"{field} {path!r} is not a workspace path; use POSIX paths such as /reports/q3_sales.csv")
    parts: list[str] = []
    for part in text.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                raise ToolError(f"access denied: {path!r} resolves outside the workspace root")
            parts.pop()
        else:
            parts.append(part)
    return "/" + "/".join(parts)


def read_file(path: str) -> dict[str, Any]:
    target = resolve(path)
    if target in _DIRS:
        raise ToolError(f"{target} is a directory; use list_files to see its contents")
    if target not in FILES:
        raise ToolError(f"no such file in the workspace: {target}")
    content, modified = FILES[target]
    suffix = target[target.rfind("."):]
    return {
        "path": target,
        "content": content,
        "size_bytes": len(content.encode("utf-8")),
        "modified": modified,
        "mime_type": _MIME.get(suffix, "text/plain"),
    }


def list_files(directory: str = "/") -> dict[str, Any]:
    target = resolve(directory, "directory")
    if target in FILES:
        raise ToolError(f"{target} is a file, not a directory; use read_file to open it")
    if target not in _DIRS:
        raise ToolError(f"no such directory in the workspace: {target}")
    prefix = target.rstrip("/") + "/"
    entries: dict[str, dict[str, Any]] = {}
    for path, (content, modified) in FILES.items():
        if not path.startswith(prefix):
            continue
        rest = path[len(prefix):]
        name, _, deeper = rest.partition("/")
        if deeper:
            entries.setdefault(name, {"name": name, "type": "directory", "path": prefix + name})
        else:
            entries[name] = {"name": name, "type": "file", "path": path,
                             "size_bytes": len(content.encode("utf-8")), "modified": modified}
    ordered = sorted(entries.values(), key=lambda e: (e["type"] != "directory", e["name"]))
    return {"directory": target, "entries": ordered, "count": len(ordered)}
