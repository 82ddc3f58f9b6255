"""Glue for the thin scripts under scripts/: logging to the rule's log, clean user errors, and
running a script outside Snakemake for debugging.

Every script ends with::

    if __name__ == "__main__":
        run_script(globals().get("snakemake"), main, rule="detect")

Under Snakemake the ``snakemake`` object is given; run by hand (``python scripts/judging/detect.py
model=oracle``, from the workflow's directory) :func:`mock_snakemake` builds the same object
from the workflow for the job of that rule with those wildcards, so the script reads the same
inputs, params and config and writes the same outputs and log as the rule's job would.
Importing a script runs nothing.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from ..errors import CanaryKitError, InputError
from .console import CONSOLE_ENV


class _Tee:
    def __init__(self, *streams: TextIO) -> None:
        self.streams = streams

    def write(self, text: str) -> int:
        for s in self.streams:
            s.write(text)
            s.flush()
        return len(text)

    def flush(self) -> None:
        for s in self.streams:
            s.flush()


def run_script(snakemake: Any, main: Callable[[Any], None], *, rule: str | Sequence[str] | None = None,
               argv: Sequence[str] | None = None) -> None:
    """Run ``main(snakemake)`` with stderr sent to the rule's log (and the terminal, unless the
    one-screen console runs: :data:`canarykit.study.console.CONSOLE_ENV`).

    ``snakemake`` is the object Snakemake gives a script; ``None`` (a script run by hand) builds
    it with :func:`mock_snakemake` for ``rule`` from ``argv`` (default ``sys.argv[1:]``:
    ``wildcard=value`` words and ``--configfile FILE``; a script that serves several rules
    takes the rule's name as its first word). A user error (:class:`CanaryKitError`)
    prints one message naming the file and the field and exits with status 2; outputs already
    written by earlier rules are left in place.
    """
    if snakemake is None:
        words = list(sys.argv[1:] if argv is None else argv)
        rules = [rule] if isinstance(rule, str) else list(rule or ())
        try:
            if len(rules) > 1:  # a script of several rules: the first word names the rule
                if not words or words[0] not in rules:
                    raise InputError("command line", "rule", f"name the rule first: one of {', '.join(rules)}")
                rules = [words.pop(0)]
            if not rules:
                raise TypeError("run_script: no snakemake object and no rule to build one for")
            snakemake = mock_snakemake(rules[0], *words)
        except CanaryKitError as exc:
            print(f"canarykit: error: {exc}", file=sys.stderr)
            sys.exit(2)
    log_path = snakemake.log[0] if len(snakemake.log) else None
    log: TextIO | None = open(log_path, "w", buffering=1, encoding="utf-8") if log_path else None  # noqa: SIM115
    real_stderr = sys.stderr
    if log is not None:
        # under the one-screen console (make run) the job writes to its log only
        quiet = os.environ.get(CONSOLE_ENV) == "quiet"
        sys.stderr = log if quiet else _Tee(real_stderr, log)  # type: ignore[assignment]
    try:
        main(snakemake)
    except CanaryKitError as exc:
        print(f"canarykit: error: {exc}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:  # Ctrl-C: Snakemake says it once; the job's log says where it stopped
        print("canarykit: interrupted (Ctrl-C); finished runs are kept", file=sys.stderr)
        sys.exit(130)
    except Exception:
        traceback.print_exc(file=sys.stderr)
        raise
    finally:
        sys.stderr = real_stderr
        if log is not None:
            log.close()


def mock_snakemake(rule: str, *args: str, snakefile: str | os.PathLike[str] = "Snakefile") -> Any:
    """The ``snakemake`` object a script gets in the job of ``rule``, built outside Snakemake.

    ``args``: ``wildcard=value`` words choosing the job (needed when the rule has several
    jobs in the study, e.g. ``model=oracle``) and ``--configfile FILE`` (a profile merged over
    params.yaml, as on Snakemake's command line). Run from the workflow's directory. The whole
    study's DAG is built, as ``snakemake -n`` would (seconds), so the job is the one a real
    invocation would run, with its inputs, params, threads, resources and log.
    """
    from snakemake.api import SnakemakeApi
    from snakemake.script import Snakemake
    from snakemake.settings.enums import Quietness
    from snakemake.settings.types import (
        ConfigSettings,
        DAGSettings,
        OutputSettings,
        ResourceSettings,
    )

    wanted: dict[str, str] = {}
    configfiles: list[Path] = []
    words = list(args)
    while words:
        word = words.pop(0)
        if word == "--configfile" and words:
            configfiles.append(Path(words.pop(0)))
        elif "=" in word and not word.startswith("-"):
            key, _, value = word.partition("=")
            wanted[key] = value
        else:
            raise InputError("command line", word, "expected wildcard=value or --configfile FILE")
    if not Path(snakefile).is_file():
        raise InputError(str(snakefile), "Snakefile", "not found: run the script from the workflow's directory")
    with SnakemakeApi(OutputSettings(quiet={Quietness.ALL})) as api:
        wf_api = api.workflow(resource_settings=ResourceSettings(cores=1),
                              config_settings=ConfigSettings(configfiles=configfiles),
                              snakefile=Path(snakefile))
        wf_api.dag(DAGSettings(targets={"all"}, forceall=True))
        wf = wf_api._workflow  # the loaded workflow: the public API offers no job-level view
        wf._prepare_dag(forceall=True, ignore_incomplete=True, lock_warn_only=True, nolock=True)
        wf._build_dag()
        jobs = [j for j in wf.dag.jobs if j.rule.name == rule]
        if not jobs:
            raise InputError(str(snakefile), rule, f"no job of rule {rule!r} in this study")
        chosen = [j for j in jobs if all(str(j.wildcards_dict.get(k)) == v for k, v in wanted.items())]
        if len(chosen) != 1:
            choices = sorted(" ".join(f"{k}={v}" for k, v in j.wildcards_dict.items()) for j in jobs)
            raise InputError("command line", "wildcards",
                             f"{len(chosen)} jobs of rule {rule!r} match {wanted or 'no wildcards'}; "
                             f"choose one of: {'; '.join(choices[:12])}{' ...' if len(choices) > 12 else ''}")
        job = chosen[0]
        return Snakemake(job.input, job.output, job.params, job.wildcards, job.threads, job.resources,
                         job.log, wf.config, job.rule.name, None)
