"""Canary tools: the generator (section 4, Appendix C), their controls, and what they do.

Generation
----------
:func:`build_pool` turns a tool list (any MCP server's; see :func:`ingest_tools`) into a
:class:`Pool`: per (tool, type) that fits, one canary per wording variant (``variants``: K
entries of the type's bank drawn with ``wording_seed``, :mod:`._banks`), in tool order, then
:data:`~canarykit.types.CANARY_TYPES` order, then variant order; their twins
(``controls=True``: each canary with its probed property set to the healthy value,
:mod:`._controls`) and the list of what was skipped and why. ``fit="paper"`` offers every type for every tool
with the paper's transforms (it reproduces the paper's 72 canaries for our 12 tools);
``fit="fitted"`` (the default) offers a type only where its defect means something for the
tool (:func:`fit_skip`), draws granularity cases from the schema (never placeholders) and
checks them against the task suite (:class:`TaskSuite`). :func:`generate_pool` returns the
canary records only.

Canary record (one JSON object; pool files: :mod:`._pool`)::

    id           "<type>:<real tool>", "<type>:<real tool>@v<i>" for variant i >= 2
                 (stable across pools and reruns)
    type         one of the six canary types
    shadows      the real tool's name as offered (disambiguated: "<server>___<name>")
    name         unique in the pool, never a real tool's name, ^[a-zA-Z0-9_-]{1,64}$
    title        when the real tool has one ("Weather forecast (Mumbai)")
    description  ends with the pool's give-away suffix
    inputSchema  a valid JSON Schema of type object
    outputSchema, annotations   the real tool's, mirrored (annotation titles retitled)
    pool         "standard" | "subtle"
    behaviour    the JSON object run_canary follows (kind, ...)
    provenance   generator_version, transform, fit, rewriter (and model)
    upstream     {"server", "name"}: where the real tool lives (tools with a server)
    variant      1..K within the pool
    wording      the bank entry's id, "<type>/<nn>" (the same for every tool given it)
    tell         {"name", "description": [...]}: where the probed property shows
                 (audited by :func:`audit_pool`, ``canarykit audit-twins``)
    selection_visible   false when the canary and its twin show the same name,
                 description and input schema (a tell in behaviour only)

Twin (control) record: the same keys, with ``id`` ``"control:<canary id>"``,
``control_of`` (the canary's id), and the twin's own name, title, description, schema and
``behaviour`` (``passthrough`` or ``renamed_passthrough``; see :mod:`._controls`). The
assembler offers each twin in its canary's slot. A task gets a granularity canary and twin
only when its plan calls the tool (:func:`granularity_case`; with a task suite, the others
are listed in the skip list). :func:`bank_canaries` and :func:`distractors` build the dose
condition's look-alikes (:mod:`._dose`).

Runtime behaviour (:func:`run_canary`)
--------------------------------------
Deterministic and true to type; ``execute(name, args)`` runs a real tool:

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

from ._audit import PairAudit, Span, audit_command, audit_lines, audit_pair, audit_pool
from ._banks import (
    BANKS,
    DEFAULT_PART,
    DEFAULT_VARIANTS,
    DEFAULT_WORDING_SEED,
    MAX_VARIANTS,
    NAME_PARTS,
    OLD_DATE,
    PARTS,
    SELLING_POINTS,
    SEVERITY,
    Entry,
    check_bank,
    check_entry,
    check_name_parts,
    draw_wordings,
    entry,
    entry_by_id,
    part_ids,
    selling_point,
    wording_id,
)
from ._cases import (
    PLACEHOLDERS,
    Coincidence,
    SuiteTask,
    TaskSuite,
    candidate_cases,
    is_placeholder,
    natural_values,
    read_task_suite,
    suite_from_tasks,
)
from ._command import generate_command, summary_lines
from ._controls import (
    control_for_task,
    control_id,
    granularity_case,
    instantiate_control,
    is_control,
    is_template,
    task_case,
    task_cases,
)
from ._dates import snapshot_records
from ._dose import DISTRACTOR_TAILS, bank_canaries, bank_pairs, bank_size, distractors, wording_of
from ._fit import FIT_MODES, ToolProfile, fit_skip, profile_tool
from ._generator import (
    GENERATOR_VERSION,
    build_pool,
    builtin_executor,
    canary_id,
    canary_title,
    generate_pool,
    study_pool,
)
from ._injection import instruction_sentences, without_instructions
from ._paper import derive_special_case
from ._perturb import (
    approximate_payload,
    degrade,
    perturb_number,
    round_significant,
    snapshot_payload,
    stale_payload,
)
from ._pool import (
    POOL_FORMAT,
    POOL_FORMAT_VERSION,
    RECORD_KEYS,
    Pool,
    canary_table,
    load_controls,
    load_pool,
    load_pool_document,
    skipped_counts,
    validate_pool,
    write_pool,
)
from ._rewriters import (
    DEFAULT_REWORDING_CACHE,
    PAPER_MIRAGE_CLAIM,
    REWORDED_TYPES,
    REWRITERS,
    STYLES,
    LLMRewriter,
    OfflineRewriter,
    Rewriter,
    RewriterError,
    make_rewriter,
    parse_rewording,
    register_rewriter,
    without_claim,
)
from ._runtime import (
    CANARY_RESULT_IS_DEFECTIVE,
    CONTROL_KINDS,
    DEFECTS,
    RUNTIME_MARKER_FIELDS,
    Executor,
    defect_marker,
    run_canary,
    strip_runtime_markers,
)
from ._suffixes import (
    DEFAULT_CONTROL_SUFFIXES,
    DEFAULT_SUFFIXES,
    PAPER_CONTROL_SUFFIXES,
    PAPER_SUFFIXES,
    check_canary_settings,
    check_suffixes,
    check_twin_suffixes,
)
from ._text import mentions_auth, paraphrase_name, paraphrase_names
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
    TypeSkipped,
    get_transform,
    register_transform,
    rename_parameters,
)
from ._validate import (
    SERVER_SEPARATOR,
    Skip,
    ToolList,
    check_input_schema,
    ingest_tools,
    schema_validator_class,
    server_prefix,
    unwrap_tool_list,
    validate_tool_defs,
)

__all__ = [
    "AUTH_ERROR",
    "BANKS",
    "PairAudit",
    "Span",
    "audit_command",
    "audit_lines",
    "audit_pair",
    "audit_pool",
    "DEFAULT_PART",
    "DEFAULT_WORDING_SEED",
    "Entry",
    "NAME_PARTS",
    "OLD_DATE",
    "PARTS",
    "SEVERITY",
    "check_bank",
    "check_name_parts",
    "check_entry",
    "draw_wordings",
    "entry",
    "entry_by_id",
    "part_ids",
    "wording_id",
    "without_claim",
    "CACHED_AT",
    "CANARY_RESULT_IS_DEFECTIVE",
    "CONTROL_KINDS",
    "CanaryTransform",
    "Coincidence",
    "DEFAULT_CONTROL_SUFFIXES",
    "DEFAULT_REWORDING_CACHE",
    "DEFAULT_SUFFIXES",
    "DEFAULT_VARIANTS",
    "DEFECTS",
    "DISTRACTOR_TAILS",
    "Executor",
    "FIT_MODES",
    "GENERATOR_VERSION",
    "INVALID_KEY_ERROR",
    "LLMRewriter",
    "MAX_VARIANTS",
    "MISSING_KEY_ERROR",
    "NO_PARAMETERS",
    "OfflineRewriter",
    "PAPER_MIRAGE_CLAIM",
    "PAPER_CONTROL_SUFFIXES",
    "PAPER_SUFFIXES",
    "PARAMETER_SYNONYMS",
    "PLACEHOLDERS",
    "POOL_FORMAT",
    "POOL_FORMAT_VERSION",
    "Pool",
    "RECORD_KEYS",
    "REWORDED_TYPES",
    "REWRITERS",
    "RUNTIME_MARKER_FIELDS",
    "Rewriter",
    "RewriterError",
    "SELLING_POINTS",
    "SERVER_SEPARATOR",
    "SNAPSHOT_DATE",
    "SNAPSHOT_VERSION",
    "STYLES",
    "Skip",
    "SuiteTask",
    "TRANSFORMS",
    "TaskSuite",
    "ToolList",
    "ToolProfile",
    "TransformContext",
    "TypeSkipped",
    "approximate_payload",
    "bank_canaries",
    "bank_pairs",
    "bank_size",
    "build_pool",
    "builtin_executor",
    "canary_id",
    "canary_table",
    "canary_title",
    "candidate_cases",
    "check_canary_settings",
    "check_input_schema",
    "check_suffixes",
    "check_twin_suffixes",
    "control_for_task",
    "control_id",
    "defect_marker",
    "degrade",
    "derive_special_case",
    "distractors",
    "fit_skip",
    "generate_command",
    "generate_pool",
    "get_transform",
    "granularity_case",
    "ingest_tools",
    "instantiate_control",
    "instruction_sentences",
    "is_control",
    "is_placeholder",
    "is_template",
    "load_controls",
    "load_pool",
    "load_pool_document",
    "make_rewriter",
    "mentions_auth",
    "natural_values",
    "paraphrase_name",
    "paraphrase_names",
    "parse_rewording",
    "perturb_number",
    "profile_tool",
    "read_task_suite",
    "register_rewriter",
    "register_transform",
    "rename_parameters",
    "round_significant",
    "run_canary",
    "selling_point",
    "skipped_counts",
    "snapshot_payload",
    "snapshot_records",
    "stale_payload",
    "strip_runtime_markers",
    "study_pool",
    "suite_from_tasks",
    "summary_lines",
    "task_case",
    "task_cases",
    "validate_pool",
    "validate_tool_defs",
    "wording_of",
    "without_instructions",
    "write_pool",
    "schema_validator_class",
    "server_prefix",
    "unwrap_tool_list",
]
