"""Failed runs of a study, said loudly: how many, whether more than ``study.allow_failed``
allows, the first one (its error class, the host it could not use, its model) and the
command that retries them.

The same facts feed the workflow's final check (``rules/common.smk``: a study with more
failed runs than allowed exits non-zero), the console's closing block
(:mod:`canarykit.study.console`) and the report's first screen
(:mod:`canarykit.report.failure_banner`).
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

#: Set by ``canarykit run`` for the Snakemake it starts: its own command line, so every
#: ``next:``, resume and retry line repeats the command the user typed for their study.
COMMAND_ENV = "CANARYKIT_COMMAND"
#: Where the workflow's final check leaves its verdict for the console (an untracked log).
VERDICT = "logs/failures.json"


@dataclass(frozen=True)
class FirstFailure:
    """The first failed run of a study (in run-index order)."""

    model: str
    error_class: str
    host: str
    message: str
    run_id: str
    #: whether a retry alone can fix it (agents.protocol.is_transient_reason, decided where
    #: the failure is read: this module stays free of the agents, so the console is too)
    transient: bool = False

    def text(self) -> str:
        return f"{self.error_class} from {self.host} (model {self.model})"


@dataclass(frozen=True)
class Failures:
    failed: int
    total: int
    allowed_share: float
    first: FirstFailure | None

    @property
    def share(self) -> float:
        return self.failed / self.total if self.total else 0.0

    @property
    def exceeded(self) -> bool:
        return self.failed > 0 and self.share > self.allowed_share

    def headline(self) -> str:
        """``6 of 6 runs failed (100%; study.allow_failed: 0)``."""
        return (f"{self.failed} of {self.total} runs failed ({self.share:.0%}; study.allow_failed: "
                f"{self.allowed_share:g})")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "exceeded": self.exceeded}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Failures:
        first = d.get("first")
        return cls(int(d.get("failed", 0)), int(d.get("total", 0)), float(d.get("allowed_share", 0.0)),
                   FirstFailure(**first) if isinstance(first, Mapping) else None)


def model_host(spec: Mapping[str, Any]) -> str:
    """Where a model's calls go, as a person names it: ``host:port`` of its endpoint, the
    hosted provider (``openai``), or ``in-process`` for reference agents."""
    backend = str(spec.get("backend", ""))
    if backend == "reference":
        return "in-process"
    url = spec.get("host") or spec.get("api_base")
    if backend == "ollama" and not url:
        url = os.environ.get("OLLAMA_HOST") or "http://127.0.0.1:11434"
    if url:
        from urllib.parse import urlsplit

        parts = urlsplit(str(url) if "://" in str(url) else f"http://{url}")
        if parts.hostname:
            port = parts.port or (443 if parts.scheme == "https" else 80)
            return f"{parts.hostname}:{port}"
        return str(url)
    if backend == "local":
        return "the embedded local server"
    model = str(spec.get("model") or "")
    return model.split("/", 1)[0] if "/" in model else (model or backend or "?")


def write_verdict(out: str | Path, failures: Failures | None) -> None:
    """Leave ``failures`` for the console (``<out>/logs/failures.json``; removed when None)."""
    path = Path(out, VERDICT)
    if failures is None:
        path.unlink(missing_ok=True)
        return
    from ..store.jsonio import atomic_write_text

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(failures.to_dict(), indent=1) + "\n")


def read_verdict(out: str | Path) -> Failures | None:
    try:
        return Failures.from_dict(json.loads(Path(out, VERDICT).read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None


def failure_message(failures: Failures, retry: str) -> str:
    """The workflow's final error (one line): the count, the first failure, the retry command."""
    first = f"; the first: {failures.first.text()}" if failures.first else ""
    detail = f": {failures.first.message}" if failures.first and failures.first.message else ""
    return (f"{failures.headline()}{first}{detail}; retry them: {retry} (or raise study.allow_failed "
            "to accept them)")


def study_configfiles(argv: Sequence[str] | None = None) -> list[str]:
    """The ``--configfile`` files on a ``snakemake`` command line (default :data:`sys.argv`)."""
    import sys

    argv = list(sys.argv if argv is None else argv)
    if not argv or Path(argv[0]).name != "snakemake":
        return []
    from snakemake.cli import get_argument_parser

    try:
        args, _ = get_argument_parser().parse_known_args(argv[1:])
    except SystemExit:
        return []
    return [str(f) for f in getattr(args, "configfile", None) or []]


def study_command(configfiles: Sequence[str] = (), targets: Sequence[str] = ()) -> str:
    """The command that runs this study with the console: ``canarykit run [T] --configfile F``."""
    words = ["canarykit", "run", *targets]
    if configfiles:
        words += ["--configfile", *configfiles]
    return shlex.join(words)


def invocation_command(argv: Sequence[str] | None = None) -> str:
    """The command that runs the study again, as the user typed it: ``canarykit run``'s
    (:data:`COMMAND_ENV`), else the ``snakemake`` command line, else :func:`study_command`."""
    import sys

    if os.environ.get(COMMAND_ENV):
        return os.environ[COMMAND_ENV]
    argv = list(sys.argv if argv is None else argv)
    if argv and Path(argv[0]).name == "snakemake":
        return shlex.join(["snakemake", *argv[1:]])
    return study_command()


def retry_command(first: FirstFailure | None, argv: Sequence[str] | None = None) -> str:
    """The command that retries a study's failed runs: the study's command again (a transient
    failure keeps its agent job out of date, agent.retries.rerun_failed), plus ``--forcerun
    run_agents`` when the first failure is not transient (its job is otherwise up to date)."""
    cmd = invocation_command(argv)
    if first is None or first.transient or "--forcerun" in cmd:
        return cmd
    words = shlex.split(cmd)
    if words[:1] == ["make"]:  # make run / make resume: Snakemake's options go through SMK_ARGS
        smk = next((w.split("=", 1)[1] for w in words if w.startswith("SMK_ARGS=")), "")
        return shlex.join(["make", "resume", f"SMK_ARGS={(smk + ' --forcerun run_agents').strip()}"])
    head, sep, tail = cmd.partition(" -- ")
    return f"{head} --forcerun run_agents{sep}{tail}"
