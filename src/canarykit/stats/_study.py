"""The study's computation: every statistic of the per-run table as a JSON-ready dict.

:func:`compute_all` reads a validated runs table and returns the layout documented below
(the keys: docs/reference.md). The runs of each (pool, condition, model) are cut
once into numpy arrays (:class:`~._cells.Cell`); every rate is a mean over the runs of a cell
where it is defined (:class:`~._bootstrap.Sample`) and every interval comes from one resampler
for the whole study (:func:`~._bootstrap.make_resampler`). Each family of results is computed
in its own module: ``_rates``, ``_comparisons``, ``_deltas``, ``_effects``, ``_descriptives``,
``_stability`` and ``_families``.

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

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl
from threadpoolctl import threadpool_limits

from ..store.jsonio import finite_or_none, read_json_input
from ..types import CANARY_TYPES
from ._cells import Study, build_study
from ._comparisons import (
    association_test,
    chi2_test,
    contrasts,
    fisher_holm_test,
    friedman_test,
    gee_trap_test,
    kruskal_test,
    spearman_by_model,
    spearman_test,
    trap_permutation_test,
    trap_test,
    with_family_reason,
)
from ._config import StatsConfig
from ._crossed import FEW_CLUSTERS, FEW_WORDINGS
from ._deltas import ablation, tsr_delta
from ._descriptives import csr_by_difficulty, recovery_outcome, trap_rate_averages
from ._effects import control_effect, position_balance, position_effect
from ._families import REPLICATION_NOTE, families, primary
from ._items import item_rates
from ._load import validate_runs, with_optional_columns
from ._rates import TrapDraws, csr_ci, recovery_ci, trap_rates, tsr_blocks
from ._sensitivity import judge_sensitivity
from ._stability import stability


def compute_all(
    df: pl.DataFrame,
    cfg: StatsConfig | Mapping[str, Any] | None = None,
    *,
    source: str = "runs table",
    validate: bool = True,
    timings: dict[str, float] | None = None,
    pools: Sequence[str] = (),
) -> dict[str, Any]:
    """Every statistic of the per-run table as a JSON-ready dict (layout: the module docstring).

    ``cfg`` is a :class:`StatsConfig` or the ``stats`` mapping of params.yaml. The table is
    validated first unless ``validate`` is false (it already was, e.g. by :func:`load_runs`).
    ``pools`` (the study's pool files, optional) give ``meta.wordings`` the wording seed and
    the wordings each type drew from its bank, when the pool records them.
    When ``timings`` is given it receives the seconds spent in each part (benchmarks).
    Runs of the ``dose`` condition are left out: their curves (``dose_response``,
    :func:`~._dose.dose_response`) need the per-call table too, and the stats stage adds them.
    """
    if "condition" in df.columns:
        df = df.filter(pl.col("condition") != "dose")
    config = cfg if isinstance(cfg, StatsConfig) else StatsConfig.from_mapping(cfg)
    # One BLAS thread: the products here are small (about 10,000 x 120), and a threaded BLAS
    # on a shared machine spends more time waiting for its threads than computing (measured:
    # a 10,000 x 120 matrix-vector product 0.4 ms with one thread, 7 ms with two on a
    # loaded 2-core machine).
    with threadpool_limits(limits=1):
        out = _compute_all(df, config, source=source, validate=validate, timings=timings)
    out["meta"].update(_clean(wording_meta(df, config.primary_pool, pools)))
    few_w = _few_rows(out, "few_wordings")
    out["meta"].update(few_wordings_threshold=FEW_WORDINGS, few_wordings_rows=few_w,
                       few_wordings_note=few_wordings_note(few_w, out["meta"]["wordings"]))
    return out


def _compute_all(
    df: pl.DataFrame, config: StatsConfig, *, source: str, validate: bool, timings: dict[str, float] | None
) -> dict[str, Any]:
    clock = _Clock(timings)
    if validate:
        df = validate_runs(df, source)
        clock.lap("validate")
    st = build_study(df, config)
    clock.lap("cells")

    r: dict[str, Any] = {"counts": st.counts}
    td = _rates(st, r, clock)
    _comparisons(st, r, td, clock)
    r["tsr_delta"] = tsr_delta(st)
    r["ablation"], r["ablation_by_type"] = ablation(st)
    r["control_effect"] = control_effect(st)
    r["position_effect"] = position_effect(st)
    r["position_balance"] = position_balance(df, config.primary_pool)
    clock.lap("deltas")
    r["csr_by_difficulty"] = csr_by_difficulty(st)
    r["recovery_outcome"] = recovery_outcome(st)
    r["trap_rate_averages"] = {c: trap_rate_averages(r["trap_rates"][c], st.groups, config.group_averages) for c in st.conds}
    r["items"] = item_rates(st)
    r["stability"] = stability(st, r)
    r["families"] = families(st, r)
    r["primary"] = primary(st, r)
    r["model_groups"] = st.groups
    r["excluded_error_runs"] = int(df.get_column("error").sum())
    clock.lap("descriptives_stability")
    r["judge_sensitivity"] = judge_sensitivity(df, st, r["tsr"])
    clock.lap("judge_sensitivity")
    r["meta"] = _meta(df, st, r)
    out = _clean(r)
    clock.lap("json_cleanup")
    return out


def _rates(st: Study, r: dict[str, Any], clock: _Clock) -> TrapDraws:
    """The per-model rates into ``r``; returns the trap rates' draws (the contrasts reuse them)."""
    r["csr_ci"] = csr_ci(st)
    clock.lap("csr_ci")
    r["tsr_ci"], r["tsr"], r["tsr_truncated_as_failure"] = tsr_blocks(st)
    r["trap_rates"], r["trap_rate_ci"], td = trap_rates(st)
    r["recovery"] = recovery_ci(st)
    clock.lap("tsr_trap_recovery_ci")
    return td


def _comparisons(st: Study, r: dict[str, Any], td: TrapDraws, clock: _Clock) -> None:
    """The tests across models, per condition, into ``r`` (each with the reason it cannot run
    when too few models are under test)."""
    fam = with_family_reason
    r["replication"] = {
        "note": REPLICATION_NOTE, "assumes": "independent runs",
        "chi2": {c: fam(st, c, chi2_test(st, c)) for c in st.conds},
        "kruskal": {c: fam(st, c, kruskal_test(st, c)) for c in st.conds},
        "fisher_holm": {c: fam(st, c, fisher_holm_test(st, c)) for c in st.conds},
    }
    clock.lap("paper_tests")
    r["friedman"] = {c: fam(st, c, friedman_test(st, c)) for c in st.conds}
    r["contrasts"] = {c: fam(st, c, contrasts(st, c, td)) for c in st.conds}
    clock.lap("friedman_contrasts")
    r["gee_trap"] = {c: fam(st, c, gee_trap_test(st, c)) for c in st.conds}
    clock.lap("gee_trap")
    r["trap_permutation"] = {c: fam(st, c, trap_permutation_test(st, c)) for c in st.conds}
    r["trap_test"] = {c: fam(st, c, trap_test(r["gee_trap"][c], r["trap_permutation"][c], st.tested_in(c))) for c in st.conds}
    clock.lap("trap_permutation")
    r["replication"]["spearman"] = {c: fam(st, c, spearman_test(st, c, st.tested_in(c), ("spearman", c)), need=1)
                                    for c in st.conds}
    r["spearman_by_model"] = {c: spearman_by_model(st, c) for c in st.conds}
    clock.lap("spearman")
    r["association"] = {c: fam(st, c, association_test(st, c), need=1) for c in st.conds}
    clock.lap("association_gee")


def _few_rows(obj: Any, key: str = "few_clusters") -> int:
    """How many entries of a result carry ``<key>: true``."""
    if isinstance(obj, dict):
        return int(obj.get(key) is True) + sum(_few_rows(v, key) for v in obj.values())
    if isinstance(obj, list):
        return sum(_few_rows(v, key) for v in obj)
    return 0


def wording_meta(df: pl.DataFrame, primary_pool: str, pools: Sequence[str] = ()) -> dict[str, Any]:
    """``wordings``: per canary type, the wordings the primary pool's runs were offered
    (``offered``, from ``wording_<T>``), how many (``k``) and, when the pool file records them,
    the wordings the type drew from its bank (``drawn``); ``wording_seed``: the pool's seed of
    that draw (None when not recorded)."""
    seed = None
    drawn: dict[str, Any] = {}
    for path in pools:
        doc = read_json_input(path, str(path))
        if isinstance(doc, dict) and doc.get("pool", primary_pool) == primary_pool:
            seed = doc.get("wording_seed")
            recorded = doc.get("wordings")
            drawn = recorded if isinstance(recorded, dict) else {}
            break
    ok = with_optional_columns(df.filter(~pl.col("error") & (pl.col("pool") == primary_pool)))
    per: dict[str, Any] = {}
    for t in CANARY_TYPES:
        col = f"wording_{t}"
        offered = sorted(str(w) for w in ok.get_column(col).drop_nulls().unique().to_list()) if col in ok.columns else []
        per[t] = {"offered": offered, "k": len(offered), "drawn": drawn.get(t)}
    return {"wordings": per, "wording_seed": seed}


def few_wordings_note(n_rows: int, wordings: Mapping[str, Any]) -> str | None:
    """The one line the console and the report print when estimates rest on few wordings."""
    if n_rows == 0:
        return None
    ks = sorted({int(v["k"]) for v in wordings.values() if v.get("k")})
    k = "/".join(str(x) for x in ks) or "few"
    return (f"{n_rows} estimates rest on fewer than {FEW_WORDINGS} wordings ({k} a type; few_wordings: true): their "
            f"intervals treat the wording as a random factor with K - 1 degrees of freedom, honest but wide; more "
            f"wordings a type (canaries.variants) narrow them")


def few_clusters_note(n_rows: int, n_tasks: int, unit: str) -> str | None:
    """The one line the console and the report print when estimates rest on few tasks."""
    if n_rows == 0:
        return None
    how = ("their intervals are small-sample cluster-robust t intervals (CR2 with Bell-McCaffrey degrees of freedom), "
           "honest but wide" if unit == "task_x_item" else
           "bootstrap intervals undercover with so few tasks: stats.bootstrap_unit: task_x_item keeps them honest")
    return (f"{n_rows} estimates rest on fewer than {FEW_CLUSTERS} tasks ({n_tasks} in the study; few_clusters: true): "
            f"{how}")


def _meta(df: pl.DataFrame, st: Study, r: dict[str, Any]) -> dict[str, Any]:
    config = st.config
    ok = df.filter(~pl.col("error"))
    n_tasks = int(ok.get_column("task_id").n_unique())
    few = _few_rows(r)
    return {
        "resamples": config.resamples, "seed": config.seed, "alpha": config.alpha, "bootstrap_unit": config.bootstrap_unit,
        "interval_method": st.boot.interval_method, "equivalence_margin": config.equivalence_margin,
        "min_clusters": config.min_clusters,
        "primary": list(config.primary), "few_clusters_threshold": FEW_CLUSTERS, "few_clusters_rows": few,
        "few_clusters_note": few_clusters_note(few, n_tasks, config.bootstrap_unit),
        "primary_pool": config.primary_pool, "ablation_condition": config.ablation_condition,
        "n_runs": ok.height, "n_runs_primary": ok.filter(pl.col("pool") == config.primary_pool).height,
        "n_tasks": n_tasks, "seeds": st.seeds, "conditions": st.conds,
        "models": sorted(st.groups), "canary_types": list(CANARY_TYPES),
        "test_groups": list(config.test_groups) if config.test_groups is not None else None,
        "tested_models": st.tested, "untested_models": sorted(m for m in st.groups if m not in set(st.tested)),
    }


class _Clock:
    def __init__(self, sink: dict[str, float] | None) -> None:
        self.sink = sink
        self.t = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        if self.sink is not None:
            self.sink[name] = self.sink.get(name, 0.0) + now - self.t
        self.t = now


def _num(x: Any) -> Any:
    """JSON-safe scalar: NaN/inf -> None, numpy scalars -> Python."""
    if x is None:
        return None
    if isinstance(x, bool | np.bool_):
        return bool(x)
    if isinstance(x, int | np.integer):
        return int(x)
    if isinstance(x, float | np.floating):
        return finite_or_none(float(x))
    return x


def _clean(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    return _num(obj)
