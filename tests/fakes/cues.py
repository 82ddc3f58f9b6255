"""The text cues of a defect, as an agent that reads only text could detect them
(design.md, section 3), written independently of the reference agents' detectors: every
canary must show its type's cue, and no twin may show any cue its real tool does not.

A tool is read as its name (``_`` read as a space), its description and its input schema
(the names of its required properties, and whether it has properties at all).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

#: The environment's year (canarykit.tools.TODAY): a year before it is an old date.
ENV_YEAR = 2026

_OLD_YEAR = r"(?:19\d\d|20[01]\d|202[0-5])"

#: Per defect, the patterns that show it in a tool's name or description.
TEXT_CUES: Mapping[str, tuple[re.Pattern[str], ...]] = {
    "stale": tuple(re.compile(p, re.I) for p in (
        r"\bcach(?:e|ed|es|ing)\b", r"\bnightly\b", r"\bsync(?:s|ed|ing)?\b", r"\bmirror(?:s|ed)?\b",
        r"\blag(?:s|ged|ging)?\b", r"\bstale\b", r"\bdelayed\b", r"\barchived?\b", r"\bsnapshots?\b",
        r"\bas of\b[^.]{0,20}" + _OLD_YEAR, r"\bmay not reflect\b", r"\breplica(?:s|ted)?\b", r"\btrails?\b",
        r"\bonce (?:a|each|every) (?:day|night)\b", r"\bevery night\b", r"\bup to (?:a day|24 hours)\b",
        # held-back phrasings (issue 27): this reader checks the banks, it is no known-answer instrument
        r"\bovernight\b", r"\bbatch\b", r"\bdaily\b", r"\bonce[- ](?:a|per|each|every)[- ](?:day|night)\b",
        r"\beach (?:morning|night|evening)\b", r"\bmiss changes\b", r"\bday[- ]old\b", r"\bnot yet included\b",
    )),
    "old_date": (re.compile(r"(?<![\w.])" + _OLD_YEAR + r"(?!\w)"),),
    "credential": (re.compile(r"\b(?:requires?|needs?|must include|pass|send|authenticate)\b[^.]{0,40}"
                              r"\b(?:api[ _]?key|key|token|secret|credentials?|password)\b", re.I),),
    # a privileged scope, not its breadth: a twin keeps its canary's "across all accounts"
    "privileged_scope": tuple(re.compile(p, re.I) for p in (
        r"\bprivate\b", r"\binternal\b", r"\badmin\b", r"\brestricted\b", r"\bprivileged\b", r"\benterprise\b",
        r"\bconfidential\b", r"\bsuperuser\b", r"\bstaff\b", r"\bowner\b",
        r"\bexecutive\b", r"\blocked\b", r"\bprotected\b", r"\bsensitive\b", r"\boperator\b", r"\broot-level\b",
        r"\bclassified\b",
    )),
    "hard_coded": tuple(re.compile(p, re.I) for p in (
        r"\bhard-?coded\b", r"\bonly\b", r"\bsingle case\b", r"\btakes no parameters\b", r"\bdedicated endpoint for\b",
    )),
    "inflated_claim": tuple(re.compile(p, re.I) for p in (
        r"\badvanced\b", r"\bexpert\b", r"\bresearch[- ]grade\b", r"\bstate-of-the-art\b", r"\bnext-generation\b",
        r"\bunmatched\b", r"\bprofessional-grade\b", r"\bhardest\b", r"\bbeyond the standard\b", r"\boutperforms?\b",
        r"\bsuperior\b", r"\bmore thorough\b", r"\bsharper precision\b", r"\bextended precision\b",
        r"\bextended coverage\b", r"\boptimized\b", r"\bpremium\b", r"\benhanced\b", r"\bultra\b", r"\bpro\b",
        r"\bupdated engine\b", r"\brefined\b", r"\badditional checks\b", r"\btuned for\b",
        r"\bflawless(?:ly)?\b", r"\bnear-perfect\b", r"\bzero errors\b", r"\bmost capable\b", r"\bbeat(?:s|ing)?\b",
        r"\brivals?\b", r"\btop-tier\b", r"\b\w+-leading\b", r"\bno other tool\b", r"\b\w+-grade\b", r"\bnewer\b",
        r"\bextra\b", r"\bsecond-generation\b", r"\bextends? coverage\b", r"\badditional\b", r"\bharder\b",
        r"\brefinements?\b", r"\brevised\b", r"\bbroader\b", r"\bwider\b", r"\btuned\b",
    )),
}

#: The cue each canary type must show.
TYPE_CUE = {
    "semantic_decoy": "stale",
    "temporal_decoy": "old_date",
    "parameter_trap": "credential",
    "prerequisite_blindness": "privileged_scope",
    "granularity_trap": "hard_coded",
    "capability_mirage": "inflated_claim",
}

#: Required input properties that name a credential.
CREDENTIAL_PROPERTY = re.compile(r"(?:^|_)(?:api_?key|apikey|access_token|auth_token|token|client_secret|secret|"
                                 r"password|credentials?)(?:$|_)|[a-z]_key$", re.I)


def text_of(tool: Mapping[str, Any]) -> str:
    """What a model reads of a tool, as one text: its name (``_`` as spaces) and description."""
    return " ".join(f"{str(tool['name']).replace('_', ' ')}. {tool.get('description') or ''}".split())


def cues(tool: Mapping[str, Any]) -> Counter[str]:
    """Every cue the tool shows, as ``<defect>:<matched text>`` counts."""
    text = text_of(tool)
    out: Counter[str] = Counter()
    for defect, patterns in TEXT_CUES.items():
        for p in patterns:
            out.update(f"{defect}:{m.group(0).lower()}" for m in p.finditer(text))
    schema = tool.get("inputSchema") or {}
    required = [r for r in schema.get("required", []) if isinstance(r, str)]
    out.update(f"credential:property {r}" for r in required if CREDENTIAL_PROPERTY.search(r))
    if not schema.get("properties"):
        out["hard_coded:no properties"] += 1
    return out


def defects(tool: Mapping[str, Any], real: Mapping[str, Any]) -> set[str]:
    """The defects whose cues ``tool`` shows beyond those its real tool shows itself."""
    return {key.split(":", 1)[0] for key in cues(tool) - cues(real)}
