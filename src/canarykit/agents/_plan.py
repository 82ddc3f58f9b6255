"""Planning a grid: every (model, pool, condition, seed, task, arm) run, what the run store already
holds for them, and the store operations on a group of runs that share one identity (see
:mod:`.runner` for the decisions: reuse, deduplication, claims)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..store.records import RunRecord
from .loop import RunSpec, _now, toolset_from_assembly
from .protocol import provider_of
from .store import RunStore, model_identity


@dataclass
class Planned:
    """One run of the grid and what this invocation did with it."""

    spec: RunSpec
    model_idx: int
    provider: str
    status: str | None = None
    error: bool = False
    executed: bool = False
    copied: bool = False  # a copy of a run executed in this invocation (same identity)
    late: bool = False  # finished by another invocation while this one waited for its claim
    reason: str | None = None  # ErrorType (status) of a failed run
    failed_before: bool = False  # a failed record of this run was in the store when it started
    #: reused from the store before executing anything: ``record`` (its own finished record)
    #: or ``identical`` (a copy of a finished run with its identity)
    found: str | None = None


#: Runs of one model that share an identity: executed once (the head), copied to the others.
Group = list[Planned]


def _load_pool_records(path: str | Path) -> dict[str, Mapping[str, Any]]:
    """The pool's canaries and controls by id, and the dose condition's look-alikes (the
    pool file's ``dose`` list, :func:`canarykit.assembly.dose.dose_records`)."""
    from ..canaries import load_pool_document

    doc = load_pool_document(path)
    return {str(c["id"]): c for c in [*doc["canaries"], *doc["controls"], *doc.get("dose", [])]}


def plan_grid(
    models: Sequence[Mapping[str, Any]],
    tasks: Sequence[Any],
    pools: Mapping[str, Mapping[str, Any]],
    seeds: Sequence[int],
    max_turns: int,
    environment: Any = None,
) -> list[Planned]:
    """Every run of the grid, in (model, pool, condition, seed, task, arm) order: one run per
    assembled list (a ``control`` list per arm). ``environment``: the tool environment's
    identity (``None``: the built-in tools)."""
    from ..assembly.assembly import load_assemblies

    prepared: list[tuple[str, str, int, Any, Any, str]] = []
    for pool, cfg in pools.items():
        canaries = _load_pool_records(cfg["canaries"])
        # one assembly file, or several (the workflow assembles one file per pool and seed)
        sources = [cfg["assembly"]] if isinstance(cfg["assembly"], str | Path) else list(cfg["assembly"])
        by_list: dict[tuple[str, int, str], list[Any]] = {}
        for src in sources:
            for (cond, seed, task_id, _arm), a in load_assemblies(src).items():
                by_list.setdefault((cond, seed, task_id), []).append(a)
        for cond in cfg["conditions"]:
            for seed in seeds:
                for task in tasks:
                    found = by_list.get((cond, int(seed), task.id))
                    if not found and cond == "control" and _no_arms(by_list, int(seed), task.id):
                        continue  # its declared list offers no canary: no control list to run
                    if not found:
                        raise InputError(", ".join(map(str, sources)), f"{cond}/{seed}/{task.id}", f"no assembly for this run (pool {pool!r}); re-run the assembly stage")
                    for a in sorted(found, key=lambda x: x.arm):
                        try:
                            ts = toolset_from_assembly(a, canaries, scope=pool)
                        except KeyError as exc:
                            raise InputError(str(cfg["canaries"]), "id", str(exc)) from exc
                        prepared.append((pool, cond, int(seed), task, ts, a.arm))
    planned: list[Planned] = []
    for mi, spec in enumerate(models):
        ident = model_identity(spec)
        provider = provider_of(spec)
        for pool, cond, seed, task, ts, arm in prepared:
            rs = RunSpec(spec, task, cond, pool, seed, ts, max_turns, model_ident=ident, environment=environment, arm=arm)
            planned.append(Planned(rs, mi, provider))
    return planned


def _no_arms(by_list: Mapping[tuple[str, int, str], list[Any]], seed: int, task_id: str) -> bool:
    """Whether the (seed, task) legitimately has no ``control`` list: its ``declared`` list
    offers no canary (or, without a declared list to tell, the seed has control lists for
    other tasks, so the control condition was assembled)."""
    declared = by_list.get(("declared", seed, task_id))
    if declared:
        return not any(o.kind == "canary" for o in declared[0].offered)
    return any(c == "control" and s == seed for c, s, _ in by_list)


def _fast_finished(store: RunStore, run_id: str) -> dict[str, Any] | None:
    """The stored record's JSON if it finished without error (plain parse: our own files)."""
    return store.finished_json(run_id)


def relabel(record: RunRecord, spec: RunSpec) -> RunRecord:
    """``record`` as the record of ``spec`` (same identity, other labels)."""
    return replace(
        record, run_id=spec.run_id, model=str(spec.model["name"]), group=str(spec.model.get("group", "")),
        condition=spec.condition, pool=spec.pool, seed=int(spec.seed), task_id=str(spec.task.id), arm=spec.arm,
        difficulty=str(spec.task.difficulty), created_at=_now(),
    )


def reuse_stored(planned: Sequence[Planned], store: RunStore) -> list[Group]:
    """Reuse what the store holds (``Planned.found``); group what is left by identity.

    A run whose record finished is reused as is; a run with an identical finished run (one
    of this grid, or any stored run of its identity: labels are not part of it, e.g. a
    renamed model or a list both pools share) gets a copy. The rest is returned as groups to
    execute, in plan order, one per (model, identity)."""
    done_by_identity: dict[tuple[int, str], Planned] = {}
    for p in planned:
        hit = _fast_finished(store, p.spec.run_id)
        if hit is not None:
            p.status, p.error, p.found = hit["status"], False, "record"
            done_by_identity.setdefault((p.model_idx, p.spec.identity_hash), p)
    groups: dict[tuple[int, str], Group] = {}
    todo: list[Group] = []
    for p in planned:
        if p.status is not None:
            continue
        p.failed_before = store.path(p.spec.run_id).exists()  # a record, but not a finished one
        key = (p.model_idx, p.spec.identity_hash)
        src = done_by_identity.get(key)
        rec = store.load(src.spec.run_id) if src is not None else store.finished_by_identity(p.spec.identity_hash)
        if rec is not None and not rec.error:
            clone = relabel(rec, p.spec)
            store.save(clone)
            p.status, p.error, p.found = clone.status, clone.error, "identical"
            done_by_identity.setdefault(key, p)
            continue
        if key in groups:
            groups[key].append(p)
        else:
            groups[key] = [p]
            todo.append(groups[key])
    return todo


def failure_reason(rec: RunRecord) -> str | None:
    """``ErrorType (status)`` of a failed run (from its ``backend_error`` event)."""
    if not rec.error:
        return None
    ev = next((e for e in reversed(rec.events) if e.kind == "backend_error"), None)
    if ev is None:
        return "BackendError"
    kind = ev.error_type or "BackendError"
    return f"{kind} ({ev.status_code})" if ev.status_code else kind


def save_group(store: RunStore, group: Group, rec: RunRecord) -> None:
    """Store the head's record and a relabelled copy for every other run of the group."""
    store.save(rec)
    head = group[0]
    reason = failure_reason(rec)
    head.status, head.error, head.executed, head.reason = rec.status, rec.error, True, reason
    for other in group[1:]:
        clone = relabel(rec, other.spec)
        store.save(clone)
        other.status, other.error, other.copied, other.reason = clone.status, clone.error, True, reason


def reuse_if_finished(store: RunStore, group: Group) -> bool:
    """Under the claim: if another invocation finished this identity meanwhile, reuse it."""
    head = group[0]
    hit = _fast_finished(store, head.spec.run_id)
    if hit is None:
        return False
    source: RunRecord | None = None
    for p in group:
        found = hit if p is head else _fast_finished(store, p.spec.run_id)
        if found is None:
            source = source or store.load(head.spec.run_id)
            if source is None or source.error:  # pragma: no cover - replaced under our feet
                return False
            clone = relabel(source, p.spec)
            store.save(clone)
            status = clone.status
        else:
            status = found["status"]
        p.status, p.error, p.late = status, False, True
    return True
