"""The study's layout: agent jobs, model slugs, the task limit, the run summary over jobs and
the metrics directory."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest
import yaml

from canarykit.agents.calls import INVOCATION_ENV, Budget, SpendLedger
from canarykit.study.layout import agent_job_resources, agent_jobs, metric_cells, model_slugs
from canarykit.study.pipeline import gather_runs, write_metrics
from canarykit.tasks.tasks import load_tasks, select_tasks

ROOT = Path(__file__).resolve().parents[1]
MODELS = [
    {"name": "oracle", "backend": "reference", "agent": "oracle"},
    {"name": "gpt/4.1", "backend": "litellm", "model": "openai/gpt-4.1", "provider": "openai"},
    {"name": "gpt:4.1", "backend": "ollama", "model": "qwen3:8b"},
]


def test_one_job_per_cell_of_a_model_and_one_per_reference_agent() -> None:
    jobs = agent_jobs(MODELS, {"standard": ["baseline", "declared"], "subtle": ["declared"]}, [0, 1])
    names = [(j.slug, j.name) for j in jobs]
    assert names[0] == ("oracle", "all") and len(jobs[0].cells) == 6
    assert ("gpt_4.1", "standard-baseline-0") in names and ("gpt_4.1", "subtle-declared-1") in names
    assert len(names) == len(set(names)) == 1 + 6 + 6
    assert jobs[0].pools() == {"standard": ["baseline", "declared"], "subtle": ["declared"]}
    slugs = model_slugs(MODELS)
    assert len(set(slugs.values())) == 3 and slugs["gpt/4.1"] == "gpt_4.1" and slugs["gpt:4.1"].startswith("gpt_4.1-")


def test_job_resources_follow_the_backend() -> None:
    agent = {"concurrency": 8, "provider_concurrency": {"openai": 4}, "workers": None}
    ref = agent_job_resources(MODELS[0], agent, 1440)
    assert ref["llm_calls"] == 0 and ref["gpu"] == 0 and ref["_threads"] == 1
    hosted = agent_job_resources(MODELS[1], agent, 120)
    assert hosted["llm_calls"] == hosted["llm_openai"] == 4 and hosted["gpu"] == 0 and hosted["_threads"] == 2
    local = agent_job_resources(MODELS[2], agent, 120)
    assert local["gpu"] == 1 and local["llm_ollama"] == 8 and local["_threads"] == 1


def test_limit_tasks_keeps_every_difficulty_in_suite_order() -> None:
    tasks = load_tasks(ROOT / "data/tasks.json")
    few = select_tasks(tasks, 5)
    assert len(few) == 5 and {t.difficulty for t in few} == {"easy", "medium", "hard"}
    assert [tasks.index(t) for t in few] == sorted(tasks.index(t) for t in few)
    assert select_tasks(tasks, None) == tasks


def _summary(path: Path, invocation: str, executed: int, total: int = 10, failed: int = 0) -> str:
    per = {"executed": executed, "reused": total - executed - failed, "failed": failed, "total": total,
           "backend_calls": executed * 3, "failures": {"RateLimitError (429)": failed} if failed else {}}
    path.write_text(json.dumps({"per_model": {"m": per}, "invocation": invocation, "elapsed_s": 1.0}))
    return str(path)


def test_run_summary_counts_jobs_that_did_not_run_now_as_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from canarykit.agents.runner import INDEX_SCHEMA

    monkeypatch.setenv(INVOCATION_ENV, "now")
    idx = tmp_path / "i.parquet"
    pl.DataFrame(schema=INDEX_SCHEMA).write_parquet(idx)
    summaries = [_summary(tmp_path / "a.json", "now", 4), _summary(tmp_path / "b.json", "earlier", 10)]
    doc = gather_runs([str(idx)], summaries, str(tmp_path / "store"), str(tmp_path / "index.parquet"), str(tmp_path / "s.json"))
    assert doc["executed"] == 4 and doc["reused"] == 16 and doc["total"] == 20 and doc["backend_calls"] == 12
    assert doc["jobs"] == 2 and doc["jobs_run"] == 1


def test_metrics_directory_is_rewritten_whole(tmp_path: Path) -> None:
    runs = pl.DataFrame({
        "model": ["a", "a"], "condition": ["declared", "declared"], "pool": ["standard", "subtle"],
        "seed": [0, 0], "task_id": ["t", "t"], "difficulty": ["easy", "easy"], "tool_calls": [2, 2],
        "canary_calls": [1, 0], "csr": [0.5, 0.0], "trapped": [True, False], "recovered": [False, False],
        "success": [True, True], "error": [False, False], "zero_call": [False, False], "truncated": [False, False],
    })
    runs.write_parquet(tmp_path / "runs.parquet")
    stale = tmp_path / "metrics/a/full.json"
    stale.parent.mkdir(parents=True)
    stale.write_text("{}")
    cfg = {"canaries": {"pool": "standard"}, "study": {"conditions": ["declared"]},
           "ablation": {"enabled": True, "condition": "declared", "pool": "subtle"}}
    written = write_metrics(str(tmp_path / "runs.parquet"), metric_cells(cfg), {"a": "a"}, str(tmp_path / "metrics"))
    assert sorted(Path(p).name for p in written) == ["ablation.json", "declared.json"] and not stale.exists()
    assert json.loads((tmp_path / "metrics/a/declared.json").read_text())["csr"] == 0.5


def test_a_budget_holds_over_the_jobs_of_one_invocation(tmp_path: Path) -> None:
    one = Budget(1.0, SpendLedger(tmp_path, "inv", "job-1", refresh_s=0))
    two = Budget(1.0, SpendLedger(tmp_path, "inv", "job-2", refresh_s=0))
    one.add(0.6)
    assert not two.exhausted
    two.add(0.5)
    assert two.exhausted and one.exhausted  # 1.1 spent over both jobs
    other = Budget(1.0, SpendLedger(tmp_path, "another-invocation", "job-1", refresh_s=0))
    assert not other.exhausted


# ---------------------------------------------------------------------------- resources over jobs

TWO_PROVIDERS = [
    {"name": "oracle", "backend": "reference", "agent": "oracle", "group": "reference"},
    {"name": "a-one", "backend": "litellm", "model": "openai/x", "provider": "alpha", "group": "hosted"},
    {"name": "a-two", "backend": "litellm", "model": "openai/y", "provider": "alpha", "group": "hosted"},
    {"name": "b-one", "backend": "litellm", "model": "openai/z", "provider": "beta", "group": "hosted"},
    {"name": "q", "backend": "ollama", "model": "qwen3:8b", "group": "small"},
]


def _planned_jobs(text: str, rule: str) -> dict[str, dict[str, str]]:
    """``model/cell`` -> the resources a dry run plans for each job of ``rule``."""
    jobs: dict[str, dict[str, str]] = {}
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", text):
        if not re.match(rf"(?:local)?rule {rule}:", block.strip()):
            continue
        wc = dict(kv.split("=", 1) for kv in re.search(r"wildcards: (.*)", block).group(1).split(", "))
        res = dict(kv.split("=", 1) for kv in re.search(r"resources: (.*)", block).group(1).split(", "))
        threads = re.search(r"threads: (\d+)", block)
        res["threads"] = threads.group(1) if threads else "1"
        jobs[f"{wc['model']}/{wc['cell']}"] = res
    return jobs


@pytest.mark.slow  # whole workflow or server start-ups: over ten seconds on a loaded machine
def test_a_dry_run_plans_each_job_with_its_provider_share_and_gpu(tmp_path: Path) -> None:
    from fakes.workflow import copy_workflow, run, set_param

    repo = copy_workflow(tmp_path / "repo", per_difficulty=1, models=())
    set_param(repo, ["models"], [{**m, "api_base": "http://127.0.0.1:9/v1"} if m["backend"] == "litellm" else m
                                 for m in TWO_PROVIDERS])
    set_param(repo, ["agent", "provider_concurrency"], {"beta": 3})
    set_param(repo, ["study", "conditions"], ["baseline", "declared"])
    set_param(repo, ["ablation", "enabled"], False)
    out = run(repo, "snakemake", "-n", "results/runs/index.parquet").stdout
    jobs = _planned_jobs(out, "run_agents")
    # a job per cell of each model (2 conditions x 1 seed), one for the reference agent's grid
    assert sorted(jobs) == sorted(["oracle/all", *(f"{m}/standard-{c}-0" for m in ("a-one", "a-two", "b-one", "q")
                                                  for c in ("baseline", "declared"))])
    for cell in ("baseline", "declared"):
        a, b, q = (jobs[f"{m}/standard-{cell}-0"] for m in ("a-one", "b-one", "q"))
        # each job holds its own provider's share, none of another's
        assert (a["llm_alpha"], a["llm_beta"], a["gpu"]) == ("8", "0", "0")
        assert (b["llm_alpha"], b["llm_beta"], b["llm_calls"]) == ("0", "3", "3")  # capped by provider_concurrency
        assert (q["gpu"], q["llm_ollama"], q["llm_alpha"]) == ("1", "8", "0")  # the local model holds the GPU
    ref = jobs["oracle/all"]
    assert ref["llm_calls"] == ref["llm_alpha"] == ref["gpu"] == "0"


def test_default_limits_let_different_providers_and_the_gpu_job_run_together() -> None:
    from canarykit.study.config import validate_params
    from canarykit.study.layout import default_limits

    cfg = yaml.safe_load((ROOT / "params.yaml").read_text())
    cfg["models"] = TWO_PROVIDERS
    cfg["agent"]["provider_concurrency"] = {"beta": 3}
    cfg["judge"]["primary"] = {"kind": "llm", "model": "openai/j", "provider": "judgeco"}
    cfg = validate_params(cfg, "params.yaml")
    limits = default_limits(cfg)
    # per provider: the listed limit, else one job's share; no cap over all providers, none
    # for the model served on the job's node (the gpu bounds it)
    assert limits == {"llm_alpha": 8, "llm_beta": 3, "llm_judgeco": 8}
    agent = cfg["agent"]
    held = [agent_job_resources(m, agent, 120) for m in TWO_PROVIDERS if m["name"] in ("a-one", "b-one", "q")]
    for name, limit in limits.items():  # one job of alpha, one of beta and the GPU job fit at once
        assert sum(r.get(name, 0) for r in held) <= limit, name
    # two jobs of one provider do not: its limit holds over all its jobs
    a_one, a_two = (agent_job_resources(m, agent, 120) for m in TWO_PROVIDERS[1:3])
    assert a_one["llm_alpha"] + a_two["llm_alpha"] > limits["llm_alpha"]


def test_a_stateful_mcp_environment_runs_each_models_grid_in_one_sequential_job() -> None:
    grid = {"standard": ["baseline", "declared"], "subtle": ["declared"]}
    mcp = {"kind": "mcp", "servers": [{"name": "s", "command": ["srv"]}], "stateful": True}
    jobs = agent_jobs(MODELS, grid, [0, 1], mcp)
    assert [(j.slug, j.name, len(j.cells)) for j in jobs] == [("oracle", "all", 6), ("gpt_4.1", "all", 6),
                                                             (model_slugs(MODELS)["gpt:4.1"], "all", 6)]
    agent = {"concurrency": 8, "provider_concurrency": {}, "workers": 4}
    seq = agent_job_resources(MODELS[1], agent, 720, sequential=True)
    assert seq["llm_openai"] == seq["llm_calls"] == 1 and seq["_threads"] == 1
    # read-only servers (stateful: false) and the built-in tools: a job per cell, runs in parallel
    assert len(agent_jobs(MODELS, grid, [0, 1], {**mcp, "stateful": False})) == 1 + 6 + 6
    assert len(agent_jobs(MODELS, grid, [0, 1], {"kind": "builtin"})) == 1 + 6 + 6


@pytest.mark.slow  # a real run: about 80 s on 2 loaded cores
def test_jobs_of_two_providers_run_at_once_under_the_default_limits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real run: each provider's gateway holds its first reply until the other gateway has
    been called, so the runs finish promptly only when Snakemake started both jobs together."""
    import threading

    from fakes.openai_server import FakeOpenAIServer, simple_agent
    from fakes.workflow import copy_workflow, run, set_param

    monkeypatch.setenv("CANARYKIT_TEST_GW_KEY", "gw-key-not-secret")
    called = {"alpha": threading.Event(), "beta": threading.Event()}
    met: dict[str, bool] = {}

    def gateway(me: str, other: str):  # noqa: ANN202
        def handler(body, headers, n):  # noqa: ANN001, ANN202
            called[me].set()
            if n == 0:
                met[me] = called[other].wait(timeout=90)
            return simple_agent(body, headers, n)
        return handler

    with FakeOpenAIServer(gateway("alpha", "beta")) as ga, FakeOpenAIServer(gateway("beta", "alpha")) as gb:
        repo = copy_workflow(tmp_path / "repo", per_difficulty=1, models=())
        set_param(repo, ["models"], [
            {"name": "a", "backend": "litellm", "model": "openai/x", "api_base": ga.url, "provider": "alpha",
             "api_key_env": "CANARYKIT_TEST_GW_KEY", "group": "hosted"},
            {"name": "b", "backend": "litellm", "model": "openai/y", "api_base": gb.url, "provider": "beta",
             "api_key_env": "CANARYKIT_TEST_GW_KEY", "group": "hosted"},
        ])
        set_param(repo, ["study", "conditions"], ["baseline"])
        set_param(repo, ["study", "limit_tasks"], 1)
        set_param(repo, ["ablation", "enabled"], False)
        cfg = yaml.safe_load((repo / "params.yaml").read_text())
        cfg["agent"].update(workers=1, timeout_s=120, retries={"max_attempts": 1, "base_delay_s": 0.01, "max_delay_s": 0.05})
        (repo / "params.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
        targets = ["results/runs/jobs/a/standard-baseline-0.parquet", "results/runs/jobs/b/standard-baseline-0.parquet"]
        run(repo, "snakemake", "--cores", "2", "--scheduler", "greedy", *targets)
    assert met == {"alpha": True, "beta": True}  # each gateway was called while the other's job was running
    for t in targets:  # a job's run summary sits beside its log (rules/common.smk: JOB_SUMMARY)
        summary = json.loads((repo / t.replace("runs/jobs/", "logs/runs/").replace(".parquet", ".json")).read_text())
        assert summary["failed"] == 0 and summary["total"] == 1


def test_one_stage_one_name_in_rules_scripts_and_the_package() -> None:
    """Every rule of rules/<stage>.smk (but common.smk) runs scripts/<stage>/<step>.py; no
    script stands loose in scripts/, and each stage names a package of canarykit."""
    from canarykit.study.dvcyaml import rule_scripts

    root = Path(__file__).resolve().parents[1]
    scripts = rule_scripts(root)
    for smk in sorted((root / "rules").glob("*.smk")):
        if smk.stem == "common":
            continue
        assert (root / "src/canarykit" / smk.stem / "__init__.py").is_file(), smk.stem
        rules = re.findall(r"^rule (\w+):", smk.read_text(), re.M)
        for rule in rules:
            if rule in scripts:
                assert scripts[rule].startswith(f"scripts/{smk.stem}/"), (smk.name, rule, scripts[rule])
    assert not list((root / "scripts").glob("*.py")), "a script outside its stage's directory"
    used = set(scripts.values())
    assert {p.relative_to(root).as_posix() for p in (root / "scripts").rglob("*.py")} == used, "a script no rule runs"
