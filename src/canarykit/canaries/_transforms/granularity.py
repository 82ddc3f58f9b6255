"""The granularity-trap type: the real tool hard-coded to one special case, with no
parameters. The case comes from the configuration, is derived from the schema (``paper``:
placeholders allowed) or drawn from the schema's natural values (``fitted``), and is checked
against the task suite so that a hard-coded case never answers a task."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from ...errors import InputError
from ...store.jsonio import canonical_json
from .._banks import entry
from .._cases import Coincidence, candidate_cases, case_slug, describe_case, valid_case
from .._paper import derive_special_case
from .._text import append_suffix, fit_name, join_sentences, sentences, slug
from .base import (
    TransformContext,
    TypeSkipped,
    base_description,
    first_sentence,
    name_base,
    register_transform,
    retitled_schema,
)

#: The input schema of every granularity trap: no parameters at all.
NO_PARAMETERS: Final[Mapping[str, Any]] = {
    "type": "object",
    "properties": {},
    "additionalProperties": False,
}


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


def case_description(first: str, label: str, suffix: str) -> str:
    """The description of a tool whose first sentence is ``first`` hard-coded to the case
    ``label``, with ``suffix`` (its ``{special_case}`` filled in)."""
    description = join_sentences(
        f"{first}, for {label} only",
        "Hardcoded to this single case: it takes no parameters and serves no other request",
    )
    return append_suffix(description, suffix.replace("{special_case}", label))


def granularity_description(tool: Mapping[str, Any], label: str, suffix: str) -> str:
    """A granularity trap's description for the case ``label``."""
    return case_description(first_sentence(tool).rstrip(".!? "), label, suffix)


def case_name(base: str, args: Mapping[str, Any], fit: str | None) -> str:
    """``<base>_<case>``: the name of the tool ``base`` hard-coded to ``args`` (the paper's
    slug of the values under ``fit: paper``, else the case's own)."""
    slug_ = special_case_slug(args) if fit == "paper" else case_slug(args)
    return fit_name(f"{base}_{slug_}")


def granularity_name(tool: Mapping[str, Any], args: Mapping[str, Any], fit: str) -> str:
    return case_name(name_base(tool), args, fit)


def _coincidence_text(found: list[Coincidence]) -> str:
    return "; ".join(
        f"task {c.task} ({'its plan calls the tool with these arguments' if c.how == 'arguments' else 'the real result holds every fact it needs from this tool'})"
        for c in found
    )


#: The twin's middle sentence, shortest first: the one that brings the twin's description
#: nearest to the canary's length is taken (``{names}``: the case's parameters).
GENERAL_SENTENCES: Final = (
    "Takes the standard parameters and serves every request",
    "Takes the parameters {names} and serves every request",
    "It takes the standard parameters, {names}, and serves every request it is given",
    "It takes the standard parameters, {names}, reads the case from them and serves "
    "every request it is given, as it is given",
)
#: The same for a case without parameters (``fit: paper`` on a tool that takes none).
NAMELESS_SENTENCES: Final = (
    "Takes the standard parameters and serves every request",
    "It takes the standard parameters of the tool and serves every request it is given",
    "It takes the standard parameters of the tool, reads the case from them and serves every "
    "request it is given, as it is given",
)


def _names(args: Mapping[str, Any]) -> str:
    words = [str(k).replace("_", " ") for k in args]
    return " and ".join(words) if len(words) <= 2 else ", ".join(words[:-1]) + " and " + words[-1]


def _schema_notes(tool: Mapping[str, Any]) -> list[str]:
    """What the real tool says of itself beyond its first sentence: its other sentences, then
    its parameters with their types (each shorter list a candidate too)."""
    notes = sentences(base_description(tool))[1:]
    props = tool["inputSchema"].get("properties", {})
    props = props if isinstance(props, Mapping) else {}
    typed = [f"{k} ({v['type'] if isinstance(v, Mapping) and isinstance(v.get('type'), str) else 'any value'})"
             for k, v in props.items()]
    notes += ["Parameters: " + ", ".join(typed[:n]) for n in range(len(typed), 0, -1)]
    return notes


def general_description(tool: Mapping[str, Any], args: Mapping[str, Any], suffix: str, target: int) -> str:
    """The granularity twin's description: the real tool's first sentence "for any request",
    a neutral sentence on its parameters and ``suffix``, its length as near ``target`` (the
    canary's) as :data:`GENERAL_SENTENCES` allow; while it is shorter than 90% of it, what
    the real tool says of itself follows (its other sentences, its parameters and their types:
    what a general tool would say; each only if it keeps the length within 110%), before the
    suffix."""
    first = first_sentence(tool).rstrip(".!? ")
    names = _names(args)
    middles = GENERAL_SENTENCES if names else NAMELESS_SENTENCES
    head = [join_sentences(f"{first}, for any request", m.format(names=names)) for m in middles]
    best = min(head, key=lambda h: abs(len(append_suffix(h, suffix)) - target))
    listed = False
    for note in _schema_notes(tool):
        if len(append_suffix(best, suffix)) >= 0.9 * target:
            break
        if listed and note.startswith("Parameters: "):
            continue
        longer = join_sentences(best, note)
        if len(append_suffix(longer, suffix)) <= 1.1 * target:
            best, listed = longer, listed or note.startswith("Parameters: ")
    return append_suffix(best, suffix)


class GranularityTrap:
    """``<name>_<special case>``: no parameters, hardcoded to one special case. Its twin
    ``<name>_general`` takes the real tool's schema and serves any case: the real answer for
    the arguments given. Variant i hard-codes the i-th case (the configured or derived one
    first, then the schema's natural cases)."""

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

    def _natural(self, tool: Mapping[str, Any], ctx: TransformContext, k: int, exclude: list[str]) -> list[dict[str, Any]]:
        """The first ``k`` natural cases that fit the schema, that the real tool answers and
        that no task's plan calls (cases in ``exclude``, canonical JSON, left out); with none
        at all, the reason is a :class:`TypeSkipped`."""
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
        out: list[dict[str, Any]] = []
        for args in found.cases:
            if canonical_json(args) in exclude:
                continue
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
            out.append(dict(args))
            if len(out) == k:
                break
        if out or exclude:
            return out
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

    def case(self, tool: Mapping[str, Any], ctx: TransformContext) -> dict[str, Any]:
        """The case of variant ``ctx.variant``; a :class:`TypeSkipped` with code
        ``bank_exhausted`` when the tool has fewer distinct cases."""
        cases: list[dict[str, Any]] = ctx.memo.setdefault("cases", [])
        if not cases:
            if ctx.special_case is not None:
                cases.append(self._configured(tool, ctx))
            elif ctx.fit == "paper":
                cases.append(self._paper(tool, ctx))
        while len(cases) < ctx.variant and not ctx.memo.get("exhausted"):
            more = self._natural(tool, ctx, ctx.variant - len(cases), [canonical_json(c) for c in cases])
            cases.extend(more)
            ctx.memo["exhausted"] = len(cases) < ctx.variant
        if len(cases) < ctx.variant:
            raise TypeSkipped("bank_exhausted", f"only {len(cases)} distinct cases", warning=False)
        return copy.deepcopy(cases[ctx.variant - 1])

    def apply(self, tool: Mapping[str, Any], ctx: TransformContext) -> dict[str, Any]:
        args = self.case(tool, ctx)
        label = special_case_label(args)
        description = granularity_description(tool, label, ctx.suffix)
        twin_name = fit_name(f"{name_base(tool)}_{entry(self.type, ctx.variant).values['twin_word']}")
        name = granularity_name(tool, args, ctx.fit)
        names: list[str] = ctx.memo.setdefault("names", [])
        if name in names:  # another variant's case has the same string values: name them all
            name = fit_name(f"{name_base(tool)}_{slug('_'.join(_leaves(args)), 40) or ctx.variant}")
        names.append(name)
        return {
            "name": name,
            "description": description,
            "inputSchema": copy.deepcopy(dict(NO_PARAMETERS)),
            "behaviour": {
                "kind": "hardcoded",
                "is_error": False,
                "args": args,
                "special_case": label,
            },
            "special_case": label,
            "control": {
                "name": twin_name,
                "description": general_description(tool, args, ctx.control_tail, len(description)),
                "inputSchema": retitled_schema(tool["inputSchema"], tool, twin_name),
                "behaviour": {"kind": "passthrough", "is_error": False},
            },
        }


register_transform(GranularityTrap())
