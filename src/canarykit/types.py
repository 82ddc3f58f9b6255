"""Small typed records shared by every stage: tool definitions, tool results, the environment
an agent's tool calls go to, canary types, and the vocabularies (a Literal each, its tuple
derived from it) of call, run and verdict statuses."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, get_args

#: The six canary type ids, in the paper's order (section 3). Other tools rely on these strings.
CanaryType = Literal[
    "semantic_decoy",
    "parameter_trap",
    "capability_mirage",
    "prerequisite_blindness",
    "temporal_decoy",
    "granularity_trap",
]
CANARY_TYPES: Final[tuple[str, ...]] = get_args(CanaryType)

#: How a tool call was received. ``malformed_arguments``: not a JSON object (unparseable);
#: ``invalid_arguments``: a JSON object that fails the offered tool's schema (still a call of
#: that tool: a parameter-trap canary called without its api_key is a sprung trap);
#: ``unknown_tool``: a name that was not offered.
CallStatus = Literal["ok", "invalid_arguments", "malformed_arguments", "unknown_tool"]
CALL_STATUSES: Final[tuple[str, ...]] = get_args(CallStatus)
#: What the detector makes of a call: of a real tool, a canary, a matched-surface control, or
#: of no offered tool (unknown name, unparseable arguments).
CallClass = Literal["real", "canary", "control", "unknown"]
CALL_CLASSES: Final[tuple[str, ...]] = get_args(CallClass)

#: How a run ended: a final answer (``completed``), cut off by ``agent.max_turns`` without a
#: final answer (``truncated``), or a backend error that outlived the retries (``error``).
RunStatus = Literal["completed", "truncated", "error"]
RUN_STATUSES: Final[tuple[str, ...]] = get_args(RunStatus)
#: Earlier versions called a truncated run ``turn_limit``: such records read as ``truncated``.
LEGACY_STATUSES: Final[dict[str, str]] = {"turn_limit": "truncated"}

#: How a judge's verdict came about: parsed, unparseable after retries, or a failed judge call.
VerdictStatus = Literal["ok", "unparseable", "error"]
VERDICT_STATUSES: Final[tuple[str, ...]] = get_args(VerdictStatus)

#: Canary types whose give-away suffix comes from a pool in params.yaml (Appendix C).
PHRASE_TYPES: Final[tuple[str, ...]] = ("semantic_decoy", "capability_mirage", "temporal_decoy")

#: The study's conditions (docs/getting-started.md, "What a study measures"): the paper's three, plus two that separate a
#: canary's weakness from its lure (issue 11): ``control`` (the ``declared`` lists with every
#: canary replaced by its matched-surface control, same slots) and ``mirrored`` (the
#: ``declared`` lists with each canary and the real tool it shadows trading places).
#: ``dose`` (issue 21): per kind (a canary type, a type's twins ``twin:<type>``, or
#: ``distractor``) and k, the real tools and k look-alikes of the task's first needed tool
#: (:mod:`canarykit.assembly.dose`).
CONDITIONS: Final[tuple[str, ...]] = ("baseline", "declared", "full", "control", "mirrored", "dose")
#: The paper's canary-density conditions.
PAPER_CONDITIONS: Final[tuple[str, ...]] = ("baseline", "declared", "full")
#: The dose condition (issue 21, 27): the untyped look-alike kind (neutral near-duplicates of
#: the real tool), the twin kinds (k twins of a type: its crowding baseline), the kinds of a
#: dose curve and the default look-alike counts (``study.dose``).
DISTRACTOR: Final = "distractor"
TWIN_PREFIX: Final = "twin:"
TWIN_KINDS: Final[tuple[str, ...]] = tuple(f"{TWIN_PREFIX}{t}" for t in CANARY_TYPES)
DOSE_KINDS: Final[tuple[str, ...]] = (*CANARY_TYPES, *TWIN_KINDS, DISTRACTOR)
DOSE_LEVELS: Final[tuple[int, ...]] = (0, 1, 2, 4, 8)
POOLS: Final[tuple[str, ...]] = ("standard", "subtle")
DIFFICULTIES: Final[tuple[str, ...]] = ("easy", "medium", "hard")


@dataclass(frozen=True)
class ToolDef:
    """An MCP tool definition: what an agent sees of a tool.

    ``title``, ``annotations`` (MCP ``ToolAnnotations``: ``readOnlyHint``,
    ``destructiveHint``, ``idempotentHint``, ``openWorldHint``, ``title``) and
    ``output_schema`` are optional MCP metadata; ``server`` names the server that offers
    the tool (not part of an MCP definition, but of a tool list that spans servers).
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    server: str | None = None
    title: str | None = None
    annotations: dict[str, Any] | None = None
    output_schema: dict[str, Any] | None = None

    def to_mcp(self) -> dict[str, Any]:
        """The MCP ``Tool`` object (camelCase keys; optional metadata only when set)."""
        out: dict[str, Any] = {"name": self.name}
        if self.title is not None:
            out["title"] = self.title
        out["description"] = self.description
        out["inputSchema"] = self.input_schema
        if self.output_schema is not None:
            out["outputSchema"] = self.output_schema
        if self.annotations is not None:
            out["annotations"] = self.annotations
        return out

    def to_tool_list_entry(self) -> dict[str, Any]:
        """One entry of a tool list file: the MCP definition plus ``server`` when known."""
        out = self.to_mcp()
        if self.server is not None:
            out["server"] = self.server
        return out

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI function-calling form sent to every backend."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.input_schema,
            },
        }


@dataclass(frozen=True)
class ToolResult:
    """What a tool call returns.

    ``content`` is the text the agent sees (JSON for structured results); ``data`` is the
    structured payload when there is one; ``is_error`` marks a tool error (bad arguments,
    authentication failure, ...), which is answered to the agent, never raised.
    """

    content: str
    is_error: bool = False
    data: Any = field(default=None, compare=False)


@dataclass(frozen=True)
class Environment:
    """Where tool calls go: real tools, canary runtimes, and the scripted answer composer.

    ``identity`` is the environment's part of every run identity (``None``: the built-in
    tools' code version, :func:`canarykit.agents.store.environment_version`). ``blocking`` environments
    (MCP servers, :mod:`canarykit.mcp.environments`) wait on I/O in ``execute``: their calls run
    in a worker thread so the event loop keeps serving other runs. ``close`` ends what the
    environment started; ``check`` starts it ahead of the first call (failing early).
    ``for_run(spec)`` gives the environment of one run (its own state; closed after it).
    """

    execute: Callable[[str, Any], ToolResult]
    run_canary: Callable[[Mapping[str, Any], Any, Callable[[str, Any], ToolResult]], ToolResult]
    compose_answer: Callable[[Sequence[tuple[str, dict[str, Any], ToolResult]]], str]
    identity: Any = None
    blocking: bool = False
    close: Callable[[], None] | None = None
    check: Callable[[], None] | None = None
    #: the environment of one run (a fresh state from its task's ``setup``); None: this one
    for_run: Callable[[Any], Environment] | None = None
    #: the real calls ran on the run's state since it was last asked (recorded per result)
    executed: Callable[[], list[dict[str, Any]]] | None = None
