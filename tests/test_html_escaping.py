"""Every HTML page escapes what it embeds (issue 22, item 8): a small real study whose model is
named ``</script><script>...``, whose group, canary descriptions and final answer carry
``</script>`` and ``onerror=``; neither the report nor the figure pages (``fig*.html``, where
vl-convert embeds the Vega spec raw) run any of it, and each still shows the text."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from fakes.study import make_study

from canarykit import stats
from canarykit.agents import ChatResponse, ToolCall, run_grid
from canarykit.agents.protocol import make_backend
from canarykit.judging import JudgingJob, detect_and_judge
from canarykit.report import figures
from canarykit.report.report import build_report, load_captions
from canarykit.types import CANARY_TYPES

ROOT = Path(__file__).resolve().parents[1]
MODEL = "</script><script>alert(3)</script>"  # the label
GROUP = '<img src=x onerror=alert("group")>'
TOOL_TEXT = ' </script><img src=x onerror=alert("tool")>'
ANSWER = 'Done. </script><script>alert("answer")</script><img src=x onerror=alert("answer")>'
#: What must never reach a page raw: a script opened or closed by the data, a tag with a handler.
RAW = ("<script>alert(", "</script><img", "<img src=x onerror", "</script><script>")


class HostileModel:
    """A model that takes the tool whose description carries the hostile text (a canary), then
    answers with markup (served here in place of an Ollama model: no server, no client)."""

    kind, cacheable, provider = "ollama", False, "test"
    cache_scope: Mapping[str, Any] = {}

    async def complete(self, request: Any) -> ChatResponse:
        if not any(m.get("role") == "tool" for m in request.messages):
            fn = next(t["function"] for t in request.tools if "onerror" in t["function"]["description"])
            return ChatResponse(content=None, tool_calls=[ToolCall("c1", fn["name"], "{}")], finish_reason="tool_calls")
        return ChatResponse(content=ANSWER, finish_reason="stop")


def backend_of(spec: Mapping[str, Any], agent: Any) -> Any:
    return HostileModel() if spec["name"] == MODEL else make_backend(spec, agent)


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    tasks_path, pools, _ = make_study(root, n_tasks=3, pools={"standard": ["declared"]},
                                      suffixes={"standard": {t: TOOL_TEXT for t in CANARY_TYPES}})
    models = [{"name": MODEL, "backend": "ollama", "model": "hostile", "group": GROUP, "provider": "test"},
              {"name": "oracle", "backend": "reference", "agent": "oracle", "group": "reference"}]
    store = root / "store"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("canarykit.agents.runner.make_backend", backend_of)
        run_grid(models, tasks_path, pools, [0], {"max_turns": 4, "cache_dir": str(root / "cache")}, store,
                 root / "index.parquet", root / "summary.json", progress=False)
    out = root / "results"
    job = JudgingJob(root / "index.parquet", store, tasks_path, out / "runs.parquet", out / "judge/verdicts",
                     out / "judge/validation.json", cache=root / "verdicts", calls=out / "judge/calls.parquet")
    detect_and_judge(job, {"template": str(ROOT / "data/prompts/judge_appendix_b.txt"), "primary": {"kind": "rubric"},
                           "cross": {"kind": "tool-coverage"}, "stability": {"sample": 0}},
                     models, log=open(os.devnull, "w"))  # noqa: SIM115
    result = stats.compute_all(stats.load_runs(out / "runs.parquet"), stats.StatsConfig(resamples=50))
    stats.write_outputs(result, out)
    return out


def strings(obj: Any) -> set[str]:
    """Every string value of a JSON document."""
    if isinstance(obj, str):
        return {obj}
    if isinstance(obj, dict):
        return {s for v in obj.values() for s in strings(v)}
    if isinstance(obj, list):
        return {s for v in obj for s in strings(v)}
    return set()


def scripts(page: str) -> list[str]:
    return re.findall(r"<script[^>]*>", page)


def test_the_report_shows_hostile_labels_tool_texts_and_answers_as_text(study: Path) -> None:
    page = build_report(stats=study / "stats.json", validation=study / "judge/validation.json", runs=study / "runs.parquet",
                        store=study.parent / "store", captions=load_captions(ROOT / "report"), javascript=False)
    for raw in RAW:
        assert raw not in page, raw
    assert "&lt;/script&gt;&lt;script&gt;alert(3)&lt;/script&gt;" in page, "the model's name, shown as text"
    assert "&lt;img src=x onerror=alert(&#34;answer&#34;)&gt;" in page or "\\u003cimg src=x onerror" in page, \
        "the answer, shown as text"
    assert all(tag in ('<script type="application/json">', "<script>") or tag.startswith('<script type="application/json"')
               for tag in scripts(page)), scripts(page)


def test_the_figure_pages_embed_their_spec_escaped(study: Path, tmp_path: Path) -> None:
    result = json.loads((study / "stats.json").read_text())
    pages = figures.make_figures(result, tmp_path, formats=("html",))
    assert len(pages) == len(figures.FIGURES)
    shown = 0
    for path in pages:
        page = path.read_text()
        for raw in RAW:
            assert raw not in page, (path.name, raw)
        assert len(scripts(page)) == 2, (path.name, scripts(page))  # vl-convert's bundle and its embed call
        start = page.rindex("const spec = ") + len("const spec = ")
        spec, _ = json.JSONDecoder().raw_decode(page, start)
        shown += MODEL in strings(spec)
    assert shown >= 3, "the model's name is still in the figures, as data"
