"""The one tool-calling loop every agent runs through (section 4, "Assembler and agent loop").

The loop sends a fixed system message and the task prompt with the offered tools in OpenAI
function-calling form, executes every tool call against the environment (real tools through
:mod:`canarykit.tools`, canaries through their runtime in :mod:`canarykit.canaries`), answers
each with a ``role: tool`` message, and stops at an answer without tool calls (``completed``)
or after ``max_turns`` model turns without a final answer (``truncated``: the run was cut off
by the turn limit, which is not the same as failing the task; see docs/metrics.md, "Truncated runs").

A task of several user turns (``follow_ups``, :mod:`canarykit.tasks.tasks`) is fed one user
message at a time: once the agent answers one without tool calls (a ``final_answer`` event),
the next follow-up is appended to the conversation, and ``max_turns`` bounds the model turns
of each user turn; a user turn cut off by it ends the run (``truncated``). A tool the task
holds back (``tools_from``) is neither offered nor callable, with its look-alikes, before its
user turn. An environment that keeps state per run (``Environment.for_run``: BFCL's) gets a
fresh state for each run and says which real calls it ran on it (``tool_result.executed``).

Every call is recorded and answered, never dropped: a ``tool_call`` event followed by exactly
one ``tool_result`` (the tool ran) or ``tool_error`` (the loop refused it). Arguments are
model output, hence hostile: parsed with :func:`~canarykit.store.jsonio.safe_json_loads` under a
size cap. Not a JSON object: ``malformed_arguments``. A JSON object that fails the offered
schema: ``invalid_arguments``, still a call of that tool; a real tool answers the validation
error, a canary always answers with its own runtime (a parameter trap's "missing api_key" is
its behaviour). A name that was not offered: ``unknown_tool``.

Every tool result the model reads (a real tool's or a canary's) is capped at
:data:`~canarykit.tools.MAX_RESULT_BYTES` (64 KiB) with a visible truncation marker, and every
refusal quotes at most a few hundred characters of what the model sent; the record keeps
what the model read and at most :data:`MAX_RECORDED_ARGUMENT_CHARS` of raw arguments.
"""

from __future__ import annotations

import asyncio
import functools
import subprocess
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema

from ..errors import ToolEnvironmentError, clip
from ..store.jsonio import canonical_json, content_hash, safe_json_loads
from ..store.records import (
    BackendErrorEvent,
    Event,
    FinalAnswerEvent,
    ModelTurnEvent,
    OfferedTool,
    RunRecord,
    ToolCallEvent,
    ToolErrorEvent,
    ToolResultEvent,
    Usage,
)
from ..tools import cap_result
from ..types import CallStatus, Environment, RunStatus, ToolResult
from .calls import BackendFailure, ModelCaller
from .config import agent_defaults
from .protocol import Backend, ChatRequest, ChatResponse, RunContext
from .store import identity_hash, model_identity, run_id_for, run_identity

SYSTEM_PROMPT = (
    "You are an assistant that completes the user's task by calling the tools provided. "
    "Call tools when they help, read their results, and when you are done reply with a final "
    "answer that states the results. If a tool fails, decide what to do next."
)
LOOP_REVISION = 1
#: Part of every run's identity: changing the loop or its system message re-runs everything.
LOOP_VERSION = f"loop-{LOOP_REVISION}-{content_hash({'revision': LOOP_REVISION, 'system': SYSTEM_PROMPT}, 12)}"

#: Never parse more of one call's arguments than this (model output is hostile input).
MAX_ARGUMENT_CHARS = 100_000
#: Raw arguments kept in a record (the conversation itself keeps what the model sent).
MAX_RECORDED_ARGUMENT_CHARS = 65_536
#: Characters of a tool name kept in a record (longer names are never offered ones).
MAX_RECORDED_NAME_CHARS = 1_000

Evidence = list[tuple[str, dict[str, Any], ToolResult]]


# --------------------------------------------------------------------------- environment


@functools.lru_cache(maxsize=1)
def default_environment() -> Environment:
    from .. import canaries, tools
    from ..tasks import tasks

    return Environment(execute=tools.execute, run_canary=canaries.run_canary, compose_answer=tasks.compose_answer)


# --------------------------------------------------------------------------- offered tools


@dataclass(frozen=True)
class OfferedEntry:
    definition: Mapping[str, Any]
    offered: OfferedTool
    validator: Any
    canary: Mapping[str, Any] | None


@dataclass(frozen=True)
class ToolSet:
    """One assembled tool list, prepared once: OpenAI form, validators, canary records."""

    tool_list_hash: str
    tools: tuple[Mapping[str, Any], ...]
    offered: tuple[OfferedTool, ...]
    openai_tools: list[dict[str, Any]]
    by_name: dict[str, OfferedEntry]


@functools.lru_cache(maxsize=4096)
def _validator(schema_json: str) -> Any:
    schema = safe_json_loads(schema_json)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


_TOOLSETS: dict[tuple[str, str], ToolSet] = {}


def build_toolset(
    tools: Sequence[Mapping[str, Any]],
    offered: Sequence[OfferedTool],
    tool_list_hash: str,
    canaries_by_id: Mapping[str, Mapping[str, Any]] | None = None,
    scope: str = "",
) -> ToolSet:
    """Prepare an offered list (memoised by ``scope`` and ``tool_list_hash``)."""
    memo = (scope, tool_list_hash)
    hit = _TOOLSETS.get(memo)
    if hit is not None:
        return hit
    canaries_by_id = canaries_by_id or {}
    by_name: dict[str, OfferedEntry] = {}
    openai_tools: list[dict[str, Any]] = []
    for d, o in zip(tools, offered, strict=True):
        canary = None
        stand_in = o.canary_id if o.canary_id is not None else o.control_id
        if stand_in is not None:
            canary = canaries_by_id.get(stand_in)
            if canary is None:
                raise KeyError(f"offered {o.kind} {stand_in!r} ({o.name}) is not in the canary pool")
        by_name[d["name"]] = OfferedEntry(d, o, _validator(canonical_json(d["inputSchema"])), canary)
        openai_tools.append(
            {"type": "function", "function": {"name": d["name"], "description": d["description"], "parameters": d["inputSchema"]}}
        )
    ts = ToolSet(tool_list_hash, tuple(tools), tuple(offered), openai_tools, by_name)
    _TOOLSETS[memo] = ts
    return ts


def toolset_from_assembly(assembly: Any, canaries_by_id: Mapping[str, Mapping[str, Any]], scope: str = "") -> ToolSet:
    """The tool set of an assembled list; ``canaries_by_id`` holds the pool's canaries and
    controls by id (an offered control is completed with what the list fixed, e.g. a
    granularity control's case: :func:`canarykit.assembly.assembly.control_records`)."""
    records = canaries_by_id
    if getattr(assembly, "controls", None):
        from ..assembly.assembly import control_records

        records = {**canaries_by_id, **control_records(assembly, canaries_by_id)}
    return build_toolset(assembly.tools, assembly.offered, assembly.tool_list_hash, records, scope or assembly.pool)


# --------------------------------------------------------------------------- run spec


@dataclass
class RunSpec:
    """One (model, condition, pool, seed, task, arm) run (``arm``: the type whose twin a
    ``control`` list offers, ``""`` otherwise)."""

    model: Mapping[str, Any]
    task: Any
    condition: str
    pool: str
    seed: int
    toolset: ToolSet
    #: part of the identity (default: ``agent.max_turns``'s schema default)
    max_turns: int = field(default_factory=lambda: agent_defaults().max_turns)
    model_ident: Mapping[str, Any] | None = None
    #: the environment's identity (Environment.identity); None: the built-in tools
    environment: Any = None
    arm: str = ""
    identity: dict[str, Any] = field(init=False)
    identity_hash: str = field(init=False)
    run_id: str = field(init=False)

    def __post_init__(self) -> None:
        self.identity = run_identity(LOOP_VERSION, self.model, self.task, self.toolset.tool_list_hash, self.max_turns,
                                     self.model_ident, environment=self.environment)
        self.identity_hash = identity_hash(self.identity)
        self.run_id = run_id_for(
            self.identity_hash, str(self.model["name"]), str(self.model.get("group", "")),
            self.condition, self.pool, self.seed, str(self.task.id), self.arm,
        )


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """Package version plus ``git describe`` of the working tree when there is one."""
    from .. import __version__

    root = Path(__file__).resolve().parents[3]
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--tags"],
            cwd=root, capture_output=True, text=True, timeout=5, check=False,
        )
        desc = out.stdout.strip() if out.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        desc = ""
    return f"{__version__}+{desc}" if desc else __version__


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# --------------------------------------------------------------------------- the loop


Caller = Callable[[ChatRequest], Awaitable[tuple[ChatResponse, bool]]]


def _error_text(message: str) -> str:
    return canonical_json({"error": clip(message)})


def _parse_arguments(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    """Parsed arguments, or ``None`` and why they are malformed."""
    if raw is None or not str(raw).strip():
        return {}, None  # an empty argument string is an empty call (some providers send "")
    try:
        value = safe_json_loads(str(raw), max_chars=MAX_ARGUMENT_CHARS)
    except ValueError as exc:
        return None, f"arguments are not valid JSON: {exc}"
    if not isinstance(value, dict):
        return None, f"arguments must be a JSON object, got {type(value).__name__}"
    return value, None


def _safe_call(fn: Callable[..., ToolResult], *args: Any) -> ToolResult:
    """Run a tool or a canary; never raises, and the result is capped in bytes."""
    try:
        res = fn(*args)
    except ToolEnvironmentError:  # the tool's server failed: the run fails (run_one), not the tool
        raise
    except Exception as exc:  # tools and canaries never raise by contract; guard the loop anyway
        return ToolResult(content=_error_text(f"tool failed: {type(exc).__name__}: {exc}"), is_error=True)
    if not isinstance(res, ToolResult):
        res = ToolResult(content=str(res))
    content, truncated = cap_result(res.content)
    if truncated:
        return ToolResult(content=content, is_error=res.is_error, data=None)
    return res


def execute_call(
    toolset: ToolSet, env: Environment, turn: int, call_id: str, name: str, raw: str, events: list[Event], evidence: Evidence
) -> str:
    """Execute one tool call, append its two events, and return the text answered to the model."""
    entry = toolset.by_name.get(name)
    args, problem = _parse_arguments(raw)
    status: CallStatus = "ok"
    if entry is None:
        status, problem = "unknown_tool", f"unknown tool {clip(repr(name), 200)}: it is not among the offered tools"
    elif args is None:
        status = "malformed_arguments"
    else:
        errors = sorted(entry.validator.iter_errors(args), key=jsonschema.exceptions.relevance)[:5]
        if errors:
            parts = []
            for err in errors:
                where = "/".join(str(p) for p in err.absolute_path)
                parts.append(f"{where + ': ' if where else ''}{err.message}")
            status, problem = "invalid_arguments", f"invalid arguments for {name}: " + "; ".join(parts)
    recorded_raw = raw if raw is None or len(raw) <= MAX_RECORDED_ARGUMENT_CHARS else clip(raw, MAX_RECORDED_ARGUMENT_CHARS)
    recorded_name = name if len(name) <= MAX_RECORDED_NAME_CHARS else clip(name, MAX_RECORDED_NAME_CHARS)
    events.append(ToolCallEvent(turn=turn, call_id=call_id, name=recorded_name, arguments=args,
                        raw_arguments=recorded_raw, status=status))
    # A canary answers even arguments its schema refuses (a parameter trap's missing api_key is
    # its behaviour); a control, like the real tool it behaves as, has them refused.
    canary_runtime = entry is not None and entry.canary is not None and entry.offered.kind == "canary"
    if entry is not None and args is not None and (status == "ok" or canary_runtime):
        if entry.canary is not None:
            result = _safe_call(env.run_canary, entry.canary, args, env.execute)
        else:
            result = _safe_call(env.execute, name, args)
        events.append(ToolResultEvent(turn=turn, call_id=call_id, name=name, content=result.content, is_error=bool(result.is_error),
                                      executed=env.executed() if env.executed is not None else None))
        evidence.append((name, args, result))
        return result.content
    message = clip(problem or "call refused")
    events.append(ToolErrorEvent(turn=turn, call_id=call_id, name=recorded_name, message=message, status=status))
    return _error_text(message)


@dataclass
class _Run:
    """What one run accumulates turn by turn: the conversation, its events and its tallies."""

    messages: list[dict[str, Any]]
    events: list[Event] = field(default_factory=list)
    evidence: Evidence = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    costs: list[float | None] = field(default_factory=list)
    n_calls: int = 0
    n_cached: int = 0
    final: str | None = None
    status: RunStatus = "truncated"  # unless a final answer or a backend error ends the run first
    error: bool = False

    def fail(self, turn: int, message: str, error_type: str, status_code: int | None, attempts: int) -> bool:
        """End the run as failed (a ``backend_error`` event): it is retried, never scored."""
        self.events.append(BackendErrorEvent(turn=turn, message=message, error_type=error_type,
                                 status_code=status_code, attempts=attempts))
        self.status, self.error = "error", True
        return False


async def run_one(
    spec: RunSpec,
    backend: Backend,
    *,
    caller: Caller | None = None,
    env: Environment | None = None,
    timeout_s: float | None = None,
) -> RunRecord:
    """Run one task to a final answer, the turn limit or a backend error; return its record.
    ``timeout_s``: of each model call (default: ``agent.timeout_s``'s schema default)."""
    env = env or default_environment()
    timeout_s = agent_defaults().timeout_s if timeout_s is None else timeout_s
    call = caller or ModelCaller(backend, timeout_s=timeout_s)
    t0 = time.perf_counter()
    run_env = env.for_run(spec) if env.for_run is not None else env
    run = _Run(messages=[{"role": "system", "content": SYSTEM_PROMPT}])
    turn = 0  # the model turn, counted over the whole run
    try:
        for user_turn, text in enumerate(getattr(spec.task, "user_turns", (spec.task.prompt,))):
            if user_turn:  # the agent answered the previous user turn: the conversation goes on
                run.messages.append({"role": "assistant", "content": run.final})
            run.messages.append({"role": "user", "content": text})
            run.status = "truncated"
            ts = offered_at(spec.toolset, spec.task, user_turn)
            context = None
            if backend.kind == "reference":
                context = RunContext(spec.run_id, spec.identity_hash, spec.task, ts.offered, ts.tools, run.evidence,
                                     run_env.compose_answer)
            for _ in range(spec.max_turns):
                req = ChatRequest(messages=run.messages, tools=ts.openai_tools, turn=turn, timeout_s=timeout_s, context=context)
                turn += 1
                if not await _turn(run, req, call, ts, run_env):
                    break
            if run.status != "completed":
                break
    finally:
        if run_env is not env and run_env.close is not None:
            run_env.close()
    return _record(spec, backend, run, time.perf_counter() - t0)


_VIEWS: dict[tuple[int, frozenset[str]], tuple[ToolSet, ToolSet]] = {}


def offered_at(toolset: ToolSet, task: Any, user_turn: int) -> ToolSet:
    """The tools offered at ``user_turn`` of ``task``: the whole list, less each tool the task
    holds back to a later user turn (``tools_from``) and that tool's look-alikes (memoised:
    the runs of one list share the object, which reference agents read once)."""
    held = {name for name, start in getattr(task, "tools_from", ()) if start > user_turn}
    if not held:
        return toolset
    hidden = frozenset(o.name for o in toolset.offered if o.name in held or o.shadows in held)
    key = (id(toolset), hidden)
    hit = _VIEWS.get(key)
    if hit is not None and hit[0] is toolset:
        return hit[1]
    keep = [i for i, o in enumerate(toolset.offered) if o.name not in hidden]
    view = ToolSet(toolset.tool_list_hash, tuple(toolset.tools[i] for i in keep), tuple(toolset.offered[i] for i in keep),
                   [toolset.openai_tools[i] for i in keep], {k: v for k, v in toolset.by_name.items() if k not in hidden})
    if len(_VIEWS) > 4096:
        _VIEWS.clear()
    _VIEWS[key] = (toolset, view)
    return view


async def _turn(run: _Run, req: ChatRequest, call: Caller, ts: ToolSet, env: Environment) -> bool:
    """One model turn and the tool calls it makes; False when the run ends with it."""
    turn = req.turn
    try:
        resp, cached = await call(req)
    except BackendFailure as fail:
        e = fail.error
        return run.fail(turn, e.message, e.error_type, e.status_code, fail.attempts)
    _note_turn(run, turn, resp, cached)
    if not resp.tool_calls:
        run.final = resp.content if resp.content is not None else ""
        run.events.append(FinalAnswerEvent(turn=turn, content=run.final))
        run.status = "completed"
        return False
    ids = [c.id or f"call_{turn}_{i}" for i, c in enumerate(resp.tool_calls)]
    run.messages.append({
        "role": "assistant",
        "content": resp.content,
        "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for cid, c in zip(ids, resp.tool_calls, strict=True)
        ],
    })
    try:
        for cid, c in zip(ids, resp.tool_calls, strict=True):
            if env.blocking:
                answer = await asyncio.to_thread(execute_call, ts, env, turn, cid, c.name, c.arguments, run.events, run.evidence)
            else:
                answer = execute_call(ts, env, turn, cid, c.name, c.arguments, run.events, run.evidence)
            run.messages.append({"role": "tool", "tool_call_id": cid, "content": answer})
    except ToolEnvironmentError as exc:
        # Not the agent's doing and not the tool's answer: the run fails and is retried.
        return run.fail(turn, clip(str(exc)), "ToolServerError", None, 1)
    return True


def _note_turn(run: _Run, turn: int, resp: ChatResponse, cached: bool) -> None:
    """Count a model answer and record its ``model_turn`` event."""
    run.n_calls += 1
    run.n_cached += int(cached)
    run.usage.add(resp.usage)
    run.costs.append(resp.cost_usd)
    run.events.append(ModelTurnEvent(
        turn=turn, content=resp.content, n_tool_calls=len(resp.tool_calls),
        finish_reason=resp.finish_reason, usage=Usage(resp.usage.prompt_tokens, resp.usage.completion_tokens),
        latency_s=round(resp.latency_s, 6), cached=cached, cost_usd=resp.cost_usd,
    ))


def _record(spec: RunSpec, backend: Backend, run: _Run, elapsed_s: float) -> RunRecord:
    """The run's record: what it was (spec), what happened (run) and what it cost."""
    known = [c for c in run.costs if c is not None]
    if backend.kind == "reference":
        cost: float | None = 0.0
    else:
        cost = round(sum(known), 10) if known else None
    ts = spec.toolset
    return RunRecord(
        run_id=spec.run_id,
        identity=spec.identity,
        model=str(spec.model["name"]),
        group=str(spec.model.get("group", "")),
        backend=str(spec.model.get("backend", backend.kind)),
        condition=spec.condition,
        pool=spec.pool,
        seed=int(spec.seed),
        task_id=str(spec.task.id),
        difficulty=str(spec.task.difficulty),
        offered=[replace(o) for o in ts.offered],
        correct_tools=list(spec.task.correct_tools),
        events=run.events,
        final_answer=run.final,
        status=run.status,
        error=run.error,
        arm=spec.arm,
        usage=run.usage,
        cost_usd=cost,
        latency_s=round(elapsed_s, 6),
        n_model_calls=run.n_calls,
        n_cached_calls=run.n_cached,
        code_version=code_version(),
        created_at=_now(),
    )


__all__ = [
    "LOOP_VERSION", "SYSTEM_PROMPT", "Environment", "RunSpec", "ToolSet", "build_toolset",
    "code_version", "default_environment", "execute_call", "model_identity", "offered_at", "run_one", "toolset_from_assembly",
]
