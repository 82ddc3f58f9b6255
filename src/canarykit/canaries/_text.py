"""Deterministic text helpers for canary names and descriptions (no randomness, no LLM)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

#: The MCP / OpenAI tool-name charset and length.
NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
#: What MCP allows for a tool name (the spec's recommended charset and length).
MCP_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
MAX_NAME_LEN = 64

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\s*\n+\s*")

#: Verb synonyms for tool names (first token of a name, or moved to the front).
NAME_VERBS: Mapping[str, str] = {
    "get": "fetch",
    "fetch": "lookup",
    "lookup": "fetch",
    "retrieve": "fetch",
    "search": "find",
    "find": "locate",
    "read": "open",
    "open": "load",
    "load": "open",
    "write": "save",
    "save": "store",
    "query": "run",
    "run": "execute",
    "execute": "run",
    "convert": "transform",
    "transform": "convert",
    "list": "enumerate",
    "create": "make",
    "make": "build",
    "add": "insert",
    "insert": "add",
    "delete": "remove",
    "remove": "delete",
    "update": "modify",
    "edit": "modify",
    "modify": "update",
    "set": "assign",
    "calculate": "compute",
    "calc": "compute",
    "compute": "calculate",
    "evaluate": "compute",
    "eval": "compute",
    "post": "publish",
    "send": "dispatch",
    "publish": "post",
    "check": "verify",
    "verify": "check",
    "describe": "inspect",
    "inspect": "describe",
    "navigate": "browse",
    "browse": "navigate",
    "move": "relocate",
    "copy": "duplicate",
    "download": "pull",
    "upload": "push",
    "translate": "render",
    "summarize": "condense",
    "analyze": "examine",
    "count": "tally",
}

#: Noun synonyms for tool names.
NAME_NOUNS: Mapping[str, str] = {
    "web": "online",
    "weather": "conditions",
    "forecast": "outlook",
    "news": "headlines",
    "file": "document",
    "files": "documents",
    "directory": "folder",
    "dir": "folder",
    "units": "measures",
    "unit": "measure",
    "database": "sql",
    "db": "datastore",
    "sql": "statement",
    "table": "relation",
    "tables": "relations",
    "issue": "ticket",
    "issues": "tickets",
    "message": "note",
    "messages": "notes",
    "expression": "formula",
    "math": "arithmetic",
    "currency": "money",
    "price": "quote",
    "prices": "quotes",
    "stock": "equity",
    "user": "member",
    "users": "members",
    "channel": "room",
    "channels": "rooms",
    "page": "document",
    "records": "rows",
    "rows": "records",
    "data": "info",
    "info": "details",
    "results": "matches",
    "content": "text",
}

#: Verbs reworded where they act: at the start of a sentence or after "and"/"then"/"to".
DESCRIPTION_VERBS: Mapping[str, str] = {
    "get": "fetch",
    "gets": "fetches",
    "fetch": "retrieve",
    "fetches": "retrieves",
    "retrieve": "fetch",
    "retrieves": "fetches",
    "return": "provide",
    "returns": "provides",
    "search": "query",
    "searches": "queries",
    "find": "locate",
    "finds": "locates",
    "read": "load",
    "reads": "loads",
    "write": "save",
    "writes": "saves",
    "list": "enumerate",
    "lists": "enumerates",
    "create": "add",
    "creates": "adds",
    "delete": "remove",
    "deletes": "removes",
    "update": "modify",
    "updates": "modifies",
    "convert": "transform",
    "converts": "transforms",
    "calculate": "compute",
    "calculates": "computes",
    "compute": "calculate",
    "computes": "calculates",
    "evaluate": "compute",
    "evaluates": "computes",
    "run": "execute",
    "runs": "executes",
    "execute": "run",
    "executes": "runs",
    "send": "dispatch",
    "sends": "dispatches",
    "post": "publish",
    "posts": "publishes",
    "show": "display",
    "shows": "displays",
    "describe": "inspect",
    "describes": "inspects",
    "query": "interrogate",
    "queries": "interrogates",
    "open": "load",
    "opens": "loads",
    "navigate": "browse",
    "navigates": "browses",
}

#: Nouns and adjectives reworded anywhere (never inside hyphenated words).
DESCRIPTION_WORDS: Mapping[str, str] = {
    "current": "present",
    "latest": "most recent",
    "city": "town",
    "cities": "towns",
    "file": "document",
    "files": "documents",
    "directory": "folder",
    "directories": "folders",
    "information": "details",
    "result": "outcome",
    "results": "matches",
    "given": "specified",
    "specified": "given",
    "specific": "particular",
    "provided": "supplied",
    "forecast": "outlook",
    "article": "story",
    "articles": "stories",
    "expression": "formula",
    "value": "quantity",
    "values": "quantities",
    "contents": "content",
    "web": "internet",
    "repository": "repo",
    "message": "note",
    "messages": "notes",
}


def _word_re(words: Mapping[str, str], lead: str = "") -> re.Pattern[str]:
    alternation = "|".join(sorted((re.escape(w) for w in words), key=len, reverse=True))
    return re.compile(lead + r"(?<![\w-])(" + alternation + r")(?![\w-])", re.IGNORECASE)


_VERB_RE = _word_re(DESCRIPTION_VERBS, r"(?:^|(?<=\band )|(?<=\bthen )|(?<=\bto ))")
_DESC_RE = _word_re(DESCRIPTION_WORDS)

#: Authentication language that a prerequisite-blindness canary must never carry. A
#: sentence with a strong term is dropped; a bare "key" (e.g. "primary key") is reworded.
AUTH_RE = re.compile(
    r"auth(?:n|z|entic\w*|ori[sz]\w*)?|o-?auth\w*|tokens?|log-?\s?ins?|logs\s+in|logging\s+in|logged\s+in|"
    r"sign-?\s?ins?|credentials?|api[\s_-]?keys?|access[\s_-]?keys?|permissions?|passwords?|"
    r"secrets?|bearer|privileges?|privileged|unauthori[sz]ed|access[\s_-]?rights?",
    re.IGNORECASE,
)
_AUTH_WORD_RE = re.compile(r"\b(?:" + AUTH_RE.pattern + r")\b", re.IGNORECASE)
_KEY_WORD_RE = re.compile(r"\b(keys?)\b", re.IGNORECASE)


def split_name(name: str) -> list[str]:
    """Tokens of a tool name: split on ``_``/``-`` and camelCase, lower-cased."""
    parts: list[str] = []
    for chunk in re.split(r"[_\-]+", name):
        parts.extend(p.lower() for p in _CAMEL.split(chunk) if p)
    return parts


def humanize(name: str) -> str:
    """``get_forecast`` -> ``Get forecast`` (no final period)."""
    words = split_name(name) or [name]
    text = " ".join(words)
    return text[:1].upper() + text[1:]


def sentences(text: str) -> list[str]:
    """Split a description into sentences (on ``.!?`` + whitespace and on newlines)."""
    return [s.strip() for s in _SENTENCE_SPLIT.split(text.strip()) if s and s.strip()]


def end_sentence(text: str) -> str:
    """``text`` with a final period unless it already ends a sentence."""
    text = text.rstrip()
    if not text:
        return text
    return text if text[-1] in ".!?" else text + "."


def join_sentences(*parts: str) -> str:
    """Join non-empty parts as sentences separated by single spaces."""
    return " ".join(end_sentence(p) for p in parts if p and p.strip())


def append_suffix(description: str, suffix: str) -> str:
    """Append the pool's give-away suffix as a final sentence (nothing if empty)."""
    return join_sentences(description, suffix) if suffix.strip() else end_sentence(description)


def _keep_case(original: str, replacement: str) -> str:
    if original.isupper() and len(original) > 1:
        return replacement.upper()
    if original[:1].isupper():
        return replacement[:1].upper() + replacement[1:]
    return replacement


def _paraphrase_sentence(sentence: str) -> str:
    out = _VERB_RE.sub(
        lambda m: _keep_case(m.group(1), DESCRIPTION_VERBS[m.group(1).lower()]), sentence
    )
    return _DESC_RE.sub(
        lambda m: _keep_case(m.group(1), DESCRIPTION_WORDS[m.group(1).lower()]), out
    )


_ARTICLE_RE = re.compile(r"\b([Aa]) (?=(?:internet|outcome)\b)")


def paraphrase(text: str) -> str:
    """Deterministic paraphrase: sentence-leading verbs and a table of nouns reworded
    (one substitution per word, case preserved, hyphenated words left alone)."""
    out = " ".join(_paraphrase_sentence(s) for s in sentences(text))
    return _ARTICLE_RE.sub(lambda m: m.group(1) + "n ", out)


def paraphrase_name(name: str) -> str:
    """Paraphrase a tool name from verb/noun tables: ``web_search`` -> ``find_online``.

    A verb found after the first token is moved to the front (``news_search`` ->
    ``find_headlines``). Names the tables cannot change get a ``retrieve_`` prefix.
    """
    tokens = split_name(name)
    if not tokens:
        return "retrieve_" + name
    if tokens[0] not in NAME_VERBS:
        for i, tok in enumerate(tokens[1:], start=1):
            if tok in NAME_VERBS:
                tokens = [tok] + tokens[:i] + tokens[i + 1 :]
                break
    out: list[str] = []
    for i, tok in enumerate(tokens):
        if i == 0 and tok in NAME_VERBS:
            out.append(NAME_VERBS[tok])
        else:
            out.append(NAME_NOUNS.get(tok, tok))
    candidate = "_".join(out)
    if candidate.lower() == "_".join(split_name(name)):
        candidate = "retrieve_" + candidate
    return candidate


#: More verb synonyms for the semantic decoy's further name variants (the first one is
#: :data:`NAME_VERBS`'s); never a word a defect detector reads as a tell.
VERB_ALTERNATIVES: Mapping[str, tuple[str, ...]] = {
    "get": ("obtain", "retrieve", "lookup", "pull", "load", "read", "query"),
    "fetch": ("obtain", "retrieve", "get", "pull", "load", "read"),
    "retrieve": ("obtain", "get", "lookup", "pull", "load"),
    "lookup": ("find", "get", "obtain", "retrieve", "query"),
    "search": ("query", "lookup", "scan", "seek", "explore", "browse"),
    "find": ("search", "lookup", "seek", "scan", "query"),
    "list": ("show", "browse", "index", "view", "display", "scan"),
    "read": ("load", "view", "fetch", "get", "show", "display"),
    "open": ("read", "view", "fetch", "show"),
    "load": ("read", "fetch", "get", "open"),
    "query": ("execute", "select", "fetch", "ask", "lookup", "search"),
    "run": ("query", "execute", "perform", "invoke"),
    "execute": ("perform", "invoke", "apply"),
    "describe": ("explain", "show", "summarize", "detail", "outline", "examine"),
    "inspect": ("examine", "show", "view", "check"),
    "calculate": ("evaluate", "solve", "figure", "determine", "work_out", "reckon"),
    "calc": ("calculate", "evaluate", "solve", "figure", "determine"),
    "compute": ("evaluate", "derive", "figure", "determine", "work_out", "tally"),
    "evaluate": ("calculate", "solve", "figure", "determine"),
    "convert": ("translate", "change", "map", "recast", "express", "render"),
    "create": ("build", "add", "generate", "produce", "open", "start"),
    "make": ("create", "add", "generate", "produce"),
    "add": ("append", "attach", "create", "put"),
    "write": ("store", "put", "record", "output"),
    "save": ("write", "put", "record", "keep"),
    "delete": ("erase", "drop", "clear", "discard", "wipe", "unlink"),
    "remove": ("erase", "drop", "clear", "discard", "wipe"),
    "update": ("edit", "change", "amend", "revise", "adjust", "patch"),
    "edit": ("update", "change", "amend", "revise", "adjust"),
    "modify": ("edit", "change", "amend", "revise", "adjust"),
    "set": ("put", "apply", "define", "configure"),
    "send": ("post", "deliver", "transmit", "submit"),
    "post": ("send", "submit", "share", "put"),
    "check": ("test", "examine", "inspect", "review"),
    "show": ("display", "view", "print", "present"),
    "move": ("transfer", "shift", "rename", "migrate"),
    "navigate": ("visit", "open", "goto", "load"),
    "count": ("number", "total", "measure"),
}

#: More noun synonyms for further name variants.
NOUN_ALTERNATIVES: Mapping[str, tuple[str, ...]] = {
    "weather": ("climate", "meteo", "sky", "atmosphere"),
    "forecast": ("prediction", "projection", "prognosis", "outlook_days"),
    "air": ("atmosphere", "airborne"),
    "quality": ("grade", "level", "index"),
    "file": ("doc", "text", "item", "entry"),
    "files": ("docs", "items", "entries", "contents"),
    "directory": ("dir", "path", "location"),
    "web": ("internet", "net", "www"),
    "news": ("press", "stories", "articles", "reports"),
    "search": ("lookup", "query", "scan"),
    "database": ("db", "datastore", "records", "tables"),
    "table": ("schema", "dataset", "entity"),
    "statistics": ("stats", "summary", "figures", "metrics"),
    "units": ("measurements", "quantities", "scales"),
    "unit": ("measurement", "quantity", "scale"),
    "issue": ("bug", "item", "task", "problem"),
    "issues": ("bugs", "items", "tasks", "problems"),
    "message": ("post", "text", "memo"),
    "messages": ("posts", "texts", "memos"),
    "event": ("meeting", "appointment", "entry"),
    "events": ("meetings", "appointments", "entries"),
    "time": ("clock", "hour", "moment"),
    "repository": ("repo", "project", "codebase"),
    "repositories": ("repos", "projects", "codebases"),
}

#: Neutral tails that make a name variant when the synonym tables run out.
NAME_TAILS: tuple[str, ...] = ("service", "helper", "tool", "handler", "endpoint", "op", "task", "call")


def paraphrase_names(name: str, k: int) -> list[str]:
    """Up to ``k`` distinct paraphrases of a tool name, the first being
    :func:`paraphrase_name`'s; then other verb synonyms, other noun synonyms, both, and
    finally the first paraphrase with a neutral tail (``fetch_outlook_service``). None is
    the name itself."""
    first = sanitize_name(paraphrase_name(name)) or "retrieve_tool"
    out = [first]
    original = "_".join(split_name(name))
    tokens = split_name(name)
    if tokens and tokens[0] not in NAME_VERBS:
        for i, tok in enumerate(tokens[1:], start=1):
            if tok in NAME_VERBS:
                tokens = [tok] + tokens[:i] + tokens[i + 1 :]
                break
    verb = tokens[0] if tokens and tokens[0] in NAME_VERBS else None
    rest = tokens[1:] if verb else tokens
    verbs = [NAME_VERBS[verb], *VERB_ALTERNATIVES.get(verb, ())] if verb else []
    nouns = [[NAME_NOUNS.get(t, t), *NOUN_ALTERNATIVES.get(t, ())] for t in rest]

    def add(parts: list[str]) -> None:
        cand = sanitize_name("_".join(p for p in parts if p))
        if cand and cand.lower() != original and cand not in out:
            out.append(cand)

    for v in verbs[1:]:
        add([v, *(n[0] for n in nouns)])
    for j, opts in enumerate(nouns):
        for alt in opts[1:]:
            add([*verbs[:1], *(o[0] for o in nouns[:j]), alt, *(o[0] for o in nouns[j + 1 :])])
    for v in verbs[1:]:
        for j, opts in enumerate(nouns):
            for alt in opts[1:]:
                add([v, *(o[0] for o in nouns[:j]), alt, *(o[0] for o in nouns[j + 1 :])])
    for tail in NAME_TAILS:
        add([first, tail])
    return out[:k]


def mentions_auth(text: str) -> bool:
    """True when ``text`` carries authentication language (including a bare "key")."""
    flat = text.replace("_", " ")
    return bool(_AUTH_WORD_RE.search(flat) or _KEY_WORD_RE.search(flat))


def scrub_auth(text: str) -> str:
    """Reword any authentication word left (``key`` -> ``identifier``, others -> ``resource``)."""
    text = _AUTH_WORD_RE.sub("resource", text)
    return _KEY_WORD_RE.sub(
        lambda m: _keep_case(
            m.group(1), "identifiers" if m.group(1).lower() == "keys" else "identifier"
        ),
        text,
    )


def strip_auth_sentences(text: str) -> str:
    """Drop every sentence with strong authentication language; reword a bare "key"."""
    kept = [s for s in sentences(text) if not _AUTH_WORD_RE.search(s.replace("_", " "))]
    return scrub_auth(" ".join(kept))


def scrub_auth_name(name: str) -> str:
    """Replace name tokens that carry authentication language (``get_token`` -> ``get_resource``)."""
    tokens = re.split(r"([_\-]+)", name)
    return "".join(
        t
        if re.fullmatch(r"[_\-]+", t) or not mentions_auth(" ".join(split_name(t)))
        else "resource"
        for t in tokens
    )


def slug(text: str, max_len: int = 24) -> str:
    """Lower-case ``[a-z0-9_]`` slug of ``text``, cut at a word boundary (may be empty)."""
    s = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
    if len(s) <= max_len:
        return s
    cut = s[: max_len + 1]
    return (cut[: cut.rfind("_")] if "_" in cut else s[:max_len]).rstrip("_")


def sanitize_name(name: str) -> str:
    """Map arbitrary text to the allowed tool-name charset (may return ``""``)."""
    s = re.sub(r"[^a-zA-Z0-9_-]+", "_", name.strip())
    s = re.sub(r"_+", "_", s).strip("_-")
    return fit_name(s) if s else ""


def tell_name(base: str, prefix: str = "", tail: str = "") -> str:
    """``<prefix>_<base>_<tail>`` within 64 characters: a long ``base`` is shortened with a
    hash of itself (never of the prefix or tail), so a canary and its twin, whose names differ
    in the part that carries the tell, keep the same shortened base."""
    head = f"{prefix}_" if prefix else ""
    end = f"_{tail}" if tail else ""
    if len(head) + len(base) + len(end) <= MAX_NAME_LEN:
        return head + base + end
    digest = hashlib.sha256(base.encode("utf-8")).hexdigest()[:8]
    # the same short base (37 characters) whatever the prefix or tail (26 are left for them)
    return fit_name(head + base[:28].rstrip("_-") + "_" + digest + end)


def fit_name(name: str) -> str:
    """Shorten ``name`` to 64 characters, keeping it unique with a short content hash."""
    if len(name) <= MAX_NAME_LEN:
        return name
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
    return name[: MAX_NAME_LEN - 9].rstrip("_-") + "_" + digest
