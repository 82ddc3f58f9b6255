"""The official memory server (npm: 9 tools, 6 of which write) as a stateful, isolated study
environment, configured as the README prints it: three reference agents run in parallel, each
agent job in a seeded scratch copy of the graph, and no write lands anywhere else (issue 22,
item 1 and 2).

Slow: the first run installs the server from the npm registry (the README's command, into a
cache outside the repository, reused afterwards); the study runs Snakemake up to the run index.
"""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from fakes.mcp_time import cache_root
from fakes.readme import command
from fakes.readme import sh as readme_sh
from fakes.readme import text as pages_text
from fakes.sandbox import ensure_bwrap
from fakes.workflow import copy_workflow, run
from fakes.workflow import env as workflow_env

pytestmark = pytest.mark.slow

MODELS = ("oracle", "lexical", "planted:capability_mirage")
SEED = [
    {"type": "entity", "name": "Ada Lovelace", "entityType": "person",
     "observations": ["born in 1815", "wrote the first published program"]},
    {"type": "entity", "name": "Analytical Engine", "entityType": "machine",
     "observations": ["designed by Charles Babbage"]},
    {"type": "relation", "from": "Ada Lovelace", "to": "Analytical Engine", "relationType": "wrote programs for"},
]
MEMORY_TASKS = {
    "version": "1",
    "tasks": [
        {"id": "ada-born", "difficulty": "easy", "prompt": "When was Ada Lovelace born? Look her up in the knowledge graph.",
         "correct_tools": ["open_nodes"], "declared_types": ["capability_mirage", "parameter_trap"],
         "plan": [{"tool": "open_nodes", "args": {"names": ["Ada Lovelace"]}}],
         "rubric": [{"kind": "text", "label": "year", "value": "1815"}]},
        {"id": "record-hopper", "difficulty": "medium",
         "prompt": "Record in the knowledge graph that Grace Hopper is a person who wrote the first compiler, then "
                   "read her entry back.",
         "correct_tools": ["create_entities", "open_nodes"], "declared_types": ["capability_mirage", "parameter_trap"],
         "plan": [{"tool": "create_entities", "args": {"entities": [
                      {"name": "Grace Hopper", "entityType": "person", "observations": ["wrote the first compiler"]}]}},
                  {"tool": "open_nodes", "args": {"names": ["Grace Hopper"]}}],
         "rubric": [{"kind": "text", "label": "observation", "value": "first compiler"}]},
        {"id": "engine-designer", "difficulty": "easy",
         "prompt": "Search the knowledge graph for the Analytical Engine: who designed it?",
         "correct_tools": ["search_nodes"], "declared_types": ["capability_mirage", "prerequisite_blindness"],
         "plan": [{"tool": "search_nodes", "args": {"query": "Analytical Engine"}}],
         "rubric": [{"kind": "text", "label": "designer", "value": "Charles Babbage"}]},
    ],
}


def _yaml_block(containing: str) -> dict[str, Any]:
    """The docs' (README or docs/) ```yaml block that contains ``containing``."""
    text = pages_text()
    at = text.index(containing)
    start = text.rindex("```yaml\n", 0, at) + len("```yaml\n")
    return dict(yaml.safe_load(text[start:text.index("```", start)]))


@pytest.fixture(scope="module")
def memory_home() -> Path:
    """A HOME in the test cache where the README's npm command installed the server (once)."""
    if shutil.which("npm") is None:
        pytest.skip("npm (Node.js) is not installed")
    home = cache_root() / "npm-home"
    home.mkdir(parents=True, exist_ok=True)
    done = home / ".mcp/memory/.canarykit-installed"
    install = command("npm install --prefix ~/.mcp/memory").text
    with open(home / ".install.lock", "w") as lock:
        fcntl.lockf(lock, fcntl.LOCK_EX)
        if not (done.exists() and done.read_text() == install):
            ping = subprocess.run(["npm", "ping"], capture_output=True, text=True, timeout=60)
            if ping.returncode != 0:
                pytest.skip(f"the npm registry does not answer: {ping.stderr.strip()[-200:]}")
            readme_sh(home, install, env={**workflow_env(), "HOME": str(home)}, timeout=600)
            done.write_text(install)
    return home


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def test_the_memory_server_as_an_isolated_study_of_three_models_in_parallel(tmp_path: Path, memory_home: Path) -> None:
    ensure_bwrap()  # isolated servers run in their sandbox (issue 28)
    t0 = time.monotonic()
    repo = copy_workflow(tmp_path / "repo", models=MODELS)
    (repo / "data/memory_tasks.json").write_text(json.dumps(MEMORY_TASKS, indent=1))
    seed = repo / "data/memory-seed"
    seed.mkdir()
    (seed / "memory.jsonl").write_text("".join(json.dumps(x) + "\n" for x in SEED))
    cfg = yaml.safe_load((repo / "params.yaml").read_text())
    cfg["study"]["tasks"] = "data/memory_tasks.json"
    cfg["canaries"]["special_cases"] = {}
    environment = _yaml_block('MEMORY_FILE_PATH: "{workdir}/memory.jsonl"')["environment"]  # as printed
    server = environment["servers"][0]
    server["command"] = [c.replace("~", str(memory_home), 1) if c.startswith("~") else c for c in server["command"]]
    cfg["environment"] = environment
    (repo / "params.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    package = memory_home / ".mcp/memory"
    before = {"package": _snapshot(package), "seed": _snapshot(seed)}

    run(repo, "snakemake", "--cores", "3", "--scheduler", "greedy", "--", "results/runs/index.parquet")

    doc = json.loads((repo / "results/tools.json").read_text())
    assert len(doc["tools"]) == 9 and doc["servers"][0]["server_info"]["name"] == "memory-server"
    summary = json.loads((repo / "results/logs/run-summary.json").read_text())
    assert summary["failed"] == 0 and summary["executed"] > 0
    jobs = repo / "results/logs/runs"  # each agent job's summary and its servers' state: untracked (issue 29)
    windows = []
    graphs = {}
    for slug in ("oracle", "lexical", "planted_capability_mirage"):
        where = jobs / slug / "workdirs/all/memory"
        lines = [json.loads(line) for line in (where / "memory.jsonl").read_text().splitlines() if line.strip()]
        graphs[slug] = {x["name"] for x in lines if x["type"] == "entity"}
        lock = jobs / slug / "workdirs/all/memory.lock"
        windows.append((lock.stat().st_mtime, (jobs / slug / "all.json").stat().st_mtime))
        assert sorted(p.name for p in where.iterdir()) == ["memory.jsonl"], "only the server's own file"
    assert "Grace Hopper" in graphs["oracle"], "the oracle's create_entities wrote into its own copy"
    assert all("Analytical Engine" in g for g in graphs.values()), "each copy started from the seed"
    assert max(start for start, _ in windows) < min(end for _, end in windows), "the three jobs ran at the same time"
    # No write outside the jobs' directories: the seed, the package (the server's default
    # memory file lives beside its code) and the rest of the repository are untouched.
    assert _snapshot(seed) == before["seed"]
    assert _snapshot(package) == before["package"]
    stray = [p for p in repo.rglob("memory.json*") if "workdirs" not in p.parts and p.parent != seed]
    assert stray == []
    print(f"\nmemory-server study: {time.monotonic() - t0:.1f} s (3 agent jobs in parallel)")
