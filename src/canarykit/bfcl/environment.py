"""BFCL's classes as a study's tool environment: one fresh world per run.

- **export** (:func:`export_environment`, the ``export_tools`` rule): the tools document
  (``results/tools.json``: ``{"format": "canarykit-tools", "environment": "bfcl", "bfcl":
  {version, categories, entries, tasks, skipped, classes}, "tools": [...]}``, the tools
  annotated, :mod:`canarykit.bfcl.entries`) and the task file of the categories' entries
  (``<study.output_dir>/tasks.json``). Canaries and twins are generated from these tools as
  from any tool list.
- **runs** (:func:`make_environment`): each run gets its own :class:`World`, the entry's
  classes instantiated from its ``initial_config`` (its task's ``setup``), as BFCL's executor
  makes them. A call of a real tool runs the method and answers what BFCL's executor answers
  (a string as is, a dict as JSON, an exception as ``Error during execution: ...``), recorded
  with the run (``tool_result.executed``) for the checker. A twin calls its real tool in the
  run's world (it works like it). **A canary never changes the world**: what its runtime asks
  of the real tool runs on a copy of the instance, thrown away after (so a mirage of a write
  answers a preview, and a decoy of a read cannot move ``cd``'s working directory or a random
  generator); a canary of a write is refused like any write mirage (the fit rules read the
  measured annotations).
- **identity** (:func:`environment_identity`): the installed bfcl-eval version, the tools
  document and the code that answers calls (this package and the canary runtime); each
  entry's starting state is part of its task's identity (``setup``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from ..errors import InputError
from ..store.jsonio import content_hash, source_hash, write_json
from ..types import Environment, ToolResult
from .entries import bfcl_version, new_instance, task_suite

__all__ = [
    "TOOLS_ENVIRONMENT", "World", "environment_identity", "export_environment", "is_bfcl", "make_environment", "summary_fact",
]

#: ``environment`` of a tools document of BFCL's tools.
TOOLS_ENVIRONMENT: Final = "bfcl"


def is_bfcl(env_cfg: Mapping[str, Any] | None) -> bool:
    return bool(env_cfg) and env_cfg.get("kind") == TOOLS_ENVIRONMENT  # type: ignore[union-attr]


def export_environment(env_cfg: Mapping[str, Any], tasks_out: str | Path, *, source: str = "params.yaml") -> dict[str, Any]:
    """Write the task file of ``environment.categories`` to ``tasks_out``; return the tools
    document (module docstring)."""
    from ..mcp.environments import TOOLS_FORMAT

    suite = task_suite(list(env_cfg["categories"]), source)
    write_json(tasks_out, suite.document)
    return {"format": TOOLS_FORMAT, "environment": TOOLS_ENVIRONMENT, "bfcl": suite.summary(),
            "tools": suite.annotated_tools()}


def summary_fact(study_dir: str | Path) -> tuple[str, str] | None:
    """The study report's line on a BFCL study: which categories ran, how many entries are
    tasks and which were skipped, and why (from ``<study>/tools.json``); None for another study."""
    path = Path(study_dir) / "tools.json"
    if not path.is_file():
        return None
    doc = json.loads(path.read_text(encoding="utf-8"))
    info = doc.get("bfcl") if isinstance(doc, dict) and doc.get("environment") == TOOLS_ENVIRONMENT else None
    if not isinstance(info, dict):
        return None
    skipped = info.get("skipped") or []
    why = "; ".join(f"{s['id']}: {s['reason']}" for s in skipped)
    return ("Environment", f"BFCL multi-turn (bfcl-eval {info.get('version')}), categories {', '.join(info.get('categories') or [])}: "
                           f"{info.get('tasks')} of {info.get('entries')} entries are tasks, {len(skipped)} skipped"
                           + (f" ({why})" if why else "") + f"; tools of {', '.join(info.get('classes') or [])}")


def _text(result: Any) -> str:
    """What BFCL's executor answers for a method's return value."""
    if isinstance(result, str):
        return result
    if isinstance(result, dict):
        try:
            return json.dumps(result)
        except (TypeError, ValueError):
            return str(result)
    return str(result)


class World:
    """One run's BFCL world: the entry's class instances, and the real calls run on them."""

    def __init__(self, setup: Mapping[str, Any]) -> None:
        self.setup = dict(setup)
        config = self.setup.get("initial_config") or {}
        long_context = bool(self.setup.get("long_context"))
        self.instances = {cls: new_instance(cls, config, long_context) for cls in self.setup["involved_classes"]}
        self.owner = {name: cls for cls, inst in self.instances.items() for name in dir(inst)
                      if not name.startswith("_") and callable(getattr(inst, name))}
        self.log: list[dict[str, Any]] = []

    def _run(self, instance: Any, name: str, args: Any) -> ToolResult:
        try:
            value = getattr(instance, name)(**(args if isinstance(args, dict) else {}))
        except Exception as exc:  # BFCL's executor answers an exception as text; so do we
            return ToolResult(content=f"Error during execution: {exc}", is_error=True)
        content = _text(value)
        data = None
        if isinstance(value, dict):
            try:
                data = json.loads(content)
            except ValueError:
                data = None
        return ToolResult(content=content, is_error=isinstance(value, dict) and "error" in value, data=data)

    def execute(self, name: str, args: Any) -> ToolResult:
        """A real call, in this run's world (recorded for the checker)."""
        cls = self.owner.get(name)
        if cls is None:
            return ToolResult(content=json.dumps({"error": f"unknown tool {name!r}"}), is_error=True)
        self.log.append({"name": name, "arguments": copy.deepcopy(args) if isinstance(args, dict) else {}})
        return self._run(self.instances[cls], name, args)

    def dry_execute(self, name: str, args: Any) -> ToolResult:
        """A real call on a copy of its instance: what a canary's runtime asks of the real tool
        (nothing it does reaches the world)."""
        cls = self.owner.get(name)
        if cls is None:
            return ToolResult(content=json.dumps({"error": f"unknown tool {name!r}"}), is_error=True)
        return self._run(copy.deepcopy(self.instances[cls]), name, args)

    def run_canary(self, record: Mapping[str, Any], args: Any, execute: Any) -> ToolResult:
        """A canary's answer (its real-tool calls on copies), or a twin's or a distractor's
        (in the world: they work like their real tool)."""
        from .. import canaries

        works = canaries.is_control(record) or isinstance(record.get("distractor_of"), str)
        return canaries.run_canary(record, args, self.execute if works else self.dry_execute)

    def executed(self) -> list[dict[str, Any]]:
        """The real calls run in the world since the last time (and forget them)."""
        out, self.log = self.log, []
        return out


def _runtime_version() -> str:
    pkg = Path(__file__).resolve().parents[1]
    return source_hash(pkg / "bfcl", pkg / "canaries")


def environment_identity(document: Mapping[str, Any]) -> dict[str, Any]:
    """The ``environment`` part of a run's identity (module docstring)."""
    return {"kind": TOOLS_ENVIRONMENT, "bfcl_eval": bfcl_version(), "runtime": _runtime_version(),
            "tools": content_hash(dict(document))}


def make_environment(env_cfg: Mapping[str, Any], document: Mapping[str, Any]) -> Any:
    """The agent loop's :class:`~canarykit.types.Environment`: ``for_run`` gives each run
    its own :class:`World` from its task's ``setup``."""
    from .. import canaries
    from ..tasks import tasks

    identity = environment_identity(document)

    def no_world(name: str, args: Any) -> ToolResult:
        raise InputError("tasks", "setup", "a BFCL tool was called outside a run's world")

    def for_run(spec: Any) -> Any:
        setup = (getattr(spec.task, "setup", None) or {}).get("bfcl")
        if not isinstance(setup, Mapping):
            raise InputError("tasks", f"{spec.task.id}.setup.bfcl", "a task of the bfcl environment needs its entry's setup")
        world = World(setup)
        return Environment(execute=world.execute, run_canary=world.run_canary, compose_answer=tasks.compose_answer,
                           identity=identity, executed=world.executed)

    return Environment(execute=no_world, run_canary=canaries.run_canary, compose_answer=tasks.compose_answer,
                       identity=identity, for_run=for_run)
