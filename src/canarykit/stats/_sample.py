"""The runs behind one rate (:class:`Sample`): a value per run, the task (cluster) of each
run and, for a per-type rate, the canary item each run was offered, with the two crossed
random factors an item carries: the real tool it shadows and its wording (the bank entry)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

#: The prefix of a twin's id (``control:<canary id>``): a canary and its twin are one item.
TWIN_PREFIX = "control:"

_VARIANT = re.compile(r"@v(\d+)$")


def tool_of(items: np.ndarray | Sequence[str]) -> np.ndarray:
    """The tool factor of item labels: the real tool a canary shadows, from its id
    ``<type>:<tool>[@v<i>]`` (the type prefix and the variant suffix dropped, so one real tool
    is one level across types); ``""`` stays ``""`` (no item)."""
    out = []
    for x in np.asarray(items, dtype=str).ravel():
        base = _VARIANT.sub("", x)
        out.append(base.split(":", 1)[1] if ":" in base else base)
    return np.asarray(out, dtype=str)


def wording_of(items: np.ndarray | Sequence[str], canary_type: str | None = None) -> np.ndarray:
    """The wording factor derived from item ids when the runs table has no ``wording_<T>``
    (old or foreign pools): ``"<type>/v<i>"`` for variant ``i`` (``@v<i>``, 1 without the
    suffix); ``""`` stays ``""``. ``canary_type`` defaults to the id's prefix."""
    out = []
    for x in np.asarray(items, dtype=str).ravel():
        if not x:
            out.append("")
            continue
        m = _VARIANT.search(x)
        t = canary_type or (x.split(":", 1)[0] if ":" in x else "")
        out.append(f"{t}/v{int(m.group(1)) if m else 1}")
    return np.asarray(out, dtype=str)


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
    left out. ``pairs`` (optional) are the pairing keys of the runs, e.g. ``"task|seed"``: they
    count the pairs two samples share and define the sides a randomisation test swaps
    (:mod:`._swap`). ``items`` (optional) are the canary items the runs were offered (the runs
    table's ``item_<T>``, twins folded into their canary's item by :func:`item_key`): with
    ``stats.bootstrap_unit: task_x_item`` a rate's interval treats the item's **tool** and
    **wording** as random factors crossed with tasks (:mod:`._crossed`). ``tools`` and
    ``wordings`` (optional, one label per run) name them; when omitted they are derived from
    ``items`` (:func:`tool_of`, :func:`wording_of`). ``""`` is "none" (a run offered no item).
    Without items the rate is clustered by task alone.
    """

    values: np.ndarray
    tasks: np.ndarray
    pairs: np.ndarray | None = None
    items: np.ndarray | None = None
    wordings: np.ndarray | None = None
    tools: np.ndarray | None = None

    def __post_init__(self) -> None:
        if np.shape(self.values) != np.shape(self.tasks):
            raise ValueError(f"values and tasks differ in length ({np.size(self.values)} vs {np.size(self.tasks)})")
        for name in ("items", "wordings", "tools"):
            arr = getattr(self, name)
            if arr is not None and np.shape(arr) != np.shape(self.values):
                raise ValueError(f"values and {name} differ in length ({np.size(self.values)} vs {np.size(arr)})")
        if self.items is not None:
            items = np.asarray(self.items, dtype=str)
            if self.tools is None:
                object.__setattr__(self, "tools", tool_of(items))
            if self.wordings is None:
                object.__setattr__(self, "wordings", wording_of(items))

    def take(self, keep: np.ndarray) -> Sample:
        """The runs where ``keep`` holds (every label kept with its run)."""
        def cut(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else np.asarray(a)[keep]

        return Sample(self.values[keep], self.tasks[keep], cut(self.pairs), cut(self.items), cut(self.wordings),
                      cut(self.tools))

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

    @property
    def n_wordings(self) -> int | None:
        """Distinct wordings the runs were offered (None without wordings)."""
        if self.wordings is None:
            return None
        w = np.asarray(self.wordings, dtype=str)
        return int(np.unique(w[w != ""]).size)

    def mean(self) -> float | None:
        return float(np.mean(self.values)) if self.n else None


def sample_of(
    frame: pl.DataFrame, value: str, *, task: str = "task_id", pair: Sequence[str] | None = ("task_id", "seed"),
    item: str | None = None,
    wording: str | None = None,
) -> Sample:
    """The :class:`Sample` of column ``value`` over the rows of ``frame`` where it is not null
    (booleans become 0/1); ``task`` names the cluster column, ``pair`` the pairing key columns,
    ``item`` (optional) the item column (e.g. ``item_capability_mirage``) and ``wording``
    (optional) the wording column (``wording_capability_mirage``; derived from the items when
    absent)."""
    rows = frame.filter(pl.col(value).is_not_null())
    values = rows.get_column(value).cast(pl.Float64).to_numpy()
    tasks = rows.get_column(task).cast(pl.String).to_numpy().astype(str)
    pairs = None
    if pair:
        pairs = rows.select(pl.concat_str([pl.col(c).cast(pl.String) for c in pair], separator="|")).to_series().to_numpy().astype(str)
    items = wordings = None
    if item is not None and item in rows.columns:
        items = item_key(rows.get_column(item).cast(pl.String).to_numpy())
    if items is not None and wording is not None and wording in rows.columns:
        wordings = np.asarray([x or "" for x in rows.get_column(wording).cast(pl.String).to_list()], dtype=str)
    return Sample(values, tasks, pairs, items, wordings)
