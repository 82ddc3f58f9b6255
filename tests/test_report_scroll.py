"""A report a reader can scroll (issue 29, item 4): the default study's report, read in headless
Chromium at 1400 px, is at most 15,000 px tall, under 5 MB, and never scrolls sideways; a long
table shows its top rows and links its CSV; every table has a reader's title and a caption; no
text points at things a reader cannot look up (an issue number).

The study: every agent of params.yaml (the default study's twelve instruments), the five
conditions and the subtle-pool ablation, run through the real runner, detector, judges and
statistics, on 12 tasks and two seeds. The page's height does not grow with the task suite: a
table longer than the page shows (LONG_TABLE rows) is cut to its top rows, figures draw one row
per model, and the trace viewer's sample is bounded (TraceSampling); so this study measures the
default study's page (120 tasks, three seeds) but for the run counts in its text."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
import yaml
from test_report import ROOT, MiB, Tab, chromium, make_study  # noqa: F401, F811 - chromium is a fixture

from canarykit.report.report import LONG_TABLE, TABLE_NAMES, TOP_ROWS, write_report

#: The page as issue 29 holds it: one screen wide, a scroll long, a download light.
WIDTH, MAX_HEIGHT, MAX_BYTES = 1400, 15_000, 5 * MiB


@pytest.mark.slow
def test_the_default_study_report_scrolls_in_chromium(tmp_path: Path, chromium: Callable[..., Tab]) -> None:  # noqa: F811
    models = [m["name"] for m in yaml.safe_load((ROOT / "params.yaml").read_text())["models"]]
    study = make_study(tmp_path / "study", models=models, per_difficulty=4, seeds=(0, 1))
    report = write_report(study.out / "report.html", **study.inputs())
    size = report.stat().st_size
    assert size < MAX_BYTES, f"{size / MiB:.2f} MiB"

    tab = chromium(report.resolve().as_uri())
    tab.wait("document.querySelectorAll('figure.vega-figure.rendered').length === document.querySelectorAll('figure.vega-figure').length")
    assert tab.js("window.innerWidth") == WIDTH
    height = tab.js("document.documentElement.scrollHeight")
    assert height <= MAX_HEIGHT, f"the report is {height} px tall"
    assert tab.js("document.documentElement.scrollWidth") <= WIDTH, "the page scrolls sideways"
    # nothing a reader sees scrolls sideways in its own box either (closed details are not seen)
    wide = tab.js("[...document.querySelectorAll('.table-wrap, figure')].filter(w => w.offsetWidth > 0"
                  " && w.checkVisibility() && w.scrollWidth > w.clientWidth + 1).map(w => (w.querySelector('table') || w).id)")
    assert wide == []

    # a long table: its top rows, every row a link away in its CSV beside the report
    long = 0
    for name in TABLE_NAMES:
        csv = pl.read_csv(study.out / f"{name}.csv", infer_schema_length=None)
        rows = tab.js(f"document.querySelectorAll('#tbl-{name} tbody tr').length")
        href = tab.js(f"[...document.querySelectorAll('a.csv')].filter(a => a.getAttribute('href') === '{name}.csv').map(a => a.href)")
        assert len(href) == 1 and Path(href[0].removeprefix("file://")).is_file(), name
        if csv.height > LONG_TABLE:
            long += 1
            assert rows == TOP_ROWS, name
        else:
            assert rows == csv.height, name
        title = tab.js(f"document.getElementById('table-{name}').innerText")
        assert name not in title and "_" not in title, title
        assert len(tab.js(f"document.querySelector('#tbl-{name} caption').textContent")) > 40, name
    assert long >= 1, "table_items is a long table in this study"

    # the first screen: what the instrument recovered, every agent's row
    first = tab.js("document.getElementById('findings').innerText")
    assert re.search(r"\d+ of \d+ planted answers found", first), first
    assert tab.js("document.querySelectorAll('#tbl-findings-instruments tbody tr').length") == len(models)

    # no reference a reader cannot resolve
    text = tab.js("document.body.innerText")
    assert not re.search(r"\bissues? \d+", text, re.I)
