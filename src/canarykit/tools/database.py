"""The database server: read-only SQL over an embedded SQLite shop database.

The database is generated once per process from a fixed seed (customers, products, orders,
order_items, employees; every order total equals the sum of its line items, every foreign key
resolves), serialised, and then opened as one private in-memory copy per thread. Each copy is
guarded: ``PRAGMA query_only``, an authorizer that allows only reads, and a progress handler
that stops runaway queries. Results are a pure function of the query text: the authorizer
refuses by name every function whose answer is not (``random()``, ``current_timestamp``,
``sqlite_version()``, ``fts3_tokenizer``, ...: SQLite names the function it resolved, however
the query spelled it), and the date and time functions are guards around SQLite's own that
refuse the clock as they see their arguments, after the query computed them
(``date('n'||'ow')``, ``unixepoch()``, ``julianday('now')``, ``strftime('%s', 'now')``, the
``localtime`` modifier).

Limits (a 26-character query must not answer with 2 GB after a minute):

- **time**: at most :data:`_PROGRESS_LIMIT` x :data:`_PROGRESS_STEP` (5 million) SQLite VM
  instructions (deterministic), and a wall-clock backstop of :data:`QUERY_TIME_LIMIT_S`
  seconds for queries whose few instructions are each expensive (checked by the progress
  handler and while rows are read);
- **size of one value**: :data:`MAX_VALUE_BYTES` (64 MiB, ``SQLITE_LIMIT_LENGTH``): SQLite
  refuses to build a longer string or blob (``printf('%.*c', 1e9, 'x')``) before allocating it;
- **printf**: ``printf``/``format`` refuse a ``%c`` repeat count above :data:`MAX_VALUE_BYTES`
  (SQLite builds such a repeat one character at a time, uninterruptibly, even past the length
  limit: ``printf('%.*c', 2e9, 'x')`` took 14 s); every other call is SQLite's own ``printf``;
- **memory**: SQLite's heap is capped at :data:`MAX_SQLITE_HEAP_BYTES` (``hard_heap_limit``,
  process-wide; the tool runs in a worker process of its own, :mod:`canarykit.tools._worker`),
  answered with :data:`MEMORY_REFUSAL`;
- **a call SQLite cannot interrupt** (one function call over huge values: ``instr(hex(zeroblob(
  30000000)), ...)``): the worker running it is killed at the call's hard limit
  (:data:`canarykit.tools.CALL_TIME_LIMIT_S`);
- **result size**: each value shown is cut to :data:`MAX_CELL_CHARS` characters (a blob to its
  first :data:`MAX_BLOB_BYTES` bytes, in hex), rows stop at :data:`MAX_ROWS` or when the result
  reaches :data:`MAX_RESULT_CHARS`; a cut result says so (``truncated: true`` and a ``note``;
  a cut value ends with ``...[truncated: ...]``).
"""

from __future__ import annotations

import json
import math
import random
import re
import sqlite3
import threading
import time
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Final

from ._common import ToolError

SEED: Final = 20261130
MAX_ROWS: Final = 200
MAX_SQL_CHARS: Final = 5000
#: SQLite VM instructions between progress checks, and the number of checks allowed.
_PROGRESS_STEP: Final = 1_000
_PROGRESS_LIMIT: Final = 5_000
#: Wall-clock backstop of one query, in seconds.
QUERY_TIME_LIMIT_S: Final = 2.0
#: The longest string or blob SQLite may build (SQLITE_LIMIT_LENGTH).
MAX_VALUE_BYTES: Final = 64 * 1024 * 1024
#: SQLite's heap limit for the whole process (PRAGMA hard_heap_limit).
MAX_SQLITE_HEAP_BYTES: Final = 512 * 1024 * 1024
#: Characters of one text value shown, bytes of one blob shown (as hex).
MAX_CELL_CHARS: Final = 1000
MAX_BLOB_BYTES: Final = 256
#: Rows are added to a result until its JSON text would pass this many characters.
MAX_RESULT_CHARS: Final = 48 * 1024
#: What the agent reads when a query reaches :data:`MAX_SQLITE_HEAP_BYTES`.
MEMORY_REFUSAL: Final = (f"the query needs more memory than the database allows ({MAX_SQLITE_HEAP_BYTES // 2**20} MiB); "
                         "select less (substr, LIMIT)")

_SCHEMA = """
CREATE TABLE customers (
    customer_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT NOT NULL UNIQUE,
    city TEXT NOT NULL,
    country TEXT NOT NULL,
    segment TEXT NOT NULL,
    signup_date TEXT NOT NULL
);
CREATE TABLE products (
    product_id INTEGER PRIMARY KEY,
    sku TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    category TEXT NOT NULL,
    unit_price REAL NOT NULL,
    stock INTEGER NOT NULL
);
CREATE TABLE orders (
    order_id INTEGER PRIMARY KEY,
    customer_id INTEGER NOT NULL REFERENCES customers(customer_id),
    order_date TEXT NOT NULL,
    status TEXT NOT NULL,
    total REAL NOT NULL
);
CREATE TABLE order_items (
    order_item_id INTEGER PRIMARY KEY,
    order_id INTEGER NOT NULL REFERENCES orders(order_id),
    product_id INTEGER NOT NULL REFERENCES products(product_id),
    quantity INTEGER NOT NULL,
    unit_price REAL NOT NULL,
    line_total REAL NOT NULL
);
CREATE TABLE employees (
    employee_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    department TEXT NOT NULL,
    title TEXT NOT NULL,
    office TEXT NOT NULL,
    salary INTEGER NOT NULL,
    hire_date TEXT NOT NULL,
    manager_id INTEGER REFERENCES employees(employee_id)
);
CREATE INDEX idx_orders_customer ON orders(customer_id);
CREATE INDEX idx_items_order ON order_items(order_id);
"""

_FIRST = ("Aarav", "Olivia", "Liam", "Sofia", "Noah", "Mia", "Lukas", "Emma", "Hiro", "Yuki", "Priya",
          "Rahul", "Camila", "Mateo", "Chloe", "Lucas", "Amara", "Kwame", "Ingrid", "Erik", "Fatima",
          "Omar", "Mei", "Wei", "Isabella", "James", "Charlotte", "Ethan", "Ananya", "Diego", "Hannah",
          "Felix", "Leila", "Tomas", "Grace", "Daniel", "Nora", "Arjun", "Sakura", "Ben")
_LAST = ("Sharma", "Smith", "Müller", "Tanaka", "Silva", "Garcia", "Johnson", "Nguyen", "Kowalski",
         "Rossi", "Dubois", "Patel", "Kim", "Okafor", "Andersson", "Hernandez", "Schmidt", "Sato",
         "Fernandes", "Brown", "Martin", "Chen", "Wilson", "Iyer", "Costa", "Lopez", "Becker", "Ito",
         "Murphy", "Novak")
_PLACES = (("United States", ("New York", "Chicago", "Seattle", "Austin", "Denver")),
           ("Germany", ("Berlin", "Munich", "Hamburg")),
           ("India", ("Mumbai", "Bengaluru", "Delhi", "Pune")),
           ("Japan", ("Tokyo", "Osaka")),
           ("United Kingdom", ("London", "Manchester", "Edinburgh")),
           ("France", ("Paris", "Lyon")),
           ("Brazil", ("Sao Paulo", "Rio de Janeiro")),
           ("Canada", ("Toronto", "Vancouver")),
           ("Australia", ("Sydney", "Melbourne")),
           ("Spain", ("Madrid", "Barcelona")))
_DOMAINS = ("gmail.com", "outlook.com", "proton.me", "yahoo.com", "icloud.com", "fastmail.com")
_SEGMENTS = ("consumer", "consumer", "consumer", "small_business", "enterprise")

_PRODUCTS = (
    ("Electronics", "Wireless noise-cancelling headphones", "249.00"),
    ("Electronics", "27-inch 4K monitor", "379.99"), ("Electronics", "Mechanical keyboard, brown switches", "119.50"),
    ("Electronics", "USB-C docking station", "189.00"), ("Electronics", "1080p webcam with ring light", "79.95"),
    ("Electronics", "Portable SSD 2 TB", "159.00"), ("Electronics", "Bluetooth travel speaker", "59.99"),
    ("Electronics", "Ergonomic vertical mouse", "44.90"),
    ("Office", "Sit-stand desk, walnut top", "549.00"), ("Office", "Mesh task chair", "389.00"),
    ("Office", "A5 dotted notebook, 3-pack", "18.75"), ("Office", "Gel pens, 12-pack", "11.40"),
    ("Office", "Monitor arm, gas spring", "74.95"), ("Office", "Desk lamp with wireless charger", "64.00"),
    ("Office", "Whiteboard 90x60 cm", "52.30"),
    ("Kitchen", "Espresso machine, 15 bar", "429.00"), ("Kitchen", "Burr coffee grinder", "139.00"),
    ("Kitchen", "Cast iron skillet 26 cm", "42.50"), ("Kitchen", "Chef's knife 20 cm", "89.00"),
    ("Kitchen", "Electric kettle, variable temperature", "69.90"), ("Kitchen", "Glass meal-prep containers, 10-pack", "34.99"),
    ("Kitchen", "Stand mixer 5 L", "349.00"),
    ("Outdoor", "Ultralight tent, 2-person", "299.00"), ("Outdoor", "Down sleeping bag, -5 C", "219.00"),
    ("Outdoor", "Trekking poles, carbon", "99.00"), ("Outdoor", "Insulated water bottle 1 L", "32.00"),
    ("Outdoor", "Headlamp 400 lumen", "39.95"), ("Outdoor", "Daypack 28 L", "119.00"),
    ("Books", "The Pragmatic Programmer, 20th anniversary ed.", "44.99"),
    ("Books", "Designing Data-Intensive Applications", "49.99"), ("Books", "Thinking, Fast and Slow", "18.00"),
    ("Books", "The Design of Everyday Things", "19.99"), ("Books", "Atomic Habits", "16.20"),
    ("Books", "Sapiens: A Brief History of Humankind", "22.50"),
)
_STATUSES = ("delivered",) * 6 + ("shipped", "shipped", "processing", "cancelled", "returned")
_DEPARTMENTS = (("Engineering", ("Software Engineer", "Senior Software Engineer", "Staff Engineer"), 118000, 205000),
                ("Sales", ("Account Executive", "Senior Account Executive", "Sales Engineer"), 72000, 140000),
                ("Marketing", ("Marketing Specialist", "Content Strategist", "Growth Manager"), 68000, 128000),
                ("Finance", ("Financial Analyst", "Senior Accountant", "Controller"), 74000, 150000),
                ("Operations", ("Operations Analyst", "Logistics Coordinator", "Facilities Manager"), 60000, 112000),
                ("Support", ("Support Specialist", "Support Engineer", "Customer Success Manager"), 52000, 98000))
_OFFICES = ("Seattle", "Berlin", "Bengaluru", "Toronto", "Sao Paulo")


def _cents(x: Decimal) -> Decimal:
    return x.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


def _build_connection() -> sqlite3.Connection:
    """The shop database, drawn from :data:`SEED` (one generator, the tables in this order)."""
    rng = random.Random(SEED)
    conn = sqlite3.connect(":memory:")
    conn.executescript(_SCHEMA)
    customers = _customers(rng)
    conn.executemany("INSERT INTO customers VALUES (?,?,?,?,?,?,?)", customers)
    conn.executemany("INSERT INTO products VALUES (?,?,?,?,?,?)", _products(rng))
    orders, items = _orders(rng, {c[0]: date.fromisoformat(c[6]) for c in customers})
    conn.executemany("INSERT INTO orders VALUES (?,?,?,?,?)", orders)
    conn.executemany("INSERT INTO order_items VALUES (?,?,?,?,?,?)", items)
    conn.executemany("INSERT INTO employees VALUES (?,?,?,?,?,?,?,?)", _employees(rng))
    conn.commit()
    return conn


def _customers(rng: random.Random) -> list[tuple[Any, ...]]:
    """150 customers with unique emails, signed up 2023-2025."""
    customers = []
    used_emails: set[str] = set()
    for cid in range(1, 151):
        first, last = rng.choice(_FIRST), rng.choice(_LAST)
        country, cities = rng.choice(_PLACES)
        base = f"{first}.{last}".lower().replace("ü", "ue")
        email = f"{base}@{rng.choice(_DOMAINS)}"
        n = 2
        while email in used_emails:
            email = f"{base}{n}@{rng.choice(_DOMAINS)}"
            n += 1
        used_emails.add(email)
        signup = date(2023, 1, 1) + timedelta(days=rng.randrange(0, 1000))
        customers.append((cid, f"{first} {last}", email, rng.choice(cities), country,
                          rng.choice(_SEGMENTS), signup.isoformat()))
    return customers


def _products(rng: random.Random) -> list[tuple[Any, ...]]:
    products = []
    for pid, (cat, name, price) in enumerate(_PRODUCTS, start=1):
        sku = f"{cat[:3].upper()}-{1000 + pid * 7}"
        products.append((pid, sku, name, cat, float(price), rng.randrange(0, 400)))
    return products


def _orders(
    rng: random.Random, signup_by_id: dict[int, date]
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """800 orders (none before its customer signed up) and their line items; every order's
    total is the sum of its lines."""
    orders = []
    items = []
    item_id = 1
    start = date(2025, 1, 1)
    span = (date(2026, 11, 29) - start).days
    for oid in range(1, 801):
        cid = rng.randrange(1, 151)
        day = start + timedelta(days=rng.randrange(0, span + 1))
        day = max(day, signup_by_id[cid])
        status = rng.choice(_STATUSES)
        if (date(2026, 11, 30) - day).days < 5 and status == "delivered":
            status = "shipped"
        total = Decimal(0)
        for pid in rng.sample(range(1, len(_PRODUCTS) + 1), rng.randint(1, 4)):
            qty = rng.choice((1, 1, 1, 2, 2, 3, 5))
            unit_price = Decimal(_PRODUCTS[pid - 1][2])
            line = _cents(unit_price * qty)
            total += line
            items.append((item_id, oid, pid, qty, float(unit_price), float(line)))
            item_id += 1
        orders.append((oid, cid, day.isoformat(), status, float(total)))
    return orders, items


def _employees(rng: random.Random) -> list[tuple[Any, ...]]:
    """Each department's head, then 6-10 staff reporting to them."""
    employees: list[tuple[Any, ...]] = []
    eid = 1
    for dept, titles, lo, hi in _DEPARTMENTS:
        head = eid
        employees.append((eid, f"{rng.choice(_FIRST)} {rng.choice(_LAST)}", dept, f"Head of {dept}",
                          rng.choice(_OFFICES), (hi + 30000) // 500 * 500,
                          (date(2018, 1, 1) + timedelta(days=rng.randrange(0, 900))).isoformat(), None))
        eid += 1
        for _ in range(rng.randint(6, 10)):
            salary = rng.randrange(lo, hi) // 500 * 500
            hired = date(2019, 1, 1) + timedelta(days=rng.randrange(0, 2500))
            employees.append((eid, f"{rng.choice(_FIRST)} {rng.choice(_LAST)}", dept, rng.choice(titles),
                              rng.choice(_OFFICES), salary, hired.isoformat(), head))
            eid += 1
    return employees


_build_lock = threading.Lock()
_image: bytes | None = None
_tables: dict[str, dict[str, Any]] = {}
_local = threading.local()


def _ensure_image() -> bytes:
    global _image
    if _image is None:
        with _build_lock:
            if _image is None:
                conn = _build_connection()
                for (table,) in conn.execute(
                        "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name").fetchall():
                    cols = [
                        {"name": r[1], "type": r[2], "nullable": not r[3], "primary_key": bool(r[5])}
                        for r in conn.execute(f"PRAGMA table_info({table})")
                    ]
                    fks = {r[3]: f"{r[2]}.{r[4]}" for r in conn.execute(f"PRAGMA foreign_key_list({table})")}
                    for col in cols:
                        if col["name"] in fks:
                            col["references"] = fks[col["name"]]
                    count = conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
                    _tables[table] = {"columns": cols, "row_count": count}
                _image = conn.serialize()
                conn.close()
    return _image


_ALLOWED_ACTIONS: Final = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION,
                                     sqlite3.SQLITE_RECURSIVE})
#: Functions refused by name, however the query spells or computes its way to them (SQLite's
#: authorizer sees the function's name as SQLite resolved it): randomness, the clock
#: (``current_date``, ``current_time``, ``current_timestamp`` are functions to SQLite), state
#: of the connection, the build (differs between machines) and ``fts3_tokenizer`` (answers a
#: memory address).
_BANNED_FUNCTIONS: Final = frozenset({
    "random", "randomblob", "changes", "total_changes", "last_insert_rowid", "load_extension", "sqlite_offset",
    "current_date", "current_time", "current_timestamp", "fts3_tokenizer", "sqlite_version", "sqlite_source_id",
    "sqlite_compileoption_get", "sqlite_compileoption_used",
})
#: The date and time functions, replaced by guards that refuse the clock: the time value
#: ``'now'`` (as the guard sees it, after the query computed it: ``date('n'||'ow')``), a call
#: without a time value (``date()``, ``unixepoch()`` mean now) and the ``localtime``/``utc``
#: modifiers (the machine's time zone). Position of the time value: strftime's is second.
_DATE_FUNCTIONS: Final = {"date": 0, "time": 0, "datetime": 0, "julianday": 0, "unixepoch": 0, "strftime": 1,
                          "timediff": 0}
CLOCK_REFUSAL: Final = "the database clock is not available; use literal dates (today is 2026-11-30)"


def _authorizer(action: int, arg1: str | None, arg2: str | None, db: str | None, trigger: str | None) -> int:
    if action not in _ALLOWED_ACTIONS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _BANNED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def _helper() -> sqlite3.Connection:
    """A bare connection of this thread that runs SQLite's own functions for the guards."""
    helper: sqlite3.Connection | None = getattr(_local, "helper", None)
    if helper is None:
        helper = sqlite3.connect(":memory:", check_same_thread=True)
        helper.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        _local.helper = helper
    return helper


def _clock_guard(fname: str, at: int) -> Any:
    """SQLite's ``fname``, refusing every way of reading the clock (see :data:`_DATE_FUNCTIONS`)."""
    sql = f"SELECT {fname}(%s)"

    def guarded(*call: Any) -> Any:
        values = call[at:] if fname != "timediff" else call[:2]
        if not values or any(isinstance(v, str) and v.strip().lower() == "now" for v in values[:1 + (fname == "timediff")]):
            _local.udf_error = f"{fname}() reads the clock here: {CLOCK_REFUSAL}"
            raise _UDFError(_local.udf_error)
        if any(isinstance(v, str) and v.strip().lower() in ("localtime", "utc") for v in call[at + 1:]):
            _local.udf_error = f"the localtime and utc modifiers read this machine's time zone: {CLOCK_REFUSAL}"
            raise _UDFError(_local.udf_error)
        return _helper().execute(sql % ",".join("?" * len(call)), call).fetchone()[0]

    return guarded


class _Budget:
    """The progress handler: an instruction budget and a wall-clock deadline per query."""

    def __init__(self) -> None:
        self.ticks = 0
        self.deadline = float("inf")
        self.timed_out = False

    def start(self) -> None:
        self.ticks = 0
        self.timed_out = False
        self.deadline = time.monotonic() + QUERY_TIME_LIMIT_S

    def __call__(self) -> int:
        self.ticks += 1
        if self.ticks > _PROGRESS_LIMIT:
            return 1
        if time.monotonic() > self.deadline:
            self.timed_out = True
            return 1
        return 0


_SPEC = re.compile(r"%([-+ 0#,!]*)(\*|\d+)?(?:\.(\*|\d+))?(?:ll|l)?([a-zA-Z%])")


class _UDFError(Exception):
    """Raised inside a SQL function; its message is reported (SQLite only says "user-defined
    function raised exception")."""


def _guarded_printf(*call: Any) -> Any:
    """SQLite's ``printf``/``format``, refusing a ``%c`` repeat count SQLite would spend seconds on."""
    fmt, args = (call[0], call[1:]) if call else (None, ())
    if isinstance(fmt, str):
        i = 0
        for m in _SPEC.finditer(fmt):
            width, precision, conv = m.group(2), m.group(3), m.group(4)
            counts = []
            for part in (width, precision):
                if part == "*":
                    v = args[i] if i < len(args) else 0
                    i += 1
                    counts.append(v)
                elif part:
                    counts.append(int(part) if len(part) < 20 else MAX_VALUE_BYTES + 1)
            if conv != "%":
                i += 1
            if conv == "c":
                for v in counts:
                    try:
                        n = abs(int(v))
                    except (TypeError, ValueError, OverflowError):
                        continue
                    if n > MAX_VALUE_BYTES:
                        _local.udf_error = (f"printf/format: a %c repeat count of {n:,} is above the database's "
                                            f"limit of {MAX_VALUE_BYTES:,} characters; select less")
                        raise _UDFError(_local.udf_error)
    try:
        return _helper().execute(f"SELECT printf({','.join('?' * len(call))})", call).fetchone()[0]
    except sqlite3.DataError as exc:
        _local.udf_error = (f"a value of the query is larger than the database's limit of {MAX_VALUE_BYTES:,} bytes; "
                            "select less")
        raise _UDFError(_local.udf_error) from exc


def _connection() -> tuple[sqlite3.Connection, _Budget]:
    conn: sqlite3.Connection | None = getattr(_local, "conn", None)
    if conn is None:
        image = _ensure_image()
        conn = sqlite3.connect(":memory:", check_same_thread=True)
        conn.deserialize(image)
        conn.execute(f"PRAGMA hard_heap_limit = {MAX_SQLITE_HEAP_BYTES}")
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        conn.execute("PRAGMA query_only = ON")
        for fname in ("printf", "format"):
            conn.create_function(fname, -1, _guarded_printf, deterministic=True)
        for fname, at in _DATE_FUNCTIONS.items():
            conn.create_function(fname, -1, _clock_guard(fname, at), deterministic=True)
        conn.set_authorizer(_authorizer)
        budget = _Budget()
        conn.set_progress_handler(budget, _PROGRESS_STEP)
        _local.conn = conn
        _local.budget = budget
    return conn, _local.budget


_WRITE_WORDS = re.compile(
    r"^\s*(insert|update|delete|drop|create|alter|replace|attach|detach|pragma|vacuum|reindex|analyze|"
    r"begin|commit|rollback|savepoint|release)\b", re.IGNORECASE)


def _strip_comments(sql: str) -> str:
    return re.sub(r"--[^\n]*|/\*.*?\*/", " ", sql, flags=re.DOTALL)


def _jsonable(v: Any) -> tuple[Any, bool]:
    """A value as shown in a result, and whether it was cut."""
    if isinstance(v, bytes):
        if len(v) <= MAX_BLOB_BYTES:
            return v.hex(), False
        return f"{v[:MAX_BLOB_BYTES].hex()}...[truncated: blob of {len(v):,} bytes, first {MAX_BLOB_BYTES} shown as hex]", True
    if isinstance(v, str) and len(v) > MAX_CELL_CHARS:
        return f"{v[:MAX_CELL_CHARS]}...[truncated: text of {len(v):,} characters]", True
    if isinstance(v, float):
        return (v if math.isfinite(v) else None), False
    return v, False


def query_database(sql: str) -> dict[str, Any]:
    body = _checked_sql(sql)
    conn, budget = _connection()
    budget.start()
    _local.udf_error = None
    try:
        cur = conn.execute(body)
        read = _read_rows(cur, budget)
    except sqlite3.DatabaseError as exc:
        raise _sql_error(exc, budget) from exc
    except (sqlite3.Warning, sqlite3.ProgrammingError) as exc:
        raise ToolError(f"SQL error: {exc}") from exc
    except MemoryError:  # SQLite's heap limit (SQLITE_NOMEM): Python raises it without a message
        raise ToolError(MEMORY_REFUSAL) from None
    if cur.description is None:
        raise ToolError("the statement returned no result set; only SELECT queries are allowed")
    return read.result([d[0] for d in cur.description])


def _checked_sql(sql: str) -> str:
    """The one read-only, clock-free statement of ``sql`` (comments and trailing ``;`` removed)."""
    if len(sql) > MAX_SQL_CHARS:
        raise ToolError(f"query is longer than {MAX_SQL_CHARS} characters")
    body = _strip_comments(sql).strip()
    while body.endswith(";"):
        body = body[:-1].rstrip()
    if not body:
        raise ToolError("sql must contain a SELECT statement")
    if ";" in re.sub(r"'(?:[^']|'')*'", "''", body):
        raise ToolError("only one statement per call is allowed; remove the extra ';'")
    match = _WRITE_WORDS.match(body)
    if match:
        raise ToolError(f"the database is read-only: {match.group(1).upper()} statements are not allowed")
    return body


class _Rows:
    """The rows of a result as shown, and how they were cut."""

    def __init__(self) -> None:
        self.rows: list[list[Any]] = []
        self.cut_values = 0
        self.more = False
        self.out_of_time = False

    def result(self, columns: list[str]) -> dict[str, Any]:
        """The tool's answer: columns, rows and, for a cut result, a note saying how."""
        rows = self.rows
        notes = []
        if self.more:
            notes.append(f"only the first {len(rows)} rows are returned" +
                         (f" (at most {MAX_ROWS})" if len(rows) >= MAX_ROWS else f" (results are capped at about {MAX_RESULT_CHARS:,} characters)"))
        if self.out_of_time:
            notes.append(f"reading rows stopped at the time limit of {QUERY_TIME_LIMIT_S:g} s after {len(rows)} rows")
        if self.cut_values:
            notes.append(f"{self.cut_values} long values are cut (text to {MAX_CELL_CHARS:,} characters, blobs to {MAX_BLOB_BYTES} bytes)")
        truncated = bool(notes)
        return {
            "columns": columns,
            "rows": rows,
            "row_count": len(rows),
            "truncated": truncated,
            **({"note": "; ".join(notes) + "; add LIMIT, aggregate or select less"} if truncated else {}),
        }


def _read_rows(cur: sqlite3.Cursor, budget: _Budget) -> _Rows:
    """Read rows until the result is complete, reaches :data:`MAX_ROWS` or
    :data:`MAX_RESULT_CHARS`, or the query's time is up."""
    read = _Rows()
    size = 0
    while True:
        row = cur.fetchone()
        if row is None:
            break
        if len(read.rows) >= MAX_ROWS or size >= MAX_RESULT_CHARS:
            read.more = True
            break
        shown = []
        for v in row:
            value, cut = _jsonable(v)
            read.cut_values += cut
            shown.append(value)
        size += len(json.dumps(shown, ensure_ascii=False)) + 1
        read.rows.append(shown)
        if time.monotonic() > budget.deadline:
            read.out_of_time = True
            break
    return read


def _sql_error(exc: sqlite3.DatabaseError, budget: _Budget) -> ToolError:
    """What the agent is told when SQLite refuses or stops a query."""
    msg = str(exc)
    if "interrupted" in msg:
        if budget.timed_out:
            return ToolError(f"query exceeded the time limit of {QUERY_TIME_LIMIT_S:g} s; add filters or a LIMIT")
        return ToolError("query exceeded the execution limit; add filters or a LIMIT")
    if "too big" in msg:
        return ToolError(f"a value of the query is larger than the database's limit of {MAX_VALUE_BYTES:,} bytes; "
                         "select less (substr, LIMIT)")
    if "user-defined function raised exception" in msg and getattr(_local, "udf_error", None):
        return ToolError(_local.udf_error)
    if "out of memory" in msg:
        return ToolError(MEMORY_REFUSAL)
    if "not authorized to use function" in msg:
        name = msg.rsplit(":", 1)[-1].strip()
        if name.lower().startswith("current_"):
            return ToolError(f"{name}: {CLOCK_REFUSAL}")
        return ToolError(f"function {name}() is not available here (non-deterministic or unsafe)")
    if "not authorized" in msg or "prohibited" in msg or "readonly" in msg or "query_only" in msg:
        return ToolError(f"the database is read-only and only SELECT queries are allowed ({msg})")
    return ToolError(f"SQL error: {msg}")


def warm() -> None:
    """Build the database and this thread's connection now (a worker does it before its first call)."""
    _connection()


def table_names() -> list[str]:
    _ensure_image()
    return sorted(_tables)


def describe_table(table: str) -> dict[str, Any]:
    _ensure_image()
    key = table.strip().strip('"`[]').lower()
    if key not in _tables:
        raise ToolError(f"unknown table {table!r}; tables: {', '.join(sorted(_tables))}")
    info = _tables[key]
    return {"table": key, "columns": [dict(c) for c in info["columns"]], "row_count": info["row_count"]}
