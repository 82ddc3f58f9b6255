"""What a person sees of a run: the console of ``make run`` and the errors about targets.

``make run`` runs Snakemake with ``--logger canarykit`` (Snakemake's own logger-plugin
mechanism; the plugin, ``snakemake_logger_plugin_canarykit``, is a thin shell over
:class:`ConsoleView`). The console then holds one screen:

- one line when the run starts (jobs, rules, where the full log goes);
- a progress line per stage (a Snakemake rule) when its last job finishes, with the jobs done
  so far, and after the run index the runs with their rate (runs per second);
- errors as they happen, each in a few lines: a user error (``canarykit: error: ...``) as its
  own line, without Snakemake's ``WorkflowError in file ... line N`` wrapper and traceback; a
  failed job as its rule, its log and the log's last line;
- a closing block: the oracle instrument check, the report's path, the main tables' paths,
  the full log and the next command to try.

The full Snakemake log (every rule block, as without the plugin) is written beside the other
logs, ``<study.output_dir>/logs/snakemake.log``; jobs' own progress lines go to their rule
logs only (:data:`CONSOLE_ENV`, read by :func:`canarykit.study.workflow.run_script`).

:func:`unknown_target_error` is the check the workflow runs when it is parsed: a target that
no rule makes gets one line that lists the study's targets (with a "did you mean"), instead of
Snakemake's banner and its input-function hint.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import did_you_mean
from ..store.paths import brace_paths
from .failures import VERDICT, Failures, invocation_command, read_verdict, retry_command

#: Set (to ``quiet``) by the console in the main Snakemake process, inherited by every job:
#: a script's stderr then goes to its rule's log only, not to the terminal.
CONSOLE_ENV = "CANARYKIT_CONSOLE"
#: Set by the workflow (rules/common.smk) to study.output_dir: where the console finds the
#: study's outputs and writes the full log.
OUT_ENV = "CANARYKIT_OUT"
#: The full log of a run with the console, under the study's output directory: a link to the
#: latest invocation's own file under :data:`FULL_LOG_DIR` (a failed call never overwrites
#: the log of an earlier one).
FULL_LOG = "logs/snakemake.log"
#: One file per invocation, ``<UTC time>-<pid>.log``; the oldest beyond :data:`KEEP_LOGS` are removed.
FULL_LOG_DIR = "logs/snakemake"
KEEP_LOGS = 50
#: The judges' validation (the oracle check, the verdicts by status), read by the closing block.
VALIDATION = "judge/validation.json"
#: The tables the closing block names (all of them are listed under ``outputs.tables``).
MAIN_TABLES = ("table1", "table2", "table3")
#: Lines of an error message the console prints at most (the full text is in the log).
MAX_ERROR_LINES = 12
#: A long stage says where it is at least this often (seconds).
HEARTBEAT_S = 30.0
#: What Snakemake logs when Ctrl-C (SIGINT) reaches it.
_INTERRUPTED = ("Terminating processes on user request", "Cancelling snakemake on user request")
#: An agent job's progress line in its log (canarykit.agents._summary.Progress).
_RUNS_PROGRESS = re.compile(r"\[canarykit runs\] (\d+)/(\d+) done, [\d.]+/s, \d+ errors, spend \$([\d.]+)(?:; lanes (.*))?")
#: One adaptive provider lane in a progress line (canarykit.agents._summary.lanes_text).
_LANE = re.compile(r"(\S+) (\d+)/(\d+) ([\d.]+)/s")

_NOISE = (
    "Building DAG of jobs",
    "Select jobs to execute",
    "Assuming unrestricted shared filesystem",
    "Using shell:",
    "Provided cores:",
    "Rules claiming more threads",
    "Execute ",
    "Complete log",
    "Shutting down",
    "Exiting because a job execution failed",
    "Will exit after finishing",
    "Removing output files of failed job",
    "Storing output in storage",
    "Waiting at most",
)


def _event(record: logging.LogRecord) -> str:
    event = getattr(record, "event", None)
    return str(event) if event is not None else ""


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def _path(item: str) -> str:
    """A file as Snakemake formats it in a job's record (``path (annotation)``): the path."""
    return str(item).split(" (", 1)[0].strip()


def user_error_lines(text: str) -> list[str] | None:
    """The lines of a canarykit user error inside a Snakemake error text (``WorkflowError in file
    ..., line 43:`` then ``canarykit: error: ...`` then the traceback), or None when the text
    holds none."""
    start = text.find("canarykit: error:")
    if start < 0:
        return None
    lines = []
    for line in text[start:].splitlines():
        if line.lstrip().startswith('File "') or line.startswith("Traceback"):
            break
        if line.strip():
            lines.append(line.rstrip())
    return lines[:MAX_ERROR_LINES]


def last_line(path: str | Path) -> str:
    """The last non-empty line of a log file ("" when it is missing or empty)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 8192))
            tail = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    return lines[-1][:400] if lines else ""


class ConsoleView:
    """Turns Snakemake's log records into the lines of a one-screen console.

    :meth:`lines` takes one record and returns what to print now (often nothing);
    :meth:`closing` returns the closing block. ``out`` is the study's output directory (by
    default read, when needed, from :data:`OUT_ENV`); ``clock`` is for tests.
    """

    def __init__(self, out: str | None = None, clock: Callable[[], float] = time.monotonic, *,
                 dryrun: bool = False, counts_jobs: bool = True) -> None:
        self._out = out
        self.dryrun = dryrun
        #: False under ``--quiet progress`` (a DVC stage's command): Snakemake then reports no
        #: finished job, so success is the absence of errors and the closing block is short
        #: (a study's summary belongs to the invocation that runs the whole study)
        self.counts_jobs = counts_jobs
        self.clock = clock
        self.t0 = clock()
        #: wall clock at the start: a DVC stage says only what its own invocation found
        self.started_at = time.time()
        self.rule_of: dict[int, str] = {}
        self.planned: Counter[str] = Counter()
        self.done: Counter[str] = Counter()
        #: the jobs that have finished (a finished agent job's lanes no longer count)
        self.done_jobs: set[int] = set()
        self.first_start: dict[str, float] = {}
        self.total = 0
        self.finished = 0
        self.failed_jobs = 0
        self.errors = 0
        self.nothing_to_do = False
        self.started = False
        #: Ctrl-C reached Snakemake: one line said it, everything after it is noise
        self.interrupted = False
        #: the workflow's final check refused the study's failed runs (study.allow_failed)
        self.failures: Failures | None = None
        #: when the console last printed a line (the heartbeat keeps silences under HEARTBEAT_S)
        self.last_line_at = self.t0
        #: the logs of the jobs started so far, by job id (the heartbeat reads agent jobs' progress)
        self.logs_of: dict[int, list[str]] = {}
        #: a live view of the model layer's lanes (concurrency, rate), added to the heartbeat
        #: when given: the hook for the lanes' ``snapshot()``, as text
        self.lanes: Callable[[], str] | None = None

    @property
    def out(self) -> str:
        return self._out or os.environ.get(OUT_ENV) or "results"

    @property
    def full_log(self) -> str:
        return f"{self.out}/{FULL_LOG}"

    def lines(self, record: logging.LogRecord) -> list[str]:
        out = self._lines(record)
        if out:
            self.last_line_at = self.clock()
        return out

    def _lines(self, record: logging.LogRecord) -> list[str]:
        event = _event(record)
        if self.interrupted:  # Ctrl-C: the jobs' and Snakemake's reactions to it are not news
            return []
        text0 = record.getMessage() if record.msg is not None and isinstance(record.msg, str) else ""
        if text0.startswith(_INTERRUPTED):
            self.interrupted = True
            return [f"canarykit: interrupted (Ctrl-C); finished work is kept. Resume with: {invocation_command()}"]
        if event == "run_info" and isinstance(getattr(record, "stats", None), Mapping):
            stats = dict(record.stats)  # type: ignore[attr-defined]
            self.total = int(stats.pop("total", sum(stats.values())))
            self.planned = Counter({str(k): int(v) for k, v in stats.items()})
            if self.started:  # said again (a dry run, a DAG updated by a checkpoint): counts only
                return []
            self.started = True
            if self.dryrun:
                rules = ", ".join(f"{rule} ({n})" for rule, n in self.planned.items() if rule != "all")
                return [f"canarykit: a dry run: {self.total} jobs over {len(self.planned)} rules would run: {rules}"]
            return [f"canarykit: {self.total} jobs over {len(self.planned)} rules; the full log: {self.full_log}"]
        if event == "job_info":
            rule = str(getattr(record, "rule_name", ""))
            self.rule_of[int(record.jobid)] = rule  # type: ignore[attr-defined]
            self.logs_of[int(record.jobid)] = [_path(f) for f in getattr(record, "log", None) or []]  # type: ignore[attr-defined]
            self.first_start.setdefault(rule, self.clock())
            return []
        if event == "job_finished":
            return self._finished(int(record.job_id))  # type: ignore[attr-defined]
        if event in ("job_error", "group_error"):
            return self._job_error(record)
        if event in ("progress", "shellcmd", "workflow_started", "resources_info", "debug_dag", "rulegraph", "group_info"):
            return []
        text = record.getMessage() if record.msg is not None else ""
        if text.startswith("Nothing to be done"):
            self.nothing_to_do = True
            return ["canarykit: nothing to do: every output is up to date"]
        if event == "error" or record.levelno >= logging.ERROR:
            return self._error(text, getattr(record, "exception", ""))
        if record.levelno >= logging.WARNING and text.strip() and not text.startswith(_NOISE):
            return [f"warning: {text.strip().splitlines()[0][:300]}"]
        return []

    def _finished(self, jobid: int) -> list[str]:
        self.finished += 1
        self.done_jobs.add(jobid)
        rule = self.rule_of.get(jobid)
        if rule is None:
            return []
        self.done[rule] += 1
        if self.done[rule] < self.planned.get(rule, 1) or rule == "all":  # `all` only gathers
            return []
        now = self.clock()
        n = self.done[rule]
        line = (f"  {rule:<20} {n:>4} job{'s' if n != 1 else ' '}  {_duration(now - self.first_start.get(rule, now)):>6}"
                f"   [{self.finished}/{self.total or self.finished} jobs, {_duration(now - self.t0)}]")
        out = [line]
        if rule == "run_index":
            out += self._runs_line(now)
        return out

    def _runs_line(self, now: float) -> list[str]:
        try:
            summary = json.loads(Path(self.out, "logs/run-summary.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        wall = now - self.first_start.get("run_agents", self.first_start.get("run_index", now))
        executed = int(summary.get("executed", 0))
        rate = f", {executed / wall:.1f} runs/s" if executed and wall > 0 else ""
        return [f"  {'':<20} runs: {summary.get('total', 0)} ({executed} executed, {summary.get('reused', 0)} reused, "
                f"{summary.get('failed', 0)} failed){rate}"]

    def _job_error(self, record: logging.LogRecord) -> list[str]:
        self.failed_jobs += 1
        self.errors += 1
        rule = getattr(record, "rule_name", "?")
        logs = [_path(f) for f in getattr(record, "log", None) or []]
        out = [f"error: rule {rule} (job {getattr(record, 'jobid', '?')}) failed"
               + (f"; its log: {', '.join(logs)}" if logs else f"; the full log: {self.full_log}")]
        for log in logs[:1]:
            if line := last_line(log):
                out.append(f"  {line}")
        return out

    def _error(self, text: str, exception: str) -> list[str]:
        if not text.strip() or text.startswith(_NOISE):
            return []
        self.errors += 1
        user = user_error_lines(text)
        if user is not None and "study.allow_failed" in text:
            verdict = read_verdict(self.out)
            if verdict is not None and verdict.exceeded:  # the closing block says it, with the first failure
                self.failures = verdict
                return []
        if user is not None:
            return user
        if "Traceback (most recent call last)" in text:
            return [_exception_line(text)]
        lines = [line.rstrip() for line in text.strip().splitlines() if line.strip()]
        if exception and lines and lines[0].rstrip(":") == exception:
            lines = lines[1:]  # "MissingRuleException:" on a line of its own
        lines = [line.replace(" (if you use input functions make sure that they don't raise unexpected exceptions)", "")
                 for line in lines]
        if len(lines) > MAX_ERROR_LINES:
            lines = [*lines[:MAX_ERROR_LINES], f"... (the full text: {self.full_log})"]
        return [f"error: {lines[0]}", *lines[1:]] if lines else []

    def _failed_runs_block(self, failures: Failures, elapsed: str) -> list[str]:
        """The closing block of a study whose failed runs exceed study.allow_failed: what failed
        first (class, host, model), where the results and logs are, the command that retries."""
        block = ["", f"canarykit: FAILED after {elapsed}: {failures.headline()}"]
        if failures.first is not None:
            first = failures.first
            block.append(f"  first failure: {first.text()}" + (f": {first.message}" if first.message else ""))
        report = Path(self.out, "report.html")
        if report.exists():
            block.append(f"  report:    {report} (its first screen leads with the failures)")
        block.append(f"  run logs:  {self.out}/logs/run_agents/")
        block.append(f"  full log:  {self.full_log}")
        block.append(f"  next:      fix the cause, then retry them: {retry_command(failures.first)} "
                     "(or accept them with study.allow_failed)")
        return block

    def heartbeat(self) -> list[str]:
        """A line when the console has been silent for :data:`HEARTBEAT_S` while jobs run:
        the agent runs done of the total, their rate, the ETA and the spend so far (from the
        agent jobs' progress lines in their logs), else the rules still running."""
        now = self.clock()
        if (not self.started or self.dryrun or self.interrupted or self.nothing_to_do
                or self.finished >= self.total or now - self.last_line_at < HEARTBEAT_S):
            return []
        self.last_line_at = now
        clock = f"[{self.finished}/{self.total} jobs, {_duration(now - self.t0)}]"
        lanes = ""
        if self.lanes is not None:
            try:
                lanes = f"; {self.lanes()}"
            except Exception:  # a view that failed to render never stops the run
                lanes = ""
        runs = self._runs_progress(now)
        if runs:
            return [f"  {'':<20} {runs}{lanes}   {clock}"]
        running = Counter(rule for jid, rule in self.rule_of.items() if rule != "all") - self.done
        what = ", ".join(f"{rule} ({n} job{'s' if n != 1 else ''})" for rule, n in sorted(running.items()) if n > 0)
        return [f"  {'':<20} still running: {what or 'waiting for jobs'}{lanes}   {clock}"]

    def _runs_progress(self, now: float) -> str:
        """``runs 1,234/29,448, 41.2/s, ETA 11m40s, $0.00 spent`` over the agent jobs started
        so far, the jobs not yet started counted at the started jobs' mean size ("" when no
        agent job has reported yet)."""
        if "run_agents" not in self.first_start or self.done["run_agents"] >= self.planned.get("run_agents", 0):
            return ""
        done = total = 0
        spend = 0.0
        jobs = 0
        lanes: dict[str, list[float]] = {}  # provider: [limit, maximum, calls/s] over running jobs
        for jid, rule in self.rule_of.items():
            if rule != "run_agents":
                continue
            for log in self.logs_of.get(jid, [])[:1]:
                m = _last_progress(log)
                if m is not None:
                    done, total, spend, jobs = done + m[0], total + m[1], spend + m[2], jobs + 1
                    if jid not in self.done_jobs:
                        for p, limit, maximum, rate in _LANE.findall(m[3]):
                            lane = lanes.setdefault(p, [0.0, 0.0, 0.0])
                            lane[0], lane[1], lane[2] = lane[0] + int(limit), lane[1] + int(maximum), lane[2] + float(rate)
        if not jobs:
            return ""
        planned = self.planned.get("run_agents", jobs)
        total = round(total * max(planned, jobs) / jobs)
        wall = now - self.first_start["run_agents"]
        rate = done / wall if wall > 0 else 0.0
        eta = f", ETA {_duration((total - done) / rate)}" if rate > 0 and total > done else ""
        shown = "".join(f"; {p} concurrency {int(v[0])}/{int(v[1])}, {v[2]:.1f} calls/s" for p, v in sorted(lanes.items()))
        return f"runs {done:,}/{total:,}, {rate:.1f}/s{eta}, ${spend:.2f} spent{shown}"

    def succeeded(self) -> bool:
        if not self.counts_jobs:
            return self.errors == 0 and self.failed_jobs == 0
        return self.errors == 0 and (self.nothing_to_do or (self.started and self.finished >= self.total))

    def closing(self) -> list[str]:
        """The closing block (nothing when the run did not start: its error was the message,
        nor after Ctrl-C: its one line said it)."""
        if self.dryrun or self.interrupted or not (self.started or self.nothing_to_do or self.errors):
            return []
        elapsed = _duration(self.clock() - self.t0)
        if self.failures is not None:
            return self._failed_runs_block(self.failures, elapsed)
        if not self.succeeded():
            if not self.started and not self.nothing_to_do:
                return []
            done = f" ({self.finished} of {self.total} done)" if self.counts_jobs else ""
            return ["", f"canarykit: the run stopped after {elapsed}: {self.failed_jobs} job(s) failed{done}",
                    f"  full log:  {self.full_log}",
                    f"  next:      fix what the error says, then run `{invocation_command()}` again (finished work is reused)"]
        out = self.out
        # a DVC stage (no job counts) says what its own invocation found, not an earlier stage's
        since = None if self.counts_jobs else self.started_at
        verdict = read_verdict(out) if _written_since(Path(out, VERDICT), since) else None
        failed = []
        if verdict is not None and verdict.failed:  # allowed by study.allow_failed, still said
            first = f"; the first: {verdict.first.text()}" if verdict.first else ""
            failed = [f"  failed runs: {verdict.headline()}, allowed{first}"]
        verdicts = failed_verdicts(out) if _written_since(Path(out, VALIDATION), since) else None
        failed += [verdicts] if verdicts else []
        if not self.counts_jobs:  # one stage of a DVC pipeline: done, and failed runs or verdicts if any
            return [f"canarykit: done in {elapsed}", *failed]
        block = ["", f"canarykit: done in {elapsed}", *failed]
        block.append(f"  instrument check: {instrument_check(out)}")
        report = Path(out, "report.html")
        if report.exists():
            block.append(f"  report:    {report}")
        tables = [str(Path(out, f"{t}.csv")) for t in MAIN_TABLES if Path(out, f"{t}.csv").exists()]
        if tables:
            block.append(f"  tables:    {', '.join(tables)} (and their .md; all tables: {out}/*.csv)")
        if Path(out, "figures").is_dir():
            block.append(f"  figures:   {out}/figures/")
        block.append(f"  full log:  {self.full_log}")
        block.append(f"  next:      open {report} in a browser, or: cat {out}/table1.md")
        return block


def _last_progress(path: str | Path) -> tuple[int, int, float, str] | None:
    """An agent job's last progress line in its log: (runs done, runs in the job, spend, its
    adaptive lanes as text)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 16384))
            tail = fh.read().decode("utf-8", "replace")
    except OSError:
        return None
    found = _RUNS_PROGRESS.findall(tail)
    if not found:
        return None
    done, total, spend, lanes = found[-1]
    return int(done), int(total), float(spend), lanes


def _exception_line(text: str) -> str:
    """A Python traceback inside an error text, as its one line that says what happened (the
    last ``SomeError: message`` line): a misspelt ``--configfile`` reads
    ``error: --configfile: No such file or directory: 'my.yaml'``."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    last = next((line for line in reversed(lines) if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt)\b", line)),
                lines[-1] if lines else "an unexpected error")
    missing = re.match(r"FileNotFoundError: .*No such file or directory: '(.+)'$", last)
    if missing and "configfile" in text.lower():
        path = Path(missing.group(1))
        try:
            near = [p.name for p in (path.parent if str(path.parent) else Path(".")).iterdir() if p.suffix in (".yaml", ".yml")]
        except OSError:
            near = []
        return f"canarykit: error: {path}: --configfile: file not found{did_you_mean(path.name, near)}"
    return f"error: {last[:400]}"


def _written_since(path: Path, since: float | None) -> bool:
    try:
        return since is None or path.stat().st_mtime >= since
    except OSError:
        return False


def failed_verdicts(out: str | Path) -> str | None:
    """The closing block's line for verdicts a judge could not give (``judge/validation.json``
    counts them by role), or None when every verdict was given."""
    try:
        counts = json.loads(Path(out, VALIDATION).read_text(encoding="utf-8")).get("counts") or {}
    except (OSError, ValueError, AttributeError):
        return None
    parts = [f"judge {role} {int(c['error'])}" for role, c in counts.items() if isinstance(c, Mapping) and c.get("error")]
    if not parts:
        return None
    return (f"  failed verdicts: {', '.join(parts)} (never cached: the next run judges them again; "
            f"why: {out}/logs/judge_<role>/)")


def instrument_check(out: str | Path) -> str:
    """The oracle instrument check of a study's judge validation, in words."""
    path = Path(out, VALIDATION)
    try:
        check = json.loads(path.read_text(encoding="utf-8")).get("oracle_check")
    except (OSError, ValueError):
        return f"not available ({path} missing)"
    if not check:
        return "no oracle agent in this study"
    runs, passed = check.get("runs", 0), check.get("passed", 0)
    if check.get("ok"):
        return f"ok: the oracle passed {passed} of {runs} runs"
    return (f"FAILED: the oracle passed {passed} of {runs} runs; a configuration or task-suite problem, "
            f"not a result (details: {path})")


def study_targets(out: str, outputs: Mapping[str, Sequence[str]], formats: Sequence[str]) -> list[str]:
    """The files a person asks for by name: the tables, stats.json, the report, the figures."""
    return [
        *[f"{out}/{t}.csv" for t in outputs.get("tables", [])],
        *[f"{out}/{t}.md" for t in outputs.get("tables", [])],
        f"{out}/stats.json",
        f"{out}/report.html",
        *[f"{out}/figures/{f}.{fmt}" for f in outputs.get("figures", []) for fmt in formats],
    ]


def unknown_target_error(targets: Iterable[str], rules: Sequence[Any], named: Sequence[str],
                         target_rules: Sequence[str]) -> str | None:
    """The message for the first requested target no rule makes (None when every one is made).

    ``rules``: the workflow's rules (each with ``name`` and ``is_producer(path)``); ``named``:
    the study's named files (:func:`study_targets`); ``target_rules``: the rule names a person
    asks for. A file that exists is a target Snakemake handles itself.
    """
    names = {r.name for r in rules}
    for target in targets:
        if target in names or Path(target).exists():
            continue
        path = os.path.normpath(os.path.relpath(target) if os.path.isabs(target) else target)  # as Snakemake does
        if any(r.is_producer(path) for r in rules if getattr(r, "products", None)):
            continue
        kind = "rule or file"
        hint = did_you_mean(target, [*named, *target_rules])
        return (f"canarykit: error: {target}: no {kind} of this study by that name{hint}; "
                f"targets: {', '.join(target_rules)}; files: {', '.join(brace_paths(named))}")
    return None


def cli_targets(argv: Sequence[str]) -> list[str]:
    """The targets on a ``snakemake`` command line (``argv`` as in :data:`sys.argv`), read with
    Snakemake's own argument parser; none when the process is not the ``snakemake`` command
    (a script building the workflow through the API, a test)."""
    if not argv or Path(argv[0]).name != "snakemake":
        return []
    from snakemake.cli import get_argument_parser

    try:
        args, _ = get_argument_parser().parse_known_args(list(argv[1:]))
    except SystemExit:
        return []
    return [str(t) for t in getattr(args, "targets", None) or []]


def open_invocation_log(out: Path, now: float | None = None) -> Any:
    """Open this invocation's own full log, ``<out>/logs/snakemake/<UTC time>-<pid>.log``, and
    point ``<out>/logs/snakemake.log`` at it (a relative symlink, replaced atomically).

    Each call of Snakemake keeps its log: a failed call (a typo in a profile) no longer
    overwrites the log of the study it failed next to. A ``snakemake.log`` that is a plain
    file (written before logs were per invocation) is moved into the directory first, and only
    the newest :data:`KEEP_LOGS` files are kept."""
    logs = out / FULL_LOG_DIR
    logs.mkdir(parents=True, exist_ok=True)
    link = out / FULL_LOG
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))
    if link.is_file() and not link.is_symlink():  # an older, single log: keep it with the others
        old = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(link.stat().st_mtime))
        os.replace(link, logs / f"{old}-0.log")
    path, n = logs / f"{stamp}-{os.getpid()}.log", 1
    while path.exists():  # two invocations in one second from one process (a test, a notebook)
        n += 1
        path = logs / f"{stamp}-{os.getpid()}-{n}.log"
    fh = path.open("x", encoding="utf-8")
    tmp = link.with_name(f".{link.name}.{os.getpid()}")
    try:
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(Path(FULL_LOG_DIR).name + "/" + path.name)
        os.replace(tmp, link)
    except OSError:  # a filesystem without symlinks: the latest log is still in the directory
        tmp.unlink(missing_ok=True)
    for stale in sorted(logs.glob("*.log"), key=lambda f: (f.stat().st_mtime_ns, f.name))[:-KEEP_LOGS]:
        stale.unlink(missing_ok=True)
    return fh


class FullLog:
    """The full Snakemake log of a run with the console: every record, formatted as Snakemake's
    own stream would be without the console, buffered until the study's output directory is
    known (the workflow has been parsed), then written to this invocation's own file
    (:func:`open_invocation_log`; ``<out>/logs/snakemake.log`` links to the latest)."""

    def __init__(self, view: ConsoleView, format_record: Callable[[logging.LogRecord], str]) -> None:
        self.view = view
        self.format_record = format_record
        self.buffer: list[str] = []
        self.fh: Any = None

    def write(self, record: logging.LogRecord) -> None:
        try:
            text = self.format_record(record)
        except Exception:  # a record the default formatter cannot render: its plain message
            text = str(record.msg)
        if not text:
            return
        if self.fh is None and (os.environ.get(OUT_ENV) or self.view.started or _event(record) == "error"):
            self.fh = open_invocation_log(Path(self.view.out))
            self.fh.writelines(self.buffer)
            self.buffer = []
        if self.fh is None:
            self.buffer.append(text + "\n")
        else:
            self.fh.write(text + "\n")
            self.fh.flush()

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()
            self.fh = None
