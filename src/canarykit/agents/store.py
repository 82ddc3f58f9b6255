"""Run identity and the run store: a finished run is never executed twice.

A run's *identity* is everything that decides what happens in it: the loop version (which
includes the system message), the model spec minus its labels, the offered tool list (its
hash covers every definition and the order), the task (its prompt; plus its plan for
reference agents, which follow it), ``max_turns`` and the version of the tool environment
(the source of the real tools and of the canaries' runtime, which decide every tool result
the model reads). For reference agents the model *is* code: their implementation (and the
scripted answer they compose) is part of the identity too. Editing the environment thus
re-executes runs, but a model's calls are replayed from the response cache for as long as
the conversation is unchanged, so only conversations that really differ cost a call. Two
runs with one identity are the same experiment: the runner executes it once and copies the
record to the other.

The *run id* is the identity hash plus the run's coordinates (model name, group, condition,
pool, seed, task), so every (model, condition, pool, seed, task) has its own record file,
``store_dir/<run_id[:2]>/<run_id>.json``, whose labels are its own.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..jsonio import atomic_write_text, content_hash, pretty_json
from ..records import Event, OfferedTool, RunRecord, Usage, read_record

#: Model-spec keys that name or group a model, or say where its key lives: not part of what
#: the model does, so renaming or regrouping a model never re-runs it.
LABEL_KEYS = frozenset({"name", "group", "api_key_env", "provider"})


def _source_hash(*paths: Path) -> str:
    files = sorted(p for path in paths for p in ([path] if path.is_file() else path.rglob("*.py")))
    return content_hash([[f.name, f.read_text(encoding="utf-8")] for f in files], 16)


@functools.cache
def environment_version() -> str:
    """Hash of the code that answers tool calls: the real tools and the canaries' runtime."""
    pkg = Path(__file__).resolve().parents[1]
    return _source_hash(pkg / "tools", pkg / "canaries")


@functools.cache
def reference_version() -> str:
    """Hash of the reference agents' code and of the answer they compose (tasks.compose_answer)."""
    pkg = Path(__file__).resolve().parents[1]
    return _source_hash(pkg / "agents" / "reference.py", pkg / "tasks.py")


def model_identity(spec: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in spec.items() if k not in LABEL_KEYS and v is not None}


def run_identity(
    loop_version: str,
    spec: Mapping[str, Any],
    task: Any,
    tool_list_hash: str,
    max_turns: int,
    model_ident: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    task_ident: dict[str, Any] = {"prompt": task.prompt}
    if spec.get("backend") == "reference":
        task_ident["plan"] = [[step.tool, dict(step.args)] for step in task.plan]
    model = dict(model_ident if model_ident is not None else model_identity(spec))
    if spec.get("backend") == "reference":
        model["implementation"] = reference_version()
    return {
        "loop_version": loop_version,
        "environment": environment_version(),
        "model": model,
        "tool_list_hash": tool_list_hash,
        "task": task_ident,
        "max_turns": int(max_turns),
    }


def identity_hash(identity: Mapping[str, Any]) -> str:
    return content_hash(dict(identity))


def run_id_for(ident_hash: str, model: str, group: str, condition: str, pool: str, seed: int, task_id: str) -> str:
    return content_hash(
        {"identity": ident_hash, "model": model, "group": group, "condition": condition, "pool": pool, "seed": seed, "task_id": task_id},
        length=40,
    )


_RECORD_FIELDS = tuple(f.name for f in fields(RunRecord))
_EVENT_FIELDS = tuple(f.name for f in fields(Event))
_OFFERED_FIELDS = tuple(f.name for f in fields(OfferedTool))


def _usage(u: Usage) -> dict[str, int]:
    return {"prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens}


def _event_dict(e: Event) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in _EVENT_FIELDS:
        v = getattr(e, name)
        if v is not None:
            out[name] = _usage(v) if name == "usage" else v
    return out


def record_dict(record: RunRecord) -> dict[str, Any]:
    """``record.to_dict()`` without its deep copies (the records are serialised at once).

    :meth:`RunRecord.to_dict` goes through ``dataclasses.asdict``, which deep-copies every
    nested value and costs more than the rest of a reference run; the JSON is identical
    (a test pins ``pretty_json(record_dict(r)) == pretty_json(r.to_dict())``).
    """
    d = {name: getattr(record, name) for name in _RECORD_FIELDS}
    d["usage"] = _usage(record.usage)
    d["events"] = [_event_dict(e) for e in record.events]
    d["offered"] = [{k: v for k in _OFFERED_FIELDS if (v := getattr(o, k)) is not None} for o in record.offered]
    return d


class RunStore:
    """Run records on disk, one JSON file each, written atomically."""

    def __init__(self, store_dir: str | Path) -> None:
        self.dir = Path(store_dir)

    def path(self, run_id: str) -> Path:
        return self.dir / run_id[:2] / f"{run_id}.json"

    def load(self, run_id: str) -> RunRecord | None:
        """The stored record, or ``None`` when there is none or it cannot be read."""
        p = self.path(run_id)
        if not p.exists():
            return None
        try:
            return read_record(p)
        except (InputError, OSError):
            return None

    def finished(self, run_id: str) -> RunRecord | None:
        """The stored record if it finished without a backend error (else re-execute)."""
        rec = self.load(run_id)
        return rec if rec is not None and not rec.error else None

    def save(self, record: RunRecord) -> Path:
        """Write atomically, byte for byte what :func:`~canarykit.records.write_record` writes."""
        p = self.path(record.run_id)
        atomic_write_text(p, pretty_json(record_dict(record)))
        return p
