"""The one registry: registration where a thing is defined, lazy entries, one-line errors."""

from __future__ import annotations

import sys
import types

import pytest

from canarykit.errors import ConfigError
from canarykit.registry import Registry


def test_register_get_and_unknown_names_the_key_and_the_known_names() -> None:
    reg: Registry[type] = Registry("backend")

    @reg.register("b")
    class B:
        pass

    reg.add("a", int)
    assert reg.get("b") is B and reg.names() == ["a", "b"] and "a" in reg and len(reg) == 2
    with pytest.raises(ConfigError) as err:
        reg.get("c", source="my.yaml", field="models[0].backend")
    assert str(err.value) == "my.yaml: models[0].backend: unknown backend 'c'; expected one of ['a', 'b']"


def test_a_lazy_entry_imports_its_module_on_first_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    reg: Registry[str] = Registry("judge", lazy={"late": "canarykit_test_late_module"})
    module = types.ModuleType("canarykit_test_late_module")
    imported: list[str] = []

    def loader(name: str) -> types.ModuleType:
        imported.append(name)
        reg.add("late", "the late judge")
        sys.modules[name] = module
        return module

    monkeypatch.setattr("canarykit.registry.importlib.import_module", loader)
    assert reg.names() == ["late"] and imported == []
    assert reg.get("late") == "the late judge" and imported == ["canarykit_test_late_module"]
    assert reg.get("late") == "the late judge" and len(imported) == 1
