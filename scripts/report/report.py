"""The study report (report.html): the oracle check, what was run, the diagnosis per model,
the tables, the figures, sampled trapped runs and the parameters, in one self-contained file."""

from canarykit.report.report import TraceSampling, load_captions, write_report
from canarykit.study.workflow import run_script


def main(smk):
    write_report(
        smk.output[0],
        stats=smk.input.stats,
        tables={name: smk.input[name] for name in smk.params.tables},
        validation=smk.input.validation,
        params=smk.input.params,
        runs=smk.input.runs,
        store=smk.params.store,
        captions=load_captions(smk.input.captions),
        sampling=TraceSampling(seed=smk.params.seed),
    )


if __name__ == "__main__":
    run_script(globals().get("snakemake"), main, rule="report")
