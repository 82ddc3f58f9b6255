"""What a text-only agent reads about a tool: the defects its text shows, and whether a
result reads as defective.

**Defects** (:func:`defects`): for each canary type, the cues of its property (design note,
section 3), read from the name, the description and the schema, and named by the type whose
property it is (``semantic_decoy``: stale data; ``parameter_trap``: a required credential
argument; ``capability_mirage``: an inflated claim; ``prerequisite_blindness``: a privileged
scope; ``temporal_decoy``: an old date; ``granularity_trap``: a hard-coded case). Given the
real tool, only cues the real tool's own text lacks count: a description that already says
"requires an access token" does not make every variant of it a parameter trap; a look-alike
without the parameters its real tool takes is hard-coded whatever it says. A "snapshot" that
dates the data to an old year ("Snapshot release 2023.1") is read as the old date, not as
staleness; a date that is a hard-coded case's own value does not date the data.

A privileged scope is read from privilege words (private, internal, an administrator's, an
owner's, ...), never from breadth alone: "public resources of every account" need no rights,
and a twin keeps its canary's breadth. A look-alike hard-coded to one case is named after its
case: its name's words are not read as a scope, a claim or a date.

The cues are word and phrase patterns: the name forms, schema forms and years are read
exactly; free-text phrasings generalize only as far as the vocabulary below reaches (see
tests/test_agents_reference_text.py for the phrasings it is held to). They were written and
tuned against the development entries of the wording banks only (``canarykit.canaries``,
entries 01-08 of each type); the default study and the known-answer pools use the held-back
entries, written by someone who never saw these patterns.

**Results** (:func:`result_defective`): an error, a 401 or missing-key answer, a cached /
approximate / snapshot / preview marker, or an answer that cannot be about what was asked
(a call that had to leave the step's arguments out, answered without them).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from ..store.jsonio import safe_json_loads
from ..tools import TODAY
from .reference_text import ToolText, tokenize

#: The environment's year: a year before it, in a tool's name or description, dates its data.
ENV_YEAR = TODAY.year

def _rx(*patterns: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)


_STALE = _rx(
    r"\b(?:once|twice)[- ](?:a|an|each|every|per)[- ](?:day|night|week|month)\b",
    r"\b(?:each|every|per) (?:night|morning|evening)\b", r"\bup to (?:a|one) (?:day|night|week)\b",
    r"\b(?:up to|about|roughly|around) \d+ hours\b",
    r"\b(?:a|one|two|\d+)[- ](?:day|hour|night|week)s?[- ](?:old|late|delay(?:ed)?|lag(?:ged)?|behind|stale)\b",
    r"\bday[- ]old\b", r"\bsync\w*\b", r"\breplicat\w*\b", r"\bbatch[- ]?(?:loaded|updated|processed|imported|jobs?)\b",
    r"\bpre[- ]?fetched\b",
    r"\b(?:may|might|can|could|will) (?:miss|omit|not (?:show|include|reflect|have|contain)) (?:\w+ ){0,3}"
    r"(?:changes|updates|edits|events|entries|records|revisions)\b",
    r"\b(?:recent|latest|today's|same[- ]day|new) (?:changes|updates|edits|entries|records|events) (?:may|might|can|"
    r"could|will|do) (?:not|be missing|lag|take)\b",
    r"\bcach(?:e|ed|es|ing)\b", r"\bnightly\b", r"\bsync(?:ed|s|hroni[sz]ed)?\b", r"\bmirror(?:ed|s)?\b",
    r"\blag(?:s|ged|ging)?\b", r"\bstale\b", r"\bdelayed\b", r"\barchived?\b", r"\barchives\b",
    r"\bmay not reflect\b", r"\bout[- ]of[- ]date\b", r"\boutdated\b", r"\breplica(?:ted)?\b",
    r"\bnot (?:in )?real[- ]time\b", r"\b(?:hours?|days?|weeks?) old\b",
    r"\b(?:hours?|days?|weeks?) behind\b",
    r"\b(?:refreshed|updated|exported|rebuilt|copied) (?:only )?(?:once a |every )?(?:day|week|month|night|"
    r"nightly|daily|weekly|monthly)\b",
    r"\b(?:daily|weekly|monthly|periodic|overnight|batch(?:ed)?) (?:export|copy|dump|refresh|import|batch|"
    r"update|extract)\b",
    r"\bas of (?:yesterday|last (?:night|week|month)|the (?:last|previous) (?:sync|export|refresh|import))\b",
    r"\bprevious day'?s?\b", r"\byesterday'?s?\b", r"\bsnapshot\b", r"\bbuffered\b",
    r"\b(?:with|after) (?:a|some) delay\b",
    r"\bdelayed (?:by|data|results|feeds?|figures|values|updates?)\b",
    r"\b(?:data|results|figures|values) (?:is |are )?delayed\b",
    r"\bpoll(?:ed|s|ing)? (?:hourly|daily|weekly|every|once)\b",
    r"\b(?:hourly|daily|weekly|monthly|nightly|quarterly) (?:updates?|refresh(?:es)?|imports?|exports?|"
    r"batch(?:es)?|copies|copy|sync)\b",
    r"\b(?:updated|refreshed|synced|pulled|exported|imported|copied|loaded) (?:hourly|daily|weekly|monthly|"
    r"nightly|quarterly)\b", r"\bmay (?:be )?(?:missing|incomplete|out of date|old|behind|lag)\b",
    r"\bsecondary (?:source|copy|store|feed)\b",
    r"\b(?:dump|copy|export|extract) (?:taken|made|from) (?:at|on|last|yesterday|earlier)\b",
    r"\b(?:minutes|hours|days|weeks) (?:late|ago|behind|old)\b", r"\bend[- ]of[- ]day\b",
    r"\bprevious (?:close|closing|session|day|run|import|export)\b", r"\blast successful\b",
    r"\b(?:some (?:time|while)|a while|long) ago\b", r"\bprecomputed\b", r"\brecycled\b",
    r"\bnow and then\b", r"\bstored (?:results|answers|responses|values)\b",
    r"\b(?:compiled|built|collected) (?:some time|a while|long) ago\b",
    r"\b(?:offline|backup|stored|local|saved|static|earlier|old) (?:copy|copies|store|dump|export)\b",
    r"\bcop(?:y|ies) (?:made|taken|refreshed)\b", r"\bperiodically\b",
    r"\bbehind (?:the )?(?:live|source|real)\b",
    r"\bnot kept (?:in step|in sync|current|up[- ]to[- ]date)\b",
    r"\blast (?:import|export|refresh|crawl|sync|dump)\b", r"\btrail(?:s|ing)?\b",
    r"\b(?:last|previous) (?:month|week|night|quarter)'?s?\b", r"\bovernight\b",
    r"\bnot (?:live|current|fresh)\b", r"\bevery (?:few|couple of|\d+) (?:hours|days|weeks)\b",
    r"\brefreshed (?:every|each|once)\b",
)
#: Stale cues that date the data: read as the old date when the text has one.
_DATING = re.compile(r"snapshot", re.IGNORECASE)
#: A year that dates something: after a month or a dating word, before a version or data word,
#: as a version (``2023.1``) or a date (``2023-03-31``). A bare number (``2000 rows``) is not one.
_YEAR = _rx(
    r"\bbased on (?:the )?((?:19|20)\d\d)\b",
    r"\b(?:on|the) ((?:19|20)\d\d) (?:text|terminology|vocabulary|corpus|database|data)\b",
    r"\b((?:19|20)\d\d) (?:year[- ]end|close|closing|feed)\b",
    r"\bthe ((?:19|20)\d\d) (?:\w+ )?(?:feed|close|data|dataset|list|edition|release|snapshot|timetable|"
    r"catalogue|index|prices|figures|schedule|census)\b",
    r"\b((?:19|20)\d\d) (?:schedules?|prices|figures|statistics|rates|listings|timetables?|catalogues?|"
    r"catalogs?|tables|values|numbers|census|survey|reports?)\b",
    r"\b(?:early|mid|late|spring|summer|autumn|fall|winter|end of|start of)[- ]((?:19|20)\d\d)\b",
    r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+(?:\d{1,2},?\s+)?((?:19|"
    r"20)\d\d)\b",
    r"\b(?:in|as of|since|from|release|released|version|v|data|edition|snapshot|year|until|through|dated|"
    r"fiscal|fy|vintage|q[1-4]|copyright|updated|built|frozen|archived)\s+((?:19|20)\d\d)\b",
    r"(?<![\w.])((?:19|20)\d\d)(?:\.\d+\b|-\d\d\b|[\s-]+(?:release|edition|data|snapshot|dataset|version|"
    r"figures|records|catalog(?:ue)?|archive|export|lts|era|vintage|build|series|line|numbers|rates|prices))",
    r"\bv((?:19|20)\d\d)(?:\.\d+)?\b", r"\(((?:19|20)\d\d)\)",
    r"\b(?:during|circa|around|throughout|before|pre|as at|as published in|published|captured|compiled|collected|"
    r"gathered|taken|recorded|issued|dated|frozen|fixed|locked|pinned|cut|set|last (?:updated|refreshed|synced))"
    r"(?: in| on| at)?\s+((?:19|20)\d\d)\b",
)
#: Where a description states a hard-coded case (its values are the case, not a date of the data).
_CASE = _rx(
    r"\bfor [^.;]{1,60}? only\b", r"\bdedicated (?:endpoint|tool|function|route) for [^.;]*",
    r"\bhard[- ]?coded to [^.;]*",
)
#: An argument's value (``time_min=2025-06-30``): a value of a call, never the date of the data.
_ASSIGNED = re.compile(r"\b\w+=[^\s,;]+")
#: A full calendar date (``2025-06-30``, with a time): in a hard-coded tool, its case's value.
_FULL_DATE = re.compile(r"\b(?:19|20)\d\d-\d\d-\d\d(?:[T ][\d:.]+Z?)?\b")
_OLD_WORDS = _rx(
    r"\b(?:last|previous|prior) year'?s?\b",
)
_CREDENTIAL_DESC = _rx(
    r"\b(?:requires?|required|needs?|must (?:include|provide|supply|pass|send|carry|have)|only works with|"
    r"provide|supply|authenticate (?:with|using|by)|sign (?:in|requests) with|include|pass|"
    r"send)\b[^.;]{0,40}?\b(?:api[ _-]?keys?|apikey|(?:access|auth(?:entication|orization)?|bearer|session|"
    r"refresh|oauth|personal)[ _-]?tokens?|tokens?|client[ _-]?secrets?|secrets?|passwords?|credentials?|"
    r"license[ _-]?keys?|(?:valid|your) keys?)\b",
    r"\b(?:api[ _-]?keys?|access[ _-]?tokens?|tokens?|credentials?|client[ _-]?secrets?|"
    r"passwords?)\b[^.;]{0,20}\b(?:is|are|must be) (?:required|supplied|provided|needed|included|passed|"
    r"sent)\b",
)
#: Tokens that page through results are not credentials.
_NOT_CREDENTIAL = re.compile(r"\b(?:page|pagination|paging|cursor|continuation|next|sync|csrf)\b", re.IGNORECASE)
_KEY_WORDS = frozenset({"api", "access", "secret", "private", "license", "licence", "service", "auth", "signing",
                        "developer", "subscription", "app", "client", "master", "encryption"})
#: Keys that index data, not credentials (``primary_key``, ``sort_key``, ``object_key``).
_DATA_KEYS = frozenset({"primary", "foreign", "sort", "partition", "object", "cache", "idempotency", "dedup", "dedupe",
                        "lookup", "row", "record", "item", "map", "dict", "hash", "composite", "bucket", "group", "order",
                        "join", "index", "entry", "field", "column", "table", "node", "message", "event", "file", "s3",
                        "registry", "config", "setting", "translation", "i18n", "label", "tag", "unique", "natural",
                        "surrogate", "routing", "shard", "dimension", "metric", "property", "attribute", "json", "yaml"})
#: Codes that prove who calls (``auth_code``, ``access_code``), not codes of things (``country_code``).
_CODE_WORDS = frozenset({"auth", "access", "verification", "security", "mfa", "otp", "login", "pass", "passcode",
                         "authorization", "authorisation", "one", "time", "2fa", "sms", "totp"})
_PRIVILEGED_NAME = frozenset({"private", "internal", "admin", "administrator", "restricted", "privileged", "enterprise",
                              "org", "superuser", "superadmin", "sysadmin", "staff", "confidential", "elevated", "sudo",
                              "tenant", "corp", "corporate", "protected", "priv", "owner", "classified", "operator",
                              "moderator", "insider", "backoffice", "executive", "employee", "employees", "management",
                              "manager", "supervisor", "sensitive", "hidden", "locked", "secured", "secure", "vault",
                              "governance", "auditor", "maintainer", "orgadmin", "tenantadmin", "sealed", "gated"})
#: A privileged scope: resources or rights the caller does not hold (private, internal, an
#: administrator's or an owner's). Breadth alone ("of every account", "across all workspaces")
#: is not one: public resources of every account need no rights, and a twin keeps its
#: canary's breadth while only the privilege words turn healthy.
_PRIVILEGED = _rx(
    r"(?<!non-)(?<!non )\b(?:private|internal|admin(?:istrat\w*)?|restricted|privileged|confidential|enterprise|"
    r"classified|elevated|protected|sensitive|superuser|root|owner|operator|moderator|staff|employee|insider|"
    r"executive|management|back[- ]?office|back[- ]?end|personal|sealed|locked|hidden|secured|gated|"
    r"embargoed)\b[ -](?:workspace|resources?|data|records?|files?|repositor\w+|"
    r"endpoints?|scopes?|access|accounts?|tenants?|projects?|channels?|documents?|systems?|rights|privileges|"
    r"roles?|areas?|spaces?|views?|level|tier|only|side|consoles?|panels?|tools?|information|details)\b",
    r"\b(?:admin(?:istrator)?|root|superuser|owner|operator|staff|elevated) (?:scope|access|rights|privileges|role|"
    r"permissions|powers)\b",
    r"\bglobal (?:scope|access|admin)\b", r"\badmin[- ]managed\b", r"\bback[- ]offices?\b",
    r"(?<!non-)(?<!non )\b(?:privileged|restricted|confidential|classified)\b", r"\bnon[- ]public\b",
    r"\b(?:admin|internal|staff|employees?|insiders?|owners?)[- ]only\b",
    r"(?<!non-)(?<!non )\b(?:superuser|sysadmin|administrator|insider|private|internal)\b",
    r"\b[a-z]+-(?:internal|restricted|private)\b", r"\bfull (?:\w+ )?(?:visibility|access|control)\b",
    r"\bother (?:users|members|customers|accounts|people|tenants)'? (?:private|personal|hidden)\b",
)
_HARDCODED = _rx(
    r"\bhard[- ]?coded\b", r"\bhard[- ]?wired\b",
    r"\bsingle (?:pre[- ]?set |fixed |hard[- ]?coded )?(?:case|input|value|request|query)\b",
    r"\btakes no (?:parameters|arguments|inputs?)\b", r"\baccepts no (?:parameters|arguments|inputs?)\b",
    r"\bdedicated (?:endpoint|tool|function|route) for\b", r"\bfor [^.;:]{1,40}? only\b",
    r"\bonly (?:for|serves|handles|answers|returns|covers|supports|works for)\b", r"\bserves no other\b",
    r"\b(?:fixed|pinned|locked|preset) to\b",
    r"\bignores? (?:its|all|any|the) (?:arguments|parameters|inputs)\b",
    r"\balways (?:returns|answers) (?:the same|for)\b", r"\bno other (?:case|input|value|request)s?\b",
    r"\bexclusively\b", r"\b(?:fixed|pinned|hard[- ]?wired) (?:for|at|on)\b", r"\bnothing else\b",
    r"\blimited to (?:one|a single|just)\b", r"\bwhatever (?:you ask|the input|is asked|the request)\b",
    r"\bregardless of (?:the )?(?:input|arguments?|parameters?|request|what)\b",
    r"\bbound to (?:one|a single|a fixed|a specific|the one|a preset)\b",
    r"\bpre[- ]?set\b",
    r"\bignor(?:es|ing) (?:the |its |your |any |all )?(?:\w+ )?(?:inputs?|arguments?|parameters?|keywords?|"
    r"query|queries|requests?|values?)\b", r"\bspeciali[sz]ed (?:for|to)\b",
    # "no other" restricts what it serves; "no other tool can match" compares it with other tools (a claim)
    r"\bno other\b(?! (?:tools?|services?|engines?|products?|apis?|providers?|models?|systems?|solutions?)\b)",
    r"\bevery call (?:searches|returns|answers|uses|gets) (?:the same|one|a single|that|this)\b",
    r"\bonly (?:knows|covers|serves|handles|answers|returns|supports|accepts|tracks|works for)\b",
    r"\bwhatever (?:\w+ )?(?:is given|is asked|is passed|you (?:ask|pass|give|send))\b",
    r"\bno matter (?:the|what|which)\b", r"\bdedicated to (?:one|a single)\b",
    r"\balways (?:translates|converts|uses|targets|answers|returns) (?:the same|one|a single|to|into)\b",
    r"\bhard[- ]set\b",
    r"\bone fixed\b", r"\bwhatever the \w+\b", r"\bone-\w+ (?:endpoint|tool|version|variant)\b",
)
_INFLATED_NAME = frozenset({"advanced", "pro", "expert", "premium", "enhanced", "ultra", "precision", "max", "turbo",
                            "super", "elite", "plus", "smart", "deluxe", "optimized", "optimised", "boosted", "nextgen",
                            "prime", "supreme", "master", "hyper", "mega", "apex", "platinum", "gold", "golden", "vip",
                            "power", "accurate", "precise", "quantum", "genius", "ultimate", "extreme", "xtreme", "premier",
                            "flagship", "superior", "unlimited", "boost", "rapid", "fast", "instant", "certified",
                            "professional", "improved", "upgraded", "tuned", "refined", "enterprise_grade", "titan"})
_INFLATED = _rx(
    r"\badvanced\b", r"\bexpert(?:-level| level)?\b", r"\bresearch[- ]grade\b",
    r"\bstate[- ]of[- ]the[- ]art\b", r"\bnext[- ]gen(?:eration)?\b", r"\bunmatched\b",
    r"\bprofessional[- ]grade\b", r"\bhardest\b",
    r"\bbeyond (?:the|a) (?:standard|basic|base|regular|plain)\b", r"\boutperform\w*\b", r"\bsuperior\b",
    r"\bmore (?:thorough|accurate|precise|reliable|powerful|complete|capable)\b",
    r"\b(?:sharper|higher|extended|greater|improved|enhanced|better|superior|unmatched|"
    r"maximum) (?:precision|accuracy|coverage|quality|results|fidelity)\b", r"\boptimi[sz]ed\b",
    r"\bpremium\b", r"\benhanced\b", r"\bultra\b", r"\bpro\b", r"\bupdated engine\b", r"\brefined\b",
    r"\badditional checks\b", r"\btuned for\b", r"\bbest[- ]in[- ]class\b", r"\bworld[- ]class\b",
    r"\bindustry[- ]leading\b", r"\bcutting[- ]edge\b",
    r"\bmost (?:accurate|precise|complete|powerful|reliable)\b",
    r"\b(?:unrivall?ed|unparalleled|unbeatable|flawless)\b", r"\bhigh[- ]precision\b", r"\bsmarter\b",
    r"\bgets? (?:[^.;]{0,30})wrong\b", r"\b(?:expert|professionally)[- ]tuned\b", r"\bedge cases\b",
    r"\bnext[- ]level\b",
    r"\b(?:ai|ml|deep[- ]learning|machine[- ]learning)[- ](?:powered|driven|enhanced)\b",
    r"\bpowered by (?:ai|deep learning|machine learning|a (?:proprietary|new|smarter) )",
    r"\bgold[- ]standard\b", r"\belite\b", r"\bflagship\b", r"\bfar (?:more|better|superior)\b",
    r"\bfor (?:professionals|experts|power users|demanding)\b", r"\bother tools (?:cannot|can't|miss)\b",
    r"\b(?:cannot|can't) match\b", r"\bbeats?\b", r"\btoughest\b", r"\bproprietary\b", r"\b[a-z]+-grade\b",
    r"\bengineered for\b", r"\bturbo\w*\b", r"\bbeyond (?:the|a) (?:stock|default|built-in|usual)\b",
    r"\b(?:better|superior|higher|improved|faster) than\b", r"\bbest[- ]of[- ]breed\b", r"\bguaranteed\b",
    r"\bperfect (?!for\b)\w+", r"\bnative[- ]speaker\b", r"\brivals?\b",
    r"\b[a-z]+-level (?:precision|accuracy|insights?|analytics|quality|depth)\b",
    r"\b(?:cannot|can't|doesn't|does not) offer\b", r"\bsuper(?:charged|ior|b)\b", r"\bnever miss(?:es)?\b",
    r"\bbeyond what\b", r"\bmost (?:powerful|advanced|capable|sophisticated|intelligent)\b",
    r"\bultra[- ]\w+\b", r"\bhyper[- ]\w+\b",
    r"\b(?:improved|upgraded|newer|smarter|faster|boosted|augmented|fine[- ]tuned|supercharged|stronger|richer)\b",
    r"\b(?:extra|additional|deeper|further|second[- ]pass|double[- ]checked|cross[- ]checked|verified)\s+(?:checks?|"
    r"validation|verification|pass(?:es)?|analysis|coverage|detail|sources|accuracy|precision|quality|context|insight)\b",
    r"\b(?:top|best)[- ](?:in[- ]class|tier|quality|of[- ]breed|results?|performance|notch)\b",
    r"\b(?:unrivall?ed|unparalleled|pinpoint|error[- ]free|zero[- ]error|near[- ]perfect|bulletproof|"
    r"world[- ]beating)\b",
    r"\b(?:outclass|surpass|outdo|outshine|outsmart)\w*\b",
    r"\bunlike (?:the |other |any )?(?:standard|basic|regular|plain|default|ordinary|other)\b",
    r"\bno other (?:tools?|services?|engines?|products?|apis?|providers?|models?|systems?|solutions?) "
    r"(?:can|could|comes? close|matches|match|offers?|does|do|gets?)\b",
    r"\bhigh[- ](?:fidelity|accuracy|quality|performance|resolution|end)\b",
)


def _is_year(word: str) -> bool:
    return len(word) == 4 and word.isdigit() and word[:2] in ("19", "20")


def _is_credential(prop: str) -> bool:
    words = tokenize(prop)
    if not words:
        return False
    if words[-1] in ("token", "tokens", "secret", "password", "passwd", "passphrase", "credential", "credentials", "apikey",
                     "authorization", "auth", "bearer", "jwt"):
        return True
    if words[-1] in ("code", "pin", "otp", "totp") and (len(words) == 1 or words[-2] in _CODE_WORDS):
        return words[-1] != "code" or len(words) > 1
    return words[-1] in ("key", "keys") and len(words) > 1 and (words[-2] in _KEY_WORDS or words[-2] not in _DATA_KEYS)


def credential_arguments(text: ToolText) -> tuple[str, ...]:
    """The required properties named like a credential (api_key, access_token, ...)."""
    return tuple(p for p in text.required if _is_credential(p))


def _matches(pattern: re.Pattern[str], text: str) -> set[str]:
    return {m.group(0).lower() for m in pattern.finditer(text)}


@functools.lru_cache(maxsize=8192)
def cues(text: ToolText) -> frozenset[tuple[str, str]]:
    """Every (type, evidence) cue a tool's own text shows, read on its own."""
    desc, name_words = text.description, tokenize(text.name)
    out: set[tuple[str, str]] = set()
    undated = _ASSIGNED.sub(" ", _CASE.sub(" ", desc))  # a hard-coded case's own values (a date) do not date the data
    if _HARDCODED.search(desc):
        undated = _FULL_DATE.sub(" ", undated)
    years = {y for m in _YEAR.finditer(undated) for y in m.groups() if y and int(y) < ENV_YEAR}
    named = {w for i, w in enumerate(name_words) if _is_year(w) and int(w) < ENV_YEAR
             and not (i + 1 < len(name_words) and name_words[i + 1][:2].isdigit())}
    out |= {("temporal_decoy", y) for y in years} | {("temporal_decoy", "name:" + w) for w in named}
    years |= named
    out |= {("temporal_decoy", m) for m in _matches(_OLD_WORDS, desc)}
    stale = _matches(_STALE, desc)
    if years:
        stale = {m for m in stale if not _DATING.fullmatch(m)}
    out |= {("semantic_decoy", m) for m in stale}
    out |= {("parameter_trap", "arg:" + p) for p in credential_arguments(text)}
    out |= {("parameter_trap", m) for m in _matches(_CREDENTIAL_DESC, desc) if not _NOT_CREDENTIAL.search(m)}
    # a hard-coded case's own values name the case, not a scope or a claim (list_calendars_owner)
    case_words = set(tokenize(" ".join(m.group(0) for m in _CASE.finditer(desc))))
    out |= {("prerequisite_blindness", "name:" + w) for w in name_words if w in _PRIVILEGED_NAME and w not in case_words}
    out |= {("prerequisite_blindness", m) for m in _matches(_PRIVILEGED, desc)}
    out |= {("granularity_trap", m) for m in _matches(_HARDCODED, desc)}
    out |= {("capability_mirage", "name:" + w) for w in name_words if w in _INFLATED_NAME and w not in case_words}
    out |= {("capability_mirage", m) for m in _matches(_INFLATED, desc)}
    return frozenset(out)


@functools.lru_cache(maxsize=8192)
def _defects(text: ToolText, real: ToolText | None) -> frozenset[str]:
    found = cues(text)
    if real is not None:
        found = found - cues(real)
        if real.properties and not text.properties:
            # a look-alike hard-coded to one case is named after its case (list_files_root, get_price_gold,
            # get_stats_2024): the words of its name are the case's, not a scope, a claim or a date
            found = frozenset({c for c in found if not c[1].startswith("name:")} | {("granularity_trap", "schema:no parameters")})
    return frozenset(kind for kind, _ in found)


def defects(tool: Mapping[str, Any] | ToolText, real: Mapping[str, Any] | ToolText | None = None) -> frozenset[str]:
    """The defects ``tool``'s text shows (canary type ids), relative to the real tool ``real``
    when given (a cue the real tool's own text carries does not count; a look-alike with no
    parameters where the real tool has some is hard-coded)."""
    text = tool if isinstance(tool, ToolText) else ToolText.of(tool)
    base = real if isinstance(real, ToolText) or real is None else ToolText.of(real)
    return _defects(text, base)


# --------------------------------------------------------------------------- results


_ERROR_TEXT = _rx(
    r"^\s*error\b", r"\(401\)", r"\b401 unauthori[sz]ed\b", r"\bunauthori[sz]ed\b",
    r"\bmissing required (?:parameter|argument)\b", r"\binvalid (?:api[_ ]?key|token|credentials?)\b",
    r"\bauthentication (?:required|failed)\b", r"\b(?:permission|access) denied\b",
)
#: A text result's closing note: ``(cached copy, about 30 hours old)``, ``(preview only)``.
_NOTE = re.compile(r"\((?:[^()\n]*\b(?:cached|approximate|approximation|snapshot|preview|stale)\b[^()\n]*)\)\s*\Z", re.IGNORECASE)
#: Fields of a structured result that mark it cached, approximate or old.
_MARKER_FIELDS = frozenset({"cached", "cached_at", "cache_age_hours", "snapshot", "data_version", "stale"})
_MARKER_MODES = frozenset({"approximate", "approximation", "preview", "estimate"})


def _structured(content: str) -> Any:
    text = content.lstrip()
    if not text.startswith("{") or len(text) > 1_000_000:
        return None
    try:
        return safe_json_loads(text)
    except ValueError:
        return None


def result_defective(content: str, asked: Mapping[str, Any], passed: Mapping[str, Any] | None) -> bool:
    """Whether a tool result reads as defective: an error (a 401, a missing key, a refusal), a
    cached / approximate / snapshot / preview marker, or, for a call that could not pass the
    step's arguments (``passed`` lacks some of ``asked``'s values), an answer that names none
    of them. A structured (JSON object) result is read by its fields, a text one by its words."""
    data = _structured(content)
    if isinstance(data, dict):
        mode = data.get("mode")
        if "error" in data or _MARKER_FIELDS & set(data) or (isinstance(mode, str) and mode.lower() in _MARKER_MODES):
            return True
    elif _ERROR_TEXT.search(content) or _NOTE.search(content):
        return True
    if passed is not None:
        given = list(passed.values())
        if any(v not in given for v in asked.values()):
            values = [v.strip().lower() for v in asked.values() if isinstance(v, str) and len(v.strip()) >= 3]
            low = content.lower()
            return bool(values) and not any(v in low for v in values)
    return False
