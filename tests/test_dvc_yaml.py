"""dvc.yaml comes from one source of truth (rules/stages.yaml and the rules' code), and each
rule's code deps cover what its script really imports."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from canarykit.dvcyaml import code_closure, dvc_yaml, load_stages, rule_code, script_of

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
    for f in ("tasks.py", "schemas.py", "jsonio.py", "types.py", "records.py", "agents/runner.py"):
        assert f"src/canarykit/{f}" in run
    assert "src/canarykit/records.py" in rule_code("judge_primary", SPEC, ROOT)
    assert "src/canarykit/canaries/__init__.py" in rule_code("assemble", SPEC, ROOT)
    # the stats rule does not depend on the agents: editing them must not redo the statistics
    assert not any("agents/" in f for f in rule_code("stats", SPEC, ROOT))


@pytest.mark.parametrize("rule", RULES)
def test_code_deps_cover_what_the_script_imports_when_it_runs(rule: str) -> None:
    """Execute the script's imports in a fresh interpreter; every canarykit module loaded
    must be in the rule's code deps (the static closure also follows lazy imports)."""
    script = ROOT / script_of(rule, SPEC)
    tree = ast.parse(script.read_text())
    imports = "\n".join(ast.unparse(n) for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom))
    probe = imports + "\nimport json, sys\nprint(json.dumps(sorted(getattr(m, '__file__', None) or '' for n, m in sys.modules.items() if n.startswith('canarykit'))))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, cwd=ROOT, check=True).stdout
    loaded = {str(Path(f).resolve().relative_to(ROOT)) for f in json.loads(out.splitlines()[-1]) if f}
    deps = set(code_closure(script, ROOT))
    assert loaded <= deps, sorted(loaded - deps)
