"""Hand-built run records for detector, judge and run-table tests."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from canarykit.store.records import Event, ToolCallEvent, ToolErrorEvent, ToolResultEvent


@dataclass(frozen=True)
class FakeTask:
    id: str
    prompt: str
    rubric: tuple[str, ...] = ()


def call_events(
    calls: Sequence[tuple[str, str] | tuple[str, str, bool]],
    *,
    arguments: dict[str, Any] | None = None,
    content: str | None = None,
    refusal: str = "refused",
) -> list[Event]:
    """A ``tool_call`` event per ``(name, status[, result_is_error])``, each answered by a
    ``tool_result`` (status ok; ``content`` or "<name> result") or a ``tool_error``."""
    args = {"city": "Delhi"} if arguments is None else arguments
    events: list[Event] = []
    for i, call in enumerate(calls):
        name, status = call[0], call[1]
        cid = f"c{i}"
        events.append(ToolCallEvent(turn=i, call_id=cid, name=name, status=status,
                                    arguments=args if status != "malformed_arguments" else None,
                                    raw_arguments='{"city": "Delhi"}'))
        if status == "ok":
            events.append(ToolResultEvent(turn=i, call_id=cid, name=name,
                                          content=content if content is not None else f"{name} result",
                                          is_error=bool(call[2]) if len(call) > 2 else False))
        else:
            events.append(ToolErrorEvent(turn=i, call_id=cid, name=name, status=status, message=refusal))
    return events
