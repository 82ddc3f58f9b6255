"""The reference agents' policies behind an OpenAI-compatible endpoint on 127.0.0.1.

``ReferenceAgentServer(suite, models)`` serves ``POST /v1/chat/completions`` for every model
id in ``models`` (id -> a params.yaml-style spec: ``agent`` and its params). It sees only the
chat request, as a hosted model would: the messages and the tools. It finds the task by its
prompt (the first user message) in the task file ``suite``, the real tool each step needs in
the task's plan, and answers tool calls turn by turn with
:func:`canarykit.agents.reference.next_call`, the reference backend's own walk. When the
walk is done it answers with :func:`canarykit.tasks.tasks.compose_answer` over the results it read
(an error result is one whose text is a JSON object with an ``error`` field).

So an agent reached through the LiteLLM backend (``backend: litellm``, ``model:
openai/<id>``, ``api_base: server.url``) makes exactly the calls the same agent makes through
``backend: reference`` on the same lists: the way agents nobody has seen will be checked.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from canarykit.agents.reference import AGENTS, View, history_of, next_call
from canarykit.agents.refparams import agent_params
from canarykit.store.jsonio import canonical_json
from canarykit.tasks.tasks import compose_answer, load_tasks
from canarykit.types import ToolResult
from fakes.openai_server import FakeOpenAIServer, Reply, completion, error_body


class ReferenceAgentServer(FakeOpenAIServer):
    def __init__(self, suite: Path | str, models: Mapping[str, Mapping[str, Any]]) -> None:
        tasks = load_tasks(suite)
        self.tasks = {t.prompt: t for t in tasks}
        if len(self.tasks) != len(tasks):
            raise ValueError(f"{suite}: two tasks share a prompt; the server finds a task by its prompt")
        self.agents: dict[str, tuple[str, dict[str, Any]]] = {}
        for model_id, spec in models.items():
            AGENTS.get(str(spec["agent"]))
            self.agents[model_id] = (str(spec["agent"]), agent_params({"name": model_id, **spec}))
        super().__init__(self.answer)

    def answer(self, body: Any, headers: dict[str, str], n: int) -> Reply:
        served = self.agents.get(str(body.get("model")))
        if served is None:
            return Reply(error_body(f"model {body.get('model')!r} is not served here", "invalid_request_error"), status=404)
        messages = body.get("messages") or []
        prompt = next((m.get("content") for m in messages if m.get("role") == "user"), None)
        task = self.tasks.get(prompt) if isinstance(prompt, str) else None
        if task is None:
            return Reply(error_body("no task of the suite has this prompt", "invalid_request_error"), status=400)
        history = history_of(messages)
        call = next_call(served[0], served[1], View(task, tuple(body.get("tools") or ()), history))
        if call is not None:
            turn = sum(1 for m in messages if m.get("role") == "assistant")
            return Reply(completion(None, [(f"call_{turn}_0", call[0], canonical_json(call[1]))]))
        evidence = [(e.name, e.arguments or {}, ToolResult(e.result, is_error=_is_error(e.result))) for e in history]
        return Reply(completion(compose_answer(evidence)))


def _is_error(content: str) -> bool:
    try:
        value = json.loads(content)
    except ValueError:
        return False
    return isinstance(value, dict) and "error" in value
