"""The report's failed-runs banner: when runs of the study failed, the first screen leads
with how many, the first failure (its error class, the host it could not use, its model) and
how to retry them; nothing when every run finished.

A small function of the per-run table and the run store (:mod:`canarykit.study.failures`
holds the facts; the console's closing block says the same), so the page stays a pure
function of the study's outputs: it names no command line, only what the study's own
command does again.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from pathlib import Path
from typing import Any

from markupsafe import Markup


def failure_banner(runs: Any, store: str | Path | None, params: Mapping[str, Any]) -> Markup | None:
    """The banner's HTML (None without failed runs or without a per-run table)."""
    from ..study.failed_runs import first_failure

    if runs is None or "error" not in runs.columns or not runs.height:
        return None
    failed = int(runs["error"].fill_null(False).sum())
    if not failed:
        return None
    models = [m for m in params.get("models") or [] if isinstance(m, Mapping)]
    allowed = float((params.get("study") or {}).get("allow_failed") or 0.0)
    first = first_failure(runs, store, models)
    share = failed / runs.height
    verdict = ("more than study.allow_failed allows: the study exited with an error"
               if share > allowed else f"within study.allow_failed ({allowed:g})")
    parts = [
        '<div class="banner banner-failed" id="failed-runs" role="alert">',
        f"<h2>{failed:,} of {runs.height:,} runs failed ({share:.0%})</h2>",
        f"<p>{escape(verdict)}. Every statistic below is over the runs that did not fail.</p>",
    ]
    if first is not None:
        detail = f": <code>{escape(first.message)}</code>" if first.message else ""
        parts.append(f"<p>The first: <strong>{escape(first.error_class)}</strong> from <strong>{escape(first.host)}</strong> "
                     f"(model <strong>{escape(first.model)}</strong>){detail}.</p>")
    parts.append("<p>Fix the cause, then run the study's command again (<code>canarykit run --configfile "
                 "&lt;your profile&gt;</code>): finished runs are reused and the failed ones are retried. Each agent "
                 "job's log is under <code>logs/run_agents/</code> of the study's output directory.</p>")
    parts.append("</div>")
    return Markup("\n".join(parts))
