"""Per-run rows of a stage, remembered by the content of each run's record.

The stages after the agents (trap detection, each judge) compute rows per run from the run's
record alone (and from what the stage's ``scope`` names: its code, its judge, the task file).
After an edit that re-executes some runs, a stage recomputes only the runs whose record
changed and takes the rows of every other run from its memo: a run's rows are reused iff the
SHA-256 of its record file is the one they were computed from, and the memo's scope is the
stage's. Anything else (no memo, another scope, a changed or missing record, a damaged memo)
is a miss and the run is computed again: the memo never decides a result, it only saves
recomputing one.

A memo is a directory ``<root>/<name>/`` holding ``scope.txt``, ``runs.parquet``
(``run_id``, ``digest``) and one parquet per table of rows (each with ``run_id``). It is
replaced whole (written beside, then swapped in), so a killed writer leaves the old memo or
none, never a mix.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from .records import record_path

#: The digest of a run whose record does not exist (an index row marked error, never run).
NO_RECORD = "none"


def record_digests(run_ids: Sequence[str], store_dir: str | os.PathLike[str]) -> dict[str, str]:
    """Run id -> SHA-256 of its record file's bytes (:data:`NO_RECORD` when it has none).
    Reading the bytes costs a fraction of parsing them into a record."""
    out: dict[str, str] = {}
    for rid in run_ids:
        try:
            data = record_path(store_dir, rid).read_bytes()
        except (OSError, ValueError):
            out[rid] = NO_RECORD
            continue
        out[rid] = hashlib.sha256(data).hexdigest()
    return out


def source_digest(*modules: object) -> str:
    """SHA-256 over the source files of ``modules`` (a stage's scope: changed code, new rows)."""
    h = hashlib.sha256()
    for mod in modules:
        path = getattr(mod, "__file__", None)
        h.update(Path(path).read_bytes() if path else repr(mod).encode("utf-8"))
    return h.hexdigest()


class RunMemo:
    """The memo ``<root>/<name>`` of one stage's rows for one set of runs (e.g. one model's)."""

    def __init__(self, root: str | os.PathLike[str], name: str, scope: str) -> None:
        self.dir = Path(root) / name
        self.scope = scope

    def reusable(self, digests: Mapping[str, str], tables: Sequence[str]) -> tuple[set[str], dict[str, pl.DataFrame]]:
        """The run ids whose remembered rows still hold (same scope, same record digest) and
        those rows, per table (empty when nothing can be reused)."""
        try:
            if (self.dir / "scope.txt").read_text(encoding="utf-8") != self.scope:
                return set(), {}
            runs = pl.read_parquet(self.dir / "runs.parquet")
            frames = {t: pl.read_parquet(self.dir / f"{t}.parquet") for t in tables}
        except (OSError, pl.exceptions.PolarsError):
            return set(), {}
        ok = {rid for rid, d in zip(runs["run_id"].to_list(), runs["digest"].to_list(), strict=True)
              if d != NO_RECORD and digests.get(rid) == d}
        if not ok:
            return set(), {}
        keep = pl.DataFrame({"run_id": sorted(ok)}, schema={"run_id": pl.String})
        return ok, {t: f.join(keep, on="run_id", how="semi", maintain_order="left") for t, f in frames.items()}

    def save(self, digests: Mapping[str, str], tables: Mapping[str, pl.DataFrame], exclude: set[str] | None = None) -> None:
        """Remember ``tables`` (rows of the runs in ``digests``) for the next invocation;
        the runs in ``exclude`` (e.g. failed judge calls, to be retried) are left out."""
        exclude = exclude or set()
        ids = [rid for rid in digests if rid not in exclude]
        keep = pl.DataFrame({"run_id": ids}, schema={"run_id": pl.String})
        tmp = self.dir.with_name(f".{self.dir.name}.{os.getpid()}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        pl.DataFrame({"run_id": ids, "digest": [digests[r] for r in ids]},
                     schema={"run_id": pl.String, "digest": pl.String}).write_parquet(tmp / "runs.parquet")
        for name, frame in tables.items():
            frame.join(keep, on="run_id", how="semi", maintain_order="left").write_parquet(tmp / f"{name}.parquet")
        (tmp / "scope.txt").write_text(self.scope, encoding="utf-8")
        old = self.dir.with_name(f".{self.dir.name}.{os.getpid()}.old")
        try:
            if self.dir.exists():
                os.replace(self.dir, old)
            os.replace(tmp, self.dir)
        finally:
            shutil.rmtree(old, ignore_errors=True)
            shutil.rmtree(tmp, ignore_errors=True)


def in_index_order(index_ids: Sequence[str], frame: pl.DataFrame, *, within: str | None = None) -> pl.DataFrame:
    """``frame``'s rows (one or more per run id) in the order of ``index_ids``, then by
    ``within`` (e.g. the call's position in the trace): the order the stage computing every
    run at once writes."""
    pos = pl.DataFrame({"run_id": list(index_ids)}, schema={"run_id": pl.String}).with_row_index("_pos")
    out = frame.join(pos, on="run_id", how="inner")
    return out.sort(["_pos", within] if within else ["_pos"], maintain_order=True).drop("_pos")
