"""params.yaml validation: defaults, and errors that name the key."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from canarykit.errors import ConfigError
from canarykit.study.config import load_params, params_schema, run_grid, validate_params

ROOT = Path(__file__).resolve().parents[1]


def _params() -> dict:
    return yaml.safe_load((ROOT / "params.yaml").read_text())


SHIPPED_MODELS = _params()["models"]


def test_shipped_params_are_valid_and_complete():
    cfg = load_params(ROOT / "params.yaml")
    assert cfg["canaries"]["pool"] == "standard"
    assert run_grid(cfg) == {"standard": ["baseline", "declared", "full", "control", "mirrored"], "subtle": ["declared"]}
    # one planted reference agent per canary type, and the surface-attracted one (issue 11)
    planted = {m["canary_type"] for m in cfg["models"] if m.get("agent") == "planted"}
    assert len(planted) == 6
    surface = [m for m in cfg["models"] if m.get("agent") == "surface"]
    # take_prob sized with canarykit plan: blind shown through independent draws (docs/canaries.md)
    assert [(m["name"], m["take_prob"], m["group"]) for m in surface] == [("planted:surface", 0.995, "planted")]


def test_every_schema_key_has_a_description_and_a_default():
    schema = params_schema()

    def walk(node: dict, path: str) -> None:
        for key, sub in node.get("properties", {}).items():
            if "$ref" in sub and len(sub) <= 1:
                continue
            assert sub.get("description"), f"{path}{key} has no description"
            if path.count(".") < 3 and not path.startswith("$defs"):
                assert "default" in sub or key in node.get("required", []), f"{path}{key} has no default"
            walk(sub, f"{path}{key}.")

    walk(schema, "")


def test_empty_config_gets_defaults():
    cfg = validate_params({})
    assert cfg["study"]["seeds"] == [0, 1, 2]
    assert cfg["agent"]["retries"]["max_attempts"] == 5
    assert cfg["canaries"]["suffixes"]["standard"]["capability_mirage"] is None  # the drawn bank entries' phrasings
    assert cfg["canaries"]["variants"] == 8 and cfg["canaries"]["wording_seed"] == 20261130


@pytest.mark.parametrize(
    ("mutate", "key"),
    [
        (lambda c: c["canaries"].__setitem__("pool", "subtel"), "canaries.pool"),
        (lambda c: c["agent"].__setitem__("concurrency", 0), "agent.concurrency"),
        (lambda c: c["study"].__setitem__("seeds", [-1]), "study.seeds[0]"),
        (lambda c: c["models"][3].__setitem__("take_prob", 1.5), "models[3].take_prob"),
        (lambda c: c["models"][0].__setitem__("backend", "openai"), "models[0].backend"),
        (lambda c: c["stats"].__setitem__("bootstrap_resamples", "many"), "stats.bootstrap_resamples"),
        (lambda c: c["models"].append(copy.deepcopy(c["models"][0])), f"models[{len(SHIPPED_MODELS)}].name"),
        (lambda c: c["ablation"].__setitem__("pool", "standard"), "ablation.pool"),
        (lambda c: c["judge"].__setitem__("primary", {"kind": "llm"}), "judge.primary"),
    ],
)
def test_invalid_values_name_the_key(mutate, key):
    cfg = _params()
    mutate(cfg)
    with pytest.raises(ConfigError) as err:
        validate_params(cfg, "params.yaml")
    assert err.value.file == "params.yaml"
    assert key in str(err.value)


def test_unknown_key_is_refused(tmp_path):
    cfg = _params()
    cfg["canaries"]["suffix"] = {}
    p = tmp_path / "p.yaml"
    p.write_text(yaml.safe_dump(cfg))
    with pytest.raises(ConfigError, match="canaries.*'suffix' was unexpected"):
        load_params(p)


def test_not_yaml(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("study: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_params(p)


def test_paper_profile_merges_and_validates():
    cfg = _params()
    profile = yaml.safe_load((ROOT / "src/canarykit/resources/profiles/paper.yaml").read_text())
    cfg["models"] = profile["models"]
    cfg["judge"].update(profile["judge"])
    out = validate_params(cfg)
    assert len(out["models"]) == 8 and out["judge"]["primary"]["model"].endswith("deepseek-v3.2-maas")


def test_a_judge_sharing_a_provider_is_refused_at_validation():
    cfg = _params()
    cfg["models"].append({"name": "gpt-4.1", "backend": "litellm", "model": "openai/gpt-4.1", "group": "mid"})
    cfg["judge"]["primary"] = {"kind": "llm", "model": "openai/gpt-4o"}
    with pytest.raises(ConfigError, match="judge.primary") as err:
        validate_params(cfg, "params.yaml")
    assert "openai" in str(err.value)


def test_local_profile_merges_and_validates():
    cfg = _params()
    profile = yaml.safe_load((ROOT / "src/canarykit/resources/profiles/local-gemma.yaml").read_text())
    for key, value in profile.items():
        if isinstance(value, dict):
            cfg[key].update(value)
        else:
            cfg[key] = value
    out = validate_params(cfg)
    assert [m["backend"] for m in out["models"]] == ["local", "reference"]
    assert run_grid(out) == {"standard": ["declared", "control"]} and out["study"]["limit_tasks"] == 12


def test_profiles_merge_like_snakemake_and_errors_name_the_file_that_set_the_key(tmp_path) -> None:
    from canarykit.errors import ConfigError
    from canarykit.study.config import load_params, merge_layers

    base = {"agent": {"max_turns": 12, "timeout_s": 30}, "models": [{"name": "a", "backend": "reference", "agent": "oracle"}]}
    over = {"agent": {"max_turns": 9}, "models": [{"name": "b", "backend": "reference", "agent": "random"}]}
    merged = merge_layers([("p", base), ("q", over)])
    assert merged["agent"] == {"max_turns": 9, "timeout_s": 30}  # mappings merge key by key
    assert [m["name"] for m in merged["models"]] == ["b"]  # lists are replaced
    profile = tmp_path / "profile.yaml"
    profile.write_text("models:\n  - {name: x, backend: litellm, model: openai/gpt-4.1, bogus: 1}\n")
    with pytest.raises(ConfigError) as err:
        load_params(ROOT / "params.yaml", [profile])
    assert err.value.file == str(profile) and err.value.field == "models[0].bogus"
    bad_base = tmp_path / "params.yaml"
    bad_base.write_text((ROOT / "params.yaml").read_text().replace("pool: standard", "pool: subtel"))
    with pytest.raises(ConfigError) as err:
        load_params(bad_base, [profile.parent / "none.yaml"])
    assert err.value.file.endswith("none.yaml")  # a missing profile is named first
    ok = tmp_path / "ok.yaml"
    ok.write_text("agent: {concurrency: 2}\n")
    with pytest.raises(ConfigError) as err:
        load_params(bad_base, [ok])
    assert err.value.file == str(bad_base) and err.value.field == "canaries.pool"


# bfcl.yaml needs bfcl-eval (make install-bfcl): tests/test_bfcl.py validates it where it is installed
@pytest.mark.parametrize("profile", sorted(p for p in (ROOT / "src/canarykit/resources/profiles").glob("*.yaml") if p.stem != "bfcl"))
def test_validate_config_checks_params_merged_with_each_shipped_profile(profile) -> None:
    import os
    import subprocess
    import sys

    # validate-config checks each hosted model's key variable (issue 29): the paper profile's are set here
    keys = {k: "test-value" for k in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "VERTEXAI_PROJECT", "VERTEXAI_LOCATION")}
    proc = subprocess.run([sys.executable, "-m", "canarykit", "validate-config", "params.yaml", "--configfile", str(profile)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, env={**os.environ, **keys})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"params.yaml + {profile}: valid.")


def test_a_misspelt_key_in_a_profile_is_blamed_on_the_profile_and_its_line(tmp_path) -> None:
    """Issue 29: "A profile file containing `model:` gives `canarykit: error: params.yaml: <root>: Additional
    properties are not allowed ('model' was unexpected) (did you mean 'models'?)`: the key is in the profile."""
    from canarykit.study.config import load_params

    profile = tmp_path / "mine.yaml"
    profile.write_text("# my study\nstudy:\n  output_dir: results/mine\nmodel:\n  - {name: gpt, backend: litellm}\n")
    with pytest.raises(ConfigError) as err:
        load_params(ROOT / "params.yaml", [profile])
    assert err.value.file == str(profile) and err.value.field == "model"
    assert str(err.value).startswith(f"{profile}:4: model: Additional properties are not allowed")
    assert "(did you mean 'models'?)" in str(err.value)
    # a bad value params.yaml sets is blamed on params.yaml, at its line
    bad = tmp_path / "params.yaml"
    text = (ROOT / "params.yaml").read_text()
    bad.write_text(text.replace("pool: standard", "pool: subtel", 1))
    line = text.splitlines().index("  pool: standard") + 1
    with pytest.raises(ConfigError) as err:
        load_params(bad)
    assert str(err.value).startswith(f"{bad}:{line}: canaries.pool: 'subtel' is not one of")
