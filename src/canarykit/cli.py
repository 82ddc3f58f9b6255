"""The ``canarykit`` command line.

Every command reports a user error (bad config, task file, tool schema, run table, ...) as
one message naming the file and the field, and exits with status 2; nothing already written
is removed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from .errors import CanaryKitError


def _generate(args: argparse.Namespace) -> int:
    from .canaries import generate_command

    return generate_command(args.tools, args.output, pool=args.pool, params_path=args.params)


def _stats(args: argparse.Namespace) -> int:
    from .stats import stats_command

    kwargs: dict[str, Any] = {}
    if args.params:
        from .config import load_params

        cfg = load_params(args.params)
        kwargs = {
            "resamples": cfg["stats"]["bootstrap_resamples"],
            "seed": cfg["stats"]["seed"],
            "alpha": cfg["stats"]["alpha"],
            "group_averages": cfg["stats"]["group_averages"] or None,
            "primary_pool": cfg["canaries"]["pool"],
        }
    if args.resamples is not None:
        kwargs["resamples"] = args.resamples
    return stats_command(args.runs, args.output, **kwargs)


def _validate_config(args: argparse.Namespace) -> int:
    from .config import check_study, load_params, run_grid

    cfg = load_params(args.params)
    grid = run_grid(cfg)
    tasks = check_study(cfg, args.params)
    print(f"{args.params}: valid. {len(cfg['models'])} agents, {len(tasks)} tasks, grid {grid}, seeds {cfg['study']['seeds']}")
    return 0


def _list_mcp_tools(args: argparse.Namespace) -> int:
    from .tools.mcp_servers import list_mcp_tools

    command = [c for c in args.command if c != "--"]
    if not command:
        raise SystemExit("list-mcp-tools: give the server command after --")
    tools = list_mcp_tools(command)
    text = json.dumps(tools, indent=2, ensure_ascii=False) + "\n"
    if args.output:
        from .jsonio import atomic_write_text

        atomic_write_text(args.output, text)
        print(f"{len(tools)} tools written to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _serve_tools(args: argparse.Namespace) -> int:
    from .tools.mcp_servers import serve_stdio

    serve_stdio(args.server)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="canarykit", description=__doc__.splitlines()[0] if __doc__ else None)
    sub = p.add_subparsers(dest="command", required=True)

    g = sub.add_parser("generate-canaries", help="generate one canary of each of the six types for every tool")
    g.add_argument("tools", metavar="TOOLS.json", help="JSON list of MCP tool definitions (name, description, inputSchema)")
    g.add_argument("-o", "--output", required=True, metavar="OUT.json")
    g.add_argument("--pool", choices=["standard", "subtle"], default="standard")
    g.add_argument("--params", default=None, help="take suffixes and special cases from this params.yaml")
    g.set_defaults(func=_generate)

    s = sub.add_parser("stats", help="every statistic, table and figure-data file from a per-run table")
    s.add_argument("runs", metavar="RUNS", help="per-run table (Parquet), e.g. results/runs.parquet")
    s.add_argument("-o", "--output", required=True, metavar="DIR")
    s.add_argument("--params", default=None, help="take the stats settings from this params.yaml")
    s.add_argument("--resamples", type=int, default=None, help="bootstrap resamples (default 10,000)")
    s.set_defaults(func=_stats)

    v = sub.add_parser("validate-config", help="check params.yaml and the task suite it names")
    v.add_argument("params", nargs="?", default="params.yaml")
    v.set_defaults(func=_validate_config)

    ls = sub.add_parser("list-mcp-tools", help="list the tools of any MCP server (stdio) as TOOLS.json")
    ls.add_argument("-o", "--output", default=None)
    ls.add_argument("command", nargs=argparse.REMAINDER, help="-- server command and arguments")
    ls.set_defaults(func=_list_mcp_tools)

    sv = sub.add_parser("serve-tools", help="serve one of the five tool servers over MCP stdio")
    sv.add_argument("server", choices=["weather", "math", "file", "search", "database"])
    sv.set_defaults(func=_serve_tools)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except CanaryKitError as exc:
        print(f"canarykit: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
