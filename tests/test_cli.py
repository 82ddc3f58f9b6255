"""The installed `canarykit` command: exit codes and messages a user sees."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from canarykit.testing.synthetic import synthetic_runs

ROOT = Path(__file__).resolve().parents[1]
CLI = shutil.which("canarykit", path=str(Path(sys.executable).parent)) or "canarykit"
FOREIGN = ROOT / "tests/fixtures/foreign_tools.json"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def test_generate_canaries_for_another_servers_tools(tmp_path: Path) -> None:
    out = tmp_path / "canaries.json"
    proc = run("generate-canaries", str(FOREIGN), "-o", str(out), "--pool", "subtle", "--fit", "paper", "--variants", "1")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    records = doc["canaries"]
    tools = json.loads(FOREIGN.read_text())
    n_tools = len(tools["tools"] if isinstance(tools, dict) else tools)
    assert len(records) == 6 * n_tools and doc["fit"] == "paper"
    assert {r["pool"] for r in records} == {"subtle"}
    for r in records:
        assert {"id", "type", "shadows", "name", "description", "inputSchema", "pool"} <= set(r)
    fitted = tmp_path / "fitted.json"
    proc = run("generate-canaries", str(FOREIGN), "-o", str(fitted), "--controls", "--variants", "1")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(fitted.read_text())
    assert doc["fit"] == "fitted" and len(doc["controls"]) == len(doc["canaries"]) < 6 * n_tools
    assert len(doc["canaries"]) + len([s for s in doc["skipped"] if s["type"] != "*"]) == 6 * n_tools
    assert proc.stderr.splitlines()[0].startswith(f"generate-canaries: {len(doc['canaries'])} canaries")


@pytest.mark.parametrize(
    ("tools", "expected"),
    [
        ([{"description": "no name", "inputSchema": {"type": "object"}}], ["tools[0]", "name"]),
        ({"name": "not a list"}, ["tools"]),
    ],
)
def test_generate_canaries_names_the_bad_tool_and_field(tmp_path: Path, tools: object, expected: list[str]) -> None:
    src = tmp_path / "tools.json"
    src.write_text(json.dumps(tools))
    out = tmp_path / "out.json"
    proc = run("generate-canaries", str(src), "-o", str(out))
    assert proc.returncode == 2
    assert str(src) in proc.stderr
    for word in expected:
        assert word in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert not out.exists()


def test_one_broken_tool_is_skipped_with_a_warning_or_refused_with_strict(tmp_path: Path) -> None:
    src = tmp_path / "tools.json"
    src.write_text(json.dumps([{"name": "ok", "description": "Get the status.", "inputSchema": {"type": "object"}},
                               {"name": "broken", "description": "d", "inputSchema": {"type": "objekt"}}]))
    out = tmp_path / "out.json"
    proc = run("generate-canaries", str(src), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    warning = [ln for ln in proc.stderr.splitlines() if ln.startswith("warning:")]
    assert len(warning) == 1 and "broken" in warning[0] and "tools[1] (broken).inputSchema.type" in warning[0]
    doc = json.loads(out.read_text())
    assert {c["shadows"] for c in doc["canaries"]} == {"ok"}
    assert [s for s in doc["skipped"] if s["warning"]][0]["tool"] == "broken"
    out.unlink()
    proc = run("generate-canaries", str(src), "-o", str(out), "--strict")
    assert proc.returncode == 2 and "tools[1] (broken).inputSchema.type" in proc.stderr
    assert "Traceback" not in proc.stderr and not out.exists()


def test_stats_command_writes_the_interface(tmp_path: Path) -> None:
    runs = tmp_path / "runs.parquet"
    synthetic_runs(n_models=3, seeds=3, tasks=12).write_parquet(runs)
    proc = run("stats", str(runs), "-o", str(tmp_path / "out"), "--resamples", "200")
    assert proc.returncode == 0, proc.stderr
    stats = json.loads((tmp_path / "out/stats.json").read_text())
    for key in ("csr_ci", "tsr_delta", "recovery_outcome", "ablation", "primary", "items", "judge_sensitivity"):
        assert key in stats
    # the paper's tests assume independent runs: they live in the replication block
    assert set(stats["replication"]) >= {"chi2", "kruskal", "fisher_holm", "spearman", "note"}
    assert not {"chi2", "kruskal", "fisher_holm", "spearman"} & set(stats)
    assert (tmp_path / "out/table1.csv").read_text().startswith("model,")
    # it says what it wrote, grouped: stats.json, each table as .csv and .md, the figure data
    out = proc.stdout.splitlines()
    assert out[0].startswith("canarykit stats: wrote ") and out[0].endswith(str(tmp_path / "out"))
    assert out[1] == f"  statistics:  {tmp_path / 'out/stats.json'}"
    assert out[2].startswith(f"  tables:      {tmp_path / 'out'}/{{table1,table2,table3,") and out[2].endswith(".{csv,md}")
    assert out[3].startswith("  figure data: ") and "fig2_csr" in out[3] and "table1" not in out[3]
    # 12 tasks: said once on the console, flagged on every estimate
    assert proc.stderr.count("fewer than 30 tasks") == 1 and "12 in the study" in proc.stderr
    assert stats["meta"]["bootstrap_unit"] == "task_x_item" and stats["meta"]["interval_method"] == "cr2_t"
    entry = stats["csr_ci"]["declared"]["frontier-1"]
    assert entry["few_clusters"] is True and entry["clusters"] == 12


def test_stats_command_refuses_a_table_without_the_interface_columns(tmp_path: Path) -> None:
    runs = tmp_path / "runs.parquet"
    synthetic_runs(n_models=2, seeds=1, tasks=10).drop("present_temporal_decoy").write_parquet(runs)
    proc = run("stats", str(runs), "-o", str(tmp_path / "out"))
    assert proc.returncode == 2 and "present_temporal_decoy" in proc.stderr and str(runs) in proc.stderr


def test_stats_on_a_parquet_that_is_not_a_runs_table_is_one_line(tmp_path: Path) -> None:
    import polars as pl

    other = tmp_path / "other.parquet"
    pl.DataFrame({"a": [1, 2]}).write_parquet(other)
    proc = run("stats", str(other), "-o", str(tmp_path / "out"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and str(other) in proc.stderr and "trapped" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_validate_config_names_the_key(tmp_path: Path) -> None:
    bad = tmp_path / "params.yaml"
    bad.write_text((ROOT / "params.yaml").read_text().replace("pool: standard", "pool: subtel"))
    proc = run("validate-config", str(bad))
    assert proc.returncode == 2 and "canaries.pool" in proc.stderr and "subtel" in proc.stderr
    ok = run("validate-config", "params.yaml", cwd=ROOT)
    assert ok.returncode == 0 and "120 tasks" in ok.stdout


def test_stats_accepts_a_run_table_written_with_narrower_types(tmp_path: Path) -> None:
    """Another tool's run table may hold Int32 counts and Float32 rates."""
    import polars as pl

    runs = tmp_path / "runs.parquet"
    df = synthetic_runs(n_models=2, seeds=1, tasks=10)
    df.with_columns(pl.col("tool_calls", "canary_calls", "seed").cast(pl.Int32), pl.col("csr").cast(pl.Float32)).write_parquet(runs)
    proc = run("stats", str(runs), "-o", str(tmp_path / "out"), "--resamples", "200")
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "out/stats.json").read_text())["meta"]["n_runs"] == df.height


def test_every_command_and_option_has_a_plain_help_text() -> None:
    import argparse

    from canarykit.cli import build_parser

    parser = build_parser()
    assert parser.description and "``" not in parser.description
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help for c in sub._choices_actions}
    for name, command in sub.choices.items():
        assert helps.get(name), f"{name}: no help line"
        for action in command._actions:
            if isinstance(action, argparse._HelpAction) or action.dest == "command":
                continue
            assert action.help and "``" not in action.help, f"{name} {action.option_strings or action.dest}: no help text"


# ---------------------------------------------------------------- issue 29: canarykit run, --version, preflight


def test_version_is_the_installed_packages(capsys) -> None:
    from importlib.metadata import version

    from canarykit.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out.strip() == f"canarykit {version('canarykit')}"


def test_run_with_a_misspelt_configfile_is_one_line(capsys, monkeypatch) -> None:
    """Issue 29: "A misspelt `--configfile` prints 14 lines of traceback without the `FileNotFoundError` line"."""
    from canarykit.cli import main

    monkeypatch.chdir(ROOT)
    assert main(["run", "--configfile", "src/canarykit/resources/profiles/smoke.yml"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == ["canarykit: error: src/canarykit/resources/profiles/smoke.yml: --configfile: file not found "
                   "(did you mean 'smoke.yaml'?)"]


def test_run_starts_snakemake_with_the_console_and_the_users_study(monkeypatch, tmp_path: Path) -> None:
    """`canarykit run [--configfile F ...]`: the quiet console, the user's profile and targets, Snakemake's own
    options passed through in order, and the command line the console repeats in every next: line."""
    import canarykit.cli as cli
    from canarykit.study.failures import COMMAND_ENV

    seen: dict[str, object] = {}

    class Proc:
        returncode = 1

        def __init__(self, cmd: list[str], env: dict[str, str]) -> None:
            seen["cmd"], seen["env"] = cmd, env

        def wait(self) -> int:
            return self.returncode

    (tmp_path / "Snakefile").write_text("")
    (tmp_path / "my study.yaml").write_text("study: {output_dir: results/mine}\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("subprocess.Popen", Proc)
    rc = cli.main(["run", "results/mine/table1.csv", "--configfile", "my study.yaml", "--forcerun", "run_agents",
                   "--cores", "4"])
    assert rc == 1, "Snakemake's exit status is the command's"
    cmd = seen["cmd"]
    assert isinstance(cmd, list) and Path(cmd[0]).name == "snakemake"
    assert cmd[1:] == ["--cores", "4", "--scheduler", "greedy", "--logger", "canarykit", "results/mine/table1.csv",
                       "--forcerun", "run_agents", "--configfile", "my study.yaml"]
    env = seen["env"]
    assert isinstance(env, dict) and env[COMMAND_ENV] == ("canarykit run results/mine/table1.csv --configfile "
                                                          "'my study.yaml' --forcerun run_agents --cores 4")


def test_validate_config_names_the_model_whose_key_variable_is_unset(tmp_path: Path, monkeypatch, capsys) -> None:
    """Issue 29: "`canarykit validate-config` passes a profile whose `OPENAI_API_KEY` is unset; the run stops
    17 s later"."""
    from canarykit.cli import main

    profile = tmp_path / "mine.yaml"
    profile.write_text("models:\n  - {name: oracle, backend: reference, agent: oracle}\n"
                       "  - {name: gpt-4.1, backend: litellm, model: openai/gpt-4.1, api_key_env: OPENAI_API_KEY}\n")
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(["validate-config", "params.yaml", "--configfile", str(profile)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"canarykit: error: {profile}: models[1] (gpt-4.1): OPENAI_API_KEY is not set")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert main(["validate-config", "params.yaml", "--configfile", str(profile)]) == 0


def test_check_backends_labels_a_refused_connection_with_host_and_port(tmp_path: Path, monkeypatch, capsys) -> None:
    """Issue 29: Ollama not running failed every run with "`ConnectionError x 3`, no host named"; `--check-backends`
    asks each backend once (10 s) and says which refused, where."""
    import socket

    from canarykit.cli import main

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    profile = tmp_path / "mine.yaml"
    profile.write_text(f"models:\n  - {{name: llama3, backend: ollama, model: 'llama3:8b', host: 'http://127.0.0.1:{port}'}}\n")
    monkeypatch.chdir(ROOT)
    assert main(["validate-config", "params.yaml", "--configfile", str(profile)]) == 0, "no key to check"
    capsys.readouterr()
    assert main(["validate-config", "params.yaml", "--configfile", str(profile), "--check-backends"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"canarykit: error: {profile}: models[0] (llama3): its backend at 127.0.0.1:{port} did not "
                           f"answer: ConnectionRefused: connection refused by 127.0.0.1:{port}")
