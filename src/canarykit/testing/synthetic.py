"""Synthetic per-run tables with planted, known structure (for tests and benchmarks).

:func:`synthetic_runs` draws a table that satisfies :class:`canarykit.store.schemas.RunsTable` (plus
the per-type ``present_T`` / ``trapped_T`` columns) from per-model profiles modelled loosely on
the paper's eight models (three frontier, three mid-tier, two small open models). Everything is
vectorised numpy; the same arguments always give the same table.

Generative model of one run (model ``m``, condition ``c``, pool ``p``, task ``t``):

- ``tool_calls`` is 0 with probability ``zero_call_rate``, else ``1 + Poisson(lambda_d)`` where
  ``lambda_d`` depends on the task difficulty (and the model's ``call_scale``).
- ``canary_calls ~ Binomial(tool_calls, q)`` with ``q`` the model's planted csr for the
  condition (and pool); baseline has no canaries, so ``q = 0``. Hence the expected per-run
  ``csr`` over runs with at least one call is exactly ``q`` (**planted**).
- Present types: none in baseline, the task's two declared types in ``declared`` (fixed per
  task), all six in ``full``. Each canary call lands on a present type with probabilities
  proportional to the model's type weights; ``trapped_T`` = at least one call of type T.
  Type-specific trap rates are therefore *derived* (ordered like the weights), not planted.
- ``trapped = canary_calls > 0``; ``recovered ~ Bernoulli(r)`` among trapped runs (**planted**).
- ``success ~ Bernoulli(s)`` with ``s = clean_success`` for untrapped runs,
  :data:`RECOVERED_SUCCESS` for trapped-and-recovered runs and :data:`STUCK_SUCCESS` for
  trapped-and-not-recovered runs (**planted**); null with probability ``unjudged_rate``.
- ``error`` with probability ``error_rate``; an error row has no calls and no verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from ..types import CANARY_TYPES, DIFFICULTIES, PAPER_CONDITIONS

#: Planted success probability of a trapped run that recovered (Appendix G: about half).
RECOVERED_SUCCESS = 0.5
#: Planted success probability of a trapped run that did not recover (about one in six).
STUCK_SUCCESS = 0.15
#: Mean extra tool calls (beyond the first) by difficulty.
CALL_LAMBDA: dict[str, float] = {"easy": 1.2, "medium": 2.2, "hard": 3.2}

_HOSTED_WEIGHTS = (0.05, 0.04, 0.55, 0.22, 0.04, 0.10)
_SMALL_WEIGHTS = (0.14, 0.22, 0.20, 0.18, 0.16, 0.10)


@dataclass(frozen=True)
class SyntheticProfile:
    """The planted truth of one synthetic model."""

    model: str
    group: str
    provider: str
    csr: dict[str, float]
    """Planted csr per condition (standard pool); baseline is always 0."""
    recovery: dict[str, float]
    """Planted recovery probability per canary condition."""
    clean_success: float
    """Success probability of a run that was not trapped."""
    subtle_factor: float = 1.0
    """csr multiplier on the subtle pool (declared condition)."""
    type_weights: tuple[float, ...] = field(default=_HOSTED_WEIGHTS)
    call_scale: float = 1.0

    def planted_csr(self, condition: str, pool: str = "standard") -> float:
        if condition == "baseline":
            return 0.0
        q = self.csr[condition]
        return q * self.subtle_factor if pool == "subtle" else q


_BASE_PROFILES: tuple[SyntheticProfile, ...] = (
    SyntheticProfile("frontier-1", "frontier", "provider-a", {"declared": 0.010, "full": 0.004},
                     {"declared": 0.82, "full": 0.80}, 0.77, 0.95),
    SyntheticProfile("frontier-2", "frontier", "provider-b", {"declared": 0.178, "full": 0.118},
                     {"declared": 0.55, "full": 0.52}, 0.75, 0.97),
    SyntheticProfile("frontier-3", "frontier", "provider-c", {"declared": 0.049, "full": 0.077},
                     {"declared": 0.63, "full": 0.36}, 0.66, 0.95),
    SyntheticProfile("mid-1", "mid", "provider-a", {"declared": 0.034, "full": 0.018},
                     {"declared": 0.68, "full": 0.63}, 0.84, 0.96),
    SyntheticProfile("mid-2", "mid", "provider-b", {"declared": 0.311, "full": 0.244},
                     {"declared": 0.34, "full": 0.42}, 0.72, 0.85),
    SyntheticProfile("mid-3", "mid", "provider-c", {"declared": 0.041, "full": 0.013},
                     {"declared": 0.36, "full": 0.40}, 0.66, 0.92),
    SyntheticProfile("small-1", "small", "provider-d", {"declared": 0.291, "full": 0.715},
                     {"declared": 0.37, "full": 0.11}, 0.58, 0.93, _SMALL_WEIGHTS, 1.2),
    SyntheticProfile("small-2", "small", "provider-e", {"declared": 0.378, "full": 0.167},
                     {"declared": 0.18, "full": 0.02}, 0.33, 0.96, _SMALL_WEIGHTS, 0.7),
)


def synthetic_profiles(n_models: int = 8) -> list[SyntheticProfile]:
    """The planted profiles of the first ``n_models`` synthetic models (cycled beyond eight)."""
    if n_models < 1:
        raise ValueError("n_models must be at least 1")
    out: list[SyntheticProfile] = []
    for i in range(n_models):
        base = _BASE_PROFILES[i % len(_BASE_PROFILES)]
        cycle = i // len(_BASE_PROFILES)
        if cycle:
            base = SyntheticProfile(
                f"{base.model}.{cycle}", base.group, base.provider, base.csr, base.recovery,
                base.clean_success, base.subtle_factor, base.type_weights, base.call_scale,
            )
        out.append(base)
    return out


def _declared_types(n_tasks: int, rng: np.random.Generator) -> np.ndarray:
    """(n_tasks, 6) boolean: each task declares two distinct canary types."""
    keys = rng.random((n_tasks, len(CANARY_TYPES)))
    order = np.argsort(keys, axis=1)[:, :2]
    mask = np.zeros((n_tasks, len(CANARY_TYPES)), dtype=bool)
    np.put_along_axis(mask, order, True, axis=1)
    return mask


def synthetic_runs(
    n_models: int = 8,
    seeds: int = 3,
    tasks: int = 120,
    conditions: Sequence[str] = PAPER_CONDITIONS,
    ablation: bool = True,
    seed: int = 0,
    *,
    ablation_condition: str = "declared",
    zero_call_rate: float = 0.02,
    unjudged_rate: float = 0.01,
    error_rate: float = 0.003,
) -> pl.DataFrame:
    """A synthetic per-run table (see the module docstring for the generative model).

    One row per (model, condition, pool, seed, task): ``n_models * len(conditions) * seeds *
    tasks`` rows on the standard pool plus, with ``ablation``, ``n_models * seeds * tasks``
    rows of ``ablation_condition`` on the subtle pool. Extra column: ``provider``.
    """
    for c in conditions:
        if c not in PAPER_CONDITIONS:
            raise ValueError(f"unknown condition {c!r}")
    rng = np.random.default_rng(seed)
    profiles = synthetic_profiles(n_models)
    difficulty = np.array(DIFFICULTIES)[np.arange(tasks) * len(DIFFICULTIES) // max(tasks, 1)]
    declared = _declared_types(tasks, rng)
    cells: list[tuple[int, str, str]] = [(m, c, "standard") for m in range(n_models) for c in conditions]
    if ablation:
        cells += [(m, ablation_condition, "subtle") for m in range(n_models)]
    rows = _Rows.of(cells, seeds, tasks)
    draws = _draw_runs(rng, profiles, cells, rows, difficulty, declared,
                       zero_call_rate=zero_call_rate, unjudged_rate=unjudged_rate, error_rate=error_rate)
    return _runs_frame(profiles, rows, tasks, difficulty, draws)


@dataclass(frozen=True)
class _Rows:
    """The rows of a synthetic table: for each, its cell (a (model, condition, pool) of the
    grid: ``model`` is the profile's index), seed and task; cell-major, then seed, then task."""

    cell: np.ndarray
    seed: np.ndarray
    task: np.ndarray
    model: np.ndarray
    condition: np.ndarray
    pool: np.ndarray

    @classmethod
    def of(cls, cells: Sequence[tuple[int, str, str]], seeds: int, tasks: int) -> _Rows:
        per_cell = seeds * tasks
        cell = np.repeat(np.arange(len(cells)), per_cell)
        return cls(
            cell=cell,
            seed=np.tile(np.repeat(np.arange(seeds), tasks), len(cells)),
            task=np.tile(np.arange(tasks), len(cells) * seeds),
            model=np.array([m for m, _, _ in cells])[cell],
            condition=np.array([c for _, c, _ in cells])[cell],
            pool=np.array([p for _, _, p in cells])[cell],
        )

    @property
    def n(self) -> int:
        return len(self.cell)


@dataclass(frozen=True)
class _Outcomes:
    trapped: np.ndarray
    recovered: np.ndarray
    success: np.ndarray
    unjudged: np.ndarray
    error: np.ndarray


@dataclass(frozen=True)
class _Draws:
    """Every drawn column of a synthetic table, one entry (or row) per run."""

    calls: np.ndarray
    canary: np.ndarray
    present: np.ndarray
    trapped_types: np.ndarray
    outcomes: _Outcomes


def _draw_runs(
    rng: np.random.Generator,
    profiles: Sequence[SyntheticProfile],
    cells: Sequence[tuple[int, str, str]],
    rows: _Rows,
    difficulty: np.ndarray,
    declared: np.ndarray,
    *,
    zero_call_rate: float,
    unjudged_rate: float,
    error_rate: float,
) -> _Draws:
    """The draws of the generative model, in this order (the same arguments always give the
    same table)."""
    lam = np.array([CALL_LAMBDA[d] for d in DIFFICULTIES])
    diff_idx = np.array([DIFFICULTIES.index(d) for d in difficulty])[rows.task]
    scale = np.array([p.call_scale for p in profiles])[rows.model]
    q_cell = np.array([profiles[m].planted_csr(c, p) for m, c, p in cells])
    calls, canary = _draw_calls(rng, lam[diff_idx] * scale, q_cell[rows.cell], zero_call_rate)
    present = _present_types(rows.condition, declared, rows.task)
    weights = np.array([p.type_weights for p in profiles], dtype=float)[rows.model]
    trapped_t = _draw_trapped_types(rng, canary, present, weights)
    r_cell = np.array([profiles[m].recovery.get(c, 0.0) for m, c, _ in cells])
    clean = np.array([p.clean_success for p in profiles])[rows.model]
    out = _draw_outcomes(rng, canary, r_cell[rows.cell], clean, unjudged_rate, error_rate)
    calls[out.error] = 0
    canary[out.error] = 0
    trapped_t[out.error] = False
    return _Draws(calls, canary, present, trapped_t, out)


def _runs_frame(
    profiles: Sequence[SyntheticProfile], rows: _Rows, tasks: int, difficulty: np.ndarray, draws: _Draws
) -> pl.DataFrame:
    """The per-run table of the draws (csr, recovered and success null where undefined)."""
    calls, canary, out = draws.calls, draws.canary, draws.outcomes
    csr = np.divide(canary, calls, out=np.zeros(rows.n), where=calls > 0)
    data: dict[str, pl.Series] = {
        "model": pl.Series([p.model for p in profiles])[rows.model],
        "group": pl.Series([p.group for p in profiles])[rows.model],
        "provider": pl.Series([p.provider for p in profiles])[rows.model],
        "condition": pl.Series(rows.condition),
        "pool": pl.Series(rows.pool),
        "seed": pl.Series(rows.seed, dtype=pl.Int64),
        "task_id": pl.Series(np.array([f"task-{i:03d}" for i in range(tasks)])[rows.task]),
        "difficulty": pl.Series(difficulty[rows.task]),
        "tool_calls": pl.Series(calls, dtype=pl.Int64),
        "canary_calls": pl.Series(canary, dtype=pl.Int64),
        "csr": pl.Series(csr),
        "trapped": pl.Series(out.trapped),
        "recovered": pl.Series(out.recovered),
        "success": pl.Series(out.success),
        "error": pl.Series(out.error),
    }
    for j, t in enumerate(CANARY_TYPES):
        data[f"present_{t}"] = pl.Series(draws.present[:, j])
        data[f"trapped_{t}"] = pl.Series(draws.trapped_types[:, j])
    df = pl.DataFrame({k: v.alias(k) for k, v in data.items()})
    return df.with_columns(
        csr=pl.when(pl.col("tool_calls") > 0).then(pl.col("csr")),
        recovered=pl.when(pl.col("trapped")).then(pl.col("recovered")),
        success=pl.when(pl.Series(~out.unjudged)).then(pl.col("success")),
    )


def _draw_calls(
    rng: np.random.Generator, lam: np.ndarray, q: np.ndarray, zero_call_rate: float
) -> tuple[np.ndarray, np.ndarray]:
    """Each run's tool calls (0, else ``1 + Poisson(lam)``) and canary calls (``Binomial(calls, q)``)."""
    calls = 1 + rng.poisson(lam)
    calls[rng.random(len(calls)) < zero_call_rate] = 0
    return calls, rng.binomial(calls, q)


def _present_types(cond_run: np.ndarray, declared: np.ndarray, task: np.ndarray) -> np.ndarray:
    """(n, 6) boolean: the canary types a run is offered (none in baseline, the task's two in
    ``declared``, all six in ``full``)."""
    present = np.zeros((len(cond_run), len(CANARY_TYPES)), dtype=bool)
    present[cond_run == "declared"] = declared[task[cond_run == "declared"]]
    present[cond_run == "full"] = True
    return present


def _draw_trapped_types(
    rng: np.random.Generator, canary: np.ndarray, present: np.ndarray, weights: np.ndarray
) -> np.ndarray:
    """(n, 6) boolean: the types a run's canary calls landed on (in proportion to the model's
    type weights over the present types). A run offered no type makes no canary call
    (``canary`` is zeroed there, in place)."""
    canary[~present.any(axis=1)] = 0
    probs = weights * present
    totals = probs.sum(axis=1, keepdims=True)
    probs = np.divide(probs, totals, out=np.full_like(probs, 1.0 / len(CANARY_TYPES)), where=totals > 0)
    return np.asarray(rng.multinomial(canary, probs) > 0)


def _draw_outcomes(
    rng: np.random.Generator, canary: np.ndarray, r: np.ndarray, clean: np.ndarray, unjudged_rate: float,
    error_rate: float,
) -> _Outcomes:
    """Trapped (a canary call), recovered (``Bernoulli(r)`` among trapped runs), success (the
    planted probability of the run's fate), unjudged and error; an error run is neither
    trapped nor judged."""
    n = len(canary)
    trapped = canary > 0
    recovered = trapped & (rng.random(n) < r)
    p_success = np.where(trapped, np.where(recovered, RECOVERED_SUCCESS, STUCK_SUCCESS), clean)
    success = rng.random(n) < p_success
    unjudged = rng.random(n) < unjudged_rate
    error = rng.random(n) < error_rate
    trapped[error] = False
    unjudged |= error
    return _Outcomes(trapped, recovered, success, unjudged, error)


# --------------------------------------------------------------------------- clustered studies


@dataclass(frozen=True)
class ClusteredTruth:
    """The population values a simulated study estimates (exact, not simulated)."""

    csr: float
    """Expected per-run csr in the declared condition (mean of the tasks' lure propensity)."""
    tsr_baseline: float
    tsr_declared: float

    @property
    def tsr_delta(self) -> float:
        """Baseline tsr minus declared tsr (positive: canaries hurt)."""
        return self.tsr_baseline - self.tsr_declared


def _clustered_frame(cond: str, calls: np.ndarray, canary: np.ndarray, succ: np.ndarray) -> pl.DataFrame:
    """The runs of one condition of :func:`clustered_studies`: arrays of shape (study, task,
    seed) as a per-run table (only the capability mirage is offered, in ``declared``)."""
    shape = calls.shape
    n = calls.size
    trapped = canary > 0
    study_idx, task_idx, seed_idx = (a.ravel() for a in np.indices(shape))
    data: dict[str, Any] = {
        "study": study_idx, "model": ["sim"] * n, "group": ["sim"] * n, "condition": [cond] * n,
        "pool": ["standard"] * n, "seed": seed_idx.astype(np.int64),
        "task_id": np.char.add("task-", task_idx.astype(str)),
        "difficulty": np.array(DIFFICULTIES)[task_idx % len(DIFFICULTIES)],
        "tool_calls": calls.ravel().astype(np.int64), "canary_calls": canary.ravel().astype(np.int64),
        "csr": (canary / calls).ravel(), "trapped": trapped.ravel(), "recovered": pl.Series(np.zeros(n, dtype=bool)),
        "success": succ.ravel(), "error": np.zeros(n, dtype=bool),
    }
    for t in CANARY_TYPES:
        on = cond == "declared" and t == "capability_mirage"
        data[f"present_{t}"] = np.full(n, on)
        data[f"trapped_{t}"] = trapped.ravel() & on
    return pl.DataFrame(data, strict=False)


def clustered_studies(
    n_studies: int,
    *,
    tasks: int = 60,
    seeds: int = 3,
    seed: int = 0,
    lure: tuple[float, float] = (0.6, 1.4),
    success: tuple[float, float] = (0.9, 0.5),
    lured_task_prob: float = 0.5,
    harm: float = 0.6,
) -> tuple[pl.DataFrame, ClusteredTruth]:
    """``n_studies`` independent simulated studies whose runs are correlated within task.

    One model (group ``sim``), conditions ``baseline`` and ``declared`` (standard pool),
    ``seeds`` seeds x ``tasks`` tasks each; a ``study`` column tells them apart. Every study
    draws its own tasks from one population, so the truth is known exactly:

    - task t has a lure propensity ``p_t ~ Beta(*lure)``; a run makes ``1 + Poisson(1.5)``
      tool calls of which ``Binomial(calls, p_t)`` are canary calls in ``declared`` (none in
      ``baseline``). ``E[csr] = E[p_t] = lure[0] / sum(lure)``.
    - task t has a success propensity ``s_t ~ Beta(*success)`` (U-shaped by default: at
      temperature 0 a model nearly always solves a task or nearly never), and with
      probability ``lured_task_prob`` the canaries hurt on it: its declared success
      propensity is ``s_t * (1 - harm)``. Every run's success is ``Bernoulli`` of its
      propensity, so ``tsr delta = harm * lured_task_prob * E[s_t]``; the baseline and
      declared runs of one (task, seed) share their uniform draw (common random numbers),
      so a run the canaries do not hurt ends as its baseline twin.

    Seeds share their task's propensities (they only permute the tool order), which is what
    makes runs of one task correlated and run-level intervals too narrow.
    """
    rng = np.random.default_rng(seed)
    s_n, g, k = n_studies, tasks, seeds
    p_task = rng.beta(*lure, size=(s_n, g))
    s_task = rng.beta(*success, size=(s_n, g))
    lured = rng.random((s_n, g)) < lured_task_prob
    s_decl = np.where(lured, s_task * (1.0 - harm), s_task)

    shape = (s_n, g, k)
    # One uniform per (task, seed), shared by both conditions: a run that is not hurt by the
    # canaries ends as its baseline twin does (temperature 0), which is what pairing exploits.
    u = rng.random(shape)
    frames = []
    for cond in ("baseline", "declared"):
        calls = 1 + rng.poisson(1.5, size=shape)
        q = np.broadcast_to(p_task[:, :, None], shape) if cond == "declared" else np.zeros(shape)
        canary = rng.binomial(calls, q)
        p_succ = np.broadcast_to((s_decl if cond == "declared" else s_task)[:, :, None], shape)
        frames.append(_clustered_frame(cond, calls, canary, u < p_succ))
    df = pl.concat(frames).with_columns(recovered=pl.when(pl.col("trapped")).then(pl.col("recovered")))
    mean_s = success[0] / sum(success)
    truth = ClusteredTruth(
        csr=lure[0] / sum(lure),
        tsr_baseline=mean_s,
        tsr_declared=mean_s * (1.0 - harm * lured_task_prob),
    )
    return df, truth


def synthetic_dose_runs(
    agents: Sequence[str],
    *,
    tasks: int = 24,
    seeds: Sequence[int] = (0, 1, 2),
    levels: Sequence[int] = (0, 1, 2, 4, 8),
    take_prob: float = 0.5,
    seed: int = 0,
) -> pl.DataFrame:
    """A dose runs table (:class:`canarykit.store.schemas.DoseRunsTable`) of the known-answer agents.

    ``uniform``: the first pick goes to one of the k + 1 tools of the family uniformly, so to a
    look-alike with probability k / (k + 1), whatever the kind (**planted**).
    ``planted:<T>``: blind to T, sees through the other types: with probability ``take_prob``
    it takes a look-alike when one it cannot tell from the real tool is offered (T's canaries,
    every type's twins and the neutral distractors), never another type's canary
    (**planted**: the rate is ``take_prob`` from k = 1 on for T, the twins and
    ``distractor``, 0 elsewhere: flat from k = 1, growth 0 everywhere).
    Draws are independent across kinds (no common random numbers), so a zero contrast has
    to hold by its interval, not by construction. A trapped run fails (``success`` false)
    with probability one half; no run is truncated or fails.
    """
    from ..stats import DOSE_KINDS

    rng = np.random.default_rng(seed)
    cols: dict[str, list[Any]] = {c: [] for c in ("model", "task_id", "seed", "kind", "dose", "first_pick", "trapped",
                                                  "success", "truncated", "error")}
    for agent in agents:
        for t in range(tasks):
            for s in seeds:
                for kind in DOSE_KINDS:
                    for k in levels:
                        if agent == "uniform":
                            p = k / (k + 1)
                        elif agent.startswith("planted:"):
                            blind = kind in (agent.removeprefix("planted:"), "distractor") or kind.startswith("twin:")
                            p = take_prob if k > 0 and blind else 0.0
                        else:
                            raise ValueError(f"unknown known-answer agent {agent!r}")
                        pick = bool(rng.random() < p)
                        cols["model"].append(agent)
                        cols["task_id"].append(f"t-{t:03d}")
                        cols["seed"].append(int(s))
                        cols["kind"].append(kind)
                        cols["dose"].append(int(k))
                        cols["first_pick"].append(pick)
                        cols["trapped"].append(pick)
                        cols["success"].append(not (pick and rng.random() < 0.5))
                        cols["truncated"].append(False)
                        cols["error"].append(False)
    return pl.DataFrame(cols, schema={"model": pl.String, "task_id": pl.String, "seed": pl.Int64, "kind": pl.String,
                                      "dose": pl.Int64, "first_pick": pl.Boolean, "trapped": pl.Boolean,
                                      "success": pl.Boolean, "truncated": pl.Boolean, "error": pl.Boolean})
