"""Ingestion of MCP tool lists (hostile input: every problem names the tool and the field).

A tool list is a JSON list of MCP tool definitions, or ``{"tools": [...]}`` as an MCP
``tools/list`` result. Each definition may carry, besides ``name``, ``description`` and
``inputSchema``, the MCP metadata ``title``, ``annotations`` and ``outputSchema`` (kept,
and mirrored on canaries) and ``server``: the name of the server that offers it (a list
that spans servers, e.g. two ``list-mcp-tools`` exports joined).

Rules (decisions documented here and in the README):

- the document must be a list (or ``{"tools": [...]}``): anything else is an error;
- one unusable definition never aborts the list: a definition that is not an object, has
  no valid MCP name (``^[A-Za-z0-9_.-]{1,128}$``), has a non-string description, lacks
  a valid ``inputSchema`` (a JSON Schema of ``type: "object"``), is nested deeper than
  :data:`MAX_DEFINITION_DEPTH` levels, cannot be written as JSON (``NaN``, an object that is
  not JSON), or fails in any other way is *skipped* with a warning naming ``tools[i]``, the
  tool and the field; with ``strict`` it is an :class:`InputError`;
- invalid optional metadata (a non-string ``title``, non-object ``annotations``, a hint
  that is not a boolean, an invalid ``outputSchema``) is dropped with a warning;
- **repeated names across servers** are disambiguated the way the MCP documentation
  recommends for client applications ("Tool name conflicts": concatenate a unique,
  user-defined server name with the tool name, ``web1___search_web``): every tool whose
  name is offered by more than one server is exposed as ``<server>___<name>`` (server name
  reduced to ``[A-Za-z0-9_-]``), its original name kept in ``mcp_name``; names offered by
  one server only are unchanged. The same name twice on the *same* server (or twice with
  no server) cannot be told apart: the later one is skipped with a warning.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final

from jsonschema.exceptions import SchemaError

from ..errors import InputError
from ..store.jsonio import canonical_json, nesting_depth
from ..tools.arguments import schema_validator_class
from ._text import MCP_NAME_RE

#: Separator between the server and the tool name of a disambiguated tool (MCP docs).
SERVER_SEPARATOR: Final = "___"
#: The boolean MCP tool annotations (``ToolAnnotations``).
HINTS: Final = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
MAX_MCP_NAME: Final = 128
#: JSON nesting of one tool definition, at most: a deeper one is skipped (nothing downstream
#: takes it: pool files, run records and model APIs bound nesting), never the whole list.
#: Real servers stay far below (the deepest of the 110 official tools in
#: ``tests/fixtures/mcp_servers``: 12).
MAX_DEFINITION_DEPTH: Final = 32
#: Nesting a tool-list *file* may have: its definitions are then checked one by one.
TOOL_LIST_MAX_DEPTH: Final = 400


def _where(path: Iterable[Any]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


@lru_cache(maxsize=4096)
def _meta_schema_problem(text: str) -> tuple[str, str] | None:
    """Where and why a schema (canonical JSON) fails its meta-schema. Cached: checking a
    schema against the 2020-12 meta-schema takes milliseconds, and a pool copies each tool's
    schema into several canaries and controls."""
    schema = json.loads(text)
    try:
        schema_validator_class(schema).check_schema(schema)
    except SchemaError as exc:
        return _where(exc.absolute_path), exc.message
    return None


def check_input_schema(schema: Any, source: str, field: str) -> None:
    """Raise :class:`InputError` unless ``schema`` is a valid JSON Schema of ``type: object``."""
    if not isinstance(schema, dict):
        raise InputError(
            source, field, f"expected a JSON Schema object, got {type(schema).__name__}"
        )
    if "$schema" in schema and not isinstance(schema["$schema"], str):
        raise InputError(source, f"{field}.$schema", "expected a meta-schema URI string")
    problem = _meta_schema_problem(canonical_json(schema))
    if problem is not None:
        raise InputError(source, field + problem[0], f"not a valid JSON Schema: {problem[1]}")
    if schema.get("type") != "object":
        raise InputError(
            source,
            f"{field}.type",
            f'a tool\'s inputSchema must have type "object", got {schema.get("type")!r}',
        )
    props = schema.get("properties", {})
    if not isinstance(props, dict):  # pragma: no cover - check_schema rejects this already
        raise InputError(source, f"{field}.properties", "expected an object")


@dataclass(frozen=True)
class Skip:
    """A (tool, canary type) the generator did not build, and why.

    ``type`` is ``"*"`` when the whole tool was skipped. ``warning`` marks a problem with
    the input (an unusable definition, a schema that cannot host the type): ``strict``
    turns those into errors. Skips by the fit rules (the type's defect means nothing for
    the tool) are not warnings. With ``task``, the canary exists but is withheld from that
    task of the suite (it is not a skip of the (tool, type)).
    """

    tool: str
    type: str
    code: str
    reason: str
    warning: bool
    field: str = ""
    #: set when the canary was built but is withheld from this one task of the suite
    #: (a granularity offering for a task whose plan never calls the tool)
    task: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "tool": self.tool,
            "type": self.type,
            "code": self.code,
            "reason": self.reason,
            "warning": self.warning,
        }
        if self.field:
            out["field"] = self.field
        if self.task:
            out["task"] = self.task
        return out

    def line(self) -> str:
        """One readable line: ``<tool> <type>: <reason>`` (``... for task <id>: ...``)."""
        what = "all types" if self.type == "*" else self.type
        where = f" [{self.field}]" if self.field else ""
        task = f": not offered to task {self.task}" if self.task else ""
        return f"{self.tool}: {what}{task}: {self.reason}{where}"


@dataclass
class ToolList:
    """A validated tool list: the usable tools (normalized copies) and what was skipped."""

    tools: list[dict[str, Any]]
    skipped: list[Skip] = field(default_factory=list)
    source: str = "<tools>"
    #: position of each usable tool in the original list (for messages: ``tools[3]``)
    positions: list[int] = field(default_factory=list)

    def label(self, index: int) -> str:
        """``tools[<i>] (<name>)``: where the index-th usable tool sits in the input."""
        tool = self.tools[index]
        pos = self.positions[index] if index < len(self.positions) else index
        return f"tools[{pos}] ({tool.get('mcp_name', tool['name'])})"

    @property
    def renamed(self) -> dict[str, str]:
        """Exposed name -> ``server/original name`` of every disambiguated tool."""
        return {
            t["name"]: f"{t.get('server')}/{t['mcp_name']}" for t in self.tools if "mcp_name" in t
        }


def unwrap_tool_list(obj: Any, source: str) -> list[Any]:
    """The list of definitions of a tool-list document (a list or ``{"tools": [...]}``)."""
    if isinstance(obj, dict) and "tools" in obj:
        obj = obj["tools"]
    if not isinstance(obj, list):
        raise InputError(
            source,
            "tools",
            f"expected a JSON list of MCP tool definitions, got {type(obj).__name__}",
        )
    return obj


def server_prefix(server: str) -> str:
    """``server`` reduced to the tool-name charset (``my.server`` -> ``my_server``)."""
    s = re.sub(r"[^A-Za-z0-9_-]+", "_", server.strip())
    return re.sub(r"_+", "_", s).strip("_-") or "server"


def _fit_mcp_name(name: str) -> str:
    if len(name) <= MAX_MCP_NAME:
        return name
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
    return name[: MAX_MCP_NAME - 9].rstrip("_-.") + "_" + digest


class _Problems:
    """Collects per-tool problems; raises the first one in strict mode."""

    def __init__(self, source: str, strict: bool) -> None:
        self.source, self.strict = source, strict
        self.skips: list[Skip] = []

    def add(self, tool: str, type_: str, code: str, field: str, problem: str) -> None:
        if self.strict:
            raise InputError(self.source, field, problem)
        self.skips.append(Skip(tool, type_, code, problem, True, field))


def _metadata(
    tool: Mapping[str, Any], label: str, name: str, problems: _Problems
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    title = tool.get("title")
    if title is not None:
        if isinstance(title, str):
            out["title"] = title
        else:
            problems.add(name, "metadata", "invalid_metadata", f"{label}.title",
                         f"expected a string, got {type(title).__name__}; title dropped")
    ann = tool.get("annotations")
    if ann is not None:
        if not isinstance(ann, dict):
            problems.add(name, "metadata", "invalid_metadata", f"{label}.annotations",
                         f"expected an object, got {type(ann).__name__}; annotations dropped")
        else:
            kept: dict[str, Any] = {}
            for key, value in ann.items():
                if key in HINTS and not isinstance(value, bool):
                    problems.add(name, "metadata", "invalid_metadata", f"{label}.annotations.{key}",
                                 f"expected a boolean, got {value!r}; hint dropped")
                elif key == "title" and not isinstance(value, str):
                    problems.add(name, "metadata", "invalid_metadata", f"{label}.annotations.title",
                                 f"expected a string, got {type(value).__name__}; dropped")
                else:
                    kept[key] = copy.deepcopy(value)
            out["annotations"] = kept
    out_schema = tool.get("outputSchema")
    if out_schema is not None:
        try:
            check_input_schema(out_schema, "", "")
        except InputError as exc:
            problems.add(name, "metadata", "invalid_metadata", f"{label}.outputSchema{exc.field}",
                         f"{exc.problem} (an MCP outputSchema is a JSON Schema of type object); "
                         "outputSchema dropped")
        else:
            out["outputSchema"] = copy.deepcopy(out_schema)
    return out


#: One usable entry of a tool list: its position, name, server and normalized definition.
_Parsed = tuple[int, str, str | None, dict[str, Any]]


def ingest_tools(obj: Any, source: str = "<tools>", *, strict: bool = False) -> ToolList:
    """Validate a tool list and return the usable tools and the skipped ones (see module doc).

    Each returned tool is a deep copy with ``name`` (the exposed, unique name),
    ``description`` (``""`` when missing), ``inputSchema`` and, when present, ``title``,
    ``annotations``, ``outputSchema``, ``server`` and ``mcp_name`` (the name on its server,
    when the exposed name was disambiguated; kept from the input when it has one, so that
    ingesting an ingested list changes nothing). Other keys are ignored.
    """
    entries = unwrap_tool_list(obj, source)
    problems = _Problems(source, strict)
    parsed: list[_Parsed] = []
    for i, tool in enumerate(entries):
        try:
            p = _parsed_tool(i, tool, source, problems)
        except InputError:
            raise  # strict: the first problem is the error
        except Exception as exc:  # noqa: BLE001 - one definition never aborts the list
            name = str(tool["name"]) if isinstance(tool, dict) and isinstance(tool.get("name"), str) else f"tools[{i}]"
            problems.add(name, "*", "invalid_tool", f"tools[{i}]",
                         f"unusable definition: {type(exc).__name__}: {str(exc)[:200]}")
            continue
        if p is not None:
            parsed.append(p)
    out, positions = _disambiguated(parsed, problems)
    return ToolList(out, problems.skips, source, positions)


def _parsed_tool(i: int, tool: Any, source: str, problems: _Problems) -> _Parsed | None:
    """The ``i``-th entry normalized, or None when it is unusable (the problem recorded)."""
    if not isinstance(tool, dict):
        problems.add(f"tools[{i}]", "*", "invalid_tool", f"tools[{i}]",
                     f"expected an object, got {type(tool).__name__}")
        return None
    name = tool.get("name")
    if name is None:
        problems.add(f"tools[{i}]", "*", "invalid_tool", f"tools[{i}].name",
                     "missing (every tool needs a name)")
        return None
    if not isinstance(name, str) or not MCP_NAME_RE.match(name):
        problems.add(f"tools[{i}]", "*", "invalid_tool", f"tools[{i}].name",
                     f"expected an MCP tool name (1-128 characters of A-Z a-z 0-9 _ - .), got {name!r}")
        return None
    label = f"tools[{i}] ({name})"
    depth = nesting_depth(tool, MAX_DEFINITION_DEPTH)
    if depth > MAX_DEFINITION_DEPTH:
        problems.add(name, "*", "invalid_tool", label,
                     f"nested more than {MAX_DEFINITION_DEPTH} levels deep (the limit for one tool definition)")
        return None
    try:
        json.dumps(tool, allow_nan=False)
    except (TypeError, ValueError) as exc:
        problems.add(name, "*", "invalid_tool", label, f"cannot be written as JSON: {exc}")
        return None
    server = tool.get("server")
    if server is not None and (not isinstance(server, str) or not server.strip()):
        problems.add(name, "metadata", "invalid_metadata", f"{label}.server",
                     f"expected a non-empty server name, got {server!r}; server dropped")
        server = None
    description = tool.get("description", "")
    if description is None:
        description = ""
    if not isinstance(description, str):
        problems.add(name, "*", "invalid_tool", f"{label}.description",
                     f"expected a string, got {type(description).__name__}")
        return None
    if "inputSchema" not in tool:
        problems.add(name, "*", "invalid_tool", f"{label}.inputSchema",
                     "missing (MCP requires an inputSchema object)")
        return None
    try:
        check_input_schema(tool["inputSchema"], source, f"{label}.inputSchema")
    except InputError as exc:
        problems.add(name, "*", "invalid_tool", exc.field, exc.problem)
        return None
    norm: dict[str, Any] = {
        "name": name,
        "description": description,
        "inputSchema": copy.deepcopy(tool["inputSchema"]),
    }
    norm.update(_metadata(tool, label, name, problems))
    if server is not None:
        norm["server"] = server
        mcp_name = tool.get("mcp_name")
        if isinstance(mcp_name, str) and MCP_NAME_RE.match(mcp_name):
            norm["mcp_name"] = mcp_name  # an already disambiguated list keeps each tool's name on its server
    return i, name, server, norm


def _disambiguated(parsed: list[_Parsed], problems: _Problems) -> tuple[list[dict[str, Any]], list[int]]:
    """The usable tools with unique exposed names (``<server>___<name>`` for a name several
    servers offer; a repeat on one server skipped), and their positions in the input."""
    servers_of: dict[str, set[str | None]] = {}
    for _, name, server, _ in parsed:
        servers_of.setdefault(name, set()).add(server)
    seen: dict[tuple[str, str | None], int] = {}
    taken: set[str] = {name for _, name, _, _ in parsed if len(servers_of[name]) == 1}
    out: list[dict[str, Any]] = []
    positions: list[int] = []
    for i, name, server, norm in parsed:
        key = (name, server)
        if key in seen:
            where = f"server {server!r}" if server is not None else "no server"
            problems.add(name, "*", "duplicate_tool", f"tools[{i}] ({name}).name",
                         f"duplicate tool name on {where} (also tools[{seen[key]}]); the later "
                         "definition is skipped (give each tool its `server` to keep both)")
            continue
        seen[key] = i
        if len(servers_of[name]) > 1 and server is not None:
            exposed = _fit_mcp_name(f"{server_prefix(server)}{SERVER_SEPARATOR}{name}")
            base, n = exposed, 2
            while exposed in taken:
                exposed = _fit_mcp_name(f"{base}_{n}")
                n += 1
            taken.add(exposed)
            norm = {**norm, "name": exposed, "mcp_name": name}
        out.append(norm)
        positions.append(i)
    return out, positions


def validate_tool_defs(obj: Any, source: str = "<tools>") -> list[dict[str, Any]]:
    """Check a tool list strictly (the first problem is an :class:`InputError`) and return
    the normalized tools (see :func:`ingest_tools`)."""
    return ingest_tools(obj, source, strict=True).tools
