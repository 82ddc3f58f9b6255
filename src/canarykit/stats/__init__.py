"""Statistics, tables and figure data computed from the per-run table alone.

Entry points: :func:`stats_command` (``canarykit stats RUNS -o DIR``), :func:`compute_all`
(pure: validated runs table -> JSON-ready dict) and :func:`write_outputs` (dict -> files).
The package is split along its seams: ``_bootstrap`` (resampling and the paired,
task-clustered difference :func:`paired_delta`) and ``_tests`` (hypothesis tests and effect
sizes) are pure inference; ``_load`` reads the runs table and ``_cells`` cuts it into the
study's data (:class:`Cell`, :class:`Study`); the study's computation is one module per
family of results (``_rates``, ``_comparisons``, ``_deltas``, ``_effects``,
``_descriptives``, ``_stability``, ``_families``), put together by ``_study``
(:func:`compute_all`); ``_output`` writes the tables, figure data and files.

Units and conventions
---------------------
- Every rate (csr, tsr, recovery, trap and control rates) is defined once, in
  :mod:`canarykit.detection.metrics`: the runs it is over and the value it averages; the DVC metrics
  read the same definitions.
- Rows with ``error`` true (backend errors) are excluded from every statistic and counted
  (``counts.<cond>.<model>.failed``, ``excluded_error_runs``); every model keeps its row in
  every table and per-model block, even when all its runs failed.
- Everything nested by condition is computed on the primary pool (``primary_pool``).
- **csr** of a model = mean over task-runs of the per-run ``csr``; a run with zero tool
  calls has no csr and is counted in ``n_zero_call``.
- **type trap rate** of type T = runs that were offered T *and called at least one tool*
  and called a canary of T / such runs; zero-call runs are left out of the denominator (as
  from csr) and counted (``trap_rate_ci.<c>.<m>.<T>.n_zero_call``).
- **recovery** = trapped runs that recovered / trapped runs (zero-call runs cannot be trapped).
- **tsr** = mean of ``success`` over judged runs that were not truncated by the turn limit;
  ``tsr_truncated_as_failure`` counts truncated runs as failures. A table without a
  ``truncated`` column has no truncated run.
- **Intervals** at ``1 - alpha``. ``bootstrap_unit: task_x_item`` (default): tasks, the
  tools the canaries shadow and their wordings (``item_<T>``, ``wording_<T>``) as crossed
  random factors; every estimate is linearized and its interval is a cluster-robust t
  interval (CR2, Bell-McCaffrey degrees of freedom, the wording spread as a variance
  component; by task alone for rates without items; :mod:`._crossed`); estimates on fewer
  than 30 tasks carry ``few_clusters``, on fewer than 8 wordings ``few_wordings``.
  ``task`` resamples whole tasks once for the study and applies the same resampled tasks to
  every estimate (all seeds, conditions and pools of a task travel together), so
  differences are paired by (task, seed); intervals are BCa (acceleration from the
  leave-one-task-out jackknife). ``run`` resamples each estimate's runs independently,
  percentile intervals (the paper).
- **Tests** run over the models under test only (``stats.test_groups``; by default every
  group except ``reference`` and ``planted``, which get no p-value outside the control and
  position effects); ``families`` records each test family. Trap rates across models:
  ``gee_trap`` (logistic GEE) and ``trap_permutation`` (task-blocked permutation test, which
  keeps a model never or always trapped); ``trap_test`` says which answers.
- **Control and position effects** (``_effects``, ``_equivalence``):
  ``control_effect.<model>.<type>`` is the first-pick rate of T's canary (``declared``)
  minus that of its twin (``control``, arm T), paired by (task, seed), Holm across the
  models under test x types (each instrument across its own types), with a ``diagnosis``
  (``lured``, ``sensitive``, ``negligible``, ``blind``, ``not drawn``, ``inconclusive``,
  ``n/a``: each a claim with a Holm-controlled error rate, ``_equivalence``; ``p`` is the
  randomisation test of sides, ``_swap``) and the whole-run rates under ``whole_run``; ``position_effect.<model>`` is the trap rate with canaries before minus
  after their real tools over ``declared`` and ``mirrored``; ``position_balance`` the share of
  lists whose canaries precede their real tools.
- Every number that is undefined (NaN, empty sample) is ``null`` in JSON.

- **Primary and secondary** (``_families``): ``primary`` holds the declared families
  (``stats.primary``), Holm across model x type within each; every other p-value is
  secondary; the paper's tests, which assume independent runs, are in ``replication``.
- **Items and judges**: ``items`` (per canary item, ``_items``), ``judge_sensitivity``
  (tsr and its results under the cross judge, ``_sensitivity``).

The ``stats.json`` keys are documented in docs/reference.md ("Outputs and the stats.json keys").
"""

from ._bootstrap import (
    BOOTSTRAP_UNITS,
    CHUNK_ELEMENTS,
    BootstrapUnit,
    CrossedResampler,
    Draws,
    IntervalMethod,
    Linearized,
    Resampler,
    RunBootstrap,
    Sample,
    TaskBootstrap,
    bca_ci,
    bca_levels,
    bootstrap_mean_ci,
    bootstrap_means,
    bootstrap_p,
    cluster_bootstrap_spearman,
    cluster_robust_contrasts,
    cluster_robust_rate,
    column_quantiles,
    cr1_wald,
    derive_rng,
    make_resampler,
    paired_delta,
    paired_deltas,
    percentile_ci,
    rate_draws,
    rate_intervals,
    rate_p_value,
    rate_tests,
    sample_of,
)
from ._cells import Cell, Study, build_study
from ._config import (
    DEFAULT_PRIMARY,
    INSTRUMENT_GROUPS,
    MAX_RESAMPLES,
    PRIMARY_FAMILIES,
    StatsConfig,
)
from ._crossed import FEW_CLUSTERS, FEW_WORDINGS, t_p_value, tost_p
from ._deltas import equivalence, verdict
from ._descriptives import DECLARED_FULL, POOLED
from ._dose import (
    DISTRACTOR,
    DOSE_KINDS,
    DOSE_LEVELS,
    dose_curve,
    dose_markdown,
    dose_metrics,
    dose_response,
    dose_runs,
    dose_table,
    first_tools,
)
from ._effects import control_effect, position_balance, position_effect
from ._equivalence import (
    DIAGNOSES,
    DIAGNOSIS_READINGS,
    WEAKNESS,
    diagnose,
    rate_above_p,
    rate_below_p,
    word_tests,
)
from ._items import item_rates
from ._load import load_runs, validate_runs
from ._output import (
    FIGURE_DATA_FILES,
    TABLE_FILES,
    console_notes,
    figure_data,
    stats_command,
    table_captions,
    tables,
    write_outputs,
)
from ._sample import item_key, tool_of, wording_of
from ._simstudy import crossed_runs
from ._simulate import (
    Calibration,
    CrossedDesign,
    SimulatedStudy,
    calibration,
    control_entry,
    simulate,
)
from ._study import compute_all
from ._swap import swap_p_value, swap_p_values
from ._tests import (
    chi2_independence,
    cohens_d,
    cohens_h,
    fisher_exact_2x2,
    friedman,
    gee_association,
    gee_group_test,
    holm,
    kruskal_wallis,
    permutation_group_test,
    spearman,
)

__all__ = [
    "DISTRACTOR", "DOSE_KINDS", "DOSE_LEVELS", "dose_curve", "dose_markdown", "dose_response", "dose_runs", "dose_table",
    "dose_metrics", "first_tools",
    "BOOTSTRAP_UNITS",
    "CHUNK_ELEMENTS",
    "DEFAULT_PRIMARY",
    "FEW_CLUSTERS",
    "PRIMARY_FAMILIES",
    "CrossedResampler",
    "Linearized",
    "cluster_robust_rate",
    "console_notes",
    "cr1_wald",
    "equivalence",
    "FEW_WORDINGS",
    "Calibration",
    "CrossedDesign",
    "SimulatedStudy",
    "calibration",
    "control_entry",
    "crossed_runs",
    "simulate",
    "swap_p_value",
    "swap_p_values",
    "tool_of",
    "wording_of",
    "WEAKNESS",
    "word_tests",
    "item_key",
    "item_rates",
    "rate_p_value",
    "rate_tests",
    "t_p_value",
    "tost_p",
    "verdict",
    "DECLARED_FULL",
    "DIAGNOSES",
    "DIAGNOSIS_READINGS",
    "Draws",
    "FIGURE_DATA_FILES",
    "INSTRUMENT_GROUPS",
    "IntervalMethod",
    "MAX_RESAMPLES",
    "POOLED",
    "TABLE_FILES",
    "table_captions",
    "BootstrapUnit",
    "Cell",
    "Resampler",
    "RunBootstrap",
    "Sample",
    "StatsConfig",
    "Study",
    "TaskBootstrap",
    "bca_ci",
    "bca_levels",
    "bootstrap_mean_ci",
    "bootstrap_means",
    "bootstrap_p",
    "build_study",
    "chi2_independence",
    "cluster_bootstrap_spearman",
    "cluster_robust_contrasts",
    "cohens_d",
    "cohens_h",
    "column_quantiles",
    "compute_all",
    "control_effect",
    "derive_rng",
    "diagnose",
    "rate_above_p",
    "rate_below_p",
    "tost_p",
    "figure_data",
    "fisher_exact_2x2",
    "friedman",
    "gee_association",
    "gee_group_test",
    "holm",
    "kruskal_wallis",
    "load_runs",
    "make_resampler",
    "paired_delta",
    "paired_deltas",
    "percentile_ci",
    "permutation_group_test",
    "position_balance",
    "position_effect",
    "rate_draws",
    "rate_intervals",
    "sample_of",
    "spearman",
    "stats_command",
    "tables",
    "validate_runs",
    "write_outputs",
]
