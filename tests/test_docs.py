"""The README is one screen and the documentation site behind it builds offline.

``make docs`` is ``mkdocs build --strict``: every link and anchor between the pages resolves
and every page is in the nav (``mkdocs.yml``'s ``validation``), the theme loads no web fonts
and no plugin fetches anything. Every command the pages show is run by a test
(``test_readme.py``); here, what holds the pages together.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml
from fakes.readme import DOCS, README, ROOT, pages


def test_the_readme_fits_in_250_lines_and_defines_csr_and_tsr_before_using_them() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; move the detail into docs/"
    text = "\n".join(lines)
    for rate in ("csr", "tsr"):
        first = re.search(rf"\b{rate}\b", text)
        assert first and text[first.start() - 2:first.start()] == "**", f"README: {rate} is used before it is defined"


def test_every_link_of_the_readme_into_docs_names_a_page_and_its_heading() -> None:
    readme = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\((docs/[^)#\s]+)(?:#([^)\s]+))?\)", readme)
    assert len(links) >= 12
    for target, anchor in links:
        path = ROOT / target
        if target.endswith(".png"):
            continue  # the screenshot: written by the slow tests/test_report_scroll.py
        assert path.is_file(), f"README links to {target}, which does not exist"
        if anchor:
            heads = {_slug(h) for h in re.findall(r"^#{1,6} (.+)$", path.read_text(encoding="utf-8"), re.M)}
            assert anchor in heads, f"README links to {target}#{anchor}: no such heading"


def _slug(heading: str) -> str:
    """Python-Markdown's toc slug (mkdocs' anchors)."""
    s = re.sub(r"[^\w\s-]", "", heading).strip().lower()
    return re.sub(r"[-\s]+", "-", s)


def test_the_site_lists_every_page_and_fetches_no_fonts() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["theme"]["name"] == "material" and config["theme"]["font"] is False
    assert not {str(p) if isinstance(p, str) else next(iter(p)) for p in config.get("plugins", [])} & {"privacy", "social"}
    listed = {next(iter(entry.values())) for entry in config["nav"]}
    on_disk = {str(p.relative_to(DOCS)) for p in pages() if p != README}
    assert listed == on_disk


def test_mkdocs_builds_the_site_strictly(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    index = (tmp_path / "site/index.html").read_text(encoding="utf-8")
    assert "fonts.googleapis.com" not in index and "Metrics and units" in index
    assert (tmp_path / "site/metrics.html").exists()  # use_directory_urls: false, so the pages open from disk


#: The files a user reads that point into the docs by section: the README, the docs, the study's
#: parameters and the profiles a user copies.
QUOTING = (README, *sorted(DOCS.glob("*.md")), ROOT / "params.yaml", *sorted((ROOT / "profiles").glob("*/config.yaml")),
           *sorted((ROOT / "src/canarykit/resources/profiles").glob("*.yaml")), *sorted((ROOT / "rules").glob("*.smk")))
#: ``README, "Section"`` or ``docs/page.md, "Section"``: a section quoted by its heading.
SECTION = re.compile(r'\b(README|docs/[a-z-]+\.md),\s+"([^"]+)"')


def _headings(page: Path) -> set[str]:
    """A page's headings as a reader reads them (code marks and line breaks dropped)."""
    return {" ".join(h.replace("`", "").split()) for h in re.findall(r"^#{1,6} (.+)$", page.read_text(encoding="utf-8"), re.M)}


def test_every_quoted_section_and_anchor_still_exists() -> None:
    """A section quoted by name (params.yaml: `README, "Reading control_effect"`) or linked by
    anchor (`statistics.md#size-and-coverage-measured`) names a heading that exists: a moved or
    renamed section fails here, not in a reader's hands."""
    quoted = 0
    for f in QUOTING:
        text = f.read_text(encoding="utf-8")
        for page, section in SECTION.findall(text):
            target = README if page == "README" else ROOT / page
            assert target.is_file(), f"{f.relative_to(ROOT)} quotes {page}, which does not exist"
            assert " ".join(section.replace("`", "").split()) in _headings(target), (
                f'{f.relative_to(ROOT)} quotes {page}, "{section}": no such heading')
            quoted += 1
        if f.parent != DOCS:
            continue
        for target, anchor in re.findall(r"\]\(([a-z-]+\.md)?#([^)\s]+)\)", text):
            page = DOCS / target if target else f
            assert page.is_file(), f"{f.relative_to(ROOT)} links to {target}, which does not exist"
            assert anchor in {_slug(h) for h in re.findall(r"^#{1,6} (.+)$", page.read_text(encoding="utf-8"), re.M)}, (
                f"{f.relative_to(ROOT)} links to {target or f.name}#{anchor}: no such heading")
            quoted += 1
    assert quoted >= 10
