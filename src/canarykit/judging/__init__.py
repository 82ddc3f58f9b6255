"""Outcome judges, cross-judging and judge validation (paper §4, Appendices B, D, E).

Judges are registered by name and selected by ``judge.<role>.kind`` in params.yaml:

- ``llm``: the Appendix B template filled in and sent through litellm at temperature 0; the
  reply must be exactly ``{"success": bool, "reason": str}`` (a ```json fence is allowed),
  else it is retried up to ``judge.max_attempts`` times and recorded ``unparseable``
  (success NULL: neither success nor failure).
- ``rubric`` (offline default primary): the task's outcome rubric against the final answer.
- ``tool-coverage`` (offline default cross-judge): the paper's replaced heuristic.

Verdicts are cached by content (:class:`VerdictCache`); :func:`check_judge_independence`
refuses a judge sharing a provider with an evaluated model. :class:`StudyJudges` is the
study's judges as configured (one per role, sharing the model layer); :func:`detect_and_judge`
detects and judges a whole study in one call (:class:`JudgingJob` says what it reads and
writes), and :func:`validation_report` writes ``validation.json`` (the oracle check,
agreement, stability, the human sheet).
"""

from ._agreement import (
    HumanGrade, agreement, blind_record, cohen_kappa, cross_judge_report, human_sheet,
    human_sheet_command, human_validation, read_human_sheet, stability, stability_draw,
    stratified_sample)
from ._base import (
    RESULT_CAP, CallView, Judge, JudgeInput, Verdict, judge_input, judge_kinds, make_judge,
    register_judge, render_trace)
from ._independence import check_judge_independence, normalise_provider, provider_of
from ._llm import (
    PARSER_VERSION, LLMJudge, fill_template, judge_prompt, parse_verdict, read_template)
from ._offline import RubricJudge, ToolCoverageJudge
from ._orchestrate import (
    JudgingJob, detect_and_judge, judge_lines, verdict_failure_lines, write_verdict_tables)
from ._panel import ROLES, StudyJudges
from ._report import (
    oracle_check, oracle_lines, oracle_names, stability_sample, tracked_counts, validation_report)
from ._run import VERDICT_COLUMNS, VerdictCache, judge_all, judge_inputs, judge_options, judge_runs, judging_code_modules
