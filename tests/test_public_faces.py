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


def test_faces_only_hand_on_names() -> None:
    """Every package's ``__init__.py`` (the logger plugin's too) is a face: imports of what it
    offers, a docstring, dunder names (``__all__``, ``__version__``); no code, at most 40
    lines (issue 32)."""
    bad = []
    for face in sorted(SRC.rglob("__init__.py")):
        shown = face.relative_to(ROOT)
        lines = face.read_text(encoding="utf-8").splitlines()
        if len(lines) > 40:
            bad.append(f"{shown}: {len(lines)} lines")
        for node in ast.parse("\n".join(lines)).body:
            names_all = isinstance(node, ast.Assign) and all(
                getattr(t, "id", "").startswith("__") for t in node.targets)
            docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            if not (isinstance(node, ast.Import | ast.ImportFrom) or names_all or docstring):
                bad.append(f"{shown}:{node.lineno} defines {type(node).__name__}")
    assert bad == [], "move the code into a named module:\n" + "\n".join(bad)




def import_circles(src: Path) -> list[list[str]]:
    """Modules of ``canarykit`` under ``src`` that import each other in a loop, lazy imports
    included (Tarjan's strongly connected components over the module graph)."""
    def name(path: Path) -> str:
        parts = list(path.relative_to(src).with_suffix("").parts)
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    modules = {name(f): f for f in sorted((src / "canarykit").rglob("*.py"))}

    def owner(target: str) -> str | None:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        return target or None

    def targets(path: Path, module: str) -> set[str]:
        """What ``module`` imports: ``from p import m`` is the module ``p.m`` when there is one."""
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        out: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                target = ".".join([*base, node.module] if node.module else base)
                out |= {f"{target}.{a.name}" if f"{target}.{a.name}" in modules else owner(target) for a in node.names}
            elif isinstance(node, ast.Import):
                out |= {owner(a.name) for a in node.names}
        return {t for t in out if t and t != module}

    graph = {m: sorted(targets(f, m)) for m, f in modules.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for m in modules:
        if m not in index:
            visit(m)
    return sorted(circles)


def test_no_module_imports_itself_through_others(tmp_path: Path) -> None:
    """No import circles (issue 32): a loop of any length, lazy imports too; and the check
    finds one when there is one."""
    assert import_circles(SRC) == []
    pkg = tmp_path / "canarykit"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("def f():\n    from .c import x\n")
    (pkg / "c.py").write_text("from canarykit.a import y\n")
    assert import_circles(tmp_path) == [["canarykit.a", "canarykit.b", "canarykit.c"]]
