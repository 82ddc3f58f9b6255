"""Figures 2, 4, 5, 6, 7, 8, 9 and 10 (SVG, PNG, HTML) from results/stats.json."""

from pathlib import Path

from canarykit.report.figures import make_figures
from canarykit.study.workflow import run_script


def main(smk):
    make_figures(smk.input.stats, Path(smk.output[0]).parent, formats=smk.params.formats)


if __name__ == "__main__":
    run_script(globals().get("snakemake"), main, rule="figures")
