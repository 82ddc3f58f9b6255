"""Stages and borders meet through public faces (issue 24 item 2): no module of the package,
and no rule script, imports another package's private module (``canarykit.tools._common``)
or a private name of another module (``canarykit.assembly.assembly._order``). Within one subpackage
its modules share what they like; across, only what a package's ``__init__`` (or a public
module) offers."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, module: str) -> list[tuple[int, str]]:
    """(line, dotted target) of every import of ``path``, relative ones resolved; ``from m
    import n`` gives ``m`` and ``m.n``."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join([*base, node.module] if node.module else base)
            out += [(node.lineno, target)] + [(node.lineno, f"{target}.{a.name}") for a in node.names]
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
    return out


def _owner(module: str) -> str:
    """The stage or border a module belongs to: ``canarykit.<first part>``."""
    return ".".join(module.split(".")[:2])


def private_crossings(path: Path, module: str) -> list[str]:
    bad = []
    for line, target in _imports(path, module):
        parts = target.split(".")
        if parts[0] != "canarykit":
            continue
        for i, part in enumerate(parts[1:], 1):
            if part.startswith("_") and not part.startswith("__"):
                crossing = ".".join(parts[:i + 1])
                if _owner(crossing) != _owner(module):
                    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
                    bad.append(f"{shown}:{line} imports {crossing}")
                break
    return sorted(set(bad))


def test_no_module_imports_another_packages_private_parts() -> None:
    files = sorted((SRC / "canarykit").rglob("*.py"))
    assert len(files) > 50
    bad = [b for f in files for b in private_crossings(f, _module_name(f))]
    bad += [b for f in sorted((ROOT / "scripts").rglob("*.py")) for b in private_crossings(f, "scripts." + f.stem)]
    assert bad == [], "import through the package's public face (its __init__) instead:\n" + "\n".join(bad)


def test_the_check_sees_a_crossing(tmp_path: Path) -> None:
    """The checker flags what it must, in a module of ``canarykit.agents``: a private module
    and a private name of another package, relative or absolute; a sibling's private module
    within one package is fine, and so is another package's public face."""
    cases = {
        "from ..tools._common import cap_result\n": 1,
        "from canarykit.assembly.assembly import _order\n": 1,
        "import canarykit.stats._crossed\n": 1,
        "from ._plan import plan_steps\n": 0,
        "from ..tools import cap_result\n": 0,
    }
    for source, n in cases.items():
        fake = tmp_path / "probe.py"
        fake.write_text(source)
        assert len(private_crossings(fake, "canarykit.agents.probe")) == n, source


def test_the_documented_module_commands_run(tmp_path: Path) -> None:
    """The generators live with their stages and run as the docs show them:
    ``python -m canarykit.study.dvcyaml --check`` (what ``make check`` runs) and
    ``python -m canarykit.tasks.taskgen OUTPUT`` (the shipped suite, byte for byte); no package
    stands in for them under an older name."""
    import importlib.util
    import subprocess
    import sys

    check = subprocess.run([sys.executable, "-m", "canarykit.study.dvcyaml", "--check"], cwd=ROOT, capture_output=True,
                           text=True, timeout=300)
    assert check.returncode == 0, check.stderr
    out = tmp_path / "tasks.json"
    gen = subprocess.run([sys.executable, "-m", "canarykit.tasks.taskgen", str(out)], capture_output=True, text=True,
                         timeout=300)
    assert gen.returncode == 0, gen.stderr
    assert out.read_bytes() == (ROOT / "data/tasks.json").read_bytes()
    assert importlib.util.find_spec("canarykit.dvcyaml") is None
    assert importlib.util.find_spec("canarykit.taskgen") is None
