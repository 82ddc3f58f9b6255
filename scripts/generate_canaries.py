"""Generate one pool of canaries (72 for the 12 real tools) from results/tools.json."""

import json
from pathlib import Path

from canarykit.canaries import (
    canary_table,
    generate_pool,
    make_rewriter,
    validate_tool_defs,
    write_pool,
)
from canarykit.workflow import run_script


def main(smk):
    source = smk.input.tools
    tools = validate_tool_defs(json.loads(Path(source).read_text()), source)
    rewriter = make_rewriter(smk.params.generator, smk.params.llm)
    records = generate_pool(
        tools,
        smk.wildcards.pool,
        smk.params.suffixes,
        special_cases=smk.params.special_cases,
        rewriter=rewriter,
        source=source,
    )
    canary_table(records, smk.output[0])  # the CanariesTable contract
    write_pool(records, smk.output[0])


run_script(snakemake, main)  # noqa: F821
