"""Every command the README and the docs pages show works as printed, and is run by a test.

The commands are read from README.md and docs/**/*.md themselves (``fakes/readme.py``). A test runs one by
fetching it with ``command("<its start>")``: this module runs the quick ones (Snakemake
invocations as dry runs, the configuration checks with the output the README shows, the
MCP export, canary generation, statistics, the proxy's start); the slow suite runs the rest
(the DVC story in ``test_dvc_study.py``, the third-party server in
``test_environment_time.py``, the study's own files in ``test_golden.py``). A command no test
fetches, and that :data:`EXPLAINED` does not account for, fails
:func:`test_every_readme_command_is_run_by_a_test`: the README cannot drift.
"""

from __future__ import annotations

import ast
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from fakes.readme import Command, command, commands, sh, shown
from fakes.workflow import copy_workflow, env, set_param

from canarykit.testing.synthetic import synthetic_runs

TESTS = Path(__file__).parent
ROOT = TESTS.parent

#: Commands no test can run as printed here, with what stands in for them.
EXPLAINED = {
    "make run": "the install, then `snakemake --cores 2 --scheduler greedy` and its DVC record (test_fresh_clone.py runs the recipe from a clone on a small study; test_golden.py the snakemake part)",
    "make test": "what CI runs (.ci/run)",
    "make lock": "the default study in a scratch copy, then `dvc commit` there (test_lockfile.py checks the committed lock against the code and params; the integrator runs it)",
    "make test-slow": "what CI runs (.ci/run)",
    "make bench": "runs benchmarks/bench_*.py, which print measured ratios (run by hand; tests never time anything)",
    "make check": "ruff, mypy and `python -m canarykit.study.dvcyaml --check` (test_dvc_yaml.py checks dvc.yaml is current)",
    "make dvc-yaml": "`python -m canarykit.study.dvcyaml > dvc.yaml` (test_dvc_yaml.py: the committed dvc.yaml is what it writes)",
    "make resume": "test_agents_claims.py (slow) kills snakemake with SIGKILL and runs `make resume` in a copy of the workflow",
    'make resume SMK_ARGS="results/table1.csv"': "the same target with SMK_ARGS passed through (test_agents_claims.py)",
    "dvc remote add -d storage s3://my-bucket/canarykit": "a cloud bucket; test_dvc_study.py adds a local directory remote the same way",
    "git clone <repo> && cd <repo> && make install && source .venv/bin/activate": "test_dvc_study.py clones the study repository and pulls into it",
}


def _fetched(everything: set[str]) -> set[str]:
    """The README commands some test runs: fetched with ``command("<start>")``, or written out
    whole as a string in a test module (a helper or a loop that runs it)."""
    starts: list[str] = []
    for path in TESTS.rglob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "command"
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                starts.append(node.args[0].value)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in everything:
                starts.append(node.value)
    return {command(s).text for s in starts}


def test_every_readme_command_is_run_by_a_test() -> None:
    everything = {c.text for c in commands()}
    assert len(everything) > 40, "the README parser found the commands"
    missing = sorted(everything - _fetched(everything) - set(EXPLAINED))
    assert not missing, f"README commands that no test runs (fetch them with command(...) in a test): {missing}"
    stale = sorted(set(EXPLAINED) - everything)
    assert not stale, f"EXPLAINED names commands the README no longer shows: {stale}"


# --------------------------------------------------------------------------- configuration checks


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The workflow with the whole task suite (the README's messages count its tasks)."""
    return copy_workflow(tmp_path_factory.mktemp("readme") / "repo", per_difficulty=40)


def _first_line(proc: subprocess.CompletedProcess[str]) -> str:
    return (proc.stdout + proc.stderr).strip().splitlines()[0]


def test_validate_config_as_printed(repo: Path) -> None:
    assert sh(repo, command("canarykit validate-config params.yaml").text).stdout.startswith("params.yaml: valid.")
    gemma = command("canarykit validate-config params.yaml --configfile src/canarykit/resources/profiles/local-gemma.yaml")
    proc = sh(repo, gemma.text)
    assert _first_line(proc).split(". ")[0] == shown(gemma.text)[0].split(". ")[0]  # "... local-gemma.yaml: valid"
    short = command("canarykit validate-config params.yaml --configfile my-profile.yaml")
    (repo / "my-profile.yaml").write_text("agent: {max_turns: 3}\n")
    proc = sh(repo, short.text, check=False)
    assert proc.returncode == 2 and _first_line(proc) == shown(short.text)[0]


def test_validate_config_names_a_misspelt_pool_as_shown(tmp_path: Path) -> None:
    repo = copy_workflow(tmp_path / "repo", per_difficulty=1)
    set_param(repo, ["canaries", "pool"], "subtel")
    bare = next(c for c in commands() if c.text == command("canarykit validate-config").text and "subtel" in c.output[0])
    proc = sh(repo, bare.text, check=False)
    # the line now ends with a suggestion (issue 23); the README shows it once it is updated
    hint = " (did you mean 'subtle'?)"
    assert proc.returncode == 2 and _first_line(proc).endswith(hint)
    # the line of params.yaml the error names: the copy's params.yaml is re-written, so its lines differ
    assert _lineless(_first_line(proc)).removesuffix(hint) == _lineless(bare.output[0]).removesuffix(hint)
    assert re.match(r"canarykit: error: params\.yaml:\d+: canaries\.pool:", _first_line(proc))


def _lineless(text: str) -> str:
    """An error line without the line number after its file name (``params.yaml:26:``)."""
    return re.sub(r"^(canarykit: error: [^\s:]+):\d+:", r"\1:", text)


# --------------------------------------------------------------------------- Snakemake invocations


def _dry(c: Command) -> str:
    words = c.text.split(" ", 1)
    assert words[0] == "snakemake"
    return f"snakemake -n {words[1] if len(words) > 1 else ''}".strip()


SNAKEMAKE = (
    "snakemake --cores 2 --scheduler greedy results/table1.csv",
    "snakemake --cores 2 results/paper/table1.csv --configfile src/canarykit/resources/profiles/paper.yaml",
    "snakemake --cores 2 --configfile src/canarykit/resources/profiles/local-gemma.yaml",
    "snakemake --cores 2 results/smoke/table1.csv --configfile src/canarykit/resources/profiles/smoke.yaml",
    "snakemake -n results/runs/index.parquet",
    "snakemake --profile profiles/slurm results/table1.csv",
    "snakemake --profile profiles/slurm --slurm-no-account results/table1.csv",
    "snakemake --profile profiles/slurm results/table1.csv --set-resources run_agents:slurm_partition=gpu",
    "snakemake --profile profiles/slurm results/paper/table1.csv --resources llm_openai=16 llm_anthropic=4 "
    "--configfile src/canarykit/resources/profiles/paper.yaml",
    "snakemake --cores 2 --scheduler greedy",
    "snakemake --cores 2 --forcerun run_agents -- results/runs/index.parquet",
    "snakemake --cores 2 -- results/runs/index.parquet",
    "snakemake -n results/table1.csv",
)


@pytest.mark.slow  # 13 workflow plans, the paper's grid among them: a minute or more
def test_every_snakemake_invocation_plans_as_printed(repo: Path) -> None:
    """Each README invocation, as a dry run (``-n``) of the workflow: the targets exist, the
    profiles and --configfile files parse and validate, the DAG builds."""
    keys = {}
    for profile in (repo / "src/canarykit/resources/profiles").glob("*.yaml"):
        for m in (yaml.safe_load(profile.read_text()) or {}).get("models", []) or []:
            if m.get("api_key_env"):
                keys[m["api_key_env"]] = "placeholder-for-a-dry-run"
    e = {**env(), **keys}
    failed = []
    for start in SNAKEMAKE:
        proc = sh(repo, _dry(command(start)), env=e, check=False, timeout=600)
        out = proc.stdout + proc.stderr
        if proc.returncode != 0 or "Traceback" in out:
            failed.append(f"{command(start).text}:\n{out[-1500:]}")
    assert not failed, "\n\n".join(failed)


# --------------------------------------------------------------------------- tools, canaries, stats, proxy


@pytest.mark.slow  # whole workflow invocations: tens of seconds on a loaded machine
def test_export_generate_and_stats_as_printed(tmp_path: Path) -> None:
    sh(tmp_path, command("canarykit list-mcp-tools --server weather -o tools.json -- canarykit serve-tools weather").text)
    sh(tmp_path, command("canarykit generate-canaries tools.json -o canaries.json --controls").text)
    doc = yaml.safe_load((tmp_path / "canaries.json").read_text())
    assert doc["canaries"] and doc["controls"]
    (tmp_path / "TOOLS.json").write_bytes((tmp_path / "tools.json").read_bytes())
    sh(tmp_path, command("canarykit generate-canaries TOOLS.json -o OUT.json --pool subtle").text)
    assert yaml.safe_load((tmp_path / "OUT.json").read_text())["pool"] == "subtle"
    (tmp_path / "results").mkdir()
    synthetic_runs(seed=3).write_parquet(tmp_path / "results/runs.parquet")
    sh(tmp_path, command("canarykit stats results/runs.parquet -o my-stats/").text)
    assert (tmp_path / "my-stats/stats.json").stat().st_size > 1000 and (tmp_path / "my-stats/table1.csv").exists()


def test_the_proxy_starts_as_printed(tmp_path: Path) -> None:
    """``MCP-SERVER-CMD`` stands for a server's command: here one of ours."""
    text = command("canarykit proxy --trace-dir traces -- MCP-SERVER-CMD").text.replace(
        "MCP-SERVER-CMD", "canarykit serve-tools weather")
    proc = subprocess.Popen(["bash", "-c", f"exec {text}"], cwd=tmp_path, env=env(), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 120
        line = ""
        while time.monotonic() < deadline and "offering" not in line:
            line = proc.stderr.readline()
            if not line and proc.poll() is not None:
                break
        assert line.startswith("canarykit proxy: 1 upstream") and "offering 3 real tools" in line, line
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)


def test_make_help_names_every_target_as_printed() -> None:
    """`make help` (issue 29: "Missing: ... `make help`"): a line for every target the Makefile declares."""
    proc = subprocess.run(command("make help").text.split(), cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    phony = next(line for line in (ROOT / "Makefile").read_text().splitlines() if line.startswith(".PHONY:"))
    targets = set(phony.split(":", 1)[1].split()) - {"help"}
    shown_targets = {line.split()[1] for line in proc.stdout.splitlines() if line.startswith("make ")}
    assert targets <= shown_targets, targets - shown_targets
    assert len(proc.stdout.splitlines()) <= 40
