"""Judge inputs, verdicts, the :class:`Judge` protocol and the registry of judges by name."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, runtime_checkable

from ..detection.detect import ClassifiedCall, call_event, classify_calls
from ..errors import ConfigError
from ..registry import Registry
from ..store.jsonio import canonical_json
from ..store.records import RunRecord, ToolErrorEvent, ToolResultEvent
from ..types import VERDICT_STATUSES, VerdictStatus

#: Each tool result is capped at this many characters in the rendered trace.
RESULT_CAP: Final[int] = 2000
#: Raw judge output kept in a verdict (characters).
RAW_CAP: Final[int] = 4000


@dataclass(frozen=True)
class CallView:
    """What the offline judges read of one tool call."""

    name: str | None
    cls: str
    status: str | None
    result_error: bool | None  # the tool answered an error (None: no result recorded)


@dataclass(frozen=True)
class JudgeInput:
    """Everything a judge may read about one run.

    ``trace`` is the full tool-call trace rendered as text (:func:`render_trace`);
    ``task`` is the task object of :mod:`canarykit.tasks.tasks` (used by the rubric judge);
    ``events`` the run's trace events (the bfcl judge replays the calls they record).
    """

    run_id: str
    task_id: str
    prompt: str
    correct_tools: tuple[str, ...]
    trace: str
    final_answer: str | None
    task: Any = field(default=None, compare=False)
    calls: tuple[CallView, ...] = ()
    error: bool = False
    events: tuple[Any, ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class Verdict:
    """A judge's decision. ``success`` is None unless ``status`` is ``ok``."""

    success: bool | None
    reason: str
    status: VerdictStatus
    attempts: int = 1
    raw: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Any) -> Verdict:
        if not isinstance(d, dict):
            raise ValueError("a verdict must be a JSON object")
        success = d.get("success")
        status = d.get("status")
        if success is not None and not isinstance(success, bool):
            raise ValueError("verdict.success must be a bool or null")
        if status not in VERDICT_STATUSES:
            raise ValueError(f"verdict.status must be one of {VERDICT_STATUSES}")
        attempts = d.get("attempts", 1)
        if not isinstance(attempts, int) or isinstance(attempts, bool):
            raise ValueError("verdict.attempts must be an integer")
        return cls(
            success=success,
            reason=str(d.get("reason", "")),
            status=status,
            attempts=attempts,
            raw=str(d.get("raw", "")),
        )


@runtime_checkable
class Judge(Protocol):
    """An outcome judge. ``identity()`` says everything that changes its verdicts (kind,
    model, decoding, template hash, parser version); ``cache_inputs`` is the part of a
    :class:`JudgeInput` it reads. Together they key the verdict cache."""

    name: str

    def identity(self) -> dict[str, Any]: ...

    def cache_inputs(self, run: JudgeInput) -> dict[str, Any]: ...

    def judge(self, run: JudgeInput) -> Verdict: ...


#: ``factory(cfg, **options) -> Judge``; options: template_path, max_attempts, temperature,
#: completion_fn, source.
JudgeFactory = Callable[..., Judge]
#: The judges by ``judge.<role>.kind``; each registers itself where it is defined (declared
#: lazily here, so a lookup needs no import of the implementations).
JUDGES: Registry[JudgeFactory] = Registry(
    "judge kind",
    lazy={"llm": "canarykit.judging._llm", "rubric": "canarykit.judging._offline",
          "tool-coverage": "canarykit.judging._offline", "bfcl": "canarykit.judging._bfcl"},
)


def register_judge(kind: str) -> Callable[[JudgeFactory], JudgeFactory]:
    """Register a judge factory under ``kind`` (the ``judge.<role>.kind`` value)."""
    return JUDGES.register(kind)


def judge_kinds() -> tuple[str, ...]:
    return tuple(JUDGES.names())


def make_judge(
    cfg: dict[str, Any], *, source: str = "params.yaml", key: str = "judge", **options: Any
) -> Judge:
    """Build the judge a config block describes (``{kind: llm|rubric|tool-coverage, ...}``)."""
    if not isinstance(cfg, dict):
        raise ConfigError(source, key, "expected a mapping with a 'kind'")
    kind = cfg.get("kind")
    name: Any = kind if isinstance(kind, Hashable) else repr(kind)  # named as written in the error
    factory = JUDGES.get(name, source=source, field=f"{key}.kind")
    return factory(cfg, source=source, key=key, **options)


def truncate(text: str, cap: int) -> str:
    if len(text) <= cap:
        return text
    return text[:cap] + f"...[truncated {len(text) - cap} characters]"


def render_trace(record: RunRecord, cap: int = RESULT_CAP) -> str:
    """Every tool call of the run, in order: name, arguments and result (capped at ``cap``).

    A call refused by the loop (unknown tool, malformed or invalid arguments) shows the
    error answered to the agent as its result.
    """
    outcomes: dict[str, str] = {}
    for event in record.events:
        if not isinstance(event, ToolResultEvent | ToolErrorEvent) or event.call_id is None or event.call_id in outcomes:
            continue
        if event.kind == "tool_result":
            prefix = "ERROR: " if event.is_error else ""
            outcomes[event.call_id] = prefix + (event.content or "")
        elif event.kind == "tool_error":
            outcomes[event.call_id] = f"ERROR ({event.status}): {event.message or ''}"
    lines: list[str] = []
    n = 0
    for event in record.events:
        if event.kind != "tool_call":
            continue
        n += 1
        if event.arguments is not None:
            args = canonical_json(event.arguments)
        else:
            args = event.raw_arguments if event.raw_arguments is not None else ""
        result = outcomes.get(event.call_id or "", "(no result recorded)")
        lines.append(f"[{n}] {event.name}")
        lines.append(f"arguments: {truncate(args, cap)}")
        lines.append(f"result: {truncate(result, cap)}")
    return "\n".join(lines) if lines else "(no tool calls)"


def call_views(
    record: RunRecord, calls: Sequence[ClassifiedCall] | None = None
) -> tuple[CallView, ...]:
    if calls is None:
        calls = classify_calls(record)
    result_error: dict[str, bool] = {}
    for event in record.events:
        if event.kind == "tool_result" and event.call_id is not None:
            result_error.setdefault(event.call_id, bool(event.is_error))
        elif event.kind == "tool_error" and event.call_id is not None:
            result_error.setdefault(event.call_id, True)
    views = []
    for c in calls:
        call_id = call_event(record, c).call_id
        views.append(
            CallView(c.name, c.cls, c.status, result_error.get(call_id or "") if call_id else None)
        )
    return tuple(views)


def judge_input(
    record: RunRecord, task: Any, calls: Sequence[ClassifiedCall] | None = None
) -> JudgeInput:
    """The :class:`JudgeInput` of one run record and its task (prompt from the task file,
    correct-tools hint from the record)."""
    prompt = getattr(task, "prompt", None)
    if not isinstance(prompt, str):
        raise ValueError(f"task {record.task_id!r} has no prompt")
    return JudgeInput(
        run_id=record.run_id,
        task_id=record.task_id,
        prompt=prompt,
        correct_tools=tuple(record.correct_tools),
        trace=render_trace(record),
        final_answer=record.final_answer,
        task=task,
        calls=call_views(record, calls),
        error=record.error,
        events=tuple(record.events),
    )


def run_error_verdict() -> Verdict:
    return Verdict(None, "the run ended with a backend error; not judged", "error", attempts=0)
