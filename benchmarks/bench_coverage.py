"""Benchmark: coverage of the study's 95% intervals with few tasks and canary items crossed.

Simulated studies (``canarykit.stats._simulate``): per type, ``T`` tasks x 3 seeds; tasks
share tools three to a tool, a canary item is a (tool, wording variant) with K = 3 variants
per tool, each (task, seed) offered one variant (balanced over seeds); per (task, seed) one
run offered the canary and one its twin. Logit-normal task effects (sd 1.0) and item
effects (sd 0.5; the twin's correlated 0.5 with its canary's), canary rate 0.35 and twin
rate 0.20 as population means over new tasks and new items. For each study and each
method: the interval of the canary rate (a per-type rate) and of the paired canary - twin
delta (the control effect's estimator), computed exactly as ``canarykit stats`` computes
them, and whether it covers the population value.

Methods: ``task_x_item`` (the default: two-way CR2 cluster-robust t with Bell-McCaffrey
degrees of freedom and Hall's skewness correction) and ``task`` (the task bootstrap, BCa:
the default before issue 20). Target: coverage between 0.93 and 0.97 at 8, 12, 30 and 120
tasks for the default. A second table varies the design at 8 and 30 tasks (a rare trap,
no item effect, a strong item effect, a null delta). Writes the coverage figure
(``benchmarks/figures/coverage.svg`` and ``.png``, altair + vl-convert) the README shows,
and the table behind it (``coverage.csv``; ``--figure-only`` redraws from it).

Run: ``.venv/bin/python benchmarks/bench_coverage.py [--studies N] [--resamples B]``
(defaults 2,000 studies per row, 1,000 resamples: about 5 minutes on 2 cores).
Never asserted in the test suite (``tests/test_stats_coverage.py`` runs 300 studies at 8 tasks).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import altair as alt
import polars as pl
import vl_convert as vlc

from canarykit.stats._simulate import CrossedDesign, coverage

FIGURES = Path(__file__).parent / "figures"
METHODS = {"task_x_item": "tasks x items, CR2 t (default)", "task": "tasks, BCa bootstrap (before)"}
ESTIMANDS = {"rate": "per-type rate", "delta": "paired delta (canary - twin)"}


def _rows(label: str, design: CrossedDesign, studies: int, resamples: int, seed: int) -> list[dict[str, object]]:
    cov = coverage(design, studies, resamples=resamples, seed=seed)
    return [{"design": label, "tasks": design.tasks, "method": u, "estimand": k, "coverage": cov.covered[(u, k)],
             "truth_above": cov.truth_above[(u, k)], "truth_below": cov.truth_below[(u, k)], "width": cov.width[(u, k)],
             "se": cov.se} for u in METHODS for k in ESTIMANDS]


def _print(frame: pl.DataFrame, title: str) -> None:
    print(f"\n{title}")
    print(f"{'design':<22} {'tasks':>5}  {'method':<12} {'estimand':<8} {'coverage':>8}  {'above/below':>11}  {'width':>6}")
    for r in frame.iter_rows(named=True):
        flag = "" if r["method"] != "task_x_item" or 0.93 <= r["coverage"] <= 0.97 else "  OUT OF 0.93-0.97"
        print(f"{r['design']:<22} {r['tasks']:>5}  {r['method']:<12} {r['estimand']:<8} {r['coverage']:>8.3f}  "
              f"{r['truth_above']:>5.3f}/{r['truth_below']:<5.3f}  {r['width']:>6.3f}{flag}")


def _figure(frame: pl.DataFrame) -> None:
    data = frame.with_columns(
        pl.col("method").replace_strict(METHODS).alias("method"),
        (pl.col("coverage") - 2 * pl.col("se")).alias("lo"), (pl.col("coverage") + 2 * pl.col("se")).alias("hi"),
    )
    scale = alt.Scale(domain=[0.84, 1.0], zero=False, clamp=True)
    title = "coverage of 95% intervals"
    x = alt.X("tasks:O", title="tasks", sort=[8, 12, 30, 120])
    panels = []
    for key, name in ESTIMANDS.items():
        part = data.filter(pl.col("estimand") == key).to_pandas()
        band = alt.Chart(pl.DataFrame({"a": [0.93], "b": [0.97]}).to_pandas()).mark_rect(opacity=0.15, color="green").encode(
            y=alt.Y("a:Q", scale=scale, title=title), y2="b:Q")
        lines = alt.Chart(part).mark_line(point=True).encode(
            x=x, y=alt.Y("coverage:Q", scale=scale, title=title),
            color=alt.Color("method:N", title=None, legend=alt.Legend(orient="bottom")))
        bars = alt.Chart(part).mark_errorbar().encode(x=x, y=alt.Y("lo:Q", scale=scale, title=title), y2="hi:Q",
                                                      color="method:N")
        panels.append(alt.layer(band, lines, bars).properties(width=260, height=200, title=name))
    chart = alt.hconcat(*panels).properties(
        title="Coverage with items crossed (K = 3); band 0.93-0.97, bars +-2 Monte Carlo se")
    spec = chart.to_json()
    FIGURES.mkdir(exist_ok=True)
    (FIGURES / "coverage.svg").write_text(vlc.vegalite_to_svg(spec), encoding="utf-8")
    (FIGURES / "coverage.png").write_bytes(vlc.vegalite_to_png(spec, scale=1.5))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=2000)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--no-figure", action="store_true")
    ap.add_argument("--figure-only", action="store_true", help="redraw the figure from benchmarks/figures/coverage.csv")
    args = ap.parse_args()
    if args.figure_only:
        _figure(pl.read_csv(FIGURES / "coverage.csv"))
        return
    t0 = time.perf_counter()
    main_rows = [r for n in (8, 12, 30, 120) for r in _rows("default", CrossedDesign(tasks=n), args.studies, args.resamples, 1)]
    table = pl.DataFrame(main_rows)
    _print(table, f"coverage, {args.studies} studies per row (Monte Carlo se {table['se'][0]:.4f}), {args.resamples} resamples")
    base = CrossedDesign()
    variants = {
        "rare trap (0.10/0.05)": replace(base, canary=0.10, twin=0.05),
        "no item effect": replace(base, item_sd=0.0),
        "strong items (sd 1.0)": replace(base, item_sd=1.0),
        "null delta (0.3/0.3)": replace(base, canary=0.30, twin=0.30),
    }
    other = pl.DataFrame([r for label, d in variants.items() for n in (8, 30)
                          for r in _rows(label, replace(d, tasks=n), args.studies // 2, args.resamples, 2)])
    _print(other, f"other designs, {args.studies // 2} studies per row")
    if not args.no_figure:
        FIGURES.mkdir(exist_ok=True)
        table.write_csv(FIGURES / "coverage.csv")
        _figure(table)
        print(f"\nfigure: {FIGURES / 'coverage.svg'} (.png)")
    print(f"elapsed {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
