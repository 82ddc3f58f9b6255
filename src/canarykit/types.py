"""Small typed records shared by every stage: tool definitions, tool results, canary types."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal

#: The six canary type ids, in the paper's order (section 3). Other tools rely on these strings.
CANARY_TYPES: Final[tuple[str, ...]] = (
    "semantic_decoy",
    "parameter_trap",
    "capability_mirage",
    "prerequisite_blindness",
    "temporal_decoy",
    "granularity_trap",
)

CanaryType = Literal[
    "semantic_decoy",
    "parameter_trap",
    "capability_mirage",
    "prerequisite_blindness",
    "temporal_decoy",
    "granularity_trap",
]

#: Canary types whose give-away suffix comes from a pool in params.yaml (Appendix C).
PHRASE_TYPES: Final[tuple[str, ...]] = ("semantic_decoy", "capability_mirage", "temporal_decoy")

#: The study's conditions (README, "Conditions"): the paper's three, plus two that separate a
#: canary's weakness from its lure (issue 11): ``control`` (the ``declared`` lists with every
#: canary replaced by its matched-surface control, same slots) and ``mirrored`` (the
#: ``declared`` lists with each canary and the real tool it shadows trading places).
CONDITIONS: Final[tuple[str, ...]] = ("baseline", "declared", "full", "control", "mirrored")
#: The paper's canary-density conditions.
PAPER_CONDITIONS: Final[tuple[str, ...]] = ("baseline", "declared", "full")
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
