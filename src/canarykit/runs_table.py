"""The per-run table (``results/runs.parquet``) and the command that builds it.

:func:`build_runs_table` joins the runner's index (current config labels: ``model``,
``group``, ``backend``), the trap detector's per-run metrics (:mod:`canarykit.detect`) and the
judges' verdicts. Columns, in order: the :class:`canarykit.schemas.RunsTable` interface
(``model, group, condition, pool, seed, task_id, difficulty, tool_calls, canary_calls, csr,
trapped, recovered, success, error``, then ``present_T`` and ``trapped_T`` for the six types)
and the extras ``run_id, backend, unknown_calls, zero_call, success_cross, judge_status,
truncated, control_calls, canary_before_real`` and ``control_present_T``/``control_called_T``
for the six types (``judge_status``: ``ok | unparseable | error`` from the primary judge,
``skipped`` for a backend-error run; ``truncated``: the run reached ``agent.max_turns`` without
a final answer, never null, false for backend-error runs; the control and order columns: see
:mod:`canarykit.detect` and README, "Controls and position").

:func:`detect_and_judge` is the command the Snakemake script calls: independence check,
both judges (cached), the runs table, the per-call table, the judge-validation report and
the DVC metrics file. :func:`metrics_json` is the small metrics summary.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import polars as pl

from .agents.calls import CallStats
from .agents.secrets import config_secret_envs, register_secret_envs
from .detect import detect, load_records
from .errors import InputError
from .jsonio import write_json
from .metrics import metrics_json
from .records import RunRecord
from .schemas import (
    CallsTable,
    RunIndexTable,
    RunsTable,
    VerdictsTable,
    check_runs_type_columns,
    validate,
)
from .tasks import task_map
from .types import CANARY_TYPES

INTERFACE_COLUMNS: Final[tuple[str, ...]] = (
    "model",
    "group",
    "condition",
    "pool",
    "seed",
    "task_id",
    "difficulty",
    "tool_calls",
    "canary_calls",
    "csr",
    "trapped",
    "recovered",
    "success",
    "error",
    *(f"present_{t}" for t in CANARY_TYPES),
    *(f"trapped_{t}" for t in CANARY_TYPES),
)
EXTRA_COLUMNS: Final[tuple[str, ...]] = (
    "run_id",
    "backend",
    "unknown_calls",
    "zero_call",
    "success_cross",
    "judge_status",
    "truncated",
    "control_calls",
    "canary_before_real",
    *(f"control_present_{t}" for t in CANARY_TYPES),
    *(f"control_called_{t}" for t in CANARY_TYPES),
)
RUNS_COLUMNS: Final[tuple[str, ...]] = INTERFACE_COLUMNS + EXTRA_COLUMNS

INDEX_COLUMNS: Final[tuple[str, ...]] = (
    "model",
    "group",
    "backend",
    "condition",
    "pool",
    "seed",
    "task_id",
    "difficulty",
    "run_id",
    "error",
)


def read_index(index_path: str | os.PathLike[str]) -> pl.DataFrame:
    """The runner's index (``results/runs/index.parquet``), checked for the columns used here."""
    try:
        df = pl.read_parquet(Path(index_path))
    except (OSError, pl.exceptions.ComputeError) as exc:
        raise InputError(str(index_path), "<file>", f"cannot read the run index: {exc}") from exc
    for col in INDEX_COLUMNS:
        if col not in df.columns:
            raise InputError(str(index_path), col, "missing column in the run index")
    return validate(df, RunIndexTable, str(index_path))


def _verdicts(v: pl.DataFrame | str | os.PathLike[str] | None, source: str) -> pl.DataFrame | None:
    if v is None:
        return None
    df = v if isinstance(v, pl.DataFrame) else pl.read_parquet(Path(v))
    for col in ("run_id", "success", "status"):
        if col not in df.columns:
            raise InputError(source, col, "missing column in the verdicts table")
    return validate(df, VerdictsTable, source)


def assemble_runs_table(
    index_df: pl.DataFrame,
    records: Sequence[RunRecord],
    primary: pl.DataFrame,
    cross: pl.DataFrame | None = None,
    source: str = "runs table",
    metrics: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Join index, detector metrics and verdicts; validate; return the columns in order.

    ``metrics`` is :func:`~canarykit.detect.detect`'s per-run table when the caller has it.
    """
    if metrics is None:
        _, metrics = detect(records)
    idx = index_df.select(
        pl.col("model").cast(pl.String),
        pl.col("group").cast(pl.String),
        pl.col("backend").cast(pl.String),
        pl.col("condition").cast(pl.String),
        pl.col("pool").cast(pl.String),
        pl.col("seed").cast(pl.Int64),
        pl.col("task_id").cast(pl.String),
        pl.col("difficulty").cast(pl.String),
        pl.col("run_id").cast(pl.String),
    )
    prim = primary.select(
        "run_id",
        pl.col("success").cast(pl.Boolean),
        pl.col("status").cast(pl.String).alias("judge_status"),
    )
    missing = idx.join(prim, on="run_id", how="anti")
    if missing.height:
        raise InputError(
            source,
            "success",
            f"no primary verdict for run {missing['run_id'][0]} ({missing.height} runs)",
        )
    df = idx.join(metrics, on="run_id", how="left", maintain_order="left").join(
        prim, on="run_id", how="left", maintain_order="left"
    )
    if cross is not None:
        df = df.join(
            cross.select("run_id", pl.col("success").cast(pl.Boolean).alias("success_cross")),
            on="run_id",
            how="left",
            maintain_order="left",
        )
    else:
        df = df.with_columns(pl.lit(None, dtype=pl.Boolean).alias("success_cross"))
    df = df.with_columns(
        # backend-error runs are never judged: no verdict counts for them
        pl.when(pl.col("error")).then(None).otherwise(pl.col("success")).alias("success"),
        pl.when(pl.col("error"))
        .then(None)
        .otherwise(pl.col("success_cross"))
        .alias("success_cross"),
        pl.when(pl.col("error"))
        .then(pl.lit("skipped"))
        .otherwise(pl.col("judge_status"))
        .alias("judge_status"),
    ).select(RUNS_COLUMNS)
    df = validate(df, RunsTable, source)
    check_runs_type_columns(df, source)
    return df


def build_runs_table(
    index_path: str | os.PathLike[str],
    store_dir: str | os.PathLike[str],
    tasks_path: str | os.PathLike[str] | None,
    primary_verdicts: pl.DataFrame | str | os.PathLike[str],
    cross_verdicts: pl.DataFrame | str | os.PathLike[str] | None = None,
    source: str = "results/runs.parquet",
) -> pl.DataFrame:
    """The validated per-run table from the index, the record store and the verdicts.

    ``tasks_path`` (optional) checks that every run's task is in the suite.
    """
    index_df = read_index(index_path)
    records = load_records(index_df, store_dir, str(index_path))
    if tasks_path is not None:
        known = task_map(tasks_path)
        unknown = index_df.filter(~pl.col("task_id").is_in(list(known)) & ~pl.col("error"))
        if unknown.height:
            raise InputError(
                str(index_path), "task_id", f"task {unknown['task_id'][0]!r} is not in {tasks_path}"
            )
    primary = _verdicts(primary_verdicts, "primary verdicts")
    assert primary is not None
    return assemble_runs_table(
        index_df, records, primary, _verdicts(cross_verdicts, "cross verdicts"), source
    )


def detect_and_judge(
    index_path: str | os.PathLike[str],
    store_dir: str | os.PathLike[str],
    tasks_path: Any,
    judge_cfg: Mapping[str, Any],
    models: Sequence[Mapping[str, Any]],
    cache_dir: str | os.PathLike[str] | None,
    runs_out: str | os.PathLike[str],
    verdicts_out_dir: str | os.PathLike[str],
    validation_out: str | os.PathLike[str],
    human_sheet: str | os.PathLike[str] | None = None,
    *,
    calls_out: str | os.PathLike[str] | None = None,
    metrics_out: str | os.PathLike[str] | None = None,
    source: str = "params.yaml",
    completion_fn: Callable[..., Any] | None = None,
    retry_delay_s: float = 1.0,
    retries: Mapping[str, Any] | None = None,
    log: Any = None,
) -> dict[str, Any]:
    """Detect traps, judge every run with both judges and write the results.

    ``judge_cfg`` is the whole ``judge:`` block of params.yaml (``template``, ``primary``,
    ``cross``, ``max_attempts``, ``stability``, ``human_sheet``, ``cache_dir``, ``concurrency``,
    ``budget_usd``); ``models`` the ``models:`` list (for the independence check and to find the
    oracle); ``cache_dir`` the verdict cache (``judge.cache_dir``; None disables it, and the
    judges' response cache with it); ``tasks_path`` the task file (or the tasks); ``retries``
    the one retry policy (``agent.retries``: delays and the Retry-After cap; the attempts per
    verdict are ``judge.max_attempts``).

    LLM judges go through the model layer (:class:`~canarykit.judging.LLMJudge`), share one
    budget and one response cache, and print their failures grouped by reason. Oracle runs are
    checked against the task rubric (:func:`oracle_check`): any that does not pass is flagged
    on stderr as a configuration or suite problem and listed in ``validation.json``
    (``oracle_check``).

    Writes ``runs_out`` (validated parquet), ``verdicts_out_dir/{primary,cross}.parquet``
    and ``verdicts_out_dir/counts.json`` (judged vs reused per judge), ``validation_out``
    (JSON: cross-judge agreement overall and per canary type, tsr difference, stability of the
    primary judge, human-sheet comparison or null), and optionally the per-call table
    ``calls_out`` and the DVC metrics ``metrics_out``. Returns the summary written to
    ``validation_out``.
    """
    from .judging import (
        VerdictCache,
        check_judge_independence,
        judge_all,
        judge_inputs,
        judge_options,
        make_judge,
    )

    primary_cfg = judge_cfg.get("primary") or {"kind": "rubric"}
    cross_cfg = judge_cfg.get("cross")
    check_judge_independence({"primary": primary_cfg, "cross": cross_cfg or {}}, models, source)

    index_df = read_index(index_path)
    records = load_records(index_df, store_dir, str(index_path))
    tasks_source = str(tasks_path) if isinstance(tasks_path, str | os.PathLike) else "tasks"
    inputs = judge_inputs(records, task_map(tasks_path), tasks_source)
    out = log if log is not None else sys.stderr
    register_secret_envs(config_secret_envs({"models": models, "judge": judge_cfg}))
    cache = VerdictCache(cache_dir) if cache_dir is not None else None
    block = {**judge_cfg, "cache_dir": cache_dir}
    options: dict[str, Any] = {**judge_options(block, retries, model_layer=True), "retry_delay_s": retry_delay_s}
    if completion_fn is not None:
        options["completion_fn"] = completion_fn
    judge_stats: dict[str, CallStats] = {"primary": CallStats(), "cross": CallStats(), "stability": CallStats()}

    primary_judge = make_judge(dict(primary_cfg), source=source, key="judge.primary", **options, stats=judge_stats["primary"])
    primary_df, primary_counts = judge_all(primary_judge, inputs, cache, label="primary")
    counts: dict[str, Any] = {"primary": primary_counts}
    frames = {"primary": primary_df}
    cross_df: pl.DataFrame | None = None
    cross_judge = None
    if cross_cfg:
        cross_judge = make_judge(dict(cross_cfg), source=source, key="judge.cross", **options, stats=judge_stats["cross"])
        cross_df, counts["cross"] = judge_all(cross_judge, inputs, cache, label="cross")
        frames["cross"] = cross_df
    for role, c in counts.items():
        print(
            f"canarykit: judge {role}: {c['judged']} judged, {c['reused']} reused from the cache, "
            f"{c['skipped']} error runs skipped, {c['unparseable']} unparseable, {c['error']} failed",
            file=out,
        )
        for line in verdict_failure_lines(role, frames[role]):
            print(line, file=out)

    out_dir = Path(verdicts_out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    validate(primary_df, VerdictsTable, str(out_dir / "primary.parquet")).write_parquet(out_dir / "primary.parquet")
    if cross_df is not None:
        validate(cross_df, VerdictsTable, str(out_dir / "cross.parquet")).write_parquet(out_dir / "cross.parquet")

    calls, metrics = detect(records)
    runs = assemble_runs_table(index_df, records, primary_df, cross_df, str(runs_out), metrics)
    Path(runs_out).parent.mkdir(parents=True, exist_ok=True)
    runs.write_parquet(Path(runs_out))
    if calls_out is not None:
        Path(calls_out).parent.mkdir(parents=True, exist_ok=True)
        validate(calls, CallsTable, str(calls_out)).write_parquet(Path(calls_out))
    if metrics_out is not None:
        write_json(metrics_out, metrics_json(runs))
    by_id = {i.run_id: i for i in inputs}
    report = validation_report(
        runs, primary_df, cross_df, lambda ids: [by_id[r] for r in sorted(ids) if r in by_id],
        judge_cfg, models, options, judge_stats, cache, counts,
        human_sheet if human_sheet is not None else judge_cfg.get("human_sheet"),
        source=source, judges={"primary": primary_judge, "cross": cross_judge}, log=out,
    )
    write_json(out_dir / "counts.json", counts)
    write_json(validation_out, report)
    return report


def stability_sample(runs: pl.DataFrame, sample: int, seed: int) -> set[str]:
    """Run ids of the stability re-grading's sample: exactly those :func:`~canarykit.judging.stability`
    draws from the judge inputs of every non-error run of ``runs`` (same order, same seed),
    so a caller loads only these records."""
    import random

    eligible = sorted(runs.filter(~pl.col("error"))["run_id"].to_list())
    return set(random.Random(seed).sample(eligible, min(sample, len(eligible))))


def validation_report(
    runs: pl.DataFrame,
    primary_df: pl.DataFrame,
    cross_df: pl.DataFrame | None,
    inputs_for: Callable[[set[str]], list[Any]],
    judge_cfg: Mapping[str, Any],
    models: Sequence[Mapping[str, Any]],
    options: Mapping[str, Any],
    judge_stats: Mapping[str, CallStats],
    cache: Any,
    counts: dict[str, Any],
    human_sheet: str | os.PathLike[str] | None,
    *,
    source: str = "params.yaml",
    judges: Mapping[str, Any] | None = None,
    log: Any = None,
) -> dict[str, Any]:
    """``validation.json``: the oracle check, cross-judge agreement, the primary judge's
    stability re-grading and the human-sheet comparison, from the per-run table and both
    verdict tables. ``inputs_for(run_ids)`` returns the judge inputs of those runs (only the
    oracle runs, when no judge is the rubric, and the stability sample are asked for).
    Adds ``model_calls`` (per role: requests, cached, retries, cost) to ``counts``."""
    from .judging import (
        cross_judge_report,
        human_validation,
        make_judge,
        read_human_sheet,
        stability,
    )
    from .judging._base import Verdict

    out = log if log is not None else sys.stderr
    primary_cfg = judge_cfg.get("primary") or {"kind": "rubric"}
    cross_cfg = judge_cfg.get("cross")
    needs_inputs = primary_cfg.get("kind") != "rubric" and not (cross_cfg and cross_cfg.get("kind") == "rubric")
    oracle_ids = set(runs.filter(pl.col("model").is_in(oracle_names(models)))["run_id"].to_list()) if needs_inputs else set()
    oracle = oracle_check(runs, models, inputs_for(oracle_ids) if oracle_ids else [], primary_cfg, cross_cfg, primary_df, cross_df)
    for line in oracle_lines(oracle):
        print(line, file=out)

    stab_cfg = judge_cfg.get("stability") or {}
    stab = None
    n_sample = int(stab_cfg.get("sample", 300))
    if n_sample > 0:
        base = {
            row["run_id"]: Verdict(row["success"], row["reason"] or "", row["status"], row["attempts"] or 0)
            for row in primary_df.filter(pl.col("status") != "skipped").iter_rows(named=True)
        }
        seed = int(stab_cfg.get("seed", 0))
        chosen = inputs_for(stability_sample(runs, n_sample, seed))
        stab = stability(
            lambda t: make_judge(
                dict(primary_cfg), source=source, key="judge.primary",
                **{**options, "temperature": t, "stats": judge_stats["stability"]},
            ),
            chosen,
            sample=n_sample,
            repeats=int(stab_cfg.get("repeats", 3)),
            temperature=float(stab_cfg.get("temperature", 0.7)),
            seed=seed,
            base_verdicts=base,
            cache=cache,
        )
    human = None
    if human_sheet:
        judged = {"primary": dict(zip(runs["run_id"], runs["success"], strict=True))}
        if cross_df is not None:
            judged["cross"] = dict(zip(runs["run_id"], runs["success_cross"], strict=True))
        human = human_validation(read_human_sheet(Path(human_sheet)), judged, str(human_sheet))
    identities = {role: (None if j is None else j.identity()) for role, j in (judges or {}).items()}
    if not judges:
        identities = {
            "primary": make_judge(dict(primary_cfg), source=source, key="judge.primary", **options).identity(),
            "cross": None if not cross_cfg else make_judge(dict(cross_cfg), source=source, key="judge.cross", **options).identity(),
        }
    report = {
        "judges": identities,
        "counts": counts,
        "cross": cross_judge_report(runs, **(judge_cfg.get("agreement") or {})) if cross_df is not None else None,
        "stability": stab,
        "human": human,
        "runs": runs.height,
        "error_runs": int(runs["error"].sum()),
        "zero_call_runs": int(runs["zero_call"].sum()),
        "truncated_runs": int(runs["truncated"].sum()),
        "oracle_check": oracle,
    }
    model_calls = counts.setdefault("model_calls", {})
    for role, st in judge_stats.items():
        prev = model_calls.get(role) or {"requests": 0, "cached": 0, "retries": 0, "cost_usd": 0.0}
        model_calls[role] = {
            "requests": prev["requests"] + st.backend_calls, "cached": prev["cached"] + st.cached_calls,
            "retries": prev["retries"] + st.retries, "cost_usd": round(prev["cost_usd"] + st.cost_usd, 8),
        }
    return report


def verdict_failure_lines(role: str, verdicts: pl.DataFrame, *, limit: int = 10) -> list[str]:
    """Console lines for a judge's failed verdicts, grouped by reason
    (``judge primary: 12 verdicts failed: AuthenticationError (401) x 12``)."""
    from .judging._llm import failure_reason

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
    """The instrument check: every oracle run must pass its task's rubric.

    The oracle replays each task's canonical plan, so a run of it that does not pass (cut off
    by the turn limit, a rubric its own plan cannot meet, a tool that changed) says the
    configuration or the suite is broken, not the model. Uses the rubric judge's verdicts (the
    primary's or the cross-judge's when one of them is ``rubric``, else grades the oracle runs
    with the rubric here). ``None`` when the study has no oracle.

    Returns ``{"judge": "rubric", "models": [...], "runs", "passed", "failed": n,
    "pass_rate", "failures": [{run_id, model, task_id, condition, pool, seed, status, reason}],
    "ok"}`` (``failures`` lists at most 200 runs).
    """
    names = oracle_names(models)
    if not names:
        return None
    sub = runs.filter(pl.col("model").is_in(names))
    if primary_cfg.get("kind") == "rubric":
        verdicts = primary_df
    elif cross_cfg and cross_cfg.get("kind") == "rubric" and cross_df is not None:
        verdicts = cross_df
    else:
        from .judging import judge_all, make_judge

        ids = set(sub["run_id"].to_list())
        verdicts, _ = judge_all(make_judge({"kind": "rubric"}), [i for i in inputs if i.run_id in ids], None)
    v = verdicts.select("run_id", pl.col("success").alias("_rubric"), pl.col("reason").alias("_reason"))
    sub = sub.join(v, on="run_id", how="left")
    passed = sub.filter(~pl.col("error") & ~pl.col("truncated") & (pl.col("_rubric") == True))  # noqa: E712
    failed = sub.join(passed.select("run_id"), on="run_id", how="anti").sort("model", "condition", "pool", "seed", "task_id")
    failures = []
    for row in failed.head(200).iter_rows(named=True):
        if row["error"]:
            status, reason = "error", "backend error (the run is retried by the next invocation)"
        elif row["truncated"]:
            status, reason = "truncated", "cut off by agent.max_turns before its final answer"
        else:
            status, reason = "failed", row["_reason"] or "the rubric did not pass"
        failures.append({"run_id": row["run_id"], "model": row["model"], "task_id": row["task_id"],
                         "condition": row["condition"], "pool": row["pool"], "seed": int(row["seed"]),
                         "status": status, "reason": reason})
    n = sub.height
    return {
        "judge": "rubric",
        "models": names,
        "runs": n,
        "passed": passed.height,
        "failed": failed.height,
        "pass_rate": (passed.height / n) if n else None,
        "failures": failures,
        "ok": failed.height == 0,
    }


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
