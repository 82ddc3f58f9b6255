"""Where a study lives on disk: its output directory, its grid cells and their file names.

A *study* is one configuration; every file it computes goes under ``study.output_dir``
(default ``results``), so two studies (``params.yaml`` and a profile merged over it with
``--configfile``) never overwrite each other. The run store and the response and verdict
caches are shared between studies: they are content-addressed (a record is found by its run
identity, a verdict by its inputs), so sharing them only saves paying twice and never mixes
results; what a study reads from them is decided by its own run indexes.

A *cell* is one (model, pool, condition, seed) of the grid: the unit of one agent job. Its
files are named by the model's *slug* (the model name made safe for a path and a Snakemake
wildcard: ``planted:semantic_decoy`` -> ``planted_semantic_decoy``) so that any model name
works. The DVC metrics are laid out per model and *grid role*: the main grid's cells are named
by condition and the ablation grid's cell ``ablation``, so switching ``canaries.pool`` pairs
the same cells across the two pools in ``dvc metrics diff``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: Name of the ablation grid's cell in the metrics layout.
ABLATION = "ablation"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def slug(name: str) -> str:
    """``name`` with every run of characters other than letters, digits, ``.``, ``_`` and ``-``
    replaced by ``_`` (``m`` when nothing is left)."""
    s = _UNSAFE.sub("_", name).strip("._") or "m"
    return s


def model_slugs(models: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Model name -> slug, unique over ``models`` (two names that would share a slug get a
    short hash of the name appended, in order)."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for m in models:
        name = str(m["name"])
        s = slug(name)
        if s in taken:
            s = f"{s}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"
        taken.add(s)
        out[name] = s
    return out


@dataclass(frozen=True)
class Cell:
    """One (model, pool, condition, seed) of the grid: one agent job."""

    model: str
    slug: str
    pool: str
    condition: str
    seed: int

    @property
    def name(self) -> str:
        """``<pool>-<condition>-<seed>``: the cell's file name within its model's directory."""
        return f"{self.pool}-{self.condition}-{self.seed}"


def cells(models: Sequence[Mapping[str, Any]], grid: Mapping[str, Sequence[str]], seeds: Iterable[int]) -> list[Cell]:
    """Every cell of a study, in (model, pool, condition, seed) order. ``grid``: pool ->
    conditions (:func:`canarykit.config.run_grid`)."""
    slugs = model_slugs(models)
    seeds = [int(s) for s in seeds]
    return [
        Cell(str(m["name"]), slugs[str(m["name"])], pool, cond, seed)
        for m in models
        for pool in sorted(grid)
        for cond in grid[pool]
        for seed in seeds
    ]


def metric_cells(cfg: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    """Metrics cell name -> (condition, pool): each main-grid condition under its own name,
    the ablation grid as ``ablation``."""
    pool = cfg["canaries"]["pool"]
    out = {str(c): (str(c), str(pool)) for c in cfg["study"]["conditions"]}
    ab = cfg["ablation"]
    if ab["enabled"]:
        out[ABLATION] = (str(ab["condition"]), str(ab["pool"]))
    return out
