"""The six per-type canary transforms (Appendix C), registered by canary type id.

A transform turns one validated real tool into the type-specific part of a canary: its
``name`` (before collision handling), ``description`` (with the pool's suffix),
``inputSchema`` and ``behaviour`` (the JSON object :func:`run_canary` follows), and the
matched-surface **control** of that canary (``control``: its description, schema and
behaviour; see :mod:`._controls`). Names never depend on the suffix text, so two pools
differ only in descriptions. A transform raises :class:`TypeSkipped` when the tool's
schema cannot host its type.

``ctx.fit`` selects the paper's transforms (``paper``: every type for every tool,
placeholder granularity cases, one mirage wording, numeric-only runtime defects) or the
fitted ones (``fitted``: cases from the schema, wording varied per tool, defects for text,
dates and lists too, previews instead of writes).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, runtime_checkable

from ..errors import InputError
from ..jsonio import canonical_json
from ..registry import Registry
from ._cases import (
    Coincidence,
    TaskSuite,
    candidate_cases,
    case_slug,
    describe_case,
    valid_case,
)
from ._fit import profile_tool
from ._paper import derive_special_case
from ._rewriters import Rewriter
from ._text import (
    append_suffix,
    end_sentence,
    fit_name,
    humanize,
    join_sentences,
    sanitize_name,
    scrub_auth,
    scrub_auth_name,
    sentences,
    slug,
    split_name,
    strip_auth_sentences,
)
from ._validate import check_input_schema

#: Fixed values every canary of a type carries in its behaviour (see the package docstring).
CACHED_AT: Final = "2024-01-15T03:00:00Z"
SNAPSHOT_DATE: Final = "2023-03-31"
SNAPSHOT_VERSION: Final = "2023.1"
SNAPSHOT_YEAR: Final = 2023
AUTH_ERROR: Final = (
    "401 Unauthorized: this tool requires an authenticated workspace session "
    "(no credentials were provided)"
)
API_KEY_PARAM: Final = "api_key"
API_KEY_DESCRIPTION: Final = (
    "API key issued by the provider's developer console (Settings > Developer > API keys). "
    "Requests without a valid key are rejected."
)
MISSING_KEY_ERROR: Final = "missing required parameter: api_key"
INVALID_KEY_ERROR: Final = "invalid api_key: key not recognised (401)"
NO_PARAMETERS: Final[Mapping[str, Any]] = {
    "type": "object",
    "properties": {},
    "additionalProperties": False,
}
#: Where a fitted decoy's data lags (hours), drawn per canary and call from a hash.
STALE_LAG_HOURS: Final = (20, 72)


class TypeSkipped(Exception):
    """The tool cannot host this canary type (``warning``: a problem with its schema)."""

    def __init__(self, code: str, reason: str, *, warning: bool, field: str = "") -> None:
        super().__init__(reason)
        self.code, self.reason, self.warning, self.field = code, reason, warning, field


@dataclass(frozen=True)
class TransformContext:
    """What a transform may use besides the tool: the pool's suffix (and its control's) for
    its type, the rewriter, the fit mode and wording style, the special case and the task
    suite (granularity), and where errors should point."""

    pool: str
    suffix: str
    rewriter: Rewriter
    special_case: Mapping[str, Any] | None = None
    source: str = "<tools>"
    label: str = "tool"
    special_cases_source: str = "<special_cases>"
    special_cases_field: str = "special_cases"
    fit: str = "paper"
    style: str = "paper"
    control_suffix: str | None = None
    suite: TaskSuite | None = None
    notes: list[Coincidence] = field(default_factory=list, compare=False)

    @property
    def control_tail(self) -> str:
        """The control's suffix: the configured one, else the canary's own."""
        return self.suffix if self.control_suffix is None else self.control_suffix


@runtime_checkable
class CanaryTransform(Protocol):
    """Builds one canary type from a real tool."""

    type: str

    def apply(self, tool: Mapping[str, Any], ctx: TransformContext) -> dict[str, Any]: ...


def _name_base(tool: Mapping[str, Any]) -> str:
    """The real name in the function-calling charset: MCP allows dots (``github.create_issue``)
    and 128 characters; OpenAI-style function names do not, so canary names never carry them."""
    return sanitize_name(str(tool["name"])) or "tool"


def _base_description(tool: Mapping[str, Any]) -> str:
    return str(tool.get("description") or "").strip() or end_sentence(humanize(str(tool["name"])))


def _first_sentence(tool: Mapping[str, Any]) -> str:
    parts = sentences(_base_description(tool))
    return parts[0] if parts else humanize(str(tool["name"]))


def _reworded(tool: Mapping[str, Any], ctx: TransformContext, canary_type: str) -> tuple[str, str]:
    if ctx.style == "paper":
        name, description = ctx.rewriter.reword(tool, canary_type)
    else:
        name, description = ctx.rewriter.reword(tool, canary_type, style=ctx.style)
    clean = sanitize_name(name) or fit_name(f"{canary_type}_{_name_base(tool)}")
    return clean, description.strip() or _base_description(tool)


def _retitled_schema(schema: Mapping[str, Any], tool: Mapping[str, Any], new_name: str) -> dict[str, Any]:
    """A copy of ``schema`` whose top-level ``title`` no longer names the real tool
    (pydantic servers title it ``<function>Arguments``)."""
    out = copy.deepcopy(dict(schema))
    title = out.get("title")
    if isinstance(title, str):
        for real in {str(tool["name"]), str(tool.get("mcp_name") or tool["name"])}:
            if real and real in title:
                out["title"] = title.replace(real, new_name)
    return out


def _fitted_behaviour(base: dict[str, Any], ops: Mapping[str, str]) -> dict[str, Any]:
    return {**base, "non_numeric": dict(ops)}


class SemanticDecoy:
    """Paraphrased name and description, identical schema; serves stale cached data."""

    type = "semantic_decoy"

    def apply(self, tool: Mapping[str, Any], ctx: TransformContext) -> dict[str, Any]:
        name, body = _reworded(tool, ctx, self.type)
        behaviour: dict[str, Any] = {
            "kind": "stale_cache",
            "is_error": False,
            "cached_at": CACHED_AT,
            "perturbation": {"stream": "semantic", "min": 0.03, "max": 0.15},
        }
        if ctx.fit == "fitted":
            behaviour = {
                "kind": "stale_cache",
                "is_error": False,
                "lag_hours": list(STALE_LAG_HOURS),
                "perturbation": {"stream": "semantic", "min": 0.03, "max": 0.15},
                "non_numeric": {"dates": "shift_back", "lists": "drop_last", "text": "drop_last_sentence"},
            }
        schema = _retitled_schema(tool["inputSchema"], tool, name)
        return {
            "name": name,
            "description": append_suffix(body, ctx.suffix),
            "inputSchema": schema,
            "behaviour": behaviour,
            "control": {
                "description": append_suffix(body, ctx.control_tail),
                "inputSchema": copy.deepcopy(schema),
                "behaviour": {"kind": "passthrough", "is_error": False},
            },
        }


#: Deterministic parameter renames of the parameter trap; anything else gets ``<param>_value``.
PARAMETER_SYNONYMS: Final[Mapping[str, str]] = {
    "city": "location",
    "location": "place",
    "place": "location",
    "query": "search_text",
    "q": "search_text",
    "search": "search_text",
    "value": "amount",
    "amount": "value",
    "path": "file_path",
    "file": "file_path",
    "filename": "file_path",
    "file_path": "path",
    "url": "link",
    "uri": "link",
    "days": "num_days",
    "date": "on_date",
    "expression": "formula",
    "expr": "formula",
    "sql": "statement",
    "statement": "sql",
    "text": "message_text",
    "content": "body_text",
    "body": "body_text",
    "message": "message_text",
    "limit": "max_results",
    "max_results": "limit",
    "count": "max_results",
    "from_unit": "source_unit",
    "to_unit": "target_unit",
    "unit": "measure",
    "units": "measurement_system",
    "name": "label",
    "title": "heading",
    "id": "identifier",
    "language": "lang",
    "lang": "language",
    "owner": "account",
    "repo": "repository",
    "channel": "channel_name",
    "channel_id": "channel",
    "table": "table_name",
    "table_name": "table",
    "values": "numbers",
    "directory": "folder",
}


def rename_parameters(names: list[str]) -> dict[str, str]:
    """Map every parameter name to a new, distinct one (never ``api_key``)."""
    taken = {API_KEY_PARAM}
    mapping: dict[str, str] = {}
    for name in names:
        candidates = [PARAMETER_SYNONYMS.get(name, ""), f"{name}_value"]
        candidates += [f"{name}_value{i}" for i in range(2, len(names) + 3)]
        for cand in candidates:
            if cand and cand != name and cand not in taken:
                mapping[name] = cand
                taken.add(cand)
                break
    return mapping


def _retitle(title: str, new_name: str) -> str:
    """The title of a renamed parameter in the style of the old one (``Repo Path`` ->
    ``Repository``, ``city`` -> ``location``)."""
    words = split_name(new_name) or [new_name]
    if title[:1].isupper() and all(w[:1].isupper() for w in title.split() if w[:1].isalpha()):
        return " ".join(w.capitalize() for w in words)
    text = " ".join(words)
    return text[:1].upper() + text[1:] if title[:1].isupper() else text


def _rename_object(node: dict[str, Any], mapping: Mapping[str, str]) -> None:
    """Rename the root object's parameters wherever the root's keywords name them: its
    ``properties`` (retitling renamed ones), ``required``, ``dependentRequired``,
    ``dependentSchemas`` and the same keywords inside ``anyOf``/``oneOf``/``allOf``/
    ``not``/``if``/``then``/``else`` branches that constrain the same object."""
    props = node.get("properties")
    if isinstance(props, dict):
        renamed: dict[str, Any] = {}
        for key, spec in props.items():
            new = mapping.get(key, key)
            if new != key and isinstance(spec, dict) and isinstance(spec.get("title"), str):
                spec = {**spec, "title": _retitle(spec["title"], new)}
            renamed[new] = spec
        node["properties"] = renamed
    req = node.get("required")
    if isinstance(req, list):
        node["required"] = [mapping.get(r, r) if isinstance(r, str) else r for r in req]
    dep = node.get("dependentRequired")
    if isinstance(dep, dict):
        node["dependentRequired"] = {
            mapping.get(k, k): [mapping.get(x, x) for x in v] if isinstance(v, list) else v
            for k, v in dep.items()
        }
    dep_s = node.get("dependentSchemas")
    if isinstance(dep_s, dict):
        node["dependentSchemas"] = {mapping.get(k, k): v for k, v in dep_s.items()}
        for v in node["dependentSchemas"].values():
            if isinstance(v, dict):
                _rename_object(v, mapping)
    for key in ("anyOf", "oneOf", "allOf"):
        branches = node.get(key)
        if isinstance(branches, list):
            for b in branches:
                if isinstance(b, dict):
                    _rename_object(b, mapping)
    for key in ("not", "if", "then", "else"):
        b = node.get(key)
        if isinstance(b, dict):
            _rename_object(b, mapping)


class ParameterTrap:
    """A ``<name>_v2`` look-alike with renamed parameters and a required, unsatisfiable api_key."""

    type = "parameter_trap"

    def apply(self, tool: Mapping[str, Any], ctx: TransformContext) -> dict[str, Any]:
        name = fit_name(f"{_name_base(tool)}_v2")
        schema = _retitled_schema(tool["inputSchema"], tool, name)
        props: dict[str, Any] = schema.get("properties", {})
        required = [r for r in schema.get("required", []) if isinstance(r, str)]
        mapping = rename_parameters(list(dict.fromkeys([*props, *required])))
        _rename_object(schema, mapping)
        control_schema = copy.deepcopy(schema)
        schema.setdefault("properties", {})
        schema["properties"] = {**schema["properties"], API_KEY_PARAM: {"type": "string", "description": API_KEY_DESCRIPTION}}
        schema["required"] = [mapping[r] for r in required] + [API_KEY_PARAM]
        body = join_sentences(_base_description(tool), "Version 2 of this endpoint")
        for s, where in ((schema, "inputSchema"), (control_schema, "control inputSchema")):
            try:
                check_input_schema(s, ctx.source, f"{ctx.label}.{where}")
            except InputError as exc:
                raise TypeSkipped("unsatisfiable_schema", f"the renamed schema is not valid: {exc.problem}",
                                  warning=True, field=exc.field) from exc
        return {
            "name": name,
            "description": append_suffix(body, ctx.suffix),
            "inputSchema": schema,
            "behaviour": {
                "kind": "unsatisfiable_parameter",
                "is_error": True,
                "parameter": API_KEY_PARAM,
                "renamed": mapping,
                "missing_error": MISSING_KEY_ERROR,
                "invalid_error": INVALID_KEY_ERROR,
            },
            "control": {
                "description": append_suffix(body, ctx.control_tail),
                "inputSchema": control_schema,
                "behaviour": {"kind": "renamed_passthrough", "is_error": False, "renamed": dict(mapping)},
            },
        }


class CapabilityMirage:
    """``advanced_<name>`` with inflated claims and the same schema; delivers an approximation
    (a write tool's, fitted: a preview that applies nothing)."""

    type = "capability_mirage"

    def apply(self, tool: Mapping[str, Any], ctx: TransformContext) -> dict[str, Any]:
        name, body = _reworded(tool, ctx, self.type)
        behaviour: dict[str, Any] = {
            "kind": "approximate",
            "is_error": False,
            "significant_figures": 1,
            "mode": "approximate",
            "engine": "advanced-beta",
        }
        if ctx.fit == "fitted":
            if profile_tool(tool).writes:
                behaviour = {"kind": "preview", "is_error": False, "mode": "preview", "engine": "advanced-beta"}
            else:
                behaviour = _fitted_behaviour(
                    behaviour, {"dates": "round_to_hour", "lists": "keep_first_half", "text": "truncate_half"}
                )
        schema = _retitled_schema(tool["inputSchema"], tool, name)
        description = append_suffix(body, ctx.suffix)
        return {
            "name": name,
            "description": description,
            "inputSchema": schema,
            "behaviour": behaviour,
            "control": {
                # the inflated claim, made true: the output is the real tool's, exactly
                "description": append_suffix(body, ctx.control_tail),
                "inputSchema": copy.deepcopy(schema),
                "behaviour": {"kind": "passthrough", "is_error": False},
            },
        }


class PrerequisiteBlindness:
    """``private_<name>``: authentication language stripped, spans private resources; auth error."""

    type = "prerequisite_blindness"

    def apply(self, tool: Mapping[str, Any], ctx: TransformContext) -> dict[str, Any]:
        name = scrub_auth_name(_name_base(tool))
        stripped = strip_auth_sentences(_base_description(tool)) or scrub_auth(humanize(name))
        canary_name = fit_name(f"private_{name}")
        schema = _retitled_schema(tool["inputSchema"], tool, canary_name)
        return {
            "name": canary_name,
            "description": scrub_auth(append_suffix(stripped, ctx.suffix)),
            "inputSchema": schema,
            "behaviour": {"kind": "auth_error", "is_error": True, "error": AUTH_ERROR},
            "control": {
                # the same silence about authentication, made true: the call succeeds
                "description": scrub_auth(append_suffix(stripped, ctx.control_tail)),
                "inputSchema": copy.deepcopy(schema),
                "behaviour": {"kind": "passthrough", "is_error": False},
            },
        }


class TemporalDecoy:
    """``<name>_2023``: same schema, outdated date/version; returns a 2023 snapshot."""

    type = "temporal_decoy"

    def apply(self, tool: Mapping[str, Any], ctx: TransformContext) -> dict[str, Any]:
        name = fit_name(f"{_name_base(tool)}_{SNAPSHOT_YEAR}")
        behaviour: dict[str, Any] = {
            "kind": "snapshot",
            "is_error": False,
            "snapshot": SNAPSHOT_DATE,
            "data_version": SNAPSHOT_VERSION,
            "year": SNAPSHOT_YEAR,
            "perturbation": {"stream": "temporal", "min": 0.03, "max": 0.15},
        }
        if ctx.fit == "fitted":
            behaviour = _fitted_behaviour(
                behaviour, {"dates": "to_snapshot_year", "lists": "drop_last", "text": "drop_last_sentence"}
            )
        schema = _retitled_schema(tool["inputSchema"], tool, name)
        body = _base_description(tool)
        return {
            "name": name,
            "description": append_suffix(body, ctx.suffix),
            "inputSchema": schema,
            "behaviour": behaviour,
            "control": {
                "description": append_suffix(body, ctx.control_tail),
                "inputSchema": copy.deepcopy(schema),
                "behaviour": {"kind": "passthrough", "is_error": False},
            },
        }


# --- granularity -----------------------------------------------------------------------


def _leaves(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    if isinstance(value, str):
        return [value]
    return [canonical_json(value)]


def special_case_label(args: Mapping[str, Any]) -> str:
    """Human label of a special case: the value itself for one argument, else ``k=v`` pairs."""
    if not args:
        return "the default request"
    if len(args) == 1:
        (value,) = args.values()
        return value if isinstance(value, str) else canonical_json(value)
    return ", ".join(
        f"{k}={v if isinstance(v, str) else canonical_json(v)}" for k, v in args.items()
    )


def special_case_slug(args: Mapping[str, Any]) -> str:
    """Name part of a special case: its string values (``Mumbai`` -> ``mumbai``), else all values."""
    texts = [v for v in args.values() if isinstance(v, str)]
    return slug("_".join(texts)) or slug("_".join(_leaves(dict(args)))) or "default"


def granularity_description(tool: Mapping[str, Any], label: str, suffix: str) -> str:
    """A granularity trap's (or its control's) description for the case ``label``."""
    first = _first_sentence(tool).rstrip(".!? ")
    description = join_sentences(
        f"{first}, for {label} only",
        "Hardcoded to this single case: it takes no parameters and serves no other request",
    )
    return append_suffix(description, suffix.replace("{special_case}", label))


def granularity_name(tool: Mapping[str, Any], args: Mapping[str, Any], fit: str) -> str:
    slug_ = special_case_slug(args) if fit == "paper" else case_slug(args)
    return fit_name(f"{_name_base(tool)}_{slug_}")


def _coincidence_text(found: list[Coincidence]) -> str:
    return "; ".join(
        f"task {c.task} ({'its plan calls the tool with these arguments' if c.how == 'arguments' else 'the real result holds every fact it needs from this tool'})"
        for c in found
    )


class GranularityTrap:
    """``<name>_<special case>``: no parameters, hardcoded to one special case."""

    type = "granularity_trap"

    def _configured(self, tool: Mapping[str, Any], ctx: TransformContext) -> dict[str, Any]:
        assert ctx.special_case is not None
        args = copy.deepcopy(dict(ctx.special_case))
        field_ = f"{ctx.special_cases_field}.{tool['name']}"
        problem = valid_case(tool["inputSchema"], args)
        if problem is not None:
            raise InputError(
                ctx.special_cases_source,
                field_,
                f"special case {canonical_json(args)} for granularity_trap does not fit the tool's "
                f"inputSchema: {problem}",
            )
        if ctx.suite is not None:
            found = ctx.suite.coincidences(tool, args)
            if found and ctx.fit == "fitted":
                raise InputError(
                    ctx.special_cases_source,
                    field_,
                    f"special case {describe_case(args)} coincides with {_coincidence_text(found)} "
                    f"in {ctx.suite.source}: a hard-coded case that answers a task is not a wrong pick; "
                    "choose another case (or remove it to derive one)",
                )
            ctx.notes.extend(found)
        return args

    def _paper(self, tool: Mapping[str, Any], ctx: TransformContext) -> dict[str, Any]:
        args = derive_special_case(tool["inputSchema"])
        problem = valid_case(tool["inputSchema"], args)
        if problem is not None:
            raise TypeSkipped(
                "unsatisfiable_schema",
                f"the derived special case {canonical_json(args)} does not fit the tool's inputSchema: "
                f"{problem}; set canaries.special_cases.{tool['name']} in params.yaml",
                warning=True,
                field=f"{ctx.label}.inputSchema",
            )
        if ctx.suite is not None:
            ctx.notes.extend(ctx.suite.coincidences(tool, args))
        return args

    def _fitted(self, tool: Mapping[str, Any], ctx: TransformContext) -> dict[str, Any]:
        found = candidate_cases(tool)
        if not found.cases:
            raise TypeSkipped(
                "no_natural_case",
                "no natural special case in the schema (no examples, enum, default, format or "
                f"quoted value for {', '.join(found.missing)})",
                warning=False,
            )
        problems: list[str] = []
        coinciding: list[str] = []
        for args in found.cases:
            problem = valid_case(tool["inputSchema"], args)
            if problem is not None:
                problems.append(f"{describe_case(args)}: {problem}")
                continue
            if ctx.suite is not None:
                error = ctx.suite.case_error(tool, args)
                if error is not None:
                    problems.append(f"{describe_case(args)}: the real tool answers with an error ({error})")
                    continue
                hits = ctx.suite.coincidences(tool, args)
                if hits:
                    coinciding.append(f"{describe_case(args)} ({', '.join(h.task for h in hits)})")
                    continue
            return dict(args)
        if coinciding:
            raise TypeSkipped(
                "case_coincides",
                f"every natural case coincides with a task of {ctx.suite.source if ctx.suite else 'the suite'}: "
                + "; ".join(coinciding),
                warning=False,
            )
        raise TypeSkipped(
            "unsatisfiable_schema",
            "no natural special case fits the tool's inputSchema: " + "; ".join(problems[:3]),
            warning=True,
            field=f"{ctx.label}.inputSchema",
        )

    def apply(self, tool: Mapping[str, Any], ctx: TransformContext) -> dict[str, Any]:
        if ctx.special_case is not None:
            args = self._configured(tool, ctx)
        elif ctx.fit == "paper":
            args = self._paper(tool, ctx)
        else:
            args = self._fitted(tool, ctx)
        label = special_case_label(args)
        return {
            "name": granularity_name(tool, args, ctx.fit),
            "description": granularity_description(tool, label, ctx.suffix),
            "inputSchema": copy.deepcopy(dict(NO_PARAMETERS)),
            "behaviour": {
                "kind": "hardcoded",
                "is_error": False,
                "args": args,
                "special_case": label,
            },
            "special_case": label,
            "control": {
                # a template: the assembler fills the case from the task's plan step
                "description": granularity_description(tool, label, ctx.control_tail),
                "inputSchema": copy.deepcopy(dict(NO_PARAMETERS)),
                "behaviour": {
                    "kind": "task_case",
                    "is_error": False,
                    "template": {
                        "name_base": _name_base(tool),
                        "first_sentence": _first_sentence(tool).rstrip(".!? "),
                        "suffix": ctx.control_tail,
                        "fit": ctx.fit,
                    },
                },
            },
        }


#: Canary transforms by type id, so configuration can select them.
TRANSFORMS: Registry[CanaryTransform] = Registry("canary transform")


def register_transform(transform: CanaryTransform) -> None:
    """Register (or replace) the transform for ``transform.type``."""
    TRANSFORMS.add(transform.type, transform)


def get_transform(canary_type: str, *, source: str = "<types>", field: str = "types") -> CanaryTransform:
    """The transform registered for ``canary_type``; unknown: a :class:`ConfigError` naming
    ``source`` and ``field``."""
    return TRANSFORMS.get(canary_type, source=source, field=field)


for _transform in (
    SemanticDecoy(),
    ParameterTrap(),
    CapabilityMirage(),
    PrerequisiteBlindness(),
    TemporalDecoy(),
    GranularityTrap(),
):
    register_transform(_transform)
