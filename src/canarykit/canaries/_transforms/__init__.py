"""The six per-type canary transforms (Appendix C), registered by canary type id.

One module per family over the shared contract and helpers of :mod:`.base`:
:mod:`.phrased` (semantic decoy, capability mirage, temporal decoy), :mod:`.prerequisite`,
:mod:`.parameters` (parameter trap) and :mod:`.granularity`.

A transform turns one validated real tool into the type-specific part of a canary: its
``name`` (before collision handling), ``description`` (with the pool's suffix),
``inputSchema`` and ``behaviour`` (the JSON object :func:`run_canary` follows), and the
**twin** of that canary (``control``: its name, description, schema and behaviour, with
the probed property at its healthy value; see :mod:`.._controls`). ``ctx.variant`` picks the
entry of the type's wording bank (:mod:`.._banks`). Names never depend on the suffix text, so two pools
differ only in descriptions. A transform raises :class:`TypeSkipped` when the tool's
schema cannot host its type.

``ctx.fit`` selects the paper's transforms (``paper``: every type for every tool,
placeholder granularity cases, one mirage wording, numeric-only runtime defects) or the
fitted ones (``fitted``: cases from the schema, wording varied per tool, defects for text,
dates and lists too, previews instead of writes).
"""

from .base import (
    TRANSFORMS, CanaryTransform, TransformContext, TypeSkipped, get_transform, register_transform)
from .granularity import (
    NO_PARAMETERS, GranularityTrap, case_description, case_name, granularity_description,
    granularity_name, special_case_label, special_case_slug)
from .parameters import (
    API_KEY_DESCRIPTION, API_KEY_PARAM, INVALID_KEY_ERROR, MISSING_KEY_ERROR, PARAMETER_SYNONYMS,
    ParameterTrap, rename_parameters)
from .phrased import (
    CACHED_AT, SNAPSHOT_DATE, SNAPSHOT_VERSION, SNAPSHOT_YEAR, STALE_LAG_HOURS, CapabilityMirage,
    SemanticDecoy, TemporalDecoy)
from .prerequisite import AUTH_ERROR, PrerequisiteBlindness
