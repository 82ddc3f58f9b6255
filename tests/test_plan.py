"""``canarykit plan``: cost and power before anything runs.

The default test runs the command on a small study (30 tasks, 3 seeds, declared and
control, two models under test and the oracle) and checks what a user relies on: every
model's runs are the assembled lists, a priced model's USD is its tokens times LiteLLM's
prices, an unknown price stays unknown (and so does the total), the power table covers every
offered type, and plan.json holds what the console shows. The slow test checks the MDE
against a brute-force power simulation of the full ``stats`` path (``compute_all`` on
simulated runs tables of the same design).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
import yaml
from fakes.workflow import copy_workflow, set_param
from scipy import special

from canarykit import stats
from canarykit.study import plan as planning
from canarykit.study.config import load_params
from canarykit.types import CANARY_TYPES

SMALL = {
    "study": {"seeds": [0, 1, 2], "conditions": ["declared", "control"]},
    "ablation": {"enabled": False},
    "models": [
        {"name": "gpt-4.1", "backend": "litellm", "model": "openai/gpt-4.1", "group": "mid"},
        {"name": "mystery", "backend": "litellm", "model": "openai/no-such-model-anywhere", "group": "mid"},
        {"name": "oracle", "backend": "reference", "agent": "oracle", "group": "reference"},
    ],
}


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_workflow(tmp_path_factory.mktemp("plan") / "repo", per_difficulty=10)
    (root / "small.yaml").write_text(yaml.safe_dump(SMALL, sort_keys=False))
    return root


def _cli(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "canarykit", "plan", *args], cwd=repo, capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def planned(repo: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    proc = _cli(repo, "--configfile", "small.yaml", "--effect", "0.25", "-o", "plan.json")
    assert proc.returncode == 0, proc.stderr
    return proc, json.loads((repo / "plan.json").read_text())


def test_plan_prices_every_model_and_keeps_unknown_prices_unknown(repo: Path, planned: tuple[Any, dict[str, Any]]) -> None:
    proc, p = planned
    from canarykit.assembly.assembly import build_assemblies
    from canarykit.canaries import ingest_tools, study_pool
    from canarykit.tasks.tasks import load_tasks
    from canarykit.tools import mcp_definitions

    cfg = load_params(repo / "params.yaml", [repo / "small.yaml"])
    tools = ingest_tools(mcp_definitions(), "tools", strict=True)
    tasks = load_tasks(repo / "data/tasks.json", tools=tools.tools)
    can = cfg["canaries"]
    pool = study_pool(tools, tasks, "standard", fit=can["fit"], suffixes=can["suffixes"]["standard"],
                      control_suffixes=can["control_suffixes"]["standard"], special_cases=can["special_cases"])
    lists = build_assemblies(tasks, tools.tools, pool.canaries, "standard", ["declared", "control"], [0, 1, 2], pool.controls,
                             log=open("/dev/null", "w"))  # noqa: SIM115
    rows = {r["model"]: r for r in p["cost"]["models"]}
    assert {m: r["runs"] for m, r in rows.items()} == dict.fromkeys(("gpt-4.1", "mystery", "oracle"), len(lists))
    assert p["study"]["tasks"] == 30 and p["study"]["lists_per_model"] == len(lists)
    gpt = rows["gpt-4.1"]
    assert gpt["model_calls"] >= len(lists) and gpt["model_calls_max"] == len(lists) * cfg["agent"]["max_turns"]
    assert gpt["usd"] == pytest.approx(gpt["input_tokens"] * 2e-6 + gpt["output_tokens"] * 8e-6)  # LiteLLM: gpt-4.1
    assert rows["mystery"]["usd"] is None and rows["mystery"]["price"] == "unknown"
    assert rows["oracle"]["model_calls"] == 0 and rows["oracle"]["usd"] == 0.0
    total = p["cost"]["total"]
    assert total["usd"] is None and total["unknown_prices"] == ["mystery"]
    assert total["usd_known"] == pytest.approx(gpt["usd"])
    out = proc.stdout
    assert "unknown" in out and f"${gpt['usd']:,.2f}" in out and "MDE" in out


def test_plan_sizes_each_primary_family_on_the_design(planned: tuple[Any, dict[str, Any]]) -> None:
    proc, p = planned
    assert set(p["power"]) == {"control_effect", "trap_rate"}
    for family, fam in p["power"].items():
        types = fam["types"]
        assert types and set(types) <= set(CANARY_TYPES)
        assert fam["models_under_test"] == 2 and fam["family_size"] == 2 * len(types)
        assert fam["alpha_per_test"] == pytest.approx(0.05 / fam["family_size"])
        for t, e in types.items():
            assert 0 < e["tasks"] <= 30 and e["runs"] <= 90 and 0.0 <= e["power_at_effect"] <= 1.0
            if e["mde"] is not None:
                # the power curve is monotone with common random numbers: 0.25 is powered iff it is above the MDE
                assert (e["power_at_effect"] >= planning.POWER) == (e["mde"] <= 0.25 + 1e-9), (family, t, e)
            assert f"{t:<24}" in proc.stdout
    assert p["assumptions"]["effect"] == 0.25 and p["assumptions"]["simulations"] == planning.SIMULATIONS


def test_plan_refuses_a_bad_argument_in_one_line(repo: Path) -> None:
    proc = _cli(repo, "--icc", "1.5")
    assert proc.returncode == 2 and "--icc" in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0


# --------------------------------------------------------------------------- brute force


def _runs_table(design: planning.Design, target: str, effect: float, base: float, sd: float, rng: np.random.Generator) -> pl.DataFrame:
    """One simulated study of ``design`` through the runs table: per type, task propensities
    logit-normal (the plan's model), the canary side shifted for ``target`` only."""
    keys = sorted({(g, s) for td in design.types.values() for g, s, _ in td.pairs})
    tasks = sorted({g for g, _ in keys})
    decl: dict[tuple[str, int], dict[str, Any]] = {k: {} for k in keys}
    ctrl: dict[tuple[str, int], dict[str, Any]] = {k: {} for k in keys}
    for t, td in design.types.items():
        if not td.pairs:
            continue
        z = dict(zip(tasks, rng.standard_normal(len(tasks)), strict=True))
        mu_twin = planning.logit_mean(base, sd)
        mu_canary = planning.logit_mean(base + (effect if t == target else 0.0), sd)
        for g, s, item in td.pairs:
            decl[(g, s)][t] = (bool(rng.random() < special.expit(mu_canary + sd * z[g])), item)
            ctrl[(g, s)][t] = (bool(rng.random() < special.expit(mu_twin + sd * z[g])), "control:" + item)
    rows = []
    for (g, s) in keys:
        # the declared list offers every type; a control list per type offered (arm T) swaps T's canary for its twin
        lists = [("declared", "", decl[(g, s)])] + [("control", t, {t: v}) for t, v in ctrl[(g, s)].items()]
        for cond, arm, per in lists:
            hits = sum(v for v, _ in per.values())
            row: dict[str, Any] = {"model": "m", "group": "mid", "condition": cond, "pool": "standard", "seed": s, "task_id": g,
                                   "arm": arm, "difficulty": "easy", "tool_calls": hits + 1, "error": False, "success": True}
            row.update(canary_calls=hits if cond == "declared" else 0, control_calls=hits if cond == "control" else 0,
                       trapped=cond == "declared" and hits > 0)
            row["csr"] = row["canary_calls"] / row["tool_calls"]
            row["recovered"] = True if row["trapped"] else None
            for t in CANARY_TYPES:
                hit, item = per.get(t, (None, None))
                row[f"present_{t}"] = cond == "declared" and t in per
                row[f"trapped_{t}"] = bool(cond == "declared" and hit)
                row[f"control_present_{t}"] = cond == "control" and t in per
                row[f"control_called_{t}"] = bool(cond == "control" and hit)
                row[f"first_pick_{t}"] = hit
                row[f"item_{t}"] = item
                row[f"selection_visible_{t}"] = True if t in per else None
            rows.append(row)
    return pl.DataFrame(rows, infer_schema_length=None)


@pytest.mark.slow
def test_plan_mde_agrees_with_a_brute_force_simulation_of_the_stats_path(repo: Path) -> None:
    """At 0.8 x the plan's MDE the full stats path (compute_all on simulated runs tables)
    detects the effect (p_holm < alpha and the interval above 0) in under 80% of studies, at
    1.2 x in over 80%: the plan's MDE is right within 20%."""
    one = {**SMALL, "models": [SMALL["models"][0]]}
    (repo / "one.yaml").write_text(yaml.safe_dump(one, sort_keys=False))
    cfg = load_params(repo / "params.yaml", [repo / "one.yaml"])
    design = planning.study_design(cfg)
    target = max(design.types, key=lambda t: len(design.types[t].pairs))
    base, icc = 0.2, 0.3
    powered = planning.power_table(cfg, design, base, icc, 0.2)["control_effect"]
    mde = powered["types"][target]["mde"]
    assert mde is not None and 0.05 < mde < 0.6
    sd = planning.task_sd(base, icc)
    config = stats.StatsConfig.from_mapping(cfg["stats"], resamples=100)
    power = {}
    for factor in (0.8, 1.2):
        rng = np.random.default_rng([7, int(factor * 10)])
        hits = 0
        studies = 150
        for _ in range(studies):
            r = stats.compute_all(_runs_table(design, target, factor * mde, base, sd, rng), config)
            e = r["control_effect"]["m"][target]
            hits += int(e["p_holm"] is not None and e["p_holm"] < config.alpha and e["lo"] is not None and e["lo"] > 0)
        power[factor] = hits / studies
    print("plan MDE", mde, "brute-force power", power)
    assert power[0.8] < planning.POWER < power[1.2]


@pytest.mark.slow
def test_readme_plan_of_the_paper_grid(tmp_path: Path) -> None:
    """The README's command, as printed, on the whole task suite: the paper's eight models,
    every one priced, both primary families sized over 8 models x 6 types."""
    from fakes.readme import command, sh

    repo = copy_workflow(tmp_path / "repo", per_difficulty=40)
    set_param(repo, ["study", "seeds"], [0, 1, 2])  # params.yaml as shipped
    proc = sh(repo, command("canarykit plan --configfile src/canarykit/resources/profiles/paper.yaml").text)
    p = json.loads((repo / "plan.json").read_text())
    assert p["study"]["tasks"] == 120 and len(p["cost"]["models"]) == 8 and p["cost"]["total"]["usd"] is not None
    for fam in p["power"].values():
        assert fam["family_size"] == 48 and set(fam["types"]) == set(CANARY_TYPES)
    assert "opus-4.8" in proc.stdout and "MDE" in proc.stdout
