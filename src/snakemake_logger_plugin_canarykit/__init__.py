"""Snakemake logger plugin ``canarykit`` (``snakemake --logger canarykit``, as ``make run``
does): the one-screen console of :mod:`canarykit.study.console`, and the full log in
``<study.output_dir>/logs/snakemake.log``. A thin shell: Snakemake finds logger plugins by
their top-level module name (``snakemake_logger_plugin_<name>``)."""

from .handler import LogHandler, LogHandlerSettings
