"""The embedded Gemma 3 270M model through llama_cpp.server and the litellm path."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes.study import make_study

from canarykit.agents import make_backend, run_grid
from canarykit.agents.local import (
    GGUF_PACKAGE,
    LocalModelUnavailable,
    LocalServer,
    find_gguf,
    llama_cpp_available,
)
from canarykit.records import read_record


def _model_installed() -> bool:
    try:
        find_gguf()
    except LocalModelUnavailable:
        return False
    return True


def test_local_backend_is_registered_and_lazy() -> None:
    b = make_backend({"name": "gemma", "backend": "local", "group": "local"})
    assert b.kind == "local" and b.cacheable and b.cache_scope["decoding"]["max_tokens"] == 256
    assert "port" not in str(b.cache_scope)  # the cache must not depend on the free port


@pytest.mark.skipif(llama_cpp_available(), reason="llama-cpp-python is installed")
def test_missing_llama_cpp_is_a_clear_error() -> None:
    with pytest.raises(LocalModelUnavailable, match="llama-cpp-python is not installed"):
        LocalServer().start()


def test_find_gguf_names_the_package_when_absent() -> None:
    with pytest.raises(LocalModelUnavailable, match="no-such-gguf-package"):
        find_gguf("no-such-gguf-package")


@pytest.mark.slow
@pytest.mark.skipif(not llama_cpp_available(), reason="llama-cpp-python is not installed (pip install 'canarykit[local]')")
@pytest.mark.skipif(not _model_installed(), reason=f"the model package {GGUF_PACKAGE} is not installed")
def test_gemma_runs_tasks_end_to_end(tmp_path: Path) -> None:
    tasks_path, pools, tasks = make_study(tmp_path / "study", n_tasks=3, pools={"standard": ["declared"]})
    model = {"name": "gemma3-270m", "backend": "local", "group": "local"}
    agent = {"max_turns": 3, "timeout_s": 120, "concurrency": 1, "cache_dir": str(tmp_path / "cache"),
             "retries": {"max_attempts": 2, "base_delay_s": 0.5, "max_delay_s": 2.0}}
    args = (agent, tmp_path / "store", tmp_path / "runs.parquet", tmp_path / "summary.json")
    s = run_grid([model], tasks_path, pools, [0], *args, progress=False)
    assert s.total == 3 and s.failed == 0 and s.backend_calls > 0
    for p in (tmp_path / "store").rglob("*.json"):
        rec = read_record(p)
        assert rec.backend == "local" and rec.status in ("completed", "turn_limit") and rec.n_model_calls >= 1
    again = run_grid([model], tasks_path, pools, [0], *args, progress=False)
    assert again.executed == 0 and again.backend_calls == 0
