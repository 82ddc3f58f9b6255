"""The study report: one self-contained HTML file rendered from a study's outputs.

:func:`build_report` reads what the pipeline wrote under the study's output directory
(``stats.json``, the tables of the ``stats`` rule, ``judge/validation.json``,
``params.resolved.yaml``, ``runs.parquet``) and the run records of a seeded sample of trapped
runs from the run store, and renders ``resources/report.html.j2`` with Jinja2. The page holds

- the oracle instrument check (issue 16) at the top: a failing oracle run is flagged as a
  configuration or task-suite problem, never read as a result;
- what was run (conditions, seeds, pools, judges) and the run counts per model;
- the first screen (:mod:`.firstscreen`) and the diagnosis per model in words
  (:mod:`.diagnosis`) from ``stats.json``, reference and planted agents labelled as
  instruments (their ``group``), never as models;
- the tables, inline and sortable (a small inline script);
- each figure once: its Vega-Lite spec embedded and drawn by vega-embed (Vega, Vega-Lite and
  vega-embed inlined from vl-convert's bundle: it works offline), over a PNG of the same spec
  (vl-convert) that stays when JavaScript does not run;
- a trace viewer: for a seeded sample of trapped runs, the conversation with each tool call
  marked real, canary (type, shadows), control or unknown by the detector
  (:func:`canarykit.detection.detect.classify_calls`), long texts clipped;
- the parameters as a table of dotted keys (``params.resolved.yaml`` flattened).

Everything is inlined: the file opens from disk in any browser, offline. Key values never
appear (params hold only the names of key variables; every text from a run record goes
through the key scrubber again).
"""

from __future__ import annotations

import base64
import math
import os
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from ..errors import InputError
from ..stats import TABLE_FILES, dose_table, table_captions
from ..store.jsonio import atomic_write_text, read_json_input
from ..types import CANARY_TYPES
from .diagnosis import CONTROL_READINGS, TYPE_PLURALS, diagnoses
from .firstscreen import findings, instrument_groups
from .text import TYPE_LABELS, ci_text, finite, json_for_script, num, script_safe, value_text
from .traceview import DEFAULT_SAMPLING, TraceSampling, sample_traces, traces

__all__ = [
    "FIGURE_NAMES",
    "TABLE_NAMES",
    "TYPE_PLURALS",
    "TraceSampling",
    "build_report",
    "ci_text",
    "diagnoses",
    "flatten_params",
    "load_captions",
    "sample_traces",
    "write_report",
]

TABLE_NAMES: tuple[str, ...] = TABLE_FILES
FIGURE_NAMES: tuple[str, ...] = ("fig2", "fig4", "fig5", "fig6", "fig7", "fig8", "fig9", "fig10")
TEMPLATE = "report.html.j2"

#: The intervals of each ``stats.bootstrap_unit``, as the report names them.
INTERVALS = {"task_x_item": "cluster-robust t intervals, tasks and canary items as crossed random factors",
             "task": "BCa bootstrap intervals resampling whole tasks", "run": "percentile bootstrap intervals resampling runs"}

#: Per table, the key columns the page shows first, in order (the full table is a click away):
#: ``(label, column)``, or ``(label, estimate, lo, hi)`` for an estimate with its interval.
KEY_COLUMNS: dict[str, tuple[tuple[str, ...], ...]] = {
    "table1": (("model", "model"), ("tier", "tier"), ("csr [CI]", "csr", "csr_lo", "csr_hi"),
               ("tsr [CI]", "tsr", "tsr_lo", "tsr_hi"), ("recovery", "recovery"), ("trapped runs", "recovery_n"),
               ("runs", "runs"), ("failed", "failed_runs")),
    "table2": (("model", "model"), ("tier", "tier"), *((TYPE_LABELS[t], t) for t in CANARY_TYPES), ("runs", "runs")),
    "table_controls": (("model", "model"), ("type", "type"), ("diagnosis", "diagnosis"),
                       ("first-pick \u0394 [CI]", "delta", "lo", "hi"), ("canary", "canary"), ("twin", "control"),
                       ("Holm p", "p_holm"), ("tasks", "clusters")),
    "table_stability": (("finding", "finding"), ("condition", "condition"), ("estimate", "estimate"),
                        ("survives every seed", "survives")),
}
KEY_COLUMNS["table3"] = KEY_COLUMNS["table1"]

#: Every table's title: a reader's name for it, never its file name.
_TABLE_TITLES: dict[str, str] = {
    "table1": "Table 1: declared condition",
    "table2": "Table 2: type-specific trap rates (declared)",
    "table3": "Table 3: full condition",
    "table_controls": "Control effect per model and canary type",
    "table_stability": "Per-seed stability of the headline findings",
    "table_items": "Trap rate per canary wording",
    "table_judge_sensitivity": "Task success under each judge",
}

#: A figure wider than this (px) takes a row of its own; narrower ones go two to a row.
WIDE_FIGURE_PX = 1000

#: A table with more rows than this shows only its top rows (:data:`TOP_ROWS`) on the page, the
#: whole table a link away (its CSV beside the report): a page a reader can scroll.
LONG_TABLE = 24
TOP_ROWS = 12
#: The top rows of a long table: ``(column, descending, in words)``; other tables keep their CSV's order.
TOP_ORDER: dict[str, tuple[str, bool, str]] = {
    "table_items": ("trapped", True, "the wordings that trapped the most runs"),
    "table_controls": ("delta", True, "the largest first-pick differences (canary minus twin)"),
    "table_judge_sensitivity": ("tsr_delta", True, "the largest drops in task success against baseline"),
}



def flatten_params(obj: Any, prefix: str = "") -> list[tuple[str, str]]:
    """``[(dotted key, value text)]`` of a nested mapping: ``agent.retries.max_attempts``.

    Lists of scalars become one comma-separated value; a list of mappings is numbered
    (``models[0].name``); an empty mapping or list keeps its key.
    """
    rows: list[tuple[str, str]] = []
    if isinstance(obj, Mapping):
        if not obj and prefix:
            return [(prefix, "{}")]
        for k, v in obj.items():
            rows += flatten_params(v, f"{prefix}.{k}" if prefix else str(k))
        return rows
    if isinstance(obj, list | tuple) and any(isinstance(x, Mapping | list | tuple) for x in obj):
        for i, v in enumerate(obj):
            rows += flatten_params(v, f"{prefix}[{i}]")
        return rows
    return [(prefix, value_text(obj))]


# --------------------------------------------------------------------------- inputs


def _read_json(source: Any, what: str) -> Any:
    if source is None or isinstance(source, Mapping):
        return source
    return read_json_input(Path(source), what)


def _read_params(source: Any) -> dict[str, Any]:
    if source is None:
        return {}
    if isinstance(source, Mapping):
        return dict(source)
    p = Path(source)
    try:
        doc = yaml.safe_load(p.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise InputError(str(p), "<file>", f"cannot read the study parameters: {exc}") from exc
    if not isinstance(doc, dict):
        raise InputError(str(p), "<root>", "the study parameters must be a mapping")
    return doc


def load_captions(source: str | Path | Iterable[str | Path] | None) -> dict[str, str]:
    """``name -> caption`` from ``<name>.rst`` files (the captions of the workflow's
    ``report/`` directory; RST literals shown as plain text): a directory or the files.
    A Snakemake report template (Jinja markup) is no caption and is skipped."""
    if source is None:
        return {}
    if isinstance(source, str | Path):
        files = sorted(Path(source).glob("*.rst")) if Path(source).is_dir() else [Path(source)]
    else:
        files = [Path(p) for p in source]
    out: dict[str, str] = {}
    for p in files:
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(str(p), "<file>", f"cannot read the caption: {exc}") from exc
        if "{{" in text or "{%" in text:
            continue
        out[p.stem] = " ".join(text.replace("``", "").split())
    return out


# --------------------------------------------------------------------------- tables


def _cell(value: Any, dtype: pl.DataType) -> dict[str, Any]:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return {"text": "n/a", "key": ""}
    if isinstance(value, bool):
        return {"text": "true" if value else "false", "key": str(int(value))}
    if dtype.is_float():
        return {"text": num(value, 3), "key": repr(float(value))}
    if dtype.is_integer():
        return {"text": str(value), "key": str(int(value))}
    return {"text": str(value), "key": None}


def html_table(frame: pl.DataFrame, table_id: str, title: str, caption: str = "") -> dict[str, Any]:
    """A table for the template: columns (numeric or not) and cells (text, sort key)."""
    columns = [{"label": c, "numeric": frame.schema[c].is_numeric() or frame.schema[c] == pl.Boolean} for c in frame.columns]
    dtypes = [frame.schema[c] for c in frame.columns]
    rows = [[_cell(v, dt) for v, dt in zip(row, dtypes, strict=True)] for row in frame.iter_rows()]
    return {"id": table_id, "title": title, "caption": caption, "columns": columns, "rows": rows}


def key_table(frame: pl.DataFrame, table_id: str) -> dict[str, Any] | None:
    """The key columns of a table (:data:`KEY_COLUMNS`) for the template, an estimate and its
    interval in one cell (sorted by the estimate); None for a table without key columns."""
    spec = [c for c in KEY_COLUMNS.get(table_id, ()) if all(col in frame.columns for col in c[1:])]
    if not spec or frame.width <= len(spec):
        return None
    columns, cols = [], []
    for label, *names in spec:
        dtype = frame.schema[names[0]]
        columns.append({"label": label, "numeric": dtype.is_numeric() or dtype == pl.Boolean})
        cols.append((names, dtype))
    rows = []
    for row in frame.iter_rows(named=True):
        cells = []
        for names, dtype in cols:
            if len(names) == 3:
                x = row[names[0]]
                cells.append({"text": ci_text(x, row[names[1]], row[names[2]], 3, signed=names[0] == "delta"),
                              "key": repr(float(x)) if finite(x) is not None else ""})
            else:
                cells.append(_cell(row[names[0]], dtype))
        rows.append(cells)
    return {"id": f"{table_id}-key", "columns": columns, "rows": rows, "caption": "", "all": frame.width}


def _read_csv(path: str | Path, name: str) -> pl.DataFrame:
    try:
        return pl.read_csv(Path(path), infer_schema_length=None)
    except pl.exceptions.NoDataError:
        return pl.DataFrame()
    except (OSError, pl.exceptions.ComputeError) as exc:
        raise InputError(str(path), "<file>", f"cannot read table {name}: {exc}") from exc




def table_view(frame: pl.DataFrame, name: str, caption: str, csv_href: str | None) -> dict[str, Any]:
    """A table of the statistics for the page: its title and caption, its key columns first
    (:func:`key_table`) and the whole table a click away. A long table (over :data:`LONG_TABLE`
    rows) shows its top :data:`TOP_ROWS` rows (:data:`TOP_ORDER`); every table links its CSV."""
    top = None
    if frame.height > LONG_TABLE:
        column, descending, words = TOP_ORDER.get(name, ("", False, "the first rows of the CSV"))
        if column in frame.columns:
            frame = frame.sort(column, descending=descending, nulls_last=True, maintain_order=True)
        top = {"shown": TOP_ROWS, "all": frame.height, "order": words}
        frame = frame.head(TOP_ROWS)
    view = html_table(frame, name, _TABLE_TITLES.get(name, name.replace("_", " ")), caption)
    view.update(key=key_table(frame, name), top=top, csv=csv_href, file=f"{name}.csv")
    return view


def _href(path: str | Path, links_from: str | Path | None) -> str | None:
    """The link from the report to a file beside it (relative, so the results directory can move)."""
    if links_from is None:
        return None
    return Path(os.path.relpath(Path(path).resolve(), Path(links_from).resolve())).as_posix()


def _with_known_power(f: dict[str, Any], cfg: Mapping[str, Any], runs: pl.DataFrame | None,
                      result: Mapping[str, Any]) -> dict[str, Any]:
    """The first screen's "N of N found" with the power the design gives the weakest known
    answer (:func:`canarykit.study.plan.known_answer_power`, on the study's own pairs)."""
    from ..study.plan import design_from_runs, known_answer_power

    if f["known"]["total"] and runs is not None:
        pool = str((result.get("meta") or {}).get("primary_pool") or (cfg.get("canaries") or {}).get("pool") or "standard")
        power = known_answer_power(cfg, design_from_runs(runs, pool), sims=200, rates=result.get("control_effect") or {})
        f["known"]["power"] = power["min"]
        f["known"]["underpowered"] = sum(r["power"] < 0.8 for r in power["answers"])
    return f


# --------------------------------------------------------------------------- the study


def _judge_text(j: Any) -> str:
    if not isinstance(j, Mapping) or not j:
        return "none"
    kind = str(j.get("kind", "?"))
    return f"{kind} ({j['model']})" if j.get("model") else kind


def study_summary(params: Mapping[str, Any], result: Mapping[str, Any], runs: pl.DataFrame | None) -> dict[str, Any]:
    """The preamble's facts (what was run) as readable strings."""
    meta = result.get("meta") or {}
    study = params.get("study") or {}
    canaries = params.get("canaries") or {}
    ablation = params.get("ablation") or {}
    judge = params.get("judge") or {}
    st = params.get("stats") or {}
    primary = meta.get("primary_pool") or canaries.get("pool") or "standard"
    pools = sorted(set(runs["pool"].to_list())) if runs is not None and runs.height else [primary]
    other = [p for p in pools if p != primary]
    if ablation.get("enabled") and other:
        abl = f"the {ablation.get('condition', meta.get('ablation_condition'))} condition re-run against the {', '.join(other)} pool"
    else:
        abl = "not run"
    names = list(meta.get("models") or [str(m.get("name")) for m in params.get("models") or [] if isinstance(m, Mapping)])
    instruments = instrument_groups(params, result)
    n_runs = runs.height if runs is not None else int(meta.get("n_runs") or 0)
    facts = [
        ("Task suite", f"{meta.get('n_tasks', '?')} tasks from {study.get('tasks', '?')}"
                       + (f" (limited to {study['limit_tasks']} per difficulty in turn)" if study.get("limit_tasks") else "")),
        ("Conditions", ", ".join(meta.get("conditions") or study.get("conditions") or [])),
        ("Seeds", ", ".join(str(s) for s in (meta.get("seeds") or study.get("seeds") or []))),
        ("Canary pool", f"{primary} (main grid); subtlety ablation: {abl}"),
        ("Agents", f"{len(names)}: {len([n for n in names if n not in instruments])} models under test, "
                   f"{len([n for n in names if n in instruments])} instruments (reference and planted agents)"),
        ("Turn limit", f"agent.max_turns {value_text((params.get('agent') or {}).get('max_turns'))}"),
        ("Judges", f"primary {_judge_text(judge.get('primary'))}, cross {_judge_text(judge.get('cross'))}"),
        ("Statistics", f"{INTERVALS.get(str(meta.get('bootstrap_unit', st.get('bootstrap_unit'))), INTERVALS['run'])}, "
                       f"alpha {value_text(meta.get('alpha', st.get('alpha')))}, seed {value_text(st.get('seed', meta.get('seed')))}"),
        ("Runs", f"{n_runs:,} (every model, condition, pool, seed and task)"),
    ]
    if meta.get("few_clusters_note"):  # said once, here: every affected row carries few_clusters
        facts.append(("Few tasks", str(meta["few_clusters_note"])))
    return {"facts": facts, "primary_pool": primary, "n_runs": n_runs}


def run_counts(runs: pl.DataFrame) -> pl.DataFrame:
    """Per model over the whole study (every condition and pool): runs, failed (backend
    errors), zero-call, truncated, trapped and judged runs."""
    if runs.is_empty():
        return pl.DataFrame(schema={"model": pl.String, "group": pl.String, "runs": pl.Int64})
    ok = ~pl.col("error")
    return (
        runs.group_by("model", "group")
        .agg(
            pl.len().cast(pl.Int64).alias("runs"),
            pl.col("error").sum().cast(pl.Int64).alias("failed"),
            (pl.col("zero_call") & ok).sum().cast(pl.Int64).alias("zero_call"),
            (pl.col("truncated") & ok).sum().cast(pl.Int64).alias("truncated"),
            (pl.col("trapped") & ok).sum().cast(pl.Int64).alias("trapped"),
            (pl.col("success").is_not_null() & ok).sum().cast(pl.Int64).alias("judged"),
        )
        .sort("model")
    )


# --------------------------------------------------------------------------- figures and JavaScript


def _vl_version() -> str | None:
    """The Vega-Lite version (``major.minor``) of Altair's specs, when vl-convert bundles it."""
    import altair as alt
    import vl_convert as vlc

    v = str(alt.SCHEMA_VERSION).lstrip("v").split(".")
    want = ".".join(v[:2])
    return want if want in {s.lstrip("v") for s in vlc.get_vegalite_versions()} else None



def figure_views(result: Mapping[str, Any], captions: Mapping[str, str], *, png_scale: float = 1.0) -> list[dict[str, Any]]:
    """Each figure once: its Vega-Lite spec (JSON for the page) and its PNG (base64) rendered
    by vl-convert from the same spec."""
    import vl_convert as vlc

    from .figures import build_charts

    version = _vl_version()
    views = []
    for name, chart in build_charts(result).items():
        spec = chart.to_dict()
        png = vlc.vegalite_to_png(spec, scale=png_scale, vl_version=version)
        title = spec.get("title") or {}
        text = title.get("text") if isinstance(title, Mapping) else title
        views.append({
            "id": name, "title": str(text or name), "caption": captions.get(name, ""),
            # wider than half the page at 1400 px (PNG header: width at bytes 16-20): a row of its own
            "wide": int.from_bytes(png[16:20], "big") > WIDE_FIGURE_PX,
            "spec": json_for_script(spec), "png": base64.b64encode(png).decode("ascii"),
        })
    return views


def vega_bundle() -> str:
    """Vega, Vega-Lite and vega-embed as one script (vl-convert's bundle; no CDN)."""
    import vl_convert as vlc

    return script_safe(vlc.javascript_bundle(vl_version=_vl_version()))  # type: ignore[call-arg]  # the stub omits snippet's default


# --------------------------------------------------------------------------- the page


def _resource(name: str) -> str:
    return resources.files("canarykit.resources").joinpath(name).read_text("utf-8")


def _oracle_view(validation: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if validation is None:
        return None
    check = validation.get("oracle_check")
    if check is None:
        return {"state": "absent"}
    return {"state": "ok" if check.get("ok") else "failed", **check}


def _read_runs(runs: str | Path | pl.DataFrame | None) -> pl.DataFrame | None:
    if runs is None or isinstance(runs, pl.DataFrame):
        return runs
    try:
        return pl.read_parquet(Path(runs))
    except (OSError, pl.exceptions.ComputeError) as exc:
        raise InputError(str(runs), "<file>", f"cannot read the per-run table: {exc}") from exc


def _model_rows(cfg: Mapping[str, Any], result: Mapping[str, Any]) -> list[dict[str, str]]:
    """One row per configured model: its name, group, backend, other settings and role."""
    instruments = instrument_groups(cfg, result)
    rows = []
    for m in cfg.get("models") or []:
        if not isinstance(m, Mapping):
            continue
        name = str(m.get("name"))
        rows.append({
            "name": name, "group": value_text(m.get("group")), "backend": value_text(m.get("backend")),
            "settings": "; ".join(f"{k}: {value_text(v)}" for k, v in m.items() if k not in ("name", "group", "backend")),
            "role": f"instrument ({instruments[name]})" if name in instruments else "model under test",
        })
    return rows


def build_report(
    *,
    stats: str | Path | Mapping[str, Any],
    tables: Mapping[str, str | Path] | None = None,
    validation: str | Path | Mapping[str, Any] | None = None,
    params: str | Path | Mapping[str, Any] | None = None,
    runs: str | Path | pl.DataFrame | None = None,
    store: str | Path | None = None,
    captions: Mapping[str, str] | None = None,
    sampling: TraceSampling = DEFAULT_SAMPLING,
    title: str | None = None,
    png_scale: float = 1.0,
    javascript: bool = True,
    links_from: str | Path | None = None,
) -> str:
    """The report's HTML text.

    ``stats``: ``stats.json`` (path or dict); ``tables``: ``name -> CSV path`` (default: each of
    :data:`TABLE_NAMES` beside ``stats.json``); ``validation``: ``judge/validation.json``;
    ``params``: ``params.resolved.yaml`` (path or mapping); ``runs``: ``runs.parquet``;
    ``store``: the run store (records of the sampled traces); ``captions``: ``name ->``
    caption of a table or figure (:func:`load_captions`); ``javascript``: False leaves the
    Vega bundle out (the figures show their PNGs; for tests that never run a browser);
    ``links_from``: the directory the report is written to (each table links its CSV relative to
    it; None: no links).
    """
    from .failure_banner import failure_banner

    result = _read_json(stats, "stats.json")
    if not isinstance(result, Mapping):
        raise InputError(str(stats), "<root>", "stats.json must be a JSON object")
    if tables is None:
        if not isinstance(stats, str | Path):
            raise InputError("report", "tables", "give the table paths when stats is not a file")
        tables = {t: Path(stats).parent / f"{t}.csv" for t in TABLE_NAMES}
    if links_from is None and isinstance(stats, str | Path):
        links_from = Path(stats).parent  # the pipeline writes the report beside stats.json
    val = _read_json(validation, "judge validation")
    cfg = _read_params(params)
    runs_df = _read_runs(runs)
    caps = dict(captions or {})
    stat_caps = table_captions(dict(result))
    table_views = []
    for name in TABLE_NAMES:
        if name not in tables:
            continue
        # the caption the statistics write from the study's own settings (level, interval, margin) first
        caption = stat_caps.get(name) or caps.get(name, "")
        table_views.append(table_view(_read_csv(tables[name], name), name, caption, _href(tables[name], links_from)))
    counts = html_table(run_counts(runs_df), "run_counts", "Runs per model") if runs_df is not None else None
    param_rows = flatten_params({k: v for k, v in cfg.items() if k != "models"})
    models_cfg = _model_rows(cfg, result)
    trace_data = traces(runs_df, store, sampling) if runs_df is not None else {"models": [], "shown": 0, "trapped": 0, "missing": 0}
    meta = result.get("meta") or {}
    summary = study_summary(cfg, result, runs_df)
    if (cfg.get("environment") or {}).get("kind") == "bfcl" and isinstance(stats, str | Path):
        # which BFCL categories ran, what was skipped and why
        from ..bfcl.environment import summary_fact

        summary["facts"][:0] = [f for f in [summary_fact(Path(stats).parent)] if f]
    context = {
        "title": title or f"canarykit study report: {(cfg.get('study') or {}).get('output_dir', 'study')}",
        "version": _package_version(),
        "oracle": _oracle_view(val),
        # failed runs lead the first screen (canarykit.report.failure_banner)
        "failures": failure_banner(runs_df, store, cfg),
        "study": summary,
        "counts": counts,
        "diagnoses": diagnoses(result, cfg),
        "findings": _with_known_power(findings(result, cfg), cfg, runs_df, result),
        "tested": list(meta.get("tested_models") or []),
        "unit": INTERVALS.get(meta.get("bootstrap_unit", "task"), INTERVALS["run"]),
        "alpha": meta.get("alpha", 0.05),
        "margin": meta.get("equivalence_margin", 0.10),
        "min_clusters": meta.get("min_clusters", 10),
        "tables": table_views,
        "figures": figure_views(result, caps, png_scale=png_scale),
        "traces": trace_data,
        "sampling": sampling,
        "params": param_rows,
        "models": models_cfg,
        "readings": CONTROL_READINGS,
        # the dose curves (docs/dose.md): their table, when the study ran the dose condition
        "dose": html_table(dose_table(result["dose_response"]), "table_dose", "Dose response") if result.get("dose_response") else None,
        "css": _resource("report.css"),
        "script": script_safe(_resource("report.js")),
        "vega": vega_bundle() if javascript else "",
    }
    import jinja2

    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    html = env.from_string(_resource(TEMPLATE)).render(**context)
    return scrub_report(html)


def scrub_report(html: str) -> str:
    """The page with every configured key value removed (the one key scrubber's exact pass)."""
    from ..agents.secrets import scrub_values

    return scrub_values(html)


def _package_version() -> str:
    from .. import __version__

    return __version__


def write_report(path: str | Path, **kwargs: Any) -> Path:
    """Render :func:`build_report` into ``path`` (atomically), its tables linked from there; returns the path."""
    html = build_report(**{"links_from": Path(path).parent, **kwargs})
    atomic_write_text(path, html)
    return Path(path)
