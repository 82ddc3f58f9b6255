"""``canarykit audit-twins POOL``: does every twin differ from its canary in the tell only?

For each (canary, twin) pair of a pool file, every span in which the two differ: in the name,
the description, the input schema, the title (and the annotations' title), the output schema
and the other annotations. Each span is checked against the type's declared tell:

- **name**: only the record's declared name part (``tell.name``: a canary's
  ``advanced``, its twin's ``standard``) may differ, and only in its declared place
  (:data:`~._banks.NAME_PARTS`: a prefix, or a tail); a type whose name is not its tell
  (semantic decoy, parameter trap) has equal names;
- **description**: every differing word lies inside a declared description fragment of its
  side (``tell.description``: the canary's phrasing of the property, a mirage's claim; the
  twin's phrasing of the healthy value); punctuation next to one too;
- **title**: every differing word is a word of the side's declared tell;
- **inputSchema**: equal up to the top-level title that names the tool, except a parameter
  trap's canary, which is its twin's schema plus one required credential (its behaviour's
  ``parameter``), and a granularity trap's, which takes no parameters where its twin takes
  the real tool's;
- **outputSchema**, **annotations** (but their title): equal.

The declared tells are checked too: a name part must be the bank entry's (``wording``), and
each pair says whether its phrasing is the entry's or a configured one. The command prints
one line per span and exits 1 when any span is not a declared tell (2 for a bad file).
"""

from __future__ import annotations

import copy
import difflib
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from ._banks import NAME_PARTS, OLD_DATE, Entry, entry_by_id, style_of
from ._pool import load_pool_document

_TOKEN = re.compile(r"\w+|[^\w\s]")
_NAME_TOKEN = re.compile(r"[^_\-]+")


@dataclass(frozen=True)
class Span:
    """One place where a twin differs from its canary: the field, each side's text there,
    and whether it is a declared tell (else ``why`` not)."""

    field: str
    canary: str
    twin: str
    declared: bool
    why: str = ""


@dataclass
class PairAudit:
    """The spans of one (canary, twin) pair, and any problem with its declared tell."""

    canary_id: str
    type: str
    wording: str
    spans: list[Span] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    phrasing: str = "bank"

    @property
    def ok(self) -> bool:
        return not self.problems and all(s.declared for s in self.spans)


# --------------------------------------------------------------------------- text spans


def _tokens(text: str, pattern: re.Pattern[str] = _TOKEN) -> list[tuple[str, int, int]]:
    return [(m.group(0), m.start(), m.end()) for m in pattern.finditer(text)]


def _covered(text: str, fragments: Sequence[str]) -> list[bool]:
    """Per character of ``text``: inside an occurrence of a declared fragment."""
    mask = [False] * len(text)
    for frag in fragments:
        frag = frag.strip()
        start = text.find(frag) if frag else -1
        while start >= 0:
            for i in range(start, start + len(frag)):
                mask[i] = True
            start = text.find(frag, start + 1)
    return mask


def _inside(tokens: Sequence[tuple[str, int, int]], mask: Sequence[bool]) -> bool:
    """Every word token lies in a declared fragment; punctuation within two characters of one."""
    for tok, a, b in tokens:
        if all(mask[a:b]):
            continue
        if not tok[0].isalnum() and any(mask[max(0, a - 2):min(len(mask), b + 2)]):
            continue
        return False
    return True


def _text_spans(where: str, canary: str, twin: str, c_tell: Sequence[str], t_tell: Sequence[str],
                pattern: re.Pattern[str] = _TOKEN) -> list[Span]:
    """The differing spans of two texts, each declared when both sides lie in their tells."""
    a, b = _tokens(canary, pattern), _tokens(twin, pattern)
    c_mask, t_mask = _covered(canary, c_tell), _covered(twin, t_tell)
    out = []
    matcher = difflib.SequenceMatcher(None, [t[0] for t in a], [t[0] for t in b], autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        ca = canary[a[i1][1]:a[i2 - 1][2]] if i2 > i1 else ""
        tb = twin[b[j1][1]:b[j2 - 1][2]] if j2 > j1 else ""
        ok_c, ok_t = _inside(a[i1:i2], c_mask), _inside(b[j1:j2], t_mask)
        why = "" if ok_c and ok_t else ("the canary's side" if not ok_c else "the twin's side") + " is not in its declared tell"
        out.append(Span(where, ca, tb, ok_c and ok_t, why))
    return out


def _name_spans(canary: Mapping[str, Any], twin: Mapping[str, Any]) -> list[Span]:
    """The name's spans: the declared name parts, in their declared place."""
    c_name, t_name = str(canary["name"]), str(twin["name"])
    c_part, t_part = str(canary["tell"]["name"]), str(twin["tell"]["name"])
    place = NAME_PARTS.get(str(canary["type"]))

    def placed(name: str, part: str) -> list[str]:
        if not part:
            return []
        if place == "prefix" and name.startswith(part + "_"):
            return [name[: len(part)]]
        if place == "tail" and name.endswith("_" + part):
            return [name[-len(part):]]
        return []

    spans = _text_spans("name", c_name, t_name, placed(c_name, c_part), placed(t_name, t_part), _NAME_TOKEN)
    return [s if s.declared or place is not None else Span(s.field, s.canary, s.twin, False,
                                                          f"a {canary['type']} keeps its name") for s in spans]


# --------------------------------------------------------------------------- schemas


def _retitled(schema: Any, name: str) -> Any:
    out = copy.deepcopy(schema)
    if isinstance(out, dict) and isinstance(out.get("title"), str):
        out["title"] = out["title"].replace(name, "<name>")
    if isinstance(out, dict) and out.get("required") == []:
        del out["required"]
    return out


def _schema_spans(canary: Mapping[str, Any], twin: Mapping[str, Any]) -> list[Span]:
    c = _retitled(canary["inputSchema"], str(canary["name"]))
    t = _retitled(twin["inputSchema"], str(twin["name"]))
    if c == t:
        return []
    kind = canary["type"]
    c_props, t_props = sorted(c.get("properties", {})), sorted(t.get("properties", {}))
    shown = (f"properties {c_props}", f"properties {t_props}")
    if kind == "parameter_trap":
        cred = str(canary.get("behaviour", {}).get("parameter", ""))
        stripped = copy.deepcopy(c)
        stripped.get("properties", {}).pop(cred, None)
        if isinstance(stripped.get("required"), list):
            stripped["required"] = [r for r in stripped["required"] if r != cred]
            if not stripped["required"]:
                del stripped["required"]
        if stripped.get("properties") == {} and "properties" not in t:  # the real tool took no parameters
            del stripped["properties"]
        ok = bool(cred) and cred in c.get("required", []) and stripped == t
        return [Span("inputSchema", f"required {cred}", "", ok, "" if ok else "more than the credential differs")]
    if kind == "granularity_trap":  # no parameters against the real tool's (any: the paper fit's tools with none)
        ok = not c.get("properties") and c.get("additionalProperties") is False
        return [Span("inputSchema", *shown, ok, "" if ok else "the canary takes parameters")]
    return [Span("inputSchema", *shown, False, f"a {kind} keeps its schema")]


# --------------------------------------------------------------------------- a pair


def _words(texts: Sequence[str]) -> set[str]:
    return {w.lower() for t in texts for w in re.findall(r"[A-Za-z0-9]+", t)}


def _title_spans(where: str, c_title: Any, t_title: Any, canary: Mapping[str, Any], twin: Mapping[str, Any]) -> list[Span]:
    if c_title == t_title:
        return []
    if not isinstance(c_title, str) or not isinstance(t_title, str):
        return [Span(where, str(c_title), str(t_title), False, "one side has no title")]
    c_words = _words([canary["tell"]["name"], *canary["tell"]["description"]])
    t_words = _words([twin["tell"]["name"], *twin["tell"]["description"]])
    out = []
    for s in _text_spans(where, c_title, t_title, [], []):
        ok = _words([s.canary]) <= c_words and _words([s.twin]) <= t_words
        out.append(Span(where, s.canary, s.twin, ok, "" if ok else "a title word outside the declared tell"))
    return out


def _bank_problems(canary: Mapping[str, Any], twin: Mapping[str, Any], wording: Entry | None) -> list[str]:
    """The declared name parts against the bank entry's (a name part is always the entry's)."""
    if wording is None:
        return [f"wording {canary.get('wording')!r} is no bank entry"]
    out = []
    kind = str(canary["type"])
    if kind in NAME_PARTS:
        want_c = re.escape(wording.canary_name).replace(re.escape("{case}"), "[a-z0-9_]+")
        if not re.fullmatch(want_c, str(canary["tell"]["name"])):
            out.append(f"the canary's name part {canary['tell']['name']!r} is not entry {wording.id}'s "
                       f"({wording.canary_name!r})")
        if twin["tell"]["name"] != wording.twin_name:
            out.append(f"the twin's name part {twin['tell']['name']!r} is not entry {wording.id}'s "
                       f"({wording.twin_name!r})")
    return out


def _phrasing_source(canary: Mapping[str, Any], wording: Entry | None) -> str:
    if wording is None:
        return "unknown"
    said = canary["tell"]["description"]
    style = style_of(str(canary.get("pool", "standard")), "fitted")
    want = wording.phrasing(style).replace("{parameter}", wording.parameter)
    for key in ("year", "version", "month"):
        want = want.replace("{" + key + "}", str(OLD_DATE[key]))
    label = str(canary.get("behaviour", {}).get("special_case", ""))
    return "bank" if said and said[-1] == want.replace("{special_case}", label) else "configured"


def audit_pair(canary: Mapping[str, Any], twin: Mapping[str, Any]) -> PairAudit:
    """Every span in which ``twin`` differs from ``canary``, each checked against the tell."""
    wid = str(canary.get("wording", ""))
    try:
        wording: Entry | None = entry_by_id(wid)
    except KeyError:
        wording = None
    out = PairAudit(str(canary["id"]), str(canary["type"]), wid)
    out.spans += _name_spans(canary, twin)
    out.spans += _text_spans("description", str(canary["description"]), str(twin["description"]),
                             canary["tell"]["description"], twin["tell"]["description"])
    out.spans += _schema_spans(canary, twin)
    out.spans += _title_spans("title", canary.get("title"), twin.get("title"), canary, twin)
    c_ann, t_ann = dict(canary.get("annotations") or {}), dict(twin.get("annotations") or {})
    out.spans += _title_spans("annotations.title", c_ann.pop("title", None), t_ann.pop("title", None), canary, twin)
    for where, a, b in (("annotations", c_ann, t_ann), ("outputSchema", canary.get("outputSchema"), twin.get("outputSchema"))):
        if a != b:
            out.spans.append(Span(where, str(a), str(b), False, f"the {where} differ"))
    out.problems += _bank_problems(canary, twin, wording)
    out.phrasing = _phrasing_source(canary, wording)
    return out


def audit_pool(document: Mapping[str, Any], source: str = "<pool>") -> list[PairAudit]:
    """The audit of every (canary, twin) pair of a pool document (:func:`~._pool.load_pool_document`)."""
    twins = {str(t["control_of"]): t for t in document.get("controls", [])}
    if not twins:
        raise InputError(source, "controls", "this pool has no twins: generate it with --controls (the workflow's pools have them)")
    out = []
    for i, canary in enumerate(document["canaries"]):
        twin = twins.get(str(canary["id"]))
        if twin is None:
            raise InputError(source, f"canaries[{i}] ({canary['id']})", "has no twin in controls")
        for rec, where in ((canary, f"canaries[{i}]"), (twin, f"controls (twin of {canary['id']})")):
            if "tell" not in rec or "wording" not in rec:
                raise InputError(source, f"{where}.tell", "missing: a pool written before twins declared their tells "
                                 "(format 3 or older); regenerate it")
        out.append(audit_pair(canary, twin))
    return out


def _quote(text: str, limit: int = 90) -> str:
    text = text if len(text) <= limit else text[: limit - 3] + "..."
    return repr(text) if text else "-"


def audit_lines(audits: Sequence[PairAudit], source: str) -> list[str]:
    """What ``audit-twins`` prints: a summary line, then one line per span (and problem)."""
    spans = sum(len(a.spans) for a in audits)
    bad = sum(1 for a in audits for s in a.spans if not s.declared) + sum(len(a.problems) for a in audits)
    configured = sum(1 for a in audits if a.phrasing != "bank")
    lines = [f"audit-twins: {source}: {len(audits)} pairs, {spans} differing spans, {bad} not a declared tell"
             + (f"; {configured} pairs with a configured phrasing" if configured else "")]
    for a in audits:
        head = f"{a.canary_id} [{a.wording}]"
        for s in a.spans:
            mark = "tell" if s.declared else f"NOT THE TELL: {s.why}"
            lines.append(f"{head} {s.field}: {_quote(s.canary)} | {_quote(s.twin)}  ({mark})")
        if not a.spans:
            lines.append(f"{head} no difference in text  (tell: behaviour only, selection_visible false)")
        lines.extend(f"{head} tell: {p}  (NOT THE TELL)" for p in a.problems)
    return lines


def audit_command(pool_path: str, *, quiet: bool = False) -> int:
    """``canarykit audit-twins POOL [--quiet]``: print the audit (``quiet``: the summary and
    the spans that are not a declared tell only); 1 when a span is not a declared tell."""
    document = load_pool_document(pool_path)
    audits = audit_pool(document, pool_path)
    lines = audit_lines(audits, pool_path)
    shown = [lines[0], *(ln for ln in lines[1:] if "NOT THE TELL" in ln)] if quiet else lines
    print("\n".join(shown), file=sys.stdout)
    return 0 if all(a.ok for a in audits) else 1
