"""Judging many runs with a content-addressed verdict cache.

A verdict's key is ``content_hash({"judge": judge.identity(), "inputs": judge.cache_inputs(run)})``:
the judge's kind, model, decoding, template hash and parser version, and exactly the inputs it
reads (an LLM judge: prompt, hint, trace text, final answer; the rubric judge: the rubric,
final answer and trace). Verdicts live at ``cache_dir/<h[:2]>/<h>.json`` (written atomically),
so an unchanged run is never re-judged. ``ok`` and ``unparseable`` verdicts are cached (the
judge is queried at temperature 0, so a retry would see the same input); judge-call ``error``
verdicts (network, rate limit) are not, so the next run retries them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import polars as pl

from ..detect import load_records
from ..errors import InputError
from ..jsonio import content_hash, safe_json_loads, write_json
from ..records import RunRecord
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
    """Content-addressed store of verdicts (``root/<h[:2]>/<h>.json``)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    @staticmethod
    def key(judge: Judge, run: JudgeInput, extra: Mapping[str, Any] | None = None) -> str:
        ident: dict[str, Any] = {"judge": judge.identity(), "inputs": judge.cache_inputs(run)}
        if extra:
            ident["extra"] = dict(extra)
        return content_hash(ident)

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Verdict | None:
        p = self.path(key)
        try:
            data = safe_json_loads(p.read_text(encoding="utf-8"))
            if not isinstance(data, dict) or data.get("key") != key:
                return None
            return Verdict.from_dict(data.get("verdict"))
        except (OSError, ValueError):
            return None  # missing or damaged: judge again

    def put(self, key: str, verdict: Verdict, judge: Judge) -> None:
        write_json(
            self.path(key), {"key": key, "judge": judge.identity(), "verdict": verdict.to_dict()}
        )


def load_task_map(tasks: Any, source: str = "tasks") -> dict[str, Any]:
    """Tasks by id, from a path (:func:`canarykit.tasks.load_tasks`), a list or a mapping."""
    if isinstance(tasks, str | os.PathLike):
        from ..tasks import load_tasks

        return {t.id: t for t in load_tasks(Path(tasks))}
    if isinstance(tasks, Mapping):
        return dict(tasks)
    return {t.id: t for t in tasks}


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
    judge: Judge, inputs: Sequence[JudgeInput], cache: VerdictCache | None
) -> tuple[pl.DataFrame, dict[str, int]]:
    """Judge every input (reusing cached verdicts). Returns the verdicts table and counts
    ``{judged, reused, skipped, ok, unparseable, error}``."""
    counts = {"judged": 0, "reused": 0, "skipped": 0, "ok": 0, "unparseable": 0, "error": 0}
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
        key = VerdictCache.key(judge, run)
        verdict = cache.get(key) if cache is not None else None
        if verdict is not None:
            counts["reused"] += 1
        else:
            verdict = judge.judge(run)
            counts["judged"] += 1
            if cache is not None and verdict.status != "error":
                cache.put(key, verdict, judge)
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


def judge_options(judge_block: Mapping[str, Any]) -> dict[str, Any]:
    """Options of :func:`make_judge` taken from the whole ``judge:`` block of params.yaml."""
    return {
        "template_path": judge_block.get("template") or "data/prompts/judge_appendix_b.txt",
        "max_attempts": int(judge_block.get("max_attempts") or 3),
    }


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
    inputs = judge_inputs(
        records,
        load_task_map(tasks),
        str(tasks) if isinstance(tasks, str | os.PathLike) else "tasks",
    )
    return judge_all(judge, inputs, VerdictCache(cache_dir) if cache_dir is not None else None)
