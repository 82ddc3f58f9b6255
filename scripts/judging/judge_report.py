"""validation.json (oracle check, judge agreement, stability, human sheet) and counts.json."""

import sys
from pathlib import Path

from canarykit.agents.runner import exit_with_parent
from canarykit.study.pipeline import judge_report
from canarykit.study.workflow import run_script


def main(smk):
    exit_with_parent()  # the stability re-grading calls the primary judge
    counts = {"primary": smk.input.primary_counts}
    if smk.input.get("cross_counts"):
        counts["cross"] = smk.input.cross_counts
    report = judge_report(
        smk.input.runs, str(Path(smk.input.primary).parent), counts, smk.input.index, smk.params.store,
        smk.input.tasks, smk.params.judge, smk.params.models, smk.params.retries,
        smk.output.validation, smk.output.counts,
    )
    if report["error_runs"]:
        print(f"canarykit: {report['error_runs']} failed runs are excluded from every metric; the next plain "
              "`snakemake` (or `dvc repro`) retries them", file=sys.stderr)


if __name__ == "__main__":
    run_script(globals().get("snakemake"), main, rule="judge_report")
