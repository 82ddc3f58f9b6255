"""Canary tools: the generator (section 4, Appendix C; :mod:`._generator`, record format and
twins included), pool files (:mod:`._pool`), what a canary does when called (:mod:`._runtime`)."""

from ._audit import audit_command, audit_pair, audit_pool
from ._banks import (
    BANKS, DEFAULT_PART, DEFAULT_WORDING_SEED, MAX_VARIANTS, NAME_PARTS, OLD_DATE, SELLING_POINTS,
    SEVERITY, Entry, check_bank, check_entry, check_name_parts, draw_wordings, entry, entry_by_id,
    part_ids, selling_point)
from ._cases import (
    SuiteTask, TaskSuite, candidate_cases, is_placeholder, read_task_suite, suite_from_tasks)
from ._command import generate_command, summary_lines
from ._controls import control_for_task, control_id, granularity_case, is_control, task_case
from ._dates import snapshot_records
from ._dose import bank_canaries, bank_pairs, bank_size, distractors, wording_of
from ._fit import profile_tool
from ._generator import build_pool, builtin_executor, canary_id, generate_pool, study_pool
from ._injection import instruction_sentences, without_instructions
from ._perturb import degrade
from ._pool import (
    RECORD_KEYS, Pool, canary_table, load_controls, load_pool, load_pool_document, skipped_counts,
    validate_pool, write_pool)
from ._rewriters import (
    PAPER_MIRAGE_CLAIM, REWRITERS, LLMRewriter, OfflineRewriter, RewriterError, make_rewriter,
    register_rewriter)
from ._runtime import RUNTIME_MARKER_FIELDS, run_canary, strip_runtime_markers
from ._suffixes import (
    DEFAULT_CONTROL_SUFFIXES, DEFAULT_SUFFIXES, PAPER_CONTROL_SUFFIXES, PAPER_SUFFIXES,
    check_canary_settings)
from ._transforms import TRANSFORMS, get_transform, register_transform
from ._validate import (
    SERVER_SEPARATOR, Skip, ToolList, ingest_tools, schema_validator_class, server_prefix,
    unwrap_tool_list, validate_tool_defs)
