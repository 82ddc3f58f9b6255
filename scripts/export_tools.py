"""Write the MCP definitions of the 12 real tools (results/tools.json)."""

from canarykit.jsonio import write_json
from canarykit.tools import mcp_definitions, tool_table
from canarykit.workflow import run_script


def main(smk):
    tool_table()  # the ToolsTable contract: unique names, servers, valid descriptions
    write_json(smk.output[0], mcp_definitions())


run_script(snakemake, main)  # noqa: F821
