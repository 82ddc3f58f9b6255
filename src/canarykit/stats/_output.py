"""Writing the outputs: tables (CSV + Markdown), the figure data and ``stats.json``."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from ..store.jsonio import atomic_write_text, write_json
from ..store.paths import brace_paths
from ..types import CANARY_TYPES, POOLS
from ._config import StatsConfig
from ._descriptives import DECLARED_FULL, POOLED
from ._dose import dose_curve, dose_markdown, dose_metrics, dose_table
from ._equivalence import DIAGNOSES, DIAGNOSIS_READINGS
from ._load import load_runs
from ._study import compute_all

#: Figure id -> tidy CSV written next to stats.json (DVC plots point at these).
FIGURE_DATA_FILES: dict[str, str] = {
    "fig2": "fig2_csr.csv",
    "fig4": "fig4_csr_by_difficulty.csv",
    "fig5": "fig5_trap_rates.csv",
    "fig6": "fig6_profiles.csv",
    "fig7": "fig7_tsr_delta.csv",
    "fig8": "fig8_ablation.csv",
    "fig9": "fig9_recovery_outcome.csv",
    "fig10": "fig10_controls.csv",
    "fig11": "dose_curve.csv",  # the dose curves (header only in a study without the dose condition)
}
#: The dose curves' DVC metrics (``{}`` in a study without the dose condition), beside stats.json.
DOSE_METRICS_FILE = "dose_metrics.json"

#: Table name -> files written next to stats.json (besides the figure data).
TABLE_FILES: tuple[str, ...] = ("table1", "table2", "table3", "table_stability", "table_controls", "table_items",
                                "table_judge_sensitivity")

_ITEMS_SCHEMA: dict[str, Any] = {
    "model": pl.String, "group": pl.String, "type": pl.String, "item": pl.String, "variant": pl.Int64,
    "condition": pl.String, "rate": pl.Float64, "n": pl.Int64, "trapped": pl.Int64, "tasks": pl.Int64,
}
_SENSITIVITY_SCHEMA: dict[str, Any] = {
    "condition": pl.String, "model": pl.String, "group": pl.String, "judge": pl.String, "tsr": pl.Float64,
    "tsr_lo": pl.Float64, "tsr_hi": pl.Float64, "n": pl.Int64, "tsr_delta": pl.Float64, "tsr_delta_lo": pl.Float64,
    "tsr_delta_hi": pl.Float64,
}

_CONTROLS_SCHEMA: dict[str, Any] = {
    "model": pl.String, "group": pl.String, "type": pl.String, "diagnosis": pl.String, "outcome": pl.String,
    "canary": pl.Float64, "control": pl.Float64, "delta": pl.Float64, "lo": pl.Float64, "hi": pl.Float64, "p": pl.Float64,
    "p_holm": pl.Float64, "p_t": pl.Float64, "p_t_holm": pl.Float64, "tost_p": pl.Float64, "margin": pl.Float64,
    "n": pl.Int64, "clusters": pl.Int64, "tools": pl.Int64, "wordings": pl.Int64, "weakness": pl.Boolean,
    "n_canary": pl.Int64, "n_control": pl.Int64,
    **{f"whole_run_{k}": pl.Float64 for k in ("canary", "control", "delta", "lo", "hi", "p")},
}

_COUNT_COLUMNS = ["runs", "failed_runs", "zero_call_runs", "truncated_runs"]
_TABLE13_SCHEMA: dict[str, Any] = {
    "model": pl.String, "tier": pl.String, "csr": pl.Float64, "csr_lo": pl.Float64, "csr_hi": pl.Float64,
    "tsr": pl.Float64, "recovery": pl.Float64, "recovery_n": pl.Int64, "runs": pl.Int64,
    "tsr_lo": pl.Float64, "tsr_hi": pl.Float64, "tsr_truncated_as_failure": pl.Float64,
    "failed_runs": pl.Int64, "zero_call_runs": pl.Int64, "truncated_runs": pl.Int64,
}


def _counts(result: dict[str, Any], condition: str, model: str) -> dict[str, int]:
    k = result.get("counts", {}).get(condition, {}).get(model, {})
    return {"runs": k.get("runs", 0), "failed_runs": k.get("failed", 0), "zero_call_runs": k.get("zero_call", 0),
            "truncated_runs": k.get("truncated", 0)}


def _table13(result: dict[str, Any], condition: str) -> pl.DataFrame:
    groups = result.get("model_groups", {})
    ci = result.get("csr_ci", {}).get(condition, {})
    tsr_ci = result.get("tsr_ci", {}).get(condition, {})
    rows = []
    for m, e in ci.items():
        t = tsr_ci.get(m, {})
        rec = result["recovery"][condition][m]
        rows.append({
            "model": m, "tier": groups.get(m), "csr": e["csr"], "csr_lo": e["lo"], "csr_hi": e["hi"],
            "tsr": result["tsr"][condition].get(m), "recovery": rec["rate"], "recovery_n": rec["n"],
            "tsr_lo": t.get("lo"), "tsr_hi": t.get("hi"),
            "tsr_truncated_as_failure": result.get("tsr_truncated_as_failure", {}).get(condition, {}).get(m),
            **_counts(result, condition, m),
        })
    return pl.DataFrame(rows, schema=_TABLE13_SCHEMA, orient="row").sort(["csr", "model"], nulls_last=True)


def _table2(result: dict[str, Any], condition: str = "declared") -> pl.DataFrame:
    groups = result.get("model_groups", {})
    rates = result.get("trap_rates", {}).get(condition, {})
    rows: list[dict[str, Any]] = [
        {"model": m, "tier": groups.get(m), **r, **_counts(result, condition, m)} for m, r in sorted(rates.items())
    ]
    for name, avg in result.get("trap_rate_averages", {}).get(condition, {}).items():
        rows.append({"model": name, "tier": "average of " + "+".join(avg["groups"]), **avg["rates"]})
    schema: dict[str, Any] = {"model": pl.String, "tier": pl.String, **{t: pl.Float64 for t in CANARY_TYPES},
                              **{c: pl.Int64 for c in _COUNT_COLUMNS}}
    return pl.DataFrame(rows, schema=schema, orient="row")


def _table_stability(result: dict[str, Any]) -> pl.DataFrame:
    stab = result.get("stability", {})
    seeds = [str(s) for s in stab.get("seeds", [])]
    schema: dict[str, Any] = {"finding": pl.String, "kind": pl.String, "condition": pl.String, "family": pl.String,
                              "estimate": pl.Float64, **{f"seed_{s}": pl.Float64 for s in seeds}, "survives": pl.Boolean}
    rows = [
        {"finding": f["finding"], "kind": f["kind"], "condition": f["condition"], "family": f["family"],
         "estimate": f["estimate"], **{f"seed_{s}": f["per_seed"].get(s) for s in seeds}, "survives": f["survives"]}
        for f in stab.get("findings", [])
    ]
    return pl.DataFrame(rows, schema=schema, orient="row")


def _table_controls(result: dict[str, Any]) -> pl.DataFrame:
    """One row per (model, type) of ``control_effect``: the diagnosis, the outcome, the
    first-pick rates of the canary and its twin, their paired difference and tests, and the
    whole-run rates (``whole_run_*``, the secondary outcome)."""
    groups = result.get("model_groups", {})
    rows = [
        {"model": m, "group": groups.get(m), "type": t,
         **{k: (e.get("whole_run") or {}).get(k.removeprefix("whole_run_")) if k.startswith("whole_run_") else e.get(k)
            for k in _CONTROLS_SCHEMA if k not in ("model", "group", "type")}}
        for m, by_type in result.get("control_effect", {}).items()
        for t, e in by_type.items()
    ]
    return pl.DataFrame(rows, schema=_CONTROLS_SCHEMA, orient="row")


def _table_items(result: dict[str, Any]) -> pl.DataFrame:
    """One row per (model, type, item) of ``items``: which canary sentence (and which twin) traps."""
    groups = result.get("model_groups", {})
    rows = [
        {"model": m, "group": groups.get(m), "type": t, "item": item, **{k: e.get(k) for k in ("variant", "condition", "rate",
                                                                                               "n", "trapped", "tasks")}}
        for m, by_type in result.get("items", {}).items() for t, per in by_type.items() for item, e in per.items()
    ]
    return pl.DataFrame(rows, schema=_ITEMS_SCHEMA, orient="row")


def _table_judge_sensitivity(result: dict[str, Any]) -> pl.DataFrame:
    """Per condition and model, tsr and its delta under the primary judge and, beneath, the cross judge."""
    groups = result.get("model_groups", {})
    sens = result.get("judge_sensitivity", {})
    blocks = [("primary", result.get("tsr_ci", {}), result.get("tsr_delta", {}))]
    if sens.get("available"):
        blocks.append(("cross", sens.get("tsr_ci", {}), sens.get("tsr_delta", {})))
    rows = []
    for c in result.get("tsr_ci", {}):
        for m in result["tsr_ci"][c]:
            for judge, ci, delta in blocks:
                e, d = ci.get(c, {}).get(m, {}), delta.get(c, {}).get(m, {})
                rows.append({"condition": c, "model": m, "group": groups.get(m), "judge": judge, "tsr": e.get("tsr"),
                             "tsr_lo": e.get("lo"), "tsr_hi": e.get("hi"), "n": e.get("n"), "tsr_delta": d.get("delta"),
                             "tsr_delta_lo": d.get("lo"), "tsr_delta_hi": d.get("hi")})
    return pl.DataFrame(rows, schema=_SENSITIVITY_SCHEMA, orient="row")


def tables(result: dict[str, Any]) -> dict[str, pl.DataFrame]:
    """Tables 1-3, the stability table, the controls table, the per-item table and the judge
    sensitivity table as polars frames (Table 1: declared, Table 2: declared trap rates,
    Table 3: full, table_stability: findings per seed, table_controls: the control effect per
    model and type, table_items: each canary item's rate, table_judge_sensitivity: tsr under
    each judge)."""
    return {
        "table1": _table13(result, "declared"),
        "table2": _table2(result, "declared"),
        "table3": _table13(result, "full"),
        "table_stability": _table_stability(result),
        "table_controls": _table_controls(result),
        "table_items": _table_items(result),
        "table_judge_sensitivity": _table_judge_sensitivity(result),
    }


def _fmt(x: Any) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    return f"{x:.3f}"


def _markdown(header: list[str], rows: list[list[str]], caption: str) -> str:
    lines = [f"**{caption}**", "", "| " + " | ".join(header) + " |", "|" + "|".join(["---"] * len(header)) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    if not rows:
        lines.append("| " + " | ".join(["n/a"] * len(header)) + " |")
    return "\n".join(lines) + "\n"


def _with_ci(x: Any, lo: Any, hi: Any) -> str:
    return f"{_fmt(x)} [{_fmt(lo)}, {_fmt(hi)}]" if x is not None else "n/a"


def _level(result: dict[str, Any]) -> str:
    """The interval level of ``result`` as a percentage (``1 - stats.alpha``), e.g. ``95%``."""
    alpha = float(result.get("meta", {}).get("alpha", 0.05))
    return f"{100.0 * (1.0 - alpha):.3g}%"


def _markdown13(df: pl.DataFrame, caption: str, level: str = "95%") -> str:
    rows = [
        [
            r["model"], r["tier"] or "n/a", _with_ci(r["csr"], r["csr_lo"], r["csr_hi"]), _with_ci(r["tsr"], r["tsr_lo"], r["tsr_hi"]),
            _fmt(r["tsr_truncated_as_failure"]), f"{_fmt(r['recovery'])} ({r['recovery_n']})", str(r["runs"]),
            str(r["failed_runs"]), str(r["zero_call_runs"]), str(r["truncated_runs"]),
        ]
        for r in df.to_dicts()
    ]
    header = ["Model", "Tier", f"csr [{level} CI]", f"tsr [{level} CI]", "tsr (truncated = fail)", "Rec. (n)", "Runs", "Failed",
              "Zero-call", "Truncated"]
    return _markdown(header, rows, caption)


def _markdown2(df: pl.DataFrame, caption: str) -> str:
    rows = [
        [r["model"], r["tier"] or "n/a", *(_fmt(r[t]) for t in CANARY_TYPES),
         *("" if r[c] is None else str(r[c]) for c in _COUNT_COLUMNS)]
        for r in df.to_dicts()
    ]
    return _markdown(["Model", "Tier", *CANARY_TYPES, "Runs", "Failed", "Zero-call", "Truncated"], rows, caption)


def _markdown_stability(df: pl.DataFrame, caption: str) -> str:
    seeds = [c for c in df.columns if c.startswith("seed_")]
    rows = [
        [r["finding"], r["family"] or "", _fmt(r["estimate"]), *(_fmt(r[s]) for s in seeds),
         "n/a" if r["survives"] is None else ("yes" if r["survives"] else "no")]
        for r in df.to_dicts()
    ]
    return _markdown(["Finding", "Family", "Pooled", *(s.replace("_", " ") for s in seeds), "Survives every seed"], rows, caption)


def _markdown_controls(df: pl.DataFrame, caption: str, level: str = "95%") -> str:
    def p(x: Any) -> str:
        return "n/a" if x is None else (f"{x:.3f}" if x >= 0.001 else "<0.001")

    rows = [
        [r["model"], r["type"], r["diagnosis"] or "n/a", (r["outcome"] or "").replace("_", " "), _fmt(r["canary"]),
         _fmt(r["control"]), f"{_with_ci(r['delta'], r['lo'], r['hi'])}", p(r["p_holm"]), p(r["p_t_holm"]),
         p(r["tost_p"]), f"{r['n']} ({r['clusters']})", "" if r["wordings"] is None else str(r["wordings"]),
         _fmt(r["whole_run_canary"]), _fmt(r["whole_run_control"])]
        for r in df.to_dicts()
    ]
    header = ["Model", "Type", "Diagnosis", "Outcome", "Canary", "Twin", f"Δ [{level} CI]", "p swap (Holm)", "p t (Holm)",
              "TOST p", "Pairs (tasks)", "Wordings", "Whole run: canary", "Whole run: twin"]
    legend = "\n".join(f"- **{w}**: {DIAGNOSIS_READINGS[w]}" for w in DIAGNOSES)
    return _markdown(header, rows, caption) + "\n" + legend + "\n"


def _markdown_items(df: pl.DataFrame, caption: str) -> str:
    rows = [[r["model"], r["type"], r["item"], str(r["variant"]), r["condition"], _fmt(r["rate"]), str(r["n"]), str(r["tasks"])]
            for r in df.to_dicts()]
    return _markdown(["Model", "Type", "Item", "Variant", "Condition", "Rate", "Runs", "Tasks"], rows, caption)


def _markdown_sensitivity(df: pl.DataFrame, caption: str, level: str = "95%") -> str:
    rows = [[r["condition"], r["model"], r["judge"], _with_ci(r["tsr"], r["tsr_lo"], r["tsr_hi"]), "" if r["n"] is None else str(r["n"]),
             _with_ci(r["tsr_delta"], r["tsr_delta_lo"], r["tsr_delta_hi"]) if r["condition"] != "baseline" else ""]
            for r in df.to_dicts()]
    return _markdown(["Condition", "Model", "Judge", f"tsr [{level} CI]", "Judged", f"tsr delta [{level} CI]"], rows, caption)


def _declared_by_model(result: dict[str, Any], groups: dict[str, str], section: str, key: str, value: str) -> pl.DataFrame:
    """One row per model and key of ``result[section]["declared"]`` (model -> key -> number)."""
    return pl.DataFrame(
        [
            {"model": m, "group": groups.get(m), key: k, value: v}
            for m, by_key in result.get(section, {}).get("declared", {}).items()
            for k, v in by_key.items()
        ],
        schema={"model": pl.String, "group": pl.String, key: pl.String, value: pl.Float64},
        orient="row",
    )


def figure_data(result: dict[str, Any]) -> dict[str, pl.DataFrame]:
    """The tidy data behind each figure, keyed like :data:`FIGURE_DATA_FILES`."""
    groups: dict[str, str] = result.get("model_groups", {})
    decl_ci = result.get("csr_ci", {}).get("declared", {})
    fig2 = pl.DataFrame(
        [{"model": m, "group": groups.get(m), "csr": e["csr"], "lo": e["lo"], "hi": e["hi"], "n": e["n"]} for m, e in decl_ci.items()],
        schema={"model": pl.String, "group": pl.String, "csr": pl.Float64, "lo": pl.Float64, "hi": pl.Float64, "n": pl.Int64},
        orient="row",
    )
    fig4 = _declared_by_model(result, groups, "csr_by_difficulty", "difficulty", "csr")
    fig5 = _declared_by_model(result, groups, "trap_rates", "type", "rate")
    fig6 = fig5.with_columns(
        axis_index=pl.col("type").replace_strict({t: i for i, t in enumerate(CANARY_TYPES)}, return_dtype=pl.Int64)
    )
    fig7_cols = ("delta", "lo", "hi", "cohens_d", "cohens_h", "n_base", "n_cond")
    fig7 = pl.DataFrame(
        [
            {"model": m, "group": groups.get(m), "condition": c, **{k: e.get(k) for k in fig7_cols}}
            for c, by_m in result.get("tsr_delta", {}).items()
            for m, e in by_m.items()
        ],
        schema={"model": pl.String, "group": pl.String, "condition": pl.String, "delta": pl.Float64, "lo": pl.Float64,
                "hi": pl.Float64, "cohens_d": pl.Float64, "cohens_h": pl.Float64, "n_base": pl.Int64, "n_cond": pl.Int64},
        orient="row",
    )
    fig8 = pl.DataFrame(
        [
            {"model": m, "group": groups.get(m), "pool": p, "csr": e[p]}
            for m, e in result.get("ablation", {}).get("models", {}).items()
            for p in POOLS
        ],
        schema={"model": pl.String, "group": pl.String, "pool": pl.String, "csr": pl.Float64},
        orient="row",
    )
    fig9 = pl.DataFrame(
        [
            {"scope": "All models (pooled)" if m == POOLED else m, "group": groups.get(m, "pooled"),
             "outcome": k.replace("_", " "), "n": v["n"], "success_rate": v["success_rate"]}
            for m, e in result.get("recovery_outcome", {}).get(DECLARED_FULL, {}).items()
            for k, v in e.items()
        ],
        schema={"scope": pl.String, "group": pl.String, "outcome": pl.String, "n": pl.Int64, "success_rate": pl.Float64},
        orient="row",
    )
    fig10 = _table_controls(result).with_columns(level=pl.lit(1.0 - float(result.get("meta", {}).get("alpha", 0.05))))
    return {"fig2": fig2, "fig4": fig4, "fig5": fig5, "fig6": fig6, "fig7": fig7, "fig8": fig8, "fig9": fig9, "fig10": fig10,
            "fig11": dose_curve(result.get("dose_response") or {})}


def table_captions(result: dict[str, Any]) -> dict[str, str]:
    unit = result.get("meta", {}).get("bootstrap_unit", "task")
    level = _level(result)
    margin = result.get("meta", {}).get("equivalence_margin", 0.10)
    min_clusters = result.get("meta", {}).get("min_clusters", 10)
    how = {"task": "BCa bootstrap, resampling whole tasks",
           "task_x_item": "cluster-robust t, tasks and canary items as crossed random factors (CR2, Bell-McCaffrey df)"}.get(
        unit, "percentile bootstrap resampling runs (the paper's run-level intervals)")
    common = (f"{level} CIs: {how}; tsr excludes runs truncated by the turn limit; Rec. = recovery rate (n trapped runs); "
              "Runs = runs analysed, Failed = backend-error runs (excluded), Zero-call = runs without a tool call (no csr)")
    return {
        "table1": f"Table 1: declared condition, sorted by csr; {common}",
        "table2": "Table 2: type-specific trap rate (declared) over runs where the type was offered and at least one "
                  "tool was called; n/a = type never offered",
        "table3": f"Table 3: full condition, sorted by csr; {common}",
        "table_stability": "Per-seed stability: each headline finding recomputed on each seed alone; it survives when "
                           "its sign holds in every seed",
        "table_controls": f"Control effect per model and canary type. Outcome: first pick (of the runs that called into "
                          f"the families of the real tools the type's stand-ins shadow, the share whose first such call "
                          f"went to the type's canary, declared, or to its twin, control arm T); recovery after call for a "
                          f"type whose canary and twin read alike (diagnosis n/a). Δ = canary − twin paired by (task, "
                          f"seed) over the tasks with the outcome on both sides, {level} CI ({how}); p: cluster-robust "
                          f"t, Holm across the models under test × types (each instrument across its types); TOST p: |Δ| < "
                          f"margin {margin}; at least {min_clusters} tasks. Whole run: the trap rate with canaries and "
                          "the call rate of twins (the paper's, secondary). The diagnosis (first row that applies: "
                          "n/a, inconclusive below the task minimum, lured, sensitive, blind, not drawn, inconclusive):",
        "table_items": "Per canary item (the canary id: its tool and wording variant, @v<i>): the trap rate of the runs "
                       "offered it (declared), and its twin's call rate (control:<id>, control condition); Runs = runs "
                       "offered the item that called a tool, Tasks = distinct tasks among them",
        "table_judge_sensitivity": f"tsr and the tsr delta (baseline - condition) under the primary judge and under the "
                                   f"cross judge (judge.cross), the same runs and {level} CIs ({how}); a finding that holds "
                                   "under one judge only is a finding about the judge",
    }


def write_outputs(result: dict[str, Any], out_dir: str | Path) -> list[Path]:
    """Write stats.json, the tables (CSV + Markdown) and the figure data CSVs."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    def put(name: str, text: str) -> None:
        atomic_write_text(out / name, text)
        written.append(out / name)

    write_json(out / "stats.json", result)
    written.append(out / "stats.json")
    captions = table_captions(result)
    for name, frame in tables(result).items():
        put(f"{name}.csv", frame.write_csv())
        if name == "table2":
            md = _markdown2(frame, captions[name])
        elif name == "table_stability":
            md = _markdown_stability(frame, captions[name])
        elif name == "table_controls":
            md = _markdown_controls(frame, captions[name], _level(result))
        elif name == "table_items":
            md = _markdown_items(frame, captions[name])
        elif name == "table_judge_sensitivity":
            md = _markdown_sensitivity(frame, captions[name], _level(result))
        else:
            md = _markdown13(frame, captions[name], _level(result))
        put(f"{name}.md", md)
    for key, frame in figure_data(result).items():
        put(FIGURE_DATA_FILES[key], frame.write_csv())
    dose = result.get("dose_response") or {}
    write_json(out / DOSE_METRICS_FILE, dose_metrics(dose))
    written.append(out / DOSE_METRICS_FILE)
    if dose:  # table_dose only in a study that ran the dose condition
        table = dose_table(dose)
        put("table_dose.csv", table.write_csv())
        put("table_dose.md", dose_markdown(table))
    return written


def stats_command(
    runs_path: str,
    out_dir: str,
    *,
    resamples: int = 10000,
    seed: int = 20261130,
    alpha: float = 0.05,
    group_averages: dict[str, list[str]] | None = None,
    primary_pool: str = "standard",
    ablation_condition: str = "declared",
    bootstrap_unit: str = "task_x_item",
    test_groups: list[str] | None = None,
    equivalence_margin: float = 0.10,
    min_clusters: int = 10,
    config: StatsConfig | None = None,
    pools: Sequence[str] = (),
) -> int:
    """``canarykit stats RUNS -o DIR``: read, validate, compute, write; print the console notes
    (:func:`console_notes`) to stderr and what it wrote to stdout. ``config`` (e.g. from params.yaml) wins over the
    keyword settings; ``pools`` (the study's pool files) give the meta's wording seed and draws.
    Returns exit status 0."""
    if config is None:
        config = StatsConfig(
            resamples=resamples, seed=seed, alpha=alpha, group_averages=group_averages, primary_pool=primary_pool,
            ablation_condition=ablation_condition, bootstrap_unit=bootstrap_unit,  # type: ignore[arg-type]
            test_groups=tuple(test_groups) if test_groups is not None else None,
            equivalence_margin=equivalence_margin, min_clusters=min_clusters,
        )
    df = load_runs(runs_path)
    result = compute_all(df, config, source=str(runs_path), validate=False, pools=pools)
    written = write_outputs(result, out_dir)
    for line in console_notes(result):
        print(line, file=sys.stderr)
    figure_files = set(FIGURE_DATA_FILES.values())
    data = [str(p) for p in written if p.name in figure_files]
    metrics = [str(p) for p in written if p.name == DOSE_METRICS_FILE]
    table_files = [str(p) for p in written if p.name not in figure_files and p.name not in ("stats.json", DOSE_METRICS_FILE)]
    print(f"canarykit stats: wrote {len(written)} files to {out_dir}")
    print(f"  statistics:  {Path(out_dir) / 'stats.json'}")
    print(f"  tables:      {', '.join(brace_paths(table_files))}")
    print(f"  figure data: {', '.join(brace_paths(data))}")
    if metrics:
        print(f"  dvc metrics: {', '.join(metrics)}")
    return 0


def console_notes(result: dict[str, Any]) -> list[str]:
    """What the console says once about a study's statistics (the few-clusters and
    few-wordings notes)."""
    meta = result.get("meta", {})
    return [f"stats: {meta[k]}" for k in ("few_clusters_note", "few_wordings_note") if meta.get(k)]
