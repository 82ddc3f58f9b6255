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


def _runs_table(design: planning.Design, effects: dict[str, float], base: float, sds: tuple[float, float, float],
               rng: np.random.Generator) -> pl.DataFrame:
    """One simulated study of ``design`` through the runs table: per type, task, tool and
    wording effects on the logit scale (the plan's model, drawn here independently of it),
    the canary side shifted by ``effects[T]`` on type T, canary and twin drawn independently."""
    keys = sorted({(g, s) for td in design.types.values() for g, s, _ in td.pairs})
    decl: dict[tuple[str, int], dict[str, Any]] = {k: {} for k in keys}
    ctrl: dict[tuple[str, int], dict[str, Any]] = {k: {} for k in keys}
    total = float(np.sqrt(sum(x * x for x in sds)))
    for t, td in design.types.items():
        if not td.pairs:
            continue
        items = stats.item_key([i for *_, i in td.pairs])
        levels = [np.array([g for g, _, _ in td.pairs]), stats.tool_of(items), stats.wording_of(items)]
        shift = np.zeros(len(td.pairs))
        for sd, lev in zip(sds, levels, strict=True):
            codes = np.unique(lev, return_inverse=True)[1]
            shift += sd * rng.standard_normal(int(codes.max()) + 1)[codes]
        p_twin = special.expit(planning.logit_mean(base, total) + shift)
        p_canary = special.expit(planning.logit_mean(base + effects[t], total) + shift)
        for (g, s, item), pc, pt in zip(td.pairs, p_canary, p_twin, strict=True):
            decl[(g, s)][t] = (bool(rng.random() < pc), item)
            ctrl[(g, s)][t] = (bool(rng.random() < pt), "control:" + item)
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
def test_plan_mde_agrees_with_a_brute_force_simulation_of_the_stats_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On the default design (params.yaml's tasks, seeds and K wordings per type; one model
    under test), for all six types, the brute-force MDE of the stats path (the runs table ->
    ``build_study`` -> ``control_effect``, on simulated studies with task, tool and wording
    effects; detected: the randomisation p and the t p both below alpha / m with delta > 0,
    Holm's first step, the plan's rule) is within 0.02 of the plan's: the brute-force power
    at the plan's MDE, read through the slope of the plan's power curve there, puts the
    brute-force MDE within 0.02 of it (Monte Carlo se about 0.006 from 240 studies)."""
    from fakes.study import ROOT

    (tmp_path / "one.yaml").write_text(yaml.safe_dump({"study": {"conditions": ["declared", "control"]}, "ablation": {"enabled": False},
                                                       "stats": {"primary": ["control_effect"]},
                                                       "models": [SMALL["models"][0]]}, sort_keys=False))
    monkeypatch.chdir(ROOT)
    cfg = load_params(ROOT / "params.yaml", [tmp_path / "one.yaml"])
    design = planning.study_design(cfg)
    base, icc, icc_tool, icc_word = 0.2, 0.3, 0.05, 0.05
    # 600 simulated studies a point: the MDE's Monte Carlo se (about 0.015 at 300 where the power
    # curve is flat, granularity's) below the tolerance
    fam = planning.power_table(cfg, design, base, icc, 0.2, sims=600, icc_tool=icc_tool, icc_wording=icc_word)["control_effect"]
    mdes = {t: e["mde"] for t, e in fam["types"].items()}
    assert set(mdes) == set(CANARY_TYPES) and all(m is not None for m in mdes.values()), mdes
    assert all(e["wordings"] == cfg["canaries"]["variants"] for e in fam["types"].values())  # the pool with its variants
    sds = planning.level_sds(base, planning.Effects(icc, icc_tool, icc_word))
    config = stats.StatsConfig.from_mapping(cfg["stats"], resamples=planning.SWAP_DRAWS)
    a = config.alpha / fam["family_size"]
    studies = 240
    hits = dict.fromkeys(mdes, 0)
    rng = np.random.default_rng(11)
    for _ in range(studies):
        # every type carries its own effect (its plan MDE): the types are separate entries
        effects = stats.control_effect(stats.build_study(_runs_table(design, mdes, base, sds, rng), config))["m"]
        for t in mdes:
            e = effects[t]
            hits[t] += int(e["delta"] is not None and e["delta"] > 0 and e["p"] is not None and e["p"] < a
                           and e["p_t"] is not None and e["p_t"] < a)
    brute = {}
    for t, mde in mdes.items():
        # the brute-force power at the plan's MDE, turned into an MDE by the slope of the plan's
        # power curve there (its points at the MDE -/+ 0.03)
        curve = {round(x, 6): pw for x, pw in fam["types"][t]["curve"]}
        lo, hi = round(mde - planning.CURVE_STEP, 6), round(mde + planning.CURVE_STEP, 6)
        slope = (curve[hi] - curve[lo]) / (hi - lo)
        assert slope > 0, (t, curve)
        brute[t] = mde + (planning.POWER - hits[t] / studies) / slope
    print("plan MDE", {t: round(m, 3) for t, m in mdes.items()}, "brute-force MDE", {t: round(m, 3) for t, m in brute.items()})
    for t in mdes:
        assert abs(brute[t] - mdes[t]) <= 0.02, (t, mdes[t], brute[t])


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
