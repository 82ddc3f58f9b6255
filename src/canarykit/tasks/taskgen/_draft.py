"""Drafting helpers of the task generator: a :class:`Draft` runs a plan's steps for real
against :func:`canarykit.tools.execute` and collects the rubric facts read from the results.

A figure one step needs is read from an earlier step's result (:func:`figure`,
:func:`search_hit`, :func:`csv_column`) and written literally into the next step's
arguments (:func:`lit`), so every plan replays without chaining.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ... import tools
from ...types import ToolResult
from ..tasks import Fact


def lit(x: float) -> str:
    """A number as a literal for prompts and expressions (``42`` not ``42.0``)."""
    if isinstance(x, int) or float(x).is_integer():
        return str(int(x))
    return repr(float(x))


def tol(value: float, exact: bool = False) -> float:
    """Absolute tolerance: 0.5 for counts, else 0.5% of the value with a 0.01 floor."""
    if exact:
        return 0.5
    return max(0.01, round(abs(value) * 0.005, 6))


@dataclass
class Draft:
    """A task under construction: runs its steps for real and collects the rubric's facts."""

    steps: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    results: list[ToolResult] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)

    def call(self, tool: str, **args: Any) -> Any:
        result = tools.execute(tool, args)
        if result.is_error:
            raise RuntimeError(f"plan step {tool}({args}) failed: {result.content}")
        self.steps.append((tool, args))
        self.results.append(result)
        return result.data

    def num(self, label: str, value: float, exact: bool = False) -> None:
        v = float(value)
        # A whole figure stays an int, so the task file says 42 where the tool said 42.
        self.facts.append(Fact("number", label, int(v) if v.is_integer() else v, tol(v, exact)))

    def text(self, label: str, value: str) -> None:
        self.facts.append(Fact("text", label, value))


def figure(text: str, pattern: str) -> float:
    m = re.search(pattern, text)
    if m is None:
        raise RuntimeError(f"pattern {pattern!r} not found in {text[:200]!r}")
    return float(m.group(1).replace(",", ""))


def search_hit(data: dict[str, Any], url_part: str) -> dict[str, Any]:
    for r in data["results"]:
        if url_part in r["url"]:
            return r
    raise RuntimeError(f"no result with {url_part!r} among {[r['url'] for r in data['results']]}")


def csv_column(content: str, column: str, where: Callable[[dict[str, str]], bool] | None = None) -> list[float]:
    lines = content.strip().splitlines()
    header = lines[0].split(",")
    out = []
    for line in lines[1:]:
        row = dict(zip(header, line.split(","), strict=True))
        if where is None or where(row):
            out.append(float(row[column]))
    return out


def region_is(region: str | None) -> Callable[[dict[str, str]], bool] | None:
    """A CSV row filter on the ``region`` column (``None``: keep every row)."""
    if region is None:
        return None
    return lambda row: row["region"] == region


def calc(d: Draft, expression: str) -> float:
    return float(d.call("calculate", expression=expression)["result"])


# Spec of one task: (prompt, draft, primary canary type)
Spec = tuple[str, Draft, str]

#: A task family: yields the specs of its tasks in suite order.
Family = Callable[[], Iterator[Spec]]

RATES = {  # currency -> (search query, url fragment, regex, currency name)
    "JPY": ("USD to JPY exchange rate", "To=JPY", r"1 USD = ([\d.]+) JPY", "Japanese yen"),
    "EUR": ("US dollar to euro exchange rate", "To=EUR", r"1 USD = ([\d.]+) EUR", "euros"),
    "GBP": ("dollar to British pound exchange rate", "To=GBP", r"1 USD = ([\d.]+) GBP", "British pounds"),
    "INR": ("USD to Indian rupee exchange rate", "To=INR", r"1 USD = ([\d.]+) INR", "Indian rupees"),
    "CAD": ("USD to Canadian dollar exchange rate", "To=CAD", r"1 USD = ([\d.]+) CAD", "Canadian dollars"),
}


def rate(d: Draft, cur: str) -> float:
    query, url, pattern, _ = RATES[cur]
    hit = search_hit(d.call("web_search", query=query), url)
    return figure(hit["snippet"], pattern)
