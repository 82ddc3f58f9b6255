"""A study's failed runs read from its run index and the run records (the workflow's final
check and the report's banner): beside :mod:`canarykit.study.failures`, which the console
imports, because reading a record needs the agents' run store."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..agents.protocol import is_transient_reason
from ..agents.store import RunStore
from .failures import Failures, FirstFailure, model_host


def first_failure(runs: Any, store: str | Path | None, models: Sequence[Mapping[str, Any]]) -> FirstFailure | None:
    """The first failed run of ``runs`` (a run index or per-run table: ``model``, ``run_id``,
    ``error``), with its error class and message from its record in ``store``."""
    if runs is None or "error" not in runs.columns or not runs.height:
        return None
    failed = runs.filter(runs["error"].fill_null(False))
    if not failed.height:
        return None
    row = failed.row(0, named=True)
    model, run_id = str(row.get("model", "?")), str(row.get("run_id", ""))
    spec = next((m for m in models if str(m.get("name")) == model), {})
    error_class, message = "BackendError", ""
    if store is not None and run_id:
        try:
            rec = RunStore(store).load(run_id)
        except Exception:  # an unreadable record: the class stays generic, the count still stands
            rec = None
        if rec is not None:
            ev = next((e for e in reversed(rec.events) if e.kind == "backend_error"), None)
            if ev is not None:
                error_class = str(getattr(ev, "error_type", None) or error_class)
                message = str(getattr(ev, "message", None) or "")[:300]
    return FirstFailure(model, error_class, model_host(spec), message, run_id, is_transient_reason(error_class))


def study_failures(index: str | Path, store: str | Path | None, models: Sequence[Mapping[str, Any]],
                   allowed_share: float) -> Failures | None:
    """The failed runs of a study's run index (None when the index is not there yet)."""
    import polars as pl

    path = Path(index)
    if not path.is_file():
        return None
    runs = pl.read_parquet(path, columns=["model", "run_id", "error"])
    failed = int(runs["error"].fill_null(False).sum())
    return Failures(failed, runs.height, float(allowed_share), first_failure(runs, store, models) if failed else None)
