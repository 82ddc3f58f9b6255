"""Power by simulation for ``canarykit plan`` and the report's known answers.

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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize, special

from ..types import CANARY_TYPES
from .design import Design, study_design

SIMULATIONS = 300
#: Swap patterns of the randomisation test per simulated study (p resolution 1/2001).
SWAP_DRAWS = 2000
#: The power curve is also evaluated this far either side of the MDE (its slope there).
CURVE_STEP = 0.03
POWER = 0.8
DEFAULTS = {"base_rate": 0.2, "icc": 0.3, "effect": 0.15, "icc_tool": 0.05, "icc_wording": 0.05}


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
