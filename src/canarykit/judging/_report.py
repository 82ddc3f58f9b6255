"""``validation.json``: the oracle instrument check, cross-judge agreement, the primary judge's
stability re-grading and the human-sheet comparison, from the per-run table and the verdicts."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from ._agreement import (
    cross_judge_report,
    human_validation,
    label_order,
    read_human_sheet,
    stability,
    stability_draw,
)
from ._base import JudgeInput, Verdict, make_judge
from ._panel import StudyJudges
from ._run import judge_all

#: ``inputs_for(run_ids)``: the judge inputs of those runs (a caller loads only their records).
InputsFor = Callable[[set[str]], list[JudgeInput]]


#: Judging counts that depend on history, not on the verdicts: how many verdicts this
#: invocation judged and how many it reused from the shared verdict cache (which of several
#: parallel judging jobs reaches a shared verdict first decides it), and the model calls.
HISTORY_COUNTS = ("judged", "reused", "model_calls")


def tracked_counts(counts: Mapping[str, Any]) -> dict[str, Any]:
    """``counts`` without :data:`HISTORY_COUNTS`: per role, the verdicts by status (``ok``,
    ``unparseable``, ``error``, ``skipped``), the same on every run of the same inputs. What a
    tracked output (``validation.json``) holds; the rest goes to the judging log."""
    return {role: {k: v for k, v in c.items() if k not in HISTORY_COUNTS}
            for role, c in counts.items() if role not in HISTORY_COUNTS and isinstance(c, Mapping)}


def validation_report(
    judges: StudyJudges,
    runs: pl.DataFrame,
    primary: pl.DataFrame,
    cross: pl.DataFrame | None,
    inputs_for: InputsFor,
    counts: dict[str, Any],
    *,
    human_sheet: str | os.PathLike[str] | None = None,
    log: Any = None,
) -> dict[str, Any]:
    """``validation.json`` from the per-run table ``runs`` and both verdict tables.

    ``inputs_for`` is asked only for the oracle runs (when no judge is the rubric) and the
    stability sample. ``human_sheet`` defaults to ``judge.human_sheet``. Adds ``model_calls``
    (per counted role: requests, cached, retries, cost) to ``counts``."""
    out = log if log is not None else sys.stderr
    oracle = _oracle(judges, runs, primary, cross, inputs_for)
    for line in oracle_lines(oracle):
        print(line, file=out)
    stab = _stability(judges, runs, primary, inputs_for)
    sheet = human_sheet if human_sheet is not None else judges.cfg.get("human_sheet")
    report = {
        "judges": judges.identities(),
        "counts": counts,
        "cross": cross_judge_report(runs, **(judges.cfg.get("agreement") or {})) if cross is not None else None,
        "stability": stab,
        "human": _human(runs, sheet, with_cross=cross is not None) if sheet else None,
        "runs": runs.height,
        "error_runs": int(runs["error"].sum()),
        "zero_call_runs": int(runs["zero_call"].sum()),
        "truncated_runs": int(runs["truncated"].sum()),
        "oracle_check": oracle,
    }
    judges.add_model_calls(counts)
    return report


def _oracle(
    judges: StudyJudges, runs: pl.DataFrame, primary: pl.DataFrame, cross: pl.DataFrame | None, inputs_for: InputsFor
) -> dict[str, Any] | None:
    primary_cfg, cross_cfg = judges.role_cfg("primary") or {}, judges.role_cfg("cross")
    needs_inputs = primary_cfg.get("kind") != "rubric" and not (cross_cfg and cross_cfg.get("kind") == "rubric")
    names = oracle_names(judges.models)
    ids = set(runs.filter(pl.col("model").is_in(names))["run_id"].to_list()) if needs_inputs else set()
    return oracle_check(runs, judges.models, inputs_for(ids) if ids else [], primary_cfg, cross_cfg, primary, cross)


def stability_sample(runs: pl.DataFrame, sample: int, seed: int) -> set[str]:
    """Run ids of the stability re-grading's sample: exactly those :func:`~canarykit.judging.stability`
    draws from the judge inputs of every non-error run of ``runs`` (same order, same seed),
    so a caller loads only these records."""
    eligible = runs.filter(~pl.col("error"))
    eligible = eligible.sort(label_order(eligible), maintain_order=True)
    return set(stability_draw(eligible["run_id"].to_list(), sample, seed))


def _stability(judges: StudyJudges, runs: pl.DataFrame, primary: pl.DataFrame, inputs_for: InputsFor) -> dict[str, Any] | None:
    """The primary judge's stability re-grading (``judge.stability``; None for a sample of 0)."""
    cfg = judges.cfg.get("stability") or {}
    n_sample = int(cfg.get("sample", 300))
    if n_sample <= 0:
        return None
    base = {
        row["run_id"]: Verdict(row["success"], row["reason"] or "", row["status"], row["attempts"] or 0)
        for row in primary.filter(pl.col("status") != "skipped").iter_rows(named=True)
    }
    seed = int(cfg.get("seed", 0))
    return stability(
        judges.at_temperature,
        inputs_for(stability_sample(runs, n_sample, seed)),
        sample=n_sample,
        repeats=int(cfg.get("repeats", 3)),
        temperature=float(cfg.get("temperature", 0.7)),
        seed=seed,
        base_verdicts=base,
        cache=judges.cache,
    )


def _human(runs: pl.DataFrame, sheet: str | os.PathLike[str], *, with_cross: bool) -> dict[str, Any]:
    judged = {"primary": dict(zip(runs["run_id"], runs["success"], strict=True))}
    if with_cross:
        judged["cross"] = dict(zip(runs["run_id"], runs["success_cross"], strict=True))
    return human_validation(read_human_sheet(Path(sheet)), judged, str(sheet))


# --------------------------------------------------------------------------- the oracle check


def oracle_names(models: Sequence[Mapping[str, Any]]) -> list[str]:
    """Names of the oracle reference agents of a ``models:`` list."""
    return [str(m["name"]) for m in models if m.get("backend") == "reference" and m.get("agent") == "oracle"]


def oracle_check(
    runs: pl.DataFrame,
    models: Sequence[Mapping[str, Any]],
    inputs: Sequence[Any],
    primary_cfg: Mapping[str, Any],
    cross_cfg: Mapping[str, Any] | None,
    primary_df: pl.DataFrame,
    cross_df: pl.DataFrame | None,
) -> dict[str, Any] | None:
    """The instrument check: every oracle run must pass its task's rubric (a BFCL entry's:
    BFCL's checker, judge ``bfcl``).

    The oracle replays each task's canonical plan, so a run of it that does not pass (cut off
    by the turn limit, a rubric its own plan cannot meet, a tool that changed) says the
    configuration or the suite is broken, not the model. Uses that judge's verdicts (the
    primary's or the cross-judge's when one of them is it, else grades the oracle runs with it
    here). ``None`` when the study has no oracle.

    Returns ``{"judge": "rubric" | "bfcl", "models": [...], "runs", "passed", "failed": n,
    "pass_rate", "failures": [{run_id, model, task_id, condition, pool, seed, arm, status, reason}],
    "ok"}`` (``failures`` lists at most 200 runs).
    """
    names = oracle_names(models)
    if not names:
        return None
    sub = runs.filter(pl.col("model").is_in(names))
    ids = set(sub["run_id"].to_list())
    bfcl = "bfcl" in (primary_cfg.get("kind"), (cross_cfg or {}).get("kind")) or any(
        isinstance(getattr(i.task, "setup", None), Mapping) and "bfcl" in i.task.setup for i in inputs if i.run_id in ids)
    kind = "bfcl" if bfcl else "rubric"  # the task's own outcome check
    if primary_cfg.get("kind") == kind:
        verdicts = primary_df
    elif cross_cfg and cross_cfg.get("kind") == kind and cross_df is not None:
        verdicts = cross_df
    else:
        verdicts, _ = judge_all(make_judge({"kind": kind}), [i for i in inputs if i.run_id in ids], None)
    v = verdicts.select("run_id", pl.col("success").alias("_rubric"), pl.col("reason").alias("_reason"))
    sub = sub.join(v, on="run_id", how="left")
    passed = sub.filter(~pl.col("error") & ~pl.col("truncated") & (pl.col("_rubric") == True))  # noqa: E712
    failed = sub.join(passed.select("run_id"), on="run_id", how="anti").sort(
        [c for c in ("model", "condition", "pool", "seed", "task_id", "arm") if c in sub.columns])
    n = sub.height
    return {
        "judge": kind,
        "models": names,
        "runs": n,
        "passed": passed.height,
        "failed": failed.height,
        "pass_rate": (passed.height / n) if n else None,
        "failures": [_oracle_failure(row) for row in failed.head(200).iter_rows(named=True)],
        "ok": failed.height == 0,
    }


def _oracle_failure(row: Mapping[str, Any]) -> dict[str, Any]:
    if row["error"]:
        status, reason = "error", "backend error (the run is retried by the next invocation)"
    elif row["truncated"]:
        status, reason = "truncated", "cut off by agent.max_turns before its final answer"
    else:
        status, reason = "failed", row["_reason"] or "the rubric did not pass"
    return {"run_id": row["run_id"], "model": row["model"], "task_id": row["task_id"], "condition": row["condition"],
            "pool": row["pool"], "seed": int(row["seed"]), "arm": row.get("arm") or "", "status": status, "reason": reason}


def oracle_lines(check: Mapping[str, Any] | None, *, limit: int = 10) -> list[str]:
    """Console lines of the oracle instrument check (a loud warning when any run fails)."""
    if check is None:
        return []
    if check["ok"]:
        return [f"canarykit: oracle check: {check['passed']}/{check['runs']} oracle runs pass the task rubric"]
    lines = [
        f"canarykit: WARNING: oracle check FAILED: {check['failed']} of {check['runs']} oracle runs do not pass "
        "the task rubric. The oracle replays each task's canonical plan, so this is a configuration or "
        "task-suite problem, not a result (see results/judge/validation.json, oracle_check):",
    ]
    for f in check["failures"][:limit]:
        lines.append(f"canarykit:   {f['task_id']} ({f['model']}, {f['condition']}/{f['pool']}/seed {f['seed']}): "
                     f"{f['status']}: {f['reason']}")
    if check["failed"] > limit:
        lines.append(f"canarykit:   ... and {check['failed'] - limit} more")
    return lines
