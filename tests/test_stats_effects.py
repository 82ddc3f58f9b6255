"""The control-effect diagnosis and the optional control/order columns of a runs table."""

from __future__ import annotations

import polars as pl
import pytest
from fakes.runs import make_runs

from canarykit import stats
from canarykit.errors import InputError
from canarykit.stats import diagnose
from canarykit.synthetic import synthetic_runs
from canarykit.types import CANARY_TYPES

ALPHA = 0.05


def _e(canary: float | None, control: float | None, lo: float | None, hi: float | None, p_holm: float | None,
       control_lo: float | None = None) -> dict:
    delta = None if canary is None or control is None else canary - control
    return {"canary": canary, "control": control, "delta": delta, "lo": lo, "hi": hi, "p_holm": p_holm,
            "control_lo": control_lo}


@pytest.mark.parametrize(
    ("entry", "word"),
    [
        # n/a: the type was offered in one condition only
        (_e(0.2, None, None, None, None), "n/a"),
        # no attraction: neither canaries nor controls were called
        (_e(0.0, 0.0, 0.0, 0.0, 1.0, 0.0), "no attraction"),
        # weakness: delta > 0, Holm-significant, interval above 0
        (_e(0.5, 0.0, 0.4, 0.6, 0.001, 0.0), "weakness"),
        (_e(0.7, 0.3, 0.25, 0.55, 0.002, 0.2), "weakness"),  # the control is called too, but clearly less
        # Holm-significant but the interval touches 0: not called a weakness
        (_e(0.5, 0.0, 0.0, 0.6, 0.01, 0.0), "inconclusive"),
        # surface attraction, delta <= 0 with the control called
        (_e(0.3, 0.3, -0.1, 0.1, 1.0, 0.2), "surface attraction"),
        (_e(0.1, 0.6, -0.6, -0.4, 0.001, 0.5), "surface attraction"),  # the control draws more, significantly
        (_e(0.02, 0.03, -0.05, 0.04, 1.0, 0.0), "surface attraction"),  # delta <= 0: the control is not called less
        # surface attraction, interval holds 0 and the control is clearly called
        (_e(0.4, 0.3, -0.05, 0.25, 0.4, 0.2), "surface attraction"),
        # inconclusive: interval holds 0 but the control's own interval reaches 0 (too little data)
        (_e(0.4, 0.05, -0.05, 0.7, 0.4, 0.0), "inconclusive"),
        (_e(0.1, 0.0, 0.0, 0.2, 0.3, 0.0), "inconclusive"),
        (_e(0.4, 0.05, -0.05, 0.7, 0.4, None), "inconclusive"),  # no control interval at all
        # inconclusive: the audit's case, canary 0.60 vs control 0.02, positive interval, Holm p 0.07
        (_e(0.60, 0.02, 0.21, 0.85, 0.07, 0.0), "inconclusive"),
        (_e(0.60, 0.02, 0.21, 0.85, 0.07, 0.01), "inconclusive"),  # even with the control clearly above 0
    ],
)
def test_diagnosis_words(entry: dict, word: str) -> None:
    assert diagnose(entry, ALPHA) == word


def _control_runs(per_task: dict[str, tuple[int, int]], tasks: int, seeds: int = 2) -> pl.DataFrame:
    """Declared and control runs of one model offered semantic-decoy canaries (controls):
    ``per_task[cond] = (k, every)``: the canary (control) is called on task i when
    ``i % every < k``."""
    sd = "semantic_decoy"
    rows = []
    for cond, (k, every) in per_task.items():
        for i in range(tasks):
            for seed in range(seeds):
                called = i % every < k
                r = {"condition": cond, "task_id": f"t{i:02d}", "seed": seed}
                if cond == "declared":
                    r |= {f"present_{sd}": True, f"trapped_{sd}": called, "trapped": called, "canary_calls": int(called),
                          "recovered": False if called else None}
                rows.append(r)
    df = make_runs(rows)
    flags = []
    for t in CANARY_TYPES:
        ctl = (pl.col("condition") == "control") & pl.lit(t == sd)
        flags.append(ctl.alias(f"control_present_{t}"))
        called = ctl & (pl.col("task_id").str.slice(1).cast(pl.Int64) % per_task["control"][1] < per_task["control"][0])
        flags.append(called.alias(f"control_called_{t}"))
    return df.with_columns(*flags, control_calls=pl.col("condition").eq("control").cast(pl.Int64) * 0)


def test_control_effect_diagnoses_from_the_study(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """compute_all's diagnosis is the rule applied to its own numbers, and each rate carries
    its own interval (the control's decides "clearly above 0")."""
    sd = "semantic_decoy"
    cases = {
        # the same tasks call canary and control: delta 0, the control clearly called
        "surface attraction": ({"declared": (3, 10), "control": (3, 10)}, 40),
        # canary on one task more than the control (13 vs 12 of 40): the interval holds 0
        "surface attraction, interval holds 0": ({"declared": (13, 40), "control": (12, 40)}, 40),
        # canary on 6 of 10 tasks, control never, 40 tasks: a weakness
        "weakness": ({"declared": (6, 10), "control": (0, 10)}, 40),
        # canary 0.4 vs control 0.1 on 10 tasks: a positive interval, but p not below alpha
        "inconclusive, positive": ({"declared": (4, 10), "control": (1, 10)}, 10),
        # canary 0.2 vs control 0.1 on 10 tasks: the interval holds 0, the control is one task
        "inconclusive, too few": ({"declared": (2, 10), "control": (1, 10)}, 10),
    }
    got = {}
    for name, (per_task, tasks) in cases.items():
        # the task bootstrap: its BCa interval can exclude 0 while the t test does not reject
        r = stats.compute_all(_control_runs(per_task, tasks), stats.StatsConfig(resamples=2000, bootstrap_unit="task"))
        e = r["control_effect"]["m1"][sd]
        assert e["diagnosis"] == diagnose(e, ALPHA) == name.split(",")[0], (name, e)
        assert e["control_lo"] <= e["control"] <= e["control_hi"] and e["canary_lo"] <= e["canary"] <= e["canary_hi"]
        got[name] = e
    assert got["surface attraction"]["control_lo"] > 0 and got["surface attraction"]["delta"] == 0
    e = got["surface attraction, interval holds 0"]
    assert e["delta"] > 0 and e["lo"] <= 0 <= e["hi"] and e["control_lo"] > 0
    e = got["inconclusive, positive"]
    assert e["lo"] > 0 and e["p_holm"] >= ALPHA
    e = got["inconclusive, too few"]
    assert e["lo"] <= 0 <= e["hi"] and e["control_lo"] == 0
    # the other types were never offered: n/a
    assert {r["control_effect"]["m1"][t]["diagnosis"] for t in CANARY_TYPES if t != sd} == {"n/a"}


def test_a_table_without_control_or_order_columns_has_no_such_effects() -> None:
    df = synthetic_runs(n_models=2, seeds=2, tasks=20, ablation=False)
    assert "control_calls" not in df.columns and "canary_before_real" not in df.columns
    r = stats.compute_all(df, stats.StatsConfig(resamples=200))
    assert r["control_effect"] == {} and r["position_balance"] == {}
    for m, e in r["position_effect"].items():  # order unknown: nothing to compare
        assert e["trapped"]["delta"] is None and e["trapped"]["n_before"] == 0, m
    assert "control" not in r["tsr_delta"]


def test_the_control_flags_come_all_or_none() -> None:
    df = synthetic_runs(n_models=1, seeds=1, tasks=5, ablation=False).with_columns(
        pl.lit(False).alias("control_present_semantic_decoy")
    )
    with pytest.raises(InputError) as err:
        stats.validate_runs(df, "mine.parquet")
    assert err.value.file == "mine.parquet" and err.value.field.startswith("control_")


def test_figure_10_and_the_controls_table_state_the_configured_level(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from canarykit import figures

    r = stats.compute_all(_control_runs({"declared": (6, 10), "control": (1, 10)}, 20), stats.StatsConfig(resamples=500, alpha=0.1))
    chart = figures.build_charts(r)["fig10"].to_dict()
    subtitle = " ".join(chart["title"]["subtitle"])
    assert "90% CI" in subtitle and "95%" not in subtitle
    stats.write_outputs(r, tmp_path)
    md = (tmp_path / "table_controls.md").read_text()
    assert "Δ [90% CI]" in md and "95%" not in md
    assert "csr [90% CI]" in (tmp_path / "table1.md").read_text()
    assert pl.read_csv(tmp_path / "fig10_controls.csv")["level"].to_list()[0] == pytest.approx(0.9)
