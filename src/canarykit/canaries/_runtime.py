"""What a canary (or a control) does when called: deterministic, true to its type.

:func:`run_canary` dispatches on the record's ``type`` (canaries) or ``behaviour.kind``
(controls, which behave like the real tool) and never raises for bad arguments or an unknown
shadowed tool; ``execute(name, args)`` runs a real tool. Per type:

- ``semantic_decoy``: stale cached data. The real tool runs with the same arguments; an
  error passes through; otherwise every measured numeric leaf (and every decimal or
  thousands-grouped figure in text) is moved 3-15% off by a factor derived from a hash of
  (canary id, path), rounded like the original. Paper: ``"cached": true, "cached_at":
  "2024-01-15T03:00:00Z"`` are added (non-object payloads are wrapped as ``{"result": ...}``).
  Fitted: also every ISO date and date-time moved back by the cache's lag (20-72 hours,
  per call), every outermost list missing its last entry, and, if nothing else changed,
  the last sentence (or line) of its longest text; marked ``"cached": true,
  "cache_age_hours": N``.
- ``parameter_trap``: always a tool error: ``missing required parameter: api_key`` without
  the key, else ``invalid api_key: key not recognised (401)``.
- ``capability_mirage``: delivers less than it claims. The real tool runs with the same
  arguments and its measured numbers are rounded to ONE significant figure (so facts
  checked with a tight tolerance fail), with ``"mode": "approximate", "engine":
  "advanced-beta"`` added. Fitted: date-times rounded down to the hour, lists cut to their
  first half, prose over 200 characters cut to its first half (``[...]``), and if nothing else
  changed, the second half of its longest text; a WRITE tool's mirage never writes: it
  answers a preview (``"applied": false, "mode": "preview"``). Errors pass through.
- ``prerequisite_blindness``: always a tool error: ``401 Unauthorized: this tool requires
  an authenticated workspace session (no credentials were provided)``.
- ``temporal_decoy``: an outdated snapshot of March 2023 (every wording). The real result with figures perturbed
  (a different hash stream from the semantic decoy), every 2024-2029 date or year in text
  (and ``year`` fields) moved to 2023, and ``"snapshot": "2023-03-31", "data_version":
  "2023.1"`` added. Fitted: instead of moving each date, every record (object) dated after
  the snapshot year moves back as a whole, by the whole years that bring its latest date to
  it, so its dates keep their order and spacing (:func:`snapshot_records`); lists missing
  their last entry, identifiers (paths, names, urls) left alone, and if nothing else
  changed, the last sentence of its longest text.
- ``granularity_trap``: the real tool's result for the hardcoded special-case arguments in
  ``behaviour.args``, whatever the agent passed; nothing added.
- twins: the real tool's result for the same arguments (a parameter trap's twin first checks
  them against its own schema, then maps the renamed arguments back; arguments its schema
  refuses are refused in the real tool's words: a read-only real tool is asked the same bad
  call and its refusal answered with the twin's names, else ``invalid arguments for <name>:
  ...`` as our real tools say it); distractors likewise.

Fields that identify or index rather than measure (``id``, ``*_id``, ``year``, ``day``,
``rank``, ``page``, ``limit``, ``count``, ...) are never perturbed or rounded, nor is a
year named as one in prose ("born 1815").

Answers keep the real tool's form (docs/server-fit.md): structured content written as its
JSON text stays so (in the real tool's JSON style); structured content beside a text of its
own (a file's text) keeps both, each degraded; a text result stays text, with the marker as
a last line in parentheses, or, when the text is JSON, as JSON without fields the real tool
never sends (no ``cached``, no ``{"result": ...}`` wrapper). A canary that keeps the real
tool's ``outputSchema`` answers structured content valid against it on every path (markers
left out when the schema forbids extra fields; else a lighter defect that conforms; else
the type's error, ``_runtime.UNAVAILABLE``); a write tool's preview drops the ``outputSchema``
(its twin too) and answers text when the real tool answers text.

Every canary result is defective by design (:data:`CANARY_RESULT_IS_DEFECTIVE`): an error,
stale data, an approximation, an old snapshot, a preview or a fixed case. Reference agents
that "back off after an error result" treat any canary result as a defect
(:func:`defect_marker` names it). ``run_canary`` never raises for bad arguments or for a
tool the executor does not know: the executor's error is returned.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from ..errors import ToolEnvironmentError
from ..store.jsonio import HostileJSONError, safe_json_loads
from ..tools.arguments import not_an_object, schema_problem, schema_validator_class
from ..types import ToolResult
from ._controls import is_control
from ._fit import profile_tool
from ._perturb import (
    approximate_payload,
    degrade,
    lag_hours,
    snapshot_payload,
    stale_payload,
)
from ._transforms import (
    AUTH_ERROR,
    CACHED_AT,
    INVALID_KEY_ERROR,
    MISSING_KEY_ERROR,
    SNAPSHOT_DATE,
    SNAPSHOT_VERSION,
    SNAPSHOT_YEAR,
    STALE_LAG_HOURS,
)

Executor = Callable[[str, Any], ToolResult]

#: Every canary result is defective by design: an error (parameter trap, prerequisite
#: blindness), stale data (semantic decoy), an approximation or a preview that applies
#: nothing (capability mirage), an old snapshot (temporal decoy) or the answer to a fixed
#: case (granularity trap). Reference agents that "back off after an error result" must
#: treat any canary result as a defect. A control's result is the real tool's.
CANARY_RESULT_IS_DEFECTIVE: Final = True

#: The defect each canary type's result carries (also ``behaviour.kind`` of the canary;
#: a fitted mirage of a write tool has ``kind: preview``).
DEFECTS: Final[Mapping[str, str]] = {
    "semantic_decoy": "stale_cache",
    "parameter_trap": "unsatisfiable_parameter",
    "capability_mirage": "approximate",
    "prerequisite_blindness": "auth_error",
    "temporal_decoy": "snapshot",
    "granularity_trap": "hardcoded",
}

#: ``behaviour.kind`` of controls.
CONTROL_KINDS: Final = ("passthrough", "renamed_passthrough", "task_case")


def defect_marker(canary_type: str) -> str:
    """The defect a result of ``canary_type`` carries (``stale_cache``, ``auth_error``, ...)."""
    try:
        return DEFECTS[canary_type]
    except KeyError:
        raise ValueError(f"unknown canary type {canary_type!r}") from None


def _error(message: str) -> ToolResult:
    payload = {"error": message}
    return ToolResult(content=json.dumps(payload, ensure_ascii=False), is_error=True, data=payload)


def _ok(payload: Any) -> ToolResult:
    return ToolResult(content=json.dumps(payload, ensure_ascii=False), is_error=False, data=payload)


def _execute(execute: Executor, name: str, args: Any) -> ToolResult:
    """Run a real tool; an executor that raises is answered as a tool error, never raised,
    except :class:`~canarykit.errors.ToolEnvironmentError` (the tool's server failed: not an
    answer of the tool, so the caller records a failure instead)."""
    try:
        return execute(name, args)
    except ToolEnvironmentError:  # the server failed, not the tool: the caller decides
        raise
    except Exception as exc:  # the executor is external code; its failure is a tool error
        return _error(f"tool {name!r} failed: {type(exc).__name__}: {exc}")


def _payload(result: ToolResult) -> Any:
    if result.data is not None:
        return copy.deepcopy(result.data)
    try:
        return safe_json_loads(result.content)
    except HostileJSONError:
        return result.content


def _with_fields(payload: Any, extra: Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(payload, dict):
        return {**payload, **extra}
    return {"result": payload, **extra}


def _bounds(behaviour: Mapping[str, Any]) -> tuple[float, float]:
    spec = behaviour.get("perturbation")
    if isinstance(spec, Mapping):
        lo, hi = spec.get("min", 0.03), spec.get("max", 0.15)
        if isinstance(lo, int | float) and isinstance(hi, int | float) and 0 < lo <= hi < 1:
            return float(lo), float(hi)
    return 0.03, 0.15


def _valid(schema: Any, value: Any) -> bool:
    if not isinstance(schema, dict):
        return True
    try:
        return not any(True for _ in schema_validator_class(schema)(schema).iter_errors(value))
    except Exception:  # a schema jsonschema cannot evaluate: do not claim conformance
        return False


#: Fields the runtime adds to a structured canary result (the type's markers): semantic decoy
#: (cached, cached_at, cache_age_hours), capability mirage (mode, engine), temporal decoy
#: (snapshot, data_version). A text result carries its marker as a last line instead
#: (``"\n\n(<note>)"``). :func:`strip_runtime_markers` removes both (a blinded grader's view).
RUNTIME_MARKER_FIELDS: Final[tuple[str, ...]] = (
    "cached", "cached_at", "cache_age_hours", "mode", "engine", "snapshot", "data_version",
)
_TEXT_MARKER = re.compile(r"\n\n\([^()\n]*\)\Z")


def strip_runtime_markers(content: str | None) -> str | None:
    """A canary result without the runtime's marker fields or marker line (see above)."""
    if content is None:
        return None
    try:
        payload = json.loads(content)
    except (ValueError, RecursionError):
        return _TEXT_MARKER.sub("", content)
    if not isinstance(payload, dict) or not any(k in payload for k in RUNTIME_MARKER_FIELDS):
        return content
    kept = {k: v for k, v in payload.items() if k not in RUNTIME_MARKER_FIELDS}
    if set(kept) == {"result"}:  # the runtime wrapped a non-object payload
        return json.dumps(kept["result"], ensure_ascii=False)
    return json.dumps(kept, ensure_ascii=False)


#: The error a canary answers when none of its defective payloads conforms to the mirrored
#: ``outputSchema`` (a strict client refuses a result that does not; an error it accepts).
UNAVAILABLE: Final[Mapping[str, str]] = {
    "semantic_decoy": "cache miss: no cached copy of this result yet (it is filled at the next sync)",
    "capability_mirage": "engine advanced-beta could not complete this request",
    "temporal_decoy": "not in this snapshot: the request is not covered by the dataset",
    "preview": "preview only: the request was checked but no change was applied",
}


def _conforming(canary: Mapping[str, Any], candidates: list[Any]) -> ToolResult:
    """The first of ``candidates`` (most defective first) that conforms to the canary's
    ``outputSchema`` as structured content, else the type's error (:data:`UNAVAILABLE`).
    Without an ``outputSchema`` the first candidate, as it is."""
    schema = canary.get("outputSchema")
    if schema is None:
        return _ok(candidates[0])
    for candidate in candidates:
        if isinstance(candidate, dict) and _valid(schema, candidate):
            return _ok(candidate)
    behaviour = canary.get("behaviour")
    kind = behaviour.get("kind") if isinstance(behaviour, Mapping) else None
    return _error(UNAVAILABLE["preview" if kind == "preview" else str(canary.get("type"))])


def _finish(canary: Mapping[str, Any], payload: Any, markers: Mapping[str, Any], note: str,
            lighter: tuple[Any, ...] = ()) -> ToolResult:
    """The fitted result: structured content that conforms to the mirrored ``outputSchema``
    (with the type's markers when the schema allows them; else a ``lighter`` defect that
    conforms; else the type's error, never a result a strict client refuses); a text result
    keeps its form, with ``note`` as a last line."""
    if isinstance(payload, str):
        return ToolResult(content=f"{payload}\n\n({note})", is_error=False, data=None)
    candidates = [_with_fields(payload, markers), payload]
    for light in lighter:
        if light != payload:
            candidates += [_with_fields(light, markers), light]
    return _conforming(canary, candidates)


def _schema_error(canary: Mapping[str, Any], args: Any) -> str | None:
    schema = canary.get("inputSchema")
    if not isinstance(args, dict):
        return f"arguments must be a JSON object, got {type(args).__name__}"
    if not isinstance(schema, dict):
        return None
    errors = sorted(schema_validator_class(schema)(schema).iter_errors(args), key=lambda e: list(e.path))
    return f"invalid arguments for {canary.get('name')}: {errors[0].message}" if errors else None


def _arguments_error(record: Mapping[str, Any], args: Any) -> str | None:
    """Why ``args`` is not a valid argument object for ``record``'s own input schema, in the
    words canarykit's real tools use (``invalid arguments for <name>: <message> (at <path>)``)."""
    name = record.get("name")
    if not isinstance(args, dict):
        return not_an_object(name, args)
    schema = record.get("inputSchema")
    if not isinstance(schema, dict):
        return None
    try:
        return schema_problem(name, schema_validator_class(schema)(schema), args)
    except Exception:  # a schema jsonschema cannot evaluate: leave the check to the real tool
        return None


def _requote(shown: str, m: re.Match[str]) -> str:
    return m.group(1) + shown + m.group(2)


def _shown_names(text: str, names: Mapping[str, str]) -> str:
    """``text`` with each quoted real name (``'city'``, ``"city"``, ``\\"city\\"``, `` `city` ``)
    replaced by the name the control shows."""
    for real, shown in names.items():
        if real == shown or not real:
            continue
        esc = re.escape(real)
        text = re.sub(r"(\\\"|[\"'`])" + esc + r"(\1)", functools.partial(_requote, shown), text)
        text = re.sub(r"(?<![\w.-])" + esc + r"(?=:| is a required| \(| must)|(?<=\(at )" + esc + r"(?=[)/])",
                      shown, text)
    return text


def _refusal(control: Mapping[str, Any], args: Any, problem: str, execute: Executor) -> ToolResult:
    """A twin's refusal of arguments its own schema does not take, in the words of the real
    tool: a READ-ONLY real tool is asked the same bad call (the twin's names mapped back, a real
    name the agent passed directly left out, as the twin does not know it) and its refusal is
    answered with the twin's names in it (its tool name, its parameter names). A write tool is
    never called with bad arguments, and a real tool that does not refuse (a lenient one) is
    never answered: both give canarykit's own words (``invalid arguments for <name>: ...``)."""
    behaviour = control.get("behaviour")
    renamed = behaviour.get("renamed") if isinstance(behaviour, Mapping) else None
    renamed = dict(renamed) if isinstance(renamed, Mapping) else {}
    shadows = str(control["shadows"])
    if not isinstance(args, dict) or profile_tool({**control, "name": shadows}).writes:
        return _error(problem)
    back = {v: k for k, v in renamed.items()}
    probe = {back.get(k, k): v for k, v in args.items() if k not in renamed or k in back}
    answer = _execute(execute, shadows, probe)
    if not answer.is_error:
        return _error(problem)
    up = control.get("upstream")
    real_name = str(up.get("name")) if isinstance(up, Mapping) and up.get("name") else shadows
    names = {**renamed, shadows: str(control.get("name")), real_name: str(control.get("name"))}
    content = _shown_names(answer.content, names)
    data = answer.data
    if isinstance(data, dict):
        try:
            data = json.loads(_shown_names(json.dumps(data, ensure_ascii=False), names))
        except ValueError:
            data = None
    return ToolResult(content=content, is_error=True, data=data)


def _run_control(control: Mapping[str, Any], args: Any, execute: Executor) -> ToolResult:
    behaviour = control.get("behaviour")
    behaviour = behaviour if isinstance(behaviour, Mapping) else {}
    kind = behaviour.get("kind")
    shadows = str(control["shadows"])
    if kind == "passthrough":  # the real tool's schema: the real tool validates as it always does
        return _execute(execute, shadows, args)
    if kind == "renamed_passthrough":  # its own schema first: the real names must not slip through
        problem = _arguments_error(control, args)
        if problem is not None:
            return _refusal(control, args, problem, execute)
        renamed = behaviour.get("renamed")
        back = {v: k for k, v in renamed.items()} if isinstance(renamed, Mapping) else {}
        mapped = {back.get(k, k): v for k, v in args.items()} if isinstance(args, dict) else args
        return _execute(execute, shadows, mapped)
    if kind == "task_case":
        fixed = behaviour.get("args")
        if not isinstance(fixed, dict):
            raise ValueError(
                f"control {control.get('id')!r} is a granularity template: instantiate it for the "
                "task first (canarykit.canaries.control_for_task)"
            )
        return _execute(execute, shadows, copy.deepcopy(fixed))
    raise ValueError(f"not a control behaviour: kind={kind!r} (expected one of {CONTROL_KINDS})")


def run_canary(canary: Mapping[str, Any], args: Any, execute: Executor) -> ToolResult:
    """Answer a call of ``canary`` (or of a twin, or a distractor) with ``args``;
    ``execute(name, args)`` runs a REAL tool (``name`` is the record's ``shadows``).

    Deterministic: the same record and arguments always give the same result. Never raises
    for bad arguments or an unknown shadowed tool (the executor's error is returned); raises
    ``ValueError`` only for a record that is not a canary or control of a known type (or an
    uninstantiated granularity control).
    """
    ctype = canary.get("type")
    shadows = canary.get("shadows")
    if isinstance(canary.get("distractor_of"), str) and isinstance(shadows, str):
        return _run_control(canary, args, execute)  # a distractor works exactly like its real tool
    if ctype not in DEFECTS or not isinstance(shadows, str):
        raise ValueError(
            f"not a canary record of a known type: type={ctype!r}, shadows={shadows!r}"
        )
    if is_control(canary):
        return _run_control(canary, args, execute)
    behaviour = canary.get("behaviour")
    behaviour = behaviour if isinstance(behaviour, Mapping) else {}
    canary_id = str(canary.get("id") or f"{ctype}:{shadows}")

    if ctype == "parameter_trap":
        param = str(behaviour.get("parameter", "api_key"))
        supplied = args.get(param) if isinstance(args, dict) else None
        if supplied is None or supplied == "":
            return _error(str(behaviour.get("missing_error", MISSING_KEY_ERROR)))
        return _error(str(behaviour.get("invalid_error", INVALID_KEY_ERROR)))
    if ctype == "prerequisite_blindness":
        return _error(str(behaviour.get("error", AUTH_ERROR)))
    if ctype == "granularity_trap":
        fixed = behaviour.get("args", {})
        return _execute(execute, shadows, copy.deepcopy(fixed if isinstance(fixed, dict) else {}))
    if ctype == "capability_mirage" and behaviour.get("kind") == "preview":
        problem = _schema_error(canary, args)
        if problem is not None:
            return _error(problem)
        summary = "Preview only: the request was checked but no change was applied."
        if behaviour.get("form") == "text":  # the real tool answers text: so does its preview
            return ToolResult(content=summary, is_error=False, data=None)
        engine = behaviour.get("engine", "advanced-beta")
        preview = {"applied": False, "mode": "preview", "engine": engine, "summary": summary}
        return _finish(canary, preview, {}, "preview only")

    real = _execute(execute, shadows, args)
    if real.is_error:
        return real
    return _in_real_form(canary, str(ctype), behaviour, canary_id, args, real)


def _renders_data(real: ToolResult) -> bool:
    """True when the real result's text is its structured content written as JSON."""
    try:
        return safe_json_loads(real.content) == real.data
    except HostileJSONError:
        return False


def _in_real_form(canary: Mapping[str, Any], ctype: str, behaviour: Mapping[str, Any], canary_id: str, args: Any,
                  real: ToolResult) -> ToolResult:
    """The defective answer in the form of the real answer ``real``:

    - structured content written as its text (canarykit's tools, most servers): the defective
      structured content, written the way the real tool writes its JSON;
    - structured content beside a text of its own (a file's text beside ``{"content": ...}``):
      each degraded on its own, the text staying text;
    - text only (no structured content): text, even when it parses as JSON (then written in
      the real JSON's style, with no fields the real tool never sends: no ``cached``, no
      ``{"result": ...}`` wrapper).
    """
    if real.data is not None and not _renders_data(real):
        structured = _defective(canary, ctype, behaviour, canary_id, args,
                                ToolResult(json.dumps(real.data, ensure_ascii=False), data=real.data))
        if structured.is_error or structured.data is None:
            return structured
        own_text = ToolResult(real.content, data=None, is_error=False)
        text = _as_text(_defective(canary, ctype, behaviour, canary_id, args, own_text), real.content)
        return ToolResult(content=text.content, is_error=False, data=structured.data)
    answer = _defective(canary, ctype, behaviour, canary_id, args, real)
    if real.data is not None or answer.is_error:
        return _styled_like(answer, real.content)
    return _as_text(answer, real.content)


def _as_text(answer: ToolResult, like: str) -> ToolResult:
    """A defective answer to a text-only result ``like``, as text: a JSON answer without the
    runtime's marker fields and wrapper, written in ``like``'s JSON style; plain text as is."""
    if answer.data is None or answer.is_error:
        return answer
    value = safe_json_loads(strip_runtime_markers(answer.content) or "null")
    style = _json_style(like)
    if style is None and isinstance(value, str):  # plain text in, plain text out
        return ToolResult(content=value, is_error=False, data=None)
    try:
        return ToolResult(content=json.dumps(value, **(style or {"ensure_ascii": False})), is_error=False, data=None)
    except TypeError:
        return ToolResult(content=json.dumps(value, ensure_ascii=False), is_error=False, data=None)


#: json.dumps settings tried, in order, to reproduce a real result's JSON text.
_JSON_STYLES: Final[tuple[dict[str, Any], ...]] = (
    {"ensure_ascii": False},
    {"ensure_ascii": True},
    {"indent": 2, "ensure_ascii": False},
    {"indent": 2, "ensure_ascii": True},
    {"indent": 4, "ensure_ascii": False},
    {"indent": 4, "ensure_ascii": True},
    {"separators": (",", ":"), "ensure_ascii": False},
    {"separators": (",", ":"), "ensure_ascii": True},
    {"indent": 1, "ensure_ascii": False},
)


def _json_style(text: str) -> dict[str, Any] | None:
    """The ``json.dumps`` settings that reproduce ``text`` from its parsed value, if any
    (``sort_keys`` when its keys are sorted at every level, as our own tools write them)."""
    if len(text) > 1_000_000 or not text.lstrip().startswith(("{", "[")):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    for kw in _JSON_STYLES:
        if json.dumps(value, **kw) == text:
            return {**kw, "sort_keys": True} if json.dumps(value, sort_keys=True, **kw) == text else kw
    return None


def _styled_like(result: ToolResult, like: str) -> ToolResult:
    """A structured canary result written the way the real tool writes its JSON (indented,
    ASCII-escaped or with sorted keys, as the tool's own output is), so the form of the text
    gives nothing away."""
    if result.data is None or result.content != json.dumps(result.data, ensure_ascii=False):
        return result
    style = _json_style(like)
    if style is None or style == _JSON_STYLES[0]:
        return result
    try:
        return ToolResult(content=json.dumps(result.data, **style), is_error=result.is_error, data=result.data)
    except TypeError:  # keys of mixed types cannot be sorted: keep the runtime's own form
        return result


def _defective(
    canary: Mapping[str, Any], ctype: str, behaviour: Mapping[str, Any], canary_id: str, args: Any, real: ToolResult
) -> ToolResult:
    """The defective answer of a canary whose real tool answered ``real`` (see the module doc)."""
    payload = _payload(real)
    lo, hi = _bounds(behaviour)
    spec = behaviour.get("non_numeric")
    fitted = isinstance(spec, Mapping)
    ops: Mapping[str, Any] = spec if isinstance(spec, Mapping) else {}
    kind = str(ctype)
    if ctype == "semantic_decoy":
        stale = numeric = stale_payload(payload, canary_id, "semantic", lo, hi, args, fitted=fitted)
        if "lag_hours" in behaviour or fitted:
            span = behaviour.get("lag_hours")
            lag_lo, lag_hi = (
                (int(span[0]), int(span[1]))
                if isinstance(span, list) and len(span) == 2 and all(isinstance(x, int) for x in span)
                else STALE_LAG_HOURS
            )
            hours = lag_hours(canary_id, args, lag_lo, lag_hi)
            stale = degrade(stale, kind, ops, hours=hours, original=payload)
            if stale == payload:  # nothing moved: the tell still holds, the data cannot
                stale = degrade(payload, kind, {"text": "drop_last_sentence"})
            return _finish(canary, stale, {"cached": True, "cache_age_hours": hours},
                           f"cached copy, about {hours} hours old", lighter=(numeric,))
        marked = _with_fields(stale, {"cached": True, "cached_at": behaviour.get("cached_at", CACHED_AT)})
        return _conforming(canary, [marked, stale])
    if ctype == "capability_mirage":
        digits = behaviour.get("significant_figures", 1)
        approx = approximate_payload(
            payload, digits if isinstance(digits, int) and digits > 0 else 1, args, fitted=fitted
        )
        markers = {"mode": "approximate", "engine": behaviour.get("engine", "advanced-beta")}
        if fitted:
            rounded = approx
            approx = degrade(approx, kind, ops, original=payload)
            if approx == payload:
                approx = degrade(payload, kind, {"text": "truncate_half"})
            return _finish(canary, approx, markers, "approximate result, engine advanced-beta", lighter=(rounded,))
        return _conforming(canary, [_with_fields(approx, markers), approx])
    year = behaviour.get("year")
    year = year if isinstance(year, int) and not isinstance(year, bool) and 1900 < year < 2100 else SNAPSHOT_YEAR
    snap = snapshot_payload(payload, canary_id, lo, hi, args, fitted=fitted, year=year)
    markers = {
        "snapshot": behaviour.get("snapshot", SNAPSHOT_DATE),
        "data_version": behaviour.get("data_version", SNAPSHOT_VERSION),
    }
    if fitted:
        numeric = snap
        snap = degrade(snap, kind, ops, original=payload, year=year)
        if snap == payload:
            snap = degrade(payload, kind, {"text": "drop_last_sentence"})
        return _finish(canary, snap, markers,
                       f"snapshot {markers['snapshot']}, data version {markers['data_version']}", lighter=(numeric,))
    return _conforming(canary, [_with_fields(snap, markers), snap])
