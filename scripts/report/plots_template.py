"""The HTML template `dvc plots` renders into, with Vega, Vega-Lite and vega-embed inlined
(from vl-convert's bundle), so a plots page renders offline."""

from canarykit.report.figures import offline_plots_template
from canarykit.store.jsonio import atomic_write_text
from canarykit.study.workflow import run_script


def main(smk):
    atomic_write_text(smk.output[0], offline_plots_template())


if __name__ == "__main__":
    run_script(globals().get("snakemake"), main, rule="plots_template")
