"""params.yaml: loading, default filling and validation against resources/params.schema.yaml.

The same function validates the config for the command line and for Snakemake
(``rules/common.smk``), so an invalid value stops either with a message that names the key,
e.g. ``params.yaml: canaries.pool: 'subtel' is not one of ['standard', 'subtle']``.
"""

from __future__ import annotations

import copy
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from .errors import ConfigError

SCHEMA_RESOURCE = "params.schema.yaml"


@cache
def params_schema() -> dict[str, Any]:
    """The JSON schema of params.yaml (every key has a description and a default)."""
    text = resources.files("canarykit.resources").joinpath(SCHEMA_RESOURCE).read_text("utf-8")
    schema: dict[str, Any] = yaml.safe_load(text)
    return schema


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = dict(root["$defs"][ref.split("/")[-1]])
        target.update({k: v for k, v in node.items() if k != "$ref"})
        return target
    return node


def _fill_defaults(value: Any, node: dict[str, Any], root: dict[str, Any]) -> Any:
    node = _resolve(node, root)
    if isinstance(value, dict):
        for key, sub in node.get("properties", {}).items():
            sub_r = _resolve(sub, root)
            if key not in value and "default" in sub_r:
                value[key] = copy.deepcopy(sub_r["default"])
            if key in value:
                value[key] = _fill_defaults(value[key], sub_r, root)
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        return [_fill_defaults(v, node["items"], root) for v in value]
    return value


def _key_path(error: jsonschema.ValidationError) -> str:
    parts: list[str] = []
    for p in error.absolute_path:
        if isinstance(p, int):
            parts.append(f"[{p}]")
        else:
            parts.append(("." if parts else "") + str(p))
    return "".join(parts) or "<root>"


def validate_params(config: dict[str, Any] | None, source: str = "params.yaml") -> dict[str, Any]:
    """Fill defaults into a copy of ``config`` and validate it; raise :class:`ConfigError`.

    Every error found is reported (one line each), each naming its key.
    """
    if config is None:
        config = {}
    if not isinstance(config, dict):
        raise ConfigError(source, "<root>", "expected a mapping of sections (study, canaries, ...)")
    schema = params_schema()
    filled = _fill_defaults(copy.deepcopy(config), schema, schema)
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(filled), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        first = errors[0]
        lines = [f"{_key_path(e)}: {_message(e)}" for e in errors]
        raise ConfigError(source, _key_path(first), _message(first) + (
            "" if len(lines) == 1 else "\n  also: " + "\n  also: ".join(lines[1:])
        ))
    _semantic_checks(filled, source)
    return filled


def _message(error: jsonschema.ValidationError) -> str:
    if error.validator == "additionalProperties":
        return f"{error.message} (see the key descriptions in src/canarykit/resources/{SCHEMA_RESOURCE})"
    return error.message


def _semantic_checks(cfg: dict[str, Any], source: str) -> None:
    from .judging._independence import check_judge_independence

    # Refuse a judge that shares a provider with an evaluated model before anything is paid for.
    check_judge_independence({"primary": cfg["judge"]["primary"], "cross": cfg["judge"]["cross"]}, cfg["models"], source)
    seen: dict[str, int] = {}
    for i, m in enumerate(cfg["models"]):
        if m["name"] in seen:
            raise ConfigError(source, f"models[{i}].name", f"duplicate model name {m['name']!r} (also models[{seen[m['name']]}])")
        seen[m["name"]] = i
        if m["backend"] != "reference" and m.get("agent"):
            raise ConfigError(source, f"models[{i}].agent", "only reference agents take an agent kind")
    ab = cfg["ablation"]
    if ab["pool"] == "other":
        ab["pool"] = "subtle" if cfg["canaries"]["pool"] == "standard" else "standard"
    if ab["enabled"] and ab["pool"] == cfg["canaries"]["pool"]:
        raise ConfigError(source, "ablation.pool", f"the ablation pool must differ from canaries.pool ({ab['pool']!r}); disable the ablation or pick the other pool")


def load_params(path: str | Path = "params.yaml") -> dict[str, Any]:
    """Read, default-fill and validate a params file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ConfigError(str(p), "<file>", "file not found") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(str(p), "<yaml>", f"not valid YAML: {exc}") from exc
    return validate_params(data, str(p))


def run_grid(cfg: dict[str, Any]) -> dict[str, list[str]]:
    """Pool -> conditions the study runs (main grid plus the ablation grid)."""
    grid: dict[str, list[str]] = {cfg["canaries"]["pool"]: list(cfg["study"]["conditions"])}
    ab = cfg["ablation"]
    if ab["enabled"]:
        grid.setdefault(ab["pool"], [])
        if ab["condition"] not in grid[ab["pool"]]:
            grid[ab["pool"]].append(ab["condition"])
    return grid
