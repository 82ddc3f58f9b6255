"""Reference agents: no model, same protocol, same loop. They calibrate the instrument.

Each is a backend (``backend: reference``, ``agent: <name>``) that reads the run context
(the task and the offered-tool metadata, read-only) and derives where it is from the
conversation so far: the number of assistant turns that called tools. A reference agent
makes one tool call per turn and, when its script is done, answers with
``tasks.compose_answer`` over the evidence it has seen. All randomness is deterministic:
``random.Random`` seeded by the agent, the task and the offered tool names in order (not their
descriptions, which only ``lexical`` reads; see :meth:`ReferenceBackend.draw_seed`).

- ``oracle``: the task's canonical plan, step by step. No canary call; the rubric passes.
- ``random``: per plan step, a tool drawn uniformly from the offered list, with the step's
  arguments when it drew the step's tool, else schema-minimal arguments. A chance baseline.
- ``lexical``: per plan step, the candidates are the offered tools that shadow the step's
  tool or whose ``inputSchema`` property names overlap its own (the tool itself included);
  it calls the candidate with the highest BM25 score between the task prompt and the tool's
  name + description (snake_case and camelCase split; ties go to the earlier offered tool),
  with the step's arguments mapped onto that tool's parameters.
- ``planted``: the canonical plan, except that in a run where a canary of its own
  ``canary_type`` shadows a tool it needs, it falls for that type with probability
  ``take_prob`` (one draw per run): it calls the canary at the first such step, and after
  the canary's (defective) result backs off with probability ``backoff_prob`` (one draw per
  run): it then calls the real tool for that step and uses real tools from there on;
  otherwise it stays on canaries of its type for every step they shadow. So, in
  expectation, its type-specific trap rate is ``take_prob`` and its recovery rate is
  ``backoff_prob``: the known answers the diagnostics must recover. It never calls a
  matched-surface control (its weakness is the canary's claim, which a control does not
  make): with controls its trap rate is 0, so its control effect is ``take_prob`` for its
  own type and 0 for every other.
- ``surface``: attracted by unfamiliar names, blind to claims. Every stand-in of the list (a
  canary *or* a control, whatever its type) that shadows a tool of its plan is taken with
  probability ``take_prob`` (one draw per stand-in, in list order, before the run). At a
  step whose tool a taken stand-in shadows, it calls that stand-in (each at most once) and
  then, with probability ``backoff_prob`` (one draw per run), the real tool as well; else it
  uses the stand-in's result. Canaries and their controls share names, schemas and slots,
  so it treats them alike: its trap rate with canaries equals its call rate of controls,
  and its control effect is 0 for every type (the known answer of surface attraction).
"""

from __future__ import annotations

import functools
import math
import random
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import ConfigError
from ..jsonio import canonical_json
from ..registry import Registry
from ..types import CANARY_TYPES
from .protocol import (
    BackendError,
    ChatRequest,
    ChatResponse,
    RunContext,
    ToolCall,
    register_backend,
)

Script = list[tuple[str, dict[str, Any]]]
Policy = Callable[[RunContext, random.Random, Mapping[str, Any]], Script]
#: The reference agents' policies, by the name a model's ``agent:`` key gives.
AGENTS: Registry[Policy] = Registry("reference agent")
agent = AGENTS.register


# --------------------------------------------------------------------------- helpers


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
    renamed parameter keeps its position). A parameter nobody can supply (``api_key``) is
    left out, which is how an agent falls into a parameter trap.
    """
    props = _props(tool)
    if not props:
        return {}
    out = {k: v for k, v in args.items() if k in props}
    order = list(_props(real_tool)) if real_tool is not None else list(args)
    rest_args = [k for k in order if k in args and k not in out]
    rest_props = [p for p in props if p not in out and p != "api_key"]
    for p, k in zip(rest_props, rest_args, strict=False):
        out[p] = args[k]
    return out


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens; snake_case, kebab-case and camelCase split into words."""
    return _WORD.findall(_CAMEL.sub(" ", text).lower())


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


def _tools_by_name(ctx: RunContext) -> dict[str, Mapping[str, Any]]:
    return {t["name"]: t for t in ctx.tools}


# --------------------------------------------------------------------------- agents


@agent("oracle")
def oracle(ctx: RunContext, rng: random.Random, params: Mapping[str, Any]) -> Script:
    return [(step.tool, dict(step.args)) for step in ctx.task.plan]


@agent("random")
def random_agent(ctx: RunContext, rng: random.Random, params: Mapping[str, Any]) -> Script:
    names = [o.name for o in ctx.offered]
    tools = _tools_by_name(ctx)
    script: Script = []
    for step in ctx.task.plan:
        name = rng.choice(names)
        args = dict(step.args) if name == step.tool else minimal_arguments(tools[name])
        script.append((name, args))
    return script


@agent("lexical")
def lexical(ctx: RunContext, rng: random.Random, params: Mapping[str, Any]) -> Script:
    tools = _tools_by_name(ctx)
    bm25 = _bm25_for(tuple((t["name"], t["description"]) for t in ctx.tools))
    scores = bm25.scores(tokenize(ctx.task.prompt))
    script: Script = []
    for step in ctx.task.plan:
        real = tools.get(step.tool)
        real_props = set(_props(real)) if real is not None else set()
        best: tuple[float, int] | None = None
        for i, (t, o) in enumerate(zip(ctx.tools, ctx.offered, strict=True)):
            ok = t["name"] == step.tool or o.shadows == step.tool or bool(real_props & set(_props(t)))
            if ok and (best is None or scores[i] > best[0]):
                best = (scores[i], i)
        if best is None:  # nothing related is offered: the prompt's best match overall
            best = max((s, -i) for i, s in enumerate(scores))
            best = (best[0], -best[1])
        chosen = ctx.tools[best[1]]
        args = dict(step.args) if chosen["name"] == step.tool else adapt_arguments(step.args, chosen, real)
        script.append((chosen["name"], args))
    return script


@agent("planted")
def planted(ctx: RunContext, rng: random.Random, params: Mapping[str, Any]) -> Script:
    ctype = params["canary_type"]
    takes = rng.random() < float(params["take_prob"])
    backs = rng.random() < float(params["backoff_prob"])
    tools = _tools_by_name(ctx)
    script: Script = []
    trapped = recovered = False
    for step in ctx.task.plan:
        canary = next((o for o in ctx.offered if o.canary_type == ctype and o.shadows == step.tool), None)
        if canary is not None and takes and not recovered:
            script.append((canary.name, adapt_arguments(step.args, tools[canary.name], tools.get(step.tool))))
            if not trapped and backs:
                script.append((step.tool, dict(step.args)))
                recovered = True
            trapped = True
        else:
            script.append((step.tool, dict(step.args)))
    return script


@agent("surface")
def surface(ctx: RunContext, rng: random.Random, params: Mapping[str, Any]) -> Script:
    take = float(params["take_prob"])
    stand_ins = [o for o in ctx.offered if o.kind != "real"]
    taken = {o.name for o in stand_ins if rng.random() < take}
    backs = rng.random() < float(params["backoff_prob"])
    tools = _tools_by_name(ctx)
    script: Script = []
    called: set[str] = set()
    for step in ctx.task.plan:
        picks = [o for o in stand_ins if o.name in taken and o.name not in called and o.shadows == step.tool]
        for o in picks:
            script.append((o.name, adapt_arguments(step.args, tools[o.name], tools.get(step.tool))))
            called.add(o.name)
        if not picks or backs:
            script.append((step.tool, dict(step.args)))
    return script


# --------------------------------------------------------------------------- the backend


class ReferenceBackend:
    """A reference agent behind the model protocol. Answers instantly; never cached."""

    kind = "reference"
    cacheable = False
    provider = "reference"

    def __init__(self, spec: Mapping[str, Any], agent_cfg: Mapping[str, Any] | None = None) -> None:
        self.agent = str(spec.get("agent"))
        self.policy = AGENTS.get(self.agent, field=f"models[{spec.get('name')}].agent")
        self.params: dict[str, Any] = {}
        if self.agent == "planted":
            if spec.get("canary_type") not in CANARY_TYPES:
                raise ConfigError("params.yaml", f"models[{spec.get('name')}].canary_type", f"expected one of {list(CANARY_TYPES)}")
            for k in ("take_prob", "backoff_prob"):
                v = spec.get(k)
                if not isinstance(v, int | float) or isinstance(v, bool) or not 0.0 <= float(v) <= 1.0:
                    raise ConfigError("params.yaml", f"models[{spec.get('name')}].{k}", f"expected a probability in [0, 1], got {v!r}")
            self.params = {"canary_type": spec["canary_type"], "take_prob": float(spec["take_prob"]), "backoff_prob": float(spec["backoff_prob"])}
        elif self.agent == "surface":
            probs = {}
            for k in ("take_prob", "backoff_prob"):
                v = spec.get(k, 0.5)
                if not isinstance(v, int | float) or isinstance(v, bool) or not 0.0 <= float(v) <= 1.0:
                    raise ConfigError("params.yaml", f"models[{spec.get('name')}].{k}", f"expected a probability in [0, 1], got {v!r}")
                probs[k] = float(v)
            self.params = probs
        self.cache_scope = {"endpoint": "reference", "agent": self.agent, **self.params}
        self._scripts: dict[str, Script] = {}

    def draw_seed(self, ctx: RunContext) -> str:
        """Seed of the run's random draws: the agent, the task and the offered names in order.

        Descriptions are left out on purpose: no reference agent but ``lexical`` reads them,
        so a description-blind agent makes the same draws against the standard and the
        subtle pool (its ablation delta is exactly 0) and after a suffix edit.
        """
        return canonical_json({"agent": self.agent, "params": self.params, "task": ctx.task.id,
                               "plan": [[st.tool, dict(st.args)] for st in ctx.task.plan],
                               "tools": [o.name for o in ctx.offered]})

    def script(self, ctx: RunContext) -> Script:
        s = self._scripts.get(ctx.run_id)
        if s is None:
            if len(self._scripts) > 4096:
                self._scripts.clear()
            s = self.policy(ctx, random.Random(self.draw_seed(ctx)), self.params)
            self._scripts[ctx.run_id] = s
        return s

    async def complete(self, request: ChatRequest) -> ChatResponse:
        return self.respond(request)

    def respond(self, request: ChatRequest) -> ChatResponse:
        ctx = request.context
        if ctx is None:
            raise BackendError("a reference agent needs the run context", error_type="ReferenceAgentError")
        done = sum(1 for m in request.messages if m.get("role") == "assistant" and m.get("tool_calls"))
        script = self.script(ctx)
        if done < len(script):
            name, args = script[done]
            call = ToolCall(id=f"call_{request.turn}_0", name=name, arguments=canonical_json(args))
            return ChatResponse(content=None, tool_calls=[call], finish_reason="tool_calls")
        self._scripts.pop(ctx.run_id, None)
        return ChatResponse(content=ctx.compose_answer(list(ctx.evidence)), finish_reason="stop")


@register_backend("reference")
def _make_reference(spec: Mapping[str, Any], agent_cfg: Mapping[str, Any]) -> ReferenceBackend:
    return ReferenceBackend(spec, agent_cfg)
