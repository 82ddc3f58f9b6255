"""The study report (issue 14, item 4; issue 16's oracle check): one self-contained HTML file
with the tables inline and sortable, each figure once (interactive, PNG fallback), the
parameters as a table, the diagnosis per model in words, the oracle instrument check, and a
trace viewer of sampled trapped runs. Built on small real studies (reference agents run through
the real runner, detector, judges and statistics); the slow test reads it in headless Chromium."""

from __future__ import annotations

import base64
import contextlib
import copy
import dataclasses
import fcntl
import json
import os
import re
import select
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml
from fakes.apt import apt_install
from fakes.study import write_assembly, write_pool

from canarykit import stats
from canarykit.agents import run_grid
from canarykit.agents.known import known_diagnoses
from canarykit.judging import JudgingJob, detect_and_judge
from canarykit.report.report import (
    FIGURE_NAMES,
    LONG_TABLE,
    TABLE_NAMES,
    TOP_ORDER,
    TOP_ROWS,
    TYPE_PLURALS,
    TraceSampling,
    build_report,
    ci_text,
    diagnoses,
    flatten_params,
    load_captions,
    sample_traces,
)
from canarykit.stats import DIAGNOSIS_READINGS
from canarykit.store.records import read_record, write_record
from canarykit.study.config import validate_params
from canarykit.testing.synthetic import synthetic_runs
from canarykit.types import CANARY_TYPES

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("oracle", "lexical", "planted:capability_mirage", "planted:surface")
MiB = 1024 * 1024


# --------------------------------------------------------------------------- a small DOM


class Node:
    def __init__(self, tag: str, attrs: dict[str, str], parent: Node | None) -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Node | str] = []

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def iter(self) -> Iterator[Node]:
        for c in self.children:
            if isinstance(c, Node):
                yield c
                yield from c.iter()

    def all(self, tag: str | None = None, cls: str | None = None) -> list[Node]:
        return [n for n in self.iter() if (tag is None or n.tag == tag) and (cls is None or cls in n.classes)]

    def by_id(self, ident: str) -> Node:
        (node,) = [n for n in self.iter() if n.attrs.get("id") == ident]
        return node


class _Builder(HTMLParser):
    VOID = {"meta", "img", "br", "hr", "input", "link", "source"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {}, None)
        self.cur = self.root

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs}, self.cur)
        self.cur.children.append(node)
        if tag not in self.VOID:
            self.cur = node

    def handle_endtag(self, tag: str) -> None:
        n: Node | None = self.cur
        while n is not None and n.tag != tag:
            n = n.parent
        if n is not None and n.parent is not None:
            self.cur = n.parent

    def handle_data(self, data: str) -> None:
        self.cur.children.append(data)


def dom(html: str) -> Node:
    b = _Builder()
    b.feed(html)
    return b.root


def table_rows(table: Node) -> tuple[list[str], list[list[str]]]:
    head = [th.text().strip() for th in table.all("thead")[0].all("th")]
    body = [[td.text().strip() for td in tr.all("td")] for tr in table.all("tbody")[0].all("tr")]
    return head, body


# --------------------------------------------------------------------------- small real studies


@dataclass
class Study:
    out: Path
    store: Path
    params: dict[str, Any]
    result: dict[str, Any]

    def inputs(self, **over: Any) -> dict[str, Any]:
        kw: dict[str, Any] = {
            "stats": self.out / "stats.json", "validation": self.out / "judge/validation.json",
            "params": self.out / "params.resolved.yaml", "runs": self.out / "runs.parquet", "store": self.store,
            "captions": load_captions(ROOT / "report"), "sampling": TraceSampling(seed=7),
        }
        kw.update(over)
        return kw


def _params(models: Sequence[str], conditions: Sequence[str], max_turns: int, seeds: Sequence[int]) -> dict[str, Any]:
    cfg = yaml.safe_load((ROOT / "params.yaml").read_text())
    cfg["models"] = [m for m in cfg["models"] if m["name"] in models]
    # Reference agents draw once per task and real tool (not per seed): on a few tasks the
    # params.yaml rate (0.5) can leave a planted agent without a single trap to report.
    for m in cfg["models"]:
        if m["name"].startswith("planted:"):
            m["take_prob"] = 0.9
    cfg["study"].update(seeds=list(seeds), conditions=list(conditions))
    cfg["agent"]["allow_short_max_turns"] = max_turns < 5
    cfg["agent"]["max_turns"] = max_turns
    cfg["stats"]["bootstrap_resamples"] = 200
    return validate_params(cfg)


def make_study(root: Path, *, models: Sequence[str] = MODELS, per_difficulty: int = 4, max_turns: int = 12, seeds: Sequence[int] = (0, 1),
               conditions: Sequence[str] = ("baseline", "declared", "full", "control", "mirrored"), ablation: bool = True) -> Study:
    """A study on disk as the pipeline lays it out: tasks of each difficulty, both pools, the
    reference agents run, detected, judged (rubric + tool coverage), statistics and tables."""
    from canarykit.canaries import load_pool_document
    from canarykit.tasks.tasks import load_tasks

    root.mkdir(parents=True)
    doc = json.loads((ROOT / "data/tasks.json").read_text())
    tasks_doc = [t for d in ("easy", "medium", "hard") for t in [t for t in doc["tasks"] if t["difficulty"] == d][:per_difficulty]]
    tasks_path = root / "tasks.json"
    tasks_path.write_text(json.dumps({**doc, "tasks": tasks_doc}))
    tasks = load_tasks(tasks_path)
    params = _params(models, conditions, max_turns, seeds)
    grid = {"standard": list(conditions), **({"subtle": ["declared"]} if ablation else {})}
    pools: dict[str, dict[str, Any]] = {}
    for pool, conds in grid.items():
        records = write_pool(root / f"canaries-{pool}.json", pool)
        controls = load_pool_document(root / f"canaries-{pool}.json")["controls"]
        write_assembly(root / f"assembly-{pool}.parquet", tasks, records, pool, conds, list(seeds), controls)
        pools[pool] = {"canaries": root / f"canaries-{pool}.json", "assembly": root / f"assembly-{pool}.parquet", "conditions": conds}
    store = root / "store"
    run_grid(list(params["models"]), tasks_path, pools, list(seeds), {"max_turns": max_turns, "cache_dir": str(root / "cache")},
             store, root / "index.parquet", root / "summary.json", progress=False)
    out = root / "results"
    job = JudgingJob(root / "index.parquet", store, tasks_path, out / "runs.parquet", out / "judge/verdicts",
                     out / "judge/validation.json", cache=root / "verdicts", calls=out / "judge/calls.parquet")
    detect_and_judge(
        job,
        {"template": str(ROOT / "data/prompts/judge_appendix_b.txt"), "primary": {"kind": "rubric"},
         "cross": {"kind": "tool-coverage"}, "stability": {"sample": 0}},
        list(params["models"]), log=open(os.devnull, "w"),  # noqa: SIM115
    )
    result = stats.compute_all(stats.load_runs(out / "runs.parquet"), stats.StatsConfig(resamples=200))
    stats.write_outputs(result, out)
    (out / "params.resolved.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return Study(out, store, params, json.loads((out / "stats.json").read_text()))


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Study:
    return make_study(tmp_path_factory.mktemp("report") / "study")


@pytest.fixture(scope="module")
def page(study: Study) -> str:
    return build_report(**study.inputs())


@pytest.fixture(scope="module")
def doc(page: str) -> Node:
    return dom(page)


@pytest.fixture(scope="module")
def short_study(tmp_path_factory: pytest.TempPathFactory) -> Study:
    """agent.max_turns 3 (an explicit override): the oracle is cut off on the hard tasks."""
    return make_study(tmp_path_factory.mktemp("report-short") / "study", models=("oracle", "lexical"), per_difficulty=2,
                      max_turns=3, seeds=(0,), conditions=("baseline", "declared"), ablation=False)


# --------------------------------------------------------------------------- unit tests


def test_every_table_is_inline_a_long_one_as_its_top_rows_with_its_csv_linked(study: Study, doc: Node) -> None:
    """Each table of the statistics under a reader's title with a caption; a short one with every
    row and column of its CSV, a long one (table_items here) with its top rows in the order the
    page names and a link to its CSV beside the report, which holds every row."""
    long = 0
    for name in TABLE_NAMES:
        csv = pl.read_csv(study.out / f"{name}.csv", infer_schema_length=None)
        table = doc.by_id(f"tbl-{name}")
        assert "sortable" in table.classes
        title = doc.by_id(f"table-{name}").text()
        assert title and name not in title and "_" not in title, (name, title)
        assert len(table.all("caption")[0].text()) > 40, name  # what the table holds, in words
        head, body = table_rows(table)
        assert head == csv.columns, name
        (link,) = [a for a in doc.all("a", "csv") if a.attrs["href"] == f"{name}.csv"]
        assert (study.out / link.attrs["href"]).is_file()
        if csv.height > LONG_TABLE:
            long += 1
            assert len(body) == TOP_ROWS, name
            order, descending, _ = TOP_ORDER.get(name, (None, False, ""))
            if order:
                csv = csv.sort(order, descending=descending, nulls_last=True, maintain_order=True)
            csv = csv.head(TOP_ROWS)
            note = " ".join(link.parent.text().split())  # type: ignore[union-attr]
            assert note.startswith(f"The top {TOP_ROWS} of {pl.read_csv(study.out / f'{name}.csv').height:,} rows (")
        assert len(body) == csv.height, name
        for row, values in zip(body, csv.iter_rows(), strict=True):
            for text, v in zip(row, values, strict=True):
                if isinstance(v, float):
                    assert text == f"{v:.3f}".replace("-", "\u2212"), (name, text, v)
                elif v is None:
                    assert text == "n/a"
                else:
                    assert text == (str(v).lower() if isinstance(v, bool) else str(v)), (name, text, v)
    assert long, "the study has a long table (table_items)"
    # a numeric column carries its exact value for sorting
    cell = doc.by_id("tbl-table1").all("tbody")[0].all("td")[2]
    assert "num" in cell.classes and float(cell.attrs["data-sort"]) == pytest.approx(float(cell.text()), abs=5e-4)


def test_each_figure_once_interactive_with_its_png(page: str, doc: Node) -> None:
    figs = doc.all("figure", "vega-figure")
    assert [f.attrs["id"] for f in figs] == list(FIGURE_NAMES)
    for f in figs:
        (img,) = f.all("img", "fallback")
        png = base64.b64decode(img.attrs["src"].removeprefix("data:image/png;base64,"))
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 2000
        (script,) = f.all("script")
        spec = json.loads(script.text())
        assert "vega-lite" in spec["$schema"] and spec["title"]["text"].startswith("Figure")
        assert len(f.all("div", "vega-target")) == 1
    # the figure title appears once per figure (not three times), and nothing is fetched
    assert page.count('data-spec="spec-fig5"') == 1 and page.count('id="spec-fig5"') == 1
    assert not re.search(r"<script[^>]+src=", page) and "cdn.jsdelivr" not in page
    links = [n.attrs.get(a, "") for n in doc.iter() for a in ("src", "href")]
    assert not [u for u in links if u.startswith(("http:", "https:", "//"))]  # nothing to fetch: it works offline
    assert "vegaEmbed" in page and "vega-lite" in page.lower()


def test_parameters_are_a_table_of_dotted_keys_not_python_reprs(study: Study, doc: Node) -> None:
    _, rows = table_rows(doc.by_id("tbl-params"))
    values = dict((k, v) for k, v in rows)
    assert values["agent.max_turns"] == "12"
    assert values["study.conditions"] == "baseline, declared, full, control, mirrored"
    assert values["ablation.enabled"] == "true" and values["canaries.llm.model"] == "null"
    assert values["canaries.special_cases.get_forecast.city"] == "Mumbai"
    section = doc.by_id("parameters").text()
    assert "{'" not in section and "True" not in section and "None" not in section
    _, agents = table_rows(doc.by_id("tbl-agents"))
    assert [a[0] for a in agents] == [m["name"] for m in study.params["models"]]
    assert {a[1] for a in agents} == {"instrument (reference)", "instrument (planted)"}
    assert flatten_params({"a": {"b": [1, 2], "c": {}}, "m": [{"x": True}]}) == [("a.b", "1, 2"), ("a.c", "{}"), ("m[0].x", "true")]


def trap_sentence(t: str, e: dict[str, Any]) -> str:
    """The README's wording of one type trap rate: "falls for" when the interval excludes 0."""
    rate = f"{ci_text(e['rate'], e['lo'], e['hi'])} ({e['trapped']} of {e['n']} runs"
    if e["lo"] > 0:
        return f"falls for {TYPE_PLURALS[t]}: {rate})"
    return f"calls {TYPE_PLURALS[t]} now and then: {rate}; the interval reaches 0)"


def test_the_diagnosis_of_each_model_in_words(study: Study, doc: Node) -> None:
    articles = {a.all("h3")[0].text().split(" instrument")[0].strip(): a for a in doc.all("article", "model")}
    assert set(articles) == set(MODELS)
    for model, a in articles.items():
        items = [li.text() for li in a.all("ul", "traps")[0].all("li")]
        for t, e in study.result["trap_rate_ci"]["declared"][model].items():
            if e["n"] and e["rate"]:
                assert trap_sentence(t, e) in items, (model, t)
        rates = study.result["trap_rate_ci"]["declared"][model]
        never = [TYPE_PLURALS[t] for t in CANARY_TYPES if rates[t]["n"] and rates[t]["rate"] == 0]
        if never:
            assert "never fell for " + ", ".join(never) in items
    falls = [li.text() for li in articles["planted:capability_mirage"].all("li") if li.text().startswith("falls for")]
    assert falls and re.fullmatch(r"falls for capability mirages: \d\.\d\d \[\d\.\d\d, \d\.\d\d\] \(\d+ of \d+ runs\)", falls[0])
    words = " ".join(articles["planted:capability_mirage"].text().split())
    csr = study.result["csr_ci"]["declared"]["planted:capability_mirage"]
    tsr = study.result["tsr_ci"]["declared"]["planted:capability_mirage"]
    assert f"declared: csr {ci_text(csr['csr'], csr['lo'], csr['hi'])} over {csr['n']} runs with a tool call; " \
           f"tsr {ci_text(tsr['tsr'], tsr['lo'], tsr['hi'])} over {tsr['n']} judged runs" in words
    # the control-effect reading, from stats.json's diagnosis words, with its delta
    for model in ("planted:capability_mirage", "planted:surface"):
        readings = {li.all("span", "dx")[0].text(): li.text() for li in articles[model].all("ul", "controls")[0].all("li")}
        for t, e in study.result["control_effect"][model].items():
            assert TYPE_PLURALS[t] in readings[e["diagnosis"]], (model, t)
            if e["diagnosis"] in ("lured", "sensitive", "blind", "inconclusive") and e["delta"] is not None:
                assert f"\u0394 {ci_text(e['delta'], e['lo'], e['hi'], signed=True)}" in readings[e["diagnosis"]]
            assert readings[e["diagnosis"]].startswith(f"{e['diagnosis']} ({DIAGNOSIS_READINGS[e['diagnosis']]})")
    # every agent here is an instrument, labelled with its group, never presented as a model
    for name, a in articles.items():
        assert "instrument" in a.classes
        assert f"instrument: {'planted' if name.startswith('planted') else 'reference'}" in a.all("h3")[0].text()
        assert "model under test" not in a.text()
    assert "This study has no model under test" in doc.by_id("diagnosis").text()


def test_models_under_test_come_before_the_instruments() -> None:
    runs = synthetic_runs(n_models=3, seeds=1, tasks=120, seed=2).drop("provider")
    oracle = runs.filter(pl.col("model") == "frontier-1").with_columns(model=pl.lit("oracle"), group=pl.lit("reference"))
    result = stats.compute_all(pl.concat([runs, oracle]), stats.StatsConfig(resamples=100))
    words = diagnoses(result, {"models": [{"name": "oracle", "backend": "reference", "group": "reference"}]})
    assert [(d["name"], d["instrument"]) for d in words] == [
        ("frontier-1", False), ("frontier-2", False), ("frontier-3", False), ("oracle", True)]
    checked = 0
    for d in words[:3]:
        for t, e in result["trap_rate_ci"]["declared"][d["name"]].items():
            if e["n"] and e["rate"]:
                assert trap_sentence(t, e) in d["traps"]
                checked += 1
    assert checked


def _in_details(node: Node) -> bool:
    n: Node | None = node
    while n is not None:
        if n.tag == "details":
            return True
        n = n.parent
    return False


def _section_order(doc: Node) -> list[str]:
    return [n.attrs["id"] for n in doc.iter() if n.tag == "section"]


def test_the_first_screen_says_what_the_instrument_recovered_when_no_model_is_under_test(study: Study, doc: Node) -> None:
    """A study of reference and planted agents only: the findings come first (before what was
    run), say that no model is under test, and give each agent's word per type against its
    known answer, with the count of known answers found."""
    assert _section_order(doc)[0] == "findings"
    findings = doc.by_id("findings")
    assert findings.all("h2")[0].text() == "No model under test: what the instrument recovered"
    head = [th.text().strip() for th in doc.by_id("tbl-findings-instruments").all("thead")[0].all("th")]
    assert head == ["instrument", "csr [CI]", "tsr [CI]", *(t.replace("_", " ") for t in CANARY_TYPES)]
    rows = doc.by_id("tbl-findings-instruments").all("tbody")[0].all("tr")
    assert sorted(r.all("th")[0].text().split()[0] for r in rows) == sorted(MODELS)
    configs = {m["name"]: m for m in study.params["models"]}
    found = total = 0
    for r in rows:
        name = r.all("th")[0].text().split()[0]
        cells = r.all("td")
        c = study.result["csr_ci"]["declared"][name]
        assert cells[0].text() == ci_text(c["csr"], c["lo"], c["hi"])
        expected = known_diagnoses(configs[name]) or {}
        for t, cell in zip(CANARY_TYPES, cells[2:], strict=True):
            word = study.result["control_effect"][name][t]["diagnosis"]
            assert cell.all("span")[0].text() == word, (name, t)
            if t in expected:
                total += 1
                found += word == expected[t]
                assert ("known-found" in cell.classes) == (word == expected[t])
    assert total == 18  # oracle and the two planted agents: six types each; lexical has no known answer
    assert f"{found} of {total} planted answers found" in findings.text()
    # beside it, the power the design gives the weakest known answer (the plan's simulation on the study's pairs)
    from canarykit.study.plan import design_from_runs, known_answer_power

    runs = pl.read_parquet(study.out / "runs.parquet")
    power = known_answer_power(study.params, design_from_runs(runs, "standard"), sims=200,
                               rates=study.result["control_effect"])
    assert power["answers"] and f"the design's power for each: at least {power['min']:.2f}" in " ".join(findings.text().split())


def test_the_docs_quote_what_the_first_screen_says(study: Study, doc: Node) -> None:
    """The facts the README and docs quote (canarykit.report.quoted, issue 29 item 6), read from
    a study's outputs: its run count and the same known answers as its report's first screen."""
    from canarykit.report.quoted import render, study_facts

    facts = study_facts(study.out)
    runs = pl.read_parquet(study.out / "runs.parquet")
    assert facts["runs"] == runs.height and facts["models"] == runs["model"].n_unique()
    oracle = runs.filter(pl.col("model") == "oracle")
    assert facts["oracle"] == {"runs": oracle.height, "passed": int(oracle["success"].sum())}
    known = facts["known"]
    assert f"{known['found']} of {known['total']} planted answers found" in doc.by_id("findings").text()
    table = render("known-table", facts)
    assert "| `oracle` |" in table and f"{facts['oracle']['runs']:,} runs passed" in table
    assert "no known answer" in table.split("| `lexical` |")[1].splitlines()[0]


def test_the_first_screen_leads_with_each_model_under_test() -> None:
    """Models under test: a row each, csr and tsr (declared) with their intervals and the
    diagnosis word per type, before anything else; the instruments are counted in one line."""
    runs = synthetic_runs(n_models=3, seeds=1, tasks=60, seed=2).drop("provider")
    oracle = runs.filter(pl.col("model") == "frontier-1").with_columns(model=pl.lit("oracle"), group=pl.lit("reference"))
    result = stats.compute_all(pl.concat([runs, oracle]), stats.StatsConfig(resamples=50))
    result["control_effect"] = {m: {t: {"diagnosis": w} for t in CANARY_TYPES}
                                for m, w in (("frontier-1", "lured"), ("frontier-2", "blind"), ("frontier-3", "sensitive"),
                                             ("oracle", "not drawn"))}
    page = dom(build_report(stats=result, tables={}, params={"models": [
        {"name": "oracle", "backend": "reference", "agent": "oracle", "group": "reference"}]}, javascript=False))
    assert _section_order(page)[0] == "findings"
    assert page.by_id("findings").all("h2")[0].text() == "Key findings: 3 models under test"
    rows = page.by_id("tbl-findings").all("tbody")[0].all("tr")
    assert [r.all("th")[0].text().split()[0] for r in rows] == ["frontier-1", "frontier-2", "frontier-3"]
    for r, word in zip(rows, ("lured", "blind", "sensitive"), strict=True):
        name = r.all("th")[0].text().split()[0]
        t = result["tsr_ci"]["declared"][name]
        assert r.all("td")[1].text() == ci_text(t["tsr"], t["lo"], t["hi"])
        assert [td.all("span")[0].text() for td in r.all("td")[2:]] == [word] * 6
    assert "got 6 of their 6 known answers" in page.by_id("findings").text()


def test_known_answers_of_the_reference_agents() -> None:
    assert known_diagnoses({"backend": "reference", "agent": "planted", "canary_type": "temporal_decoy"}) == {
        t: "blind" if t == "temporal_decoy" else "sensitive" for t in CANARY_TYPES}
    assert set(known_diagnoses({"backend": "reference", "agent": "surface"}).values()) == {"blind"}  # type: ignore[union-attr]
    claims = known_diagnoses({"backend": "reference", "agent": "claims"}) or {}
    assert claims["capability_mirage"] == "lured" and claims["semantic_decoy"] == "not drawn"
    assert known_diagnoses({"backend": "reference", "agent": "lexical"}) is None
    assert known_diagnoses({"backend": "litellm", "agent": "planted", "canary_type": "temporal_decoy"}) is None


def test_tables_show_their_key_columns_first_and_the_whole_table_a_click_away(study: Study, doc: Node) -> None:
    keyed = 0
    for name in TABLE_NAMES:
        full = doc.by_id(f"tbl-{name}")
        keys = [n for n in doc.iter() if n.attrs.get("id") == f"tbl-{name}-key"]
        if not keys:
            continue
        keyed += 1
        head, body = table_rows(keys[0])
        assert len(head) <= 10 and len(body) == len(table_rows(full)[1]), name
        assert not _in_details(keys[0]) and _in_details(full), name
    assert keyed >= 5
    head, body = table_rows(doc.by_id("tbl-table_controls-key"))
    assert head[:3] == ["model", "type", "diagnosis"]
    controls = pl.read_csv(study.out / "table_controls.csv", infer_schema_length=None)
    assert [r[2] for r in body] == [d or "n/a" for d in controls["diagnosis"].to_list()]
    head, body = table_rows(doc.by_id("tbl-table1-key"))
    assert head[:4] == ["model", "tier", "csr [CI]", "tsr [CI]"]
    t1 = pl.read_csv(study.out / "table1.csv", infer_schema_length=None).row(0, named=True)
    assert body[0][2] == ci_text(t1["csr"], t1["csr_lo"], t1["csr_hi"], 3)


def test_the_study_preamble_and_the_counts_per_model(study: Study, doc: Node) -> None:
    facts = doc.by_id("study").text()
    assert "baseline, declared, full, control, mirrored" in facts and "standard (main grid)" in facts
    assert "primary rubric, cross tool-coverage" in facts and "subtle pool" in facts
    head, rows = table_rows(doc.by_id("tbl-run_counts"))
    assert head == ["model", "group", "runs", "failed", "zero_call", "truncated", "trapped", "judged"]
    runs = pl.read_parquet(study.out / "runs.parquet")
    for row in rows:
        sub = runs.filter(pl.col("model") == row[0])
        assert int(row[2]) == sub.height and int(row[6]) == sub["trapped"].sum() and int(row[5]) == sub["truncated"].sum()


def test_the_oracle_check_passes_in_one_line(study: Study, doc: Node) -> None:
    check = json.loads((study.out / "judge/validation.json").read_text())["oracle_check"]
    banner = doc.by_id("oracle-check")
    assert "banner-ok" in banner.classes
    assert banner.text().strip() == f"Instrument check passed: all {check['runs']} oracle runs pass the task rubric."


def test_a_failing_oracle_is_flagged_at_the_top_as_a_configuration_problem(short_study: Study) -> None:
    check = json.loads((short_study.out / "judge/validation.json").read_text())["oracle_check"]
    assert not check["ok"] and check["failed"] > 0
    page = build_report(**short_study.inputs())
    banner = dom(page).by_id("oracle-check")
    assert "banner-failed" in banner.classes and banner.attrs["role"] == "alert"
    text = " ".join(banner.text().split())
    assert f"{check['failed']} of {check['runs']} oracle runs do not pass the task rubric" in text
    assert "configuration or task-suite problem, not a result" in text
    for f in check["failures"]:
        assert f"{f['task_id']} ({f['model']}, {f['condition']}/{f['pool']}, seed {f['seed']}): truncated" in text
    # at the top: before the contents and every section
    assert page.index('id="oracle-check"') < page.index("<nav") < page.index('id="study"')


def test_trace_viewer_shows_sampled_trapped_runs_with_each_call_marked(study: Study, doc: Node) -> None:
    runs = pl.read_parquet(study.out / "runs.parquet")
    calls = pl.read_parquet(study.out / "judge/calls.parquet")
    traces = doc.all("details", "trace")
    assert traces
    cells: dict[tuple[str, ...], int] = {}
    for t in traces:
        run_id = t.all("p", "run-id")[0].text().removeprefix("run ").strip()
        row = runs.filter(pl.col("run_id") == run_id).row(0, named=True)
        assert row["trapped"] and not row["error"]
        key = (row["model"], row["condition"], row["pool"])
        cells[key] = cells.get(key, 0) + 1
        rec = read_record(study.store / run_id[:2] / f"{run_id}.json")
        steps = t.all("li", "step")
        assert "step-prompt" in steps[0].classes and rec.identity["task"]["prompt"] in steps[0].text()
        # each call marked as the detector classified it (the pipeline's per-call table)
        marked = [s for s in steps if "step-call" in s.classes]
        expected = calls.filter(pl.col("run_id") == run_id).sort("call_idx")
        assert [m.all("span", "mark")[0].text().split(":")[0] for m in marked] == expected["cls"].to_list()
        for m, c in zip(marked, expected.iter_rows(named=True), strict=True):
            if c["cls"] == "canary":
                assert f"canary: {c['canary_type']}, shadows {c['shadows']}" in m.text()
        assert sum("trap sprung" in m.text() for m in marked) == 1
        assert [s for s in steps if "step-result" in s.classes]
        if rec.final_answer:
            assert "step-final" in steps[-1].classes
    assert max(cells.values()) <= 3
    trapped = runs.filter(pl.col("trapped") & ~pl.col("error")).group_by("model", "condition", "pool").len()
    for m, c, p, n in trapped.iter_rows():
        assert cells.get((m, c, p), 0) == min(3, n)


def test_trace_sample_is_seeded_and_bounded(study: Study) -> None:
    runs = pl.read_parquet(study.out / "runs.parquet")
    a = sample_traces(runs, TraceSampling(seed=1))
    assert [r["run_id"] for r in a] == [r["run_id"] for r in sample_traces(runs, TraceSampling(seed=1))]
    assert [r["run_id"] for r in a] != [r["run_id"] for r in sample_traces(runs, TraceSampling(seed=2))]
    few = sample_traces(runs, TraceSampling(per_cell=3, max_total=5))
    assert len(few) == 5 and len({(r["model"], r["condition"], r["pool"]) for r in few}) == 5  # round-robin over cells


def test_long_texts_are_clipped_and_keys_never_appear(study: Study, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = f"report-test-{uuid.uuid4().hex}"  # made at run time: no key-shaped literal in the tree
    monkeypatch.setenv("REPORT_TEST_API_KEY", secret)
    store = tmp_path / "store"
    shutil.copytree(study.store, store)
    runs = pl.read_parquet(study.out / "runs.parquet")
    sampling = TraceSampling(seed=7)
    first = sample_traces(runs, sampling)[0]
    run_id = first["run_id"]
    path = store / run_id[:2] / f"{run_id}.json"
    rec = read_record(path)
    i = next(i for i, e in enumerate(rec.events) if e.kind == "tool_result")
    events = list(rec.events)
    events[i] = dataclasses.replace(events[i], content=f"token {secret} " + "x" * 5000)
    write_record(path, dataclasses.replace(rec, events=events))
    params = copy.deepcopy(study.params)
    params["models"].append({"name": "hosted", "backend": "litellm", "model": "openai/x", "api_key_env": "REPORT_TEST_API_KEY"})
    from canarykit.agents.secrets import register_secret_envs

    register_secret_envs(["REPORT_TEST_API_KEY"])
    page = build_report(**study.inputs(store=store, params=params, sampling=sampling), javascript=False)
    assert secret not in page and "REPORT_TEST_API_KEY" in page
    keys = ("model", "condition", "pool", "seed", "task_id", *(("arm",) if first["arm"] else ()))  # a control run's arm
    anchor = "-".join(str(first[k]) for k in keys).replace(":", "_")
    trace = dom(page).by_id(f"trace-{anchor}")
    clipped = [s for s in trace.all("li", "step-result") if "more characters" in s.text()]
    assert clipped and len(clipped[0].all("pre")[0].text()) < sampling.clip_chars + 100


def test_fixed_overhead_is_well_under_the_size_budget(page: str) -> None:
    bundle = page[page.rindex("<script>", 0, page.rindex("<script>")):]
    figures = sum(len(m) for m in re.findall(r'<figure class="vega-figure".*?</figure>', page, re.S))
    assert len(bundle.encode()) < 1.2 * MiB  # Vega + Vega-Lite + vega-embed
    assert len(bundle.encode()) + figures < 3 * MiB
    assert len(page.encode()) < 5 * MiB


# --------------------------------------------------------------------------- headless Chromium


def ensure_chromium() -> str:
    """Debian's chromium, installed when missing (root only; otherwise the test is skipped)."""
    exe = shutil.which("chromium")
    if exe:
        return exe
    if os.geteuid() != 0:
        pytest.skip("chromium is not installed and installing it (apt-get install chromium) needs root")
    apt_install("chromium")
    exe = shutil.which("chromium")
    assert exe, "apt-get installed chromium but it is not on PATH"
    return exe


class Chromium:
    """Headless Chromium driven over its DevTools protocol on a pipe (``--remote-debugging-pipe``:
    JSON messages separated by NUL on file descriptors 3 and 4; no network port)."""

    def __init__(self, exe: str, profile: Path, *, timeout: float = 120.0) -> None:
        self.timeout = timeout
        cmd_r, self._cmd_w = os.pipe()
        self._resp_r, resp_w = os.pipe()

        def fds() -> None:
            # first above 9, so that neither pipe is already 3 or 4: dup2 onto itself would keep
            # close-on-exec (Chromium would start without its pipe), and one could overwrite the other
            r, w = fcntl.fcntl(cmd_r, fcntl.F_DUPFD, 10), fcntl.fcntl(resp_w, fcntl.F_DUPFD, 10)
            os.dup2(r, 3)
            os.dup2(w, 4)

        args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"]
        # close_fds=False: only the two descriptors duplicated onto 3 and 4 are inheritable
        self.proc = subprocess.Popen([exe, *args], preexec_fn=fds, close_fds=False,  # noqa: PLW1509
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(cmd_r)
        os.close(resp_w)
        self._buf = b""
        self._id = 0

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            while b"\0" not in self._buf:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"chromium did not answer {method}")
                ready, _, _ = select.select([self._resp_r], [], [], left)
                if ready:
                    chunk = os.read(self._resp_r, 1 << 20)
                    if not chunk:
                        raise RuntimeError("chromium exited")
                    self._buf += chunk
            *done, self._buf = self._buf.split(b"\0")
            for raw in done:
                m = json.loads(raw) if raw else {}
                if m.get("id") == self._id:
                    if "error" in m:
                        raise RuntimeError(f"{method}: {m['error']}")
                    return dict(m.get("result", {}))

    def open(self, url: str, *, javascript: bool = True) -> Tab:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.send("Emulation.setDeviceMetricsOverride", {"width": 1400, "height": 900, "deviceScaleFactor": 1, "mobile": False}, session)
        if not javascript:
            self.send("Emulation.setScriptExecutionDisabled", {"value": True}, session)
        self.send("Page.navigate", {"url": url}, session)
        tab = Tab(self, session)
        tab.wait("document.readyState === 'complete'")
        return tab

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, TimeoutError, OSError):
            self.send("Browser.close")
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._cmd_w)
        os.close(self._resp_r)


@dataclass
class Tab:
    browser: Chromium
    session: str

    def js(self, expression: str) -> Any:
        r = self.browser.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}, self.session)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def wait(self, expression: str, timeout: float = 120.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.js(expression)
            if value:
                return value
            time.sleep(0.25)
        raise TimeoutError(expression)

    def click(self, selector: str) -> None:
        """A left click where a reader would click: the element's centre, after scrolling to it."""
        x, y = self.js(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e.scrollIntoView({{block: 'center'}});"
                       " const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        for kind in ("mousePressed", "mouseReleased"):
            self.browser.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}, self.session)

    def screenshot(self, path: Path) -> bytes:
        """The viewport as a reader sees it (PNG), written to ``path``."""
        png = base64.b64decode(self.browser.send("Page.captureScreenshot", {"format": "png"}, self.session)["data"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(png)
        return png

    def visible(self, selector: str) -> bool:
        """Rendered for a reader: laid out with a size, and not hidden (display, visibility, or
        the content of a closed <details>: checkVisibility)."""
        return bool(self.js(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); return !!e && e.offsetWidth > 0"
                            " && e.offsetHeight > 0 && e.checkVisibility({visibilityProperty: true}); })()"))


@pytest.fixture()
def chromium(tmp_path: Path) -> Iterator[Callable[..., Tab]]:
    exe = ensure_chromium()
    browser = Chromium(exe, Path(tempfile.mkdtemp(dir=tmp_path)))
    try:
        yield browser.open
    finally:
        browser.close()


@pytest.mark.slow
def test_a_reader_sees_the_report_in_chromium(tmp_path: Path, chromium: Callable[..., Tab]) -> None:
    """The workflow's report rule on a small study of instruments, read in headless Chromium at
    1400 x 900: the first screen leads with what the instrument recovered, the key tables fit the width. Then the same study with a
    turn limit that cuts the oracle off (an explicit override): the oracle banner, the tables,
    sorting, the figures drawn by vega-embed, the PNGs without JavaScript, a trace opened by a click."""
    from fakes.workflow import copy_workflow, run, set_param

    repo = copy_workflow(tmp_path / "repo", per_difficulty=14, models=(*MODELS, "planted:claims", "careful"))
    run(repo, "snakemake", "--cores", "2", "--scheduler", "greedy", "report")
    report = repo / "results/report.html"
    url = report.resolve().as_uri()
    tab = chromium(url)

    # the first screen: no model under test, so what the instrument recovered, every agent's words per type
    assert tab.js("[window.innerWidth, window.innerHeight]") == [1400, 900]
    findings = tab.js("document.getElementById('findings').innerText")
    assert "No model under test: what the instrument recovered" in findings
    found = re.search(r"(\d+) of (\d+) planted answers found", findings)
    assert found and 0 < int(found[1]) <= int(found[2]), findings
    assert tab.js("document.querySelectorAll('#tbl-findings-instruments tbody tr').length") == 6
    assert tab.js("document.getElementById('tbl-findings-instruments').getBoundingClientRect().bottom") <= 900
    assert tab.js("document.getElementById('findings').getBoundingClientRect().top") < 300
    # no key table scrolls sideways at 1400 px (the full tables are a click away, in their own box)
    assert tab.js("[...document.querySelectorAll('.table-key .table-wrap')].every(w => w.scrollWidth <= w.clientWidth)")
    assert tab.js("document.querySelectorAll('.table-key').length") >= 5
    assert not tab.visible("#tbl-table_controls tbody tr td")
    tab.click("details.full-table:has(#tbl-table_controls) > summary")
    assert tab.visible("#tbl-table_controls tbody tr td")

    # the same study, its turn limit below the longest plan: the oracle is cut off
    set_param(repo, ["agent", "max_turns"], 4)
    set_param(repo, ["agent", "allow_short_max_turns"], True)
    run(repo, "snakemake", "--cores", "2", "--scheduler", "greedy", "report")
    assert report.stat().st_size < 5 * MiB
    tab = chromium(url)

    # the oracle banner, first thing on the page
    assert tab.visible("#oracle-check.banner-failed")
    assert "configuration or task-suite problem, not a result" in tab.js("document.getElementById('oracle-check').innerText")
    assert tab.js("document.getElementById('oracle-check').getBoundingClientRect().top") < 300

    # the page does not scroll sideways (wide tables and figures scroll in their own box)
    assert tab.js("document.documentElement.scrollWidth <= window.innerWidth")

    # tables: the whole table a click away, every row visible; sorting a column reorders the rows
    csv = pl.read_csv(repo / "results/table1.csv")
    tab.click("details.full-table:has(#tbl-table1) > summary")
    assert tab.js("document.querySelectorAll('#tbl-table1 tbody tr').length") == csv.height
    assert tab.visible("#tbl-table1 tbody tr:last-child td")
    col = csv.columns.index("csr") + 1
    cells = f"[...document.querySelectorAll('#tbl-table1 tbody tr')].map(r => r.cells[{col - 1}].getAttribute('data-sort'))"
    tab.click(f"#tbl-table1 thead th:nth-child({col}) button")
    up = [float(v) for v in tab.js(cells)]
    assert up == sorted(up) and tab.js(f"document.querySelector('#tbl-table1 thead th:nth-child({col})').getAttribute('aria-sort')") == "ascending"
    tab.click(f"#tbl-table1 thead th:nth-child({col}) button")
    down = [float(v) for v in tab.js(cells)]
    assert down == sorted(up, reverse=True) and len(set(up)) > 1
    model_col = "[...document.querySelectorAll('#tbl-table1 tbody tr')].map(r => r.cells[0].innerText)"
    tab.click("#tbl-table1 thead th:nth-child(1) button")
    assert tab.js(model_col) == sorted(csv["model"].to_list(), key=str.lower)

    # figures: each drawn by vega-embed (an SVG with marks), its PNG hidden
    n = len(FIGURE_NAMES)
    tab.wait(f"document.querySelectorAll('figure.vega-figure.rendered').length === {n}")
    for fig in FIGURE_NAMES:
        assert tab.js(f"document.querySelectorAll('#{fig} .vega-target svg .mark-group, #{fig} .vega-target svg path').length") > 0, fig
        assert tab.js(f"document.querySelector('#{fig} .vega-target svg').getBoundingClientRect().width") > 200, fig
        assert not tab.visible(f"#{fig} img.fallback")
    assert tab.js("document.querySelectorAll('figure.vega-figure.failed').length") == 0

    # the trace viewer: closed until clicked, then the conversation with a sprung trap
    first = tab.js("document.querySelector('details.trace').id")
    assert not tab.visible(f"#{first} ol.steps") and not tab.visible(f"#{first} > summary")
    tab.click("details.trace-model > summary")  # the model's sampled runs, then one of them
    assert tab.visible(f"#{first} > summary") and not tab.visible(f"#{first} ol.steps")
    tab.click(f"#{first} > summary")
    assert tab.js(f"document.getElementById('{first}').open") and tab.visible(f"#{first} ol.steps")
    text = tab.js(f"document.getElementById('{first}').innerText")
    assert "task prompt" in text and "trap sprung" in text and "canary:" in text

    # without JavaScript every figure shows its PNG
    still = chromium(url, javascript=False)
    pngs = still.js("[...document.querySelectorAll('figure.vega-figure img.fallback')].map(i => [i.complete, i.naturalWidth, i.offsetWidth])")
    assert len(pngs) == n and all(c and w > 200 and ow > 200 for c, w, ow in pngs)
    assert still.js("document.querySelectorAll('figure.vega-figure.rendered').length") == 0
