"""Statistics, tables and figure data computed from the per-run table alone: one module per
family of results, put together by :mod:`._study` (:func:`compute_all`, whose docstring holds
the units and conventions); ``canarykit stats RUNS -o DIR`` is :func:`stats_command`."""

from ._bootstrap import (
    BOOTSTRAP_UNITS, CHUNK_ELEMENTS, BootstrapUnit, CrossedResampler, Draws, IntervalMethod,
    Linearized, Resampler, RunBootstrap, Sample, TaskBootstrap, bca_ci, bca_levels,
    bootstrap_mean_ci, bootstrap_means, bootstrap_p, cluster_bootstrap_spearman,
    cluster_robust_contrasts, cluster_robust_rate, column_quantiles, cr1_wald, derive_rng,
    make_resampler, paired_delta, paired_deltas, percentile_ci, rate_draws, rate_intervals,
    rate_p_value, rate_tests, sample_of)
from ._cells import Cell, Study, build_study
from ._config import (
    DEFAULT_PRIMARY, INSTRUMENT_GROUPS, MAX_RESAMPLES, PRIMARY_FAMILIES, StatsConfig)
from ._crossed import FEW_CLUSTERS, FEW_WORDINGS, t_p_value, tost_p
from ._deltas import equivalence, verdict
from ._descriptives import DECLARED_FULL, POOLED
from ._dose import (
    DISTRACTOR, DOSE_KINDS, DOSE_LEVELS, dose_curve, dose_markdown, dose_metrics, dose_response,
    dose_runs, dose_table, first_tools)
from ._effects import control_effect, position_balance, position_effect
from ._equivalence import (
    DIAGNOSES, DIAGNOSIS_READINGS, WEAKNESS, diagnose, rate_above_p, rate_below_p, word_tests)
from ._items import item_rates
from ._load import load_runs, validate_runs
from ._output import (
    FIGURE_DATA_FILES, TABLE_FILES, console_notes, figure_data, stats_command, table_captions,
    tables, write_outputs)
from ._sample import item_key, tool_of, wording_of
from ._simstudy import crossed_runs
from ._simulate import (
    Calibration, CrossedDesign, SimulatedStudy, calibration, control_entry, simulate)
from ._study import compute_all
from ._swap import swap_p_value, swap_p_values
from ._tests import (
    chi2_independence, cohens_d, cohens_h, fisher_exact_2x2, friedman, gee_association,
    gee_group_test, holm, kruskal_wallis, permutation_group_test, spearman)
