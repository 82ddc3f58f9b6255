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

CONDITIONS: Final[tuple[str, ...]] = ("baseline", "declared", "full")
POOLS: Final[tuple[str, ...]] = ("standard", "subtle")
DIFFICULTIES: Final[tuple[str, ...]] = ("easy", "medium", "hard")


@dataclass(frozen=True)
class ToolDef:
    """An MCP tool definition: what an agent sees of a tool."""

    name: str
    description: str
    input_schema: dict[str, Any]
    server: str | None = None

    def to_mcp(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "inputSchema": self.input_schema}

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
