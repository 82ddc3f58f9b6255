"""Detection and judging of a whole study in one call, and the console lines of a judging step.

:func:`detect_and_judge` runs what the workflow runs as separate jobs (``rules/judging.smk``,
:mod:`canarykit.study.pipeline`), in one process: the independence check, both judges (cached), the
trap detector, the per-run table, the per-call table, the DVC metrics, the judges' counts and
the validation report. The workflow's jobs share its pieces: :class:`~._panel.StudyJudges`,
:func:`judge_lines`, :func:`write_verdict_tables` and :func:`~._report.validation_report`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from ..detection.detect import detect, load_records
from ..detection.metrics import metrics_json
from ..detection.runs_table import assemble_runs_table, read_index
from ..store.jsonio import write_json
from ..store.records import RunRecord
from ..store.schemas import CallsTable, VerdictsTable, validate
from ..tasks.suite import task_map, task_source
from ._independence import check_judge_independence
from ._llm import failure_reason
from ._panel import StudyJudges
from ._report import validation_report
from ._run import judge_inputs

Pathish = str | os.PathLike[str]


@dataclass(frozen=True)
class JudgingJob:
    """What :func:`detect_and_judge` reads and where it writes.

    Reads ``index`` (the runner's index), ``store`` (the run store) and ``tasks`` (the task
    file, or the tasks: a list or ``{id: task}``). Writes ``runs`` (the per-run table),
    ``verdicts`` (a directory: ``primary.parquet``, ``cross.parquet``, ``counts.json``),
    ``validation`` (``validation.json``) and, when given, ``calls`` (the per-call table) and
    ``metrics`` (the DVC metrics JSON). ``cache`` is the verdict cache (``judge.cache_dir``;
    None disables it, and the judges' response cache with it).
    """

    index: Pathish
    store: Pathish
    tasks: Any
    runs: Pathish
    verdicts: Pathish
    validation: Pathish
    cache: Pathish | None = None
    calls: Pathish | None = None
    metrics: Pathish | None = None


def detect_and_judge(
    job: JudgingJob,
    judge_cfg: Mapping[str, Any],
    models: Sequence[Mapping[str, Any]],
    *,
    human_sheet: Pathish | None = None,
    retries: Mapping[str, Any] | None = None,
    source: str = "params.yaml",
    completion_fn: Callable[..., Any] | None = None,
    retry_delay_s: float = 1.0,
    log: Any = None,
) -> dict[str, Any]:
    """Detect traps, judge every run with both judges and write what ``job`` names.

    ``judge_cfg`` is the whole ``judge:`` block of params.yaml (``template``, ``primary``,
    ``cross``, ``max_attempts``, ``stability``, ``agreement``, ``human_sheet``,
    ``concurrency``, ``budget_usd``; the verdict cache is ``job.cache``); ``models`` the
    ``models:`` list (for the independence check and to find the oracle); ``retries`` the one
    retry policy (``agent.retries``: delays and the Retry-After cap; the attempts per verdict
    are ``judge.max_attempts``); ``human_sheet`` overrides ``judge.human_sheet``.

    LLM judges go through the model layer (:class:`~canarykit.judging.LLMJudge`), share one
    budget and one response cache, and print their failures grouped by reason. Oracle runs are
    checked against the task rubric (:func:`~canarykit.judging.oracle_check`): any that does not
    pass is flagged on stderr as a configuration or suite problem and listed in
    ``validation.json`` (``oracle_check``). Returns the summary written to ``job.validation``
    (cross-judge agreement overall and per canary type, tsr difference, stability of the primary
    judge, human-sheet comparison or null).
    """
    check_judge_independence(
        {"primary": judge_cfg.get("primary") or {"kind": "rubric"}, "cross": judge_cfg.get("cross") or {}}, models, source
    )
    index_df = read_index(job.index)
    records = load_records(index_df, job.store, str(job.index))
    inputs = judge_inputs(records, task_map(job.tasks), task_source(job.tasks))
    out = log if log is not None else sys.stderr
    extra: dict[str, Any] = {"retry_delay_s": retry_delay_s}
    if completion_fn is not None:
        extra["completion_fn"] = completion_fn
    judges = StudyJudges.from_config(judge_cfg, models, retries, cache_dir=job.cache, source=source, **extra)

    frames: dict[str, pl.DataFrame] = {}
    counts: dict[str, Any] = {}
    for role in judges.roles():
        frames[role], counts[role] = judges.judge_all(role, inputs)
    for role, c in counts.items():
        for line in judge_lines(role, c, frames[role]):
            print(line, file=out)
    write_verdict_tables(job.verdicts, frames["primary"], frames.get("cross"))
    runs = _write_tables(job, index_df, records, frames)

    by_id = {i.run_id: i for i in inputs}
    report = validation_report(
        judges, runs, frames["primary"], frames.get("cross"), lambda ids: [by_id[r] for r in sorted(ids) if r in by_id],
        counts, human_sheet=human_sheet, log=out,
    )
    write_json(Path(job.verdicts) / "counts.json", counts)
    write_json(job.validation, report)
    return report


def _write_tables(
    job: JudgingJob, index_df: pl.DataFrame, records: Sequence[RunRecord], verdicts: Mapping[str, pl.DataFrame]
) -> pl.DataFrame:
    """The detector's tables and the per-run table (written as ``job`` says); returns the latter."""
    calls, metrics = detect(records)
    runs = assemble_runs_table(index_df, records, verdicts["primary"], verdicts.get("cross"), str(job.runs), metrics)
    Path(job.runs).parent.mkdir(parents=True, exist_ok=True)
    runs.write_parquet(Path(job.runs))
    if job.calls is not None:
        Path(job.calls).parent.mkdir(parents=True, exist_ok=True)
        validate(calls, CallsTable, str(job.calls)).write_parquet(Path(job.calls))
    if job.metrics is not None:
        write_json(job.metrics, metrics_json(runs))
    return runs


def write_verdict_tables(directory: Pathish, primary: pl.DataFrame, cross: pl.DataFrame | None) -> None:
    """``<directory>/primary.parquet`` and, with a cross-judge, ``cross.parquet`` (validated)."""
    out_dir = Path(directory)
    out_dir.mkdir(parents=True, exist_ok=True)
    for role, df in (("primary", primary), ("cross", cross)):
        if df is not None:
            path = out_dir / f"{role}.parquet"
            validate(df, VerdictsTable, str(path)).write_parquet(path)


def judge_lines(role: str, counts: Mapping[str, int], verdicts: pl.DataFrame) -> list[str]:
    """Console lines of one judge's pass: how many verdicts were judged, reused, skipped,
    unparseable and failed, then its failures grouped by reason (:func:`verdict_failure_lines`)."""
    c = counts
    return [
        f"canarykit: judge {role}: {c['judged']} judged, {c['reused']} reused from the cache, "
        f"{c['skipped']} error runs skipped, {c['unparseable']} unparseable, {c['error']} failed",
        *verdict_failure_lines(role, verdicts),
    ]


def verdict_failure_lines(role: str, verdicts: pl.DataFrame, *, limit: int = 10) -> list[str]:
    """Console lines for a judge's failed verdicts, grouped by reason
    (``judge primary: 12 verdicts failed: AuthenticationError (401) x 12``)."""
    failed = verdicts.filter(pl.col("status") == "error")
    if not failed.height:
        return []
    reasons: dict[str, int] = {}
    for reason in failed["reason"].to_list():
        key = failure_reason(reason or "")
        reasons[key] = reasons.get(key, 0) + 1
    ordered = sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = ", ".join(f"{k} x {n}" for k, n in ordered[:limit])
    more = f", ... ({len(ordered) - limit} more reasons)" if len(ordered) > limit else ""
    return [
        f"canarykit: judge {role}: {failed.height} verdicts failed: {shown}{more}",
        "canarykit: failed verdicts are never cached: the next plain `snakemake` (or `dvc repro`) judges them again",
    ]
