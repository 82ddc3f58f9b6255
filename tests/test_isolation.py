"""Isolated state and opt-in writes for a study in the user's own MCP servers (issue 22, items
1 and 2): ``{workdir}`` per job or per model, seeded and locked; a stateful server that is not
isolated is refused unless sharing is written down; tools that may write are called only with
``environment.allow_writes: true`` on an isolated server, and the refusal names them."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from fakes.jobs import at_once
from fakes.sandbox import ensure_bwrap

from canarykit.errors import ConfigError, ToolEnvironmentError
from canarykit.mcp.environments import (
    check_writes,
    export_environment,
    make_environment,
    server_specs,
    write_tools,
)
from canarykit.mcp.workdirs import Workdirs
from canarykit.study.config import validate_params

FIXTURES = Path(__file__).parent / "fixtures"
NOTES = [sys.executable, str(FIXTURES / "notes_server.py")]
#: The official memory server's nine tools as it lists them (six write, three read).
MEMORY_TOOLS = [t for t in json.loads((FIXTURES / "mcp_servers/official.json").read_text()) if t["server"] == "memory"]


def env_cfg(servers: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    return validate_params({"environment": {"kind": "mcp", "servers": servers, **more}}, "params.yaml")["environment"]


def notes(**more: Any) -> dict[str, Any]:
    return {"name": "notes", "command": NOTES, "env": {"NOTES_FILE": "{workdir}/notes.jsonl"}, **more}


@pytest.mark.parametrize(("servers", "more", "key", "text"), [
    ([{"name": "memory", "command": ["mcp-server-memory"]}], {}, "environment.servers[0].isolate",
     "may keep state (environment.stateful: true) and is not isolated"),
    ([notes()], {"stateful": False}, "environment.servers[0].env.NOTES_FILE", "{workdir} is filled only for an isolated"),
    ([{"name": "n", "command": ["srv"], "seed_dir": "."}], {"stateful": False}, "environment.servers[0].seed_dir",
     "seeds the {workdir} of an isolated server"),
    ([notes(isolate="model")], {"stateful": False}, "environment.servers[0].isolate", "run at the same time"),
    ([{"name": "web", "url": "http://127.0.0.1:9/mcp", "isolate": "job"}], {}, "environment.servers[0].isolate",
     "can isolate only such a server"),
    ([notes(isolate="job", seed_dir="/no/such/seed")], {}, "environment.servers[0].seed_dir", "is not a directory"),
])
def test_isolation_that_cannot_hold_is_refused_naming_the_key(servers: list[dict[str, Any]], more: dict[str, Any],
                                                              key: str, text: str) -> None:
    with pytest.raises(ConfigError) as err:
        env_cfg(servers, **more)
    assert str(err.value).startswith(f"params.yaml: {key}: ") and text in str(err.value)


def test_shared_state_is_accepted_when_written_down_and_isolation_when_asked() -> None:
    env_cfg([{"name": "memory", "command": ["mcp-server-memory"], "allow_shared_state": True}])
    env_cfg([{"name": "time", "command": ["mcp-server-time"]}], stateful=False)
    env_cfg([notes(isolate="job")])
    env_cfg([notes(isolate="model")])


def test_write_tools_are_called_only_with_allow_writes_on_an_isolated_server() -> None:
    assert write_tools(MEMORY_TOOLS) == ["create_entities", "create_relations", "add_observations", "delete_entities",
                                         "delete_observations", "delete_relations"]
    shared = env_cfg([{"name": "memory", "command": ["mcp-server-memory"], "allow_shared_state": True}])
    with pytest.raises(ConfigError) as err:
        check_writes(shared, MEMORY_TOOLS)
    message = str(err.value)
    assert message.startswith("params.yaml: environment.allow_writes: server 'memory' offers 6 tools that may change "
                              "its state (not marked readOnlyHint, or marked destructiveHint): create_entities, "
                              "create_relations, add_observations, delete_entities, delete_observations, "
                              "delete_relations; agents would call them on the real server")
    assert "read_graph" not in message
    with pytest.raises(ConfigError, match=r"^params\.yaml: environment\.servers\[0\]\.isolate: server 'memory' offers 6"):
        check_writes({**shared, "allow_writes": True}, MEMORY_TOOLS)
    isolated = env_cfg([{"name": "memory", "command": ["mcp-server-memory"], "isolate": "job",
                         "env": {"MEMORY_FILE_PATH": "{workdir}/memory.jsonl"}}], allow_writes=True)
    check_writes(isolated, MEMORY_TOOLS)
    check_writes(shared, [t for t in MEMORY_TOOLS if t["name"] not in write_tools(MEMORY_TOOLS)])


def test_a_job_gets_a_fresh_seeded_directory_a_model_keeps_one_and_no_two_jobs_share_one(tmp_path: Path) -> None:
    ensure_bwrap()  # an isolated server runs in the sandbox (issue 28)
    seed = tmp_path / "seed"
    seed.mkdir()
    (seed / "notes.jsonl").write_text('{"text": "seeded"}\n')
    job = tmp_path / "runs/jobs/gpt/all.json"
    cfg = env_cfg([notes(isolate="job", seed_dir=str(seed), cwd="{workdir}")])
    first = Workdirs.for_job(cfg, job)
    where = first.dirs["notes"]
    assert where == tmp_path / "runs/jobs/gpt/workdirs/all/notes"
    assert (where / "notes.jsonl").read_text() == '{"text": "seeded"}\n'
    [spec] = server_specs(cfg, workdirs=first.dirs)
    assert spec.env["NOTES_FILE"] == f"{where}/notes.jsonl" and spec.cwd == str(where)
    assert spec.workdir == str(where) and spec.launch().argv()[0].endswith("bwrap"), "run in its sandbox"
    with pytest.raises(ToolEnvironmentError, match=r"is in use by another running agent job"):
        Workdirs.for_job(cfg, job)
    (where / "notes.jsonl").write_text("changed by the first job\n")
    first.close()
    again = Workdirs.for_job(cfg, job)
    assert (again.dirs["notes"] / "notes.jsonl").read_text() == '{"text": "seeded"}\n', "fresh for each job"
    again.close()
    other = Workdirs.for_job(cfg, tmp_path / "runs/jobs/gpt/standard-declared-0.json")
    assert other.dirs["notes"] != where
    other.close()

    per_model = env_cfg([notes(isolate="model", seed_dir=str(seed))])
    kept = Workdirs.for_job(per_model, job)
    assert kept.dirs["notes"] == tmp_path / "runs/jobs/gpt/workdirs/_model/notes"
    (kept.dirs["notes"] / "notes.jsonl").write_text("the model's history\n")
    kept.close()
    kept = Workdirs.for_job(per_model, tmp_path / "runs/jobs/gpt/other.json")
    assert (kept.dirs["notes"] / "notes.jsonl").read_text() == "the model's history\n", "kept across the model's jobs"
    kept.close()
    assert (seed / "notes.jsonl").read_text() == '{"text": "seeded"}\n'


def test_two_jobs_at_once_write_only_into_their_own_directory(tmp_path: Path) -> None:
    ensure_bwrap()
    seed = tmp_path / "seed"
    seed.mkdir()
    (seed / "notes.jsonl").write_text('{"text": "seeded"}\n')
    cfg = env_cfg([notes(isolate="job", seed_dir=str(seed))], allow_writes=True)
    doc = export_environment(cfg, warn=lambda m: None)
    assert [t["name"] for t in doc["tools"]] == ["add_note", "list_notes"]
    with pytest.raises(ConfigError, match=r"environment\.allow_writes: server 'notes' offers 1 tool that may change "
                                          r"its state \(not marked readOnlyHint, or marked destructiveHint\): add_note;"):
        make_environment({**cfg, "allow_writes": False}, doc)
    jobs = {m: tmp_path / f"runs/jobs/{m}/all.json" for m in ("model-a", "model-b")}
    envs = {m: make_environment(cfg, doc, job=job) for m, job in jobs.items()}
    seen: dict[str, list[str]] = {}

    def work(m: str) -> None:
        env = envs[m]
        assert not env.execute("add_note", {"text": f"written by {m}"}).is_error
        seen[m] = json.loads(env.execute("list_notes", {}).content)

    at_once(envs, work)
    assert seen == {m: ["seeded", f"written by {m}"] for m in envs}, "each job sees its own state only"
    for m, job in jobs.items():
        lines = (job.parent / "workdirs/all/notes/notes.jsonl").read_text().splitlines()
        assert [json.loads(line)["text"] for line in lines] == ["seeded", f"written by {m}"]
    assert (seed / "notes.jsonl").read_text() == '{"text": "seeded"}\n', "the seed is never written to"
    identity = envs["model-a"].identity
    assert identity["isolation"]["notes"]["isolate"] == "job" and identity["isolation"]["notes"]["seed"]
