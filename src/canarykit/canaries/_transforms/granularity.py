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
from .._cases import Coincidence, candidate_cases, case_slug, describe_case, valid_case
from .._paper import derive_special_case
from .._text import append_suffix, fit_name, join_sentences, slug, tell_name
from .base import (
    TransformContext,
    TypeSkipped,
    first_sentence,
    name_base,
    register_transform,
    retitled_schema,
    tell,
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


def granularity_description(tool: Mapping[str, Any], label: str, suffix: str, fit: str = "fitted") -> str:
    """A granularity trap's description for the case ``label``: the real tool's first sentence
    and ``suffix`` (its ``{special_case}`` filled in); the paper's (:func:`case_description`)
    under ``fit: paper``."""
    first = first_sentence(tool).rstrip(".!? ")
    if fit == "paper":
        return case_description(first, label, suffix)
    return append_suffix(first, suffix.replace("{special_case}", label))


#: What the paper's granularity description says of its case beside the suffix (its tell).
PAPER_CASE_TELLS: Final = (", for {label} only", "Hardcoded to this single case: it takes no parameters and "
                           "serves no other request.")


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


class GranularityTrap:
    """``<name>_<tail>`` (the entry's tail around the case: ``get_forecast_mumbai``): no
    parameters, hard-coded to one special case, the entry's phrasing. Its twin
    ``<name>_<twin tail>`` (``get_forecast_general``) takes the real tool's schema and serves
    any case: the same first sentence, the entry's healthy phrasing, the real answer for the
    arguments given. Every variant hard-codes the same case (the configured or derived one,
    else the first natural case no task calls): variants reword one case; the case is an
    axis of its own (``canaries.special_cases``)."""

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
        """The one case of every variant (the configured or derived one, else the first
        natural case); a :class:`TypeSkipped` when the tool has none."""
        if "case" not in ctx.memo:
            if ctx.special_case is not None:
                ctx.memo["case"] = self._configured(tool, ctx)
            elif ctx.fit == "paper":
                ctx.memo["case"] = self._paper(tool, ctx)
            else:
                ctx.memo["case"] = self._natural(tool, ctx, 1, [])[0]
        return copy.deepcopy(ctx.memo["case"])

    def apply(self, tool: Mapping[str, Any], ctx: TransformContext) -> dict[str, Any]:
        args = self.case(tool, ctx)
        wording = ctx.entry_of(self.type)
        label = special_case_label(args)
        description = granularity_description(tool, label, ctx.suffix, ctx.fit)
        slug_ = special_case_slug(args) if ctx.fit == "paper" else case_slug(args)
        # the case's slug short enough that the tail keeps the entry's words and the base stays whole
        room = max(4, 25 - len(wording.canary_name.replace("{case}", "")))
        tail = wording.name_part(twin=False, case=slug(slug_, room) or slug_[:room])
        name = tell_name(name_base(tool), tail=tail)
        twin_name = tell_name(name_base(tool), tail=wording.twin_name)
        first = first_sentence(tool).rstrip(".!? ")
        told = [t.format(label=label) for t in PAPER_CASE_TELLS] if ctx.fit == "paper" else []
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
            "tell": tell(tail, *told, ctx.suffix.replace("{special_case}", label)),
            "control": {
                "name": twin_name,
                "description": append_suffix(first, ctx.control_tail),
                "inputSchema": retitled_schema(tool["inputSchema"], tool, twin_name),
                "behaviour": {"kind": "passthrough", "is_error": False},
                "tell": tell(wording.twin_name, ctx.control_tail),
            },
        }


register_transform(GranularityTrap())
