"""End to end with DVC in a temporary git repository (issue: dvc repro recomputes only what
a change invalidates, pools are compared with dvc diff, results are shared via a remote).

A small study (three reference agents, one seed, 24 tasks); slow-marked (about six minutes on
two cores), run by `make test-slow` and `.ci/run`.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from fakes.readme import command, shown
from fakes.readme import sh as readme
from fakes.workflow import ROOT, copy_workflow, run, set_param

from canarykit.store.records import read_record

N_TASKS = 24
pytestmark = pytest.mark.slow


def sh(cwd: Path, *args: str) -> str:
    proc = run(cwd, *args)
    return proc.stdout + proc.stderr


def _summary(repo: Path) -> dict:
    """The run summary, read with the README's command."""
    return json.loads(readme(repo, command("cat results/logs/run-summary.json").text).stdout)


def _offered(pool: Path) -> dict[str, str]:
    """What each canary and twin of a pool file offers and does, by id."""
    doc = json.loads(pool.read_text())
    keys = ("name", "description", "inputSchema", "outputSchema", "annotations", "behaviour")
    return {r["id"]: json.dumps({k: r.get(k) for k in keys}, sort_keys=True) for r in doc["canaries"] + doc.get("controls", [])}


def _rows(text: str) -> set[str]:
    return {" ".join(line.split()) for line in text.splitlines() if line.strip()}


def assert_shows(repo: Path, start: str) -> str:
    """Run the README's command as printed; every line the README shows under it (but '...')
    is a line of what it prints, up to white space."""
    out = readme(repo, command(start).text).stdout
    want = [line for line in shown(start) if line.strip() != "..."]
    missing = [line for line in want if " ".join(line.split()) not in _rows(out)]
    assert not missing, f"README shows under `{command(start).text}` lines it does not print: {missing}\nprinted:\n{out}"
    return out


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = copy_workflow(tmp_path_factory.mktemp("study") / "repo")
    sh(repo, "git", "init", "-q")
    sh(repo, "dvc", "init", "-q")
    # the project's committed DVC config, as a clone of it has (it names the offline plots template)
    (repo / ".dvc/config").write_text((ROOT / ".dvc/config").read_text())
    sh(repo, "git", "add", "-A")
    sh(repo, "git", "commit", "-qm", "study")
    return repo


def test_repro_then_suffix_change_reruns_exactly_the_affected_runs(repo: Path) -> None:
    readme(repo, command("dvc repro").text)
    first = _summary(repo)
    # 3 agents x the lists: 24 tasks x (4 conditions + the subtle ablation), and a control list per (task, type offered)
    lists = pl.concat([pl.read_parquet(p) for p in sorted((repo / "results/assembly").glob("*/seed-*.parquet"))],
                      how="diagonal_relaxed").select("pool", "condition", "seed", "task_id", "arm").unique().height
    assert lists > N_TASKS * 6
    assert first["failed"] == 0 and first["executed"] + first["reused"] == first["total"] == 3 * lists
    sh(repo, "git", "add", "-A")
    sh(repo, "git", "commit", "-qm", "first reproduction")

    pool_before = _offered(repo / "results/canaries/standard.json")
    set_param(repo, ["canaries", "suffixes", "standard", "capability_mirage"], "ADVANCED: state-of-the-art accuracy on the hardest cases.")
    out = sh(repo, "dvc", "repro")
    assert "Stage 'generate_canaries@subtle' didn't change" in out and "Running stage 'generate_canaries@standard'" in out
    summary = _summary(repo)
    pool_after = _offered(repo / "results/canaries/standard.json")
    # the suffix is the first wording of the mirage bank: only those canaries read differently
    changed = {i for i in pool_before.keys() | pool_after.keys() if pool_before.get(i) != pool_after.get(i)}
    assert changed and all(i.startswith("capability_mirage:") and "@v" not in i for i in changed), changed
    assembly = pl.concat([pl.read_parquet(p) for p in sorted((repo / "results/assembly/standard").glob("seed-*.parquet"))])
    # the lists that offer one of them (a list's wording is drawn per list: which conditions offer
    # this one is the draw's)
    hit = pl.col("canary_id").is_in(sorted(changed)) | pl.col("control_id").is_in(sorted(changed))
    with_mirage = assembly.filter(hit).select("condition", "seed", "task_id", "arm").unique().height
    assert with_mirage > 0
    assert summary["executed"] == with_mirage * 3
    assert summary["reused"] == summary["total"] - summary["executed"] and summary["failed"] == 0
    # The backend call counter agrees: every call made belongs to a re-executed run.
    index = pl.read_parquet(repo / "results/runs/index.parquet")
    # which runs this invocation executed: history, in the agent jobs' summaries (logs), not the index
    ran = [r for f in sorted((repo / "results/logs/runs").rglob("*.json")) for r in json.loads(f.read_text())["executed_runs"]]
    executed = index.filter(pl.col("run_id").is_in(ran))
    assert executed.height == summary["executed"]
    assert (executed["pool"] == "standard").all()
    calls = sum(read_record(repo / "results/runs/store" / r[:2] / f"{r}.json").n_model_calls for r in executed["run_id"])
    assert summary["backend_calls"] == calls > 0

    before = (repo / "results/logs/run-summary.json").read_bytes()
    out = sh(repo, "dvc", "repro")
    assert "Running stage" not in out and "Data and pipelines are up to date" in out
    assert (repo / "results/logs/run-summary.json").read_bytes() == before
    sh(repo, "git", "add", "-A")
    sh(repo, "git", "commit", "-qm", "new capability-mirage suffix")


def test_switching_pools_is_one_key_and_diffs_as_data(repo: Path) -> None:
    readme(repo, command("dvc exp run -S canaries.pool=subtle").text)
    readme(repo, command("git add -A && git commit").text)
    # the README's commands as printed, printing what it shows
    assert_shows(repo, "dvc params diff HEAD~1")
    assert_shows(repo, "dvc metrics diff HEAD~1")
    targeted = readme(repo, command("dvc diff HEAD~1 --targets").text).stdout
    assert "results/runs.parquet" in targeted and "results/assembly/" in targeted and "runs/store" not in targeted

    params = sh(repo, "dvc", "params", "diff", "HEAD~1", "--json")
    assert json.loads(params)["params.yaml"]["canaries.pool"] == {"old": "standard", "new": "subtle"}
    diff = json.loads(sh(repo, "dvc", "diff", "HEAD~1", "--json"))
    modified = {d["path"] for d in diff.get("modified", [])}
    assert {"results/assembly/", "results/runs.parquet"} <= modified, modified
    metrics = json.loads(sh(repo, "dvc", "metrics", "diff", "HEAD~1", "--all", "--json"))
    # one file per (model, grid cell), named by the cell's role: the same cell pairs across pools
    for model in ("oracle", "lexical", "planted_capability_mirage"):
        for cell in ("baseline", "declared", "full", "ablation"):
            entry = metrics[f"results/metrics/{model}/{cell}.json"]
            assert {"old", "new"} <= set(entry["csr"]), entry  # paired, not added/deleted
    lexical = metrics["results/metrics/lexical/declared.json"]["csr"]
    assert lexical["old"] != lexical["new"]  # the declared cell moved from the standard to the subtle pool
    # `dvc metrics show` fits a terminal
    table = assert_shows(repo, "dvc metrics show")
    assert max(len(line) for line in table.splitlines()) <= 100, table
    # `dvc plots diff` renders offline (the committed .dvc/config names the template: Vega inlined, no CDN)
    readme(repo, command("dvc plots diff HEAD~1 --targets results/fig8_ablation.csv -o dvc_plots").text)
    page = (repo / "dvc_plots/index.html").read_text()
    assert "cdn.jsdelivr" not in page and "vegaEmbed" in page and "fig8_ablation" in page


def test_every_figure_format_reproduces_and_stale_cells_leave_no_metrics(repo: Path) -> None:
    set_param(repo, ["figures", "formats"], ["png"])
    set_param(repo, ["study", "conditions"], ["baseline", "declared"])
    out = sh(repo, "dvc", "repro")
    assert "Running stage 'stats'" in out and "Running stage 'figures'" in out
    assert sorted(p.name for p in (repo / "results/figures").iterdir()) == sorted(f"fig{i}.png" for i in (2, 4, 5, 6, 7, 8, 9, 10))
    # the `full` cell is no longer in the study: its metrics are gone, not mixed in
    assert sorted(p.name for p in (repo / "results/metrics/oracle").iterdir()) == ["ablation.json", "baseline.json", "declared.json"]
    # quiet stages: no Snakemake banner per stage (381 lines before); 11 stages since figures is its own
    assert len(out.splitlines()) < 175, out
    sh(repo, "git", "add", "-A")
    sh(repo, "git", "commit", "-qm", "png figures, two conditions")


def test_push_clone_pull_then_nothing_to_do(repo: Path, tmp_path: Path) -> None:
    remote = tmp_path / "remote"
    sh(repo, "dvc", "remote", "add", "-d", "-f", "local", str(remote))
    sh(repo, "git", "add", ".dvc/config")
    sh(repo, "git", "commit", "-qm", "remote")
    readme(repo, command("dvc push").text)
    clone = tmp_path / "clone"
    sh(tmp_path, "git", "clone", "-q", str(repo), str(clone))
    readme(clone, command("dvc pull").text)
    out = readme(clone, command("snakemake -n results/table1.csv").text).stdout
    assert "nothing to do: every output is up to date" in out or "Nothing to be done" in out
    assert (clone / "results/table1.csv").read_bytes() == (repo / "results/table1.csv").read_bytes()
