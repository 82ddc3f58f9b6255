"""``canarykit plan``: what a study will cost and what it can detect, before anything runs.

``canarykit plan [--configfile F ...] [--base-rate R] [--icc RHO] [--effect D] [-o plan.json]``
reads params.yaml (with each ``--configfile`` merged over it, as Snakemake does), builds the
study's tool lists with the workflow's own code (the environment's tools, the canary pools
of ``canaries.generator: offline``, :func:`canarykit.assembly.assembly.build_assemblies` for every
pool, condition and seed) and prints two tables; ``-o`` writes the same as JSON.

**Cost, per model.** Runs (every model runs every list), model calls (the canonical plan's
steps plus the final answer per run, :func:`canarykit.study.config.turns_needed`, capped at
``agent.max_turns``; ``calls_max`` if every run used the limit), input and output tokens
and USD. Input tokens per call: the system message, the task prompt and the offered tool
definitions (their JSON, measured on the real lists, at 4 characters a token) plus the
conversation so far (each earlier turn adds a tool call and its result, assumed
:data:`CALL_TOKENS` and :data:`RESULT_TOKENS`); output: a tool call per turn and an answer.
Prices come from LiteLLM's own table (the ``model_prices_and_context_window`` file that
``litellm`` ships and uses offline; read directly, because importing litellm costs seconds):
a model it does not list is priced ``unknown`` (never 0), and so is the total; Ollama and
local models cost nothing; reference agents make no model call. LLM judges (``judge.primary``,
``judge.cross`` of kind ``llm``) cost one call per run judged.

**Power** and the **known answers**' power: :mod:`canarykit.study.power`; the design both
read: :mod:`canarykit.study.design`.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError
from .design import (
    ANSWER_TOKENS,
    CALL_TOKENS,
    CHARS_PER_TOKEN,
    RESULT_TOKENS,
    VERDICT_TOKENS,
    Design,
    TypeDesign,
    study_design,
)
from .power import (
    CURVE_STEP,
    DEFAULTS,
    POWER,
    SIMULATIONS,
    SWAP_DRAWS,
    Effects,
    design_from_runs,
    known_answer_power,
    level_sds,
    logit_mean,
    power_table,
)

LOCAL_PROVIDERS = ("ollama", "ollama_chat")

# the design and the power simulation, re-exported: ``canarykit.study.plan`` is the command's face
__all__ = ["CURVE_STEP", "DEFAULTS", "POWER", "SIMULATIONS", "SWAP_DRAWS", "Design", "Effects", "TypeDesign",
           "design_from_runs", "known_answer_power", "level_sds", "logit_mean", "plan", "plan_command", "plan_lines",
           "power_table", "study_design"]


# --------------------------------------------------------------------------- prices and cost


def price_table() -> dict[str, Any]:
    """LiteLLM's own price table (the JSON file the package ships), read without importing litellm."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        return {}
    path = Path(spec.origin).parent / "model_prices_and_context_window_backup.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def price(model: str | None, table: Mapping[str, Any]) -> tuple[float, float] | None:
    """(input, output) USD per token of a LiteLLM model string; None when the table lacks it.

    LiteLLM's lookup: the model string as given, else without its ``provider/`` prefix when
    the entry belongs to that provider (``anthropic/claude-opus-4-8`` -> ``claude-opus-4-8``)."""
    if not model:
        return None
    entry = table.get(model)
    if entry is None and "/" in model:
        provider, rest = model.split("/", 1)
        cand = table.get(rest)
        if cand is not None and str(cand.get("litellm_provider", "")).split("-")[0] == provider:
            entry = cand
    if not entry or entry.get("input_cost_per_token") is None or entry.get("output_cost_per_token") is None:
        return None
    return float(entry["input_cost_per_token"]), float(entry["output_cost_per_token"])


def _usd(p: tuple[float, float] | None, tin: int, tout: int) -> float | None:
    return None if p is None else p[0] * tin + p[1] * tout


def cost_table(cfg: Mapping[str, Any], d: Design) -> dict[str, Any]:
    """Per model (and LLM judge): runs, model calls, tokens and USD (module docstring)."""
    table = price_table()
    rows: list[dict[str, Any]] = []
    for m in cfg["models"]:
        backend = m.get("backend")
        model = m.get("model")
        row: dict[str, Any] = {"model": m["name"], "backend": backend, "group": m.get("group"), "runs": d.runs_per_model}
        if backend == "reference":
            row.update(model_calls=0, model_calls_max=0, input_tokens=0, output_tokens=0, usd=0.0, price="no model")
        else:
            local = backend in ("ollama", "local") or str(model or "").split("/")[0] in LOCAL_PROVIDERS
            p = (0.0, 0.0) if local else price(model, table)
            row.update(model_calls=d.calls, model_calls_max=d.calls_max, input_tokens=d.input_tokens,
                       output_tokens=d.output_tokens, usd=_usd(p, d.input_tokens, d.output_tokens),
                       price="local (no API charge)" if local else ("LiteLLM price table" if p else "unknown"))
        rows.append(row)
    judges: list[dict[str, Any]] = []
    n_llm = sum(1 for m in cfg["models"] if m.get("backend") != "reference")
    judged_runs = d.runs_per_model * len(cfg["models"])
    for role in ("primary", "cross"):
        j = (cfg.get("judge") or {}).get(role) or {}
        if j.get("kind") != "llm":
            continue
        p = price(j.get("model"), table)
        template = 0
        tpath = Path((cfg.get("judge") or {}).get("template") or "")
        if tpath.is_file():
            template = len(tpath.read_text(encoding="utf-8")) // CHARS_PER_TOKEN
        tin = judged_runs * template + d.judge_input_tokens * len(cfg["models"])
        tout = judged_runs * VERDICT_TOKENS
        judges.append({"judge": role, "model": j.get("model"), "calls": judged_runs, "input_tokens": tin, "output_tokens": tout,
                       "usd": _usd(p, tin, tout), "price": "LiteLLM price table" if p else "unknown"})
    every = rows + judges
    unknown = [r.get("model") if "judge" not in r else f"judge.{r['judge']}" for r in every if r["usd"] is None]
    known = sum(r["usd"] for r in every if r["usd"] is not None)
    return {
        "models": rows, "judges": judges,
        "total": {"runs": d.runs_per_model * len(cfg["models"]), "model_calls": d.calls * n_llm,
                  "usd": None if unknown else known, "usd_known": known, "unknown_prices": unknown},
        "assumptions": {"chars_per_token": CHARS_PER_TOKEN, "tool_call_tokens": CALL_TOKENS,
                        "tool_result_tokens": RESULT_TOKENS, "answer_tokens": ANSWER_TOKENS, "verdict_tokens": VERDICT_TOKENS,
                        "calls_per_run": "plan steps + final answer (agent.max_turns for calls_max)"},
    }



# --------------------------------------------------------------------------- the command


def plan(configfiles: Sequence[str] = (), *, base_rate: float = DEFAULTS["base_rate"], icc: float = DEFAULTS["icc"],
         effect: float = DEFAULTS["effect"], params: str = "params.yaml", sims: int = SIMULATIONS,
         icc_tool: float = DEFAULTS["icc_tool"], icc_wording: float = DEFAULTS["icc_wording"],
         blind_rate: float | None = None) -> dict[str, Any]:
    """The plan of the study params.yaml (+ ``configfiles``) describes (module docstring)."""
    from .config import load_params

    checks = [("--base-rate", base_rate, 0.0, 1.0), ("--icc", icc, 0.0, 1.0), ("--effect", effect, 0.0, 1.0),
              ("--icc-tool", icc_tool, -1e-12, 1.0), ("--icc-wording", icc_wording, -1e-12, 1.0)]
    if blind_rate is not None:
        checks.append(("--blind-rate", blind_rate, 0.0, 1.0))
    for name, value, lo, hi in checks:
        if not lo < value < hi:
            raise InputError("command line", name, f"must be strictly between {lo:g} and {hi:g}, got {value}")
    if not Path(params).is_file():
        raise InputError(params, "-", "params file not found (run plan from the study's directory)")
    t0, c0 = time.perf_counter(), time.process_time()
    cfg = load_params(params, list(configfiles))
    d = study_design(cfg)
    cost = cost_table(cfg, d)
    if icc + icc_tool + icc_wording >= 1.0:
        raise InputError("command line", "--icc", f"the ICCs of tasks, tools and wordings add up to {icc + icc_tool + icc_wording:g}: "
                         "they must add up to less than 1")
    power = power_table(cfg, d, base_rate, icc, effect, sims, icc_tool=icc_tool, icc_wording=icc_wording, blind_rate=blind_rate)
    known = known_answer_power(cfg, d, sims)
    return {
        "study": {"params": params, "configfiles": list(configfiles), "tasks": d.tasks, "seeds": d.seeds, "grid": d.grid,
                  "lists_per_model": d.lists, "models": len(cfg["models"]), "output_dir": cfg["study"]["output_dir"]},
        "assumptions": {"base_rate": base_rate, "icc": icc, "icc_tool": icc_tool, "icc_wording": icc_wording,
                        "blind_rate": base_rate if blind_rate is None else blind_rate,
                        "effect": effect, "power": POWER, "simulations": sims,
                        "variants": int(cfg["canaries"].get("variants") or 1),
                        "outcome": "every run makes a call into the family (an opportunity); canary and twin drawn "
                                   "independently; task, tool and wording effects at the ICCs",
                        "notes": d.notes},
        "cost": cost, "power": power, "known_answers": known, "seconds": round(time.perf_counter() - t0, 2),
        "cpu_seconds": round(time.process_time() - c0, 2),
    }


def _money(x: float | None) -> str:
    return "unknown" if x is None else f"${x:,.2f}"


def plan_lines(p: Mapping[str, Any]) -> list[str]:
    """The plan as the console prints it."""
    s, c, a = p["study"], p["cost"], p["assumptions"]
    lines = [f"plan: {s['tasks']} tasks x {len(s['seeds'])} seeds, {s['lists_per_model']:,} tool lists per model "
             f"({', '.join(f'{pool}: {len(cs)} conditions' for pool, cs in s['grid'].items())}), {s['models']} models", "",
             f"{'model':<32} {'runs':>7} {'calls':>9} {'in tokens':>13} {'out tokens':>11} {'USD':>12}  price"]
    for r in c["models"]:
        lines.append(f"{r['model']:<32} {r['runs']:>7,} {r['model_calls']:>9,} {r['input_tokens']:>13,} "
                     f"{r['output_tokens']:>11,} {_money(r['usd']):>12}  {r['price']}")
    for j in c["judges"]:
        lines.append(f"{'judge.' + j['judge']:<32} {'':>7} {j['calls']:>9,} {j['input_tokens']:>13,} "
                     f"{j['output_tokens']:>11,} {_money(j['usd']):>12}  {j['model']} ({j['price']})")
    t = c["total"]
    lines.append(f"{'total':<32} {t['runs']:>7,} {t['model_calls']:>9,} {'':>13} {'':>11} {_money(t['usd']):>12}"
                 + (f"  (known part {_money(t['usd_known'])}; unknown: {', '.join(t['unknown_prices'])})" if t["usd"] is None else ""))
    lines += ["", f"power: base rate {a['base_rate']:g}, ICC task {a['icc']:g} / tool {a['icc_tool']:g} / wording "
                  f"{a['icc_wording']:g}, {a['variants']} wordings per type, effect {a['effect']:g}, {a['simulations']} simulated "
                  f"studies per point; MDE (lured) at 80% power; blind at rate {a['blind_rate']:g} on both sides"]
    for family, fam in p["power"].items():
        if "types" not in fam:
            continue
        lines.append(f"  {family} (Holm family of {fam['family_size']}: alpha {fam['alpha']:g} -> {fam['alpha_per_test']:.4f} "
                     f"per test){' - ' + fam['note'] if fam.get('note') else ''}")
        for t, e in fam["types"].items():
            mde = "not reachable" if e["mde"] is None else f"{e['mde']:.3f}"
            if family == "trap_rate" and e.get("mde_rate") is not None:
                mde += f" (rate {e['mde_rate']:.3f})"
            blind = f"  power of blind: {e['power_blind']:.2f}" if "power_blind" in e else ""
            lines.append(f"    {t:<24} {e['runs']:>5} runs {e['tasks']:>4} tasks {e['items']:>4} items   MDE {mde:<20} "
                         f"power at {a['effect']:g}: {e['power_at_effect']:.2f}{blind}")
    k = p.get("known_answers") or {}
    if k.get("answers"):
        weak = sorted(k["answers"], key=lambda r: r["power"])[:3]
        shown = ", ".join(f"{r['model']} {r['type']} {r['expected']} {r['power']:.2f}" for r in weak)
        lines.append(f"  known answers: {len(k['answers'])}, each recovered with power >= {k['min']:.2f} (weakest: {shown})")
    lines += [f"  note: {n}" for n in a["notes"]]
    lines.append(f"planned in {p['seconds']:.1f} s ({p['cpu_seconds']:.1f} s CPU)")
    return lines


def plan_command(configfiles: Sequence[str], base_rate: float, icc: float, effect: float, output: str | None, *,
                 icc_tool: float = DEFAULTS["icc_tool"], icc_wording: float = DEFAULTS["icc_wording"],
                 blind_rate: float | None = None) -> int:
    """``canarykit plan``: print the plan; ``output``: write it as JSON too. Returns 0."""
    from ..store.jsonio import write_json

    p = plan(configfiles, base_rate=base_rate, icc=icc, effect=effect, icc_tool=icc_tool, icc_wording=icc_wording,
             blind_rate=blind_rate)
    for line in plan_lines(p):
        print(line)
    if output:
        write_json(output, p)
        print(f"plan: written to {output}", file=sys.stderr)
    return 0
