"""docs/dose.md: its commands work as printed (the configuration check with the output the
page shows; the study itself as a dry run), and the profile it names runs the dose condition."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from fakes.readme import DOCS, command, commands, sh, shown
from fakes.workflow import copy_workflow

from canarykit.types import DOSE_KINDS, DOSE_LEVELS

ROOT = Path(__file__).resolve().parents[1]
PROFILE = "src/canarykit/resources/profiles/dose.yaml"
RUN = "snakemake --cores 2 --configfile src/canarykit/resources/profiles/dose.yaml"
CHECK = "canarykit validate-config params.yaml --configfile src/canarykit/resources/profiles/dose.yaml"


def test_the_page_shows_the_profile_commands_and_the_profile_runs_the_dose_condition() -> None:
    assert [c.text for c in commands(DOCS / "dose.md")] == [command(RUN).text, command(CHECK).text]
    study = yaml.safe_load((ROOT / PROFILE).read_text())["study"]
    assert study["conditions"] == ["dose"] and study["output_dir"] == "results/dose"
    assert study["dose"] == {"levels": list(DOSE_LEVELS), "kinds": list(DOSE_KINDS), "seed": 0}


def test_validate_config_as_printed() -> None:
    proc = sh(ROOT, command(CHECK).text)
    assert proc.stdout.strip().splitlines()[0] == shown(CHECK)[0]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_workflow(tmp_path_factory.mktemp("dose") / "repo", per_difficulty=40)


@pytest.mark.slow  # a workflow plan of the whole suite: about 20 s
def test_the_study_plans_as_printed(repo: Path) -> None:
    """The printed invocation as a dry run: the profile merges, the DAG builds, and it plans
    the dose outputs (table, figure, curve) under the profile's own directory."""
    proc = sh(repo, command(RUN).text.replace("snakemake ", "snakemake -n ", 1))
    out = proc.stdout + proc.stderr
    for target in ("results/dose/table_dose.csv", "results/dose/figures/fig11", "results/dose/dose_curve.csv"):
        assert target in out, target
