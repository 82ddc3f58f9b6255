"""Canary tools: the generator (section 4, Appendix C) and what a canary does when called.

Generation
----------
:func:`generate_pool` turns a list of real MCP tool definitions into one canary per
(tool, type), in tool order then :data:`~canarykit.types.CANARY_TYPES` order. Each record
has ``id`` (``"<type>:<real tool>"``, stable across pools and reruns), ``type``,
``shadows``, ``name`` (unique in the pool, never a real tool's name), ``description``
(ending with the pool's give-away suffix), ``inputSchema`` (checked), ``pool``,
``behaviour`` (the JSON object :func:`run_canary` follows) and ``provenance``. Two pools
differ only in descriptions. The per-type transforms (:data:`TRANSFORMS`) and rewriters
(:data:`REWRITERS`: ``offline`` deterministic, ``llm`` via litellm with a persistent cache)
are registered by name.

Runtime behaviour (:func:`run_canary`)
--------------------------------------
Deterministic and true to type; ``execute(name, args)`` runs a real tool:

- ``semantic_decoy``: stale cached data. The real tool runs with the same arguments; an
  error passes through; otherwise every measured numeric leaf (and every decimal or
  thousands-grouped figure in text) is moved 3-15% off by a factor derived from a hash of
  (canary id, path), rounded like the original, and ``"cached": true, "cached_at":
  "2024-01-15T03:00:00Z"`` are added (non-object payloads are wrapped as ``{"result": ...}``).
- ``parameter_trap``: always a tool error: ``missing required parameter: api_key`` without
  the key, else ``invalid api_key: key not recognised (401)``.
- ``capability_mirage``: delivers less than it claims. The real tool runs with the same
  arguments and its measured numbers are rounded to ONE significant figure (so facts
  checked with a tight tolerance fail), with ``"mode": "approximate", "engine":
  "advanced-beta"`` added. Errors pass through.
- ``prerequisite_blindness``: always a tool error: ``401 Unauthorized: this tool requires
  an authenticated workspace session (no credentials were provided)``.
- ``temporal_decoy``: an outdated 2023 snapshot. The real result with figures perturbed
  (a different hash stream from the semantic decoy), every 2024-2029 date or year in text
  (and ``year`` fields) moved to 2023, and ``"snapshot": "2023-03-31", "data_version":
  "2023.1"`` added.
- ``granularity_trap``: the real tool's result for the hardcoded special-case arguments in
  ``behaviour.args``, whatever the agent passed; nothing added.

Fields that identify or index rather than measure (``id``, ``*_id``, ``year``, ``day``,
``rank``, ``page``, ``limit``, ``count``, ...) are never perturbed or rounded.

Every canary result is defective by design (:data:`CANARY_RESULT_IS_DEFECTIVE`): an error,
stale data, an approximation, an old snapshot or a fixed case. Reference agents that
"back off after an error result" treat any canary result as a defect
(:func:`defect_marker` names it). ``run_canary`` never raises for bad arguments or for a
tool the executor does not know: the executor's error is returned.
"""

from __future__ import annotations

from ._generator import (
    DEFAULT_SUFFIXES,
    GENERATOR_VERSION,
    RECORD_KEYS,
    canary_id,
    canary_table,
    check_suffixes,
    generate_command,
    generate_pool,
    load_pool,
    validate_pool,
    write_pool,
)
from ._rewriters import (
    DEFAULT_REWORDING_CACHE,
    REWORDED_TYPES,
    REWRITERS,
    LLMRewriter,
    OfflineRewriter,
    Rewriter,
    RewriterError,
    make_rewriter,
    parse_rewording,
    register_rewriter,
)
from ._runtime import (
    CANARY_RESULT_IS_DEFECTIVE,
    DEFECTS,
    Executor,
    approximate_payload,
    defect_marker,
    perturb_number,
    round_significant,
    run_canary,
    snapshot_payload,
    stale_payload,
)
from ._text import mentions_auth, paraphrase_name
from ._transforms import (
    AUTH_ERROR,
    CACHED_AT,
    INVALID_KEY_ERROR,
    MISSING_KEY_ERROR,
    NO_PARAMETERS,
    PARAMETER_SYNONYMS,
    SNAPSHOT_DATE,
    SNAPSHOT_VERSION,
    TRANSFORMS,
    CanaryTransform,
    TransformContext,
    derive_special_case,
    get_transform,
    register_transform,
    rename_parameters,
)
from ._validate import check_input_schema, validate_tool_defs

__all__ = [
    "AUTH_ERROR",
    "CACHED_AT",
    "CANARY_RESULT_IS_DEFECTIVE",
    "DEFAULT_REWORDING_CACHE",
    "DEFAULT_SUFFIXES",
    "DEFECTS",
    "GENERATOR_VERSION",
    "INVALID_KEY_ERROR",
    "MISSING_KEY_ERROR",
    "NO_PARAMETERS",
    "PARAMETER_SYNONYMS",
    "RECORD_KEYS",
    "REWORDED_TYPES",
    "REWRITERS",
    "SNAPSHOT_DATE",
    "SNAPSHOT_VERSION",
    "TRANSFORMS",
    "CanaryTransform",
    "Executor",
    "LLMRewriter",
    "OfflineRewriter",
    "Rewriter",
    "RewriterError",
    "TransformContext",
    "approximate_payload",
    "canary_id",
    "canary_table",
    "check_input_schema",
    "check_suffixes",
    "defect_marker",
    "derive_special_case",
    "generate_command",
    "generate_pool",
    "get_transform",
    "load_pool",
    "make_rewriter",
    "mentions_auth",
    "paraphrase_name",
    "parse_rewording",
    "perturb_number",
    "register_rewriter",
    "register_transform",
    "rename_parameters",
    "round_significant",
    "run_canary",
    "snapshot_payload",
    "stale_payload",
    "validate_pool",
    "validate_tool_defs",
    "write_pool",
]
