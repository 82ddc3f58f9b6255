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

from .errors import CanaryKitError, ConfigError, did_you_mean


def _generate(args: argparse.Namespace) -> int:
    from .canaries import generate_command
    from .types import CANARY_TYPES

    types = None
    if args.types:
        types = [t.strip() for t in args.types.split(",") if t.strip()]
        unknown = [t for t in types if t not in CANARY_TYPES]
        if unknown:
            from .errors import InputError

            raise InputError("<command line>", "--types", f"unknown canary type {unknown[0]!r}"
                             f"{did_you_mean(unknown[0], CANARY_TYPES)}; expected some of {list(CANARY_TYPES)}")
    return generate_command(
        args.tools, args.output, pool=args.pool, params_path=args.params, fit=args.fit,
        controls=args.controls, strict=args.strict, tasks_json=args.tasks, types=types, variants=args.variants,
    )


def _audit_twins(args: argparse.Namespace) -> int:
    from .canaries import audit_command

    return audit_command(args.pool, quiet=args.quiet)


def _stats(args: argparse.Namespace) -> int:
    from .stats import stats_command

    kwargs: dict[str, Any] = {}
    if args.resamples is not None:
        from .errors import InputError
        from .stats import MAX_RESAMPLES

        if not 1 <= args.resamples <= MAX_RESAMPLES:
            raise InputError("command line", "--resamples", f"must be between 1 and {MAX_RESAMPLES:,}, got {args.resamples:,}")
        kwargs["resamples"] = args.resamples
    if args.params:
        from .stats import StatsConfig
        from .study.config import load_params

        cfg = load_params(args.params)
        # every stats key of the params file; --resamples wins
        kwargs = {"config": StatsConfig.from_mapping(cfg["stats"], primary_pool=cfg["canaries"]["pool"],
                                                     ablation_condition=cfg["ablation"]["condition"], **kwargs)}
    return stats_command(args.runs, args.output, pools=args.pools or (), **kwargs)


def _plan(args: argparse.Namespace) -> int:
    from .study.plan import plan_command

    return plan_command(args.configfile, args.base_rate, args.icc, args.effect, args.output, icc_tool=args.icc_tool,
                        icc_wording=args.icc_wording, blind_rate=args.blind_rate)


def _human_sheet(args: argparse.Namespace) -> int:
    from .judging import human_sheet_command

    strata = [c.strip() for c in args.stratify.split(",") if c.strip()] if args.stratify else []
    return human_sheet_command(
        args.output, runs_path=args.runs, store_dir=args.store, n=args.n, strata=strata, seed=args.seed,
        tasks_path=args.tasks,
    )


def _validate_config(args: argparse.Namespace) -> int:
    from .study.config import blame, check_study, load_params, read_yaml_config, run_grid

    overlays = list(args.configfile or [])
    cfg = load_params(args.params, overlays)
    grid = run_grid(cfg)
    try:
        tasks = check_study(cfg, args.params)
    except ConfigError as exc:
        raise blame(exc, [(str(f), read_yaml_config(f)) for f in (args.params, *overlays)]) from None
    shown = " + ".join([args.params, *map(str, overlays)])
    from .study.config import key_source
    from .study.preflight import missing_keys, unreachable_backends

    layers = [(str(f), read_yaml_config(f)) for f in (args.params, *overlays)]
    problems = missing_keys(cfg["models"])
    if args.check_backends:
        problems += unreachable_backends(cfg["models"], cfg["agent"])
    if problems:
        for line in problems:
            field = line.split(" ", 1)[0]
            print(f"canarykit: error: {key_source(field, layers) or args.params}: {line}", file=sys.stderr)
        return 2
    checked = f"; {sum(m['backend'] != 'reference' for m in cfg['models'])} backends answered" if args.check_backends else ""
    print(f"{shown}: valid. {len(cfg['models'])} agents, {len(tasks)} tasks, grid {grid}, seeds {cfg['study']['seeds']}{checked}")
    return 0


def _run(args: argparse.Namespace, extra: Sequence[str]) -> int:
    """``canarykit run``: Snakemake on a study with the one-screen console, as ``make run``."""
    import os
    import shlex
    import shutil
    import subprocess
    from pathlib import Path

    from .errors import InputError
    from .study.failures import COMMAND_ENV

    for f in args.configfile:
        if not Path(f).is_file():
            what = "is a directory" if Path(f).is_dir() else "file not found"
            raise InputError(f, "--configfile", what + did_you_mean(Path(f).name, _yaml_files_near(f)))
    if not Path("Snakefile").is_file():
        raise InputError("Snakefile", "<file>", "not found: run canarykit run from the workflow's directory (the clone)")
    snakemake = shutil.which("snakemake", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    if snakemake is None:
        raise InputError("<command line>", "run", "snakemake is not installed in this environment (make install)")
    cmd = [snakemake, "--cores", str(args.cores), "--scheduler", "greedy", "--logger", "canarykit", *extra]
    if args.configfile:
        cmd += ["--configfile", *args.configfile]
    env = dict(os.environ)
    env[COMMAND_ENV] = shlex.join(["canarykit", "run", *args.argv])
    proc = subprocess.Popen(cmd, env=env)
    # Ctrl-C reaches Snakemake and its jobs (one process group): Snakemake stops the jobs and
    # the console prints one line with the resume command; this process only waits for it.
    while True:
        try:
            return 130 if proc.wait() < 0 else proc.returncode
        except KeyboardInterrupt:
            continue


def _run_args(words: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    """``canarykit run``'s own options (``--configfile F ...``, ``--cores N``); every other word
    (targets, Snakemake's options) goes to Snakemake as given, in order."""
    from .errors import InputError

    args = argparse.Namespace(configfile=[], cores="2", targets=[], argv=list(words))
    extra: list[str] = []
    words = list(words)
    while words:
        word = words.pop(0)
        if word == "--configfile" or word.startswith("--configfile="):
            if "=" in word:
                args.configfile.append(word.split("=", 1)[1])
            while words and not words[0].startswith("-"):
                args.configfile.append(words.pop(0))
            if not args.configfile:
                raise InputError("<command line>", "--configfile", "give the profile file(s) after it")
        elif word == "--cores" or word.startswith("--cores="):
            if "=" in word:
                args.cores = word.split("=", 1)[1]
            elif words:
                args.cores = words.pop(0)
            else:
                raise InputError("<command line>", "--cores", "give a number of cores (or all)")
        else:
            extra.append(word)
    return args, extra


def _yaml_files_near(path: str) -> list[str]:
    from pathlib import Path

    parent = Path(path).parent if str(Path(path).parent) else Path(".")
    try:
        return [p.name for p in parent.iterdir() if p.suffix in (".yaml", ".yml")]
    except OSError:
        return []


def _list_mcp_tools(args: argparse.Namespace) -> int:
    from .errors import InputError
    from .mcp.toolservers import list_mcp_tools, server_environment

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]  # only the first -- separates; later ones belong to the server
    if args.url and command:
        raise InputError("<command line>", "--url", "give either --url or a server command after --, not both")
    if not args.url and not command:
        raise InputError("<command line>", "command", "give the server command after -- (or --url URL)")
    env = server_environment(args.env or [], inherit=args.inherit_env)
    tools = list_mcp_tools(command or None, args.timeout, url=args.url, env=env, server_name=args.server,
                           strict=args.strict)
    if args.append:
        if not args.output:
            raise InputError("<command line>", "--append", "needs -o OUT.json (the tool list to add to)")
        tools = _appended(args.output, tools)
    text = json.dumps(tools, indent=2, ensure_ascii=False) + "\n"
    if args.output:
        from .store.jsonio import atomic_write_text

        atomic_write_text(args.output, text)
        servers = sorted({str(t.get("server")) for t in tools})
        print(f"{len(tools)} tools ({', '.join(servers)}) written to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _appended(path: str, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool list in ``path`` without the tools of the servers just listed, plus them
    (listing a server again replaces its earlier export)."""
    from pathlib import Path

    from .errors import InputError
    from .store.jsonio import read_json_input

    if not Path(path).exists():
        return tools
    existing = read_json_input(path, "tool list")
    if not isinstance(existing, list):
        raise InputError(path, "<root>", "--append needs a tool list (a JSON list) to add to")
    servers = {t.get("server") for t in tools}
    return [t for t in existing if not (isinstance(t, dict) and t.get("server") in servers)] + tools


def _upstream_specs(args: argparse.Namespace) -> list[Any]:
    """The proxy's upstreams: ``--stdio NAME=CMD`` and ``--upstream [NAME=]URL`` in the order
    given, then the server after ``--`` (named by ``--server``)."""
    import os
    import shlex

    from .errors import InputError
    from .mcp.toolservers import server_environment
    from .mcp.upstream import ServerSpec

    env = server_environment(args.env or [], inherit=args.inherit_env)
    by_name = tuple(k for k in args.env or [] if "=" not in k)  # passed by name: secrets, kept out of traces
    specs: list[ServerSpec] = []
    for i, item in enumerate(args.stdio or []):
        name, sep, cmd = item.partition("=")
        if not sep or not name.strip() or not cmd.strip():
            raise InputError("<command line>", f"--stdio[{i}]", f"expected NAME='COMMAND ARGS', got {item!r}")
        try:
            argv = shlex.split(cmd)
        except ValueError as exc:
            raise InputError("<command line>", f"--stdio[{i}]", f"cannot split the command: {exc}") from None
        if argv:
            argv[0] = os.path.expanduser(argv[0])  # quoted, so the shell left a leading ~ alone
        specs.append(ServerSpec(name.strip(), command=tuple(argv), env=env, where=f"<command line>: --stdio {name.strip()}",
                                secret_names=by_name))
    for item in args.upstream or []:
        name, sep, url = item.partition("=")
        if not sep or "://" in name:
            name, url = "", item
        if not url.startswith(("http://", "https://")):
            raise InputError("<command line>", "--upstream", f"expected [NAME=]http(s)://HOST:PORT/PATH, got {item!r}")
        specs.append(ServerSpec(name.strip() or None, url=url, where=f"<command line>: --upstream {item}"))
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]  # only the first -- separates; later ones belong to the server
    if command:
        specs.append(ServerSpec(args.server, command=tuple(command), env=env, where="<command line>", secret_names=by_name))
    elif args.server:
        raise InputError("<command line>", "--server", "names the server given after --; there is none")
    if not specs:
        raise InputError("<command line>", "upstream",
                         "give the upstream server: -- CMD ARGS, --stdio NAME='CMD ARGS' or --upstream [NAME=]URL")
    return specs


def _proxy(args: argparse.Namespace) -> int:
    import anyio

    from .mcp.proxy import parse_types, run_proxy, settings_from_params

    specs = _upstream_specs(args)
    shadow = tuple(t.strip() for t in args.shadow.split(",") if t.strip()) if args.shadow else None
    real = tuple(t.strip() for t in args.real_tools.split(",") if t.strip()) if args.real_tools else None
    settings = settings_from_params(args.params, args.pool, args.fit, parse_types(args.types), args.controls, args.seed,
                                    shadow, real)
    if args.http is not None and not 0 <= args.http <= 65535:
        from .errors import InputError

        raise InputError("<command line>", "--http", f"expected a port 0-65535, got {args.http}")
    import contextlib

    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C ends a proxy normally (traces are flushed per line)
        anyio.run(lambda: run_proxy(specs, settings, trace_dir=args.trace_dir, http_port=args.http,
                                    timeout_s=args.timeout, call_timeout_s=args.call_timeout, strict=args.strict))
    return 0


def _diagnose(args: argparse.Namespace) -> int:
    from .mcp.diagnose import diagnose_command

    return diagnose_command(args.traces, args.output, args.tools)


def _export(args: argparse.Namespace) -> int:
    from .export.inspect_log import export_inspect

    written = export_inspect(args.study, args.output, store=args.store, tasks=args.tasks)
    print(f"{len(written)} Inspect logs written to {args.output} (open them with: inspect view --log-dir {args.output})")
    return 0


def _serve_tools(args: argparse.Namespace) -> int:
    from .mcp.toolservers import serve_stdio

    serve_stdio(args.server)
    return 0


#: What ``add_subparsers`` returns: each ``_add_*`` below adds one subcommand to it.
_Subcommands = argparse._SubParsersAction  # argparse names no public type for it


def _add_generate(sub: _Subcommands) -> None:
    """The ``generate-canaries`` subcommand's arguments."""
    g = sub.add_parser("generate-canaries", help="generate canaries (and their controls) for any MCP tool list")
    g.add_argument("tools", metavar="TOOLS.json", help="tool list: MCP tool definitions (name, description, inputSchema; optional title, annotations, outputSchema, server)")
    g.add_argument("-o", "--output", required=True, metavar="OUT.json", help="the pool file to write")
    g.add_argument("--pool", choices=["standard", "subtle"], default="standard",
                   help="which give-away suffixes to use: standard, or the softened subtle tells (default standard)")
    g.add_argument("--params", default=None, help="take fit, suffixes, control suffixes and special cases from this params.yaml")
    g.add_argument("--fit", choices=["paper", "fitted"], default=None, help="paper: every type for every tool (the paper's pool); fitted (default): only types whose defect means something for the tool")
    g.add_argument("--controls", action="store_true", help="also write each canary's twin (the same canary with the probed property healthy)")
    g.add_argument("--variants", type=int, default=None, metavar="K",
                   help="wordings per (tool, type), drawn from the held-back bank with canaries.wording_seed, 1-8 "
                   "(default: canaries.variants of --params, else 3)")
    g.add_argument("--strict", action="store_true", help="an unusable tool or a schema that cannot host a type is an error, not a warning")
    g.add_argument("--tasks", default=None, metavar="TASKS.json", help="refuse granularity cases that coincide with a task of this suite (and derive ones that do not)")
    g.add_argument("--types", default=None, metavar="T1,T2", help="only these canary types (comma-separated)")
    g.set_defaults(func=_generate)


def _add_audit_twins(sub: _Subcommands) -> None:
    """The ``audit-twins`` subcommand's arguments."""
    a = sub.add_parser("audit-twins", help="list every span in which each twin of a pool differs from its canary; "
                       "exit 1 when one is not the type's declared tell")
    a.add_argument("pool", metavar="POOL", help="a pool file with twins (generate-canaries --controls, or the workflow's)")
    a.add_argument("--quiet", action="store_true", help="print the summary and the spans that are not a declared tell only")
    a.set_defaults(func=_audit_twins)


def _add_stats(sub: _Subcommands) -> None:
    """The ``stats`` subcommand's arguments."""
    s = sub.add_parser("stats", help="every statistic, table and figure-data file from a per-run table")
    s.add_argument("runs", metavar="RUNS", help="per-run table (Parquet), e.g. results/runs.parquet")
    s.add_argument("-o", "--output", required=True, metavar="DIR",
                   help="directory for stats.json, table1-3 (.csv, .md) and the figure data (created if missing)")
    s.add_argument("--params", default=None, help="take the stats settings from this params.yaml")
    s.add_argument("--resamples", type=int, default=None, help="bootstrap resamples (default 10,000; at most 100,000)")
    s.add_argument("--pools", nargs="*", default=None, metavar="POOL",
                   help="the study's pool files: stats.json's meta reports their wording seed and drawn wordings")
    s.set_defaults(func=_stats)


def _add_plan(sub: _Subcommands) -> None:
    """The ``plan`` subcommand's arguments."""
    from .study.plan import DEFAULTS

    p = sub.add_parser("plan", help="before running: runs, model calls, tokens and USD per model, and the power of the "
                                    "primary estimands (MDE at 80%%) by simulating the study's own estimator")
    p.add_argument("--configfile", nargs="+", action="extend", default=[], metavar="F",
                   help="config files merged over params.yaml, as snakemake --configfile (e.g. a profile)")
    p.add_argument("--base-rate", type=float, default=DEFAULTS["base_rate"], metavar="R",
                   help=f"the twin's first-pick rate (default {DEFAULTS['base_rate']})")
    p.add_argument("--icc", type=float, default=DEFAULTS["icc"], metavar="RHO",
                   help=f"intra-task correlation of two runs of one task (default {DEFAULTS['icc']})")
    p.add_argument("--effect", type=float, default=DEFAULTS["effect"], metavar="D",
                   help=f"the effect whose power is reported (default {DEFAULTS['effect']})")
    p.add_argument("--icc-tool", type=float, default=DEFAULTS["icc_tool"], metavar="RHO",
                   help=f"correlation of two runs on one real tool's look-alikes (default {DEFAULTS['icc_tool']})")
    p.add_argument("--icc-wording", type=float, default=DEFAULTS["icc_wording"], metavar="RHO",
                   help=f"correlation of two runs offered one wording (bank entry) (default {DEFAULTS['icc_wording']})")
    p.add_argument("--blind-rate", type=float, default=None, metavar="R",
                   help="both sides' rate at which the power of blind is reported (default: --base-rate)")
    p.add_argument("-o", "--output", default=None, metavar="plan.json", help="write the plan as JSON too")
    p.set_defaults(func=_plan)


def _add_human_sheet(sub: _Subcommands) -> None:
    """The ``human-sheet`` subcommand's arguments."""
    h = sub.add_parser(
        "human-sheet",
        help="write a blinded, stratified sheet of runs for a person to grade (Appendix D)",
        description="Sample runs of the per-run table, stratified, and write each one blinded (canary names shown as "
        "the real tools they shadow, the canary runtime's marker fields stripped, no model or condition) as CSV "
        "with an empty verdict column. Fill it with true/false and set judge.human_sheet to compare it with the judges.",
    )
    h.add_argument("--n", type=int, default=40, help="runs on the sheet (default 40, as in the paper)")
    h.add_argument("--stratify", default="model,difficulty", metavar="COLS",
                   help="comma-separated columns of the runs table to spread the sample over (default model,difficulty)")
    h.add_argument("-o", "--output", required=True, metavar="SHEET.csv", help="the CSV sheet to write (fill its verdict column)")
    h.add_argument("--runs", default="results/runs.parquet", help="per-run table (default results/runs.parquet)")
    h.add_argument("--store", default="results/runs/store", help="run store with the run records (default results/runs/store)")
    h.add_argument("--seed", type=int, default=0, help="seed of the sample and of the row order (default 0)")
    h.add_argument("--tasks", default=None, help="task file, for records that do not carry their prompt")
    h.set_defaults(func=_human_sheet)


def _add_validate_config(sub: _Subcommands) -> None:
    """The ``validate-config`` subcommand's arguments."""
    v = sub.add_parser("validate-config", help="check params.yaml and the task suite it names")
    v.add_argument("params", nargs="?", default="params.yaml", help="the params file to check (default params.yaml)")
    v.add_argument("--configfile", nargs="+", action="extend", metavar="PROFILE.yaml",
                   help="profiles merged over PARAMS the way snakemake --configfile merges them")
    v.add_argument("--check-backends", action="store_true",
                   help="also send each model's backend one cheap request (one attempt, 10 s) and name each that does not answer")
    v.set_defaults(func=_validate_config)


def _add_run(sub: _Subcommands) -> None:
    """The ``run`` subcommand's arguments."""
    r = sub.add_parser(
        "run", help="run a study (Snakemake with the one-screen console, as make run); resume it after Ctrl-C the same way",
        description="Run the study of params.yaml (and the --configfile profiles merged over it) with Snakemake: "
        "`snakemake --cores N --scheduler greedy --logger canarykit [TARGETS] --configfile F ...`. Finished work is "
        "reused, so the same command resumes an interrupted study and retries its failed runs. Options it does not "
        "know are passed to Snakemake (e.g. --forcerun run_agents, --resources llm_openai=16).",
    )
    r.add_argument("targets", nargs="*", metavar="TARGET", help="files or rules to make (default: the whole study)")
    r.add_argument("--configfile", nargs="+", action="extend", default=[], metavar="F",
                   help="profiles merged over params.yaml, as snakemake --configfile")
    r.add_argument("--cores", default="2", help="cores Snakemake may use (default 2; `all` for every core)")
    r.add_argument("snakemake_args", nargs="*", metavar="SNAKEMAKE_OPTION",
                   help="any other option goes to Snakemake as given (e.g. --forcerun run_agents)")


def _add_list_mcp_tools(sub: _Subcommands) -> None:
    """The ``list-mcp-tools`` subcommand's arguments."""
    ls = sub.add_parser("list-mcp-tools", help="list the tools of any MCP server (stdio or streamable HTTP) as TOOLS.json")
    ls.add_argument("-o", "--output", default=None, metavar="TOOLS.json", help="write the tool list here (default: standard output)")
    ls.add_argument("--timeout", type=float, default=60.0, metavar="S", help="seconds to wait for the server (default 60)")
    ls.add_argument("--env", action="append", metavar="KEY", help="pass this variable of your environment to the server (repeatable; KEY=VALUE sets it)")
    ls.add_argument("--inherit-env", action="store_true", help="pass your whole environment to the server")
    ls.add_argument("--server", default=None, metavar="NAME", help="the server's name in the tool list (default: the name it gives itself)")
    ls.add_argument("--url", default=None, help="a streamable-HTTP MCP server's URL, instead of a command")
    ls.add_argument("--append", action="store_true", help="add to the tool list in -o (replacing an earlier export of the same server)")
    ls.add_argument("--strict", action="store_true",
                    help="a definition canarykit cannot use (no inputSchema, nested too deep, not JSON) is an error, not a skip with a warning")
    ls.add_argument("command", nargs=argparse.REMAINDER, help="-- server command and arguments (only the first -- separates)")
    ls.set_defaults(func=_list_mcp_tools)


def _add_proxy(sub: _Subcommands) -> None:
    """The ``proxy`` subcommand's arguments."""
    px = sub.add_parser(
        "proxy",
        help="an MCP server in front of your MCP servers that plants canaries and traces every client session",
        description="Serve the tools of one or more upstream MCP servers plus canaries generated from them (or their "
        "controls), over stdio or streamable HTTP on 127.0.0.1. Real calls go upstream; canary calls are answered by "
        "the canary runtime. One JSON-lines trace per client session goes to --trace-dir; read them with "
        "`canarykit diagnose`.",
    )
    px.add_argument("--trace-dir", required=True, metavar="DIR", help="where each client session's trace is written")
    px.add_argument("--http", type=int, default=None, metavar="PORT",
                    help="serve streamable HTTP on 127.0.0.1:PORT/mcp instead of stdio (0: any free port, printed)")
    px.add_argument("--upstream", action="append", metavar="[NAME=]URL", help="a streamable-HTTP upstream (repeatable)")
    px.add_argument("--stdio", action="append", metavar="NAME='CMD ARGS'", help="a stdio upstream, shell-quoted (repeatable)")
    px.add_argument("--server", default=None, metavar="NAME", help="name of the upstream after -- (default: the name it gives itself)")
    px.add_argument("--pool", choices=["standard", "subtle"], default="standard",
                    help="which give-away suffixes the canaries carry: standard, or the softened subtle tells (default standard)")
    px.add_argument("--fit", choices=["paper", "fitted"], default=None, help="default: canaries.fit of --params, else fitted")
    px.add_argument("--types", default=None, metavar="T1,T2", help="only these canary types (comma-separated)")
    px.add_argument("--controls", action="store_true",
                    help="offer each canary's twin in its place (the probed property at its healthy value)")
    px.add_argument("--shadow", default=None, metavar="TOOL1,TOOL2",
                    help="canaries only for these upstream tools (their names as offered); default: every tool")
    px.add_argument("--real-tools", default=None, metavar="TOOL1,TOOL2",
                    help="offer only these real tools (default: every tool of every upstream); each one left out is "
                    "named in every session's notice")
    px.add_argument("--strict", action="store_true",
                    help="an upstream tool definition canarykit cannot use stops the proxy (default: a warning)")
    px.add_argument("--seed", type=int, default=0, help="seed of the offered order (default 0)")
    px.add_argument("--params", default=None, help="take suffixes, control suffixes, special cases and fit from this params.yaml")
    px.add_argument("--env", action="append", metavar="KEY", help="pass this variable to stdio upstreams (repeatable; KEY=VALUE sets it)")
    px.add_argument("--inherit-env", action="store_true", help="pass your whole environment to stdio upstreams")
    px.add_argument("--timeout", type=float, default=60.0, metavar="S", help="seconds an upstream has to start and list its tools (default 60)")
    px.add_argument("--call-timeout", type=float, default=120.0, metavar="S",
                    help="seconds a forwarded call may take before it is answered as a server failure (default 120)")
    px.add_argument("command", nargs=argparse.REMAINDER, help="-- the upstream stdio server's command and arguments")
    px.set_defaults(func=_proxy)


def _add_diagnose(sub: _Subcommands) -> None:
    """The ``diagnose`` subcommand's arguments."""
    dg = sub.add_parser(
        "diagnose",
        help="the detector and metrics over proxy traces: per session and overall",
        description="Classify every call in the proxy traces of TRACE_DIR (real, canary, control, unknown) with the "
        "study's detector, compute csr, trapped, recovered and per-type trap rates per session and overall, write "
        "OUT/diagnosis.json and OUT/calls.csv and print a summary.",
    )
    dg.add_argument("traces", metavar="TRACE_DIR", help="a proxy's --trace-dir (or one trace file), or Inspect AI logs "
                    "(a .eval file or a directory of them: each sample is a session)")
    dg.add_argument("--tools", default=None, metavar="SOURCE",
                    help="for Inspect logs canarykit did not write: which tools are canaries, from the proxy's trace dir "
                    "or the canarykit pool file the tools came from")
    dg.add_argument("-o", "--output", required=True, metavar="OUT",
                    help="directory for diagnosis.json and calls.csv (created if missing)")
    dg.set_defaults(func=_diagnose)


def _add_export(sub: _Subcommands) -> None:
    """The ``export`` subcommand's arguments."""
    ex = sub.add_parser(
        "export", help="write a finished study in another tool's log format (inspect: Inspect AI .eval logs)",
        description="Write the runs of a finished study as Inspect AI logs, one .eval file per (model, condition), with "
        "inspect_ai's own log API: each sample one run (its messages, judges' scores, canary score and metadata), the "
        "header the study's parameters, results csr and tsr with canarykit's intervals (docs/inspect-and-bfcl.md).",
    )
    ex.add_argument("format", choices=["inspect"], help="the log format (inspect: Inspect AI .eval logs)")
    ex.add_argument("--study", default="results", metavar="DIR",
                    help="the study's output directory, study.output_dir (default results)")
    ex.add_argument("-o", "--output", required=True, metavar="DIR", help="directory for the logs (created if missing)")
    ex.add_argument("--store", default=None, metavar="DIR",
                    help="the run store (default DIR/runs/store when it exists, else results/runs/store)")
    ex.add_argument("--tasks", default=None, metavar="TASKS.json",
                    help="the study's task file (default: study.tasks of DIR/params.resolved.yaml)")
    ex.set_defaults(func=_export)


def _add_serve_tools(sub: _Subcommands) -> None:
    """The ``serve-tools`` subcommand's arguments."""
    sv = sub.add_parser("serve-tools", help="serve one of the five tool servers over MCP stdio")
    sv.add_argument("server", choices=["weather", "math", "file", "search", "database"], help="which of the five built-in servers")
    sv.set_defaults(func=_serve_tools)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="canarykit",
        description="Diagnose why LLM agents pick the wrong tool: canary tools, agent runs, traps, judges, statistics.",
        epilog="A user error (a bad file or field) prints one line naming the file and the field and exits with status 2.",
    )
    p.add_argument("--version", action="version", version=f"canarykit {_version()}")
    sub = p.add_subparsers(dest="command", required=True)
    _add_generate(sub)
    _add_audit_twins(sub)
    _add_stats(sub)
    _add_plan(sub)
    _add_human_sheet(sub)
    _add_validate_config(sub)
    _add_run(sub)
    _add_list_mcp_tools(sub)
    _add_proxy(sub)
    _add_diagnose(sub)
    _add_export(sub)
    _add_serve_tools(sub)
    return p


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("canarykit")
    except PackageNotFoundError:  # run from a source tree that was not installed
        from . import __version__

        return __version__


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if argv and argv[0] == "run" and not {"-h", "--help"} & set(argv[1:]):
        try:
            return _run(*_run_args(argv[1:]))
        except CanaryKitError as exc:
            print(f"canarykit: error: {exc}", file=sys.stderr)
            return 2
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except CanaryKitError as exc:
        print(f"canarykit: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
