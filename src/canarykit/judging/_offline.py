"""Offline judges: the task's outcome rubric (default primary) and the paper's old
tool-coverage heuristic (default cross-judge). Both are deterministic."""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import sys
from collections.abc import Callable
from typing import Any, Final

from ._base import JudgeInput, Verdict, register_judge, run_error_verdict

RUBRIC_JUDGE_VERSION: Final[str] = "1"
TOOL_COVERAGE_VERSION: Final[str] = "1"

RubricFn = Callable[..., Any]


def _jsonable(obj: Any) -> Any:
    """A JSON-able view of a rubric (dataclasses, tuples, mappings; anything else as text)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple | set | frozenset):
        items = [_jsonable(v) for v in obj]
        return sorted(items, key=repr) if isinstance(obj, set | frozenset) else items
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    return repr(obj)


def _fact_text(fact: Any) -> str:
    for attr in ("label", "description", "text", "name", "id"):
        value = getattr(fact, attr, None)
        if isinstance(value, str):
            return value
    return str(fact)


def _default_check_rubric() -> RubricFn:
    from ..tasks.tasks import check_rubric

    return check_rubric


def _source_hash(fn: Callable[..., Any]) -> str:
    """Hash of the source of the module defining ``fn``: a changed checker re-judges."""
    module = sys.modules.get(getattr(fn, "__module__", "") or "")
    try:
        text = inspect.getsource(module) if module is not None else inspect.getsource(fn)
    except (OSError, TypeError):
        text = getattr(fn, "__qualname__", repr(fn))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class RubricJudge:
    """Success iff the task's outcome rubric holds for the final answer
    (:func:`canarykit.tasks.tasks.check_rubric`); NULL for runs that ended with an error."""

    name = "rubric"
    deterministic = True

    def __init__(self, check_fn: RubricFn | None = None) -> None:
        self._check_fn = check_fn

    @property
    def check_fn(self) -> RubricFn:
        if self._check_fn is None:
            self._check_fn = _default_check_rubric()
        return self._check_fn

    def identity(self) -> dict[str, Any]:
        return {
            "kind": "rubric",
            "version": RUBRIC_JUDGE_VERSION,
            "checker_sha256": _source_hash(self.check_fn),
        }

    def cache_inputs(self, run: JudgeInput) -> dict[str, Any]:
        return {
            "rubric": _jsonable(getattr(run.task, "rubric", None)),
            "final": run.final_answer,
            "trace": run.trace,
        }

    def judge(self, run: JudgeInput) -> Verdict:
        if run.error:
            return run_error_verdict()
        if run.task is None:
            return Verdict(None, f"no task {run.task_id!r} to read a rubric from", "error")
        result = self.check_fn(run.task, run.final_answer or "", run.trace)
        facts = list(getattr(result, "facts", []) or [])
        held = sum(1 for _, ok in facts if ok)
        missing = [_fact_text(f) for f, ok in facts if not ok]
        reason = f"{held}/{len(facts)} rubric facts hold"
        if missing:
            reason += "; missing: " + "; ".join(missing)
        return Verdict(bool(result.passed), reason, "ok")


class ToolCoverageJudge:
    """The paper's replaced heuristic: success iff every correct tool was called (as a real
    tool, not a canary) at least once with status ``ok`` and a result that was not an error.
    Kept as the offline cross-judge; it penalises solving a step by reasoning."""

    name = "tool-coverage"
    deterministic = True

    def identity(self) -> dict[str, Any]:
        return {"kind": "tool-coverage", "version": TOOL_COVERAGE_VERSION}

    def cache_inputs(self, run: JudgeInput) -> dict[str, Any]:
        return {
            "correct_tools": list(run.correct_tools),
            "calls": [[c.name, c.cls, c.status, c.result_error] for c in run.calls],
        }

    def judge(self, run: JudgeInput) -> Verdict:
        if run.error:
            return run_error_verdict()
        good = {
            c.name
            for c in run.calls
            if c.cls == "real" and c.status == "ok" and c.result_error is not True
        }
        missing = [t for t in run.correct_tools if t not in good]
        if missing:
            return Verdict(
                False, "correct tools never called successfully: " + ", ".join(missing), "ok"
            )
        return Verdict(True, "every correct tool was called successfully", "ok")


@register_judge("rubric")
def _make_rubric(
    cfg: dict[str, Any], *, rubric_fn: RubricFn | None = None, **_: Any
) -> RubricJudge:
    return RubricJudge(rubric_fn)


@register_judge("tool-coverage")
def _make_tool_coverage(cfg: dict[str, Any], **_: Any) -> ToolCoverageJudge:
    return ToolCoverageJudge()
