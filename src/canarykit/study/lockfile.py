"""``dvc.lock`` as part of the result: the committed lock is what ``make run`` gives on a fresh
clone. Every DVC-tracked output is a function of its stage's code, data and params (timings,
executed / reused counts and judging counts are logs under ``<out>/logs/``; the shared run store
and caches are not outputs of a study), so ``make run`` ends with :func:`record` (``dvc commit``)
and a fresh clone's ``dvc status`` is up to date, ``dvc repro`` runs nothing and ``git status``
is clean (tests/test_fresh_clone.py).

- :func:`lock_mismatches` compares the committed lock with the files on disk, without DVC and
  without any output (seconds): each stage of ``dvc.yaml`` must have its entry, and each entry's
  command, code and data dependencies (by DVC's md5, a directory's ``.dir`` hash included) and
  params (against ``params.yaml``) must be the current ones. Dependencies under the study's
  output directory are outputs of other stages: not compared (their hashes are results,
  byte-identical across machines, refreshed with the rest by ``make lock``).
- :func:`refresh` (``make lock``, ``python -m canarykit.study.lockfile refresh``) writes the lock of
  a fresh run: it copies the workflow's files (what git tracks plus new files it does not
  ignore) to a scratch directory, runs the default study there with Snakemake as ``make run``
  does, records it with ``dvc commit`` and copies the scratch lock back. The user's own
  ``results/``, run store and caches are neither read nor touched, so the lock never holds a
  local edit of params.yaml or a half-finished study.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from ..errors import InputError

LOCK = "dvc.lock"
TEMPLATE = re.compile(r"\$\{([\w.]+)\}")


def file_md5(path: Path) -> str:
    h = hashlib.md5()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def dir_md5(path: Path) -> str:
    """DVC's hash of a directory: the md5 of its sorted file list (JSON), plus ``.dir``."""
    entries = sorted(({"md5": file_md5(f), "relpath": f.relative_to(path).as_posix()}
                      for f in path.rglob("*") if f.is_file()), key=lambda e: e["relpath"])
    return hashlib.md5(json.dumps(entries, sort_keys=True).encode("utf-8")).hexdigest() + ".dir"


def _lookup(params: Mapping[str, Any], key: str) -> Any:
    node: Any = params
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise KeyError(key)
        node = node[part]
    return node


def _resolve(text: str, params: Mapping[str, Any], item: str | None) -> str:
    def value(m: re.Match[str]) -> str:
        return str(item) if m.group(1) == "item" and item is not None else str(_lookup(params, m.group(1)))

    return TEMPLATE.sub(value, text)


def expected_stages(root: Path, params: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """dvc.yaml's stages with foreach expanded (``name@item``) and templates resolved:
    name -> ``cmd``, ``deps`` (paths), ``params`` (keys)."""
    doc = yaml.safe_load((root / "dvc.yaml").read_text(encoding="utf-8"))
    out: dict[str, dict[str, Any]] = {}
    for name, st in (doc.get("stages") or {}).items():
        items: Sequence[str | None] = st.get("foreach", [None])
        body = st.get("do", st)
        for item in items:
            out[f"{name}@{item}" if item is not None else name] = {
                "cmd": _resolve(body["cmd"], params, item),
                "deps": [_resolve(d, params, item) for d in body.get("deps") or []],
                "params": [_resolve(p, params, item) for p in body.get("params") or []],
            }
    return out


def lock_mismatches(root: str | Path = ".") -> list[str]:
    """Every way the committed dvc.lock differs from the workflow's code, data and params
    (one line each; empty when the lock is current)."""
    root = Path(root)
    params = yaml.safe_load((root / "params.yaml").read_text(encoding="utf-8"))
    out_dir = os.path.normpath(str(_lookup(params, "study.output_dir")))
    lock_path = root / LOCK
    if not lock_path.is_file():
        return [f"{LOCK}: missing"]
    lock = (yaml.safe_load(lock_path.read_text(encoding="utf-8")) or {}).get("stages") or {}
    want = expected_stages(root, params)
    problems = [f"{LOCK}: stage {n}: in dvc.yaml, not in the lock" for n in want if n not in lock]
    problems += [f"{LOCK}: stage {n}: in the lock, not in dvc.yaml" for n in lock if n not in want]
    hashes: dict[str, str] = {}
    for name, spec in want.items():
        entry = lock.get(name)
        if entry is None:
            continue
        where = f"{LOCK}: stage {name}"
        if entry.get("cmd") != spec["cmd"]:
            problems.append(f"{where}: its command changed")
        recorded = {d["path"]: d for d in entry.get("deps") or []}
        for path in spec["deps"]:
            if path == out_dir or path.startswith(out_dir + "/"):
                continue  # another stage's output: a result, not code
            dep = recorded.get(path)
            if dep is None:
                problems.append(f"{where}: {path}: a dependency the lock does not list")
                continue
            f = root / path
            if path not in hashes:
                hashes[path] = dir_md5(f) if f.is_dir() else file_md5(f) if f.is_file() else "missing"
            if hashes[path] != dep.get("md5"):
                problems.append(f"{where}: {path}: {'missing' if hashes[path] == 'missing' else 'changed'} since the lock")
        for path in recorded.keys() - set(spec["deps"]):
            problems.append(f"{where}: {path}: in the lock, no longer a dependency")
        locked = (entry.get("params") or {}).get("params.yaml") or {}
        for key in spec["params"]:
            try:
                value = _lookup(params, key)
            except KeyError:
                value = None
            if key not in locked:
                problems.append(f"{where}: params.yaml: {key}: not in the lock")
            elif locked[key] != value:
                problems.append(f"{where}: params.yaml: {key}: differs from the lock")
        for key in locked.keys() - set(spec["params"]):
            problems.append(f"{where}: params.yaml: {key}: in the lock, no longer a param of the stage")
    return problems


def _out_dir(root: Path) -> str:
    params = yaml.safe_load((root / "params.yaml").read_text(encoding="utf-8")) or {}
    return os.path.normpath(str(_lookup(params, "study.output_dir")))


def workflow_files(root: Path) -> list[str]:
    """The workflow's files as a fresh clone would have them: what git tracks (as on disk) and
    the new files it does not ignore."""
    proc = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                          capture_output=True, check=True)
    return sorted({f for f in proc.stdout.decode("utf-8").split("\0") if f and (root / f).is_file()})


def refresh(root: str | Path = ".", cores: int = 2, keep: bool = False) -> Path:
    """Run the default study from scratch in a copy of the workflow and write its dvc.lock to
    ``root/dvc.lock`` (the scratch directory is removed unless ``keep``). Returns the lock's path."""
    root = Path(root).resolve()
    bindir = Path(sys.executable).parent
    scratch = Path(tempfile.mkdtemp(prefix="canarykit-lock-"))
    try:
        for rel in workflow_files(root):
            if rel == LOCK:
                continue  # a fresh lock: the stale one must not steer the run (canarykit.study.dvcsync)
            (scratch / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / rel, scratch / rel)
        env = {**os.environ, "PYTHONPATH": str(scratch / "src"), "DVC_NO_ANALYTICS": "1"}
        env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
        t0 = time.monotonic()
        subprocess.run(["git", "init", "-q"], cwd=scratch, check=True)
        print(f"make lock: running the default study in {scratch} ({cores} cores; a few minutes)", flush=True)
        subprocess.run([str(bindir / "snakemake"), "--cores", str(cores), "--scheduler", "greedy", "--logger=canarykit"],
                       cwd=scratch, env=env, check=True)
        if record(scratch) != 0 or pending_retries(scratch, _out_dir(scratch)):
            raise SystemExit("make lock: the default study did not finish cleanly: dvc.lock not refreshed")
        shutil.copy2(scratch / LOCK, root / LOCK)
        # the numbers the README and docs quote come from the study this lock records
        from ..report.quoted import update

        facts = update(root, scratch / _out_dir(scratch))
        print(f"make lock: wrote {root / LOCK} and {facts.relative_to(root)} (the pages' quoted numbers) in "
              f"{time.monotonic() - t0:.0f} s; commit them with the code they record", flush=True)
    finally:
        if not keep:
            shutil.rmtree(scratch, ignore_errors=True)
    return root / LOCK


def pending_retries(root: Path, out_dir: str) -> int:
    """Failed runs the study's retry gates (``<out>/runs/retry``) still mark for a retry."""
    from ..agents.store import RETRY_DIR, read_retry_gate

    total = 0
    for gate in sorted((root / out_dir / "runs" / RETRY_DIR).glob("*.json")):
        retry = (read_retry_gate(gate) or {}).get("retry")
        total += retry if isinstance(retry, int) and retry > 0 else 0
    return total


def record(root: str | Path = ".") -> int:
    """The last step of ``make run``: record what the run made in ``dvc.lock`` (``dvc commit``
    of every stage of ``dvc.yaml``, the default study's), so that ``dvc status`` says it is up
    to date and ``dvc repro`` runs nothing. Every tracked output is a function of the stage's
    code, data and params (history, timings and the shared run store and caches are logs or
    untracked), so on a fresh clone the lock it writes is the committed one: ``git status``
    stays clean.

    Not recorded while failed runs wait for a retry (the retry gates keep the run stage out of
    date for ``dvc repro`` and a plain ``make run``): a lock must not call a study with
    failures finished. Returns the exit status."""
    root = Path(root)
    in_git = subprocess.run(["git", "rev-parse", "--git-dir"], cwd=root, capture_output=True).returncode == 0
    if not (root / ".dvc").is_dir() or not (root / "dvc.yaml").is_file() or not in_git:
        print("canarykit: not a git and DVC project here (a copy without .git/ or .dvc/): dvc.lock not updated",
              file=sys.stderr)
        return 0
    pending = pending_retries(root, _out_dir(root))
    if pending:
        print(f"canarykit: {pending} failed runs wait for a retry: dvc.lock not updated (`make run` again retries them)",
              file=sys.stderr)
        return 0
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    proc = subprocess.run([str(Path(sys.executable).parent / "dvc"), "commit", "--force", "--quiet"], cwd=root, env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["(no message)"]
        print(f"canarykit: error: dvc commit failed: {tail[0]}", file=sys.stderr)
        return proc.returncode
    print("canarykit: recorded in dvc.lock (dvc status: up to date)", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["check"]:
        problems = lock_mismatches(".")
        for line in problems[:40]:
            print(line, file=sys.stderr)
        if problems:
            print(f"{len(problems)} difference(s): refresh the lock with `make lock`", file=sys.stderr)
        return 1 if problems else 0
    if args[:1] == ["record"]:
        return record(".")
    if args[:1] == ["refresh"]:
        cores = 2
        if "--cores" in args:
            try:
                cores = int(args[args.index("--cores") + 1])
            except (IndexError, ValueError):
                print(f"canarykit: error: {InputError('command line', '--cores', 'expected a number')}", file=sys.stderr)
                return 2
        refresh(".", cores=cores, keep="--keep" in args)
        return 0
    print("usage: python -m canarykit.study.lockfile check | record | refresh [--cores N] [--keep]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
