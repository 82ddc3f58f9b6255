"""dvc.yaml comes from one source of truth (rules/stages.yaml and the rules' code), and each
rule's code deps cover what its script really imports."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import yaml

from canarykit.study.dvcyaml import code_closure, dvc_yaml, load_stages, rule_code, script_of

ROOT = Path(__file__).resolve().parents[1]
SPEC = load_stages(ROOT)
RULES = sorted({r for st in SPEC["stages"].values() for r in st["rules"]})


def test_dvc_yaml_is_generated_from_the_stages_file() -> None:
    assert (ROOT / "dvc.yaml").read_text() == dvc_yaml(ROOT), "run `make dvc-yaml`"


def test_every_scripted_rule_belongs_to_a_stage() -> None:
    text = "\n".join(p.read_text() for p in (ROOT / "rules").glob("*.smk"))
    scripted = set(re.findall(r"^rule (\w+):(?:(?!^rule ).)*?script:", text, re.S | re.M))
    assert scripted == set(RULES)


def test_stage_commands_name_no_output_file_that_depends_on_the_config() -> None:
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    for name, st in stages.items():
        cmd = (st.get("do") or st)["cmd"]
        assert "figures/" not in cmd and ".svg" not in cmd and ".png" not in cmd, name


def test_code_deps_name_the_modules_the_issue_found_missing() -> None:
    run = rule_code("run_agents", SPEC, ROOT)
    for f in ("tasks/tasks.py", "store/schemas.py", "store/jsonio.py", "types.py", "store/records.py", "agents/runner.py"):
        assert f"src/canarykit/{f}" in run
    assert "src/canarykit/store/records.py" in rule_code("judge_primary", SPEC, ROOT)
    assert "src/canarykit/canaries/__init__.py" in rule_code("assemble", SPEC, ROOT)
    # the stats rule does not depend on the agents: editing them must not redo the statistics
    assert not any("agents/" in f for f in rule_code("stats", SPEC, ROOT))


PROBE = r"""
import ast, json, os, sys
import numpy, polars, pandera.polars, yaml, jsonschema  # third-party, loaded once before forking
out = {}
for script in sys.argv[1:]:
    tree = ast.parse(open(script).read())
    code = "\n".join(ast.unparse(n) for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom))
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # a fresh child per script: only the canarykit modules it imports get loaded
        os.close(r)
        exec(code, {})
        files = sorted(getattr(m, "__file__", None) or "" for n, m in sys.modules.items() if n.startswith("canarykit"))
        os.write(w, json.dumps(files).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.waitpid(pid, 0)
    out[script] = json.loads(data)
print(json.dumps(out))
"""


def test_code_deps_cover_what_each_script_imports_when_it_runs() -> None:
    """Execute each script's imports in a fresh (forked) interpreter; every canarykit module
    loaded must be in the rule's code deps (the static closure also follows lazy imports)."""
    scripts = {rule: str(ROOT / script_of(rule, ROOT)) for rule in RULES}
    proc = subprocess.run([sys.executable, "-c", PROBE, *scripts.values()], capture_output=True, text=True,
                          timeout=600, cwd=ROOT, check=True)
    loaded_by = json.loads(proc.stdout.splitlines()[-1])
    for rule, script in scripts.items():
        loaded = {str(Path(f).resolve().relative_to(ROOT)) for f in loaded_by[script] if f}
        assert loaded, rule
        deps = set(code_closure(script, ROOT))
        assert loaded <= deps, (rule, sorted(loaded - deps))


#: params.yaml keys that name an input file, and the stages that read it
CONFIGURED_FILES = {
    "study.tasks": ["generate_canaries", "assemble", "run_agents", "runs_table"],
    "judge.template": ["runs_table"],
}


def test_stage_deps_follow_the_configured_files() -> None:
    """The files the configuration names are DVC templates over params.yaml, never the
    default path written out (a study with its own task file must re-run when it changes)."""
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    for key, readers in CONFIGURED_FILES.items():
        default = params
        for part in key.split("."):
            default = default[part]
        for name, st in stages.items():
            deps = (st.get("do") or st)["deps"]
            assert default not in deps, (name, default)
            assert (f"${{{key}}}" in deps) == (name in readers), (name, key)


def test_dvc_sees_an_edit_of_the_configured_task_file_and_judge_template(tmp_path: Path) -> None:
    """DVC itself: with study.tasks and judge.template set to files of one's own, editing them
    (and not the defaults) puts the stages that read them out of date."""
    import shutil

    from fakes.workflow import copy_workflow, run, set_param

    repo = copy_workflow(tmp_path / "repo", per_difficulty=1, models=("oracle",))
    shutil.copy(repo / "data/tasks.json", repo / "data/time_tasks.json")
    shutil.copy(repo / "data/prompts/judge_appendix_b.txt", repo / "data/prompts/my_judge.txt")
    set_param(repo, ["study", "tasks"], "data/time_tasks.json")
    set_param(repo, ["judge", "template"], "data/prompts/my_judge.txt")
    run(repo, "git", "init", "-q")
    run(repo, "dvc", "init", "-q")
    # Stand-ins for the two stages' other deps and outputs: DVC records hashes, it runs nothing.
    for d in ("results/canaries", "results/runs/jobs", "results/detect", "results/judge"):
        (repo / d).mkdir(parents=True, exist_ok=True)
    for f in ("results/tools.json", "results/canaries/standard.json", "results/runs/jobs/x.json",
              "results/runs/index.parquet", "results/detect/x", "results/judge/x", "results/runs.parquet"):
        (repo / f).write_text("x")
    run(repo, "dvc", "commit", "-f", "generate_canaries@standard", "runs_table")

    def status() -> str:
        return run(repo, "dvc", "status", "generate_canaries@standard", "runs_table").stdout

    assert "up to date" in status()
    with (repo / "data/tasks.json").open("a") as f:  # the default file: no stage reads it now
        f.write("\n")
    assert "up to date" in status()
    with (repo / "data/time_tasks.json").open("a") as f:
        f.write("\n")
    with (repo / "data/prompts/my_judge.txt").open("a") as f:
        f.write("\n")
    text = status()
    assert "generate_canaries@standard" in text and "runs_table:" in text
    assert text.count("modified:           data/time_tasks.json") == 2
    assert "data/prompts/my_judge.txt" in text
