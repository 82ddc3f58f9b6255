"""Altair figures of the paper (Figures 2 and 4-9) and of the control effect (Figure 10),
built from the statistics alone.

:func:`make_figures` takes a per-run table (a polars frame or a ``.parquet`` path), or the
result of :func:`canarykit.stats.compute_all` (a dict or a ``stats.json`` path), and writes each
figure as SVG, PNG and self-contained HTML (vl-convert, bundled JavaScript: no CDN needed).
The plotted data is exactly :func:`canarykit.stats.figure_data` (also written as CSV by
:func:`canarykit.stats.write_outputs`). A figure whose data is missing (for example no subtle
pool) is rendered as an explicit empty-state chart, never an error.

Colours are the Okabe-Ito colour-blind-safe palette; heatmaps use the viridis scheme.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import altair as alt
import polars as pl
import vl_convert as vlc

from .. import stats
from ..errors import InputError
from ..store.jsonio import atomic_write_bytes, atomic_write_text
from ..types import CANARY_TYPES, DIFFICULTIES
from .text import TYPE_LABELS, json_for_script

__all__ = ["FIGURES", "OKABE_ITO", "build_charts", "make_figures", "render"]

#: Okabe-Ito palette, reordered so the first colours have the most contrast on white.
OKABE_ITO: tuple[str, ...] = (
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000",
)
FORMATS: tuple[str, ...] = ("svg", "png", "html")
_FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
_WIDTH = 460
_ROW = 24


def _pretty(name: str, label: str) -> str:
    return f"{name} ({label})" if label else name


def _finish(chart: Any) -> Any:
    """Report-size typography shared by every figure (fonts >= 11 px)."""
    return (
        chart.configure(font=_FONT, background="white", padding=12)
        .configure_axis(labelFontSize=12, titleFontSize=13, labelLimit=260, gridColor="#e6e6e6")
        .configure_legend(labelFontSize=12, titleFontSize=12, symbolSize=120)
        .configure_title(fontSize=15, subtitleFontSize=12, anchor="start", offset=12)
        .configure_header(labelFontSize=13, titleFontSize=13)
        .configure_view(stroke=None)
    )


def _empty(title: str, message: str) -> Any:
    data = pl.DataFrame({"message": [message]})
    return (
        alt.Chart(data)
        .mark_text(fontSize=15, color="#555555")
        .encode(text="message:N")
        .properties(title=alt.Title(title, subtitle="no data"), width=_WIDTH, height=120)
    )


def _group_scale(groups: Sequence[str]) -> alt.Scale:
    domain = sorted({g for g in groups if g is not None})
    return alt.Scale(domain=domain, range=list(OKABE_ITO[: max(len(domain), 1)]))


def _model_order(data: pl.DataFrame, value: str) -> list[str]:
    """Models sorted by ``value`` ascending (nulls last), then name."""
    return data.sort([value, "model"], nulls_last=True).get_column("model").unique(maintain_order=True).to_list()


# --------------------------------------------------------------------------- figures


def fig2(fd: Mapping[str, pl.DataFrame]) -> Any:
    """csr per model (declared) with bootstrap CI whiskers, coloured by group."""
    title = "Figure 2: canary susceptibility rate (csr) per model, declared condition"
    d = fd["fig2"].filter(pl.col("csr").is_not_null())
    if d.is_empty():
        return _empty(title, "No declared-condition runs with a defined csr")
    # Grouped by provider/tier group (as the paper orders its bars), by csr within a group.
    order = d.sort(["group", "csr", "model"], nulls_last=True).get_column("model").to_list()
    y = alt.Y("model:N", sort=order, title=None)
    color = alt.Color("group:N", scale=_group_scale(d.get_column("group").to_list()), title="Group")
    base = alt.Chart(d).properties(width=_WIDTH, height=_ROW * len(order))
    bars = base.mark_bar(height=_ROW * 0.65).encode(
        y=y, x=alt.X("csr:Q", title="csr: mean per-run canary calls / tool calls"), color=color,
        tooltip=["model", "group", alt.Tooltip("csr:Q", format=".3f"), alt.Tooltip("lo:Q", format=".3f"),
                 alt.Tooltip("hi:Q", format=".3f"), "n:Q"],
    )
    whisk = base.mark_rule(strokeWidth=1.6, color="black").encode(y=y, x="lo:Q", x2="hi:Q")
    caps = base.mark_tick(color="black", thickness=1.6, size=_ROW * 0.5)
    return alt.layer(bars, whisk, caps.encode(y=y, x="lo:Q"), caps.encode(y=y, x="hi:Q")).properties(
        title=alt.Title(title, subtitle="bars grouped by model group; whiskers: bootstrap 95% CI; lower is better")
    )


def fig4(fd: Mapping[str, pl.DataFrame]) -> Any:
    """csr by task difficulty per model (declared)."""
    title = "Figure 4: csr by task difficulty, declared condition"
    d = fd["fig4"].filter(pl.col("csr").is_not_null())
    if d.is_empty():
        return _empty(title, "No declared-condition runs with a defined csr")
    overall = d.group_by("model").agg(pl.col("csr").mean())
    order = _model_order(overall, "csr")
    return (
        alt.Chart(d)
        .mark_bar()
        .encode(
            y=alt.Y("model:N", sort=order, title=None),
            yOffset=alt.YOffset("difficulty:N", sort=list(DIFFICULTIES)),
            x=alt.X("csr:Q", title="csr: mean per-run canary calls / tool calls"),
            color=alt.Color("difficulty:N", sort=list(DIFFICULTIES), title="Difficulty",
                            scale=alt.Scale(domain=list(DIFFICULTIES), range=[OKABE_ITO[5], OKABE_ITO[1], OKABE_ITO[3]])),
            tooltip=["model", "difficulty", alt.Tooltip("csr:Q", format=".3f")],
        )
        .properties(width=_WIDTH, height=alt.Step(9), title=alt.Title(title, subtitle="models sorted by overall csr"))
    )


def fig5(fd: Mapping[str, pl.DataFrame]) -> Any:
    """Heatmap of type-specific trap rates, model x canary type (declared), annotated."""
    title = "Figure 5: type-specific trap rate, model × canary type (declared)"
    d = fd["fig5"]
    if d.is_empty():
        return _empty(title, "No declared-condition runs")
    d = d.with_columns(
        type_label=pl.col("type").replace_strict(TYPE_LABELS, default=pl.col("type")),
        label=pl.lit("n/a"),
    )
    vmax = _max_value(d.get_column("rate"))
    threshold = vmax * 0.55
    order = _model_order(d.group_by("model").agg(pl.col("rate").mean()), "rate")
    x = alt.X("type_label:N", sort=[TYPE_LABELS[t] for t in CANARY_TYPES], title="Canary type",
              axis=alt.Axis(labelAngle=-30, labelAlign="right"))
    y = alt.Y("model:N", sort=order, title=None)
    cells = alt.Chart(d).mark_rect(stroke="white", strokeWidth=1).encode(
        x=x, y=y,
        color=alt.condition("datum.rate === null", alt.value("#eeeeee"),
                            alt.Color("rate:Q", title="Trap rate", scale=alt.Scale(scheme="viridis", domainMin=0))),
        tooltip=["model", "type", alt.Tooltip("rate:Q", format=".3f")],
    )
    text = alt.Chart(d).mark_text(fontSize=12).encode(
        x=x, y=y, text=alt.Text("rate:Q", format=".2f"),
        color=alt.condition(f"datum.rate !== null && datum.rate > {threshold}", alt.value("black"), alt.value("white")),
    )
    text_null = alt.Chart(d).transform_filter("datum.rate === null").mark_text(fontSize=12, color="#555555").encode(x=x, y=y, text="label:N")
    return alt.layer(cells, text.transform_filter("datum.rate !== null"), text_null).properties(
        width=alt.Step(82), height=alt.Step(30),
        title=alt.Title(title, subtitle="fraction of runs (where the type was present) with a call to that canary type; n/a: never present"),
    )


def _max_value(series: pl.Series) -> float:
    values = series.drop_nulls().cast(pl.Float64).to_numpy()
    return float(values.max()) if values.size else 0.0


def _nice_max(v: float) -> float:
    if v <= 0 or not math.isfinite(v):
        return 1.0
    step = 0.05 if v <= 0.3 else 0.1
    return min(1.0, math.ceil(v / step - 1e-9) * step) if v <= 1 else v


def fig6(fd: Mapping[str, pl.DataFrame]) -> Any:
    """Per-model radar profiles (small multiples) on a shared radial axis."""
    title = "Figure 6: per-model diagnostic profiles (declared)"
    d = fd["fig6"]
    if d.is_empty():
        return _empty(title, "No declared-condition runs")
    rmax = _nice_max(_max_value(d.get_column("rate")))
    k = len(CANARY_TYPES)
    angles = [2 * math.pi * i / k for i in range(k)]
    models = _model_order(d.group_by("model", "group").agg(pl.col("rate").mean()), "rate")
    groups = dict(d.select("model", "group").unique().iter_rows())
    rings = [rmax * f for f in (0.25, 0.5, 0.75, 1.0)]
    rows: list[dict[str, Any]] = []
    for m in models:
        base = {"model": m, "group": groups.get(m)}
        for ri, r in enumerate(rings):
            for i in range(k + 1):
                a = angles[i % k]
                rows.append({**base, "kind": "grid", "series": ri, "order": i, "x": r / rmax * math.sin(a), "y": r / rmax * math.cos(a)})
            mid = math.pi / k  # between the first two spokes, clear of the axis labels
            rows.append({**base, "kind": "ringlabel", "x": r / rmax * math.sin(mid), "y": r / rmax * math.cos(mid), "label": f"{r:.2f}"})
        for i, t in enumerate(CANARY_TYPES):
            a = angles[i]
            rows.append({**base, "kind": "spoke", "x": 0.0, "y": 0.0, "x2": math.sin(a), "y2": math.cos(a)})
            rows.append({**base, "kind": "axislabel", "x": 1.45 * math.sin(a), "y": 1.22 * math.cos(a),
                         "label": TYPE_LABELS[t].replace(" ", "\n", 1)})
    values = {(r["model"], r["type"]): r["rate"] for r in d.to_dicts()}
    for m in models:
        for i in range(k + 1):
            t = CANARY_TYPES[i % k]
            rate = values.get((m, t))
            rr = (rate or 0.0) / rmax
            a = angles[i % k]
            rows.append({"model": m, "group": groups.get(m), "kind": "profile", "order": i, "type": TYPE_LABELS[t],
                         "rate": rate, "x": rr * math.sin(a), "y": rr * math.cos(a)})
    data = pl.DataFrame(rows, infer_schema_length=None)
    scale = alt.Scale(domain=[-1.75, 1.75], nice=False)
    x = alt.X("x:Q", scale=scale, axis=None)
    y = alt.Y("y:Q", scale=alt.Scale(domain=[-1.4, 1.45], nice=False), axis=None)
    # The legend goes under the small multiples, its labels unclipped: at the right of a
    # four-column facet it was cut off at the page's edge ("plante", "refere").
    legend = alt.Legend(orient="bottom", direction="horizontal", columns=4, labelLimit=0, title="Group")
    color = alt.Color("group:N", scale=_group_scale(list(groups.values())), title="Group", legend=legend)
    fill = alt.Fill("group:N", scale=_group_scale(list(groups.values())), title="Group", legend=legend)
    chart0 = alt.Chart()
    grid = chart0.transform_filter("datum.kind === 'grid'").mark_line(color="#c8c8c8", strokeWidth=1).encode(
        x=x, y=y, detail="series:N", order="order:Q")
    spokes = chart0.transform_filter("datum.kind === 'spoke'").mark_rule(color="#c8c8c8", strokeWidth=1).encode(
        x=x, y=y, x2="x2:Q", y2="y2:Q")
    ringlab = chart0.transform_filter("datum.kind === 'ringlabel'").mark_text(fontSize=11, align="left", dx=3, dy=-5, color="#666666").encode(
        x=x, y=y, text="label:N")
    axlab = chart0.transform_filter("datum.kind === 'axislabel'").mark_text(fontSize=11, lineBreak="\n", color="#333333").encode(
        x=x, y=y, text="label:N")
    area = chart0.transform_filter("datum.kind === 'profile'").mark_line(strokeWidth=2.2, fillOpacity=0.25, interpolate="linear-closed").encode(
        x=x, y=y, order="order:Q", color=color, fill=fill)
    pts = chart0.transform_filter("datum.kind === 'profile'").mark_circle(size=36, opacity=1).encode(
        x=x, y=y, color=color, tooltip=["model", "type:N", alt.Tooltip("rate:Q", format=".3f")])
    layered = alt.layer(grid, spokes, area, pts, ringlab, axlab, data=data).properties(width=250, height=215)
    return layered.facet(
        facet=alt.Facet("model:N", sort=models, title=None, header=alt.Header(labelFontSize=13, labelFontWeight="bold")),
        columns=4,
    ).properties(
        title=alt.Title(title, subtitle=f"type-specific trap rate per spoke; shared radial axis 0 to {rmax:.2f} (rings at quarters)")
    )


def fig7(fd: Mapping[str, pl.DataFrame]) -> Any:
    """tsr degradation (baseline minus condition) with bootstrap CI, declared and full."""
    title = "Figure 7: task-success degradation under canaries (baseline tsr − condition tsr)"
    d = fd["fig7"].filter(pl.col("delta").is_not_null())
    if d.is_empty():
        return _empty(title, "Needs baseline and declared/full runs with verdicts")
    order = _model_order(d.group_by("model").agg(pl.col("delta").mean()), "delta")
    conds = [c for c in ("declared", "full") if c in set(d.get_column("condition").to_list())]
    y = alt.Y("model:N", sort=order, title=None)
    yo = alt.YOffset("condition:N", sort=conds)
    color = alt.Color("condition:N", sort=conds, title="Condition", scale=alt.Scale(domain=conds, range=[OKABE_ITO[0], OKABE_ITO[3]][: len(conds)]))
    base = alt.Chart(d)
    rule = base.mark_rule(strokeWidth=2).encode(y=y, yOffset=yo, x="lo:Q", x2="hi:Q", color=color)
    point = base.mark_point(filled=True, size=70).encode(
        y=y, yOffset=yo, color=color,
        x=alt.X("delta:Q", title="Δ tsr = baseline − condition (positive: canaries hurt)"),
        tooltip=["model", "condition", alt.Tooltip("delta:Q", format="+.3f"), alt.Tooltip("lo:Q", format="+.3f"),
                 alt.Tooltip("hi:Q", format="+.3f"), alt.Tooltip("cohens_d:Q", format="+.2f")],
    )
    zero = alt.Chart(pl.DataFrame({"zero": [0.0]})).mark_rule(color="#444444", strokeDash=[5, 4]).encode(x="zero:Q")
    return alt.layer(zero, rule, point).properties(
        width=_WIDTH, height=alt.Step(16),
        title=alt.Title(title, subtitle="points: Δ; whiskers: bootstrap 95% CI; dashed line: no change"),
    )


def fig8(fd: Mapping[str, pl.DataFrame]) -> Any:
    """Standard vs subtle pool csr per model (declared)."""
    title = "Figure 8: subtlety ablation, csr on standard vs subtle canaries (declared)"
    d = fd["fig8"].filter(pl.col("csr").is_not_null())
    if d.is_empty() or d.get_column("pool").n_unique() < 2:
        return _empty(title, "No subtle-pool runs in this table: ablation not available")
    order = _model_order(d.filter(pl.col("pool") == "standard"), "csr")
    y = alt.Y("model:N", sort=order, title=None)
    pools = ["standard", "subtle"]
    # Dodged: each pool's marker sits a few pixels above (standard) or below (subtle) the
    # model's line, so equal csr no longer hides one marker under the other; a rule joins them.
    link = alt.Chart(d).mark_rule(color="#999999", strokeWidth=2).encode(y=y, x="min(csr):Q", x2="max(csr):Q")
    color = alt.Color("pool:N", title="Canary pool", sort=pools, scale=alt.Scale(domain=pools, range=[OKABE_ITO[0], OKABE_ITO[1]]))
    shape = alt.Shape("pool:N", sort=pools, scale=alt.Scale(domain=pools, range=["circle", "diamond"]), title="Canary pool")
    layers = [
        alt.Chart(d).transform_filter(alt.datum.pool == pool).mark_point(filled=True, size=100, yOffset=dy, opacity=0.9).encode(
            y=y, x=alt.X("csr:Q", title="csr: mean per-run canary calls / tool calls"), color=color, shape=shape,
            tooltip=["model", "pool", alt.Tooltip("csr:Q", format=".3f")],
        )
        for pool, dy in zip(pools, (-5, 5), strict=True)
    ]
    return alt.layer(link, *layers).properties(
        width=_WIDTH, height=_ROW * len(order),
        title=alt.Title(title, subtitle="softened give-away phrases (subtle) vs the standard pool; markers dodged (standard above, subtle below)"),
    )


def fig9(fd: Mapping[str, pl.DataFrame]) -> Any:
    """Success rate of trapped runs that recovered vs did not (declared + full pooled)."""
    title = "Figure 9: task success of trapped runs, recovered vs not (declared + full)"
    d = fd["fig9"]
    if d.is_empty() or d.get_column("n").sum() == 0:
        return _empty(title, "No trapped runs with a verdict")
    pooled = "All models (pooled)"
    models = sorted(s for s in d.get_column("scope").unique().to_list() if s != pooled)
    order = [pooled, *models]
    d = d.with_columns(label=pl.format("n={}", pl.col("n")), rate0=pl.col("success_rate").fill_null(0.0))
    outcomes = ["recovered", "not recovered"]
    y = alt.Y("scope:N", sort=order, title=None)
    yo = alt.YOffset("outcome:N", sort=outcomes)
    bars = alt.Chart(d).mark_bar().encode(
        y=y, yOffset=yo,
        x=alt.X("rate0:Q", title="task success rate", scale=alt.Scale(domain=[0, 1.1], nice=False),
              axis=alt.Axis(values=[0, 0.2, 0.4, 0.6, 0.8, 1.0])),
        color=alt.Color("outcome:N", sort=outcomes, title="Trapped run", scale=alt.Scale(domain=outcomes, range=[OKABE_ITO[2], OKABE_ITO[3]])),
        tooltip=["scope", "outcome", "n:Q", alt.Tooltip("success_rate:Q", format=".3f")],
    )
    text = alt.Chart(d).mark_text(align="left", dx=4, fontSize=11).encode(y=y, yOffset=yo, x="rate0:Q", text="label:N")
    return alt.layer(bars, text).properties(
        width=_WIDTH, height=alt.Step(14),
        title=alt.Title(title, subtitle="n = trapped runs with a verdict; pooled row first"),
    )


#: The colour of each diagnosis word of the control effect (legend order: ``stats.DIAGNOSES``).
_WORD_COLOURS: dict[str, str] = {
    "lured": OKABE_ITO[3], "sensitive": OKABE_ITO[2], "negligible": OKABE_ITO[4], "blind": OKABE_ITO[1],
    "not drawn": "#999999", "inconclusive": OKABE_ITO[5], "n/a": "#cccccc",
}
_DIAGNOSES: tuple[tuple[str, str], ...] = tuple((w, _WORD_COLOURS.get(w, "#000000")) for w in stats.DIAGNOSES)


def fig10(fd: Mapping[str, pl.DataFrame]) -> Any:
    """Control effect: first-pick rate of the canary minus of its twin, per type, by diagnosis."""
    title = "Figure 10: lured, sensitive or blind? first pick of the canary minus of its twin"
    d = fd["fig10"].filter(pl.col("delta").is_not_null())
    if d.is_empty():
        return _empty(title, "Needs declared and control runs (study.conditions)")
    level = f"{100.0 * float(d['level'][0]):.3g}%" if "level" in d.columns else "95%"
    d = d.with_columns(type_label=pl.col("type").replace_strict(TYPE_LABELS, default=pl.col("type")))
    order = sorted(d.get_column("model").unique().to_list())
    domain = [k for k, _ in _DIAGNOSES]
    color = alt.Color("diagnosis:N", title="Diagnosis", sort=domain,
                      scale=alt.Scale(domain=domain, range=[c for _, c in _DIAGNOSES]))
    y = alt.Y("model:N", sort=order, title=None)
    x = alt.X("delta:Q", title="Δ = canary − twin (first pick)")
    base = alt.Chart().encode(y=y)
    rule = base.mark_rule(strokeWidth=2, color="#555555").encode(x="lo:Q", x2="hi:Q")
    point = base.mark_point(filled=True, size=70, opacity=1).encode(
        x=x, color=color,
        tooltip=["model", "type", alt.Tooltip("canary:Q", format=".3f"), alt.Tooltip("control:Q", format=".3f"),
                 alt.Tooltip("delta:Q", format="+.3f"), alt.Tooltip("lo:Q", format="+.3f"), alt.Tooltip("hi:Q", format="+.3f"),
                 alt.Tooltip("p_holm:Q", format=".3g"), alt.Tooltip("tost_p:Q", format=".3g"), "n:Q", "clusters:Q",
                 "outcome", "diagnosis"],
    )
    zero = alt.Chart().mark_rule(color="#444444", strokeDash=[5, 4]).encode(x=alt.datum(0))
    return alt.layer(zero, rule, point, data=d).properties(width=230, height=alt.Step(16)).facet(
        facet=alt.Facet("type_label:N", sort=[TYPE_LABELS[t] for t in CANARY_TYPES], title=None,
                        header=alt.Header(labelFontSize=13, labelFontWeight="bold")),
        columns=3,
    ).properties(
        title=alt.Title(title, subtitle=["Δ = first-pick rate of the canary (declared) − of its twin (control, the same list "
                                         "with only that canary healthy), paired by (task, seed); positive: the defect draws it",
                                         f"whiskers: {level} CI (1 − stats.alpha; tasks, tools and wordings crossed); dashed: "
                                         "no difference; colour: diagnosis (lured / sensitive: Δ ≷ 0, Holm; negligible: Δ ≠ 0 "
                                         "but inside the margin; blind: |Δ| < margin and the twin taken; not drawn: both "
                                         "rarely taken)"]),
    )


FIGURES: dict[str, Callable[[Mapping[str, pl.DataFrame]], Any]] = {
    "fig2": fig2, "fig4": fig4, "fig5": fig5, "fig6": fig6, "fig7": fig7, "fig8": fig8, "fig9": fig9, "fig10": fig10,
}


def fig11(fd: Mapping[str, pl.DataFrame]) -> Any:
    """The dose curves (issues 21, 27): first-pick rate against k, a panel per canary type (its
    canaries solid, its twins dashed) and one for the distractors, a line per model, its
    interval as a band."""
    title = "Figure 11: how each weakness grows as look-alikes multiply"
    d = fd["fig11"].filter(pl.col("rate").is_not_null())
    if d.is_empty():
        return _empty(title, "Needs dose runs (study.conditions: [dose])")
    if "family" not in d.columns:  # a curve file from before twins: every kind is its own panel
        d = d.with_columns(family=pl.col("kind"), look_alike=pl.lit("canary"))
    families = [k for k in (*CANARY_TYPES, stats.DISTRACTOR) if k in set(d["family"].to_list())]
    d = d.with_columns(kind_label=pl.col("family").replace_strict({**TYPE_LABELS, "distractor": "distractor (untyped)"},
                                                                    default=pl.col("family")),
                       x=(pl.col("k") + 1).log(2), series=pl.col("model") + " / " + pl.col("look_alike"))
    models = sorted(d["model"].unique().to_list())
    color = alt.Color("model:N", title="Model", sort=models,
                      scale=alt.Scale(domain=models, range=list(OKABE_ITO[: max(len(models), 1)]) * (len(models) // 8 + 1)))
    dash = alt.StrokeDash("look_alike:N", title="Look-alikes", sort=["canary", "twin", "distractor"],
                          scale=alt.Scale(domain=["canary", "twin", "distractor"], range=[[1, 0], [5, 3], [1, 0]]),
                          legend=None)  # the subtitle says it: canaries solid, twins dashed
    levels = sorted(d["k"].unique().to_list())
    x = alt.X("x:Q", title="look-alikes k (log scale)",
              axis=alt.Axis(values=[math.log2(k + 1) for k in levels], labelExpr="round(pow(2, datum.value) - 1)"))
    base = alt.Chart().encode(x=x, color=color, detail="series:N")
    band = base.mark_area(opacity=0.12).encode(y=alt.Y("lo:Q", title="first-pick trap rate", scale=alt.Scale(domain=[0, 1])),
                                               y2="hi:Q")
    line = base.mark_line(point=True).encode(
        y="rate:Q", strokeDash=dash,
        tooltip=["model", "kind", "k:Q", alt.Tooltip("rate:Q", format=".3f"), alt.Tooltip("lo:Q", format=".3f"),
                 alt.Tooltip("hi:Q", format=".3f"), "n:Q"])
    return alt.layer(band, line, data=d).properties(width=200, height=170).facet(
        facet=alt.Facet("kind_label:N", title=None, header=alt.Header(labelFontSize=13, labelFontWeight="bold"),
                        sort=[d.filter(pl.col("family") == k)["kind_label"][0] for k in families]),
        columns=4,
    ).properties(title=alt.Title(title, subtitle=[
        "first-pick trap rate (the first call into the needed tool's family went to a look-alike) against the number k of "
        "look-alikes of one kind: a type's canaries (solid) and their twins (dashed), or neutral distractors",
        "bands: task-clustered intervals; a type rising faster than its twins from k = 1 is a weakness that grows with "
        "density (stats.json dose_response.<model>.<type>.vs_twin.growth)"]))


def build_charts(result: Mapping[str, Any]) -> dict[str, Any]:
    """Every figure as a configured Altair chart, keyed ``fig2`` ... ``fig10``, and ``fig11``
    (the dose curves) when the study ran the dose condition (``dose_response``)."""
    fd = stats.figure_data(dict(result))
    charts = {name: _finish(fn(fd)) for name, fn in FIGURES.items()}
    if result.get("dose_response"):
        charts["fig11"] = _finish(fig11(fd))
    return charts


def render(chart: Any, path_stem: Path, formats: Sequence[str] = FORMATS) -> list[Path]:
    """Write ``chart`` as ``path_stem.<fmt>`` for each format (offline: vl-convert)."""
    spec = chart.to_dict()
    out: list[Path] = []
    for fmt in formats:
        target = path_stem.with_suffix(f".{fmt}")
        if fmt == "svg":
            atomic_write_text(target, vlc.vegalite_to_svg(spec))
        elif fmt == "png":
            atomic_write_bytes(target, vlc.vegalite_to_png(spec, scale=2))
        elif fmt == "html":
            atomic_write_text(target, safe_html(vlc.vegalite_to_html(spec, bundle=True)))
        elif fmt == "json":
            atomic_write_text(target, json.dumps(spec, indent=1))
        else:
            raise InputError("figures.formats", fmt, "unsupported format (svg, png, html, json)")
        out.append(target)
    return out


#: The spec as vl-convert's page embeds it: ``const spec = <JSON>;`` inside a ``<script>``.
_SPEC_AT = "const spec = "


def safe_html(page: str) -> str:
    """vl-convert's figure page with its embedded spec re-written as JSON safe in a script
    (:func:`canarykit.report.text.json_for_script`, as the report embeds its figures: no ``<``,
    ``>`` or ``&`` left, the same value to JavaScript).

    vl-convert writes the spec's JSON raw into a ``<script>``, so a model or group label
    holding ``</script><script>...`` would run as script (every label, title and tooltip of
    a figure comes from the study's data). The spec is found where vl-convert puts it and
    parsed as exactly one JSON value; a page laid out otherwise is refused rather than
    written unsafe."""
    at = page.rfind(_SPEC_AT)
    if at < 0:
        raise RuntimeError("vl-convert's HTML page no longer holds 'const spec = ': cannot escape the figure's spec")
    start = at + len(_SPEC_AT)
    try:
        spec, end = json.JSONDecoder().raw_decode(page, start)
    except ValueError as exc:
        raise RuntimeError(f"vl-convert's HTML page: the embedded spec is not JSON ({exc})") from None
    return page[:start] + json_for_script(spec) + page[end:]


def _resolve(source: Any, cfg: stats.StatsConfig | Mapping[str, Any] | None) -> dict[str, Any]:
    if isinstance(source, pl.DataFrame):
        return stats.compute_all(source, cfg)
    if isinstance(source, Mapping):
        return dict(source)
    if isinstance(source, (str, Path)):
        p = Path(source)
        if p.suffix == ".json":
            try:
                return dict(json.loads(p.read_text(encoding="utf-8")))
            except (OSError, ValueError) as exc:
                raise InputError(str(p), "-", f"cannot read stats JSON: {exc}") from exc
        return stats.compute_all(stats.load_runs(p), cfg, source=str(p), validate=False)
    raise TypeError(f"expected a runs DataFrame, a stats dict or a path, got {type(source).__name__}")


def make_figures(
    runs_df_or_stats: pl.DataFrame | Mapping[str, Any] | str | Path,
    out_dir: str | Path,
    formats: Sequence[str] = FORMATS,
    *,
    cfg: stats.StatsConfig | Mapping[str, Any] | None = None,
) -> list[Path]:
    """Render Figures 2, 4, 5, 6, 7, 8, 9, 10 into ``out_dir``; returns the files written.

    ``runs_df_or_stats``: a per-run table (frame or ``.parquet`` path; statistics are computed
    with ``cfg``) or a :func:`canarykit.stats.compute_all` result (dict or ``stats.json`` path).
    """
    for fmt in formats:
        if fmt not in (*FORMATS, "json"):
            raise InputError("figures.formats", fmt, "unsupported format (svg, png, html, json)")
    result = _resolve(runs_df_or_stats, cfg)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name, chart in build_charts(result).items():
        written += render(chart, out / name, formats)
    return written


def offline_plots_template(vl_version: str = "5.21") -> str:
    """An HTML template for ``dvc plots show/diff --html-template``: DVC's page with Vega,
    Vega-Lite (``vl_version``; DVC's plot templates are Vega-Lite 5) and vega-embed inlined
    from vl-convert's bundle instead of loaded from a CDN, so the page renders offline. The
    ``{scripts}`` placeholder is left out on purpose: DVC would fill it with CDN tags."""
    import vl_convert as vlc

    bundle = vlc.javascript_bundle(vl_version=vl_version)  # type: ignore[call-arg]  # snippet defaults to None.replace("</script", "<\\/script")
    return (
        "<!DOCTYPE html>\n<html>\n<head>\n    {refresh_tag}\n    <meta charset=\"utf-8\">\n"
        "    <title>DVC Plot (offline)</title>\n"
        f"    <script>\n{bundle}\n</script>\n"
        "    <style>\n        table {\n            border-spacing: 15px;\n        }\n    </style>\n"
        "</head>\n<body>\n    {plot_divs}\n</body>\n</html>\n"
    )
