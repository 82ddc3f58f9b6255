"""What every canary transform shares: the contract (:class:`CanaryTransform`, its
:class:`TransformContext`, :class:`TypeSkipped`), the registry by type id, and the helpers
that read the real tool (its function-safe name, its description) and build a canary that
keeps the real tool's schema."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ...registry import Registry
from .._banks import BANKS, Entry
from .._cases import Coincidence, TaskSuite
from .._rewriters import Rewriter
from .._text import append_suffix, end_sentence, humanize, sanitize_name, sentences


class TypeSkipped(Exception):
    """The tool cannot host this canary type (``warning``: a problem with its schema)."""

    def __init__(self, code: str, reason: str, *, warning: bool, field: str = "") -> None:
        super().__init__(reason)
        self.code, self.reason, self.warning, self.field = code, reason, warning, field


@dataclass(frozen=True)
class TransformContext:
    """What a transform may use besides the tool: the pool's suffix (and its twin's) for its
    type and variant (placeholders filled, except ``{special_case}``), the rewriter, the fit
    mode and wording style, the special case and the task suite (granularity), the variant's
    slot (``variant``, 1-based) and its bank entry (``wording``: :mod:`.._banks`), and where
    errors should point. ``memo`` is shared by the variants of one (tool, type)."""

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
    variant: int = 1
    memo: dict[str, Any] = field(default_factory=dict, compare=False)
    wording: Entry | None = None

    def entry_of(self, canary_type: str) -> Entry:
        """The variant's bank entry (entry 01 of ``canary_type`` when none was drawn)."""
        return self.wording if self.wording is not None else BANKS[canary_type][0]

    @property
    def control_tail(self) -> str:
        """The twin's suffix (the generator resolves it for the variant: :mod:`.._suffixes`)."""
        return self.control_suffix or ""


def tell(name: str, *fragments: str) -> dict[str, Any]:
    """A record's declared tell: the part of its name and the fragments of its description
    that carry the probed property (a canary's) or its healthy value (a twin's); audited by
    :func:`canarykit.canaries.audit_pool`."""
    return {"name": name, "description": [f for f in fragments if f and f.strip()]}


@runtime_checkable
class CanaryTransform(Protocol):
    """Builds one canary type from a real tool."""

    type: str

    def apply(self, tool: Mapping[str, Any], ctx: TransformContext) -> dict[str, Any]: ...


#: Canary transforms by type id, so configuration can select them.
TRANSFORMS: Registry[CanaryTransform] = Registry("canary transform")


def register_transform(transform: CanaryTransform) -> None:
    """Register (or replace) the transform for ``transform.type``."""
    TRANSFORMS.add(transform.type, transform)


def get_transform(canary_type: str, *, source: str = "<types>", field: str = "types") -> CanaryTransform:
    """The transform registered for ``canary_type``; unknown: a :class:`ConfigError` naming
    ``source`` and ``field``."""
    return TRANSFORMS.get(canary_type, source=source, field=field)


def name_base(tool: Mapping[str, Any]) -> str:
    """The real name in the function-calling charset: MCP allows dots (``github.create_issue``)
    and 128 characters; OpenAI-style function names do not, so canary names never carry them."""
    return sanitize_name(str(tool["name"])) or "tool"


def base_description(tool: Mapping[str, Any]) -> str:
    """The real tool's description, else a sentence made from its name."""
    return str(tool.get("description") or "").strip() or end_sentence(humanize(str(tool["name"])))


def first_sentence(tool: Mapping[str, Any]) -> str:
    parts = sentences(base_description(tool))
    return parts[0] if parts else humanize(str(tool["name"]))


def retitled_schema(schema: Mapping[str, Any], tool: Mapping[str, Any], new_name: str) -> dict[str, Any]:
    """A copy of ``schema`` whose top-level ``title`` no longer names the real tool
    (pydantic servers title it ``<function>Arguments``)."""
    out = copy.deepcopy(dict(schema))
    title = out.get("title")
    if isinstance(title, str):
        for real in {str(tool["name"]), str(tool.get("mcp_name") or tool["name"])}:
            if real and real in title:
                out["title"] = title.replace(real, new_name)
    return out


def fitted_behaviour(base: dict[str, Any], ops: Mapping[str, str]) -> dict[str, Any]:
    """``base`` with the fitted defects of non-numeric results (dates, lists, text)."""
    return {**base, "non_numeric": dict(ops)}


def same_schema_canary(
    tool: Mapping[str, Any],
    ctx: TransformContext,
    name: str,
    body: str,
    behaviour: dict[str, Any],
    *,
    wording: Callable[[str], str] | None = None,
    twin_name: str | None = None,
    twin_body: str | None = None,
    name_tells: tuple[str, str] = ("", ""),
    body_tell: str = "",
) -> dict[str, Any]:
    """A canary named ``name`` that keeps the real tool's schema (retitled), described by
    ``body`` and the pool's suffix, and its twin: ``twin_name`` (default: the same name),
    ``twin_body`` (default: the same body) with the twin's suffix, the real tool's answer.
    ``wording`` finishes both descriptions. ``name_tells`` are the (canary, twin) name parts
    that carry the tell, ``body_tell`` a claim of the canary's body its twin's lacks."""
    finish = wording or (lambda text: text)
    schema = retitled_schema(tool["inputSchema"], tool, name)
    twin = twin_name or name
    return {
        "name": name,
        "description": finish(append_suffix(body, ctx.suffix)),
        "inputSchema": schema,
        "behaviour": behaviour,
        "tell": tell(name_tells[0], finish(body_tell) if body_tell else "", finish(ctx.suffix) if ctx.suffix else ""),
        "control": {
            "name": twin,
            "description": finish(append_suffix(body if twin_body is None else twin_body, ctx.control_tail)),
            "inputSchema": retitled_schema(tool["inputSchema"], tool, twin),
            "behaviour": {"kind": "passthrough", "is_error": False},
            "tell": tell(name_tells[1], finish(ctx.control_tail) if ctx.control_tail else ""),
        },
    }
