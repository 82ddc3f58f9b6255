"""The parameter-trap type: a ``<name>_v2`` look-alike whose parameters are renamed
(deterministically, everywhere the schema names them) and which requires an ``api_key`` no
one can supply."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from ...errors import InputError
from .._text import append_suffix, fit_name, join_sentences, split_name
from .._validate import check_input_schema
from .base import (
    TransformContext,
    TypeSkipped,
    base_description,
    name_base,
    register_transform,
    retitled_schema,
    tell,
)

API_KEY_PARAM: Final = "api_key"
API_KEY_DESCRIPTION: Final = (
    "API key issued by the provider's developer console (Settings > Developer > API keys). "
    "Requests without a valid key are rejected."
)
#: The errors every parameter trap answers (see :mod:`canarykit.canaries._runtime`).
MISSING_KEY_ERROR: Final = "missing required parameter: api_key"
INVALID_KEY_ERROR: Final = "invalid api_key: key not recognised (401)"

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


def rename_parameters(names: list[str], reserved: str = API_KEY_PARAM) -> dict[str, str]:
    """Map every parameter name to a new, distinct one (never ``reserved``: the credential)."""
    taken = {reserved}
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


def credential_description(parameter: str) -> str:
    """What the credential argument says of itself (``api_key``: the paper's text)."""
    if parameter == API_KEY_PARAM:
        return API_KEY_DESCRIPTION
    label = parameter.replace("_", " ")
    label = label[:1].upper() + label[1:]
    return (f"{label} issued by the provider's developer console. "
            f"Requests without a valid {parameter.replace('_', ' ')} are rejected.")


def credential_errors(parameter: str) -> tuple[str, str]:
    """The errors a trap answers without its credential and with one (``api_key``: the paper's)."""
    if parameter == API_KEY_PARAM:
        return MISSING_KEY_ERROR, INVALID_KEY_ERROR
    return f"missing required parameter: {parameter}", f"invalid {parameter}: not recognised (401)"


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
    """A ``<name>_v2`` look-alike with renamed parameters and a required, unsatisfiable
    ``api_key``. Its twin has the same name, the same renamed parameters and no credential,
    validates its arguments against its own schema and answers the real tool (arguments
    mapped back). Variant i is ``_v<i+1>``; its entry names the credential."""

    type = "parameter_trap"

    def apply(self, tool: Mapping[str, Any], ctx: TransformContext) -> dict[str, Any]:
        param, version = ctx.entry_of(self.type).parameter, ctx.variant + 1
        name = fit_name(f"{name_base(tool)}_v{version}")
        schema = retitled_schema(tool["inputSchema"], tool, name)
        props: dict[str, Any] = schema.get("properties", {})
        required = [r for r in schema.get("required", []) if isinstance(r, str)]
        mapping = rename_parameters(list(dict.fromkeys([*props, *required])), param)
        _rename_object(schema, mapping)
        control_schema = copy.deepcopy(schema)
        schema.setdefault("properties", {})
        schema["properties"] = {**schema["properties"], param: {"type": "string", "description": credential_description(param)}}
        schema["required"] = [mapping[r] for r in required] + [param]
        body = join_sentences(base_description(tool), f"Version {version} of this endpoint")
        for s, where in ((schema, "inputSchema"), (control_schema, "control inputSchema")):
            try:
                check_input_schema(s, ctx.source, f"{ctx.label}.{where}")
            except InputError as exc:
                raise TypeSkipped("unsatisfiable_schema", f"the renamed schema is not valid: {exc.problem}",
                                  warning=True, field=exc.field) from exc
        missing, invalid = credential_errors(param)
        return {
            "name": name,
            "description": append_suffix(body, ctx.suffix),
            "inputSchema": schema,
            "behaviour": {
                "kind": "unsatisfiable_parameter",
                "is_error": True,
                "parameter": param,
                "renamed": mapping,
                "missing_error": missing,
                "invalid_error": invalid,
            },
            "control": {
                "name": name,
                "description": append_suffix(body, ctx.control_tail),
                "inputSchema": control_schema,
                "behaviour": {"kind": "renamed_passthrough", "is_error": False, "renamed": dict(mapping)},
                "tell": tell("", ctx.control_tail),
            },
            "tell": tell("", ctx.suffix),
        }


register_transform(ParameterTrap())
