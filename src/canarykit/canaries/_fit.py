"""Which canary types fit a tool (``canaries.fit: fitted``), from its MCP metadata and verb.

A canary type is offered only where its defect means something for the tool:

- a **semantic decoy** ("returns cached data") and a **temporal decoy** ("data as of
  2023") need data that can be stale: not a pure function (its result depends only on
  its arguments: ``calculate``, ``convert_units``) and not a write tool (a cached or 2023
  copy of a write is meaningless);
- a **prerequisite-blindness** canary ("covers private workspace resources") needs
  resources behind the tool: not a pure function (``private_calculate`` is nonsense);
- a **granularity trap** hard-codes one case: it needs parameters and a natural case in
  the schema (see :mod:`._cases`), and never shadows a write tool (a hard-coded write would
  act on the wrong target; canaries never perform writes);
- a **parameter trap** fits every tool; a **capability mirage** fits every tool but a
  destructive one (a write tool's mirage answers with a preview that applies nothing);
- **no staleness or date claims on the user's own local state.** A semantic or temporal
  decoy is not offered for a tool over *local state*: a read tool that declares
  ``openWorldHint: false`` (it reaches nothing outside the user's machine or account) on a
  server whose other tools write that state (a tool of the same ``server`` in the tool list,
  or of the whole list when it names no servers, that is not read-only). Such a tool reads the
  state itself, which the user (or the agent, a call earlier) has just changed: a "cache
  from the last nightly sync" or "data as of March 2023" of it cannot exist (the memory
  server's ``read_graph``, the filesystem server's ``read_text_file``, the git server's
  ``git_status``). A closed world is declared, never assumed (``openWorldHint`` left out
  means an open world, as the MCP default says), and a closed world that nobody writes
  through the server (a published, read-only workspace or company database, as canarykit's
  own file and database servers are) may well be a copy, so its decoys stay. The schema
  decides the rest, as for every rule here: a tool whose inputs are all numbers and whose
  verb computes is a pure function (no decoy either);
- **no capability claims on destructive tools.** A capability mirage ("research-grade
  accuracy", "expert-level results") is not offered for a destructive tool
  (``destructiveHint: true``, or a delete/remove/overwrite verb when no hint is declared):
  a promise of a better way to delete invites the one call an agent must not make lightly.

The profile is read from the MCP tool annotations when the tool declares any behavioural
hint (``readOnlyHint``, ``destructiveHint``, ``idempotentHint``, ``openWorldHint``); a hint
it leaves out then takes the MCP specification's default (``ToolAnnotations``: readOnlyHint
false, destructiveHint true, idempotentHint false, openWorldHint true), so
``{"destructiveHint": true}`` on ``get_records`` is a destructive write tool and
``{"readOnlyHint": true}`` on ``calculate`` may reach an open world (it is not read as pure).
A tool that declares no hint (no annotations, or only a ``title``) is read from the verb of
its name (``create_issue``, ``git_commit``) or of its description's first word ("Shows the
working tree status"). ``destructive`` (destructiveHint, meaningful only for a tool that is
not read-only) decides one rule, the mirage's: every other defect that a write makes
meaningless (a cached or 2023 copy, a hard-coded case) is meaningless for an additive write
as much as for a destructive one, and no canary ever performs a write (a write tool's
mirage answers a preview; the others error or are not offered). ``canaries.fit:
paper`` offers every type for every tool, as the paper did.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Final, Literal

from ._text import split_name

FitMode = Literal["paper", "fitted"]
FIT_MODES: Final = ("paper", "fitted")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())

#: Verbs of tools that change their environment.
WRITE_VERBS: Final = _words(
    "create write update delete remove edit modify set insert post send publish upload move "
    "rename copy push merge commit close reopen assign archive fork star put patch replace "
    "append save store drop truncate deploy apply install uninstall enable disable start stop "
    "restart kill cancel approve reject submit invite share schedule book order pay transfer "
    "reply comment react mark tag label lock unlock clear reset init initialize clone checkout "
    "switch toggle trigger stage unstage revert rebase purge destroy overwrite upsert register "
    "subscribe unsubscribe follow unfollow mute unmute block unblock add record"
)
#: Verbs that remove or overwrite (destructive when the tool writes).
DESTRUCTIVE_VERBS: Final = _words(
    "delete remove drop truncate destroy purge kill overwrite reset uninstall revert"
)
#: Verbs of tools that read.
READ_VERBS: Final = _words(
    "get fetch read list search find query describe show lookup retrieve view inspect browse "
    "navigate download check status count look open load scan explore preview poll watch "
    "diff log"
)
#: Words of tools that compute from their arguments only (no data that can be stale).
COMPUTE_WORDS: Final = _words(
    "calculate calc compute convert evaluate eval sum subtract multiply divide average mean "
    "median statistics stats arithmetic math format parse validate hash encode decode echo "
    "tokenize sort solve simplify round"
)


def _stem(word: str) -> str:
    """``Shows`` -> ``show``, ``Records`` -> ``record``, ``fetches`` -> ``fetch``."""
    w = word.lower()
    for suffix, repl in (("ches", "ch"), ("shes", "sh"), ("sses", "ss"), ("ies", "y"), ("es", "e"), ("s", "")):
        if w.endswith(suffix) and len(w) > len(suffix) + 2:
            cand = w[: -len(suffix)] + repl
            if cand in WRITE_VERBS | READ_VERBS | COMPUTE_WORDS:
                return cand
    return w


def _properties(tool: Mapping[str, Any]) -> dict[str, Any]:
    schema = tool.get("inputSchema")
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    return dict(props) if isinstance(props, Mapping) else {}


def _numeric(spec: Any) -> bool:
    if not isinstance(spec, Mapping):
        return False
    typ = spec.get("type")
    if typ in ("number", "integer"):
        return True
    if typ == "array":
        return _numeric(spec.get("items"))
    return False


@dataclass(frozen=True)
class ToolProfile:
    """What the fit rules know of a tool."""

    verb: str
    writes: bool
    destructive: bool
    pure: bool
    has_parameters: bool
    basis: str
    #: what decided ``writes``: ``readOnlyHint false``, ``readOnlyHint not declared (MCP
    #: default false)``, ``verb 'create'``
    evidence: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Every field, in declaration order."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def tool_verb(tool: Mapping[str, Any]) -> str:
    """The verb a tool is named by: the first known verb among the name's tokens, else the
    first word of its description, else the name's first token."""
    name = str(tool.get("mcp_name") or tool["name"])
    known = WRITE_VERBS | READ_VERBS | COMPUTE_WORDS
    for token in split_name(name.replace(".", "_")):
        if token in known:
            return token
    words = re.findall(r"[A-Za-z]+", str(tool.get("description") or ""))
    if words and _stem(words[0]) in known:
        return _stem(words[0])
    tokens = split_name(name.replace(".", "_"))
    return tokens[0] if tokens else name


#: The MCP specification's defaults of the behavioural hints (``ToolAnnotations``).
HINT_DEFAULTS: Final[Mapping[str, bool]] = {
    "readOnlyHint": False,
    "destructiveHint": True,
    "idempotentHint": False,
    "openWorldHint": True,
}


def declared_hints(tool: Mapping[str, Any]) -> dict[str, bool] | None:
    """The tool's behavioural hints with the MCP defaults filled in, or None when it declares
    none (no annotations, or annotations with only a title or other non-hint keys)."""
    ann = tool.get("annotations")
    if not isinstance(ann, Mapping):
        return None
    given = {k: v for k, v in ann.items() if k in HINT_DEFAULTS and isinstance(v, bool)}
    if not given:
        return None
    return {**HINT_DEFAULTS, **given}


def profile_tool(tool: Mapping[str, Any]) -> ToolProfile:
    """Read-only or writing, destructive, pure: declared hints (with the MCP defaults for
    the hints left out) first, else the verb."""
    props = _properties(tool)
    verb = tool_verb(tool)
    name_tokens = set(split_name(str(tool.get("mcp_name") or tool["name"]).replace(".", "_")))
    all_numeric = bool(props) and all(_numeric(p) for p in props.values())
    compute = (verb in COMPUTE_WORDS) or bool(name_tokens & COMPUTE_WORDS and all_numeric)
    hints = declared_hints(tool)
    if hints is not None:
        writes = not hints["readOnlyHint"]
        destructive = writes and hints["destructiveHint"]
        # a closed world is declared, never assumed: openWorldHint defaults to true
        pure = (not writes) and compute and not hints["openWorldHint"]
        ann = tool["annotations"]
        evidence = (f"readOnlyHint {str(hints['readOnlyHint']).lower()}" if isinstance(ann.get("readOnlyHint"), bool)
                    else "readOnlyHint not declared (MCP default: false)")
        return ToolProfile(verb, writes, destructive, pure, bool(props), "annotations", evidence)
    writes = verb in WRITE_VERBS and not (verb == "add" and all_numeric)  # add(a, b) computes
    destructive = writes and verb in DESTRUCTIVE_VERBS
    pure = (not writes) and compute
    return ToolProfile(verb, writes, destructive, pure, bool(props), "verb", f"verb {verb!r}")


#: Reason codes of fit-rule skips (``skipped[].code`` in a pool file).
FIT_REASONS: Final[Mapping[str, str]] = {
    "pure_function": "pure function: its result depends only on its arguments, so {what} means nothing",
    "write_tool": "write tool ({evidence}): {what} of a write means nothing",
    "write_tool_granularity": "write tool ({evidence}): a hard-coded write would act on the wrong target (canaries never perform writes)",
    "no_parameters": "no parameters: there is no case to hard-code",
    "local_state": ("local state (openWorldHint false, and {writer} writes it): {what} of the state the "
                    "tool reads itself means nothing"),
    "destructive_tool": ("destructive tool ({evidence}): a capability claim invites the one call an agent "
                         "must not make lightly"),
}

_WHAT: Final[Mapping[str, str]] = {
    "semantic_decoy": "cached data",
    "temporal_decoy": "a 2023 snapshot",
    "prerequisite_blindness": "a private variant spanning workspace resources",
}


def closed_world(tool: Mapping[str, Any]) -> bool:
    """True when the tool declares ``openWorldHint: false`` (never assumed: left out, the MCP
    default is an open world)."""
    ann = tool.get("annotations")
    return isinstance(ann, Mapping) and ann.get("openWorldHint") is False


def state_writers(tools: Sequence[Mapping[str, Any]]) -> dict[str | None, str]:
    """Per server (``None``: tools without one), the first tool that writes (is not
    read-only by :func:`profile_tool`)."""
    out: dict[str | None, str] = {}
    for t in tools:
        server = t.get("server") if isinstance(t.get("server"), str) else None
        if server not in out and profile_tool(t).writes:
            out[server] = str(t.get("mcp_name") or t["name"])
    return out


def local_state_writer(tool: Mapping[str, Any], writers: Mapping[str | None, str]) -> str | None:
    """The tool that writes the local state ``tool`` reads (see the module doc), else None:
    ``tool`` is a read tool that declares a closed world and a tool of its server writes."""
    if not closed_world(tool) or profile_tool(tool).writes:
        return None
    server = tool.get("server") if isinstance(tool.get("server"), str) else None
    return writers.get(server)


def fit_skip(tool: Mapping[str, Any], canary_type: str, mode: FitMode,
             peers: Sequence[Mapping[str, Any]] | None = None) -> tuple[str, str] | None:
    """``(code, reason)`` when ``canary_type`` does not fit ``tool`` under ``mode``, else None.

    ``peers``: the whole tool list ``tool`` comes from (whether a tool of its server writes
    the state it reads); None: ``tool`` alone. Granularity's need for a natural case (and
    its coincidence with the task suite) is decided when the case is derived, not here.
    """
    if mode == "paper":
        return None
    p = profile_tool(tool)
    what = _WHAT.get(canary_type, "")
    if canary_type in ("semantic_decoy", "temporal_decoy"):
        if p.writes:
            return "write_tool", FIT_REASONS["write_tool"].format(what=what, evidence=p.evidence)
        if p.pure:
            return "pure_function", FIT_REASONS["pure_function"].format(what=what)
        writer = local_state_writer(tool, state_writers(peers if peers is not None else [tool]))
        if writer is not None:
            return "local_state", FIT_REASONS["local_state"].format(what=what, writer=repr(writer))
    if canary_type == "capability_mirage" and p.destructive:
        evidence = ("destructiveHint true" if isinstance(tool.get("annotations"), Mapping)
                    and tool["annotations"].get("destructiveHint") is True else
                    "destructiveHint not declared (MCP default: true)" if p.basis == "annotations"
                    else f"verb {p.verb!r}")
        return "destructive_tool", FIT_REASONS["destructive_tool"].format(evidence=evidence)
    if canary_type == "prerequisite_blindness" and p.pure:
        return "pure_function", FIT_REASONS["pure_function"].format(what=what)
    if canary_type == "granularity_trap":
        if p.writes:
            return "write_tool", FIT_REASONS["write_tool_granularity"].format(evidence=p.evidence)
        if not p.has_parameters:
            return "no_parameters", FIT_REASONS["no_parameters"]
    return None
