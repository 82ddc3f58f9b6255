"""An MCP border users can trust (issue 28), on the official npm servers (slow: installs them once).

- ``@modelcontextprotocol/server-everything`` (17 tools for a client that declares sampling,
  elicitation and roots): through the proxy a client sees the same tools, progress and log
  notifications as directly, its sampling, elicitation and roots requests are answered, over
  the handshake protocol and 2026-07-28; look-alikes of tools that answer images, resources
  and links answer in the same blocks (canaries and twins); ``get-env`` behind
  ``--inherit-env`` leaves no key in a trace (items 4, 6, 7);
- ``@modelcontextprotocol/server-memory`` with ``MEMORY_FILE_PATH`` on the user's file, and
  ``@modelcontextprotocol/server-filesystem`` given the user's real directory: refused at
  validation naming the field, and, run isolated anyway, the user's file keeps its hash (the
  sandbox: item 1); two jobs write only into their own directories.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from fakes.jobs import at_once
from fakes.npm_servers import npm_server
from fakes.sandbox import ensure_bwrap
from mcp import Client, StdioServerParameters

from canarykit.mcp.diagnose import diagnose, read_traces

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
CLI = shutil.which("canarykit", path=str(BIN)) or "canarykit"
ENV = {"PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
LIMIT_S = 180
SECRET = "sk-test-" + "Ev9" * 12
#: server-everything's tools that answer more than text (images, resources, resource links)
BLOCK_TOOLS = {"get-tiny-image": {}, "get-resource-links": {"count": 2}, "get-resource-reference": {"resourceId": 1},
               "get-annotated-message": {"messageType": "success", "includeImage": True}}


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def _sampling(ctx: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="4"), model="fake")


async def _elicitation(ctx: Any, params: Any) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"name": "Ada"})


async def _roots(ctx: Any) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[types.Root(uri="file:///work/project", name="project")])


def _texts(result: types.CallToolResult) -> list[str]:
    return [b.text for b in result.content if isinstance(b, types.TextContent)]


async def _session(params: StdioServerParameters, mode: str, traces: Path | None) -> dict[str, Any]:
    """What one client session sees: tools, progress, logs, the answers to server requests,
    and (through a proxy) the block types of every look-alike of a tool that answers blocks."""
    logs: list[Any] = []
    progress: list[float] = []
    out: dict[str, Any] = {}

    async def log(p: types.LoggingMessageNotificationParams) -> None:
        if p.logger != "canarykit-proxy":
            logs.append(p.data)

    async def prog(p: float, total: float | None, message: str | None) -> None:
        progress.append(p)

    with anyio.fail_after(LIMIT_S):
        async with Client(params, mode=mode, sampling_callback=_sampling, elicitation_callback=_elicitation,
                          list_roots_callback=_roots, logging_callback=log, log_level="debug") as c:
            listed = (await c.list_tools()).tools
            offered = ({o["name"]: o for o in json.loads(next(traces.glob("*.jsonl")).read_text().splitlines()[0])
                        ["offered"]} if traces is not None else {t.name: {"kind": "real"} for t in listed})
            out["tools"] = sorted(n for n, o in offered.items() if o["kind"] == "real")
            r = await c.call_tool("trigger-long-running-operation", {"duration": 1, "steps": 3}, progress_callback=prog)
            out["long"] = _texts(r)
            out["sampling"] = _texts(await c.call_tool("trigger-sampling-request", {"prompt": "2+2?", "maxTokens": 5}))
            out["elicitation"] = _texts(await c.call_tool("trigger-elicitation-request", {}))
            out["roots"] = _texts(await c.call_tool("get-roots-list", {}))
            out["toggle"] = _texts(await c.call_tool("toggle-simulated-logging", {}))
            out["blocks"] = {}
            for name, args in BLOCK_TOOLS.items():
                real = await c.call_tool(name, args)
                out["blocks"][name] = [b.type for b in real.content]
                for look, o in offered.items():
                    # a granularity canary answers its own hard-coded case (other blocks, by design)
                    if o.get("shadows") == name and o.get("canary_type") != "granularity_trap" and o["kind"] != "real":
                        answer = await c.call_tool(look, args)
                        if not answer.is_error:
                            out["blocks"][look] = [b.type for b in answer.content]
            out["env"] = _texts(await c.call_tool("get-env", {}))
            deadline = time.monotonic() + 30
            while len(logs) < 2 and time.monotonic() < deadline and mode == "legacy":
                await anyio.sleep(0.2)  # the simulated logging sends one at once, one every 5 s
            out["progress"], out["logs"] = list(progress), list(logs)
    return out


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_server_everything_shows_through_the_proxy_what_it_shows_directly(tmp_path: Path, mode: str) -> None:
    exe = str(npm_server("everything"))
    t0 = time.monotonic()
    direct = anyio.run(_session, StdioServerParameters(command=exe, args=["stdio"]), mode, None)
    results = {}
    for arm in ("canaries", "controls"):
        traces = tmp_path / arm
        args = ["proxy", "--trace-dir", str(traces), "--inherit-env", *(["--controls"] if arm == "controls" else []),
                "--", exe, "stdio"]
        results[arm] = anyio.run(_session, StdioServerParameters(command=CLI, args=args,
                                                                 env={**ENV, "OPENAI_API_KEY": SECRET}), mode, traces)
    proxied = results["canaries"]
    assert len(direct["tools"]) == 17 and proxied["tools"] == direct["tools"], "every tool a capable client sees"
    assert {"trigger-sampling-request", "trigger-elicitation-request", "trigger-url-elicitation",
            "get-roots-list"} <= set(proxied["tools"])
    assert direct["progress"] == proxied["progress"] == [1.0, 2.0, 3.0], "progress notifications, relayed"
    for key in ("long", "sampling", "elicitation", "roots"):
        assert proxied[key] == direct[key], key
    assert "Ada" in " ".join(proxied["elicitation"]) and "project" in " ".join(proxied["roots"])
    if mode == "legacy":  # 2026-07-28 delivers log messages only inside a request that asked for them
        assert len(direct["logs"]) >= 2 and len(proxied["logs"]) >= 2, (direct["logs"], proxied["logs"])
    # look-alikes answer in the real tool's blocks (every canary and every twin that answers)
    looked = 0
    for arm, seen in results.items():
        for name, kinds in seen["blocks"].items():
            real = next(t for t in BLOCK_TOOLS if name == t or name.startswith(t) or t in name)
            if name != real:
                looked += 1
                want = seen["blocks"][real]
                assert [k for k in kinds if k != "text"] == [k for k in want if k != "text"], (arm, name, kinds, want)
                assert ("text" in kinds) == ("text" in want), (arm, name, kinds, want)
    assert looked >= 8
    # the key the server prints is in the answer, and in no file the proxy wrote
    assert any(SECRET in t for t in proxied["env"])
    written = [p.read_text(errors="replace") for arm in results for p in (tmp_path / arm).rglob("*") if p.is_file()]
    assert sum(t.count(SECRET) for t in written) == 0 and any("OPENAI_API_KEY" in t and "***" in t for t in written)
    doc, calls = diagnose(read_traces(tmp_path / "canaries"))
    assert doc["overall"]["server_failures"] == 0 and doc["overall"]["outcomes"]["answered"] == calls.height
    print(f"\nserver-everything ({mode}): {len(proxied['tools'])} tools through the proxy as directly; progress "
          f"{len(proxied['progress'])}/{len(direct['progress'])}; logs {len(proxied['logs'])}/{len(direct['logs'])}; "
          f"{looked} look-alike answers in the real blocks; {calls.height} calls, all answered; key in 0 of "
          f"{len(written)} files; {time.monotonic() - t0:.1f} s (load {os.getloadavg()[0]:.1f})")


def _environment(server: dict[str, Any], **more: Any) -> dict[str, Any]:
    from canarykit.study.config import validate_params

    return validate_params({"environment": {"kind": "mcp", "stateful": True, "allow_writes": True,
                                            "servers": [{"isolate": "job", **server}], **more}},
                           "params.yaml")["environment"]


def _validate(tmp_path: Path, server: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    import yaml

    repo = Path(__file__).resolve().parents[1]
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["environment"] = {"kind": "mcp", "stateful": True, "allow_writes": True,
                             "servers": [{"isolate": "job", **server}]}
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    return subprocess.run([CLI, "validate-config", str(path)], capture_output=True, text=True, timeout=LIMIT_S,
                          cwd=repo)


def _jobs(cfg: dict[str, Any], tmp_path: Path, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, list[Any]]:
    """Two agent jobs at once, each making ``calls`` through its own environment."""
    from canarykit.mcp.environments import export_environment, make_environment

    doc = export_environment(cfg, warn=lambda m: None)
    envs = {m: make_environment(cfg, doc, job=tmp_path / f"runs/jobs/{m}/all.json") for m in ("model-a", "model-b")}
    seen: dict[str, list[Any]] = {}

    def work(m: str) -> None:
        seen[m] = [envs[m].execute(name, args) for name, args in calls]

    at_once(envs, work)
    return seen


def test_the_memory_server_cannot_write_the_users_file(tmp_path: Path) -> None:
    ensure_bwrap()
    exe = str(npm_server("memory"))
    user = tmp_path / "home/me/memory.jsonl"
    user.parent.mkdir(parents=True)
    user.write_text(json.dumps({"type": "entity", "name": "Ada", "entityType": "person", "observations": []}) + "\n")
    before = _sha(user)
    refused = _validate(tmp_path, {"name": "memory", "command": [exe], "env": {"MEMORY_FILE_PATH": str(user)}})
    assert refused.returncode == 2 and refused.stderr.strip().splitlines() == [refused.stderr.strip()]
    assert "environment.servers[0].env.MEMORY_FILE_PATH: " in refused.stderr and "is outside the server's {workdir}" \
        in refused.stderr and "Traceback" not in refused.stderr
    # run anyway (the path declared read-only): the sandbox stops every write to it
    create = ("create_entities", {"entities": [{"name": "Grace", "entityType": "person", "observations": ["x"]}]})
    delete = ("delete_entities", {"entityNames": ["Ada"]})
    seen = _jobs(_environment({"name": "memory", "command": [exe], "env": {"MEMORY_FILE_PATH": str(user)},
                               "read_only_paths": [str(user)]}), tmp_path / "a", [create, delete])
    assert all(r.is_error and "read-only file system" in r.content.lower() for rs in seen.values() for r in rs), seen
    assert _sha(user) == before, "the user's file keeps its hash"
    # as configured for isolation, each job writes its own copy only
    seen = _jobs(_environment({"name": "memory", "command": [exe], "env": {"MEMORY_FILE_PATH": "{workdir}/memory.jsonl"}}),
                 tmp_path / "b", [create, ("read_graph", {})])
    for m, (made, graph) in seen.items():
        assert not made.is_error and "Grace" in graph.content
        written = tmp_path / f"b/runs/jobs/{m}/workdirs/all/memory/memory.jsonl"
        assert "Grace" in written.read_text()
    package = Path(exe).resolve().parents[1]
    assert not list(package.rglob("memory.json*")), "nothing written beside the server's code"
    assert _sha(user) == before
    print(f"\nserver-memory: user file {before[:8]}... unchanged after 4 refused writes (2 jobs at once); "
          f"each job wrote its own copy (load {os.getloadavg()[0]:.1f})")


def test_the_filesystem_server_cannot_write_the_users_directory(tmp_path: Path) -> None:
    ensure_bwrap()
    exe = str(npm_server("filesystem"))
    real = tmp_path / "home/me/notes"
    real.mkdir(parents=True)
    (real / "notes.txt").write_text("my notes\n")
    before = _sha(real / "notes.txt")
    refused = _validate(tmp_path, {"name": "files", "command": [exe, str(real)]})
    assert refused.returncode == 2 and "environment.servers[0].command[1]: " in refused.stderr
    write = ("write_file", {"path": str(real / "notes.txt"), "content": "written by agent"})
    seen = _jobs(_environment({"name": "files", "command": [exe, str(real)], "read_only_paths": [str(real)]}),
                 tmp_path / "a", [write, ("read_text_file", {"path": str(real / "notes.txt")})])
    for written, read in seen.values():
        assert written.is_error and "read-only file system" in written.content.lower()
        assert "my notes" in read.content
    assert _sha(real / "notes.txt") == before, "notes.txt keeps its hash"
    seen = _jobs(_environment({"name": "files", "command": [exe, "{workdir}"]}), tmp_path / "b",
                 [("list_allowed_directories", {})])
    for m, (allowed,) in seen.items():
        assert f"runs/jobs/{m}/workdirs/all/files" in allowed.content
    print(f"\nserver-filesystem: notes.txt {before[:8]}... unchanged after 2 refused writes (load {os.getloadavg()[0]:.1f})")
