"""Benchmark: the size and coverage of the study's intervals, tests and words, by simulation.

Simulated control contrasts (``canarykit.stats._simulate``): per type, ``T`` tasks x 3
seeds; tasks share tools three to a tool; each study draws K = 8 wordings for the type (the
default study's ``canaries.variants``, sized by ``canarykit plan``), and
each (task, seed) is offered one of them (balanced over seeds), **one wording across many
tools**; per (task, seed) one run offered the canary and one its twin (which carries the
canary's wording). Logit-normal effects: task (sd 1.0), tool (sd 0.5, shared by the tool's
tasks and wordings), wording (sd 0 or 0.5, shared across tools and by canary and twin), and
in one design a tell effect per wording (sd 0.5, the canary's alone). Truths are population
means over new tasks, tools and wordings. Everything is computed exactly as ``canarykit
stats`` computes it: the rate's and the paired delta's intervals (tasks, tools and wordings
crossed, :mod:`canarykit.stats._crossed`), the two-sided t test of delta = 0, the
randomisation test of sides (:mod:`canarykit.stats._swap`) and the words
(:mod:`canarykit.stats._equivalence`, one type: a family of one, ``min_clusters`` 2).

Tables:

1. **Nulls** (item 2 of issue 27): canary = twin = 0.05 (rare) and 0.30 (moderate), wording
   sd 0 and 0.5, at 8, 12, 30 and 120 tasks: coverage of the rate and of the delta, the
   rejection of delta = 0 (t and randomisation), the family-wise error over six independent
   null types (randomisation test, Holm), and the share worded lured/sensitive. In band:
   rejection 0.035-0.065, family-wise error <= 0.06, coverage 0.93-0.97.
2. **Other designs** at 30 tasks: a real delta (0.45 vs 0.15), the delta at the margin
   (0.40 vs 0.30: ``blind`` must stay below alpha), a tell that varies by wording (sd 0.5,
   0 on average), K = 3 and 6 wordings, first picks missing in 30% of runs.
3. ``--words N``: whole studies through ``compute_all`` (``canarykit stats`` itself,
   :mod:`canarykit.stats._simstudy`), six types of 35 of 120 tasks, one model under test:
   with no canary-twin difference, the share of studies where some type reads
   ``lured`` / ``sensitive``; with a real delta of 0.30 on every type, the coverage of the
   delta and the share read ``lured``.

Run: ``.venv/bin/python benchmarks/bench_coverage.py [--studies N] [--words N]``
(defaults 2,000 studies per row of table 1, half that for table 2, 300 whole studies per
case with ``--words``: about 40 minutes on 2 idle cores). Writes ``benchmarks/figures/
coverage.csv`` and the coverage figure (``.svg``, ``.png``) the docs show. Never asserted in
the test suite (``tests/test_stats_size.py`` runs a few hundred studies of a few designs).
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import replace
from pathlib import Path

import altair as alt
import numpy as np
import polars as pl
import vl_convert as vlc

from canarykit.stats._simulate import Calibration, CrossedDesign, calibration

FIGURES = Path(__file__).parent / "figures"
TASKS = (8, 12, 30, 120)
NULLS = {"rare": 0.05, "moderate": 0.30}
#: Wordings per type of the main designs: the default study's ``canaries.variants`` (params.yaml).
K = 8
BAND = {"reject": (0.035, 0.065), "coverage": (0.93, 0.97), "family": (0.0, 0.06)}


def _load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def _row(label: str, c: Calibration) -> dict[str, object]:
    d = c.design
    return {"design": label, "tasks": d.tasks, "wordings": d.wordings, "wording_sd": d.wording_sd, "canary": d.canary,
            "twin": d.twin, "studies": c.studies, "cover_rate": c.covered["rate"], "cover_delta": c.covered["delta"],
            "rate_above": c.truth_above["rate"], "rate_below": c.truth_below["rate"], "width_rate": c.width["rate"],
            "width_delta": c.width["delta"], "reject_t": c.reject_t, "reject_swap": c.reject_swap,
            "family_error": c.family_error, "lured_sensitive": c.words["lured"] + c.words["sensitive"],
            **{f"word_{k.replace(' ', '_')}": v for k, v in c.words.items()}, "mc_se": c.se}


def _flag(value: float, band: tuple[float, float]) -> str:
    return "" if band[0] <= value <= band[1] else "*"


def _print_nulls(frame: pl.DataFrame) -> None:
    print(f"{'null':<9} {'wsd':>4} {'tasks':>5}  {'cov rate':>9} {'cov delta':>9}  {'rej t':>6} {'rej swap':>8}  "
          f"{'FWE(6)':>7}  {'lured|sens':>10}  width rate/delta")
    for r in frame.iter_rows(named=True):
        cov, rej, fam = BAND["coverage"], BAND["reject"], BAND["family"]
        print(f"{r['design']:<9} {r['wording_sd']:>4.1f} {r['tasks']:>5}  {r['cover_rate']:>8.3f}{_flag(r['cover_rate'], cov)} "
              f"{r['cover_delta']:>8.3f}{_flag(r['cover_delta'], cov)}  {r['reject_t']:>5.3f}{_flag(r['reject_t'], rej)} "
              f"{r['reject_swap']:>7.3f}{_flag(r['reject_swap'], rej)}  {r['family_error']:>6.3f}{_flag(r['family_error'], fam)}  "
              f"{r['lured_sensitive']:>10.3f}  {r['width_rate']:.3f}/{r['width_delta']:.3f}")


def _print_other(frame: pl.DataFrame) -> None:
    print(f"{'design':<34} {'cov rate':>8} {'cov delta':>9} {'rej t':>6} {'rej swap':>8}  words")
    for r in frame.iter_rows(named=True):
        words = ", ".join(f"{k[5:].replace('_', ' ')} {v:.3f}" for k, v in r.items() if k.startswith("word_") and v)
        print(f"{r['design']:<34} {r['cover_rate']:>8.3f} {r['cover_delta']:>9.3f} {r['reject_t']:>6.3f} "
              f"{r['reject_swap']:>8.3f}  {words}")


def _figure(frame: pl.DataFrame) -> None:
    data = frame.filter(pl.col("design") == "moderate").unpivot(
        index=["tasks", "wording_sd", "mc_se"], on=["cover_rate", "cover_delta"], variable_name="estimand",
        value_name="coverage").with_columns(
        pl.col("estimand").replace_strict({"cover_rate": "per-type rate", "cover_delta": "paired delta (canary - twin)"}),
        pl.format("wording sd {}", pl.col("wording_sd")).alias("wordings"),
        (pl.col("coverage") - 2 * pl.col("mc_se")).alias("lo"), (pl.col("coverage") + 2 * pl.col("mc_se")).alias("hi"))
    scale = alt.Scale(domain=[0.84, 1.0], zero=False, clamp=True)
    title = "coverage of 95% intervals"
    x = alt.X("tasks:O", title="tasks", sort=list(TASKS))
    band = alt.Chart(pl.DataFrame({"a": [0.93], "b": [0.97]}).to_pandas()).mark_rect(opacity=0.15, color="green").encode(
        y=alt.Y("a:Q", scale=scale, title=title), y2="b:Q")
    panels = []
    for name in ("per-type rate", "paired delta (canary - twin)"):
        part = data.filter(pl.col("estimand") == name).to_pandas()
        lines = alt.Chart(part).mark_line(point=True).encode(
            x=x, y=alt.Y("coverage:Q", scale=scale, title=title),
            color=alt.Color("wordings:N", title=None, legend=alt.Legend(orient="bottom")))
        bars = alt.Chart(part).mark_errorbar().encode(x=x, y=alt.Y("lo:Q", scale=scale, title=title), y2="hi:Q",
                                                      color="wordings:N")
        panels.append(alt.layer(band, lines, bars).properties(width=260, height=200, title=name))
    chart = alt.hconcat(*panels).properties(
        title=f"Tasks, tools and K = {K} wordings crossed, canary = twin = 0.30; band 0.93-0.97, bars +-2 Monte Carlo se")
    spec = chart.to_json()
    FIGURES.mkdir(exist_ok=True)
    (FIGURES / "coverage.svg").write_text(vlc.vegalite_to_svg(spec), encoding="utf-8")
    (FIGURES / "coverage.png").write_bytes(vlc.vegalite_to_png(spec, scale=1.5))


def _words(studies: int, seed: int) -> None:
    """Table 3: whole studies through compute_all (``canarykit stats`` itself)."""
    from canarykit import stats
    from canarykit.stats._simstudy import crossed_runs
    from canarykit.types import CANARY_TYPES

    for label, canary, twin in (("no canary-twin difference", 0.30, 0.30), ("a real delta of 0.30", 0.45, 0.15)):
        designs = {t: CrossedDesign(tasks=35, canary=canary, twin=twin, canary_type=t, wordings=K) for t in CANARY_TYPES}
        rng = np.random.default_rng([seed, int(canary * 100)])
        any_word = covered = lured = n = 0
        for _ in range(studies):
            r = stats.compute_all(crossed_runs(designs, rng), stats.StatsConfig(resamples=2000))
            entries = r["control_effect"]["m1"]
            words = [e["diagnosis"] for e in entries.values()]
            any_word += any(w in ("lured", "sensitive") for w in words)
            lured += sum(w == "lured" for w in words)
            covered += sum(e["lo"] is not None and e["lo"] <= canary - twin <= e["hi"] for e in entries.values())
            n += len(entries)
        print(f"{label:<28} studies {studies}: some type lured/sensitive {any_word / studies:.3f}; "
              f"delta covered {covered / n:.3f}; types read lured {lured / n:.3f}   ({_load()})", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=2000)
    ap.add_argument("--swap-draws", type=int, default=2000, help="random swap patterns per randomisation test")
    ap.add_argument("--words", type=int, default=0, help="whole studies per case through compute_all (table 3)")
    ap.add_argument("--only-words", action="store_true")
    ap.add_argument("--no-figure", action="store_true")
    ap.add_argument("--figure-only", action="store_true", help="redraw the figure from benchmarks/figures/coverage.csv")
    args = ap.parse_args()
    if args.figure_only:
        _figure(pl.read_csv(FIGURES / "coverage.csv"))
        return
    t0 = time.perf_counter()
    print(f"started, {_load()}", flush=True)
    if not args.only_words:
        rows = []
        for name, rate in NULLS.items():
            for wsd in (0.0, 0.5):
                for n in TASKS:
                    d = CrossedDesign(tasks=n, canary=rate, twin=rate, wording_sd=wsd, wordings=K)
                    rows.append(_row(name, calibration(d, args.studies, seed=1, swap_draws=args.swap_draws)))
                    print(f"  {name} wsd {wsd} {n} tasks done ({time.perf_counter() - t0:.0f} s, {_load()})", flush=True)
        table = pl.DataFrame(rows)
        print(f"\n1. nulls, {args.studies} studies per row (Monte Carlo se of 0.05: {table['mc_se'][0]:.4f}); * out of band")
        _print_nulls(table)
        base = CrossedDesign(tasks=30, wordings=K)
        others = {
            "real delta 0.45 vs 0.15": replace(base, canary=0.45, twin=0.15),
            "delta at the margin 0.40 vs 0.30": replace(base, canary=0.40, twin=0.30),
            "tell varies by wording (sd 0.5)": replace(base, tell_sd=0.5),
            "K = 3 wordings": replace(base, wordings=3),
            "K = 6 wordings": replace(base, wordings=6),
            "K = 6, 120 tasks": replace(base, wordings=6, tasks=120),
            "first pick missing in 30%": replace(base, defined=0.7),
            "no wording effect, 120 tasks, K 6": replace(base, wordings=6, tasks=120, wording_sd=0.0),
        }
        other = pl.DataFrame([_row(label, calibration(d, args.studies // 2, seed=2, swap_draws=args.swap_draws))
                              for label, d in others.items()])
        print(f"\n2. other designs, 30 tasks unless named, {args.studies // 2} studies per row")
        _print_other(other)
        FIGURES.mkdir(exist_ok=True)
        pl.concat([table, other], how="diagonal").write_csv(FIGURES / "coverage.csv")
        if not args.no_figure:
            _figure(table)
            print(f"\nfigure: {FIGURES / 'coverage.svg'} (.png)")
    if args.words:
        print(f"\n3. the words through compute_all, {args.words} studies per case")
        _words(args.words, seed=3)
    print(f"elapsed {time.perf_counter() - t0:.0f} s, {_load()}")


if __name__ == "__main__":
    main()
