"""The console of `make run` (canarykit.study.console, Snakemake's --logger canarykit) and the errors
a person can act on: one screen, a line per stage, the user's error as one line, a missing
target that lists the study's targets, "did you mean"."""

from __future__ import annotations

import json
import logging
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from canarykit.errors import ConfigError
from canarykit.study.config import validate_params
from canarykit.study.console import (
    ConsoleView,
    brace_paths,
    cli_targets,
    study_targets,
    unknown_target_error,
    user_error_lines,
)

ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / ".venv/bin"
STAGES = yaml.safe_load((ROOT / "rules/stages.yaml").read_text())


def record(msg: object = None, level: int = logging.INFO, **extra: object) -> logging.LogRecord:
    rec = logging.LogRecord("snakemake", level, __file__, 0, msg, None, None)
    rec.__dict__.update(extra)
    return rec


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        self.t += 1.5
        return self.t


def _study_outputs(out: Path) -> None:
    (out / "judge").mkdir(parents=True)
    (out / "logs").mkdir()
    (out / "figures").mkdir()
    (out / "judge/validation.json").write_text(json.dumps({"oracle_check": {"ok": True, "runs": 840, "passed": 840}}))
    (out / "logs/run-summary.json").write_text(json.dumps({"total": 6000, "executed": 5990, "reused": 10, "failed": 0}))
    for t in STAGES["outputs"]["tables"]:
        (out / f"{t}.csv").write_text("model\n")
    (out / "report.html").write_text("<html>")


def test_a_default_study_fits_one_screen_and_ends_with_where_to_look(tmp_path: Path) -> None:
    """The default study's DAG (17 rules, the agent and judge jobs per model): a line per rule,
    the runs with their rate, then the closing block; at most 40 lines."""
    out = tmp_path / "results"
    _study_outputs(out)
    plan = {"export_tools": 1, "generate_canaries": 2, "assemble": 2, "assemblies": 1, "run_agents": 10,
            "run_index": 1, "detect": 10, "judge_primary": 10, "judge_cross": 10, "runs_table": 1,
            "judge_report": 1, "metrics": 1, "stats": 1, "figures": 1, "plots_template": 1,
            "study_parameters": 1, "report": 1, "all": 1}
    view = ConsoleView(str(out), clock=Clock())
    lines = view.lines(record("Job stats: ...", event="run_info", stats={**plan, "total": sum(plan.values())}))
    lines += view.lines(record("Job stats: ...", event="run_info", stats={**plan, "total": sum(plan.values())}))
    assert len(lines) == 1, "the job table, said twice, is one line"
    jobid = 0
    for rule, n in plan.items():
        ids = []
        for _ in range(n):
            jobid += 1
            ids.append(jobid)
            lines += view.lines(record(f" Rule: {rule}", event="job_info", rule_name=rule, jobid=jobid))
            lines += view.lines(record(None, event="shellcmd"))
        for i in ids:
            lines += view.lines(record(f"Finished jobid: {i}", event="job_finished", job_id=i))
            lines += view.lines(record(None, event="progress", done=i, total=sum(plan.values())))
    lines += view.lines(record("Complete log(s): /x/.snakemake/log/a.log"))
    lines += view.closing()
    assert len(lines) <= 40, "\n".join(lines)
    assert sum(line.startswith("  ") and "job" in line for line in lines) == len(plan) - 1  # not `all`
    runs = next(line for line in lines if "runs:" in line)
    assert "6000" in runs and "5990 executed" in runs and "runs/s" in runs
    text = "\n".join(lines)
    assert "ok: the oracle passed 840 of 840 runs" in text
    assert f"report:    {out}/report.html" in text and f"{out}/table1.csv, {out}/table2.csv, {out}/table3.csv" in text
    assert f"{out}/logs/snakemake.log" in text and "next:" in lines[-1]
    assert view.succeeded()


def test_a_dvc_stage_under_quiet_progress_ends_done_or_stopped_by_its_errors(tmp_path: Path) -> None:
    """A DVC stage's command (`--quiet rules progress ...`): Snakemake reports no finished job,
    so a stage that ran is done (with the failed runs and verdicts its own invocation found),
    not "stopped with 0 of 1 done"; a later stage does not repeat them; a failed job still stops it."""
    import os

    out = tmp_path / "results"
    (out / "logs").mkdir(parents=True)
    (out / "judge").mkdir()
    stats = {"run_agents": 2, "run_index": 1, "total": 3}
    view = ConsoleView(str(out), clock=Clock(), counts_jobs=False)
    lines = view.lines(record("Job stats: ...", event="run_info", stats=stats))
    for i, rule in enumerate(("run_agents", "run_agents", "run_index"), 1):
        lines += view.lines(record(f" Rule: {rule}", event="job_info", rule_name=rule, jobid=i))
    (out / "logs/failures.json").write_text(json.dumps({"failed": 2, "total": 48, "allowed_share": 1.0, "first": {
        "model": "gw", "error_class": "AuthenticationError (401)", "host": "127.0.0.1:9", "message": "", "run_id": "r"}}))
    (out / "judge/validation.json").write_text(json.dumps({"counts": {"primary": {"ok": 40, "error": 8}, "cross": {"ok": 48}}}))
    lines += view.closing()
    assert view.succeeded() and lines[-3].startswith("canarykit: done in") and len(lines) == 4, lines
    assert lines[-2] == ("  failed runs: 2 of 48 runs failed (4%; study.allow_failed: 1), allowed; "
                         "the first: AuthenticationError (401) from 127.0.0.1:9 (model gw)")
    assert lines[-1].startswith(f"  failed verdicts: judge primary 8 (never cached: the next run judges them again; why: {out}")
    for f in ("logs/failures.json", "judge/validation.json"):  # written by an earlier stage
        os.utime(out / f, (1, 1))
    later = ConsoleView(str(out), clock=Clock(), counts_jobs=False)
    later.lines(record("Job stats: ...", event="run_info", stats={"figures": 1, "total": 1}))
    (said,) = later.closing()
    assert said.startswith("canarykit: done in")
    failing = ConsoleView(str(out), clock=Clock(), counts_jobs=False)
    failing.lines(record("Job stats: ...", event="run_info", stats=stats))
    failing.lines(record("Error in rule run_agents", logging.ERROR, event="job_error", jobid=1, rule_name="run_agents"))
    assert not failing.succeeded() and any("the run stopped" in line for line in failing.closing())


def test_a_user_error_is_one_line_without_the_workflow_error_wrapper() -> None:
    text = ('WorkflowError in file "/w/rules/common.smk", line 43:\n'
            "canarykit: error: params.yaml: study: Additional properties are not allowed ('sedes' was unexpected)\n"
            '  File "/w/rules/common.smk", line 43, in <module>')
    view = ConsoleView("results")
    lines = view.lines(record(text, logging.ERROR, event="error", exception="WorkflowError"))
    assert lines == ["canarykit: error: params.yaml: study: Additional properties are not allowed ('sedes' was unexpected)"]
    assert view.closing() == [], "the run never started: the error line is the whole console"
    assert user_error_lines("MissingRuleException:\nNo rule") is None


def test_a_failed_job_names_its_rule_and_the_last_line_of_its_log(tmp_path: Path) -> None:
    log = tmp_path / "stats.log"
    log.write_text("reading\ncanarykit: error: runs.parquet: csr: expected a number\n")
    view = ConsoleView(str(tmp_path), clock=Clock())
    view.lines(record("", event="run_info", stats={"stats": 1, "total": 1}))
    view.lines(record("", event="job_info", rule_name="stats", jobid=3))
    lines = view.lines(record("Error in rule stats", logging.ERROR, event="job_error", rule_name="stats", jobid=3,
                              log=[f"{log} (check log file(s) for error details)"]))
    assert lines == [f"error: rule stats (job 3) failed; its log: {log}",
                     "  canarykit: error: runs.parquet: csr: expected a number"]
    closing = view.closing()
    assert "stopped" in closing[1] and "1 job(s) failed" in closing[1] and not any("report:" in c for c in closing)


def test_snakemakes_hint_about_input_functions_is_dropped() -> None:
    view = ConsoleView("results")
    text = ("MissingRuleException:\nNo rule to produce x.csv (if you use input functions make sure that "
            "they don't raise unexpected exceptions).")
    assert view.lines(record(text, logging.ERROR, event="error", exception="MissingRuleException")) == [
        "error: No rule to produce x.csv."]


class Rule(SimpleNamespace):
    def is_producer(self, path: str) -> bool:
        return path in self.outputs

    def products(self) -> list[str]:
        return self.outputs


def test_an_unknown_target_lists_the_study_targets_with_a_suggestion() -> None:
    named = study_targets("results", STAGES["outputs"], ["svg"])
    rules = [Rule(name="stats", outputs=["results/table1.csv"]), Rule(name="report", outputs=["results/report.html"])]
    msg = unknown_target_error(["report", "results/table9.csv"], rules, named, ["all", "stats", "report"])
    assert msg is not None and msg.startswith("canarykit: error: results/table9.csv: ")
    assert "(did you mean 'results/table" in msg and "targets: all, stats, report" in msg
    assert "results/{table1,table2,table3," in msg and "results/figures/{fig2,fig4," in msg
    assert "\n" not in msg
    assert "did you mean 'report'" in (unknown_target_error(["reprot"], rules, named, ["all", "report"]) or "")
    assert unknown_target_error(["results/table1.csv", "stats"], rules, named, ["all"]) is None
    # spelt another way, the same file (Snakemake normalises targets too)
    assert unknown_target_error(["./results/table1.csv", str(Path.cwd() / "results/report.html")], rules, named, ["all"]) is None


def test_brace_paths_groups_names_and_suffixes() -> None:
    assert brace_paths(["o/a.csv", "o/b.csv", "o/a.md", "o/b.md", "o/s.json"]) == ["o/{a,b}.{csv,md}", "o/s.json"]


def test_targets_are_read_from_a_snakemake_command_line_only() -> None:
    assert cli_targets(["/x/.venv/bin/snakemake", "--cores", "2", "--logger=canarykit", "results/t.csv"]) == ["results/t.csv"]
    assert cli_targets(["snakemake", "--allowed-rules", "stats", "--forcerun", "stats", "--", "stats"]) == ["stats"]
    assert cli_targets(["pytest", "results/t.csv"]) == []


def test_an_unknown_key_gets_a_did_you_mean() -> None:
    cfg = yaml.safe_load((ROOT / "params.yaml").read_text())
    cfg["study"]["sedes"] = cfg["study"].pop("seeds")
    with pytest.raises(ConfigError) as err:
        validate_params(cfg, "params.yaml")
    assert "did you mean 'seeds'?" in str(err.value) and "study" in str(err.value)


def test_a_missing_target_through_the_console_is_one_line() -> None:
    """The real workflow, as `make run` runs Snakemake (a dry run: nothing is written)."""
    proc = subprocess.run([str(BIN / "snakemake"), "-n", "--cores", "1", "--logger=canarykit", "results/table9.csv"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if not line.startswith("Using workflow specific profile")]
    assert len(lines) == 1, lines
    assert lines[0].startswith("canarykit: error: results/table9.csv:") and "did you mean" in lines[0]
    assert "results/report.html" in lines[0] and "SNAKEMAKE" not in proc.stderr and "WorkflowError" not in proc.stderr


def test_a_misspelt_value_of_a_choice_gets_a_did_you_mean() -> None:
    cfg = yaml.safe_load((ROOT / "params.yaml").read_text())
    cfg["canaries"]["pool"] = "subtel"
    with pytest.raises(ConfigError) as err:
        validate_params(cfg, "params.yaml")
    assert "canaries.pool" in str(err.value) and "(did you mean 'subtle'?)" in str(err.value)


def test_a_failed_call_keeps_the_log_of_the_study_it_failed_next_to(tmp_path: Path) -> None:
    # issue 29: "Each failed call overwrites results/logs/snakemake.log (after one typo the main
    # study's log was 26 lines)"
    from canarykit.study.console import FULL_LOG, FULL_LOG_DIR, FullLog

    out = tmp_path / "results"

    def invocation(text: str, event: str) -> None:
        view = ConsoleView(str(out))
        view.started = event != "error"
        log = FullLog(view, lambda r: str(r.msg))
        log.write(record(text, logging.ERROR if event == "error" else logging.INFO, event=event))
        log.close()

    invocation("Job stats: the main study, 67 jobs", "run_info")
    invocation("canarykit: error: mine.yaml: model: unexpected (did you mean 'models'?)", "error")
    logs = {f.read_text(): f for f in (out / FULL_LOG_DIR).glob("*.log")}
    assert len(logs) == 2 and any("the main study, 67 jobs" in t for t in logs)  # the study's log is kept
    latest = out / FULL_LOG
    assert latest.is_symlink() and "did you mean" in latest.read_text() and "67 jobs" not in latest.read_text()


# ---------------------------------------------------------------- issue 29: loud failures, one-line errors, progress


def _started(view: ConsoleView, plan: dict[str, int]) -> None:
    view.lines(record("Job stats", event="run_info", stats={**plan, "total": sum(plan.values())}))


def test_failed_runs_close_with_the_first_failure_and_the_command_that_retries(tmp_path: Path, monkeypatch) -> None:
    """Issue 29: "A profile whose Ollama is not running: runs: 6 (6 executed, 0 reused, 6 failed), then
    `canarykit: done in 1m11s`, exit 0". The workflow's final check raises; the console closes with the
    first failure's class, host and model and the user's own command, never "done"."""
    from canarykit.study.failures import (
        COMMAND_ENV,
        Failures,
        FirstFailure,
        failure_message,
        write_verdict,
    )

    monkeypatch.setenv(COMMAND_ENV, "canarykit run --configfile mine.yaml")
    first = FirstFailure("llama3", "ConnectionRefused", "127.0.0.1:11434",
                         "connection refused by 127.0.0.1:11434 (nothing listens there: is the server running?)", "r1",
                         transient=True)
    failures = Failures(6, 6, 0.0, first)
    write_verdict(tmp_path, failures)
    view = ConsoleView(str(tmp_path), clock=Clock())
    _started(view, {"run_agents": 1})
    view.lines(record("", event="job_info", rule_name="run_agents", jobid=1))
    view.lines(record("", event="job_finished", job_id=1))
    text = ('WorkflowError:\ncanarykit: error: ' + failure_message(failures, "canarykit run --configfile mine.yaml") +
            '\n  File "/w/rules/common.smk", line 330')
    assert view.lines(record(text, logging.ERROR, event="error", exception="WorkflowError")) == [], \
        "said once, in the closing block"
    closing = view.closing()
    block = "\n".join(closing)
    assert "done" not in block and "FAILED" in closing[1] and "6 of 6 runs failed" in closing[1]
    assert "ConnectionRefused from 127.0.0.1:11434 (model llama3)" in block
    assert closing[-1].startswith("  next:") and "canarykit run --configfile mine.yaml" in closing[-1]
    assert not view.succeeded()


def test_allowed_failures_are_still_named_in_a_successful_closing_block(tmp_path: Path) -> None:
    from canarykit.study.failures import Failures, FirstFailure, write_verdict

    _study_outputs(tmp_path)
    write_verdict(tmp_path, Failures(2, 600, 0.01, FirstFailure("gpt", "Timeout (408)", "openai", "", "r")))
    view = ConsoleView(str(tmp_path), clock=Clock())
    view.nothing_to_do = True
    block = "\n".join(view.closing())
    assert "done in" in block and "2 of 600 runs failed" in block and "allowed" in block and "Timeout (408) from openai" in block


def test_a_misspelt_configfile_is_one_line_without_the_traceback() -> None:
    """Issue 29: "A misspelt `--configfile` prints 14 lines of traceback without the FileNotFoundError line"."""
    text = ("Traceback (most recent call last):\n"
            '  File "/v/snakemake/cli.py", line 2168, in args_to_api\n    config_settings=ConfigSettings(\n'
            '  File "/v/snakemake/common/configfile.py", line 38, in load_configfile\n'
            '  File "/v/snakemake/common/configfile.py", line 12, in _load_configfile\n'
            "    obj = open(configpath_or_obj, encoding=\"utf-8\")\n"
            "FileNotFoundError: [Errno 2] No such file or directory: 'profiles/mine.yml'\n")
    smoke = text.replace("profiles/mine.yml", str(ROOT / "src/canarykit/resources/profiles/smok.yaml"))
    view = ConsoleView("results")
    lines = view.lines(record(text, logging.ERROR, event="error", exception="FileNotFoundError"))
    assert lines == ["canarykit: error: profiles/mine.yml: --configfile: file not found"]
    assert view.closing() == []
    assert ConsoleView("results").lines(record(smoke, logging.ERROR, event="error")) == [
        f"canarykit: error: {ROOT}/src/canarykit/resources/profiles/smok.yaml: --configfile: file not found "
        "(did you mean 'smoke.yaml'?)"]


def test_ctrl_c_is_one_line_with_the_exact_resume_command(monkeypatch) -> None:
    """Issue 29: "Ctrl-C prints 110 lines with 4 KeyboardInterrupt tracebacks and ends `next: fix what the error
    says`". One line, the command that was running (here a plain snakemake with the user's profile), no block."""
    monkeypatch.delenv("CANARYKIT_COMMAND", raising=False)
    monkeypatch.setattr("sys.argv", ["/x/.venv/bin/snakemake", "--cores", "2", "results/mine/table1.csv",
                                     "--configfile", "my study.yaml"])
    view = ConsoleView("results/mine", clock=Clock())
    _started(view, {"run_agents": 4, "all": 1})
    lines: list[str] = []
    for j in range(1, 5):
        lines += view.lines(record("", event="job_info", rule_name="run_agents", jobid=j))
    lines += view.lines(record("Terminating processes on user request, this might take some time."))
    for j in range(1, 5):
        lines += view.lines(record("Error in rule run_agents", logging.ERROR, event="job_error", rule_name="run_agents",
                                   jobid=j, log=[]))
        lines += view.lines(record("Traceback (most recent call last):\nKeyboardInterrupt", logging.ERROR, event="error"))
    lines += view.lines(record("Cancelling snakemake on user request.", logging.ERROR, event="error"))
    lines += view.closing()
    assert lines == ["canarykit: interrupted (Ctrl-C); finished work is kept. Resume with: "
                     "snakemake --cores 2 results/mine/table1.csv --configfile 'my study.yaml'"]


def test_next_names_the_users_own_study_not_make_run(tmp_path: Path, monkeypatch) -> None:
    """Issue 29: the closing line "says `next: ... then make run again`, which runs the default study"."""
    monkeypatch.setenv("CANARYKIT_COMMAND", "canarykit run --configfile profiles/mine.yaml")
    view = ConsoleView(str(tmp_path), clock=Clock())
    _started(view, {"stats": 1})
    view.lines(record("", event="job_info", rule_name="stats", jobid=1))
    view.lines(record("Error in rule stats", logging.ERROR, event="job_error", rule_name="stats", jobid=1, log=[]))
    closing = view.closing()
    assert "make run" not in "\n".join(closing) and "canarykit run --configfile profiles/mine.yaml" in closing[-1]


def test_a_silent_stage_prints_runs_rate_eta_and_spend_every_30_s(tmp_path: Path) -> None:
    """Issue 29: "Nothing prints for 4 min 22 s between `assemble` and `run_agents`". The heartbeat reads the
    agent jobs' progress lines from their logs."""
    t = {"now": 0.0}
    view = ConsoleView(str(tmp_path), clock=lambda: t["now"])
    _started(view, {"run_agents": 2, "run_index": 1})
    logs = [tmp_path / f"a{j}.log" for j in (1, 2)]
    for j, log in enumerate(logs, 1):
        view.lines(record("", event="job_info", rule_name="run_agents", jobid=j, log=[str(log)]))
    t["now"] = 29.0
    assert view.heartbeat() == [], "nothing to say before 30 s of silence"
    logs[0].write_text("[canarykit runs] 10/100 done, 1.0/s, 0 errors, spend $0.0500\n"
                       "[canarykit runs] 60/100 done, 2.0/s, 1 errors, spend $0.1200\n")
    logs[1].write_text("[canarykit runs] 40/100 done, 1.3/s, 0 errors, spend $0.0800\n")
    t["now"] = 50.0
    (line,) = view.heartbeat()
    assert "runs 100/200" in line and "2.0/s" in line and "ETA 50s" in line and "$0.20 spent" in line and "[0/3 jobs" in line
    assert view.heartbeat() == [], "the next one 30 s later"
    t["now"] = 81.0
    assert len(view.heartbeat()) == 1
    # issue 31: the progress line shows each provider lane's current concurrency and rate,
    # summed over the agent jobs still running (canarykit.agents._summary.lanes_text)
    logs[0].write_text("[canarykit runs] 70/100 done, 2.0/s, 1 errors, spend $0.1300; lanes openai 12/64 9.5/s\n")
    logs[1].write_text("[canarykit runs] 50/100 done, 1.3/s, 0 errors, spend $0.0900; lanes openai 8/64 4.5/s\n")
    t["now"] = 112.0
    line = view.heartbeat()[0]
    assert "runs 120/200" in line and "openai concurrency 20/128, 14.0 calls/s" in line
    view.lines(record("", event="job_finished", job_id=1))
    t["now"] = 143.0
    assert "openai concurrency 8/64, 4.5 calls/s" in view.heartbeat()[0], "a finished job's lane no longer counts"
