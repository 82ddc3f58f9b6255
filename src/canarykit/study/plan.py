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

**Power, per primary estimand** (``stats.primary``). Simulated with the study's own tests
(:func:`canarykit.stats.paired_deltas`, the randomisation test of sides, the words' tests of
:mod:`canarykit.stats._equivalence` and the primary trap-rate test, with the study's
``stats.bootstrap_unit``, ``alpha`` and Holm family) on its real design: per canary type,
the (task, seed) pairs and canary items the assembled lists offer, the pool built with its
``canaries.variants`` wordings drawn with ``canaries.wording_seed`` (the wording factor has
K levels, as in the study). Outcomes: each run's propensity is logit-normal with a task, a
tool (the real tool a canary shadows) and a wording (the bank entry, shared by every tool)
effect (:class:`Effects`: ``--icc``, ``--icc-tool``, ``--icc-wording``, the outcome-scale
correlation of two runs sharing the level, at the base rate), centred so that propensities
average ``--base-rate``; the canary side shifts it on the logit scale so that the mean
difference is the effect. Canary and twin are drawn independently (two sampled runs). Every
run is assumed to make a call into the family (an opportunity). ICCs from a pilot's
stats.json are not read (stats.json holds no variance components): give them as flags.

- ``control_effect`` (per type): the effect is ``delta`` = canary - twin first-pick rate
  over the pairs offered both; detected when the study would say ``lured``: the
  randomisation p and the t p both below ``alpha / m`` (Holm's first step with the other
  ``m - 1`` members null, ``m`` = models under test x types offered) and delta > 0; never
  with fewer than ``stats.min_clusters`` (default 10) tasks. ``power_blind``: the power of
  ``blind`` (TOST within the margin and the twin's rate above it, both below ``alpha / m``)
  when both sides are taken at ``--blind-rate``.
- ``trap_rate`` (per type): the effect is the trap rate's excess over
  ``stats.equivalence_margin``; detected when its one-sided test rejects at ``alpha / m``.

The MDE is the smallest effect detected with 80% power (common random numbers over the
effect, bisection to 1/256 of the range; ``curve``: every effect evaluated, with the MDE
-/+ :data:`CURVE_STEP`); ``power`` is the share detected at ``--effect``. Each point is
:data:`SIMULATIONS` simulated studies (Monte Carlo se about 0.02 at 0.8).

**Known answers** (:func:`known_answer_power`): per reference agent with a known answer and
type, the probability the design recovers it.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import optimize, special

from ..errors import InputError
from ..types import CANARY_TYPES

#: Tokens assumed for what the tool lists do not tell: a tool call, a tool result, a final
#: answer, a judge's verdict; characters per token of the measured texts.
CALL_TOKENS, RESULT_TOKENS, ANSWER_TOKENS, VERDICT_TOKENS, CHARS_PER_TOKEN = 40, 200, 150, 200, 4
SIMULATIONS = 300
#: Swap patterns of the randomisation test per simulated study (p resolution 1/2001).
SWAP_DRAWS = 2000
#: The power curve is also evaluated this far either side of the MDE (its slope there).
CURVE_STEP = 0.03
POWER = 0.8
DEFAULTS = {"base_rate": 0.2, "icc": 0.3, "effect": 0.15, "icc_tool": 0.05, "icc_wording": 0.05}
LOCAL_PROVIDERS = ("ollama", "ollama_chat")


# --------------------------------------------------------------------------- the design


@dataclass
class TypeDesign:
    """One canary type's opportunities in the primary pool: the control-effect pairs (task,
    seed, canary item) and the trap-rate runs (task, seed, item) of ``declared``."""

    pairs: list[tuple[str, int, str]] = field(default_factory=list)
    runs: list[tuple[str, int, str]] = field(default_factory=list)


@dataclass
class Design:
    """What :func:`study_design` measured on the assembled lists."""

    lists: int
    runs_per_model: int
    calls: int
    calls_max: int
    input_tokens: int
    output_tokens: int
    judge_input_tokens: int
    grid: dict[str, list[str]]
    tasks: int
    seeds: list[int]
    types: dict[str, TypeDesign]
    notes: list[str]


def _tools(cfg: Mapping[str, Any]) -> Any:
    from ..canaries import ingest_tools
    from ..mcp.environments import is_mcp
    from ..store.jsonio import read_json_input
    from ..tools import mcp_definitions

    if cfg["environment"]["kind"] == "bfcl":  # BFCL's functions, annotated as the export does
        from ..bfcl.entries import task_suite

        return ingest_tools(task_suite(cfg["environment"]["categories"]).annotated_tools(), "bfcl-eval", strict=True)
    if not is_mcp(cfg["environment"]):
        return ingest_tools(mcp_definitions(), "builtin tools", strict=True)
    path = Path(cfg["study"]["output_dir"]) / "tools.json"
    if not path.is_file():
        raise InputError("params.yaml", "environment.kind", f"mcp: plan reads the listed tools from {path}; list them first "
                         "(snakemake --cores 1 " + str(path) + ")")
    from ..mcp.environments import tools_of

    return ingest_tools(tools_of(read_json_input(path, "tools file"), str(path)), str(path), strict=True)


def study_design(cfg: Mapping[str, Any]) -> Design:
    """Build every tool list of the study with the workflow's code and measure it."""
    from ..agents.loop import SYSTEM_PROMPT
    from ..assembly.assembly import build_assemblies
    from ..assembly.dose import DOSE_CONDITION, dose_assemblies, dose_records
    from ..canaries import builtin_executor, study_pool, suite_from_tasks
    from ..tasks.tasks import load_tasks, select_tasks
    from .config import run_grid, turns_needed

    notes: list[str] = []
    tools = _tools(cfg)
    if cfg["environment"]["kind"] == "bfcl":  # the suite is BFCL's entries (canarykit.bfcl)
        from ..bfcl.entries import task_suite
        from ..tasks.tasks import parse_tasks

        suite: list[Any] = parse_tasks(task_suite(cfg["environment"]["categories"]).document, "bfcl-eval", tools.tools)
    else:
        suite = load_tasks(cfg["study"]["tasks"], tools=tools.tools)
    tasks: list[Any] = select_tasks(suite, cfg["study"]["limit_tasks"])
    by_id = {t.id: t for t in tasks}
    can = cfg["canaries"]
    if can["generator"] != "offline":
        notes.append(f"canaries.generator {can['generator']}: planned with the offline wording (same tools, lengths close)")
    grid = run_grid(dict(cfg))
    seeds = [int(s) for s in cfg["study"]["seeds"]]
    max_turns = int(cfg["agent"]["max_turns"])
    base = len(SYSTEM_PROMPT) // CHARS_PER_TOKEN
    d = Design(0, 0, 0, 0, 0, 0, 0, grid, len(tasks), seeds, {t: TypeDesign() for t in CANARY_TYPES}, notes)
    primary = can["pool"]
    quiet = _Null()
    for pool, conditions in grid.items():
        if not conditions:
            continue
        doc = study_pool(tools, tasks, pool, fit=can["fit"], suffixes=can["suffixes"][pool],
                         control_suffixes=can["control_suffixes"][pool], special_cases=can["special_cases"],
                         variants=int(can.get("variants") or 1), wording_seed=can.get("wording_seed"),
                         generator="offline", source="plan", tasks_source=cfg["study"]["tasks"])
        rest = [c for c in conditions if c != DOSE_CONDITION]
        lists = build_assemblies(tasks, tools.tools, doc.canaries, pool, rest, seeds, doc.controls, log=quiet) if rest else []
        if DOSE_CONDITION in conditions:  # the dose lists (docs/dose.md), from the look-alikes the pool file would hold
            dose = cfg["study"]["dose"]
            # built from the whole suite, as the workflow's pool file is (granularity cases are checked against it)
            records = dose_records(tools.tools, [t.correct_tools[0] for t in suite if t.correct_tools], pool,
                                   k=max(dose["levels"]), kinds=dose["kinds"], fit=can["fit"], suffixes=can["suffixes"][pool],
                                   special_cases=can["special_cases"],
                                   suite=suite_from_tasks(suite, cfg["study"]["tasks"], builtin_executor(tools.tools)))
            lists += dose_assemblies(tasks, tools.tools, records, pool, seeds, levels=dose["levels"], kinds=dose["kinds"])[0]
        for a in lists:
            task = by_id[a.task_id]
            n = min(turns_needed(task), max_turns)
            fixed = base + len(task.prompt) // CHARS_PER_TOKEN + len(json.dumps(list(a.tools))) // CHARS_PER_TOKEN
            d.lists += 1
            d.calls += n
            d.calls_max += max_turns
            d.input_tokens += n * fixed + (CALL_TOKENS + RESULT_TOKENS) * n * (n - 1) // 2
            d.output_tokens += CALL_TOKENS * (n - 1) + ANSWER_TOKENS
            d.judge_input_tokens += len(task.prompt) // CHARS_PER_TOKEN + (CALL_TOKENS + RESULT_TOKENS) * (n - 1) + ANSWER_TOKENS
            if pool == primary:
                _opportunities(d, a)
    d.runs_per_model = d.lists
    for t, td in d.types.items():
        # one run per (task, seed) (a list may hold two canaries of a type: its first is the item)
        first = {(g, s): i for g, s, i in reversed(td.runs)}
        td.runs = sorted((g, s, i) for (g, s), i in first.items())
        twins = {(g, s) for g, s, _ in td.pairs}
        td.pairs = [(g, s, i) for g, s, i in td.runs if (g, s) in twins]
        if td.runs and "control" in grid.get(primary, []) and not td.pairs:
            notes.append(f"{t}: offered, but never as a twin too: no control effect")
    return d


class _Null:
    def write(self, _: str) -> int:
        return 0


def _opportunities(d: Design, a: Any) -> None:
    """Record the per-type opportunities of one primary-pool list (declared: canaries;
    control: twins, keyed by (task, seed) until :func:`study_design` pairs them)."""
    for o in a.offered:
        if a.condition == "declared" and o.canary_type in d.types:
            d.types[o.canary_type].runs.append((a.task_id, int(a.seed), str(o.canary_id)))
        elif a.condition == "control" and getattr(o, "control_type", None) in d.types:
            d.types[o.control_type].pairs.append((a.task_id, int(a.seed), str(o.control_id)))


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


# --------------------------------------------------------------------------- power by simulation


_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(40)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()


def _moments(mu: float, sd: float) -> tuple[float, float]:
    """Mean and variance of ``expit(mu + sd Z)`` (Gauss-Hermite)."""
    p = special.expit(mu + sd * _NODES)
    m = float((_WEIGHTS * p).sum())
    return m, float((_WEIGHTS * p**2).sum()) - m**2


def logit_mean(rate: float, sd: float) -> float:
    """The logit-scale centre whose propensities average ``rate``."""
    return float(optimize.brentq(lambda mu: _moments(mu, sd)[0] - rate, -40.0, 40.0))


def task_sd(rate: float, icc: float) -> float:
    """The logit-scale sd of task effects that makes two runs of one task correlate ``icc``
    at ``rate`` (the outcome-scale intra-task correlation ``Var(p) / (rate (1 - rate))``)."""

    def gap(sd: float) -> float:
        m, v = _moments(logit_mean(rate, sd), sd)
        return v / (m * (1.0 - m)) - icc

    return float(optimize.brentq(gap, 1e-4, 30.0))


@dataclass(frozen=True)
class Effects:
    """The random effects a simulated study draws, as outcome-scale intra-class correlations
    at the base rate (two runs sharing the level correlate ``icc_*``): tasks, tools (the real
    tool a canary shadows, shared by its tasks) and wordings (a bank entry, shared by every
    tool of the type). Each becomes a logit-scale sd (:func:`level_sds`)."""

    task: float = 0.3
    tool: float = 0.0
    wording: float = 0.0


def level_sds(rate: float, eff: Effects) -> tuple[float, float, float]:
    """Logit-scale sds of the task, tool and wording effects: the total sd makes two runs
    sharing every level correlate ``task + tool + wording`` at ``rate`` (:func:`task_sd`), split
    between the levels in proportion to their ICCs (variances add on the logit scale)."""
    total = eff.task + eff.tool + eff.wording
    if total <= 0.0:
        return 0.0, 0.0, 0.0
    sd = task_sd(rate, min(total, 0.99))
    return tuple(float(sd * np.sqrt(x / total)) for x in (eff.task, eff.tool, eff.wording))  # type: ignore[return-value]


@dataclass
class _Sim:
    """Common random numbers of one type's simulated studies: per study a normal per task,
    per tool and per wording, and per (study, run) a uniform for each side's outcome (the
    canary and its twin draw independently, as two sampled runs do)."""

    tasks: np.ndarray
    pairs: np.ndarray
    items: np.ndarray
    codes: tuple[np.ndarray, np.ndarray, np.ndarray]
    z: tuple[np.ndarray, np.ndarray, np.ndarray]
    run_u: np.ndarray
    twin_u: np.ndarray

    def logit(self, rate: float, sds: tuple[float, float, float]) -> np.ndarray:
        """``(studies, runs)``: each run's propensity on the logit scale (task, tool and wording
        effects ``N(0, sd²)``), centred so that the propensities average ``rate``."""
        total = float(np.sqrt(sum(x * x for x in sds)))
        out = np.full(self.run_u.shape, logit_mean(rate, total))
        for sd, z, code in zip(sds, self.z, self.codes, strict=True):
            if sd > 0.0:
                out += sd * z[:, code]
        return out


def _sim(rows: Sequence[tuple[str, int, str]], sims: int, rng: np.random.Generator) -> _Sim:
    from ..stats import item_key, tool_of, wording_of

    tasks = np.array([g for g, _, _ in rows], dtype=str)
    items = item_key([i for *_, i in rows])
    codes = tuple(np.unique(x, return_inverse=True)[1] for x in (tasks, tool_of(items), wording_of(items)))
    z = tuple(rng.standard_normal((sims, int(c.max()) + 1)) for c in codes)
    return _Sim(tasks, np.array([f"{g}|{s}" for g, s, _ in rows], dtype=str), items, codes, z,  # type: ignore[arg-type]
                rng.random((sims, len(rows))), rng.random((sims, len(rows))))


@dataclass(frozen=True)
class _Rule:
    """How a simulated study reads: the study's resampler, alpha per test (Holm's first step
    with the other members of the family null), the margin, the fewest tasks and the swap
    test's draws."""

    boot: Any
    alpha: float
    margin: float
    min_clusters: int
    draws: int
    seed: int


def _words(rule: _Rule, sim: _Sim, canary: np.ndarray, twin: np.ndarray, word: str) -> np.ndarray:
    """Per simulated study, whether the study would say ``word``: ``lured`` (delta > 0, the
    randomisation test of sides and the t test both below alpha) or ``blind`` (TOST within
    the margin and the twin's rate above it, intersection-union): the tests of
    :mod:`canarykit.stats._equivalence`, on the study's design (the randomisation test only
    where the t test already holds: a word needs both)."""
    from ..stats import (
        Sample,
        cluster_robust_rate,
        paired_deltas,
        rate_above_p,
        swap_p_value,
        tost_p,
    )

    n = canary.shape[0]
    out = np.zeros(n, bool)
    if np.unique(sim.tasks).size < rule.min_clusters:
        return out
    specs = [((f"plan{k}",), Sample(canary[k], sim.tasks, sim.pairs, sim.items), Sample(twin[k], sim.tasks, sim.pairs, sim.items))
             for k in range(n)]
    rows = paired_deltas(rule.boot, specs, alpha=rule.alpha)
    rng = np.random.default_rng([rule.seed, n])
    for k, (r, (_, a, b)) in enumerate(zip(rows, specs, strict=True)):
        if r["delta"] is None or r["se"] is None:
            continue
        if word == "lured":
            if r["delta"] > 0 and r["p"] is not None and r["p"] < rule.alpha:
                p_swap = swap_p_value(a, b, rule.draws, rng)
                out[k] = p_swap is not None and p_swap < rule.alpha
        elif r.get("df") is not None and float(tost_p(r["delta"], r["se"], r["df"], rule.margin)) < rule.alpha:
            ctl = cluster_robust_rate(rule.boot, b)
            above = rate_above_p(ctl.get("estimate"), ctl.get("se"), ctl.get("df"), rule.margin)
            out[k] = above is not None and above < rule.alpha
    return out


def _delta_power(rule: _Rule, sim: _Sim, base: float, sds: tuple[float, float, float], effect: float) -> float:
    """Power of ``lured`` at a mean difference ``effect`` over a twin rate ``base``."""
    twin = (sim.twin_u < special.expit(sim.logit(base, sds))).astype(float)
    canary = (sim.run_u < special.expit(sim.logit(base + effect, sds))).astype(float)
    return float(np.mean(_words(rule, sim, canary, twin, "lured")))


def blind_power(rule: _Rule, sim: _Sim, rate: float, sds: tuple[float, float, float]) -> float:
    """Power of ``blind``: canary and twin taken at the same ``rate`` (delta = 0), drawn
    independently (no shared random numbers), tested within the margin."""
    twin = (sim.twin_u < special.expit(sim.logit(rate, sds))).astype(float)
    canary = (sim.run_u < special.expit(sim.logit(rate, sds))).astype(float)
    return float(np.mean(_words(rule, sim, canary, twin, "blind")))


def _rate_power(boot: Any, sim: _Sim, margin: float, sds: tuple[float, float, float], effect: float, alpha: float, m: int) -> float:
    from ..stats import Sample, rate_tests

    y = (sim.run_u < special.expit(sim.logit(margin + effect, sds))).astype(float)
    p = rate_tests(boot, [Sample(y[k], sim.tasks, None, sim.items) for k in range(y.shape[0])], margin, "greater")
    return float(np.mean(np.nan_to_num(p, nan=1.0) < alpha / m))


def _mde(power_at: Any, hi: float) -> float | None:
    """The smallest effect in (0, hi] whose power reaches :data:`POWER` (bisection)."""
    if power_at(hi) < POWER:
        return None
    lo = 0.0
    for _ in range(8):
        mid = (lo + hi) / 2.0
        if power_at(mid) >= POWER:
            hi = mid
        else:
            lo = mid
    return hi


def _rule(st: Any, tasks: np.ndarray, alpha: float, min_clusters: int) -> _Rule:
    from ..stats import make_resampler

    return _Rule(make_resampler(st.bootstrap_unit, np.unique(tasks), min(st.resamples, 1000), st.seed), alpha,
                 st.equivalence_margin, min_clusters, min(st.resamples, SWAP_DRAWS), st.seed)


def power_table(cfg: Mapping[str, Any], d: Design, base_rate: float, icc: float, effect: float,
                sims: int = SIMULATIONS, seed: int = 0, *, icc_tool: float = 0.0, icc_wording: float = 0.0,
                blind_rate: float | None = None) -> dict[str, Any]:
    """Per primary family and canary type: the MDE at 80% power and the power at ``effect``;
    for ``control_effect`` also the power of ``blind`` at ``blind_rate`` (default: the base
    rate) on both sides. Task, tool and wording effects at the ICCs given (:class:`Effects`)."""
    from ..stats import StatsConfig

    st = StatsConfig.from_mapping(cfg["stats"])
    sds = level_sds(base_rate, Effects(icc, icc_tool, icc_wording))
    b_rate = base_rate if blind_rate is None else blind_rate
    b_sds = level_sds(b_rate, Effects(icc, icc_tool, icc_wording))
    min_clusters = int(cfg["stats"].get("min_clusters", 10))  # fewer tasks: the diagnosis is inconclusive
    tested = [m["name"] for m in cfg["models"] if st.tested(str(m.get("group")))]
    out: dict[str, Any] = {}
    for family in st.primary:
        if family not in ("control_effect", "trap_rate"):
            out[family] = {"note": "no power simulation for this family"}
            continue
        key = "pairs" if family == "control_effect" else "runs"
        offered = {t: getattr(td, key) for t, td in d.types.items() if getattr(td, key)}
        m = max(len(tested), 1) * max(len(offered), 1)
        fam: dict[str, Any] = {"family_size": m, "models_under_test": len(tested), "alpha": st.alpha,
                               "alpha_per_test": st.alpha / m, "types": {}}
        if not tested:
            fam["note"] = "no model under test (stats.test_groups): sized as if one model were tested"
        for t, rows in offered.items():
            rng = np.random.default_rng([seed, CANARY_TYPES.index(t), len(family)])
            sim = _sim(rows, sims, rng)
            rule = _rule(st, sim.tasks, st.alpha / m, min_clusters)
            cache: dict[float, float] = {}

            def power_at(x: float, sim: _Sim = sim, rule: _Rule = rule, cache: dict[float, float] = cache,
                         m: int = m, delta: bool = family == "control_effect") -> float:
                if x not in cache:
                    cache[x] = (_delta_power(rule, sim, base_rate, sds, x) if delta
                                else _rate_power(rule.boot, sim, st.equivalence_margin, sds, x, st.alpha, m))
                return cache[x]

            top = (1.0 - base_rate if family == "control_effect" else 1.0 - st.equivalence_margin) - 1e-3
            n_tasks = int(np.unique(sim.tasks).size)
            if family == "control_effect" and n_tasks < min_clusters:  # always inconclusive (design: min_clusters)
                cache.update({min(effect, top): 0.0})
                mde = None
            else:
                mde = _mde(power_at, top)
            entry: dict[str, Any] = {
                "runs": len(rows), "tasks": n_tasks, "items": int(np.unique(sim.items).size),
                "wordings": int(np.unique(sim.codes[2]).size), "tools": int(np.unique(sim.codes[1]).size),
                "mde": mde, "power_at_effect": power_at(min(effect, top)),
                **({"mde_rate": None if mde is None else st.equivalence_margin + mde} if family == "trap_rate" else {}),
            }
            if mde is not None:  # the curve's slope at the MDE: its power 0.03 either side
                for x in (mde - CURVE_STEP, mde + CURVE_STEP):
                    if 0.0 < x <= top:
                        power_at(round(x, 6))
            # the simulated power curve: every effect evaluated (the bisection's and the MDE -/+ 0.03)
            entry["curve"] = [[round(x, 6), pw] for x, pw in sorted(cache.items())]
            if family == "control_effect":
                entry["power_lured"] = entry["power_at_effect"]
                entry["power_blind"] = blind_power(rule, sim, b_rate, b_sds)
            fam["types"][t] = entry
        out[family] = fam
    return out


# --------------------------------------------------------------------------- known answers


def _bernoulli_words(rule: _Rule, sim: _Sim, p_canary: float, p_twin: float, word: str) -> np.ndarray:
    """The words of simulated studies whose canary and twin are taken at fixed rates, drawn
    independently per run (a reference agent: no task, tool or wording effect)."""
    return _words(rule, sim, (sim.run_u < p_canary).astype(float), (sim.twin_u < p_twin).astype(float), word)


def design_from_runs(runs: Any, pool: str) -> dict[str, list[tuple[str, int, str]]]:
    """The control-effect pairs per canary type of a study that ran (its runs table, the
    primary ``pool``): ``(task, seed, item)`` where a ``declared`` run offered T's canary and a
    ``control`` run of arm T offered its twin, read from the first model that ran both."""
    import polars as pl

    out: dict[str, list[tuple[str, int, str]]] = {}
    if runs is None or not runs.height or "arm" not in runs.columns:
        return out
    frame = runs.filter(pl.col("pool") == pool)
    for model in sorted(set(frame["model"].to_list())):
        mine = frame.filter(pl.col("model") == model)
        for t in CANARY_TYPES:
            if t in out or f"item_{t}" not in mine.columns:
                continue
            decl = mine.filter((pl.col("condition") == "declared") & pl.col(f"item_{t}").is_not_null())
            arms = mine.filter((pl.col("condition") == "control") & (pl.col("arm") == t))
            twins = {(str(g), int(s)) for g, s in zip(arms["task_id"].to_list(), arms["seed"].to_list(), strict=True)}
            pairs = sorted({(str(g), int(s), str(i)) for g, s, i in zip(decl["task_id"].to_list(), decl["seed"].to_list(),
                                                                         decl[f"item_{t}"].to_list(), strict=True)
                            if (str(g), int(s)) in twins})
            if pairs:
                out[t] = pairs
    return out


def known_answer_power(cfg: Mapping[str, Any], d: Design | Mapping[str, list[tuple[str, int, str]]] | None = None,
                       sims: int = SIMULATIONS, seed: int = 0,
                       rates: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """Per reference agent with a known answer (:func:`canarykit.agents.known.known_diagnoses`)
    and canary type offered with its twin: the word expected and the probability that the
    study, as designed, says it (simulated with the study's own tests, each instrument a Holm
    family of its own across its types, Holm's first step). The agents' draws are independent
    Bernoulli runs at their ``take_prob`` (the canary and the twin each taken where the agent
    accepts it: ``blind``: both at ``take_prob``; ``lured``: the canary at ``take_prob``, the
    twin never; ``sensitive``: the reverse; ``not drawn``: neither, whose exact bound over
    ``C`` tasks decides it: ``(1 - margin)^C`` below alpha / m). ``min``: the weakest known
    word's power, what the report states beside "N of N found".

    Before data (``canarykit plan``) the rate is ``take_prob``: exact where T's canary is the
    only look-alike the agent accepts (a planted agent), an upper bound where it splits its
    take among several (``surface`` picks uniformly among every look-alike of the tool, so
    T's canary is its first pick less often). After a study, ``rates`` (``control_effect``
    of stats.json: model -> type -> entry) gives each side's rate as observed: the known
    answer fixes the effect (delta = 0 for ``blind``), the observed rates only the nuisance
    (``blind`` at the mean of the two sides' rates)."""
    from ..agents.known import known_diagnoses
    from ..stats import StatsConfig

    if d is None:
        d = study_design(cfg)
    st = StatsConfig.from_mapping(cfg.get("stats") or {})
    min_clusters = int((cfg.get("stats") or {}).get("min_clusters", 10))
    pairs = {t: td.pairs for t, td in d.types.items()} if isinstance(d, Design) else dict(d)
    offered = {t: rows for t, rows in pairs.items() if rows}
    m = max(len(offered), 1)
    sims_of = {t: _sim(rows, sims, np.random.default_rng([seed, CANARY_TYPES.index(t), 7])) for t, rows in offered.items()}
    rules = {t: _rule(st, sim.tasks, st.alpha / m, min_clusters) for t, sim in sims_of.items()}
    cache: dict[tuple[str, str, float], float] = {}

    def power(t: str, word: str, take: float, seen: Mapping[str, Any] | None) -> float:
        if seen and seen.get("canary") is not None and seen.get("control") is not None:
            c, w = float(seen["canary"]), float(seen["control"])
            take = round((c + w) / 2.0 if word == "blind" else abs(c - w), 3)
        k = (t, word, take)
        if k not in cache:
            sim, rule = sims_of[t], rules[t]
            if word == "not drawn":
                tasks = int(np.unique(sim.tasks).size)
                cache[k] = float(tasks >= min_clusters and (1.0 - st.equivalence_margin) ** tasks < rule.alpha)
            else:
                # sensitive is the mirror image of lured (the same tests, sides swapped)
                pc, pt = (take, take) if word == "blind" else (take, 0.0)
                cache[k] = float(np.mean(_bernoulli_words(rule, sim, pc, pt, "blind" if word == "blind" else "lured")))
        return cache[k]

    rows: list[dict[str, Any]] = []
    for model in cfg.get("models") or []:
        want = known_diagnoses(model)
        if not want:
            continue
        take = float(model.get("take_prob", 0.5))
        for t in offered:
            seen = ((rates or {}).get(str(model["name"])) or {}).get(t)
            rows.append({"model": str(model["name"]), "type": t, "expected": want[t],
                         "power": power(t, want[t], take, seen if isinstance(seen, Mapping) else None)})
    return {"answers": rows, "min": min((r["power"] for r in rows), default=None), "simulations": sims,
            "family_size": m, "alpha_per_test": st.alpha / m}


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
