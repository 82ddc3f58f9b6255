"""``dvc.yaml`` from one source of truth: ``rules/stages.yaml`` and each rule's code.

Each DVC stage runs a group of Snakemake rules (``snakemake --allowed-rules R --forcerun R
TARGETS``): DVC decides *when* a stage runs (content hashes of its deps and params), the run
identity decides *which* runs execute. A stage's code deps are the scripts of its rules and
every ``canarykit`` module those scripts import, transitively (:func:`code_closure`), the
same list the rules take as input, so the two can never disagree. ``python -m
canarykit.study.dvcyaml`` prints the file (``make dvc-yaml`` writes it); ``--check`` exits 1 when
the committed ``dvc.yaml`` differs.

Why ``--allowed-rules`` (which Snakemake documents as meant for internal use; Snakemake's
executor interface passes it, beside ``--target-jobs``, to every job it submits to a cluster):
a stage must run its own rules and nothing upstream. The public alternatives do not say that:
plain targets and ``--until``/``--omit-from`` still run upstream jobs that Snakemake considers
out of date (after a ``dvc checkout`` or ``dvc exp apply`` the outputs' modification times and
Snakemake's metadata no longer match what DVC restored), and ``--consider-ancient`` or
``--rerun-triggers`` without ``mtime`` only silence some of the triggers. With
``--allowed-rules`` the upstream outputs DVC restored are taken as given, which is the
coupling we want.

A file the configuration names is a DVC template over ``params.yaml`` in ``rules/stages.yaml``
(``"${study.tasks}"``) and passes through unchanged: DVC resolves it, so the dependency follows
the setting.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import yaml

STAGES_FILE = "rules/stages.yaml"
#: The Snakemake command every stage runs: quiet (no rule blocks, no progress, no job table:
#: a few lines per stage), errors still shown (`--quiet all` would hide a configuration error).
SMK = "snakemake --cores all --quiet rules progress host reason --allowed-rules"
HEADER = """\
# GENERATED from rules/stages.yaml and the rules' code by `make dvc-yaml`: do not edit.
# DVC owns versioning, remotes, experiments and params/metrics/plots diffs; Snakemake owns the
# DAG. Each stage runs its Snakemake rules with --allowed-rules/--forcerun, so DVC decides WHEN a
# stage runs and the run identity decides WHICH runs (docs/failures.md, "Reruns"). A stage's code deps are
# its rules' scripts and every canarykit module they import (canarykit.study.dvcyaml.code_closure),
# the same files the rules take as input.
"""


def code_closure(script: str | Path, root: str | Path = ".") -> list[str]:
    """The library's source files a script runs: every ``canarykit`` module it imports,
    transitively, lazy (function-level) imports, the lazy entries of a
    :class:`~canarykit.registry.Registry` and package ``__init__`` files included.

    This is the one list of a rule's code dependencies: the rule takes these files as input
    (editing one re-runs the rule; in the run rule only runs whose identity changed
    re-execute) and ``dvc.yaml`` lists the same files. Read statically (``ast``): nothing is
    imported. Paths are relative to ``root``, sorted.
    """
    base = Path(root).resolve()
    return sorted(str(p.relative_to(base)) for p in _closure(str(Path(script).resolve()), str(base)))


#: Where the imports read from each source file are remembered, by the file's content, under
#: the workflow root: parsing the package's ~170 modules (ast) costs seconds on every start of
#: Snakemake, and a `dvc repro` starts it once per stage.
IMPORTS_CACHE = ".snakemake/canarykit-code-imports.json"


@cache
def _closure(script: str, root: str) -> frozenset[Path]:
    pkg_dir = Path(root) / "src" / "canarykit"
    seen: set[Path] = set()
    todo = [Path(script)]
    known = _imports_cache(root)
    while todo:
        path = todo.pop()
        for mod in _imports_remembered(path, pkg_dir, known):
            f = _module_file(mod, pkg_dir)
            if f is not None and f not in seen:
                seen.add(f)
                todo.append(f)
    _save_imports_cache(root, known)
    return frozenset(seen)


@cache
def _imports_cache(root: str) -> dict[str, Any]:
    """The remembered imports (``{"<file> <sha256 of its text> <package dir>": [modules]}``);
    empty when missing or unreadable (then everything is parsed again)."""
    import json

    try:
        data = json.loads((Path(root) / IMPORTS_CACHE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"entries": {}, "dirty": False}
    entries = data if isinstance(data, dict) else {}
    return {"entries": {k: v for k, v in entries.items() if isinstance(v, list)}, "dirty": False}


def _save_imports_cache(root: str, known: dict[str, Any]) -> None:
    if not known["dirty"]:
        return
    from ..store.jsonio import atomic_write_text, canonical_json

    try:
        atomic_write_text(Path(root) / IMPORTS_CACHE, canonical_json(known["entries"]), durable=False)
        known["dirty"] = False
    except OSError:
        pass  # a read-only checkout parses on every start, as before


def _imports_remembered(path: Path, pkg_dir: Path, known: dict[str, Any]) -> frozenset[str]:
    """:func:`_imports`, remembered by the file's content (and where the package lives)."""
    import hashlib

    key = f"{path} {hashlib.sha256(path.read_bytes()).hexdigest()} {pkg_dir}"
    hit = known["entries"].get(key)
    if hit is not None:
        return frozenset(hit)
    found = _imports(path, pkg_dir)
    known["entries"][key] = sorted(found)
    known["dirty"] = True
    return found


@cache
def _module_file(mod: str, pkg_dir: Path) -> Path | None:
    parts = mod.split(".")
    if parts[0] != "canarykit":
        return None
    p = pkg_dir.joinpath(*parts[1:])
    if (p / "__init__.py").is_file():
        return p / "__init__.py"
    if p.with_suffix(".py").is_file():
        return p.with_suffix(".py")
    return None


@cache
def _imports(path: Path, pkg_dir: Path) -> frozenset[str]:
    """The modules ``path`` imports (parsed once per process: every rule's closure shares the
    package's modules, and the Snakefile computes 16 closures on each start)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    here = ""
    if path.is_relative_to(pkg_dir):
        parts = ["canarykit", *path.relative_to(pkg_dir).with_suffix("").parts]
        here = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                mod = ".".join([*anchor, node.module] if node.module else anchor)
            else:
                mod = node.module or ""
            found.add(mod)
            found.update(f"{mod}.{a.name}" for a in node.names)  # `from pkg import submodule`
        elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "Registry":
            # a registry's lazy entries are imports spelled as module paths (canarykit.registry)
            for kw in node.keywords:
                if kw.arg == "lazy" and isinstance(kw.value, ast.Dict):
                    found.update(v.value for v in kw.value.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
    out: set[str] = set()
    for mod in found:
        parts = mod.split(".")
        for i in range(1, len(parts) + 1):  # importing a.b.c runs a/__init__ and a/b/__init__
            out.add(".".join(parts[:i]))
    return frozenset(out)


def load_stages(root: str | Path = ".") -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load((Path(root) / STAGES_FILE).read_text(encoding="utf-8"))
    return spec


_RULE = re.compile(r"^rule (\w+):(.*?)(?=^rule |\Z)", re.M | re.S)
_SCRIPT = re.compile(r"^\s+script:\s*\n\s+\"\.\./(scripts/[^\"]+)\"", re.M)


def rule_scripts(root: str | Path = ".") -> dict[str, str]:
    """Rule -> its script, relative to the workflow root, as ``rules/<stage>.smk`` names it
    (``scripts/<stage>/<step>.py``: one stage, one name in rules/, scripts/ and canarykit/)."""
    out: dict[str, str] = {}
    for smk in sorted((Path(root) / "rules").glob("*.smk")):
        for m in _RULE.finditer(smk.read_text(encoding="utf-8")):
            script = _SCRIPT.search(m.group(2))
            if script:
                out[m.group(1)] = script.group(1)
    return out


def script_of(rule: str, root: str | Path = ".") -> str:
    """The script of ``rule``, relative to the workflow root (:func:`rule_scripts`)."""
    scripts = rule_scripts(root)
    if rule not in scripts:
        raise FileNotFoundError(f"rules/*.smk: rule {rule!r} has no `script:`")
    return scripts[rule]


def rule_code(rule: str, spec: Mapping[str, Any], root: str | Path = ".") -> list[str]:
    """A rule's script and every canarykit module it imports (relative to ``root``)."""
    script = script_of(rule, root)
    if not (Path(root) / script).is_file():
        raise FileNotFoundError(f"{STAGES_FILE}: rule {rule!r} has no script {script}")
    return [script, *code_closure(Path(root) / script, root)]


def _expand(path: str, outputs: Mapping[str, Sequence[str]], item: str | None) -> list[str]:
    path = path.replace("{out}", "${study.output_dir}")
    if item is not None:
        path = path.replace("{item}", "${item}")
    m = re.search(r"(?<!\$)\{(\w+)\}", path)
    if m is None:
        return [path]
    names = outputs[m.group(1)]
    return [p for n in names for p in _expand(path.replace(m.group(0), n), outputs, item)]


def _paths(items: Sequence[str] | None, outputs: Mapping[str, Sequence[str]], item: str | None) -> list[str]:
    return [p for x in items or [] for p in _expand(x, outputs, item)]


def dvc_yaml(root: str | Path = ".") -> str:
    """The text of dvc.yaml for the workflow under ``root``."""
    spec = load_stages(root)
    outputs = spec.get("outputs") or {}
    stages: dict[str, Any] = {}
    for name, st in spec["stages"].items():
        foreach = st.get("foreach")
        item = "item" if foreach else None
        rules = list(st["rules"])
        code = sorted({f for r in rules for f in rule_code(r, spec, root)})
        targets = " ".join(_paths(st["targets"], outputs, item))
        body: dict[str, Any] = {
            "cmd": f"{SMK} {' '.join(rules)} --forcerun {' '.join(rules)} -- {targets}",
            "deps": [*_paths(st.get("deps"), outputs, item), *code],
        }
        params = [p.replace("{item}", "${item}") for p in st.get("params") or []]
        if params:
            body["params"] = params
        outs: list[Any] = _paths(st.get("outs"), outputs, item)
        outs += [{p: {"persist": True}} for p in _paths(st.get("persist"), outputs, item)]
        if outs:
            body["outs"] = outs
        for kind in ("metrics", "plots"):
            if st.get(kind):
                body[kind] = _paths(st[kind], outputs, item)
        stages[name] = {"foreach": list(foreach), "do": body} if foreach else body
    doc: dict[str, Any] = {"stages": stages}
    if spec.get("plots"):
        doc["plots"] = [{k: _plot(v, outputs) for k, v in p.items()} for p in spec["plots"]]
    return HEADER + yaml.safe_dump(doc, sort_keys=False, width=200)


def _plot(v: Mapping[str, Any], outputs: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    out = dict(v)
    if isinstance(out.get("y"), dict):
        out["y"] = {_expand(k, outputs, None)[0]: val for k, val in out["y"].items()}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    text = dvc_yaml(".")
    if "--check" in args:
        current = Path("dvc.yaml").read_text(encoding="utf-8") if Path("dvc.yaml").exists() else ""
        if current != text:
            print("dvc.yaml is not what rules/stages.yaml and the rules' code give: run `make dvc-yaml`", file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
