"""Judge validation (§4 "Validating the judge", Appendices D and E): Cohen's kappa, raw
agreement, cross-judge agreement on a stratified sample and per canary type, stability
re-grading, and the human sheet (written blinded and stratified, read back and compared)."""

from __future__ import annotations

import csv
import dataclasses
import inspect
import random
import re
import sys
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from ..canaries import RUNTIME_MARKER_FIELDS, strip_runtime_markers
from ..detection.metrics import verdict_rate
from ..errors import InputError
from ..store.jsonio import atomic_write_text, content_hash, finite_or_none
from ..store.records import Event, RunRecord, event_from_dict, read_record, record_path
from ..store.schemas import read_table
from ..types import CANARY_TYPES
from ._base import Judge, JudgeInput, Verdict, render_trace
from ._kappa import kappa_interval


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Cohen's kappa of two raters over the same items: ``(p_o - p_e) / (1 - p_e)``.

    Equals ``sklearn.metrics.cohen_kappa_score`` wherever that is defined. Where it is not
    (``p_e == 1``: both raters gave one and the same label to every item, so sklearn returns
    its ``replace_undefined_by`` value, NaN by default) this returns 1.0: the agreement is
    perfect, and ``p_e == 1`` implies ``p_o == 1``. Returns None for no items.
    """
    if len(a) != len(b):
        raise ValueError(f"rater sequences differ in length ({len(a)} vs {len(b)})")
    n = len(a)
    if n == 0:
        return None
    count_a, count_b = Counter(a), Counter(b)
    agree = sum(1 for x, y in zip(a, b, strict=True) if x == y)
    chance = sum(count_a[label] * count_b[label] for label in count_a)  # p_e * n^2, exact
    if chance == n * n:
        return 1.0
    p_o = agree / n
    p_e = chance / (n * n)
    return (p_o - p_e) / (1.0 - p_e)


def agreement(a: Sequence[bool | None], b: Sequence[bool | None], tasks: Sequence[Any] | None = None) -> dict[str, Any]:
    """Raw agreement and kappa over the pairs where both verdicts are defined; with the runs'
    ``tasks``, kappa's task-clustered interval (:func:`~._kappa.kappa_interval`)."""
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    xs = [x for x, _ in pairs]
    ys = [y for _, y in pairs]
    n = len(pairs)
    out = {
        "n": n,
        "agreement": (sum(x == y for x, y in pairs) / n) if n else None,
        "kappa": finite_or_none(cohen_kappa(xs, ys)),
    }
    return {**out, **kappa_interval(a, b, tasks)} if tasks is not None else out


def _tsr(runs: pl.DataFrame, column: str) -> float | None:
    """The tsr of the verdicts in ``column``, over the runs judged (truncated ones included)."""
    value = runs.select(verdict_rate(column, "judged").per_run().mean()).item()
    return None if value is None else float(value)


#: Strata of the cross-judge agreement sample (columns of the runs table that exist are used).
AGREEMENT_STRATA: tuple[str, ...] = ("model", "condition", "pool")


def _allocate(sizes: Sequence[int], n: int, how: str, rng: np.random.Generator) -> list[int]:
    """Sample size per stratum: ``proportional`` (largest remainder) or ``equal`` (as even
    as the strata allow, a short stratum's deficit going to the others); sums to
    ``min(n, sum(sizes))``."""
    sizes_a = np.asarray(sizes, dtype=np.int64)
    total = int(sizes_a.sum())
    n = min(int(n), total)
    if n <= 0 or total == 0:
        return [0] * len(sizes)
    if how == "proportional":
        exact = n * sizes_a / total
        quota = np.floor(exact).astype(np.int64)
        order = np.lexsort((np.arange(len(sizes)), -(exact - quota)))  # largest remainder, then stratum order
        quota[order[: n - int(quota.sum())]] += 1
        return quota.tolist()
    quota = np.zeros(len(sizes), dtype=np.int64)
    left = n
    while left > 0:
        room = np.flatnonzero(quota < sizes_a)
        share, extra = divmod(left, room.size)
        add = np.minimum(np.full(room.size, share), sizes_a[room] - quota[room])
        if extra:
            lucky = rng.choice(room.size, size=extra, replace=False)
            add[lucky] = np.minimum(add[lucky] + 1, sizes_a[room][lucky] - quota[room][lucky])
        quota[room] += add
        left = n - int(quota.sum())
    return quota.tolist()


#: The columns that name a run by what it is (not by a hash of it): samples are drawn in this
#: order, so which runs are sampled does not depend on run ids, which hash the code's version.
LABEL_ORDER = ("model", "pool", "condition", "seed", "task_id", "arm")


def label_order(runs: pl.DataFrame) -> list[str]:
    """The columns of :data:`LABEL_ORDER` that ``runs`` has (``run_id`` when it has none)."""
    cols = [c for c in LABEL_ORDER if c in runs.columns]
    return cols or (["run_id"] if "run_id" in runs.columns else [])


def stratified_sample(
    runs: pl.DataFrame, n: int, seed: int, strata: Sequence[str], *, allocation: str = "proportional"
) -> pl.DataFrame:
    """A seeded sample of ``n`` rows of ``runs``, stratified by the columns ``strata``.

    ``proportional``: each stratum gets its share of ``n`` (largest remainder); ``equal``:
    every stratum the same number as far as its size allows (as the paper's human sheet
    spans models and difficulties). Within a stratum, rows (ordered by their labels,
    :data:`LABEL_ORDER`) are drawn without replacement with ``numpy.random.default_rng(seed)``. The same
    table, ``n``, ``seed`` and strata always give the same sample; the rows come back in the
    table's order.
    """
    rng = np.random.default_rng(int(seed))
    keyed = runs.with_row_index("_row")
    order_cols = label_order(runs) or ["_row"]
    cols = list(strata)
    if cols:
        groups = sorted(keyed.partition_by(cols, as_dict=True).items(), key=lambda kv: tuple(str(k) for k in kv[0]))
        frames = [g for _, g in groups]
    else:
        frames = [keyed]
    quotas = _allocate([f.height for f in frames], n, allocation, rng)
    picked: list[int] = []
    for frame, q in zip(frames, quotas, strict=True):
        if q == 0:
            continue
        rows = frame.sort([*order_cols, "_row"]).get_column("_row").to_numpy()
        picked.extend(rows[np.sort(rng.choice(rows.size, size=q, replace=False))].tolist())
    return keyed.filter(pl.col("_row").is_in(picked)).drop("_row")


def cross_judge_report(
    runs: pl.DataFrame,
    primary: str = "success",
    cross: str = "success_cross",
    *,
    sample: int = 300,
    seed: int = 0,
    strata: Sequence[str] = AGREEMENT_STRATA,
) -> dict[str, Any]:
    """Agreement of the primary and cross judges, as the paper validated its judge.

    Over non-error runs:

    - ``sample``: Cohen's kappa and raw agreement on a seeded sample of ``sample`` runs,
      stratified by ``strata`` (proportional allocation; :func:`stratified_sample`), with
      the sampled ``run_ids`` (the paper: a 300-run sample);
    - ``overall``: over all runs; ``by_condition``: per ``<pool>/<condition>``, so that one
      pool or condition cannot hide behind the pooled figure;
    - ``per_type``: per canary type T, over the runs of the ``declared`` condition whose only
      offered canary type is T: disjoint subsets, so per-type kappas are separate evidence
      (a full-condition run offers all six types and would fall in every subset);
      ``per_type_declared``: over every declared-condition run offering T (the subsets
      overlap when a task declares several types; ``shared`` counts such runs);
    - ``tsr_primary``, ``tsr_cross`` and ``tsr_difference`` (primary minus cross, each over
      its own non-null verdicts).

    With a ``task_id`` column every kappa carries its task-clustered interval (``kappa_lo``,
    ``kappa_hi``, ``clusters``, ``few_clusters``: :func:`~._kappa.kappa_interval`). A table
    without ``condition`` (or ``pool``) columns is treated as one condition (pool).
    """
    valid = runs.filter(~pl.col("error"))

    def agree(part: pl.DataFrame) -> dict[str, Any]:
        tasks = part["task_id"].to_list() if "task_id" in part.columns else None
        return agreement(part[primary].to_list(), part[cross].to_list(), tasks)

    tsr_p, tsr_c = _tsr(valid, primary), _tsr(valid, cross)
    use = [c for c in strata if c in valid.columns]
    drawn = stratified_sample(valid, sample, seed, use)
    sample_report = agree(drawn)
    sample_report.update(
        requested=int(sample), drawn=drawn.height, seed=int(seed), strata=use,
        run_ids=drawn["run_id"].to_list() if "run_id" in drawn.columns else None,
    )
    by_condition: dict[str, Any] = {}
    if "condition" in valid.columns:
        keys = [c for c in ("pool", "condition") if c in valid.columns]
        for key, part in sorted(valid.partition_by(keys, as_dict=True).items(), key=lambda kv: tuple(map(str, kv[0]))):
            by_condition["/".join(str(k) for k in key)] = agree(part)
    declared = valid.filter(pl.col("condition") == "declared") if "condition" in valid.columns else valid
    n_offered = pl.sum_horizontal([pl.col(f"present_{t}").cast(pl.Int32) for t in CANARY_TYPES])
    per_type: dict[str, Any] = {}
    per_type_declared: dict[str, Any] = {}
    for t in CANARY_TYPES:
        only = declared.filter(pl.col(f"present_{t}") & (n_offered == 1))
        per_type[t] = agree(only)
        offered = declared.filter(pl.col(f"present_{t}"))
        per_type_declared[t] = agree(offered)
        per_type_declared[t]["shared"] = int(offered.select((n_offered > 1).sum()).item())
    return {
        "sample": sample_report,
        "overall": agree(valid),
        "by_condition": by_condition,
        "per_type": per_type,
        "per_type_declared": per_type_declared,
        "tsr_primary": tsr_p,
        "tsr_cross": tsr_c,
        "tsr_difference": None if tsr_p is None or tsr_c is None else tsr_p - tsr_c,
    }


def _judge_repeat(judge: Judge, run: JudgeInput, repeat: int) -> Verdict:
    """Repeat ``repeat`` of a re-grading: a judge that takes ``repeat`` (the LLM judge) keys its
    model calls by it, so a repeat is never answered from another repeat's cached reply."""
    if "repeat" in inspect.signature(judge.judge).parameters:
        return judge.judge(run, repeat=repeat)  # type: ignore[call-arg]
    return judge.judge(run)


def stability_draw(run_ids: Sequence[str], sample: int, seed: int) -> list[str]:
    """The stability re-grading's sample: ``sample`` of ``run_ids`` (all of them when there are
    fewer) drawn with ``random.Random(seed)`` from the order given (callers give the runs'
    label order, :data:`LABEL_ORDER`), returned in that order."""
    eligible = list(dict.fromkeys(run_ids))
    picked = set(random.Random(seed).sample(eligible, min(sample, len(eligible))))
    return [r for r in eligible if r in picked]


def stability(
    judge_factory: Callable[[float], Judge],
    inputs: Sequence[JudgeInput],
    sample: int,
    repeats: int,
    temperature: float,
    seed: int,
    *,
    base_verdicts: Mapping[str, Verdict] | None = None,
    cache: Any = None,
) -> dict[str, Any]:
    """Re-grade a seeded sample of ``sample`` runs ``repeats`` times at ``temperature``.

    ``judge_factory(t)`` builds the judge at temperature ``t``; the temperature-0 verdicts are
    ``base_verdicts`` (by run id) or graded here. Reports the unanimity rate (all repeats ok
    and equal) and the agreement of the modal repeat verdict with the temperature-0 verdict.
    With ``cache`` (a :class:`VerdictCache`) each repeat is cached under its own key, so a
    re-run re-grades nothing. Backend-error runs are never sampled (:func:`stability_draw`).
    """
    by_id = {i.run_id: i for i in inputs if not i.error}
    chosen = [by_id[r] for r in stability_draw(list(by_id), sample, seed)]
    hot = judge_factory(temperature)
    t0 = _t0_verdicts(judge_factory, base_verdicts)
    tally = _Tally()
    for run in chosen:
        tally.add(run.run_id, t0(run), _votes(hot, run, repeats, cache))
    n = len(chosen)
    report: dict[str, Any] = {
        "judge": hot.identity(),
        "sample": n,
        "requested_sample": sample,
        "repeats": repeats,
        "temperature": temperature,
        "seed": seed,
        "deterministic": bool(getattr(hot, "deterministic", False)),
        **tally.summary(n),
    }
    if report["deterministic"]:
        report["note"] = (
            f"the {hot.name!r} judge is deterministic: re-grading at temperature {temperature} "
            "cannot change a verdict, so unanimity and agreement are 1 by construction and do "
            "not measure an LLM judge's stability"
        )
    return report


def _t0_verdicts(
    judge_factory: Callable[[float], Judge], base_verdicts: Mapping[str, Verdict] | None
) -> Callable[[JudgeInput], Verdict]:
    """A run's temperature-0 verdict: from ``base_verdicts``, else graded by a judge at
    temperature 0 (built on the first run that needs it)."""
    built: list[Judge] = []

    def verdict(run: JudgeInput) -> Verdict:
        if base_verdicts is not None and run.run_id in base_verdicts:
            return base_verdicts[run.run_id]
        if not built:
            built.append(judge_factory(0.0))
        return built[0].judge(run)

    return verdict


def _votes(hot: Judge, run: JudgeInput, repeats: int, cache: Any) -> list[bool | None]:
    """The verdicts of ``repeats`` re-gradings (None: not ok), each cached under its own key."""
    votes: list[bool | None] = []
    for r in range(repeats):
        verdict = None
        key = None
        if cache is not None:
            key = cache.key(hot, run, extra={"stability_repeat": r})
            verdict = cache.get(key)
        if verdict is None:
            verdict = _judge_repeat(hot, run, r)
            if cache is not None and key is not None:
                cache.put(key, verdict, hot)
        votes.append(verdict.success if verdict.status == "ok" else None)
    return votes


@dataclass
class _Tally:
    """The stability counts over the re-graded runs."""

    unanimous: int = 0
    agree: int = 0
    compared: int = 0
    pair_agree: int = 0
    pair_n: int = 0
    unparseable: int = 0
    runs: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    def add(self, run_id: str, base: Verdict, votes: list[bool | None]) -> None:
        ok_votes = [v for v in votes if v is not None]
        self.unparseable += len(votes) - len(ok_votes)
        self.unanimous += len(ok_votes) == len(votes) and len(set(ok_votes)) == 1
        counts = Counter(ok_votes).most_common()
        mode = counts[0][0] if counts and (len(counts) == 1 or counts[0][1] > counts[1][1]) else None
        if base.success is not None and ok_votes:
            self.compared += 1
            self.agree += mode is not None and mode == base.success
            self.pair_n += len(ok_votes)
            self.pair_agree += sum(v == base.success for v in ok_votes)
        self.runs.append({"run_id": run_id, "t0": base.success, "votes": votes})

    def summary(self, n: int) -> dict[str, Any]:
        return {
            "unanimous_runs": self.unanimous,
            "unanimity_rate": self.unanimous / n if n else None,
            "compared_runs": self.compared,
            "agreement_with_t0": self.agree / self.compared if self.compared else None,
            "vote_agreement_with_t0": self.pair_agree / self.pair_n if self.pair_n else None,
            "unparseable_votes": self.unparseable,
            "runs": self.runs,
        }


# ---------------------------------------------------------------------------------------------
# Human validation sheet (Appendix D)
# ---------------------------------------------------------------------------------------------

_TRUE = frozenset({"true", "1", "success"})
_FALSE = frozenset({"false", "0", "fail"})


@dataclass(frozen=True)
class HumanGrade:
    row: int  # line of the CSV file (the header is row 1)
    run_id: str
    success: bool


def read_human_sheet(path: str | Path) -> list[HumanGrade]:
    """Read a CSV with columns ``run_id, verdict`` (verdict: true/false, 1/0, success/fail,
    case-insensitive). Any other value raises :class:`InputError` naming file, row and field."""
    source = str(path)
    try:
        fh = open(path, newline="", encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise InputError(source, "<file>", f"cannot read the human sheet: {exc}") from exc
    with fh:
        reader = csv.DictReader(fh)
        header = [h.strip() for h in (reader.fieldnames or [])]
        for col in ("run_id", "verdict"):
            if col not in header:
                raise InputError(
                    source, col, f"missing column (expected columns run_id, verdict; got {header})"
                )
        reader.fieldnames = header
        grades: list[HumanGrade] = []
        seen: dict[str, int] = {}
        for rec in reader:
            row = reader.line_num
            run_id = (rec.get("run_id") or "").strip()
            if not run_id:
                raise InputError(source, f"row {row}: run_id", "empty run id")
            if run_id in seen:
                raise InputError(
                    source,
                    f"row {row}: run_id",
                    f"run {run_id!r} already graded on row {seen[run_id]}",
                )
            seen[run_id] = row
            value = (rec.get("verdict") or "").strip().lower()
            if value in _TRUE:
                success = True
            elif value in _FALSE:
                success = False
            else:
                raise InputError(
                    source,
                    f"row {row}: verdict",
                    f"expected true/false, 1/0 or success/fail, got {rec.get('verdict')!r}",
                )
            grades.append(HumanGrade(row, run_id, success))
    return grades


def human_validation(
    grades: Sequence[HumanGrade],
    judges: Mapping[str, Mapping[str, bool | None]],
    source: str = "<human sheet>",
) -> dict[str, Any]:
    """Agreement and kappa of each judge with the human grades, and every disagreement marked
    by which side was stricter (``judge``: the judge failed a run the human passed)."""
    out: dict[str, Any] = {
        "n_graded": len(grades),
        "sheet_sha256": content_hash([[g.run_id, g.success] for g in grades]),
    }
    for name, verdicts in judges.items():
        human: list[bool | None] = []
        judged: list[bool | None] = []
        disagreements: list[dict[str, Any]] = []
        for g in grades:
            if g.run_id not in verdicts:
                raise InputError(
                    source, f"row {g.row}: run_id", f"run {g.run_id!r} is not among the judged runs"
                )
            v = verdicts[g.run_id]
            human.append(g.success)
            judged.append(v)
            if v is not None and v != g.success:
                disagreements.append(
                    {
                        "run_id": g.run_id,
                        "human": g.success,
                        "judge": v,
                        "stricter": "judge" if g.success and not v else "human",
                    }
                )
        report = agreement(human, judged)
        report["unjudged"] = sum(v is None for v in judged)
        report["disagreements"] = disagreements
        report["judge_stricter"] = sum(d["stricter"] == "judge" for d in disagreements)
        report["human_stricter"] = sum(d["stricter"] == "human" for d in disagreements)
        out[name] = report
    return out


# ---------------------------------------------------------------------------------------------
# Writing a blinded, stratified human-grading sheet (Appendix D)
# ---------------------------------------------------------------------------------------------

#: Fields the canary runtime adds to a result (one list, kept by the runtime itself).
RUNTIME_MARKERS: tuple[str, ...] = RUNTIME_MARKER_FIELDS
#: Columns of the human sheet; a grader fills ``verdict`` (true/false) and may add ``notes``.
SHEET_COLUMNS: tuple[str, ...] = ("run_id", "prompt", "trace", "final_answer", "verdict", "notes")


def _strip_markers(content: str | None) -> str | None:
    return strip_runtime_markers(content)


def blind_record(record: RunRecord) -> RunRecord:
    """The run as a blind grader should see it: every canary name replaced by the real name it
    shadows (in calls, results, errors and free text) and the runtime's marker fields
    stripped from canary results. Canaries are those of ``record.offered``."""
    names = {o.name: o.shadows for o in record.offered if o.canary_id is not None and o.shadows}
    if not names:
        return record
    pattern = re.compile(r"(?<![\w-])(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) + r")(?![\w-])")

    def text(value: str | None) -> str | None:
        return None if value is None else pattern.sub(lambda m: names[m.group(1)], value)

    canary_calls = {e.call_id for e in record.events if e.kind == "tool_call" and e.name in names}
    events: list[Event] = []
    for e in record.events:
        d = e.to_dict()  # the fields this kind has and sets
        if d.get("name"):
            d["name"] = names.get(d["name"], d["name"])
        if e.kind == "tool_result" and e.call_id in canary_calls:
            d["content"] = _strip_markers(e.content)
        d.update({k: text(d[k]) for k in ("content", "message", "raw_arguments") if k in d})
        events.append(event_from_dict(d))
    return dataclasses.replace(record, events=events, final_answer=text(record.final_answer))


def _prompt(record: RunRecord, tasks: Mapping[str, Any] | None, source: str) -> str:
    task = record.identity.get("task") if isinstance(record.identity, dict) else None
    if isinstance(task, dict) and isinstance(task.get("prompt"), str):
        return str(task["prompt"])
    if tasks is not None and record.task_id in tasks:
        return str(tasks[record.task_id].prompt)
    raise InputError(source, "identity.task.prompt", f"no prompt for task {record.task_id!r} (pass --tasks with the task file)")


def human_sheet(
    runs: pl.DataFrame,
    store_dir: str | Path,
    n: int = 40,
    strata: Sequence[str] = ("model", "difficulty"),
    seed: int = 0,
    *,
    tasks: Mapping[str, Any] | None = None,
    source: str = "runs table",
) -> pl.DataFrame:
    """A blinded, stratified human-grading sheet (Appendix D) as a frame of :data:`SHEET_COLUMNS`.

    ``n`` non-error runs of ``runs`` (the per-run table, with its ``run_id`` column), spread as
    evenly as the strata allow over the combinations of ``strata`` (:func:`stratified_sample`
    with equal allocation, seeded), in a seeded random order. Each run is read from the run
    store (``store_dir/<id[:2]>/<id>.json``) and shown blinded (:func:`blind_record`): the
    task prompt, the tool-call trace and the final answer, with no model, condition, pool or
    canary name. ``verdict`` and ``notes`` are left for the grader; the filled sheet is read
    back by :func:`read_human_sheet` (``judge.human_sheet``).
    """
    for col in ("run_id", "error", *strata):
        if col not in runs.columns:
            raise InputError(source, col, f"missing column (the runs table has {runs.columns[:6]} ...)")
    if n < 1:
        raise InputError("command line", "--n", f"must be at least 1, got {n}")
    eligible = runs.filter(~pl.col("error"))
    if eligible.is_empty():
        raise InputError(source, "error", "no run without a backend error to grade")
    chosen = stratified_sample(eligible, n, seed, strata, allocation="equal")
    order = np.random.default_rng([int(seed), 1]).permutation(chosen.height)
    rows = []
    for run_id in chosen.get_column("run_id").to_numpy()[order]:
        try:
            path = record_path(store_dir, str(run_id))
        except ValueError:
            raise InputError(source, "run_id", f"{run_id!r} is not a run id") from None
        if not path.is_file():
            raise InputError(str(path), "run_id", f"run {run_id} of {source} has no record in the run store {store_dir}")
        record = read_record(path)
        blind = blind_record(record)
        rows.append({
            "run_id": str(run_id), "prompt": _prompt(record, tasks, str(path)), "trace": render_trace(blind),
            "final_answer": blind.final_answer or "", "verdict": "", "notes": "",
        })
    return pl.DataFrame(rows, schema={c: pl.String for c in SHEET_COLUMNS})


def human_sheet_command(
    out: str | Path,
    *,
    runs_path: str | Path = "results/runs.parquet",
    store_dir: str | Path = "results/runs/store",
    n: int = 40,
    strata: Sequence[str] = ("model", "difficulty"),
    seed: int = 0,
    tasks_path: str | Path | None = None,
) -> int:
    """``canarykit human-sheet``: write the sheet as CSV (atomically); returns exit status 0."""
    runs_p = Path(runs_path)
    runs = read_table(runs_p, "runs table not found (run the study first, or pass --runs)")
    tasks = None
    if tasks_path is not None:
        from ..tasks.suite import task_map

        tasks = task_map(tasks_path)
    sheet = human_sheet(runs, store_dir, n, strata, seed, tasks=tasks, source=str(runs_p))
    atomic_write_text(out, sheet.write_csv())
    strata_txt = ", ".join(strata) if strata else "none"
    print(f"{sheet.height} runs written to {out} (stratified by {strata_txt}; seed {seed}); fill the verdict column "
          "with true/false and point judge.human_sheet at the file", file=sys.stderr)
    return 0
