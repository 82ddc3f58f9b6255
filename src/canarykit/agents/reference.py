"""Reference agents: no model, same protocol, same loop. They calibrate the instrument.

Each is a backend (``backend: reference``, ``agent: <name>``) that decides from exactly what
a model receives (:class:`View`): the task (its prompt, and its plan, which tells every agent
which real tool each step needs: a real model knows what it wants to do), the offered tools
as the model gets them (names, descriptions, input schemas) and the conversation so far (its
calls and the results it read). Never from canary metadata: which offered tool is a canary,
of which type, shadowing what, is the detector's knowledge, not an agent's. What an agent
reads in a tool's text (its look-alikes, the defects their text shows, a defective result)
is :mod:`canarykit.agents.reference_text` (look-alikes) and
:mod:`canarykit.agents.reference_cues` (defects, results).

An agent walks the plan; at the first step that needs a real tool ``f`` it picks the tool to
call among ``f`` and ``f``'s look-alikes in the list, by its policy (below), with the step's
arguments mapped onto the chosen tool's parameters (a credential no one can supply is left
out), and keeps using what served it for ``f``'s later steps. After a look-alike's result
that reads as defective (an error, a 401, a missing key, a cached / approximate / snapshot
marker, an answer about another case) it avoids that tool for the rest of the run (a later
step picks again), and backs off to ``f`` for the same step with probability
``backoff_prob``. So a planted agent's trap rate on its type is ``take_prob`` where the
canary is the only look-alike it accepts. When the plan is done it answers with the environment's composer over the
evidence it has seen. One call per turn; the whole walk is recomputed from the conversation
at every turn, so the same policy behind an HTTP endpoint (tests/fakes/reference_server.py)
makes exactly the same calls. A task of several user turns is walked up to the user turn the
conversation is in (each plan step says which user message asks for it): the agent answers
when that turn's steps are done and takes up the next ones when the next message comes.

Policies (params ``take_prob``, ``backoff_prob``; for ``planted`` the type it is blind to,
params.yaml's key read by :mod:`canarykit.agents.refparams`):

- ``oracle``: the plan's tool at every step. No look-alike call; the rubric passes.
- ``random``: a tool drawn uniformly from the whole list at every step (the step's arguments
  when it drew the step's tool, else schema-minimal ones). A chance baseline.
- ``lexical``: among ``f``, its look-alikes and the tools sharing a parameter with ``f``, the
  best BM25 match between the task prompt and the tool's name + description.
- ``planted`` (blind to type T): blind to T's property, sensitive to the other five: with
  probability ``take_prob`` it takes a look-alike whose text shows no defect but T's (one of
  them, uniformly), else ``f``. Known answers: ``blind`` on T, ``sensitive`` on the others.
- ``surface``: with probability ``take_prob`` any look-alike (uniformly): ``blind`` everywhere.
- ``claims``: with probability ``take_prob`` a look-alike showing an inflated capability claim,
  else ``f``: ``lured`` on capability_mirage, ``not drawn`` elsewhere.
- ``careful``: with probability ``take_prob`` a look-alike whose text shows no defect, else
  ``f``: ``sensitive`` on every type.
- ``uniform``: uniformly among ``f`` and its ``k`` look-alikes: a first-pick rate of
  ``k / (k + 1)`` whatever their texts.

**Independent draws for a list and its twin list.** A step's draws (take, which one, back
off; always all of them, in that order) are seeded by the agent, its params, the task, the
plan step, the real tool's name and **the offered list as the model receives it** (every
tool's name, description and schema, in order: :func:`list_digest`), so two lists that differ
anywhere (a canary and its twin in one slot, the standard and subtle wordings, another seed's
order) make independent draws, as a sampled model does on two prompts. A declared list and
its control arm therefore meet the sampling noise a model meets: an agent blind to a
property takes the canary and the twin at the same rate, not in the same runs, and its known
answer is recovered (or not) by the same tests a model's diagnosis rests on. The draws never
read canary metadata (which tool is a canary, of which type): only the text of the list. The
same list (every turn of a run, a run repeated, the HTTP fake) makes the same draws.
"""

from __future__ import annotations

import functools
import math
import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..registry import Registry
from ..store.jsonio import canonical_json, content_hash, safe_json_loads
from .protocol import BackendError, ChatRequest, ChatResponse, ToolCall, register_backend
from .reference_cues import credential_arguments, defects, result_defective
from .reference_text import ToolText, lookalike_indices, tokenize
from .refparams import agent_params

# --------------------------------------------------------------------------- what an agent sees


@dataclass(frozen=True)
class Exchange:
    """One call the agent made and the text it read back."""

    name: str
    arguments: dict[str, Any] | None
    result: str


@dataclass(frozen=True)
class View:
    """Everything a reference agent decides from: the task (prompt and plan), the offered
    tools as the model receives them (MCP or OpenAI form), the conversation's calls and the
    user turn it is in (the user messages it has read, less one)."""

    task: Any
    tools: tuple[Mapping[str, Any], ...]
    history: tuple[Exchange, ...]
    user_turn: int = 0


def user_turn_of(messages: Sequence[Mapping[str, Any]]) -> int:
    """The user turn a conversation is in: its user messages, less one (a task of several
    user turns gets them one by one)."""
    return max(0, sum(1 for m in messages if m.get("role") == "user") - 1)


def mcp_form(tool: Mapping[str, Any]) -> dict[str, Any]:
    """An offered tool in MCP form (``name``, ``description``, ``inputSchema``), from either
    form (OpenAI's ``{"type": "function", "function": {..., "parameters"}}``)."""
    inner = tool.get("function")
    fn: Mapping[str, Any] = inner if isinstance(inner, Mapping) else tool
    schema = fn.get("inputSchema", fn.get("parameters"))
    return {"name": str(fn.get("name") or ""), "description": str(fn.get("description") or ""),
            "inputSchema": dict(schema) if isinstance(schema, Mapping) else {"type": "object", "properties": {}}}


def history_of(messages: Sequence[Mapping[str, Any]]) -> tuple[Exchange, ...]:
    """The calls of a conversation (OpenAI chat messages) with the result each got, in order."""
    results = {m.get("tool_call_id"): m.get("content") for m in messages if m.get("role") == "tool"}
    out = []
    for m in messages:
        if m.get("role") != "assistant":
            continue
        for call in m.get("tool_calls") or []:
            fn = call.get("function") or {}
            try:
                args = safe_json_loads(str(fn.get("arguments") or "{}"))
            except ValueError:
                args = None
            content = results.get(call.get("id"))
            out.append(Exchange(str(fn.get("name")), args if isinstance(args, dict) else None,
                                content if isinstance(content, str) else ""))
    return tuple(out)


@dataclass(frozen=True)
class StepView:
    """One plan step as an agent weighs it: the real tool it needs, that tool's look-alikes in
    the list (list order) with the defects each one's text shows, and the tools it has seen
    fail earlier in the run."""

    prompt: str
    tool: str
    args: Mapping[str, Any]
    real: Mapping[str, Any] | None
    tools: tuple[Mapping[str, Any], ...]
    lookalikes: tuple[Mapping[str, Any], ...]
    defects: tuple[frozenset[str], ...]
    avoid: frozenset[str]


#: A policy: the name of the tool a step's first call goes to, from the step's view and its
#: random draws (seeded per list, see the module doc).
Policy = Callable[[StepView, random.Random, Mapping[str, Any]], str]
#: The reference agents' policies, by the name a model's ``agent:`` key gives.
AGENTS: Registry[Policy] = Registry("reference agent")
agent = AGENTS.register


def list_digest(tools: Sequence[Mapping[str, Any]]) -> str:
    """Digest of an offered list as the model receives it (MCP form: names, descriptions,
    schemas, in order): two lists that differ anywhere have different digests."""
    return content_hash([mcp_form(t) for t in tools], length=32)


def draw_seed(agent_name: str, params: Mapping[str, Any], task_id: str, number: int, tool: str,
              args: Mapping[str, Any], offered: str) -> str:
    """Seed of one plan step's draws: the agent, its params, the task, the plan step, the
    real tool's name and the offered list's digest (:func:`list_digest`): a list and its twin
    list draw independently (module docstring)."""
    return canonical_json({"agent": agent_name, "params": dict(params), "task": task_id, "step": number,
                           "tool": tool, "args": dict(args), "list": offered})


# --------------------------------------------------------------------------- arguments


def _props(tool: Mapping[str, Any]) -> dict[str, Any]:
    schema = tool.get("inputSchema") or {}
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    return dict(props) if isinstance(props, Mapping) else {}


def minimal_value(spec: Any) -> Any:
    """The smallest value a property schema accepts, as far as a simple reading tells."""
    if not isinstance(spec, Mapping):
        return ""
    if "default" in spec:
        return spec["default"]
    if spec.get("enum"):
        return spec["enum"][0]
    if "const" in spec:
        return spec["const"]
    typ = spec.get("type")
    if isinstance(typ, list):
        typ = next((t for t in typ if t != "null"), "string")
    if typ in ("integer", "number"):
        lo = spec.get("minimum", spec.get("exclusiveMinimum", 0))
        return int(lo) + (1 if "exclusiveMinimum" in spec else 0) if typ == "integer" else float(lo)
    if typ == "boolean":
        return False
    if typ == "array":
        return [minimal_value(spec.get("items"))] * int(spec.get("minItems", 0))
    if typ == "object":
        return minimal_arguments({"inputSchema": spec})
    return "x" * max(1, int(spec.get("minLength", 1)))


def minimal_arguments(tool: Mapping[str, Any]) -> dict[str, Any]:
    """Schema-minimal arguments: every required property at its minimal value."""
    schema = tool.get("inputSchema") or {}
    props = _props(tool)
    required = schema.get("required") or [] if isinstance(schema, Mapping) else []
    return {name: minimal_value(props.get(name)) for name in required}


def adapt_arguments(args: Mapping[str, Any], tool: Mapping[str, Any], real_tool: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The step's arguments mapped onto ``tool``'s parameters.

    Same-name parameters keep their value; the remaining ones are paired in order (a
    renamed parameter keeps its position). A credential nobody can supply (a required
    ``api_key``, ``access_token``, ...) is left out, which is how an agent falls into a
    parameter trap.
    """
    props = _props(tool)
    if not props:
        return {}
    secret = set(credential_arguments(ToolText.of(tool))) | {"api_key"}
    out = {k: v for k, v in args.items() if k in props}
    order = list(_props(real_tool)) if real_tool is not None else list(args)
    rest_args = [k for k in order if k in args and k not in out]
    rest_props = [p for p in props if p not in out and p not in secret]
    for p, k in zip(rest_props, rest_args, strict=False):
        out[p] = args[k]
    return out


class BM25:
    """Okapi BM25 over a small corpus (k1=1.5, b=0.75, non-negative idf)."""

    def __init__(self, docs: Sequence[Sequence[str]], k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.tf = [Counter(d) for d in docs]
        self.len = [len(d) for d in docs]
        self.avg = (sum(self.len) / len(docs)) if docs else 0.0
        df: Counter[str] = Counter()
        for d in docs:
            df.update(set(d))
        n = len(docs)
        self.idf = {t: math.log(1.0 + (n - c + 0.5) / (c + 0.5)) for t, c in df.items()}

    def scores(self, query: Sequence[str]) -> list[float]:
        out = []
        for tf, dl in zip(self.tf, self.len, strict=True):
            s = 0.0
            norm = self.k1 * (1.0 - self.b + self.b * dl / self.avg) if self.avg else self.k1
            for t in query:
                f = tf.get(t)
                if f:
                    s += self.idf[t] * f * (self.k1 + 1.0) / (f + norm)
            out.append(s)
        return out


@functools.lru_cache(maxsize=2048)
def _bm25_for(docs_key: tuple[tuple[str, str], ...]) -> BM25:
    return BM25([tokenize(name) + tokenize(desc) for name, desc in docs_key])


# --------------------------------------------------------------------------- policies


def _take(step: StepView, rng: random.Random, params: Mapping[str, Any], ok: Callable[[frozenset[str]], bool]) -> str:
    """With probability ``take_prob`` one of the look-alikes ``ok`` accepts (uniformly, among
    those not seen failing), else the real tool. Always two draws."""
    takes = rng.random() < float(params["take_prob"])
    u = rng.random()
    eligible = [t["name"] for t, d in zip(step.lookalikes, step.defects, strict=True) if ok(d) and t["name"] not in step.avoid]
    return eligible[int(u * len(eligible))] if takes and eligible else step.tool


@agent("oracle")
def oracle(step: StepView, rng: random.Random, params: Mapping[str, Any]) -> str:
    return step.tool


@agent("random")
def random_agent(step: StepView, rng: random.Random, params: Mapping[str, Any]) -> str:
    names = [str(t["name"]) for t in step.tools]
    return names[int(rng.random() * len(names))] if names else step.tool


@agent("lexical")
def lexical(step: StepView, rng: random.Random, params: Mapping[str, Any]) -> str:
    bm25 = _bm25_for(tuple((str(t["name"]), str(t.get("description") or "")) for t in step.tools))
    scores = bm25.scores(tokenize(step.prompt))
    related = {t["name"] for t in step.lookalikes} | {step.tool}
    real_props = set(_props(step.real)) if step.real is not None else set()
    best: tuple[float, int] | None = None
    for i, t in enumerate(step.tools):
        if (t["name"] in related or bool(real_props & set(_props(t)))) and (best is None or scores[i] > best[0]):
            best = (scores[i], i)
    if best is None:  # nothing related is offered: the prompt's best match overall
        top = max((s, -i) for i, s in enumerate(scores)) if scores else None
        return step.tool if top is None else str(step.tools[-top[1]]["name"])
    return str(step.tools[best[1]]["name"])


@agent("planted")
def planted(step: StepView, rng: random.Random, params: Mapping[str, Any]) -> str:
    blind = str(params["blind_to"])
    return _take(step, rng, params, lambda d: d <= {blind})


@agent("surface")
def surface(step: StepView, rng: random.Random, params: Mapping[str, Any]) -> str:
    return _take(step, rng, params, lambda d: True)


@agent("claims")
def claims(step: StepView, rng: random.Random, params: Mapping[str, Any]) -> str:
    return _take(step, rng, params, lambda d: "capability_mirage" in d)


@agent("careful")
def careful(step: StepView, rng: random.Random, params: Mapping[str, Any]) -> str:
    return _take(step, rng, params, lambda d: not d)


@agent("uniform")
def uniform(step: StepView, rng: random.Random, params: Mapping[str, Any]) -> str:
    family = [step.tool] + [str(t["name"]) for t in step.lookalikes if t["name"] not in step.avoid]
    order = {str(t["name"]): i for i, t in enumerate(step.tools)}
    family.sort(key=lambda n: order.get(n, -1))
    return family[int(rng.random() * len(family))]


# --------------------------------------------------------------------------- the walk


class Catalog:
    """One offered list read once: its tools in MCP form, their text, and per real tool its
    look-alikes with the defects each shows (memoised: a run asks at every turn)."""

    def __init__(self, tools: Sequence[Mapping[str, Any]]) -> None:
        self.tools = tuple(mcp_form(t) for t in tools)
        self.texts = tuple(ToolText.of(t) for t in self.tools)
        self.by_name = {str(t["name"]): t for t in self.tools}
        self.digest = list_digest(self.tools)
        self._family: dict[str, tuple[tuple[int, ...], tuple[frozenset[str], ...]]] = {}

    def family(self, real_name: str) -> tuple[tuple[int, ...], tuple[frozenset[str], ...]]:
        """Positions of ``real_name``'s look-alikes and the defects each shows (relative to it)."""
        hit = self._family.get(real_name)
        if hit is None:
            real = self.by_name.get(real_name)
            if real is None:
                hit = ((), ())
            else:
                text = ToolText.of(real)
                idx = lookalike_indices(text, self.texts)
                hit = (idx, tuple(defects(self.texts[i], text) for i in idx))
            self._family[real_name] = hit
        return hit


_CATALOGS: dict[int, tuple[Sequence[Mapping[str, Any]], Catalog]] = {}


def catalog(tools: Sequence[Mapping[str, Any]]) -> Catalog:
    """The :class:`Catalog` of an offered list, memoised by the list object (a run's turns and
    the runs of one assembled list share it)."""
    hit = _CATALOGS.get(id(tools))
    if hit is not None and hit[0] is tools:
        return hit[1]
    if len(_CATALOGS) > 4096:
        _CATALOGS.clear()
    made = Catalog(tools)
    _CATALOGS[id(tools)] = (tools, made)
    return made


def _arguments(agent_name: str, name: str, step: Any, by_name: Mapping[str, Mapping[str, Any]],
               real: Mapping[str, Any] | None) -> dict[str, Any]:
    if name == step.tool:
        return dict(step.args)
    tool = by_name.get(name)
    if tool is None:
        return dict(step.args)
    return minimal_arguments(tool) if agent_name == "random" else adapt_arguments(step.args, tool, real)


def next_call(agent_name: str, params: Mapping[str, Any], view: View) -> tuple[str, dict[str, Any]] | None:
    """The agent's next call (tool name, arguments), or ``None`` when it is ready to answer.

    Replays the plan against the conversation so far (see the module docstring): each step's
    first pick, then, after a look-alike's result, the back-off decision on that result."""
    policy = AGENTS.get(agent_name)
    cat = catalog(view.tools)
    tools, by_name = cat.tools, cat.by_name
    history, pos = view.history, 0
    avoid: set[str] = set()
    kept: dict[str, str] = {}  # real tool -> the member of its family whose result was taken
    prompts = tuple(getattr(view.task, "user_turns", (view.task.prompt,)))
    for number, step in enumerate(view.task.plan):
        turn = int(getattr(step, "turn", 0))
        if turn > view.user_turn:  # a later user message asks for it: this turn's steps are done
            break
        real = by_name.get(step.tool)
        idx, shown = cat.family(step.tool)
        rng = random.Random(draw_seed(agent_name, params, str(view.task.id), number, step.tool, step.args, cat.digest))
        sv = StepView(str(prompts[turn]), step.tool, step.args, real, tools, tuple(tools[i] for i in idx),
                      shown, frozenset(avoid))
        name = policy(sv, rng, params)
        family = {step.tool} | {str(tools[i]["name"]) for i in idx}
        if kept.get(step.tool) in family - avoid:
            name = kept[step.tool]  # the tool it already used for this real tool's job
        args = _arguments(agent_name, name, step, by_name, real)
        if pos == len(history):
            return name, args
        seen = history[pos]
        pos += 1
        if name == step.tool:
            kept[step.tool] = name
            continue
        backs = rng.random() < float(params.get("backoff_prob", 0.0))
        if not result_defective(seen.result, step.args, args):
            if name in family:
                kept[step.tool] = name
            continue
        avoid.add(name)
        kept.pop(step.tool, None)
        if backs:
            kept[step.tool] = step.tool
            if pos == len(history):
                return step.tool, dict(step.args)
            pos += 1
    return None


# --------------------------------------------------------------------------- the backend


class ReferenceBackend:
    """A reference agent behind the model protocol. Answers instantly; never cached."""

    kind = "reference"
    cacheable = False
    provider = "reference"

    def __init__(self, spec: Mapping[str, Any], agent_cfg: Mapping[str, Any] | None = None) -> None:
        self.agent = str(spec.get("agent"))
        AGENTS.get(self.agent, field=f"models[{spec.get('name')}].agent")
        self.params = agent_params(spec)
        self.cache_scope = {"endpoint": "reference", "agent": self.agent, **self.params}

    async def complete(self, request: ChatRequest) -> ChatResponse:
        return self.respond(request)

    def respond(self, request: ChatRequest) -> ChatResponse:
        ctx = request.context
        if ctx is None:
            raise BackendError("a reference agent needs the run context", error_type="ReferenceAgentError")
        tools = ctx.tools if isinstance(ctx.tools, tuple) else tuple(ctx.tools)  # the same object every turn
        view = View(ctx.task, tools, history_of(request.messages), user_turn_of(request.messages))
        call = next_call(self.agent, self.params, view)
        if call is not None:
            name, args = call
            return ChatResponse(content=None, tool_calls=[ToolCall(id=f"call_{request.turn}_0", name=name, arguments=canonical_json(args))],
                                finish_reason="tool_calls")
        return ChatResponse(content=ctx.compose_answer(list(ctx.evidence)), finish_reason="stop")


@register_backend("reference")
def _make_reference(spec: Mapping[str, Any], agent_cfg: Mapping[str, Any]) -> ReferenceBackend:
    return ReferenceBackend(spec, agent_cfg)
