"""The plugin's classes: :class:`LogHandler` feeds Snakemake's log records to the study console
and the full log (:mod:`canarykit.study.console`)."""

from __future__ import annotations

import logging
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from snakemake_interface_logger_plugins.base import LogHandlerBase
from snakemake_interface_logger_plugins.settings import LogHandlerSettingsBase

from canarykit.study.console import CONSOLE_ENV, ConsoleView, FullLog


@dataclass
class LogHandlerSettings(LogHandlerSettingsBase):
    """No settings: the full log's place follows study.output_dir."""


class LogHandler(LogHandlerBase):
    def __post_init__(self) -> None:
        from snakemake.logging import DefaultFilter, DefaultFormatter

        os.environ[CONSOLE_ENV] = "quiet"  # jobs inherit it: their stderr goes to their logs only
        common = self.common_settings
        dryrun = bool(getattr(common, "dryrun", False))
        quiet = {str(getattr(q, "name", q)).lower() for q in getattr(common, "quiet", None) or ()}
        # under --quiet progress (or all) Snakemake reports no finished job (a DVC stage's command)
        self.view = ConsoleView(dryrun=dryrun, counts_jobs=not quiet & {"progress", "all"})
        formatter = DefaultFormatter(None, getattr(common, "show_failed_logs", False))
        # the full log keeps what Snakemake's own console shows (its filter, without --quiet)
        self.full_filter = DefaultFilter(None, getattr(common, "debug_dag", False), getattr(common, "verbose", False),
                                         getattr(common, "dryrun", False), getattr(common, "printshellcmds", False))
        self.full = FullLog(self.view, formatter.format)
        self.format = formatter.format
        self.stream = sys.stdout if getattr(common, "stdout", False) else sys.stderr
        self.closed = False
        self.console_fd: int | None = None
        self.jobs_stderr: str | None = None
        if not dryrun and self.stream is sys.stderr:
            self._route_jobs_stderr()
        self.printing = threading.Lock()
        self.status_shown = False
        # a long stage (the agent runs, the judges) says where it is at least every 30 s
        self.stop_heartbeat = threading.Event()
        if not dryrun:
            threading.Thread(target=self._heartbeat, name="canarykit-heartbeat", daemon=True).start()

    def _route_jobs_stderr(self) -> None:
        """The console keeps the terminal; file descriptor 2, which every job inherits, goes to
        ``.snakemake/log/canarykit-stderr-<pid>.log``: what a job prints before its own log is
        open (a KeyboardInterrupt traceback on Ctrl-C while it imports) stays off the screen."""
        try:
            path = Path(".snakemake/log") / f"canarykit-stderr-{os.getpid()}.log"
            path.parent.mkdir(parents=True, exist_ok=True)
            console_fd = os.dup(2)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        except OSError:  # no place for it: jobs keep the terminal
            return
        sys.stderr.flush()
        os.dup2(fd, 2)
        os.close(fd)
        self.console_fd = console_fd
        self.stream = os.fdopen(os.dup(console_fd), "w", buffering=1, encoding="utf-8", errors="replace")
        self.jobs_stderr = str(path)

    def _restore_stderr(self) -> None:
        if self.console_fd is not None:
            sys.stderr.flush()
            os.dup2(self.console_fd, 2)
            os.close(self.console_fd)
            self.console_fd = None
            if self.jobs_stderr and Path(self.jobs_stderr).is_file() and not Path(self.jobs_stderr).stat().st_size:
                Path(self.jobs_stderr).unlink(missing_ok=True)

    def _heartbeat(self) -> None:
        # On a terminal the heartbeat is one status line rewritten in place (a long study does
        # not fill the screen with them); elsewhere (a log, CI) each is a line of its own.
        live = bool(getattr(self.stream, "isatty", lambda: False)())
        while not self.stop_heartbeat.wait(5.0):
            try:
                with self.printing:
                    lines = self.view.heartbeat()
                    if lines and live:
                        self.stream.write("\r\x1b[K" + lines[-1].strip())
                        self.stream.flush()
                        self.status_shown = True
                        lines = []
                self._print(lines)
            except Exception:  # the heartbeat never stops the run
                pass

    def _print(self, lines: list[str]) -> None:
        with self.printing:
            if lines and self.status_shown:  # the status line gives way to the next line
                self.stream.write("\r\x1b[K")
                self.status_shown = False
            for line in lines:
                print(line, file=self.stream, flush=True)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if self.view.dryrun and record.levelno < logging.ERROR:
                # a dry run is for reading the plan: Snakemake's own job list (rules, files, why),
                # errors still as the console's one line
                if self.full_filter.filter(record):
                    text = self.format(record)
                    self._print([text] if text else [])
                return
            if not self.view.dryrun and self.full_filter.filter(record):
                self.full.write(record)
            with self.printing:
                lines = self.view.lines(record)
            self._print(lines)
        except Exception:
            self.handleError(record)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.stop_heartbeat.set()
            self._print(self.view.closing())
            self.full.close()
            self._restore_stderr()
        super().close()

    @property
    def writes_to_stream(self) -> bool:
        return True

    @property
    def writes_to_file(self) -> bool:
        return False

    @property
    def has_filter(self) -> bool:
        return True

    @property
    def has_formatter(self) -> bool:
        return True

    @property
    def needs_rulegraph(self) -> bool:
        return False
