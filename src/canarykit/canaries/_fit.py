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
- a **parameter trap** and a **capability mirage** fit every tool (a write tool's mirage
  answers with a preview that applies nothing).

The profile is read from MCP annotations first (``readOnlyHint``, ``destructiveHint``,
``openWorldHint``), then from the verb of the name (``create_issue``, ``git_commit``) or
of the description's first word ("Shows the working tree status"). ``canaries.fit:
paper`` offers every type for every tool, as the paper did.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
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

    def to_dict(self) -> dict[str, Any]:
        return {
            "verb": self.verb,
            "writes": self.writes,
            "destructive": self.destructive,
            "pure": self.pure,
            "has_parameters": self.has_parameters,
            "basis": self.basis,
        }


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


def profile_tool(tool: Mapping[str, Any]) -> ToolProfile:
    """Read-only or writing, destructive, pure: annotations first, then the verb."""
    ann = tool.get("annotations")
    ann = ann if isinstance(ann, Mapping) else {}
    props = _properties(tool)
    verb = tool_verb(tool)
    name_tokens = set(split_name(str(tool.get("mcp_name") or tool["name"]).replace(".", "_")))
    all_numeric = bool(props) and all(_numeric(p) for p in props.values())
    read_only = ann.get("readOnlyHint")
    if isinstance(read_only, bool):
        writes, basis = not read_only, "annotations"
    elif verb == "add" and all_numeric:
        writes, basis = False, "verb"
    else:
        writes, basis = verb in WRITE_VERBS, "verb"
    destructive_hint = ann.get("destructiveHint")
    if not writes:
        destructive = False
    elif isinstance(destructive_hint, bool):
        destructive = destructive_hint
    else:
        destructive = verb in DESTRUCTIVE_VERBS
    compute = (verb in COMPUTE_WORDS) or bool(name_tokens & COMPUTE_WORDS and all_numeric)
    pure = (not writes) and compute and ann.get("openWorldHint") is not True
    return ToolProfile(verb, writes, destructive, pure, bool(props), basis)


#: Reason codes of fit-rule skips (``skipped[].code`` in a pool file).
FIT_REASONS: Final[Mapping[str, str]] = {
    "pure_function": "pure function: its result depends only on its arguments, so {what} means nothing",
    "write_tool": "write tool: {what} of a write means nothing",
    "write_tool_granularity": "write tool: a hard-coded write would act on the wrong target (canaries never perform writes)",
    "no_parameters": "no parameters: there is no case to hard-code",
}

_WHAT: Final[Mapping[str, str]] = {
    "semantic_decoy": "cached data",
    "temporal_decoy": "a 2023 snapshot",
    "prerequisite_blindness": "a private variant spanning workspace resources",
}


def fit_skip(tool: Mapping[str, Any], canary_type: str, mode: FitMode) -> tuple[str, str] | None:
    """``(code, reason)`` when ``canary_type`` does not fit ``tool`` under ``mode``, else None.

    Granularity's need for a natural case (and its coincidence with the task suite) is
    decided when the case is derived, not here.
    """
    if mode == "paper":
        return None
    p = profile_tool(tool)
    what = _WHAT.get(canary_type, "")
    if canary_type in ("semantic_decoy", "temporal_decoy"):
        if p.writes:
            return "write_tool", FIT_REASONS["write_tool"].format(what=what)
        if p.pure:
            return "pure_function", FIT_REASONS["pure_function"].format(what=what)
    if canary_type == "prerequisite_blindness" and p.pure:
        return "pure_function", FIT_REASONS["pure_function"].format(what=what)
    if canary_type == "granularity_trap":
        if p.writes:
            return "write_tool", FIT_REASONS["write_tool_granularity"]
        if not p.has_parameters:
            return "no_parameters", FIT_REASONS["no_parameters"]
    return None
