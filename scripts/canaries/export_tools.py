"""Write the tool environment's tools (results/tools.json): the MCP definitions of the 12
built-in tools, or, with environment.kind mcp, the tools document of the user's MCP servers
(listed now; see canarykit.mcp.environments), or, with environment.kind bfcl, BFCL's
functions and the task file of its entries (canarykit.bfcl.environment)."""

import sys
from pathlib import Path

from canarykit.bfcl.environment import export_environment as export_bfcl
from canarykit.bfcl.environment import is_bfcl
from canarykit.mcp.environments import export_environment, is_mcp
from canarykit.store.jsonio import write_json
from canarykit.study.workflow import run_script
from canarykit.tools import mcp_definitions, tool_table


def main(smk):
    environment = smk.params.environment
    if is_bfcl(environment):
        document = export_bfcl(environment, smk.output.tasks)
        write_json(smk.output[0], document)
        suite = document["bfcl"]
        skipped = "; ".join(f"{s['id']}: {s['reason']}" for s in suite["skipped"])
        print(f"export_tools: bfcl-eval {suite['version']}, {', '.join(suite['categories'])}: {suite['tasks']} of "
              f"{suite['entries']} entries are tasks, {len(document['tools'])} tools of {', '.join(suite['classes'])}"
              + (f"; {len(suite['skipped'])} skipped: {skipped}" if skipped else ""), file=sys.stderr)
        return
    if not is_mcp(environment):
        tool_table()  # the ToolsTable contract: unique names, servers, valid descriptions
        write_json(smk.output[0], mcp_definitions())
        return
    document = export_environment(environment, errlog_dir=Path(smk.log[0]).parent / "mcp-servers",
                                  warn=lambda m: print(m, file=sys.stderr))
    write_json(smk.output[0], document)
    servers = ", ".join(f"{s['name']} ({s['server_info'].get('name', '?')} {s['server_info'].get('version', '')})".rstrip()
                        for s in document["servers"])
    print(f"export_tools: {len(document['tools'])} tools from {servers}", file=sys.stderr)


if __name__ == "__main__":
    run_script(globals().get("snakemake"), main, rule="export_tools")
