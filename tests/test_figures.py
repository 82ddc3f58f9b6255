"""Figures render to non-empty PNG, SVG and HTML from synthetic data, including empty states."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from canarykit import stats
from canarykit.report import figures
from canarykit.testing.synthetic import synthetic_runs

NAMES = ("fig2", "fig4", "fig5", "fig6", "fig7", "fig8", "fig9", "fig10")


@pytest.fixture(scope="module")
def result() -> dict[str, Any]:
    return stats.compute_all(synthetic_runs(seed=3), stats.StatsConfig(resamples=100))


def _check(paths: list[Path], formats: tuple[str, ...]) -> None:
    assert {p.stem for p in paths} == set(NAMES)
    assert len(paths) == len(NAMES) * len(formats)
    for p in paths:
        data = p.read_bytes()
        assert len(data) > 1000, p
        if p.suffix == ".png":
            assert data[:8] == b"\x89PNG\r\n\x1a\n"
        elif p.suffix == ".svg":
            assert b"<svg" in data[:500]
        elif p.suffix == ".html":
            # self-contained: the Vega bundle is inlined, no CDN script
            assert b"<html" in data[:2000].lower() and b"cdn.jsdelivr" not in data


def test_all_figures_render_all_formats(tmp_path: Path, result: dict[str, Any]) -> None:
    paths = figures.make_figures(result, tmp_path)
    _check(paths, ("svg", "png", "html"))
    svg6 = (tmp_path / "fig6.svg").read_text()
    for label in ("capability", "prerequisite", "granularity"):
        assert label in svg6  # radar axis labels


def test_from_runs_frame_and_from_stats_json(tmp_path: Path, result: dict[str, Any]) -> None:
    runs = synthetic_runs(n_models=3, seeds=1, tasks=30, seed=1)
    paths = figures.make_figures(runs, tmp_path / "a", formats=("svg",), cfg={"bootstrap_resamples": 50})
    _check(paths, ("svg",))
    (tmp_path / "stats.json").write_text(json.dumps(result))
    paths = figures.make_figures(tmp_path / "stats.json", tmp_path / "b", formats=("png",))
    _check(paths, ("png",))


def test_missing_subtle_pool_and_conditions_give_empty_states(tmp_path: Path) -> None:
    runs = synthetic_runs(n_models=2, seeds=1, tasks=30, conditions=("declared",), ablation=False)
    res = stats.compute_all(runs, stats.StatsConfig(resamples=50))
    paths = figures.make_figures(res, tmp_path, formats=("svg", "png"))
    _check(paths, ("svg", "png"))
    assert "ablation not available" in (tmp_path / "fig8.svg").read_text()
    assert "no data" in (tmp_path / "fig7.svg").read_text()


def test_empty_result_never_crashes(tmp_path: Path) -> None:
    empty = stats.compute_all(
        synthetic_runs(n_models=1, seeds=1, tasks=3, conditions=("baseline",), ablation=False).head(0),
        stats.StatsConfig(resamples=10),
    )
    paths = figures.make_figures(empty, tmp_path, formats=("svg",))
    _check(paths, ("svg",))


def test_figure_data_columns(result: dict[str, Any]) -> None:
    fd = stats.figure_data(result)
    assert set(fd) == {*NAMES, "fig11"}  # fig11: the dose curves' data, drawn only in a dose study
    assert fd["fig11"].is_empty() and "fig11" not in figures.build_charts(result)
    assert fd["fig5"].height == 8 * 6
    assert fd["fig9"].filter(pl.col("scope") == "All models (pooled)").height == 2
    assert set(fd["fig7"].get_column("condition").unique()) == {"declared", "full"}


def test_dose_figure_has_a_panel_per_type_with_its_twins_and_a_line_per_model(result: dict[str, Any]) -> None:
    from canarykit.testing.synthetic import synthetic_dose_runs

    dose = stats.dose_response(synthetic_dose_runs(["uniform", "planted:parameter_trap"], tasks=4, seeds=(0,)))
    spec = figures.build_charts({**result, "dose_response": dose})["fig11"].to_dict()
    assert spec["facet"]["field"] == "kind_label" and spec["columns"] == 4
    rows = spec["datasets"][next(iter(spec["datasets"]))]
    assert {r["kind"] for r in rows} == set(stats.DOSE_KINDS) and {r["model"] for r in rows} == {"uniform", "planted:parameter_trap"}
    assert len({r["kind_label"] for r in rows}) == 7  # six types (canaries and twins) and the distractors
    marks = {layer["mark"]["type"] for layer in spec["spec"]["layer"]}
    assert marks == {"area", "line"}  # the interval band and the curve
    line = next(layer for layer in spec["spec"]["layer"] if layer["mark"]["type"] == "line")
    assert line["encoding"]["strokeDash"]["field"] == "look_alike"  # twins dashed
