"""Judging many runs with a content-addressed verdict cache.

A verdict's key is ``content_hash({"judge": judge.identity(), "inputs": judge.cache_inputs(run)})``:
the judge's kind, model, decoding, template hash and parser version, and exactly the inputs it
reads (an LLM judge: prompt, hint, trace text, final answer; the rubric judge: the rubric,
final answer and trace). Verdicts live at ``cache_dir/<h[:2]>/<h>.json`` (written atomically),
so an unchanged run is never re-judged. ``ok`` and ``unparseable`` verdicts are cached (the
judge is queried at temperature 0, so a retry would see the same input); judge-call ``error``
verdicts (network, rate limit, authentication, budget) never are, so the next run retries them.

Runs whose judge inputs are identical are judged once. A judge with an async ``ajudge`` (the LLM
judge) grades up to ``judge.concurrency`` runs at once on the model layer's event loop; each
verdict is cached as soon as it is in, so an interrupted judging stage resumes where it stopped.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import polars as pl

from ..agents.secrets import scrub_values
from ..detection.detect import load_records
from ..errors import InputError
from ..store.castore import ContentStore
from ..store.jsonio import content_hash, pretty_json
from ..store.records import RunRecord
from ..tasks.suite import task_map, task_source
from ._base import Judge, JudgeInput, Verdict, judge_input, make_judge, run_error_verdict

VERDICT_COLUMNS: Final[dict[str, Any]] = {
    "run_id": pl.String,
    "judge": pl.String,
    "success": pl.Boolean,
    "status": pl.String,  # ok | unparseable | error | skipped (backend-error run, not judged)
    "reason": pl.String,
    "attempts": pl.Int64,
    "verdict_key": pl.String,
}


class VerdictCache:
    """Content-addressed store of verdicts (a :class:`~canarykit.store.castore.ContentStore`)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.store = ContentStore(self.root)

    @staticmethod
    def key(judge: Judge, run: JudgeInput, extra: Mapping[str, Any] | None = None) -> str:
        ident: dict[str, Any] = {"judge": judge.identity(), "inputs": judge.cache_inputs(run)}
        if extra:
            ident["extra"] = dict(extra)
        return content_hash(ident)

    def path(self, key: str) -> Path:
        return self.store.path(key)

    def get(self, key: str) -> Verdict | None:
        data = self.store.read_json(key)  # missing or damaged: judge again
        if not isinstance(data, dict) or data.get("key") != key:
            return None
        try:
            return Verdict.from_dict(data.get("verdict"))
        except ValueError:
            return None

    def put(self, key: str, verdict: Verdict, judge: Judge) -> None:
        if verdict.status == "error":
            return  # a failed judge call is retried next time, never remembered
        text = pretty_json({"key": key, "judge": judge.identity(), "verdict": verdict.to_dict()})
        self.store.write_text(key, scrub_values(text))


def judge_inputs(
    records: Sequence[RunRecord], tasks: Mapping[str, Any], source: str = "tasks"
) -> list[JudgeInput]:
    """One :class:`JudgeInput` per record. A run whose task is not in the suite is an error,
    except for backend-error runs (never judged)."""
    out = []
    for r in records:
        task = tasks.get(r.task_id)
        if task is None:
            if not r.error:
                raise InputError(
                    source,
                    "task_id",
                    f"run {r.run_id} is of task {r.task_id!r}, which is not in the task suite",
                )
            out.append(
                JudgeInput(
                    r.run_id,
                    r.task_id,
                    "",
                    tuple(r.correct_tools),
                    "",
                    r.final_answer,
                    None,
                    (),
                    True,
                )
            )
            continue
        out.append(judge_input(r, task))
    return out


def judge_all(
    judge: Judge, inputs: Sequence[JudgeInput], cache: VerdictCache | None, *, label: str | None = None,
) -> tuple[pl.DataFrame, dict[str, int]]:
    """Judge every input (reusing cached verdicts). Returns the verdicts table and counts
    ``{judged, reused, skipped, ok, unparseable, error}``. ``label`` names the judge in the
    progress lines on stderr (none without it)."""
    counts = {"judged": 0, "reused": 0, "skipped": 0, "ok": 0, "unparseable": 0, "error": 0}
    keys: dict[str, str] = {}
    verdicts: dict[str, Verdict] = {}
    todo: dict[str, JudgeInput] = {}
    for run in inputs:
        if run.error:
            continue
        key = VerdictCache.key(judge, run)
        keys[run.run_id] = key
        if key in verdicts or key in todo:
            continue
        hit = cache.get(key) if cache is not None else None
        if hit is not None:
            verdicts[key] = hit
        else:
            todo[key] = run
    judged = set(todo)
    if todo:
        verdicts.update(_judge_missing(judge, todo, cache, label))
    rows: list[dict[str, Any]] = []
    for run in inputs:
        if run.error:
            counts["skipped"] += 1
            v = run_error_verdict()
            rows.append(
                {
                    "run_id": run.run_id,
                    "judge": judge.name,
                    "success": None,
                    "status": "skipped",
                    "reason": v.reason,
                    "attempts": 0,
                    "verdict_key": None,
                }
            )
            continue
        key = keys[run.run_id]
        verdict = verdicts[key]
        if key in judged:
            counts["judged"] += 1
            judged.discard(key)  # identical inputs further down count as reused
        else:
            counts["reused"] += 1
        counts[verdict.status] += 1
        rows.append(
            {
                "run_id": run.run_id,
                "judge": judge.name,
                "success": verdict.success if verdict.status == "ok" else None,
                "status": verdict.status,
                "reason": verdict.reason,
                "attempts": verdict.attempts,
                "verdict_key": key,
            }
        )
    return pl.DataFrame(rows, schema=VERDICT_COLUMNS), counts


class _Progress:
    def __init__(self, label: str | None, total: int, every_s: float = 5.0) -> None:
        self.label, self.total, self.every_s = label, total, every_s
        self.done = 0
        self.last = time.monotonic()

    def tick(self) -> None:
        self.done += 1
        now = time.monotonic()
        if self.label and (now - self.last >= self.every_s or self.done == self.total):
            self.last = now
            print(f"[canarykit judge] {self.label}: {self.done}/{self.total} verdicts", file=sys.stderr, flush=True)


def _judge_missing(
    judge: Judge, todo: Mapping[str, JudgeInput], cache: VerdictCache | None, label: str | None
) -> dict[str, Verdict]:
    """Verdicts for the inputs not in the cache; each is cached as soon as it is in."""
    progress = _Progress(label if len(todo) > 1 else None, len(todo))
    ajudge = getattr(judge, "ajudge", None)
    if ajudge is None:
        out: dict[str, Verdict] = {}
        for key, run in todo.items():
            out[key] = judge.judge(run)
            if cache is not None:
                cache.put(key, out[key], judge)
            progress.tick()
        return out
    check = getattr(judge, "_check_key", None)
    if callable(check):
        check()  # a missing key is a configuration error, not thousands of error verdicts
    from ..agents.calls import run_sync

    limit = max(1, int(getattr(judge, "concurrency", 8)))

    async def grade_all() -> dict[str, Verdict]:
        sem = asyncio.Semaphore(limit)
        results: dict[str, Verdict] = {}

        async def one(key: str, run: JudgeInput) -> None:
            async with sem:
                verdict = await ajudge(run)
            results[key] = verdict
            if cache is not None:
                await asyncio.to_thread(cache.put, key, verdict, judge)
            progress.tick()

        await asyncio.gather(*(one(k, r) for k, r in todo.items()))
        return results

    return run_sync(grade_all())


def judge_options(
    judge_block: Mapping[str, Any], retries: Mapping[str, Any] | None = None, *, model_layer: bool = False,
    ledger: Any = None,
) -> dict[str, Any]:
    """Options of :func:`make_judge` taken from the whole ``judge:`` block of params.yaml.

    ``retries`` is ``agent.retries`` (the one retry policy's delays). With ``model_layer`` the
    options also carry what LLM judges share: the response cache (``<judge.cache_dir>/responses``),
    one budget (``judge.budget_usd``; with ``ledger``, a :class:`~canarykit.agents.calls.SpendLedger`,
    it bounds every judging job of the invocation together, and only them: the judges keep
    their own ledger, so the agents' spend never counts against it nor theirs against the
    agents' budget) and the concurrency (``judge.concurrency``).
    """
    opts: dict[str, Any] = {
        "template_path": judge_block.get("template") or "data/prompts/judge_appendix_b.txt",
        "max_attempts": int(judge_block.get("max_attempts") or 3),
        "concurrency": int(judge_block.get("concurrency") or 8),
    }
    if retries is not None:
        from ..agents.calls import RetryPolicy

        opts["retry"] = RetryPolicy.from_config(retries)
    if model_layer:
        from ..agents.cache import ResponseCache
        from ..agents.calls import Budget

        cache_dir = judge_block.get("cache_dir")
        opts["response_cache"] = ResponseCache(Path(cache_dir) / "responses") if cache_dir else None
        opts["budget"] = Budget(judge_block.get("budget_usd"), ledger.scoped("judge") if ledger is not None else None)
    return opts


def judge_runs(
    index_df: pl.DataFrame,
    store_dir: str | os.PathLike[str],
    tasks: Any,
    judge_cfg: Mapping[str, Any],
    cache_dir: str | os.PathLike[str] | None,
    source: str = "params.yaml",
    *,
    key: str = "judge.primary",
    index_source: str = "index",
    **options: Any,
) -> tuple[pl.DataFrame, dict[str, int]]:
    """Judge every run of the runner's index with the judge ``judge_cfg`` describes.

    ``tasks``: the task file path, a list of tasks or ``{id: task}``. ``options`` go to
    :func:`make_judge` (``template_path``, ``max_attempts``, ``completion_fn``, ...).
    Returns ``(verdicts, counts)``; counts say how many verdicts were judged vs reused.
    """
    judge = make_judge(dict(judge_cfg), source=source, key=key, **options)
    records = load_records(index_df, store_dir, index_source)
    inputs = judge_inputs(records, task_map(tasks), task_source(tasks))
    return judge_all(judge, inputs, VerdictCache(cache_dir) if cache_dir is not None else None)


def judging_code_modules() -> tuple[object, ...]:
    """The modules whose source decides a verdict of the offline judges (a stage's memo scope:
    editing one judges every run again)."""
    from . import _base, _offline, _run

    return (_base, _offline, _run)
