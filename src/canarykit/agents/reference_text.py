"""What a text-only agent can read in a tool list: the real tool's look-alikes.

Everything here reads only what a model receives: a tool's name, description and input
schema (property names and which are required). Nothing reads canary metadata (a canary's
type, its id, the real tool it stands in for): this is how the reference agents
(:mod:`canarykit.agents.reference`) find a tool's family the way a reader would, so that
their known answers hold for wordings they were not written for. What each look-alike's text
says about it (its defects) and what a result says are :mod:`.reference_cues`.

**Look-alikes** of a real tool ``f`` (:func:`lookalikes`): another tool ``g`` of the list
whose description covers most of ``f``'s content words beyond the words of its name (a
canary keeps its real tool's body, a paraphrase keeps most of its words) and which either
carries all of ``f``'s name tokens (prefix/suffix variants: ``advanced_get_weather``,
``get_weather_v2``) or takes exactly ``f``'s parameters (a reworded name:
``fetch_conditions``), or whose name is the real tool's with only its retrieval verb swapped
and takes exactly its parameters (``fetch_current_time`` beside ``get_current_time``: a
reader sees the same tool, however the short description was reworded). A real tool that merely shares a parameter or a name token
(``get_pull_request_files`` beside ``get_pull_request``) is not one: its description says
something else.

Words a description shares *as boilerplate* say nothing of the tool: a server's preamble that
every one of its tools opens with (BFCL's "This tool belongs to the Gorilla file system. It is
a simple file system that ... Tool description:") or a note they all close with ("Note that
the provided function is in Python 3 syntax."). Such a span (:func:`boilerplate`: the longest
run of at least :data:`MIN_BOILERPLATE_WORDS` words at the start, or the end, of the real
tool's description that at least two tools of the list whose names share no word with its name
repeat word for word) is left out of both sides of the coverage; a list without one reads as
before.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens; snake_case, kebab-case, dotted and camelCase split into words."""
    return _WORD.findall(_CAMEL.sub(" ", text).lower())


# --------------------------------------------------------------------------- tool text


@dataclass(frozen=True)
class ToolText:
    """The part of a tool definition a text-only agent reads."""

    name: str
    description: str
    properties: tuple[str, ...]
    required: tuple[str, ...]

    @classmethod
    def of(cls, tool: Mapping[str, Any]) -> ToolText:
        """From an MCP definition (``inputSchema``) or an OpenAI one (``parameters``)."""
        schema = tool.get("inputSchema", tool.get("parameters"))
        schema = schema if isinstance(schema, Mapping) else {}
        props = schema.get("properties")
        req = schema.get("required")
        return cls(
            name=str(tool.get("name") or ""),
            description=str(tool.get("description") or ""),
            properties=tuple(props) if isinstance(props, Mapping) else (),
            required=tuple(str(r) for r in req) if isinstance(req, list) else (),
        )


_STOP = frozenset(
    ["a", "an", "the", "and", "or", "of", "for", "to", "in", "on", "at", "by", "with", "from", "as", "is", "are", "be", "it", "its", "this", "that", "these", "those", "e", "g", "eg", "ie", "etc", "per", "via", "into", "than", "then", "each", "any", "all", "no", "not", "only", "also", "such", "can", "may", "will", "if", "when", "one", "which", "what", "who", "how", "your", "you", "our", "their", "there", "here", "so", "do", "does"]
)


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


@functools.lru_cache(maxsize=16384)
def content_words(text: str) -> frozenset[str]:
    """The words of ``text`` that carry content: lower-cased, plurals folded, no stop words."""
    return frozenset(_stem(w) for w in tokenize(text) if w not in _STOP and len(w) > 1)


def _words_beyond_name(tool: ToolText, drop: frozenset[str] = frozenset()) -> frozenset[str]:
    return content_words(tool.description) - {_stem(w) for w in tokenize(tool.name)} - drop


#: A boilerplate span (a preamble, a closing note) has at least this many words.
MIN_BOILERPLATE_WORDS = 6
#: ... and at least this many tools of the list with unrelated names repeat it.
MIN_BOILERPLATE_TOOLS = 2


@functools.lru_cache(maxsize=8192)
def _tokens(text: str) -> tuple[str, ...]:
    return tuple(tokenize(text))


def _shared(a: Sequence[str], b: Sequence[str]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def boilerplate(real: ToolText, texts: Sequence[ToolText]) -> frozenset[str]:
    """The content words of ``real``'s description that only its boilerplate holds (module
    docstring): its longest opening and closing word spans that at least
    :data:`MIN_BOILERPLATE_TOOLS` tools with names unrelated to ``real``'s repeat, each of at
    least :data:`MIN_BOILERPLATE_WORDS` words; empty when there is none."""
    words = list(_tokens(real.description))
    name = set(_tokens(real.name))
    others = [_tokens(t.description) for t in texts if t.name != real.name and not name & set(_tokens(t.name))]
    if len(others) < MIN_BOILERPLATE_TOOLS:
        return frozenset()
    spans = []
    for mine, theirs in ((words, others), (words[::-1], [tuple(reversed(o)) for o in others])):
        n = sorted((_shared(mine, o) for o in theirs), reverse=True)[MIN_BOILERPLATE_TOOLS - 1]
        spans.append(n if n >= MIN_BOILERPLATE_WORDS else 0)
    head, tail = spans
    if not head and not tail:
        return frozenset()
    said = content_words(" ".join(words[head:len(words) - tail]))
    return frozenset(content_words(" ".join(words[:head] + words[len(words) - tail:])) - said)


_SENTENCE_END = re.compile(r"(?<=[a-z0-9)\]])[.!?](?:\s|$)")


def _cover(mine: frozenset[str], theirs: frozenset[str]) -> float:
    return len(mine & theirs) / len(mine) if mine else 1.0


def coverage(real: ToolText, other: ToolText, *, lead: bool = False, drop: frozenset[str] = frozenset()) -> float:
    """Share of the real tool's description words (beyond the words of its name, which every
    sibling tool of a server repeats, and its boilerplate ``drop``) that ``other``'s
    description also has; 1.0 when the real tool's description says nothing beyond them.
    ``lead``: the higher of that and the share of its first sentence's words (a name variant
    may keep only the summary)."""
    mine = _words_beyond_name(real, drop)
    if not mine:
        return 1.0
    theirs = content_words(other.description) - drop
    whole = _cover(mine, theirs)
    if not lead:
        return whole
    first = _SENTENCE_END.split(real.description, maxsplit=1)[0]
    summary = content_words(first) - {_stem(w) for w in tokenize(real.name)} - drop
    return max(whole, _cover(summary, theirs) if summary else 0.0)


#: A look-alike's description covers at least this share of its real tool's content words
#: (a name variant: of its whole description or of its first sentence): a variant keeps the
#: body, a paraphrase most of its words.
MIN_COVERAGE = 0.6
#: A paraphrase (a reworded name) needs a real tool that says at least this many words beyond
#: its name: on shorter descriptions ("Execute a SELECT query on the SQLite database") sibling
#: tools of one server (its INSERT twin) share as many words as a paraphrase does.
MIN_PARAPHRASE_WORDS = 4


#: Verbs that say "give me" and nothing else: a name that swaps one of them for another keeps
#: its meaning (``get_current_time``, ``fetch_current_time``).
RETRIEVAL_VERBS = frozenset(["get", "fetch", "retrieve", "obtain", "lookup", "find", "read", "load", "query", "show", "grab", "return"])


def is_lookalike(real: ToolText, other: ToolText, drop: frozenset[str] = frozenset()) -> bool:
    """Whether ``other`` reads as a variant of ``real`` (see the module docstring): a name
    variant covering its description (or first sentence), or a tool with exactly its
    parameters covering its description (:data:`MIN_PARAPHRASE_WORDS`); ``drop``: the real
    tool's boilerplate words (:func:`boilerplate`)."""
    if other.name == real.name:
        return False
    mine, theirs = set(tokenize(real.name)), set(tokenize(other.name))
    if mine and mine <= theirs:
        return coverage(real, other, lead=True, drop=drop) >= MIN_COVERAGE
    core = mine - RETRIEVAL_VERBS
    if core and core == theirs - RETRIEVAL_VERBS and mine != theirs and set(other.properties) == set(real.properties):
        return True
    return (len(_words_beyond_name(real, drop)) >= MIN_PARAPHRASE_WORDS and set(other.properties) == set(real.properties)
            and coverage(real, other, drop=drop) >= MIN_COVERAGE)


@functools.lru_cache(maxsize=4096)
def _family(real: ToolText, texts: tuple[ToolText, ...]) -> tuple[int, ...]:
    drop = boilerplate(real, texts)
    return tuple(i for i, t in enumerate(texts) if is_lookalike(real, t, drop))


def lookalike_indices(real: ToolText, texts: Sequence[ToolText]) -> tuple[int, ...]:
    """Positions (in list order) of ``real``'s look-alikes among ``texts``."""
    return _family(real, tuple(texts))


def lookalikes(real: Mapping[str, Any], tools: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The look-alikes of the real tool ``real`` among ``tools``, in list order."""
    texts = [ToolText.of(t) for t in tools]
    return [tools[i] for i in lookalike_indices(ToolText.of(real), texts)]
