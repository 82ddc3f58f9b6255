"""The study's data: the runs of each (pool, condition, model) cut once into arrays
(:class:`Cell`), and what every part of the computation shares (:class:`Study`: the
configuration, the cells, the models and the one resampler of the study)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl

from ..detection import metrics
from ..types import CANARY_TYPES, CONDITIONS
from ._bootstrap import Resampler, Sample, make_resampler, rate_intervals
from ._config import StatsConfig
from ._load import with_optional_columns
from ._sample import item_key, wording_of

#: The number of canary types (the columns of a cell's per-type arrays).
N_TYPES = len(CANARY_TYPES)

#: The rates a cell holds per run, each from its one definition.
_RATES: tuple[metrics.Rate, ...] = (
    metrics.CSR, metrics.TSR, metrics.TSR_TRUNCATED_AS_FAILURE, metrics.RECOVERY, metrics.TRAPPED,
    *(metrics.trap_rate(t) for t in CANARY_TYPES), *(metrics.control_rate(t) for t in CANARY_TYPES),
    *(metrics.first_pick_rate(t) for t in CANARY_TYPES), *(metrics.recovery_after_call_rate(t) for t in CANARY_TYPES),
)
_RATE_PREFIX = "_rate_"


def _with_rates(f: pl.DataFrame) -> pl.DataFrame:
    """``f`` with every rate's per-run value as a column (``_rate_<name>``; NaN where the rate
    is not defined over the run)."""
    return f.with_columns(r.per_run().fill_null(np.nan).alias(_RATE_PREFIX + r.name) for r in _RATES)


@dataclass(frozen=True)
class Cell:
    """The non-error runs of one (pool, condition, model) as arrays (one entry per run).

    The rates' per-run values come from their definitions (:mod:`canarykit.detection.metrics`), NaN
    where a rate is not defined over the run: ``csr``; ``success``, the headline tsr (NaN for
    an unjudged or a truncated run); ``success_taf``, a truncated run as a failure;
    ``recovery``; ``trap`` and ``control`` (runs x canary types); ``trap_any`` (the types
    pooled); ``first_pick`` and ``recovered_after`` (runs x canary types: the first-pick
    rate and the recovery after a call of the type's stand-in). ``arm`` is the run's arm
    (the type whose twin a ``control`` run was offered, "" otherwise), ``items`` (runs x
    types) the id of the type's canary in the run's list ("" where none), ``wordings`` (runs x
    types) its wording (``wording_<T>``, "" where none) and ``visible`` (runs x types) 1.0/0.0
    for ``selection_visible_T``, NaN where the type has no stand-in.
    """

    tasks: np.ndarray
    seeds: np.ndarray
    pairs: np.ndarray
    difficulty: np.ndarray
    calls: np.ndarray
    canary_calls: np.ndarray
    trapped: np.ndarray
    present: np.ndarray
    truncated: np.ndarray
    before: np.ndarray
    """``canary_before_real`` as 1.0/0.0, NaN where null."""
    csr: np.ndarray
    success: np.ndarray
    success_taf: np.ndarray
    recovery: np.ndarray
    trap: np.ndarray
    trap_any: np.ndarray
    control: np.ndarray
    first_pick: np.ndarray
    recovered_after: np.ndarray
    arm: np.ndarray
    items: np.ndarray
    """runs x canary types: the item (canary id, twins folded in) offered for each type, from
    the runs table's ``item_<T>`` (``""`` where the table has no such column: one item)."""
    wordings: np.ndarray
    """runs x canary types: the wording (bank entry) of each type's canary or twin offered,
    from ``wording_<T>`` (derived from ``item_<T>`` where the table has none)."""
    visible: np.ndarray

    @classmethod
    def from_frame(cls, f: pl.DataFrame) -> Cell:
        if _RATE_PREFIX + metrics.CSR.name not in f.columns:
            f = _with_rates(f)
        values = f.select(_RATE_PREFIX + r.name for r in _RATES).to_numpy(order="fortran").astype(float)
        columns = {r.name: np.ascontiguousarray(values[:, i]) for i, r in enumerate(_RATES)}

        def rate(r: metrics.Rate) -> np.ndarray:
            return columns[r.name]

        return cls(
            tasks=f.get_column("task_id").cast(pl.String).to_numpy().astype(str),
            seeds=f.get_column("seed").to_numpy().astype(np.int64),
            pairs=(f.get_column("task_id").cast(pl.String) + "|" + f.get_column("seed").cast(pl.String)).to_numpy().astype(str),
            difficulty=f.get_column("difficulty").to_numpy().astype(str),
            calls=f.get_column("tool_calls").to_numpy().astype(np.int64),
            canary_calls=f.get_column("canary_calls").to_numpy().astype(np.int64),
            trapped=f.get_column("trapped").to_numpy().astype(bool),
            present=np.column_stack([f.get_column(f"present_{t}").to_numpy().astype(bool) for t in CANARY_TYPES]),
            truncated=f.get_column("truncated").to_numpy().astype(bool),
            before=f.get_column("canary_before_real").cast(pl.Float64).fill_null(np.nan).to_numpy().astype(float),
            csr=rate(metrics.CSR),
            success=rate(metrics.TSR),
            success_taf=rate(metrics.TSR_TRUNCATED_AS_FAILURE),
            recovery=rate(metrics.RECOVERY),
            trap=np.column_stack([rate(metrics.trap_rate(t)) for t in CANARY_TYPES]),
            trap_any=rate(metrics.TRAPPED),
            control=np.column_stack([rate(metrics.control_rate(t)) for t in CANARY_TYPES]),
            first_pick=np.column_stack([rate(metrics.first_pick_rate(t)) for t in CANARY_TYPES]),
            recovered_after=np.column_stack([rate(metrics.recovery_after_call_rate(t)) for t in CANARY_TYPES]),
            arm=f.get_column("arm").cast(pl.String).fill_null("").to_numpy().astype(str),
            items=(items := _items(f)),
            wordings=_wordings(f, items),
            visible=np.column_stack([f.get_column(f"selection_visible_{t}").cast(pl.Float64).fill_null(np.nan).to_numpy()
                                     .astype(float) for t in CANARY_TYPES]),
        )

    def sample(self, values: np.ndarray, mask: np.ndarray | None = None, item: int | None = None) -> Sample:
        """The runs where ``values`` is defined (finite) and ``mask`` holds; ``item`` (a type's
        column) attaches the items the runs were offered for that type."""
        v = np.asarray(values, dtype=float)
        keep = np.isfinite(v) if mask is None else (mask & np.isfinite(v))
        if item is None:
            return Sample(v[keep], self.tasks[keep], self.pairs[keep])
        return Sample(v[keep], self.tasks[keep], self.pairs[keep], self.items[keep, item], self.wordings[keep, item])

    def where(self, mask: np.ndarray) -> Cell:
        return Cell(**{k: getattr(self, k)[mask] for k in self.__dataclass_fields__})

    # the rates of the study, each over the runs where it is defined
    def csr_sample(self) -> Sample:
        return self.sample(self.csr)

    def tsr_sample(self, truncated_as_failure: bool = False) -> Sample:
        return self.sample(self.success_taf if truncated_as_failure else self.success)

    def trap_sample(self, j: int) -> Sample:
        """Type ``j``: runs where it was offered and that made at least one tool call."""
        return self.sample(self.trap[:, j], item=j)

    def control_sample(self, j: int) -> Sample:
        """Type ``j``'s control: runs where it was offered and that made at least one tool
        call; the value is whether the control was called (the trap rate's counterpart)."""
        return self.sample(self.control[:, j], item=j)

    def first_pick_sample(self, j: int, mask: np.ndarray | None = None) -> Sample:
        """Type ``j``'s first pick: runs with a first call into its families (and ``mask``)."""
        return self.sample(self.first_pick[:, j], mask, item=j)

    def recovered_after_sample(self, j: int, mask: np.ndarray | None = None) -> Sample:
        """Runs that called one of type ``j``'s stand-ins: whether they then called its real tool."""
        return self.sample(self.recovered_after[:, j], mask, item=j)

    def trap_any_sample(self) -> Sample:
        """Runs offered at least one canary and that made a tool call: trapped or not."""
        return self.sample(self.trap_any)

    def recovery_sample(self) -> Sample:
        """Trapped runs; a trapped run whose recovery is unknown counts as not recovered."""
        return self.sample(self.recovery)


@functools.cache
def _empty_cell() -> Cell:
    """The cell of a (pool, condition, model) without runs: every rate over it is undefined."""
    z = np.zeros(0)
    types = np.zeros((0, N_TYPES))
    return Cell(
        tasks=z.astype(str), seeds=z.astype(np.int64), pairs=z.astype(str), difficulty=z.astype(str),
        calls=z.astype(np.int64), canary_calls=z.astype(np.int64), trapped=z.astype(bool),
        present=types.astype(bool), truncated=z.astype(bool), before=z, csr=z, success=z, success_taf=z, recovery=z,
        trap=types, trap_any=z, control=types, first_pick=types, recovered_after=types, arm=z.astype(str),
        items=types.astype(str), wordings=types.astype(str), visible=types,
    )


def _items(f: pl.DataFrame) -> np.ndarray:
    """runs x types: ``item_<T>`` as item labels (:func:`item_key`), ``""`` without the column."""
    cols = [item_key(f.get_column(f"item_{t}").cast(pl.String).to_numpy()) if f"item_{t}" in f.columns
            else np.full(f.height, "", dtype=str) for t in CANARY_TYPES]
    return np.column_stack(cols).astype(str) if cols else np.zeros((f.height, 0), dtype=str)


def _wordings(f: pl.DataFrame, items: np.ndarray) -> np.ndarray:
    """runs x types: ``wording_<T>`` ("" where null); without the column, derived from the
    items (``<T>/v<i>``, :func:`wording_of`); "" wherever the run has no item of the type."""
    cols = []
    for j, t in enumerate(CANARY_TYPES):
        if f"wording_{t}" in f.columns:
            w = np.asarray([x or "" for x in f.get_column(f"wording_{t}").cast(pl.String).to_list()], dtype=str)
        else:
            w = wording_of(items[:, j], t)
        cols.append(np.where(items[:, j] == "", "", w))
    return np.column_stack(cols).astype(str) if cols else np.zeros((f.height, 0), dtype=str)


@dataclass
class Study:
    """Everything the sections share: configuration, cells, models and the resampler."""

    config: StatsConfig
    cells: dict[tuple[str, str, str], Cell]
    conds: list[str]
    models: dict[str, list[str]]
    """Models with at least one run (failed or not) per condition of the primary pool."""
    groups: dict[str, str]
    tested: list[str]
    seeds: list[int]
    boot: Resampler
    counts: dict[str, dict[str, dict[str, int]]]

    def cell(self, condition: str, model: str, pool: str | None = None) -> Cell:
        return self.cells.get((pool or self.config.primary_pool, condition, model), _empty_cell())

    def tested_in(self, condition: str) -> list[str]:
        return [m for m in self.models.get(condition, []) if m in set(self.tested)]

    def ci(self, label: tuple[str, ...], sample: Sample) -> tuple[float | None, float | None]:
        return self.intervals([(label, sample)])[0]

    def intervals(self, items: list[tuple[tuple[str, ...], Sample]]) -> list[tuple[float | None, float | None]]:
        """``(lo, hi)`` of every ``(label, sample)`` rate (None for an empty sample); with the
        task unit all of them share one matrix product per chunk."""
        live = [i for i, (_, smp) in enumerate(items) if smp.n]
        got = rate_intervals(self.boot, [items[i] for i in live], self.config.alpha)
        out: list[tuple[float | None, float | None]] = [(None, None)] * len(items)
        for i, ci in zip(live, got, strict=True):
            out[i] = ci
        return out

    def cell_intervals(
        self, name: str, sample: Callable[[Cell], Sample]
    ) -> list[tuple[str, str, Sample, float | None, float | None]]:
        """``(condition, model, sample, lo, hi)`` of every primary-pool cell's ``name`` rate
        (``sample`` draws it from the cell); one :meth:`intervals` call serves them all."""
        keys = [(c, m) for c in self.conds for m in self.models[c]]
        samples = [sample(self.cell(c, m)) for c, m in keys]
        cis = self.intervals([((name, c, m), s) for (c, m), s in zip(keys, samples, strict=True)])
        return [(c, m, s, lo, hi) for (c, m), s, (lo, hi) in zip(keys, samples, cis, strict=True)]


def _counts(prim_all: pl.DataFrame) -> dict[str, dict[str, dict[str, int]]]:
    ok = ~pl.col("error")
    agg = prim_all.group_by("condition", "model").agg(
        ok.sum().alias("runs"),
        pl.col("error").sum().alias("failed"),
        (ok & (pl.col("tool_calls") == 0)).sum().alias("zero_call"),
        (ok & pl.col("truncated")).sum().alias("truncated"),
        (ok & ~pl.col("truncated") & pl.col("success").is_not_null()).sum().alias("judged"),
    )
    out: dict[str, dict[str, dict[str, int]]] = {}
    for r in agg.sort("condition", "model").to_dicts():
        out.setdefault(r["condition"], {})[r["model"]] = {k: int(r[k]) for k in ("runs", "failed", "zero_call", "truncated", "judged")}
    return out


def build_study(df: pl.DataFrame, config: StatsConfig) -> Study:
    """Cut a validated runs table into cells and set up the study's resampler."""
    if "truncated" not in df.columns:
        df = df.with_columns(pl.lit(False).alias("truncated"))
    df = with_optional_columns(df)
    ok = _with_rates(df.filter(~pl.col("error")))  # once for the study, not per cell
    prim_all = df.filter(pl.col("pool") == config.primary_pool)
    counts = _counts(prim_all)
    conds = [c for c in CONDITIONS if c in counts]
    groups = dict(df.group_by("model").agg(pl.col("group").first()).sort("model").iter_rows())
    cells = {
        (str(k[0]), str(k[1]), str(k[2])): Cell.from_frame(f)
        for k, f in ok.partition_by(["pool", "condition", "model"], as_dict=True).items()
    }
    tasks = ok.get_column("task_id").cast(pl.String).unique().sort().to_numpy().astype(str)
    return Study(
        config=config,
        cells=cells,
        conds=conds,
        models={c: sorted(counts[c]) for c in conds},
        groups=groups,
        tested=sorted(m for m, g in groups.items() if config.tested(g)),
        seeds=sorted(int(s) for s in ok.get_column("seed").unique().to_list()),
        boot=make_resampler(config.bootstrap_unit, tasks, config.resamples, config.seed),
        counts=counts,
    )
