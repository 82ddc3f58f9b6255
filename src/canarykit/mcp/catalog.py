"""What ``canarykit proxy`` offers: the real tools of its upstreams and the canaries (or twins) made from them.

:func:`build_catalog` joins the upstreams' tools (``--real-tools`` narrows them,
:func:`narrowed`) with the pool the generator builds from them
(:func:`canarykit.canaries.build_pool`: ``--pool``, ``--fit``, ``--types``, ``--shadow``;
``--controls`` offers each canary's twin in its place) and shuffles them by ``--seed`` over
stable keys, as the study's assembly does. Every definition keeps its MCP metadata. The
session notice (:func:`session_notice`) says which offered real tools may write and which
were not offered.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jsonschema
from mcp_types import Tool as MCPTool

from ..errors import InputError
from ..store.jsonio import canonical_json, content_hash
from ..types import CANARY_TYPES
from .upstream import Hidden, Route

__all__ = [
    "Catalog", "Offering", "ProxySettings", "build_catalog", "canonical_offered", "narrowed", "parse_types",
    "session_notice", "settings_from_params",
]


@dataclass(frozen=True)
class ProxySettings:
    """What the proxy offers: the pool, the fit, the canary types, controls instead of
    canaries, the order's seed, and where its suffixes come from."""

    pool: str = "standard"
    fit: str = "fitted"
    types: tuple[str, ...] = CANARY_TYPES
    controls: bool = False
    seed: int = 0
    suffixes: Mapping[str, str] | None = None
    control_suffixes: Mapping[str, str | None] | None = None
    special_cases: Mapping[str, Mapping[str, Any]] | None = None
    #: canaries only for these real tools (exposed names); None: for every tool
    shadow: tuple[str, ...] | None = None
    #: offer only these real tools (exposed names); None: every tool of every upstream
    real_tools: tuple[str, ...] | None = None

    def describe(self) -> dict[str, Any]:
        from .. import __version__

        return {"canarykit_version": __version__, "pool": self.pool, "fit": self.fit, "types": list(self.types),
                "controls": self.controls, "seed": self.seed, "shadow": list(self.shadow) if self.shadow else None,
                "real_tools": list(self.real_tools) if self.real_tools else None}


@dataclass
class Offering:
    """One tool the proxy lists: a real tool (with its route) or a canary/control (its record)."""

    position: int
    name: str
    kind: str  # real | canary | control
    tool: MCPTool
    route: Route | None = None
    record: dict[str, Any] | None = None
    validator: Any = None

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"position": self.position, "name": self.name, "kind": self.kind}
        if self.route is not None:
            out["server"] = self.route.server
            out["upstream_name"] = self.route.name
        if self.record is not None:
            prefix = "control" if self.kind == "control" else "canary"
            out[f"{prefix}_id"] = self.record["id"]
            out[f"{prefix}_type"] = self.record["type"]
            out["shadows"] = self.record["shadows"]
            up = self.record.get("upstream")
            if isinstance(up, Mapping):
                out["server"] = up.get("server")
                out["upstream_name"] = up.get("name")
        return out


@dataclass
class Catalog:
    """The proxy's tool list, in the order it is offered, and what was not offered;
    ``instructions_found``: text of the real tools that reads as instructions to the model
    (:func:`canarykit.canaries.instruction_sentences`), which their canaries leave out."""

    offered: list[Offering]
    skipped: list[Any] = field(default_factory=list)
    instructions_found: list[dict[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.by_name = {o.name: o for o in self.offered}
        self.tools = [o.tool for o in self.offered]
        self.tool_list_hash = content_hash([o.tool.model_dump(by_alias=True, mode="json", exclude_none=True)
                                            for o in self.offered])

    def count(self, kind: str) -> int:
        return sum(o.kind == kind for o in self.offered)

    def warnings(self) -> list[str]:
        """One line per instruction found in a real tool (the proxy prints them at start-up)."""
        return [f"tool {f['tool']}: its {f['where']} reads as instructions to the model ({f['text']!r}): offered as "
                "its server wrote it; its canaries and twins leave it out" for f in self.instructions_found]


def _mcp_tool(d: Mapping[str, Any]) -> MCPTool:
    keep = {k: d[k] for k in ("name", "title", "description", "inputSchema", "outputSchema", "annotations") if k in d}
    return MCPTool.model_validate(keep)


def _validator(schema: Mapping[str, Any]) -> Any:
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def build_catalog(real_tools: Sequence[Mapping[str, Any]], routes: Mapping[str, Route], settings: ProxySettings,
                  hosts: Sequence[Mapping[str, Any]] | None = None) -> Catalog:
    """The offered list: the real tools plus the pool's canaries (or controls), shuffled by
    ``settings.seed`` over stable keys (real names, canary ids), like the study's assembly.
    ``hosts``: the real tools canaries are made from (default: all of ``real_tools``; the
    proxy passes the ones ingestion could use)."""
    from ..canaries import (
        DEFAULT_CONTROL_SUFFIXES,
        DEFAULT_SUFFIXES,
        ToolList,
        build_pool,
        without_instructions,
    )

    suffixes = settings.suffixes if settings.suffixes is not None else DEFAULT_SUFFIXES[settings.pool]
    control_suffixes = (settings.control_suffixes if settings.control_suffixes is not None
                        else DEFAULT_CONTROL_SUFFIXES[settings.pool])
    if settings.shadow is not None:
        names = {str(t["name"]) for t in real_tools}
        missing = [n for n in settings.shadow if n not in names]
        if missing:
            raise InputError("<command line>", "--shadow", f"no upstream tool {missing[0]!r}; the tools are: "
                             f"{', '.join(sorted(names))}")
    real_names = {str(t["name"]) for t in real_tools}
    hosted = [dict(t) for t in (real_tools if hosts is None else hosts)
              if t["name"] in real_names and (settings.shadow is None or t["name"] in settings.shadow)]
    pool = build_pool(
        ToolList(hosted, [], "<upstream tools>", list(range(len(hosted)))),
        settings.pool, suffixes, fit=settings.fit, control_suffixes=control_suffixes, controls=settings.controls,
        special_cases=settings.special_cases, types=settings.types, source="<upstream tools>",
        peers=[dict(t) for t in real_tools],
    )
    entries: dict[str, tuple[str, MCPTool, Route | None, dict[str, Any] | None]] = {}
    for t in real_tools:
        entries[f"real:{t['name']}"] = ("real", _mcp_tool(t), routes.get(str(t["name"])), None)
    if settings.controls:
        records, kind = pool.controls, "control"
    else:
        records, kind = pool.canaries, "canary"
    for rec in records:
        entries[f"{kind}:{rec['id']}"] = (kind, _mcp_tool(rec), None, rec)
    order = sorted(entries)
    random.Random(f"canarykit-proxy|{settings.seed}").shuffle(order)
    offered = []
    for pos, key in enumerate(order):
        kind_, tool, route, record = entries[key]
        offered.append(Offering(pos, tool.name, kind_, tool, route, record, _validator(tool.input_schema)))
    found = [{"tool": str(t["name"]), "where": where, "text": text}
             for t in real_tools for where, text in without_instructions(t)[1]]
    return Catalog(offered, list(pool.skipped), found)


# ------------------------------------------------------------------------------------ server


def session_notice(offered: Sequence[Mapping[str, Any]], hidden: Sequence[Any]) -> str | None:
    """What a client session is told once (stderr and an MCP log notification): the offered
    real tools that may change the server's state, and every real tool not offered."""
    from .environments import write_tools

    parts = []
    writes = write_tools(offered)
    if writes:
        parts.append(f"{len(writes)} of the {len(offered)} real tools offered may change your server's state (not "
                     f"marked readOnlyHint, or marked destructiveHint): {', '.join(writes)}; their calls go to the "
                     "real server")
    if hidden:
        parts.append(f"{len(hidden)} real tool{'s' if len(hidden) != 1 else ''} not offered: "
                     + "; ".join(h.line() for h in hidden))
    return "canarykit proxy: notice: " + ". ".join(parts) if parts else None


def narrowed(tools: Sequence[Mapping[str, Any]], hidden: Sequence[Hidden],
             only: Sequence[str] | None) -> tuple[list[dict[str, Any]], list[Hidden]]:
    """The real tools offered (every one, or only those named by ``--real-tools``) and every
    real tool not offered, with its reason."""
    if only is None:
        return [dict(t) for t in tools], list(hidden)
    names = {str(t["name"]) for t in tools}
    missing = [n for n in only if n not in names]
    if missing:
        raise InputError("<command line>", "--real-tools", f"no upstream tool {missing[0]!r}; the tools are: "
                         f"{', '.join(sorted(names))}")
    keep = [dict(t) for t in tools if t["name"] in only]
    dropped = [Hidden(str(t.get("server")), str(t["name"]), "left out by --real-tools") for t in tools
               if t["name"] not in only]
    return keep, [*hidden, *dropped]


def parse_types(text: str | None) -> tuple[str, ...]:
    """``--types T1,T2`` as canary type ids (every type when empty)."""
    if not text:
        return CANARY_TYPES
    types = tuple(t.strip() for t in text.split(",") if t.strip())
    unknown = [t for t in types if t not in CANARY_TYPES]
    if unknown:
        raise InputError("<command line>", "--types", f"unknown canary type {unknown[0]!r}; expected some of {list(CANARY_TYPES)}")
    return types


def settings_from_params(params_path: str | None, pool: str, fit: str | None, types: tuple[str, ...], controls: bool,
                         seed: int, shadow: tuple[str, ...] | None = None,
                         real_tools: tuple[str, ...] | None = None) -> ProxySettings:
    """The proxy's settings: suffixes, control suffixes, special cases and fit from
    ``canaries`` of a params.yaml (validated) when given, else the defaults."""
    if params_path is None:
        return ProxySettings(pool=pool, fit=fit or "fitted", types=types, controls=controls, seed=seed, shadow=shadow,
                             real_tools=real_tools)
    from ..study.config import load_params

    cfg = load_params(params_path)["canaries"]
    return ProxySettings(pool=pool, fit=fit or cfg["fit"], types=types, controls=controls, seed=seed,
                         suffixes=cfg["suffixes"][pool], control_suffixes=cfg["control_suffixes"][pool],
                         special_cases=cfg["special_cases"] or None, shadow=shadow, real_tools=real_tools)


def canonical_offered(catalog: Catalog) -> str:
    """The offered list as canonical JSON (for tests and reports)."""
    return canonical_json([o.describe() for o in catalog.offered])
