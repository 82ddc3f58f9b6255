"""The rules' scripts: each is a thin shell over the package that runs only as a script."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def test_importing_a_script_runs_nothing(tmp_path: Path) -> None:
    for script in sorted((Path(__file__).parents[1] / "scripts").glob("*.py")):
        spec = importlib.util.spec_from_file_location(f"script_{script.stem}", script)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        assert callable(module.main), script.name
