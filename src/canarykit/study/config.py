"""params.yaml: loading, default filling and validation against resources/params.schema.yaml
(the schema itself, its defaults and the key-naming errors: :mod:`canarykit.study.paramspec`).

The same functions validate the config for the command line (``canarykit validate-config``)
and for Snakemake (``rules/common.smk``, so ``dvc repro`` too), so an invalid value stops
either before anything runs, with a message that names the key, e.g.
``params.yaml: canaries.pool: 'subtel' is not one of ['standard', 'subtle']``:

- :func:`validate_params`: the schema (types, bounds, unknown keys) and the cross-key checks;
- :func:`check_study`: what the configuration points at: the task suite ``study.tasks``
  exists and is valid, and ``agent.max_turns`` leaves room for its longest canonical plan
  plus the answer turn (:func:`turns_needed`).
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError
from .paramspec import fill_defaults, params_schema, raise_schema_errors


def validate_params(config: dict[str, Any] | None, source: str = "params.yaml") -> dict[str, Any]:
    """Fill defaults into a copy of ``config`` and validate it; raise :class:`ConfigError`.

    Every error found is reported (one line each), each naming its key.
    """
    if config is None:
        config = {}
    if not isinstance(config, dict):
        raise ConfigError(source, "<root>", "expected a mapping of sections (study, canaries, ...)")
    schema = params_schema()
    filled = fill_defaults(copy.deepcopy(config), schema, schema)
    raise_schema_errors(schema, filled, source)
    _semantic_checks(filled, source)
    return filled


def _semantic_checks(cfg: dict[str, Any], source: str) -> None:
    from ..judging import check_judge_independence

    # Refuse a judge that shares a provider with an evaluated model before anything is paid for.
    check_judge_independence({"primary": cfg["judge"]["primary"], "cross": cfg["judge"]["cross"]}, cfg["models"], source)
    seen: dict[str, int] = {}
    for i, m in enumerate(cfg["models"]):
        if m["name"] in seen:
            raise ConfigError(source, f"models[{i}].name", f"duplicate model name {m['name']!r} (also models[{seen[m['name']]}])")
        seen[m["name"]] = i
        if m["backend"] != "reference" and m.get("agent"):
            raise ConfigError(source, f"models[{i}].agent", "only reference agents take an agent kind")
    from ..mcp.environments import check_environment

    check_environment(cfg["environment"], source)
    from ..canaries import check_canary_settings

    check_canary_settings(cfg["canaries"], source)  # the suffix forms and the twins' rules
    if cfg["environment"]["kind"] == "bfcl":  # BFCL's entries are the suite: the export writes them here
        cfg["study"]["tasks"] = f"{cfg['study']['output_dir']}/tasks.json"
    if "inspect" in cfg["report"]["export"]:
        import importlib.util

        if importlib.util.find_spec("inspect_ai") is None:
            raise ConfigError(source, "report.export", "inspect needs the inspect-ai package, which is not installed: "
                                                       "pip install -e '.[inspect]'")
    for role in ("primary", "cross"):
        if (cfg["judge"].get(role) or {}).get("kind") == "bfcl" and cfg["environment"]["kind"] != "bfcl":
            raise ConfigError(source, f"judge.{role}.kind", "the bfcl judge grades BFCL's entries only: set "
                                                            "environment.kind: bfcl, or pick another judge")
    ab = cfg["ablation"]
    if ab["pool"] == "other":
        ab["pool"] = "subtle" if cfg["canaries"]["pool"] == "standard" else "standard"
    if ab["enabled"] and ab["pool"] == cfg["canaries"]["pool"]:
        raise ConfigError(source, "ablation.pool", f"the ablation pool must differ from canaries.pool ({ab['pool']!r}); disable the ablation or pick the other pool")


def turns_needed(task: Any) -> int:
    """Model turns the oracle needs for ``task``: one per step of its canonical plan (a
    reference agent makes one tool call per turn) plus the turn of the final answer; for a
    task of several user turns, the most any one user turn needs (``agent.max_turns`` bounds
    each user turn)."""
    steps: dict[int, int] = {}
    for step in task.plan:
        steps[getattr(step, "turn", 0)] = steps.get(getattr(step, "turn", 0), 0) + 1
    return max(steps.values(), default=0) + 1


def check_max_turns(cfg: dict[str, Any], tasks: Any, source: str = "params.yaml", *, warn: Any = None) -> None:
    """Refuse an ``agent.max_turns`` below what the longest canonical plan needs.

    Such a limit cuts the oracle off before its answer: the instrument then measures the
    turn limit, not the model. With ``agent.allow_short_max_turns: true`` it only warns
    (loudly, on stderr, or through ``warn``).
    """
    tasks = list(tasks)
    if not tasks:
        return
    max_turns = int(cfg["agent"]["max_turns"])
    need = max(turns_needed(t) for t in tasks)
    if max_turns >= need:
        return
    short = [t for t in tasks if turns_needed(t) > max_turns]
    worst = next(t for t in tasks if turns_needed(t) == need)
    others = f" (and {len(short) - 1} other task{'s' if len(short) > 2 else ''})" if len(short) > 1 else ""
    problem = (
        f"{max_turns} is below what task {worst.id} needs ({need - 1} tool-call turns + 1 answer turn = "
        f"{need}){others}; raise agent.max_turns to at least {need}, or set agent.allow_short_max_turns: true "
        "to run anyway (runs cut off by the limit are recorded as truncated)"
    )
    if not cfg["agent"].get("allow_short_max_turns"):
        raise ConfigError(source, "agent.max_turns", problem)
    message = (f"canarykit: WARNING: {source}: agent.max_turns: {problem.split('; raise')[0]}. Running anyway "
               f"(agent.allow_short_max_turns is true): the oracle will be cut off on {len(short)} tasks, so tsr "
               "and its deltas partly measure the turn limit, not the models.")
    if warn is not None:
        warn(message)
    else:
        import sys

        print(message, file=sys.stderr, flush=True)


def check_plans_and_rubrics(cfg: dict[str, Any], tasks: Any, tasks_path: str, source: str = "params.yaml") -> None:
    """Plans and rubrics are optional in a task file, but reference agents follow each task's
    plan and the rubric judge grades each task's rubric: refuse a study that needs one a
    task lacks, naming the model or judge key and the task."""
    tasks = list(tasks)
    no_plan = next((t for t in tasks if not t.plan), None)
    if no_plan is not None:
        for i, m in enumerate(cfg["models"]):
            if m.get("backend") == "reference":
                raise ConfigError(source, f"models[{i}]", f"the reference agent {m['name']!r} follows each task's plan, and "
                                  f"task {no_plan.id!r} of {tasks_path} has none: add a plan to every task, or remove "
                                  "the reference agents from models")
    no_rubric = next((t for t in tasks if not t.rubric), None)
    if no_rubric is not None:
        for key in ("primary", "cross"):
            if cfg["judge"][key]["kind"] == "rubric":
                raise ConfigError(source, f"judge.{key}.kind", f"the rubric judge grades each task's rubric, and task "
                                  f"{no_rubric.id!r} of {tasks_path} has none: add a rubric to every task, or use kind "
                                  "llm (or tool-coverage)")


def check_study(cfg: dict[str, Any], source: str = "params.yaml", *, warn: Any = None) -> list[Any]:
    """Check what a validated config points at; return the task suite.

    ``study.tasks`` must name a readable, valid task file (a missing one is reported against
    ``study.tasks`` in ``source``; a broken one names its own file and field), and
    ``agent.max_turns`` must fit the tasks the study runs (:func:`check_max_turns` over
    :func:`~canarykit.tasks.tasks.select_tasks` with ``study.limit_tasks``, the pipeline's selection). With the built-in tools the
    tasks' tool names and plan arguments are checked here; with ``environment.kind: mcp``
    they are checked against the servers' tools once those are listed (the canary and
    assembly stages), and only the file's structure here; with ``environment.kind: bfcl`` the
    suite is BFCL's entries of ``environment.categories`` (:mod:`canarykit.bfcl`), built here
    (bfcl-eval must be installed). Models and judges that need plans or rubrics must have them
    (:func:`check_plans_and_rubrics`).
    """
    from ..tasks.tasks import ANY_TOOLS, load_tasks, parse_tasks, select_tasks

    path = Path(cfg["study"]["tasks"])
    kind = cfg.get("environment", {}).get("kind")
    if kind == "bfcl":  # the suite is BFCL's entries (export_tools writes them to study.tasks)
        from ..bfcl.entries import task_suite

        suite = task_suite(cfg["environment"]["categories"], source)
        tasks = parse_tasks(suite.document, f"bfcl-eval {', '.join(suite.categories)}", suite.tools)
    elif not path.is_file():
        what = "is a directory" if path.is_dir() else "does not exist"
        raise ConfigError(source, "study.tasks", f"the task file {str(path)!r} {what} (relative paths start at the working directory)")
    else:
        tasks = load_tasks(path, tools=ANY_TOOLS if kind == "mcp" else None)  # an invalid suite names its own file and field
    check_plans_and_rubrics(cfg, tasks, str(path), source)
    # the tasks the study runs (study.limit_tasks picks them as the pipeline does), not the whole suite
    check_max_turns(cfg, select_tasks(tasks, cfg["study"].get("limit_tasks")), source, warn=warn)
    return tasks


def read_yaml_config(path: str | Path) -> dict[str, Any]:
    """One params file or profile as a mapping (a missing file or bad YAML names the file)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ConfigError(str(p), "<file>", "file not found") from exc
    except OSError as exc:
        raise ConfigError(str(p), "<file>", f"cannot read: {exc.strerror or exc}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(str(p), "<yaml>", f"not valid YAML: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(str(p), "<root>", "expected a mapping of sections (study, canaries, ...)")
    return data


def merge_layers(layers: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """The configuration Snakemake builds from ``configfile: params.yaml`` and each
    ``--configfile`` after it: mappings merge key by key, anything else (a list such as
    ``models``, a scalar) is replaced by the later file's value."""

    def merge(into: Any, over: dict[str, Any]) -> dict[str, Any]:
        out = dict(into) if isinstance(into, dict) else {}
        for key, value in over.items():
            out[key] = merge(out.get(key), value) if isinstance(value, dict) else copy.deepcopy(value)
        return out

    merged: dict[str, Any] = {}
    for _, data in layers:
        merged = merge(merged, data)
    return merged


def _key_parts(field: str) -> list[str | int]:
    parts: list[str | int] = []
    for name, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", field):
        parts.append(int(index) if index else name)
    return parts


def key_source(field: str, layers: list[tuple[str, dict[str, Any]]]) -> str | None:
    """Which file gave the value at ``field`` (e.g. ``models[0].api_key_env``): the last
    layer that sets the longest prefix of that key path; None when no layer sets it (a default)."""
    parts = _key_parts(field)
    for depth in range(len(parts), 0, -1):
        for name, data in reversed(layers):
            node: Any = data
            for part in parts[:depth]:
                in_list = isinstance(part, int) and isinstance(node, list) and part < len(node)
                in_map = isinstance(part, str) and isinstance(node, dict) and part in node
                if in_list or in_map:
                    node = node[part]
                else:
                    break
            else:
                return name
    return None


def key_line(path: str | Path, field: str) -> int | None:
    """The line (1-based) of ``path`` that sets ``field`` (``models[0].api_key_env``), or of
    the deepest key on its way that the file sets; None when the file sets none of it or
    cannot be read."""
    try:
        root = yaml.compose(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return None
    node: Any = root
    line = None
    for part in _key_parts(field):
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            hit = next(((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == part), None)
            if hit is None:
                break
            line, node = hit[0].start_mark.line + 1, hit[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line


def with_line(exc: ConfigError) -> ConfigError:
    """``exc`` whose message names the line of its file that sets its key
    (``my.yaml:3: model: ...``); ``exc.file`` stays the file's path."""
    line = key_line(exc.file, exc.field) if Path(exc.file).is_file() else None
    if line is not None and not getattr(exc, "line", None):
        exc.line = line  # type: ignore[attr-defined]
        exc.args = (f"{exc.file}:{line}: {exc.field}: {exc.problem}",)
    return exc


def blame(exc: ConfigError, layers: list[tuple[str, dict[str, Any]]]) -> ConfigError:
    """``exc`` re-addressed to the file that set the offending key (a profile, not params.yaml,
    when the value came from the profile), with the line that sets it."""
    source = key_source(exc.field, layers)
    if source is None or source == exc.file:
        return with_line(exc)
    return with_line(ConfigError(source, exc.field, exc.problem))


def load_params(path: str | Path = "params.yaml", overlays: list[str | Path] | tuple[str | Path, ...] = ()) -> dict[str, Any]:
    """Read, merge (``overlays`` over ``path``, as Snakemake's ``--configfile`` does),
    default-fill and validate. An error names the file that set the offending key."""
    layers = [(str(f), read_yaml_config(f)) for f in (path, *overlays)]
    try:
        return validate_params(merge_layers(layers), str(path))
    except ConfigError as exc:
        raise blame(exc, layers) from None


def run_grid(cfg: dict[str, Any]) -> dict[str, list[str]]:
    """Pool -> conditions the study runs (main grid plus the ablation grid)."""
    grid: dict[str, list[str]] = {cfg["canaries"]["pool"]: list(cfg["study"]["conditions"])}
    ab = cfg["ablation"]
    if ab["enabled"]:
        grid.setdefault(ab["pool"], [])
        if ab["condition"] not in grid[ab["pool"]]:
            grid[ab["pool"]].append(ab["condition"])
    return grid
