"""The conversation a run's model saw, rebuilt from its record and its task.

The loop (:mod:`canarykit.agents.loop`) sends its fixed system message and the task's first
user message; every model turn becomes an assistant message with the tool calls it made
(each as received: parsed arguments when they parsed, the raw text otherwise), every call
is answered by one tool message (the tool's result as the model read it, or the loop's
refusal ``{"error": ...}``), and an answer without tool calls ends a user turn: a task of
several user turns then gets its next user message. A run cut off by a backend error ends
where the error came.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..store.jsonio import canonical_json
from ..store.records import RunRecord

__all__ = ["conversation", "user_messages"]


def user_messages(task: Any) -> tuple[str, ...]:
    """The task's user messages in order (a task of one turn: its prompt)."""
    if task is None:
        return ()
    return tuple(getattr(task, "user_turns", (task.prompt,)))


def conversation(record: RunRecord, task: Any) -> list[dict[str, Any]]:
    """The run's messages, in order (module docstring): ``{"role": "system" | "user" |
    "assistant" | "tool", "content", ...}``; an assistant message carries ``tool_calls``
    (``id``, ``name``, ``arguments`` or None, ``raw``, ``status``) and its model ``turn``; a
    tool message its ``tool_call_id``, ``name``, ``is_error`` and, for a call the loop
    refused, ``refused`` (the call status)."""
    from ..agents.loop import SYSTEM_PROMPT

    users: Sequence[str] = user_messages(task)
    out: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
    if users:
        out.append({"role": "user", "content": users[0]})
    answered = 0
    current: dict[str, Any] | None = None
    for e in record.events:
        if e.kind == "model_turn":
            current = {"role": "assistant", "content": e.content or "", "tool_calls": [], "turn": e.turn}
            out.append(current)
        elif e.kind == "tool_call" and current is not None:
            current["tool_calls"].append({"id": e.call_id or f"call_{e.turn}_{len(current['tool_calls'])}", "name": e.name or "",
                                          "arguments": e.arguments, "raw": e.raw_arguments, "status": e.status})
        elif e.kind == "tool_result":
            out.append({"role": "tool", "tool_call_id": e.call_id, "name": e.name, "content": e.content or "",
                        "is_error": bool(e.is_error)})
        elif e.kind == "tool_error":
            out.append({"role": "tool", "tool_call_id": e.call_id, "name": e.name, "is_error": True,
                        "content": canonical_json({"error": e.message or ""}), "refused": e.status})
        elif e.kind == "final_answer":
            answered += 1
            if answered < len(users):
                out.append({"role": "user", "content": users[answered]})
    return out
