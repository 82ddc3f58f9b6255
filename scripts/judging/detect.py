"""Classify every tool call of one model's runs (real, canary, unknown): per-run trap metrics."""

from canarykit.study.pipeline import detect_model
from canarykit.study.workflow import run_script


def main(smk):
    detect_model(smk.input.indexes, smk.params.store, smk.output.metrics, smk.output.calls, memo_dir=smk.params.memo)


if __name__ == "__main__":
    run_script(globals().get("snakemake"), main, rule="detect")
