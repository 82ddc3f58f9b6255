"""Scripted agents and judges behind the fake OpenAI-compatible server, and a fault injector.

- :class:`OracleAgent` answers agent requests like the oracle over HTTP: it calls the task's
  canonical plan one step per turn (call ids ``plan_<i>``) and answers with
  ``tasks.compose_answer`` over the results it read, so the rubric passes; it answers judge
  requests (no tools) with ``{"success": true, ...}``. ``misbehave`` makes it send, once per
  run whose prompt it names, a malformed-arguments call or a call of a tool nobody offered
  before its first plan step (model behaviour, not a transport fault).
- :class:`Faults` wraps a handler and injects transport faults in a fraction of requests (the
  kinds in turn):
  429 with and without ``Retry-After``, 500, timeouts, replies with no choices; ``always``
  names prompts whose every request fails (runs that must end as errors). Error bodies echo
  the request's ``Authorization`` header, as a careless gateway does.
"""

from __future__ import annotations

import json
import random
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from fakes.openai_server import Reply, completion, error_body

Handler = Callable[[Any, dict[str, str], int], Reply]


def user_prompt(body: Any) -> str:
    return next((m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "user"), "")


class OracleAgent:
    def __init__(self, tasks_path: str | Path, misbehave: Mapping[str, str] | None = None) -> None:
        from canarykit.tasks.tasks import load_tasks

        self.tasks = {t.prompt: t for t in load_tasks(Path(tasks_path))}
        self.misbehave = dict(misbehave or {})  # prompt -> "malformed" | "unknown"

    def __call__(self, body: Any, headers: dict[str, str], n: int) -> Reply:
        if not body.get("tools"):
            return Reply(completion(json.dumps({"success": True, "reason": "the answer states the results"})))
        msgs = body["messages"]
        task = self.tasks[user_prompt(body)]
        calls = [tc for m in msgs if m.get("role") == "assistant" for tc in m.get("tool_calls") or []]
        results = {m["tool_call_id"]: m.get("content") or "" for m in msgs if m.get("role") == "tool"}
        plan_calls = [tc for tc in calls if tc["id"].startswith("plan_")]
        step = len(plan_calls)
        how = self.misbehave.get(task.prompt)
        if how and not calls:
            if how == "malformed":
                return Reply(completion(None, [("bad_0", task.plan[0].tool, '{"oops": ')]))
            return Reply(completion(None, [("bad_0", "nonexistent_tool_xyz", "{}")]))
        if step < len(task.plan):
            s = task.plan[step]
            return Reply(completion(None, [(f"plan_{step}", s.tool, json.dumps(s.args))]))
        from canarykit.tasks.tasks import compose_answer
        from canarykit.types import ToolResult

        evidence = []
        for tc in plan_calls:
            content = results.get(tc["id"], "")
            is_error = content.startswith('{"error"')
            evidence.append((tc["function"]["name"], json.loads(tc["function"]["arguments"]), ToolResult(content, is_error)))
        return Reply(completion(compose_answer(evidence)))


FAULT_KINDS = ("429-retry-after", "429", "500", "timeout", "no-choices")


class Faults:
    """Inject transport faults into ``rate`` of the requests (seeded), plus always-failing prompts."""

    def __init__(self, inner: Handler, *, rate: float = 0.3, seed: int = 0, timeout_delay_s: float = 1.5,
                 always: Iterable[str] = (), kinds: Iterable[str] = FAULT_KINDS) -> None:
        self.inner = inner
        self.rate = rate
        self.rng = random.Random(seed)
        self.timeout_delay_s = timeout_delay_s
        self.always = set(always)
        self.kinds = tuple(kinds)
        self.healthy = False
        self._turn = 0
        self.counts: Counter[str] = Counter()
        self.lock = threading.Lock()

    def __call__(self, body: Any, headers: dict[str, str], n: int) -> Reply:
        auth = headers.get("authorization", "")
        with self.lock:
            self.counts["requests"] += 1
            if self.healthy:
                kind = None
            elif user_prompt(body) in self.always:
                kind = "always-500"
            else:
                # which requests fail is seeded; the kinds take turns, so every kind occurs
                kind = None
                if self.rng.random() < self.rate:
                    kind = self.kinds[self._turn % len(self.kinds)]
                    self._turn += 1
            if kind:
                self.counts[kind] += 1
                self.counts["faults"] += 1
        if kind is None:
            return self.inner(body, headers, n)
        echo = f"upstream refused the request with header Authorization: {auth}"
        if kind in ("always-500", "500"):
            return Reply(error_body(echo), status=500)
        if kind == "429-retry-after":
            return Reply(error_body(echo, "rate_limit_error"), status=429, headers={"Retry-After": "0.01"})
        if kind == "429":
            return Reply(error_body(echo, "rate_limit_error"), status=429)
        if kind == "timeout":
            reply = self.inner(body, headers, n)
            reply.delay_s = self.timeout_delay_s
            return reply
        return Reply({**completion("never seen"), "choices": []})

    @property
    def fault_rate(self) -> float:
        return self.counts["faults"] / max(1, self.counts["requests"])


def echo_auth(status: int) -> Handler:
    """Every request fails with ``status``, its body echoing the Authorization header."""

    def handler(body: Any, headers: dict[str, str], n: int) -> Reply:
        return Reply(error_body(f"invalid credentials: {headers.get('authorization', '')}", "authentication_error"), status=status)

    return handler
