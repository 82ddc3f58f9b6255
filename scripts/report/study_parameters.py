"""Write the study's parameters as run: params.yaml with every default filled in."""

import yaml

from canarykit.store.jsonio import atomic_write_text
from canarykit.study.workflow import run_script


def main(smk):
    text = "# params.yaml as validated for this study, defaults filled in\n"
    text += yaml.safe_dump(dict(smk.params.config), sort_keys=False, allow_unicode=True)
    atomic_write_text(smk.output[0], text)


if __name__ == "__main__":
    run_script(globals().get("snakemake"), main, rule="study_parameters")
