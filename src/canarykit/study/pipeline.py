"""The workflow's steps over files, one function per Snakemake rule that needs more than a call.

The DAG (``rules/*.smk``) runs agents per cell (one job per (model, pool, condition, seed)),
then per model: trap detection, primary judging and cross-judging, each its own job (an LLM
judge is a provider of its own: it is scheduled, limited and re-run on its own). Gathering
steps join them: the study's run index and run summary, the per-run table, the judges'
validation report and the DVC metrics. Each function reads its inputs, computes with the
package and writes its outputs; the scripts under ``scripts/`` only pass Snakemake's
``input``/``params``/``output`` through.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from ..agents.calls import INVOCATION_ENV, CallStats, SpendLedger
from ..agents.store import mark_failed_runs_for_retry
from ..errors import InputError
from ..store.jsonio import read_json_input, write_json
from ..store.schemas import CallsTable, RunIndexTable, VerdictsTable, validate

#: Where the spend ledgers of an invocation's jobs live, beside the run store.
LEDGER_DIR = ".budget"


def invocation() -> str | None:
    """The id of the workflow invocation this job belongs to (``None`` outside one)."""
    return os.environ.get(INVOCATION_ENV) or None


def ledger(store_dir: str | os.PathLike[str], job: str) -> SpendLedger | None:
    """The spend ledger of one job of this invocation (budgets hold over all jobs)."""
    return SpendLedger.for_job(Path(store_dir).parent / LEDGER_DIR, job)


# --------------------------------------------------------------------------- agents


def run_job(
    model: Mapping[str, Any],
    tasks: Sequence[Any],
    tasks_path: str,
    pools: Mapping[str, Mapping[str, Any]],
    seeds: Sequence[int],
    agent_cfg: Mapping[str, Any],
    store_dir: str,
    index_out: str,
    summary_out: str,
    *,
    retry_gate: str | None = None,
    concurrency: int | None = None,
    job: str,
    environment: Mapping[str, Any] | None = None,
    tools_path: str | None = None,
) -> None:
    """Run (or reuse) the runs of one agent job (one model; ``pools``: pool -> ``{canaries,
    assembly: [files], conditions}``) and write its index and its summary.

    ``concurrency`` is the job's share of the calls in flight (its Snakemake resource), in
    place of ``agent.concurrency``; the summary also records the job's cells and the
    invocation, for :func:`gather_runs`. ``environment``/``tools_path``: the study's tool
    environment and its exported tools (:func:`~canarykit.agents.runner.run_grid`).
    """
    from ..agents.runner import run_grid

    cfg = dict(agent_cfg)
    if concurrency is not None:
        cfg["concurrency"] = max(1, int(concurrency))
        limits = dict(cfg.get("provider_concurrency") or {})
        cfg["provider_concurrency"] = {p: min(int(n), cfg["concurrency"]) for p, n in limits.items()}
        maxima = dict(cfg.get("provider_concurrency_max") or {})  # an adaptive lane grows within the grant
        cfg["provider_concurrency_max"] = {p: min(int(n), cfg["concurrency"]) for p, n in maxima.items()}
    # The shared run store and response cache (no DVC outputs: caches of every study) exist
    # even when no model response is cached (reference agents).
    Path(cfg.get("cache_dir") or Path(store_dir).parent / "cache" / "responses").mkdir(parents=True, exist_ok=True)
    Path(store_dir).mkdir(parents=True, exist_ok=True)
    summary = run_grid(
        [dict(model)], tasks_path, {p: dict(v) for p, v in pools.items()}, [int(s) for s in seeds], cfg, store_dir,
        index_out, summary_out, tasks=tasks, retry_gate=retry_gate, ledger=ledger(store_dir, job),
        environment=environment, tools_path=tools_path,
    )
    doc = summary.to_dict()
    doc["job"] = {"model": str(model["name"]), "pools": {p: list(v["conditions"]) for p, v in pools.items()},
                  "seeds": [int(s) for s in seeds]}
    doc["invocation"] = invocation()
    write_json(summary_out, doc)


_COUNTS = ("executed", "reused", "deduplicated", "failed", "skipped", "total", "backend_calls", "cached_calls", "retries",
           "failed_again")


def gather_runs(
    index_paths: Sequence[str],
    summary_paths: Sequence[str],
    store_dir: str,
    index_out: str,
    summary_out: str,
    *,
    log: Any = None,
) -> dict[str, Any]:
    """The study's run index (every cell's, concatenated) and its run summary.

    The summary sums the agent jobs' summaries. A job that did not run in this invocation (its
    inputs did not change) counts its runs as reused: this invocation executed none of them.
    ``elapsed_s`` is summed over the jobs that ran (job-seconds, not wall clock); ``jobs`` and
    ``jobs_run`` say how many agent jobs the study has and how many of them ran now. Both the
    summaries and the run summary are logs (``<out>/logs/``, never DVC-tracked: they say what
    this invocation did and how long it took); an invocation that ran agent jobs also keeps its
    own copy, ``<out>/logs/run-summary/<UTC time>-<invocation>.json``.
    Failed runs are printed grouped by model and reason, and their cells' retry gates marked.
    """
    from ..agents.runner import INDEX_SCHEMA, ModelTally, RunSummary, failure_lines

    out = log if log is not None else sys.stderr
    frames = [pl.read_parquet(p) for p in index_paths]
    # an index written before arms has none: every run of it has the arm ""
    frames = [f if "arm" in f.columns else f.with_columns(pl.lit("", dtype=pl.String).alias("arm")).select(
        [c for c in INDEX_SCHEMA if c in f.columns or c == "arm"]) for f in frames]
    # an index written before issue 29 has ``executed`` (history: now in the job summaries, logs)
    frames = [f.drop("executed", strict=False) for f in frames]
    index = pl.concat(frames, how="vertical") if frames else pl.DataFrame(schema=INDEX_SCHEMA)
    index = validate(index, RunIndexTable, str(index_out))
    Path(index_out).parent.mkdir(parents=True, exist_ok=True)
    index.write_parquet(index_out, compression="zstd", statistics=False)

    me = invocation()
    total = RunSummary()
    jobs = 0
    for path in summary_paths:
        doc = read_json_input(Path(path), "agent job summary")
        current = me is not None and doc.get("invocation") == me
        jobs += current
        for name, t in (doc.get("per_model") or {}).items():
            tally = total.per_model.setdefault(name, ModelTally())
            part = _cell_counts(t, current)
            for k in _COUNTS:
                setattr(tally, k, getattr(tally, k) + part[k])
                setattr(total, k, getattr(total, k) + part[k])
            tally.cost_usd += part["cost_usd"]
            total.cost_usd += part["cost_usd"]
            for reason, n in (t.get("failures") or {}).items():
                tally.failures[reason] = tally.failures.get(reason, 0) + int(n)
                total.failures[reason] = total.failures.get(reason, 0) + int(n)
        total.retry_pending += int(doc.get("retry_pending", doc.get("failed")) or 0)
        total.rerun_failed = str(doc.get("rerun_failed") or total.rerun_failed)
        if current:
            total.elapsed_s += float(doc.get("elapsed_s") or 0.0)
            total.budget_exhausted = total.budget_exhausted or bool(doc.get("budget_exhausted"))
            total.budget_usd = doc.get("budget_usd")
    doc_out = total.to_dict()
    doc_out.pop("executed_runs", None)  # per job, in the job summaries
    doc_out["jobs"] = len(summary_paths)
    doc_out["jobs_run"] = jobs
    write_json(summary_out, doc_out)
    # this invocation's own copy: run-summary.json is the latest; earlier ones stay readable
    if jobs:
        write_json(Path(summary_out).parent / "run-summary" / f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{me or 'local'}.json",
                   doc_out)
    for p in index_paths:
        mark_failed_runs_for_retry(p)
    if jobs:
        print(f"[canarykit runs] study: {total.total} runs in {len(summary_paths)} agent jobs ({jobs} ran now): "
              f"{total.executed} executed, {total.reused} reused, {total.failed} failed, {total.skipped} not started; "
              f"${total.cost_usd:.4f}", file=out, flush=True)
    for line in failure_lines(total):
        print(line, file=out, flush=True)
    return doc_out


def _cell_counts(t: Mapping[str, Any], current: bool) -> dict[str, Any]:
    part: dict[str, Any] = {k: int(t.get(k) or 0) for k in _COUNTS}
    part["cost_usd"] = float(t.get("cost_usd") or 0.0)
    if not current:  # nothing of this cell ran now: its finished runs were reused as they are
        part.update(executed=0, deduplicated=0, backend_calls=0, cached_calls=0, retries=0, cost_usd=0.0, failed_again=0,
                    reused=part["total"] - part["failed"] - part["skipped"])
    return part


# --------------------------------------------------------------------------- detection and judging


def _read_indexes(index_paths: Sequence[str]) -> pl.DataFrame:
    from ..detection.runs_table import read_index

    frames = [read_index(p) for p in index_paths]
    return pl.concat(frames, how="vertical_relaxed") if frames else pl.DataFrame()


def detect_model(
    index_paths: Sequence[str], store_dir: str, metrics_out: str, calls_out: str, *, memo_dir: str | None = None
) -> None:
    """Classify every call of one model's runs: the per-run trap metrics and the per-call table.

    With ``memo_dir`` (rules/judging.smk: ``results/cache/memo``), a run whose record did not
    change since the last invocation keeps its rows (:class:`~canarykit.store.memo.RunMemo`): an
    edit that re-executes some runs re-classifies only those."""
    from ..detection import detect as detect_module
    from ..detection.detect import CALL_TABLE_COLUMNS, RUN_METRIC_COLUMNS, detect, load_records
    from ..store import records as records_module
    from ..store.memo import RunMemo, in_index_order, record_digests, source_digest

    index = _read_indexes(index_paths)
    ids = index["run_id"].to_list()
    memo = digests = None
    reused: set[str] = set()
    old: dict[str, pl.DataFrame] = {}
    if memo_dir is not None:
        digests = record_digests(ids, store_dir)
        memo = RunMemo(memo_dir, _memo_name("detect", metrics_out),
                       source_digest(detect_module, records_module))
        reused, old = memo.reusable(digests, ("metrics", "calls"))
    todo = _without(index, reused)
    source = ", ".join(index_paths[:1]) + (" ..." if len(index_paths) > 1 else "")
    calls, metrics = detect(load_records(todo, store_dir, source))
    if reused:
        metrics = in_index_order(ids, pl.concat([old["metrics"], metrics], how="vertical")).cast(pl.Schema(RUN_METRIC_COLUMNS))
        calls = in_index_order(ids, pl.concat([old["calls"], calls], how="vertical"), within="idx").cast(pl.Schema(CALL_TABLE_COLUMNS))
    Path(metrics_out).parent.mkdir(parents=True, exist_ok=True)
    metrics.rechunk().write_parquet(metrics_out)
    Path(calls_out).parent.mkdir(parents=True, exist_ok=True)
    validate(calls, CallsTable, calls_out).rechunk().write_parquet(calls_out)
    if memo is not None and digests is not None:
        memo.save(digests, {"metrics": metrics, "calls": calls})
    for p in index_paths:
        mark_failed_runs_for_retry(p)


def _without(index: pl.DataFrame, run_ids: set[str]) -> pl.DataFrame:
    """The rows of ``index`` whose run is not in ``run_ids`` (in index order)."""
    if not run_ids:
        return index
    drop = pl.DataFrame({"run_id": sorted(run_ids)}, schema={"run_id": pl.String})
    return index.join(drop, on="run_id", how="anti", maintain_order="left")


def _memo_name(stage: str, output: str) -> str:
    """A stage's memo for one output: ``<stage>/<output stem>-<hash of its path>`` (the memo
    root is shared by every study; two studies' outputs never share a memo)."""
    import hashlib

    return f"{stage}/{Path(output).stem}-{hashlib.sha256(os.path.abspath(output).encode('utf-8')).hexdigest()[:12]}"


def judge_model(
    role: str,
    index_paths: Sequence[str],
    store_dir: str,
    tasks_path: str,
    judge_cfg: Mapping[str, Any],
    models: Sequence[Mapping[str, Any]],
    retries: Mapping[str, Any] | None,
    verdicts_out: str,
    counts_out: str,
    *,
    job: str,
    log: Any = None,
    memo_dir: str | None = None,
) -> dict[str, Any]:
    """Judge one model's runs with one judge (``role``: ``primary`` or ``cross``).

    Verdicts are cached by content (an unchanged run is never judged twice); failed verdicts
    are not cached and are judged again by the next invocation. Writes the verdict table and
    ``counts_out`` (``{judged, reused, skipped, ok, unparseable, error, model_calls}``).
    With ``memo_dir``, a run whose record, judge, judging code and task file did not change
    keeps its verdict without being read or keyed again (:class:`~canarykit.store.memo.RunMemo`;
    it counts as reused)."""
    from ..detection.detect import load_records
    from ..judging import StudyJudges, judge_inputs, judge_lines
    from ..tasks.suite import task_map

    out = log if log is not None else sys.stderr
    if not judge_cfg.get(role):
        raise InputError("params.yaml", f"judge.{role}", "no judge configured for this role")
    index = _read_indexes(index_paths)
    ids = index["run_id"].to_list()
    stats = CallStats()
    judges = StudyJudges.from_config(judge_cfg, models, retries, cache_dir=judge_cfg.get("cache_dir"),
                                     ledger=ledger(store_dir, job), stats={role: stats})
    memo = digests = None
    reused: set[str] = set()
    old: dict[str, pl.DataFrame] = {}
    if memo_dir is not None:
        from .. import judging
        from ..store.jsonio import content_hash
        from ..store.memo import RunMemo, record_digests, source_digest

        digests = record_digests(ids, store_dir)
        scope = content_hash({"judge": judges.judge(role).identity(), "code": source_digest(*judging.judging_code_modules()),
                              "tasks": hashlib.sha256(Path(tasks_path).read_bytes()).hexdigest()})
        memo = RunMemo(memo_dir, _memo_name(f"judge_{role}", verdicts_out), scope)
        reused, old = memo.reusable(digests, ("verdicts",))
    todo = _without(index, reused)
    records = load_records(todo, store_dir, index_paths[0] if index_paths else "index")
    inputs = judge_inputs(records, task_map(tasks_path) if records else {}, tasks_path)
    verdicts, counts = judges.judge_all(role, inputs)
    if reused:
        from ..judging import VERDICT_COLUMNS
        from ..store.memo import in_index_order

        kept = old["verdicts"]
        for status, n in kept.group_by("status").len().iter_rows():  # as judge_all counts a cached verdict
            counts[str(status)] += int(n)
            if status != "skipped":
                counts["reused"] += int(n)
        verdicts = in_index_order(ids, pl.concat([kept, verdicts], how="vertical")).cast(pl.Schema(VERDICT_COLUMNS)).rechunk()
    for line in judge_lines(role, counts, verdicts):
        print(line, file=out)
    Path(verdicts_out).parent.mkdir(parents=True, exist_ok=True)
    validate(verdicts, VerdictsTable, verdicts_out).write_parquet(verdicts_out)
    if memo is not None and digests is not None:
        # a failed judge call is judged again next time, never remembered (as in the verdict cache)
        failed = set(verdicts.filter(pl.col("status") == "error")["run_id"].to_list())
        memo.save(digests, {"verdicts": verdicts}, exclude=failed)
    doc: dict[str, Any] = dict(counts)
    doc["model_calls"] = {"requests": stats.backend_calls, "cached": stats.cached_calls, "retries": stats.retries,
                          "cost_usd": round(stats.cost_usd, 8)}
    write_json(counts_out, doc)
    return doc


def build_runs(
    index_path: str,
    metrics_paths: Sequence[str],
    calls_paths: Sequence[str],
    primary_paths: Sequence[str],
    cross_paths: Sequence[str],
    runs_out: str,
    calls_out: str,
    verdicts_dir: str,
    pools: Sequence[str] = (),
) -> None:
    """The per-run table (``runs.parquet``) from the study's index, the detector's per-run
    metrics, both judges' verdicts and the pools' wording ids (``pools``); also the study's
    per-call table and verdict tables."""
    from ..detection.runs_table import assemble_runs_table, pool_wordings, read_index
    from ..judging import write_verdict_tables

    index = read_index(index_path)
    metrics = pl.concat([pl.read_parquet(p) for p in metrics_paths], how="vertical") if metrics_paths else None
    primary = pl.concat([pl.read_parquet(p) for p in primary_paths], how="vertical")
    cross = pl.concat([pl.read_parquet(p) for p in cross_paths], how="vertical") if cross_paths else None
    if metrics is None:
        raise InputError(index_path, "<file>", "no detector output for the runs of this index")
    runs = assemble_runs_table(index, [], primary, cross, runs_out, metrics, pool_wordings(pools))
    Path(runs_out).parent.mkdir(parents=True, exist_ok=True)
    runs.write_parquet(runs_out)
    calls = pl.concat([pl.read_parquet(p) for p in calls_paths], how="vertical")
    Path(calls_out).parent.mkdir(parents=True, exist_ok=True)
    validate(calls, CallsTable, calls_out).write_parquet(calls_out)
    write_verdict_tables(verdicts_dir, primary, cross)


def judge_report(
    runs_path: str,
    verdicts_dir: str,
    counts_paths: Mapping[str, Sequence[str]],
    index_path: str,
    store_dir: str,
    tasks_path: str,
    judge_cfg: Mapping[str, Any],
    models: Sequence[Mapping[str, Any]],
    retries: Mapping[str, Any] | None,
    validation_out: str,
    counts_out: str,
    *,
    job: str = "judge_report",
    log: Any = None,
) -> dict[str, Any]:
    """``validation.json`` (oracle check, cross-judge agreement, stability re-grading, human
    sheet, the verdicts' counts) and ``counts_out`` (a log: every judging job's counts, summed
    per role, with how many were judged now or reused and the model calls:
    :func:`~canarykit.judging.tracked_counts`). Loads only the
    records it needs: the stability sample, and the oracle runs when no judge is the rubric."""
    from ..detection.detect import load_records
    from ..detection.runs_table import read_index
    from ..judging import StudyJudges, judge_inputs, tracked_counts, validation_report
    from ..tasks.suite import task_map

    runs = pl.read_parquet(runs_path)
    vdir = Path(verdicts_dir)
    primary = pl.read_parquet(vdir / "primary.parquet")
    cross = pl.read_parquet(vdir / "cross.parquet") if counts_paths.get("cross") else None
    counts: dict[str, Any] = {}
    model_calls: dict[str, Any] = {"stability": {"requests": 0, "cached": 0, "retries": 0, "cost_usd": 0.0}}
    for role, paths in counts_paths.items():
        agg: dict[str, int] = {}
        calls = {"requests": 0, "cached": 0, "retries": 0, "cost_usd": 0.0}
        for p in paths:
            doc = read_json_input(Path(p), "judge counts")
            for k, v in doc.items():
                if k == "model_calls":
                    for ck in calls:
                        calls[ck] += v.get(ck, 0)
                else:
                    agg[k] = agg.get(k, 0) + int(v)
        counts[role] = agg
        calls["cost_usd"] = round(calls["cost_usd"], 8)
        model_calls[role] = calls
    counts["model_calls"] = model_calls
    index = read_index(index_path)
    tasks = task_map(tasks_path)

    def inputs_for(ids: set[str]) -> list[Any]:
        sub = index.filter(pl.col("run_id").is_in(sorted(ids)))
        return judge_inputs(load_records(sub, store_dir, index_path), tasks, tasks_path)

    judges = StudyJudges.from_config(judge_cfg, models, retries, cache_dir=judge_cfg.get("cache_dir"),
                                     ledger=ledger(store_dir, job), stats={"stability": CallStats()})
    report = validation_report(judges, runs, primary, cross, inputs_for, counts, log=log)
    write_json(counts_out, counts)
    # validation.json is a tracked output: only the counts that follow from the verdicts
    write_json(validation_out, {**report, "counts": tracked_counts(counts)})
    return report


# --------------------------------------------------------------------------- DVC metrics


#: The headline numbers of a metrics file (the rest is in stats.json and run-summary.json).
METRIC_KEYS = ("csr", "tsr", "recovery", "runs")


def write_metrics(
    runs_path: str,
    cells: Mapping[str, tuple[str, str]],
    slugs: Mapping[str, str],
    out_dir: str,
) -> list[str]:
    """One small JSON per (model, grid cell): ``<out_dir>/<model slug>/<cell>.json`` with
    ``{csr, tsr, recovery, runs}`` (csr, tsr and recovery over non-error runs, as in
    :func:`~canarykit.detection.metrics.metrics_json`; runs counts all). ``cells``: cell name ->
    (condition, pool) (:func:`canarykit.study.layout.metric_cells`). The directory is rewritten
    whole, so cells and models no longer in the study leave no file behind."""
    import shutil

    from ..detection.metrics import metrics_json

    per = metrics_json(pl.read_parquet(runs_path))
    root = Path(out_dir)
    if root.exists():
        shutil.rmtree(root)
    written = []
    for model, s in slugs.items():
        for cell, (condition, pool) in cells.items():
            m = per.get(condition, {}).get(pool, {}).get(model)
            if m is None:
                continue
            path = root / s / f"{cell}.json"
            write_json(path, {k: m[k] for k in METRIC_KEYS})
            written.append(str(path))
    return written
