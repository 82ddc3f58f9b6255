"""Hard limits from outside the call (issue 22, items 7 and 10): a built-in tool call runs in a
worker process that is killed at its limit, so even one SQLite function call that the progress
handler never interrupts stops, in process and over MCP; a served environment stops its work
when its client leaves; the database answers a pure function of the query (no clock under
any spelling, no fts3_tokenizer) and names its memory cap."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from canarykit.tools import CALL_TIME_LIMIT_S, _worker, execute, execute_here
from canarykit.tools.database import CLOCK_REFUSAL, MEMORY_REFUSAL

#: The query of the issue: one instr() call over a 60-million-character string, minutes of work
#: that SQLite's progress handler never interrupts.
INSTR = "SELECT instr(hex(zeroblob(30000000)), hex(zeroblob(3000000))||'1')"
CLI = str(Path(sys.executable).parent / "canarykit")
#: Only to keep a broken build from hanging the suite; never the thing tested.
GUARD_S = 120


def error(result: object) -> str:
    assert getattr(result, "is_error", False), result
    message = json.loads(result.content)["error"]  # type: ignore[attr-defined]
    assert "\n" not in message
    return str(message)


def test_the_instr_query_is_stopped_at_the_hard_limit_and_the_next_call_is_served() -> None:
    execute("query_database", {"sql": "SELECT 1"})  # a ready worker
    message = error(execute("query_database", {"sql": INSTR}))
    assert message.startswith("query_database was stopped: the call took longer than the tool's time limit of "
                              f"{CALL_TIME_LIMIT_S:g} s")
    after = execute("query_database", {"sql": "SELECT count(*) FROM orders"})  # a fresh worker took over
    assert not after.is_error and json.loads(after.content)["rows"] == [[800]]


def test_a_worker_answers_exactly_what_the_call_in_this_process_answers() -> None:
    for name, args in (("get_weather", {"city": "Mumbai"}), ("calculate", {"expression": "2**10"}),
                       ("query_database", {"sql": "SELECT name, city FROM customers ORDER BY customer_id LIMIT 3"}),
                       ("read_file", {"path": "/nowhere.txt"}), ("get_weather", {"city": 7})):
        here, there = execute_here(name, args), execute(name, args)
        assert (there.content, there.is_error, there.data) == (here.content, here.is_error, here.data)


def test_one_worker_serves_call_after_call() -> None:
    execute("calculate", {"expression": "1+1"})
    before = _worker.worker_count()
    for i in range(50):
        assert json.loads(execute("calculate", {"expression": f"{i}+1"}).content)["result"] == i + 1
    assert _worker.worker_count() == before >= 1, "no process per call"


def test_a_worker_that_dies_is_replaced_and_one_killed_mid_call_is_one_line() -> None:
    import threading

    execute("calculate", {"expression": "1"})
    pool = _worker._the_pool()
    idle = pool.idle[-1]
    idle.proc.kill()
    idle.proc.wait()
    assert json.loads(execute("calculate", {"expression": "2"}).content)["result"] == 2, "a dead idle worker is replaced"
    busy = pool.idle[-1]

    def kill_soon() -> None:
        time.sleep(0.5)
        busy.proc.kill()

    threading.Thread(target=kill_soon).start()
    message = error(execute("query_database", {"sql": INSTR}))
    assert message.startswith("query_database failed: the process running it exited (signal 9)")
    assert json.loads(execute("calculate", {"expression": "3"}).content)["result"] == 3


@pytest.mark.parametrize("sql", [
    "SELECT date('n'||'ow')", "SELECT unixepoch()", "SELECT julianday('now')", "SELECT strftime('%s', 'now')",
    "SELECT current_timestamp", "SELECT CURRENT_DATE", "SELECT date()", "SELECT datetime(' NOW ')",
    "SELECT time(lower('NOW'))", "SELECT datetime('2026-11-30', 'localtime')", "SELECT \"date\"('now')",
    "SELECT julianday((SELECT 'no' || 'w'))",
])
def test_the_database_refuses_the_clock_under_any_spelling(sql: str) -> None:
    assert CLOCK_REFUSAL in error(execute("query_database", {"sql": sql}))


@pytest.mark.parametrize("sql", ["SELECT fts3_tokenizer('simple')", "SELECT sqlite_version()", "SELECT random()"])
def test_functions_whose_answer_is_not_a_function_of_the_query_are_refused(sql: str) -> None:
    assert "is not available here" in error(execute("query_database", {"sql": sql}))


def test_dates_computed_from_the_data_still_work_and_now_in_a_string_is_no_clock() -> None:
    r = execute("query_database", {"sql": "SELECT strftime('%Y', order_date) AS y, count(*) FROM orders GROUP BY y "
                                          "ORDER BY y"})
    assert json.loads(r.content)["rows"] == [["2025", 420], ["2026", 380]]
    r = execute("query_database", {"sql": "SELECT date('2026-11-30', '-7 days'), julianday('2026-11-30') - "
                                          "julianday('2026-11-01')"})
    assert json.loads(r.content)["rows"] == [["2026-11-23", 29.0]]
    r = execute("query_database", {"sql": "SELECT count(*) FROM customers WHERE name = 'now'"})
    assert json.loads(r.content)["rows"] == [[0]]


def test_the_memory_cap_is_named_not_an_empty_memory_error() -> None:
    # 600 MB alive at once, over the 512 MiB cap; zero blobs cost no CPU to make, so the cap (not
    # the call's time limit) answers even on a loaded machine
    sql = "SELECT " + ", ".join(["zeroblob(60000000)"] * 10)
    assert error(execute("query_database", {"sql": sql})) == MEMORY_REFUSAL
    assert error(execute_here("query_database", {"sql": sql})) == MEMORY_REFUSAL


# --------------------------------------------------------------------------- over MCP


def _processes_tagged(tag: str) -> list[int]:
    """Live processes whose environment holds ``CANARYKIT_TEST_TAG=tag`` (a server and its workers)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            env = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().split(")")[-1].split()[0]
        except OSError:
            continue
        if f"CANARYKIT_TEST_TAG={tag}".encode() in env.split(b"\0") and state != "Z":
            out.append(int(entry.name))
    return out


class Served:
    """``canarykit serve-tools database`` (or the proxy in front of it) spoken to in raw JSON-RPC."""

    def __init__(self, *argv: str) -> None:
        self.tag = uuid.uuid4().hex
        self.proc = subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env={**os.environ, "CANARYKIT_TEST_TAG": self.tag})
        self.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}})
        assert b'"id":1' in self.line()
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg: dict[str, object]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def line(self) -> bytes:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline()

    def call(self, msg_id: int, sql: str) -> None:
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": "tools/call",
                   "params": {"name": "query_database", "arguments": {"sql": sql}}})

    def answer(self, msg_id: int) -> dict[str, object]:
        while True:
            line = self.line()
            assert line, "the server closed its output"
            msg = json.loads(line)
            if msg.get("id") == msg_id:
                return dict(msg["result"])


#: The proxy passes the tag on to its upstream, so the upstream and its worker carry it too.
PROXY = (CLI, "proxy", "--trace-dir", "{tmp}", "--env", "CANARYKIT_TEST_TAG", "--")


@pytest.mark.parametrize("front", [(), PROXY], ids=["serve-tools", "proxy"])
def test_over_mcp_the_instr_query_is_stopped_and_a_client_that_leaves_mid_call_leaves_nothing_computing(
        front: tuple[str, ...], tmp_path: Path) -> None:
    served = Served(*(a.replace("{tmp}", str(tmp_path)) for a in front), CLI, "serve-tools", "database")
    try:
        served.call(2, INSTR)
        result = served.answer(2)
        assert result["isError"] is True
        text = result["content"][0]["text"]  # type: ignore[index]
        assert json.loads(text)["error"].startswith("query_database was stopped: the call took longer than the "
                                                    "tool's time limit")
        served.call(3, "SELECT count(*) FROM employees")
        assert not served.answer(3).get("isError"), "the server goes on with a fresh worker"

        served.call(4, INSTR)
        deadline = time.monotonic() + GUARD_S
        while len(_processes_tagged(served.tag)) < 2 + bool(front) and time.monotonic() < deadline:
            time.sleep(0.05)  # a worker is running the query
        assert len(_processes_tagged(served.tag)) == 2 + bool(front)
        assert served.proc.stdin is not None
        served.proc.stdin.close()  # the client goes away mid-call
        assert served.proc.wait(timeout=GUARD_S) == 0
        while _processes_tagged(served.tag) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _processes_tagged(served.tag) == [], "no server, proxy or worker process left behind"
    finally:
        served.proc.kill()
        served.proc.wait()
