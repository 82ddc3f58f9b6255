"""The runs behind one rate (:class:`Sample`): a value per run, the task (cluster) of each
run and, for a per-type rate, the canary item each run was offered."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

#: The prefix of a twin's id (``control:<canary id>``): a canary and its twin are one item.
TWIN_PREFIX = "control:"


def item_key(labels: np.ndarray | Sequence[str]) -> np.ndarray:
    """Item cluster labels from offered ids: a twin (``control:<canary id>``) joins its
    canary's item, because the two share a name form and a wording variant; None is ``""``."""
    a = np.asarray([("" if x is None else str(x)) for x in np.asarray(labels, dtype=object).ravel()], dtype=str)
    if a.size == 0:
        return a
    twin = np.char.startswith(a, TWIN_PREFIX)
    if twin.any():
        a = a.copy().astype(object)
        a[twin] = [x[len(TWIN_PREFIX):] for x in a[twin]]
        a = a.astype(str)
    return a


@dataclass(frozen=True)
class Sample:
    """The runs behind one rate: a value per run and the task (cluster) of each run.

    ``values`` are floats (0/1 for proportions); runs whose value is undefined are already
    left out. ``pairs`` (optional) are the pairing keys of the runs, e.g. ``"task|seed"``:
    only used to count the pairs two samples share. ``items`` (optional) are the canary items
    the runs were offered (the runs table's ``item_<T>``, twins folded into their canary's
    item by :func:`item_key`): with ``stats.bootstrap_unit: task_x_item`` the rate's
    interval treats items as a second, crossed random factor. None (or a single item) leaves
    the item dimension out.
    """

    values: np.ndarray
    tasks: np.ndarray
    pairs: np.ndarray | None = None
    items: np.ndarray | None = None

    def __post_init__(self) -> None:
        if np.shape(self.values) != np.shape(self.tasks):
            raise ValueError(f"values and tasks differ in length ({np.size(self.values)} vs {np.size(self.tasks)})")
        if self.items is not None and np.shape(self.items) != np.shape(self.values):
            raise ValueError(f"values and items differ in length ({np.size(self.values)} vs {np.size(self.items)})")

    @property
    def n(self) -> int:
        return int(np.size(self.values))

    @property
    def clusters(self) -> int:
        """Distinct tasks carrying the sample's runs (the clusters its interval rests on)."""
        return int(np.unique(self.tasks).size)

    @property
    def n_items(self) -> int | None:
        """Distinct items the runs were offered (None without items)."""
        return None if self.items is None else int(np.unique(self.items).size)

    def mean(self) -> float | None:
        return float(np.mean(self.values)) if self.n else None


def sample_of(
    frame: pl.DataFrame, value: str, *, task: str = "task_id", pair: Sequence[str] | None = ("task_id", "seed"),
    item: str | None = None,
) -> Sample:
    """The :class:`Sample` of column ``value`` over the rows of ``frame`` where it is not null
    (booleans become 0/1); ``task`` names the cluster column, ``pair`` the pairing key columns,
    ``item`` (optional) the item column (e.g. ``item_capability_mirage``)."""
    rows = frame.filter(pl.col(value).is_not_null())
    values = rows.get_column(value).cast(pl.Float64).to_numpy()
    tasks = rows.get_column(task).cast(pl.String).to_numpy().astype(str)
    pairs = None
    if pair:
        pairs = rows.select(pl.concat_str([pl.col(c).cast(pl.String) for c in pair], separator="|")).to_series().to_numpy().astype(str)
    items = None
    if item is not None and item in rows.columns:
        items = item_key(rows.get_column(item).cast(pl.String).to_numpy())
    return Sample(values, tasks, pairs, items)
