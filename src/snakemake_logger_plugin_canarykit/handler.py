"""The plugin's classes: :class:`LogHandler` feeds Snakemake's log records to the study console
and the full log (:mod:`canarykit.study.console`)."""


from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass

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
        self.view = ConsoleView(dryrun=dryrun)
        formatter = DefaultFormatter(None, getattr(common, "show_failed_logs", False))
        # the full log keeps what Snakemake's own console shows (its filter, without --quiet)
        self.full_filter = DefaultFilter(None, getattr(common, "debug_dag", False), getattr(common, "verbose", False),
                                         getattr(common, "dryrun", False), getattr(common, "printshellcmds", False))
        self.full = FullLog(self.view, formatter.format)
        self.stream = sys.stdout if getattr(common, "stdout", False) else sys.stderr
        self.closed = False

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if not self.view.dryrun and self.full_filter.filter(record):
                self.full.write(record)
            for line in self.view.lines(record):
                print(line, file=self.stream, flush=True)
        except Exception:
            self.handleError(record)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            for line in self.view.closing():
                print(line, file=self.stream, flush=True)
            self.full.close()
        super().close()

    # what Snakemake asks of a logger plugin: a console of our own, filtered and formatted here
    writes_to_stream = True
    writes_to_file = False
    has_filter = True
    has_formatter = True
    needs_rulegraph = False
