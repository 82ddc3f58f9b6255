"""Judge validation (§4 "Validating the judge", Appendices D and E): Cohen's kappa, raw
agreement, cross-judge agreement per canary type, stability re-grading and the human sheet."""

from __future__ import annotations

import csv
import random
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from ..errors import InputError
from ..jsonio import content_hash, finite_or_none
from ..types import CANARY_TYPES
from ._base import Judge, JudgeInput, Verdict


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


def agreement(a: Sequence[bool | None], b: Sequence[bool | None]) -> dict[str, Any]:
    """Raw agreement and kappa over the pairs where both verdicts are defined."""
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    xs = [x for x, _ in pairs]
    ys = [y for _, y in pairs]
    n = len(pairs)
    return {
        "n": n,
        "agreement": (sum(x == y for x, y in pairs) / n) if n else None,
        "kappa": finite_or_none(cohen_kappa(xs, ys)),
    }


def _tsr(values: Sequence[bool | None]) -> float | None:
    defined = [v for v in values if v is not None]
    return sum(defined) / len(defined) if defined else None


def cross_judge_report(
    runs: pl.DataFrame, primary: str = "success", cross: str = "success_cross"
) -> dict[str, Any]:
    """Agreement of the primary and cross judges over non-error runs, overall and per canary
    type (runs where that type was offered), and the difference of their overall tsr
    (primary minus cross, each over its own non-null verdicts)."""
    valid = runs.filter(~pl.col("error"))
    a = valid[primary].to_list()
    b = valid[cross].to_list()
    tsr_p, tsr_c = _tsr(a), _tsr(b)
    per_type: dict[str, Any] = {}
    for t in CANARY_TYPES:
        sub = valid.filter(pl.col(f"present_{t}"))
        per_type[t] = agreement(sub[primary].to_list(), sub[cross].to_list())
    return {
        "overall": agreement(a, b),
        "per_type": per_type,
        "tsr_primary": tsr_p,
        "tsr_cross": tsr_c,
        "tsr_difference": None if tsr_p is None or tsr_c is None else tsr_p - tsr_c,
    }


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
    re-run re-grades nothing. Backend-error runs are never sampled.
    """
    eligible = sorted((i for i in inputs if not i.error), key=lambda i: i.run_id)
    chosen = random.Random(seed).sample(eligible, min(sample, len(eligible)))
    chosen.sort(key=lambda i: i.run_id)
    hot = judge_factory(temperature)
    base_judge: Judge | None = None
    deterministic = bool(getattr(hot, "deterministic", False))
    per_run: list[dict[str, Any]] = []
    unanimous = agree = compared = pair_agree = pair_n = unparseable = 0
    for run in chosen:
        if base_verdicts is not None and run.run_id in base_verdicts:
            base = base_verdicts[run.run_id]
        else:
            if base_judge is None:
                base_judge = judge_factory(0.0)
            base = base_judge.judge(run)
        votes: list[bool | None] = []
        for r in range(repeats):
            verdict = None
            key = None
            if cache is not None:
                key = cache.key(hot, run, extra={"stability_repeat": r})
                verdict = cache.get(key)
            if verdict is None:
                verdict = hot.judge(run)
                if cache is not None and key is not None:
                    cache.put(key, verdict, hot)
            votes.append(verdict.success if verdict.status == "ok" else None)
        ok_votes = [v for v in votes if v is not None]
        unparseable += len(votes) - len(ok_votes)
        is_unanimous = len(ok_votes) == len(votes) and len(set(ok_votes)) == 1
        unanimous += is_unanimous
        counts = Counter(ok_votes).most_common()
        mode = (
            counts[0][0] if counts and (len(counts) == 1 or counts[0][1] > counts[1][1]) else None
        )
        if base.success is not None and ok_votes:
            compared += 1
            agree += mode is not None and mode == base.success
            pair_n += len(ok_votes)
            pair_agree += sum(v == base.success for v in ok_votes)
        per_run.append({"run_id": run.run_id, "t0": base.success, "votes": votes})
    n = len(chosen)
    report: dict[str, Any] = {
        "judge": hot.identity(),
        "sample": n,
        "requested_sample": sample,
        "repeats": repeats,
        "temperature": temperature,
        "seed": seed,
        "deterministic": deterministic,
        "unanimous_runs": unanimous,
        "unanimity_rate": unanimous / n if n else None,
        "compared_runs": compared,
        "agreement_with_t0": agree / compared if compared else None,
        "vote_agreement_with_t0": pair_agree / pair_n if pair_n else None,
        "unparseable_votes": unparseable,
        "runs": per_run,
    }
    if deterministic:
        report["note"] = (
            f"the {hot.name!r} judge is deterministic: re-grading at temperature {temperature} "
            "cannot change a verdict, so unanimity and agreement are 1 by construction and do "
            "not measure an LLM judge's stability"
        )
    return report


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
