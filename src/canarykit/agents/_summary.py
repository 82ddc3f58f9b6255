"""What an invocation of the runner reports: the progress line, the run index, the run summary
and the failures grouped by model and reason (see :mod:`.runner` for the decisions)."""

from __future__ import annotations

import io
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

import polars as pl

from ..store.jsonio import atomic_write_bytes
from ._plan import Planned
from .adaptive import snapshot
from .calls import CallStats
from .config import agent_defaults
from .protocol import is_transient_reason

INDEX_SCHEMA: dict[str, Any] = {
    "model": pl.String, "group": pl.String, "backend": pl.String, "provider": pl.String,
    "condition": pl.String, "pool": pl.String, "seed": pl.Int64, "task_id": pl.String, "arm": pl.String,
    "difficulty": pl.String, "run_id": pl.String, "identity_hash": pl.String, "status": pl.String,
    "error": pl.Boolean,
}
# No ``executed`` column: whether this invocation executed a run or reused its record depends
# on history (what the store held before), not on the run; the index is a tracked output, so
# it says only what the run is. The runs an invocation executed are in its job summary, a log
# (``RunSummary.executed_runs``).


@dataclass
class ModelTally:
    executed: int = 0
    reused: int = 0
    deduplicated: int = 0
    failed: int = 0
    skipped: int = 0
    total: int = 0
    backend_calls: int = 0
    cached_calls: int = 0
    retries: int = 0
    cost_usd: float = 0.0
    #: failed runs by reason (``ErrorType (status)``)
    failures: dict[str, int] = field(default_factory=dict)
    #: failed runs that had failed in an earlier invocation too
    failed_again: int = 0


@dataclass
class RunSummary(ModelTally):
    """The counts of :class:`ModelTally` over the whole grid, plus the invocation's facts."""

    budget_usd: float | None = None
    budget_exhausted: bool = False
    #: ``agent.retries.rerun_failed``, and the failed runs that keep the job out of date under it
    rerun_failed: str = field(default_factory=lambda: agent_defaults().retries.rerun_failed)
    retry_pending: int = 0
    elapsed_s: float = 0.0
    per_model: dict[str, ModelTally] = field(default_factory=dict)
    #: run ids this invocation executed (in plan order): history, so never in the run index
    executed_runs: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["cost_usd"] = round(self.cost_usd, 8)
        d["elapsed_s"] = round(self.elapsed_s, 3)
        for t in d["per_model"].values():
            t["cost_usd"] = round(t["cost_usd"], 8)
        return d


class Progress:
    """At most one line every ``every_s`` seconds on stderr, plus a final line."""

    def __init__(self, total: int, out: TextIO | None, every_s: float = 2.0) -> None:
        self.total, self.out, self.every_s = total, out, every_s
        self.t0 = self.last = time.monotonic()
        self.done = self.errors = 0
        self.spend = 0.0

    def tick(self, n: int = 1, error: bool = False, force: bool = False, errors: int = 0) -> None:
        self.done += n
        self.errors += int(error) + errors
        now = time.monotonic()
        if self.out is not None and (force or now - self.last >= self.every_s):
            self.last = now
            rate = self.done / max(now - self.t0, 1e-9)
            print(f"[canarykit runs] {self.done}/{self.total} done, {rate:.1f}/s, {self.errors} errors, spend ${self.spend:.4f}"
                  f"{lanes_text()}", file=self.out, flush=True)


def lanes_text() -> str:
    """The adaptive provider lanes of this process's grid, for its progress line (the
    console's heartbeat sums them over the agent jobs): ``; lanes openai 12/128 9.8/s``
    (current limit / maximum, completed calls per second); "" when no lane adapts."""
    lanes = snapshot()
    if not lanes:
        return ""
    return "; lanes " + ", ".join(f"{p} {s.limit}/{s.maximum} {s.rate:.1f}/s" for p, s in sorted(lanes.items()))


def count(summary: RunSummary, tally: ModelTally, name: str, n: int = 1) -> None:
    """Add ``n`` to counter ``name`` of the model's tally and of the grid's."""
    setattr(tally, name, getattr(tally, name) + n)
    setattr(summary, name, getattr(summary, name) + n)


def tally_runs(summary: RunSummary, planned: Sequence[Planned], models: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Count what happened to every planned run; return the run index's rows, in plan order
    (runs not started have none)."""
    rows: list[dict[str, Any]] = []
    for p in planned:
        name = str(models[p.model_idx]["name"])
        tally = summary.per_model[name]
        tally.total += 1
        if p.status is None:
            count(summary, tally, "skipped")
            continue
        if p.found is not None:  # reused from the store before anything ran
            count(summary, tally, "reused")
            if p.found == "identical":
                count(summary, tally, "deduplicated")
        elif p.executed:
            count(summary, tally, "executed")
            summary.executed_runs.append(p.spec.run_id)
        elif p.copied:  # a copy of a run executed in this invocation
            count(summary, tally, "reused")
            count(summary, tally, "deduplicated")
        elif p.late:  # finished by a concurrent invocation while this one waited
            count(summary, tally, "reused")
        if p.error:
            count(summary, tally, "failed")
            reason = p.reason or "BackendError"
            tally.failures[reason] = tally.failures.get(reason, 0) + 1
            summary.failures[reason] = summary.failures.get(reason, 0) + 1
            if p.failed_before:
                count(summary, tally, "failed_again")
        spec = models[p.model_idx]
        rows.append({
            "model": name, "group": str(spec.get("group", "")), "backend": str(spec.get("backend", "")),
            "provider": p.provider, "condition": p.spec.condition, "pool": p.spec.pool, "seed": int(p.spec.seed),
            "task_id": str(p.spec.task.id), "arm": p.spec.arm, "difficulty": str(p.spec.task.difficulty), "run_id": p.spec.run_id,
            "identity_hash": p.spec.identity_hash, "status": p.status, "error": bool(p.error),
        })
    return rows


def tally_calls(summary: RunSummary, stats: Mapping[int, CallStats], models: Sequence[Mapping[str, Any]]) -> None:
    """The model calls of this invocation, per model and in total."""
    for mi, s in stats.items():
        tally = summary.per_model[str(models[mi]["name"])]
        tally.backend_calls, tally.cached_calls, tally.retries, tally.cost_usd = s.backend_calls, s.cached_calls, s.retries, s.cost_usd
        summary.backend_calls += s.backend_calls
        summary.cached_calls += s.cached_calls
        summary.retries += s.retries
        summary.cost_usd += s.cost_usd


def accepted_failures(summary: RunSummary) -> dict[str, int]:
    """Failed runs by reason that do not keep the job out of date under ``rerun_failed``; sets
    ``summary.retry_pending`` to the rest."""
    accepted = {r: n for r, n in summary.failures.items() if not keeps_out_of_date(r, summary.rerun_failed)}
    summary.retry_pending = summary.failed - sum(accepted.values())
    return accepted


def keeps_out_of_date(reason: str, rerun_failed: str) -> bool:
    """Whether a run that failed for ``reason`` keeps its job out of date under the policy."""
    if rerun_failed == "all":
        return True
    return rerun_failed == "transient" and is_transient_reason(reason)


def print_summary(summary: RunSummary, bar: Progress, out: TextIO, *, progress: bool) -> None:
    """The closing lines: the final progress line and the counts (with ``progress``), the
    budget when it stopped the grid, and the failures (always)."""
    if progress:
        bar.spend = summary.cost_usd
        bar.tick(0, force=True)
        print(
            f"[canarykit runs] {summary.total} runs: {summary.executed} executed, {summary.reused} reused "
            f"({summary.deduplicated} copied from identical runs), {summary.failed} failed, {summary.skipped} not started; "
            f"{summary.backend_calls} backend calls, {summary.cached_calls} cached; ${summary.cost_usd:.4f}; {summary.elapsed_s:.1f} s",
            file=out, flush=True,
        )
        if summary.budget_exhausted:
            print(f"[canarykit runs] budget of ${summary.budget_usd} reached: {summary.skipped} runs were not started; "
                  "raise agent.budget_usd and re-run to resume", file=out, flush=True)
    for line in failure_lines(summary):
        print(line, file=out, flush=True)


def failure_lines(summary: RunSummary, *, limit: int = 8) -> list[str]:
    """Failed runs grouped by model and reason, e.g.
    ``[canarykit runs] fake-gw: 12 runs failed: AuthenticationError (401) x 12``, then what
    happens to them under ``agent.retries.rerun_failed`` (``summary.rerun_failed``) and which
    reasons are not transient: said every time, so runs that keep failing never go unnoticed."""
    lines = []
    permanent: dict[str, int] = {}
    for name, tally in summary.per_model.items():
        if not tally.failed:
            continue
        ordered = sorted(tally.failures.items(), key=lambda kv: (-kv[1], kv[0]))
        shown = ", ".join(f"{reason} x {n}" for reason, n in ordered[:limit])
        more = f", ... ({len(ordered) - limit} more reasons)" if len(ordered) > limit else ""
        every = " (every run of this model)" if tally.failed == tally.total else ""
        again = f"; {tally.failed_again} of them failed in an earlier invocation too" if tally.failed_again else ""
        lines.append(f"[canarykit runs] {name}: {tally.failed} runs failed{every}: {shown}{more}{again}")
        for reason, n in ordered:
            if not is_transient_reason(reason):
                permanent[reason] = permanent.get(reason, 0) + n
    if not lines:
        return lines
    return lines + _policy_lines(summary.rerun_failed, permanent)


def _policy_lines(policy: str, permanent: Mapping[str, int]) -> list[str]:
    """What happens to failed runs under ``agent.retries.rerun_failed``, and which reasons are
    refusals (not transient)."""
    lines = []
    if permanent:
        names = ", ".join(sorted(permanent))
        lines.append(f"[canarykit runs] not transient: {names}: the backend refused these requests (check the key, "
                     "the model id, the endpoint or the request); a retry fails the same way until that is fixed")
    tail = "the reasons are in each run record's backend_error event"
    if policy == "none":
        lines.append("[canarykit runs] failed runs are kept out of every metric and counted in every table; "
                     "agent.retries.rerun_failed is none, so they are not retried until their job reruns "
                     f"(`snakemake --forcerun run_agents`, or set rerun_failed: all); {tail}")
    elif policy == "transient" and permanent:
        n = sum(permanent.values())
        lines.append(f"[canarykit runs] failed runs are kept out of every metric; the transient ones are retried by the "
                     f"next plain `snakemake` (or `dvc repro`); the {n} not transient are accepted as failed "
                     f"(agent.retries.rerun_failed: transient) until their job reruns; {tail}")
    else:
        hint = (" (to accept the ones that are not transient as failed instead, set agent.retries.rerun_failed: transient)"
                if permanent else "")
        lines.append("[canarykit runs] failed runs are kept out of every metric and retried by the next plain "
                     f"`snakemake` (or `dvc repro`){hint}; {tail}")
    return lines


def write_index(rows: Iterable[dict[str, Any]], path: str | Path) -> None:
    """The run index (Parquet, validated against :class:`~canarykit.store.schemas.RunIndexTable`)."""
    from ..store.schemas import RunIndexTable, validate

    df = validate(pl.DataFrame(list(rows), schema=INDEX_SCHEMA), RunIndexTable, str(path))
    buf = io.BytesIO()
    df.write_parquet(buf, compression="zstd", statistics=False)
    atomic_write_bytes(path, buf.getvalue())
