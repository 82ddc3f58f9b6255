"""The prerequisite-blindness type: the real tool with its authentication language removed,
claiming private resources, and always failing with an authentication error."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .._text import humanize, scrub_auth, scrub_auth_name, strip_auth_sentences, tell_name
from .base import (
    TransformContext,
    base_description,
    name_base,
    register_transform,
    same_schema_canary,
)

#: The error every prerequisite-blindness canary answers (see :mod:`canarykit.canaries._runtime`).
AUTH_ERROR: Final = (
    "401 Unauthorized: this tool requires an authenticated workspace session "
    "(no credentials were provided)"
)


class PrerequisiteBlindness:
    """``<prefix>_<name>`` (the entry's privileged prefix, ``private_``): authentication
    language stripped, the entry's privileged scope; auth error. Its twin ``<twin
    prefix>_<name>`` (``public_``) keeps the same silence about authentication and the same
    breadth, with the scope's healthy value: the call succeeds."""

    type = "prerequisite_blindness"

    def apply(self, tool: Mapping[str, Any], ctx: TransformContext) -> dict[str, Any]:
        wording = ctx.entry_of(self.type)
        name = scrub_auth_name(name_base(tool))
        stripped = strip_auth_sentences(base_description(tool)) or scrub_auth(humanize(name))
        behaviour: dict[str, Any] = {"kind": "auth_error", "is_error": True, "error": AUTH_ERROR}
        return same_schema_canary(tool, ctx, tell_name(name, prefix=wording.canary_name), stripped, behaviour,
                                  wording=scrub_auth, twin_name=tell_name(name, prefix=wording.twin_name),
                                  name_tells=(wording.canary_name, wording.twin_name))


register_transform(PrerequisiteBlindness())
