"""A study as Inspect AI logs: one ``.eval`` file per (model, condition), written with
``inspect_ai``'s own log API (``write_eval_log``), so ``inspect view`` and every tool that
reads Inspect logs (Docent, inspect-mlflow, inspect_wandb, ...) read canarykit's runs.

``canarykit export inspect --study results -o results/inspect`` (and the workflow's optional
rule, ``report.export: [inspect]``) reads the study's per-run table (``runs.parquet``), its
statistics (``stats.json``), its resolved parameters, its judges' verdicts, its canary pools and
the run records in the run store, and writes ``<model>_<condition>.eval`` (the subtlety
ablation's runs, in the other pool, go to ``<model>_<condition>_<pool>.eval``). The mapping,
field by field, is docs/inspect-and-bfcl.md, "Inspect logs out"; in short:

- **header** (``eval``): the task is ``canarykit/<condition>``, the dataset the study's task
  file, the model the agent's model id; ``metadata.canarykit`` holds the study's parameters
  (``params.resolved.yaml``), the model's spec, the condition and pool; ``revision`` the git
  commit the runs were made at (their ``code_version``); ``packages`` canarykit's,
  inspect_ai's (and bfcl-eval's for a BFCL study) versions.
- **results**: ``csr`` and ``tsr`` with canarykit's intervals from ``stats.json`` (clustered by
  task and wording item; the unit and method in each score's metadata).
- **samples**: one per run (``id`` the task, ``/<arm>`` in the control condition; ``epoch`` the
  seed's place in ``study.seeds``): the messages as the model saw them (system message, user
  turns, assistant turns with their tool calls, each call's result or the loop's refusal), the
  outcome judge's score (``outcome``: C/I, N when not judged) and the cross judge's
  (``cross``), a ``canary`` score (``trapped``, ``csr``, ``first_pick_<type>``), and
  ``metadata``: task, seed, condition, pool, arm, the offered canaries and twins (type, item,
  wording, list position), truncated, error and the run id.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

import polars as pl

from ..errors import InputError
from ..store.jsonio import content_hash, read_json_input
from ..store.records import RunRecord
from .conversation import conversation, user_messages

__all__ = ["StudyFiles", "build_logs", "export_inspect", "require_inspect"]


def require_inspect() -> None:
    """Refuse, in one line, when ``inspect_ai`` is not installed."""
    try:
        import inspect_ai  # noqa: F401
    except ImportError:
        raise InputError("<command line>", "inspect", "the inspect-ai package is not installed: "
                                                      "pip install -e '.[inspect]'") from None


@dataclass(frozen=True)
class StudyFiles:
    """Where a study's outputs are: its directory (``study.output_dir``), the run store (by
    default ``<study>/runs/store`` when it exists, else ``results/runs/store``, the workflow's),
    the task file (by default the one ``params.resolved.yaml`` names)."""

    study: Path
    store: Path
    tasks: Path
    params: dict[str, Any]

    @classmethod
    def locate(cls, study: str | Path, store: str | Path | None = None, tasks: str | Path | None = None) -> StudyFiles:
        import yaml

        root = Path(study)
        if not (root / "runs.parquet").is_file():
            raise InputError(str(root / "runs.parquet"), "<file>", "no per-run table: is --study a study's output "
                                                                   "directory (study.output_dir) whose runs were judged?")
        params_path = root / "params.resolved.yaml"
        params = yaml.safe_load(params_path.read_text(encoding="utf-8")) if params_path.is_file() else {}
        params = params if isinstance(params, dict) else {}
        where = Path(store) if store is not None else root / "runs" / "store"
        if store is None and not where.is_dir():
            where = Path("results/runs/store")
        if tasks is None:
            tasks = (params.get("study") or {}).get("tasks")
            if tasks is None:
                raise InputError(str(params_path), "study.tasks", "no task file named: give --tasks")
        if not Path(tasks).is_file():
            raise InputError(str(params_path) if params else "<command line>", "study.tasks",
                             f"the task file {str(tasks)!r} does not exist (give --tasks)")
        return cls(root, where, Path(tasks), params)


def _pools(study: Path) -> dict[str, Mapping[str, Any]]:
    """Canary and twin records by id, from the study's pool files (none: no wordings)."""
    from ..canaries import load_pool_document

    out: dict[str, Mapping[str, Any]] = {}
    for path in sorted((study / "canaries").glob("*.json")):
        doc = load_pool_document(path)
        for r in [*doc.get("canaries", []), *doc.get("controls", [])]:
            out[f"{r.get('pool')}|{r['id']}"] = r
    return out


def _verdicts(study: Path) -> dict[str, dict[str, Mapping[str, Any]]]:
    out: dict[str, dict[str, Mapping[str, Any]]] = {}
    for role in ("primary", "cross"):
        path = study / "judge" / "verdicts" / f"{role}.parquet"
        if path.is_file():
            out[role] = {str(r["run_id"]): r for r in pl.read_parquet(path).iter_rows(named=True)}
    return out


def _model_id(spec: Mapping[str, Any]) -> str:
    """The agent's model as Inspect names models (``provider/model``)."""
    backend = str(spec.get("backend") or "reference")
    if backend == "reference":
        return f"canarykit-reference/{spec.get('agent') or spec.get('name')}"
    model = str(spec.get("model") or spec.get("name"))
    return model if "/" in model else f"{backend}/{model}"


def _revision(code_versions: Sequence[str]) -> Any:
    """The git commit the runs were made at (their ``code_version``: ``<version>+<describe>``)."""
    from inspect_ai.log import EvalRevision

    described = sorted({v.partition("+")[2] for v in code_versions if "+" in v})
    if len(described) != 1:
        return None
    describe = described[0]
    dirty = describe.endswith("-dirty")
    commit = describe.removesuffix("-dirty").rpartition("-g")[2] if "-g" in describe else describe.removesuffix("-dirty")
    try:
        origin = subprocess.run(["git", "config", "--get", "remote.origin.url"], capture_output=True, text=True,
                                timeout=5, check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        origin = ""
    return EvalRevision(type="git", origin=origin, commit=commit, dirty=dirty)


def _packages(params: Mapping[str, Any]) -> dict[str, str]:
    out = {}
    names = ["canarykit", "inspect_ai"]
    if (params.get("environment") or {}).get("kind") == "bfcl":
        names.append("bfcl-eval")
    for name in names:
        try:
            out[name] = importlib_metadata.version(name)
        except importlib_metadata.PackageNotFoundError:
            continue
    return out


def _target(task: Any) -> str:
    setup = getattr(task, "setup", None) or {}
    if isinstance(setup.get("bfcl"), Mapping):
        turns = setup["bfcl"].get("ground_truth") or []
        return "\n".join(f"user turn {i}: " + "; ".join(calls) for i, calls in enumerate(turns))
    facts = getattr(task, "rubric", ()) or ()
    if facts:
        return "; ".join(f"{f.label}: {f.value}" for f in facts)
    return ", ".join(getattr(task, "correct_tools", ()) or ())


def _messages(record: RunRecord, task: Any, model_id: str) -> list[Any]:
    from inspect_ai.model import (
        ChatMessageAssistant,
        ChatMessageSystem,
        ChatMessageTool,
        ChatMessageUser,
    )
    from inspect_ai.tool import ToolCall, ToolCallError

    out: list[Any] = []
    for i, m in enumerate(conversation(record, task)):
        mid = f"{record.run_id[:16]}-{i}"
        if m["role"] == "system":
            out.append(ChatMessageSystem(id=mid, content=m["content"]))
        elif m["role"] == "user":
            out.append(ChatMessageUser(id=mid, content=m["content"]))
        elif m["role"] == "assistant":
            calls = [ToolCall(id=c["id"], function=c["name"], arguments=c["arguments"] if c["arguments"] is not None else {},
                              parse_error=None if c["arguments"] is not None else f"arguments as sent: {c['raw']!r}")
                     for c in m["tool_calls"]]
            out.append(ChatMessageAssistant(id=mid, content=m["content"], tool_calls=calls or None, model=model_id,
                                            source="generate"))
        else:
            error = None
            if m.get("refused"):
                error = ToolCallError("parsing" if "arguments" in str(m["refused"]) else "unknown", m["content"])
            elif m["is_error"]:
                error = ToolCallError("unknown", m["content"])
            out.append(ChatMessageTool(id=mid, content=m["content"], tool_call_id=m["tool_call_id"], function=m["name"],
                                       error=error))
    return out


def _judge_score(row: Mapping[str, Any] | None, success: Any, kind: str) -> Any:
    from inspect_ai.scorer import CORRECT, INCORRECT, NOANSWER, Score

    value = NOANSWER if success is None else CORRECT if success else INCORRECT
    reason = str(row.get("reason") or "") if row else ""
    return Score(value=value, explanation=reason or None,
                 metadata={"judge": kind, "status": row.get("status") if row else None, "success": success})


def _canaries(record: RunRecord, pools: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The offered canaries and twins: list position, name, kind, type, item, wording."""
    out = []
    for pos, o in enumerate(record.offered):
        if o.kind == "real":
            continue
        rec = pools.get(f"{record.pool}|{o.control_id or o.canary_id}") or {}
        out.append({"position": pos, "name": o.name, "kind": o.kind, "type": o.stand_in_type, "item": o.item,
                    "shadows": o.shadows, "variant": rec.get("variant"), "wording": rec.get("description")})
    return out


def _sample(record: RunRecord, row: Mapping[str, Any], task: Any, epoch: int, ctx: _Context) -> Any:
    from inspect_ai.log import EvalError, EvalSample, EvalSampleLimit
    from inspect_ai.model import ChatCompletionChoice, ChatMessageAssistant, ModelOutput, ModelUsage
    from inspect_ai.scorer import Score

    from ..types import CANARY_TYPES

    model_id = ctx.model_ids[record.model]
    messages = _messages(record, task, model_id)
    last = next((m for m in reversed(messages) if isinstance(m, ChatMessageAssistant)), None)
    usage = ModelUsage(input_tokens=record.usage.prompt_tokens, output_tokens=record.usage.completion_tokens,
                       total_tokens=record.usage.prompt_tokens + record.usage.completion_tokens)
    choice = ChatCompletionChoice(message=last or ChatMessageAssistant(content=""),
                                  stop_reason="stop" if record.status == "completed" else "unknown")
    canary_value: dict[str, Any] = {"trapped": bool(row["trapped"]), "csr": row["csr"]}
    canary_value.update({f"first_pick_{t}": row[f"first_pick_{t}"] for t in CANARY_TYPES
                         if row.get(f"first_pick_{t}") is not None})
    stand_ins = _canaries(record, ctx.pools)
    canary_names = {c["name"] for c in stand_ins if c["kind"] == "canary"}
    called = [c.function for m in messages for c in (getattr(m, "tool_calls", None) or []) if c.function in canary_names]
    scores = {
        "outcome": _judge_score(ctx.verdicts.get("primary", {}).get(record.run_id), row.get("success"), ctx.judges[0]),
        "cross": _judge_score(ctx.verdicts.get("cross", {}).get(record.run_id), row.get("success_cross"), ctx.judges[1]),
        "canary": Score(value=canary_value, explanation=("canary calls: " + ", ".join(called)) if called else "no canary call"),
    }
    meta = {
        "run_id": record.run_id, "task": record.task_id, "difficulty": record.difficulty, "seed": record.seed,
        "condition": record.condition, "pool": record.pool, "arm": record.arm, "model": record.model,
        "group": record.group, "status": record.status, "truncated": record.truncated, "error": record.error,
        "tool_calls": row["tool_calls"], "canary_calls": row["canary_calls"], "recovered": row.get("recovered"),
        "offered": [o.name for o in record.offered], "canaries": stand_ins,
        "code_version": record.code_version,
    }
    error = None
    if record.error:
        last_error = next((e for e in reversed(record.events) if e.kind == "backend_error"), None)
        message = f"{last_error.error_type}: {last_error.message}" if last_error else "the run failed"
        error = EvalError(message=message, traceback="", traceback_ansi="")
    users = user_messages(task)
    return EvalSample(
        id=record.task_id + (f"/{record.arm}" if record.arm else ""), epoch=epoch, input=users[0] if users else "",
        target=_target(task), messages=messages, output=ModelOutput(model=model_id, choices=[choice], usage=usage),
        scores=scores, metadata=meta, model_usage={model_id: usage}, total_time=record.latency_s,
        started_at=record.created_at or None, completed_at=record.created_at or None, error=error,
        limit=EvalSampleLimit(type="turn", limit=ctx.max_turns) if record.truncated else None,
        uuid=content_hash(["canarykit-inspect-sample", record.run_id], 22),
    )


@dataclass
class _Context:
    pools: Mapping[str, Mapping[str, Any]]
    verdicts: Mapping[str, Mapping[str, Mapping[str, Any]]]
    model_ids: Mapping[str, str]
    judges: tuple[str, str]
    max_turns: int


def _rate_score(name: str, cell: Mapping[str, Any] | None, values: Sequence[Any], stats_meta: Mapping[str, Any]) -> Any:
    from inspect_ai.log import EvalMetric, EvalScore

    metrics = {}
    meta: dict[str, Any] = {}
    if cell is not None and cell.get(name) is not None:
        metrics[name] = EvalMetric(name=name, value=float(cell[name]))
        for bound, label in (("lo", "ci_lower"), ("hi", "ci_upper")):
            if cell.get(bound) is not None:
                metrics[label] = EvalMetric(name=label, value=float(cell[bound]))
        meta = {"interval": f"{1 - float(stats_meta.get('alpha', 0.05)):.0%} {stats_meta.get('interval_method', '')}",
                "unit": stats_meta.get("bootstrap_unit"), **{k: v for k, v in cell.items() if k not in (name, "lo", "hi")}}
    else:
        known = [float(v) for v in values if v is not None]
        if known:
            metrics[name] = EvalMetric(name=name, value=sum(known) / len(known))
        meta = {"interval": None, "note": "stats.json has no interval for this cell (another pool than the study's)"}
    return EvalScore(name=name, scorer="canarykit", scored_samples=len([v for v in values if v is not None]),
                     unscored_samples=len([v for v in values if v is None]), metrics=metrics, metadata=meta)


def build_logs(files: StudyFiles) -> list[tuple[str, Any]]:
    """The study's logs: (file name, ``EvalLog``) per (model, condition[, pool])."""
    require_inspect()
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalLog,
        EvalPlan,
        EvalPlanStep,
        EvalResults,
        EvalSpec,
        EvalStats,
    )
    from inspect_ai.model import ModelUsage

    from ..agents.loop import LOOP_VERSION, SYSTEM_PROMPT
    from ..detection.detect import load_records
    from ..study.layout import slug
    from ..tasks.suite import task_map

    runs = pl.read_parquet(files.study / "runs.parquet")
    stats = read_json_input(files.study / "stats.json", "statistics") if (files.study / "stats.json").is_file() else {}
    tasks = task_map(files.tasks)
    records = {r.run_id: r for r in load_records(runs, files.store, str(files.study / "runs.parquet"))}
    params = files.params
    specs = {str(m["name"]): m for m in params.get("models") or []}
    judge = params.get("judge") or {}
    ctx = _Context(_pools(files.study), _verdicts(files.study),
                   {m: _model_id(specs.get(m, {"name": m, "backend": b})) for m, b in runs.select("model", "backend").unique().iter_rows()},
                   (str((judge.get("primary") or {}).get("kind", "rubric")), str((judge.get("cross") or {}).get("kind", "tool-coverage"))),
                   int((params.get("agent") or {}).get("max_turns", 0)))
    seeds = sorted({int(s) for s in runs["seed"].unique()})
    primary_pool = (stats.get("meta") or {}).get("primary_pool") or (params.get("canaries") or {}).get("pool")
    out = []
    for (model, condition, pool), group in sorted(runs.group_by(["model", "condition", "pool"]), key=lambda g: g[0]):  # type: ignore[arg-type]
        rows = group.sort("task_id", "arm", "seed").to_dicts()
        recs = [records[r["run_id"]] for r in rows]
        samples = [_sample(rec, row, tasks.get(rec.task_id), seeds.index(rec.seed) + 1, ctx) for rec, row in zip(recs, rows, strict=True)]
        cells = [(stats.get(f"{k}_ci") or {}).get(condition, {}).get(model) if pool == primary_pool else None for k in ("csr", "tsr")]
        created = sorted(r.created_at for r in recs if r.created_at)
        model_id = ctx.model_ids[str(model)]
        usage = ModelUsage(input_tokens=sum(r.usage.prompt_tokens for r in recs), output_tokens=sum(r.usage.completion_tokens for r in recs))
        usage.total_tokens = usage.input_tokens + usage.output_tokens
        ident = content_hash(["canarykit-inspect", str(files.study.resolve()), model, condition, pool, [r["run_id"] for r in rows]], 22)
        spec = EvalSpec(
            eval_id=ident, run_id=content_hash(["canarykit-inspect-study", sorted(records)], 22), created=created[0] if created else "1970-01-01T00:00:00Z",
            task=f"canarykit/{condition}" + (f"/{pool}" if pool != primary_pool else ""), task_id=ident, task_version=0,
            dataset=EvalDataset(name=files.tasks.stem, location=str(files.tasks), samples=len({r["task_id"] for r in rows}),
                                sample_ids=sorted({s.id for s in samples})),
            model=model_id, config=EvalConfig(epochs=len(seeds)), revision=_revision([r.code_version for r in recs]),
            packages=_packages(params),
            metadata={"canarykit": {"params": params, "model": dict(specs.get(str(model), {"name": model})), "condition": condition,
                                    "pool": pool, "seeds": seeds, "study": str(files.study),
                                    "code_versions": sorted({r.code_version for r in recs if r.code_version})}},
        )
        results = EvalResults(total_samples=len(samples), completed_samples=sum(not r.error for r in recs), scores=[
            _rate_score("csr", cells[0], [r["csr"] for r in rows if not r["error"]], stats.get("meta") or {}),
            _rate_score("tsr", cells[1], [r.get("success") for r in rows if not r["error"]], stats.get("meta") or {}),
        ], metadata={"unit_of_analysis": "run; intervals clustered by task and wording item (stats.json, docs/metrics.md)"})
        plan = EvalPlan(name="canarykit", steps=[EvalPlanStep(solver="canarykit/agent_loop", params={
            "max_turns": ctx.max_turns, "system_message": SYSTEM_PROMPT, "loop_version": LOOP_VERSION})])
        log = EvalLog(status="success", eval=spec, plan=plan, results=results, samples=samples,
                      stats=EvalStats(started_at=created[0] if created else "", completed_at=created[-1] if created else "",
                                      model_usage={model_id: usage}))
        name = f"{slug(str(model))}_{condition}" + (f"_{pool}" if pool != primary_pool else "") + ".eval"
        out.append((name, log))
    return out


def export_inspect(study: str | Path, out_dir: str | Path, *, store: str | Path | None = None,
                   tasks: str | Path | None = None) -> list[Path]:
    """Write the study's Inspect logs into ``out_dir`` (module docstring); return their paths."""
    require_inspect()
    from inspect_ai.log import write_eval_log

    logs = build_logs(StudyFiles.locate(study, store, tasks))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, log in logs:
        write_eval_log(log, out / name, format="eval")
        written.append(out / name)
    return written
