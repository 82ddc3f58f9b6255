"""The tool environment of a study: canarykit's built-in tools, or the user's MCP servers.

``environment.kind: builtin`` (the default) is the 12 built-in tools, run in-process.

``environment.kind: mcp`` is a list of MCP servers (``environment.servers``: stdio commands
with their environment, or streamable-HTTP URLs):

- **listed at the start** (:func:`export_environment`, the ``export_tools`` rule): the
  servers are started, their tools listed and joined (names repeated across servers exposed
  as ``<server>___<name>``; names a model API would refuse skipped with a warning), and
  ``results/tools.json`` written as a tools document::

      {"format": "canarykit-tools", "environment": "mcp",
       "servers": [{"name", "transport", "server_info": {"name", "version", ...}, "tools"}],
       "tools": [<tool-list entries: name, title, description, inputSchema, outputSchema,
                  annotations, server, mcp_name (when renamed)>]}

  The canary generator and the assembler read its ``tools`` as any tool list.
- **called during the runs** (:class:`McpExecutor`): real calls go to the servers over MCP
  (from a worker thread, so the runner's event loop keeps serving other runs), canary calls
  to the canary runtime, whose real-tool calls go to the servers too. The results are
  recorded in the run record (its ``tool_result`` events), as for the built-in tools. A
  server that fails (exits, gives no answer within ``call_timeout_s``) fails the run (status
  ``error``, retried by the next invocation), never recorded as the tool's answer.
- **isolation and writes** (:func:`check_environment`, :func:`check_writes`): a stdio server
  with ``isolate: job`` or ``model`` gets a directory of its own for its state, filled into
  every ``{workdir}`` of its command, env and cwd (:mod:`canarykit.mcp.workdirs`), and runs in
  a sandbox whose only writable path is that directory (:mod:`canarykit.mcp.sandbox`: a write
  anywhere else fails in the server; where the sandbox cannot run, such a server is refused);
  a stateful environment refuses a server that is not isolated unless it says
  ``allow_shared_state``; a tool that may write (not ``readOnlyHint``, or
  ``destructiveHint``) is called by a study only with ``allow_writes: true`` on an isolated
  server, else the export stops naming it; and with ``allow_writes: true`` an isolated
  server's args, env values and cwd may name no path outside its ``{workdir}``
  (:func:`outside_workdir`; its program, its code files and ``read_only_paths`` excepted),
  so the config says where its state is and validation can check it.
- **identity** (:func:`environment_identity`): every run's identity holds the content hash of
  the tools document (every definition, and each server's name and version from its MCP
  handshake), the canary runtime's code version and ``environment.revision``. The servers
  themselves are not code canarykit can hash: a server whose behaviour changes behind an
  unchanged tool list and version (new data, a fixed bug, the clock) does not re-run stored
  runs. At the start of the run stage the servers are listed again and compared with
  ``results/tools.json``: a changed tool list or server version is an error that says to
  re-export (``snakemake --forcerun export_tools``); bump ``environment.revision`` to
  re-execute everything against an environment that changed in a way nothing shows.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from ..errors import CanaryKitError, ConfigError, InputError, ToolEnvironmentError
from ..store.jsonio import content_hash, source_hash
from ..types import Environment, ToolResult
from .sandbox import require_sandbox
from .workdirs import WORKDIR, Workdirs, seed_hash

if TYPE_CHECKING:
    from .upstream import ServerSpec, Upstreams

__all__ = [
    "TOOLS_FORMAT", "McpExecutor", "check_writes", "environment_identity", "export_environment", "is_mcp",
    "make_environment", "outside_workdir", "server_specs", "tools_of", "write_tools",
]

TOOLS_FORMAT: Final = "canarykit-tools"
#: Tool names every model API accepts for function calling (OpenAI, Anthropic, Gemini, ...).
FUNCTION_NAME_RE: Final = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def is_mcp(env_cfg: Mapping[str, Any] | None) -> bool:
    return bool(env_cfg) and env_cfg.get("kind") == "mcp"  # type: ignore[union-attr]


def check_environment(env_cfg: Mapping[str, Any], source: str = "params.yaml") -> None:
    """What the schema cannot say about ``environment`` (each problem names its key)."""
    servers = env_cfg.get("servers") or []
    if env_cfg.get("kind") != "mcp":
        if servers:
            raise ConfigError(source, "environment.servers", "servers are used only with environment.kind: mcp "
                                                            "(set it, or remove the servers)")
        return
    if not servers:
        raise ConfigError(source, "environment.servers", "environment.kind mcp needs at least one server "
                                                        "({name, command: [...]} or {name, url: ...})")
    seen: dict[str, int] = {}
    for i, s in enumerate(servers):
        key = f"environment.servers[{i}]"
        if ("command" in s) == ("url" in s):
            raise ConfigError(source, key, "give command (a stdio server) or url (a streamable-HTTP server), one of them")
        if "url" in s:
            for k in ("env", "pass_env", "cwd", "seed_dir"):
                if s.get(k):
                    raise ConfigError(source, f"{key}.{k}", "only a stdio server (command) takes it; this one has a url")
        if s["name"] in seen:
            raise ConfigError(source, f"{key}.name", f"duplicate server name {s['name']!r} (also environment.servers[{seen[s['name']]}])")
        seen[s["name"]] = i
    for i, s in enumerate(servers):
        _check_isolation(env_cfg, s, f"environment.servers[{i}]", source)


def _uses_workdir(server: Mapping[str, Any]) -> str | None:
    """The first key of ``server`` that names ``{workdir}`` (None: none does)."""
    for j, part in enumerate(server.get("command") or []):
        if WORKDIR in str(part):
            return f"command[{j}]"
    for k, v in (server.get("env") or {}).items():
        if WORKDIR in str(v):
            return f"env.{k}"
    if WORKDIR in str(server.get("cwd") or ""):
        return "cwd"
    return None


def _check_isolation(env_cfg: Mapping[str, Any], s: Mapping[str, Any], key: str, source: str) -> None:
    isolate = s.get("isolate", "none")
    stateful = bool(env_cfg.get("stateful", True))
    if "url" in s and isolate != "none":
        raise ConfigError(source, f"{key}.isolate", "canarykit starts only a stdio server (command) and so can isolate "
                                                    "only such a server; a url server's state is its own")
    if isolate == "none":
        used = _uses_workdir(s)
        if used is not None:
            raise ConfigError(source, f"{key}.{used}", f"{WORKDIR} is filled only for an isolated server: set "
                                                       f"{key}.isolate: job (a fresh directory per agent job) or model")
        if s.get("seed_dir"):
            raise ConfigError(source, f"{key}.seed_dir", f"seed_dir seeds the {WORKDIR} of an isolated server: set "
                                                         f"{key}.isolate: job or model")
        if stateful and not s.get("allow_shared_state"):
            raise ConfigError(
                source, f"{key}.isolate",
                f"server {s['name']!r} may keep state (environment.stateful: true) and is not isolated, so the agent jobs "
                f"of different models, which run at the same time, would share and change one state: set isolate: job "
                f"(each job gets a fresh {WORKDIR} for the server's state, e.g. env MEMORY_FILE_PATH: "
                f"\"{WORKDIR}/memory.jsonl\") or model, or environment.stateful: false for a server that keeps no state, "
                f"or allow_shared_state: true to share it knowingly")
        return
    if isolate == "model" and not stateful:
        raise ConfigError(source, f"{key}.isolate", "isolate: model shares one directory among a model's agent jobs, "
                                                    "which with environment.stateful: false run at the same time: use "
                                                    "isolate: job (or environment.stateful: true)")
    seed = s.get("seed_dir")
    if seed and not Path(os.path.expanduser(str(seed))).is_dir():
        raise ConfigError(source, f"{key}.seed_dir", f"{seed!r} is not a directory")
    if env_cfg.get("allow_writes"):
        outside = outside_workdir(s)
        if outside is not None:
            field_, value = outside
            raise ConfigError(source, f"{key}.{field_}",
                              f"{value!r} is outside the server's {WORKDIR}: with environment.allow_writes: true an "
                              f"isolated server may keep state only under {WORKDIR} (its sandbox makes everything else "
                              f"read-only, so a write there would fail): put it under {WORKDIR} (seed_dir copies "
                              f"files there), or list it in {key}.read_only_paths if the server only reads it")


#: Files that are a server's code, not its state (named by its command, they are read, never written).
_CODE_SUFFIXES: Final = (".js", ".mjs", ".cjs", ".ts", ".py", ".pyz", ".jar", ".rb", ".pl", ".sh", ".php")


def _path_like(value: str) -> str | None:
    """The path ``value`` names (the part after ``=`` of ``--opt=PATH``), or None."""
    text = value.split("=", 1)[1] if value.startswith("-") and "=" in value else value
    if text.startswith(("/", "~", "./", "../")) or (os.sep in text and "://" not in text and Path(text).exists()):
        return text
    return None


def outside_workdir(server: Mapping[str, Any]) -> tuple[str, str] | None:
    """(field, value) of the first path an isolated server's args, env or cwd name outside its
    ``{workdir}``: not under ``{workdir}``, not one of ``read_only_paths`` (or under one), not
    the program (``command[0]``) and not a file of code (a script it runs). None: none does."""
    allowed = [Path(os.path.expanduser(str(p))).resolve() for p in server.get("read_only_paths") or []]
    candidates = [(f"command[{j}]", str(c)) for j, c in enumerate(server.get("command") or []) if j > 0]
    candidates += [(f"env.{k}", str(v)) for k, v in (server.get("env") or {}).items()]
    if server.get("cwd"):
        candidates.append(("cwd", str(server["cwd"])))
    for field_, value in candidates:
        if WORKDIR in value:
            inner = os.path.normpath(value.split(WORKDIR, 1)[1].lstrip("/") or ".")
            if inner.startswith(".."):
                return field_, value
            continue
        path = _path_like(value)
        if path is None:
            continue
        where = Path(os.path.expanduser(path)).resolve()
        if any(where == a or where.is_relative_to(a) for a in allowed):
            continue
        if field_ != "cwd" and where.is_file() and (where.suffix in _CODE_SUFFIXES or os.access(where, os.X_OK)):
            continue
        return field_, value
    return None


def write_tools(tools: Sequence[Mapping[str, Any]]) -> list[str]:
    """Names of the tools that may change their server's state: not marked ``readOnlyHint``
    (the MCP default is false), or marked ``destructiveHint``."""
    out = []
    for t in tools:
        ann: Mapping[str, Any] = t.get("annotations") or {}
        if not isinstance(ann, Mapping):
            ann = {}
        if ann.get("readOnlyHint") is not True or ann.get("destructiveHint") is True:
            out.append(str(t["name"]))
    return out


def check_writes(env_cfg: Mapping[str, Any], tools: Sequence[Mapping[str, Any]], source: str = "params.yaml") -> None:
    """Refuse a study whose servers offer tools that may write (:func:`write_tools`) unless
    ``environment.allow_writes: true`` and each such server is isolated; the error names
    the tools."""
    for i, s in enumerate(env_cfg.get("servers") or []):
        writes = write_tools([t for t in tools if t.get("server") == s["name"]])
        if not writes:
            continue
        shown = ", ".join(writes[:12]) + (f" and {len(writes) - 12} more" if len(writes) > 12 else "")
        what = (f"server {s['name']!r} offers {len(writes)} tool{'s' if len(writes) != 1 else ''} that may change its "
                f"state (not marked readOnlyHint, or marked destructiveHint): {shown}")
        if not env_cfg.get("allow_writes"):
            raise ConfigError(source, "environment.allow_writes",
                              f"{what}; agents would call them on the real server. A study calls such tools only with "
                              f"environment.allow_writes: true and the server isolated (environment.servers[{i}].isolate: "
                              f"job or model, its state under {WORKDIR}), so that every write lands in a scratch copy")
        if s.get("isolate", "none") == "none":
            raise ConfigError(source, f"environment.servers[{i}].isolate",
                              f"{what}; environment.allow_writes: true lets a study call them only on an isolated server: "
                              f"set isolate: job or model and put its state under {WORKDIR}")


def server_specs(env_cfg: Mapping[str, Any], source: str = "params.yaml",
                 workdirs: Mapping[str, Path] | None = None) -> list[ServerSpec]:
    """The servers of ``environment`` as :class:`~canarykit.mcp.upstream.ServerSpec` (``pass_env``
    resolved from this process's environment: a variable that is not set names its key;
    ``{workdir}`` filled from ``workdirs``, server name -> its directory, for every isolated
    server)."""
    from .upstream import ServerSpec

    check_environment(env_cfg, source)
    specs = []
    for i, s in enumerate(env_cfg.get("servers") or []):
        key = f"environment.servers[{i}]"
        if s.get("isolate", "none") != "none" and (workdirs is None or s["name"] not in workdirs):
            raise ConfigError(source, f"{key}.isolate", "an isolated server needs its directory (internal error: no "
                                                        "workdir given)")
        where = str(workdirs[s["name"]]) if workdirs is not None and s["name"] in workdirs else None

        def fill(text: str, where: str | None = where) -> str:
            return text.replace(WORKDIR, where) if where is not None else text

        if where is not None:
            require_sandbox(source, f"{key}.isolate")
        env = {str(k): fill(str(v)) for k, v in (s.get("env") or {}).items()}
        for j, var in enumerate(s.get("pass_env") or []):
            if var not in os.environ:
                raise ConfigError(source, f"{key}.pass_env[{j}]", f"environment variable {var} is not set in this shell "
                                                                  f"(server {s['name']!r} needs it)")
            env[var] = os.environ[var]
        # ~ in the program's path (as in a shell); everything else is passed as written
        command = (os.path.expanduser(fill(str(s["command"][0]))), *(fill(str(c)) for c in s["command"][1:])) \
            if "command" in s else None
        cwd = os.path.expanduser(fill(s["cwd"])) if s.get("cwd") else None
        specs.append(ServerSpec(str(s["name"]), command=command, url=s.get("url"), env=env, cwd=cwd,
                                where=f"{source}: {key} ({s['name']})", workdir=where,
                                secret_names=tuple(str(v) for v in s.get("pass_env") or [])))
    return specs


def _document(up: Upstreams, warn: Any) -> dict[str, Any]:
    tools = []
    for t in up.tools:
        if not FUNCTION_NAME_RE.match(str(t["name"])):
            warn(f"environment: tool {t['name']!r} of server {t.get('server')!r} skipped: model APIs accept only "
                 "tool names of 1-64 characters of A-Z a-z 0-9 _ - (a task that needs it cannot be run)")
            continue
        tools.append(t)
    return {
        "format": TOOLS_FORMAT,
        "environment": "mcp",
        "servers": [{"name": s.name, "transport": s.spec.transport, "server_info": dict(s.info), "tools": len(s.tools)}
                    for s in up.servers],
        "tools": tools,
    }


def export_environment(env_cfg: Mapping[str, Any], *, source: str = "params.yaml", errlog_dir: str | Path | None = None,
                       warn: Any = None) -> dict[str, Any]:
    """Start the servers of an ``mcp`` environment, list their tools, and return the tools
    document (see the module docstring); every skipped tool is reported through ``warn``."""
    import anyio

    from .upstream import Upstreams

    say = warn if warn is not None else (lambda m: print(m, file=sys.stderr))
    with Workdirs.scratch(env_cfg) as dirs:  # the listing's own throw-away state
        specs = server_specs(env_cfg, source, dirs)

        async def listed() -> dict[str, Any]:
            async with Upstreams(specs, timeout_s=float(env_cfg["timeout_s"]),
                                 call_timeout_s=float(env_cfg["call_timeout_s"]), errlog_dir=errlog_dir,
                                 source="environment.servers") as up:
                for skip in up.skipped:
                    say(f"environment: warning: {skip.line()}")
                return _document(up, say)

        document = anyio.run(listed)
    check_writes(env_cfg, document["tools"], source)
    return document


def tools_of(document: Any, source: str = "results/tools.json") -> list[dict[str, Any]]:
    """The tool list of a tools file: a plain list (the built-in environment) or the ``tools``
    of a tools document."""
    from ..canaries import unwrap_tool_list

    return [dict(t) for t in unwrap_tool_list(document, source)]


def _runtime_version() -> str:
    """Hash of the code that answers tool calls in an MCP environment: the canary runtime and
    the MCP client that forwards real calls (the servers themselves are not ours to hash)."""
    pkg = Path(__file__).resolve().parents[1]
    return source_hash(pkg / "canaries", pkg / "mcp" / "upstream.py", pkg / "mcp" / "environments.py",
                       pkg / "mcp" / "results.py")


def environment_identity(document: Mapping[str, Any], revision: str = "",
                         env_cfg: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``environment`` part of a run's identity in an MCP environment (module docstring);
    with isolated servers (``env_cfg``), each one's isolation and the content of its seed."""
    identity: dict[str, Any] = {"kind": "mcp", "runtime": _runtime_version(), "tools": content_hash(dict(document)),
                                "revision": revision}
    isolated = {str(s["name"]): {"isolate": s["isolate"], "seed": seed_hash(s.get("seed_dir"))}
                for s in (env_cfg or {}).get("servers") or [] if s.get("isolate", "none") != "none"}
    if isolated:
        identity["isolation"] = isolated
    return identity


def _comparable(document: Mapping[str, Any]) -> dict[str, Any]:
    return {"servers": [{"name": s.get("name"), "server_info": s.get("server_info")} for s in document.get("servers", [])],
            "tools": document.get("tools")}


def _changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    before = {s.get("name"): s.get("server_info", {}) for s in old.get("servers", [])}
    parts = []
    for s in new.get("servers", []):
        was = before.get(s.get("name"))
        if was is not None and was != s.get("server_info"):
            parts.append(f"server {s.get('name')!r}: {was.get('version')!r} -> {s.get('server_info', {}).get('version')!r}")
    old_tools = {t["name"]: t for t in old.get("tools", [])}
    new_tools = {t["name"]: t for t in new.get("tools", [])}
    added, gone = sorted(set(new_tools) - set(old_tools)), sorted(set(old_tools) - set(new_tools))
    changed = sorted(n for n in set(old_tools) & set(new_tools) if old_tools[n] != new_tools[n])
    for label, names in (("new tools", added), ("tools gone", gone), ("changed definitions", changed)):
        if names:
            parts.append(f"{label}: {', '.join(names[:5])}{' ...' if len(names) > 5 else ''}")
    return "; ".join(parts) or "the tool list differs"


class McpExecutor:
    """``execute(name, args) -> ToolResult`` over live MCP connections, callable from any thread.

    The connections run in a blocking portal (an event loop in a thread of its own), started
    on the first call in each process (a forked shard starts its own servers). A server's
    refusal (a JSON-RPC error) is answered as a tool error; a server failure raises
    :class:`~canarykit.errors.ToolEnvironmentError` (the runner records a failed run).
    """

    def __init__(self, env_cfg: Mapping[str, Any], document: Mapping[str, Any], *, source: str = "params.yaml",
                 tools_source: str = "results/tools.json", errlog_dir: str | Path | None = None,
                 job: str | Path | None = None) -> None:
        self.env_cfg = dict(env_cfg)
        self.document = dict(document)
        self.source, self.tools_source = source, tools_source
        self.errlog_dir = errlog_dir
        self.job = job
        self._workdirs: Workdirs | None = None
        self.names = {str(t["name"]) for t in self.document.get("tools", [])}
        self._pid: int | None = None
        self._lock = threading.Lock()
        self._portal: Any = None
        self._portal_cm: Any = None
        self._future: Any = None
        self._up: Upstreams | None = None
        self._closing: Any = None

    def _ensure(self) -> Any:
        with self._lock:
            if self._pid == os.getpid() and self._portal is not None:
                return self._portal
            from anyio.from_thread import start_blocking_portal

            if self._workdirs is None:
                self._workdirs = Workdirs.for_job(self.env_cfg, self.job)
            specs = server_specs(self.env_cfg, self.source, self._workdirs.dirs)
            self._portal_cm = start_blocking_portal()
            portal = self._portal_cm.__enter__()
            try:
                self._future, self._up = portal.start_task(self._hold, specs)
            except BaseException:
                self._portal_cm.__exit__(*sys.exc_info())
                self._portal_cm = None
                raise
            self._portal, self._pid = portal, os.getpid()
            return portal

    async def _hold(self, specs: Sequence[ServerSpec], *, task_status: Any) -> None:
        import anyio

        from .upstream import Upstreams

        async with Upstreams(specs, timeout_s=float(self.env_cfg["timeout_s"]),
                             call_timeout_s=float(self.env_cfg["call_timeout_s"]), errlog_dir=self.errlog_dir,
                             source="environment.servers") as up:
            now = _document(up, lambda m: None)
            if _comparable(now) != _comparable(self.document):
                raise InputError(self.tools_source, "tools", "the MCP servers now differ from this export ("
                                 f"{_changes(self.document, now)}); list them again: snakemake --forcerun "
                                 "export_tools (or dvc repro -f export_tools)")
            self._closing = anyio.Event()
            task_status.started(up)
            await self._closing.wait()

    async def _call(self, name: str, args: Any) -> ToolResult:
        import json

        from mcp.shared.exceptions import MCPError

        from .upstream import tool_result

        assert self._up is not None
        try:
            return tool_result(await self._up.call(name, args if isinstance(args, dict) else {}))
        except MCPError as exc:
            return ToolResult(content=json.dumps({"error": exc.message}, ensure_ascii=False), is_error=True)

    def check(self) -> None:
        """Start the servers now (and compare their tools with the export): fail early."""
        self._ensure()

    def __call__(self, name: str, args: Any) -> ToolResult:
        if name not in self.names:
            import json

            return ToolResult(content=json.dumps({"error": f"unknown tool {name!r}"}), is_error=True)
        try:
            portal = self._ensure()
        except CanaryKitError as exc:  # a server that no longer starts (e.g. in a forked shard): the run fails
            raise ToolEnvironmentError(str(exc)) from None
        try:
            result: ToolResult = portal.call(self._call, name, args)  # a ToolEnvironmentError propagates
        except KeyboardInterrupt:  # stop the servers now, not whenever the interpreter's exit gets to them
            self.close()
            raise
        return result

    def close(self) -> None:
        with self._lock:
            if self._portal is None or self._pid != os.getpid():
                return
            portal, self._portal = self._portal, None
            try:
                if self._closing is not None:
                    portal.call(self._closing.set)
                if self._future is not None:
                    self._future.result(timeout=60)
            finally:
                self._portal_cm.__exit__(None, None, None)
                self._portal_cm = None
                if self._workdirs is not None:  # the servers are stopped: release their directories
                    self._workdirs.close()
                    self._workdirs = None


def make_environment(env_cfg: Mapping[str, Any], document: Mapping[str, Any], *, source: str = "params.yaml",
                     tools_source: str = "results/tools.json", errlog_dir: str | Path | None = None,
                     job: str | Path | None = None) -> Any:
    """The agent loop's :class:`~canarykit.types.Environment` for an MCP environment.
    ``job``: the agent job's summary file, which places its isolated servers' directories
    (:mod:`canarykit.mcp.workdirs`). A server offering tools that may write is refused here too
    unless the study allows writes on isolated servers (:func:`check_writes`)."""
    from .. import canaries
    from ..tasks import tasks

    check_environment(env_cfg, source)
    check_writes(env_cfg, document.get("tools") or [], source)
    executor = McpExecutor(env_cfg, document, source=source, tools_source=tools_source, errlog_dir=errlog_dir, job=job)
    return Environment(execute=executor, run_canary=canaries.run_canary, compose_answer=tasks.compose_answer,
                       identity=environment_identity(document, str(env_cfg.get("revision") or ""), env_cfg),
                       blocking=True, close=executor.close, check=executor.check)
