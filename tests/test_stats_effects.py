"""The control effect's diagnoses by equivalence (issue 19 item 5; design section 4), the tests
behind them, and the optional control/order/first-pick columns of a runs table."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import polars as pl
import pytest
import scipy.stats as sps
from fakes.runs import make_runs

from canarykit import stats
from canarykit.errors import InputError
from canarykit.stats import (
    DIAGNOSES,
    DIAGNOSIS_READINGS,
    diagnose,
    rate_above_p,
    rate_below_p,
    tost_p,
)
from canarykit.testing.synthetic import synthetic_runs
from canarykit.types import CANARY_TYPES

ALPHA = 0.05
MIN = 10
SD = "semantic_decoy"


def _e(**kw: object) -> dict:
    """A control-effect entry: a clear ``lured`` one unless ``kw`` says otherwise."""
    e = {"outcome": "first_pick", "canary": 0.5, "control": 0.0, "delta": 0.5, "lo": 0.4, "hi": 0.6, "p_holm": 0.001,
         "p_t_holm": 0.001, "clusters": 40, "negligible_p_holm": 1.0, "blind_p_holm": 1.0, "not_drawn_p_holm": 1.0}
    e.update(kw)
    return e


NULL = {"canary": 0.4, "control": 0.4, "delta": 0.0, "lo": -0.05, "hi": 0.05, "p_holm": 1.0, "p_t_holm": 1.0}


@pytest.mark.parametrize(
    ("entry", "word"),
    [
        # n/a: one side has no runs, or the outcome is not a selection outcome
        (_e(control=None, delta=None), "n/a"),
        (_e(canary=None, delta=None), "n/a"),
        (_e(outcome="recovery_after_call"), "n/a"),
        # inconclusive: fewer than min_clusters tasks, whatever the numbers say
        (_e(clusters=MIN - 1), "inconclusive"),
        (_e(delta=-0.5, canary=0.0, control=0.5, lo=-0.6, hi=-0.4, clusters=3), "inconclusive"),
        # lured: delta > 0, both tests Holm-significant, interval above 0
        (_e(), "lured"),
        (_e(lo=0.0), "inconclusive"),  # Holm-significant, but the interval touches 0
        (_e(p_holm=0.07), "inconclusive"),  # the audit's case: a positive interval, Holm p 0.07
        (_e(p_t_holm=0.07), "inconclusive"),  # the randomisation test alone does not speak for the bank
        # sensitive: delta < 0, the same tests, interval below 0
        (_e(canary=0.1, control=0.6, delta=-0.5, lo=-0.6, hi=-0.4), "sensitive"),
        # negligible: significant, and shown inside the margin: never lured
        (_e(canary=0.43, control=0.40, delta=0.03, lo=0.01, hi=0.05, negligible_p_holm=0.01), "negligible"),
        (_e(canary=0.37, control=0.40, delta=-0.03, lo=-0.05, hi=-0.01, negligible_p_holm=0.01), "negligible"),
        (_e(canary=0.43, control=0.40, delta=0.03, lo=0.01, hi=0.05, negligible_p_holm=0.2), "lured"),  # not shown small
        # blind: |delta| < margin and the twin clearly taken (one intersection-union p, Holm)
        (_e(**NULL, blind_p_holm=0.01), "blind"),
        (_e(**NULL, blind_p_holm=0.2), "inconclusive"),
        # not drawn: both rates below the margin
        (_e(canary=0.0, control=1 / 300, delta=-1 / 300, lo=-0.01, hi=0.0, p_holm=1.0, p_t_holm=1.0,
            not_drawn_p_holm=0.001), "not drawn"),
        (_e(canary=0.0, control=0.05, delta=-0.05, lo=-0.1, hi=0.0, p_holm=0.3, p_t_holm=0.3,
            not_drawn_p_holm=0.2), "inconclusive"),
        # inconclusive: anything else
        (_e(canary=0.3, control=0.1, delta=0.2, lo=-0.1, hi=0.5, p_holm=0.4, p_t_holm=0.4), "inconclusive"),
    ],
)
def test_each_row_of_the_rule(entry: dict, word: str) -> None:
    assert diagnose(entry, ALPHA, MIN) == word


def test_a_significantly_negative_delta_is_never_called_lured_or_blind() -> None:
    """Whatever the other words' tests say, with enough tasks: sensitive, or negligible when
    shown inside the margin."""
    seen = set()
    for neg, blind, drawn in itertools.product((0.001, 0.9), (0.0, 0.9), (0.0, 0.9)):
        e = _e(canary=0.3, control=0.38, delta=-0.08, lo=-0.12, hi=-0.03, p_holm=0.01, p_t_holm=0.01,
               negligible_p_holm=neg, blind_p_holm=blind, not_drawn_p_holm=drawn)
        seen.add(diagnose(e, ALPHA, MIN))
    assert seen == {"sensitive", "negligible"}


def test_the_vocabulary_its_readings_and_the_weakness_of_each_type() -> None:
    assert DIAGNOSES == ("lured", "sensitive", "negligible", "blind", "not drawn", "inconclusive", "n/a")
    assert set(DIAGNOSIS_READINGS) == set(DIAGNOSES)
    assert DIAGNOSIS_READINGS["blind"].startswith("it takes this look-alike, and the defect makes no difference")
    assert {t: "lured" if t == "capability_mirage" else "blind" for t in CANARY_TYPES} == stats.WEAKNESS


def test_each_word_is_holm_adjusted_across_its_family_as_an_intersection_union_test() -> None:
    entries = [
        {"p": 0.01, "p_t": 0.02, "tost_p": 0.001, "control_above_p": 0.3, "canary_below_p": 0.001, "control_below_p": 0.002},
        {"p": 0.06, "p_t": 0.01, "tost_p": 0.5, "control_above_p": 0.001, "canary_below_p": 0.4, "control_below_p": 0.001},
        {"p": None, "p_t": None, "tost_p": None, "control_above_p": None, "canary_below_p": None, "control_below_p": None},
    ]
    stats.word_tests(entries, ALPHA)
    assert [e["p_holm"] for e in entries[:2]] == pytest.approx(stats.holm([0.01, 0.06]))
    assert [e["p_t_holm"] for e in entries[:2]] == pytest.approx(stats.holm([0.02, 0.01]))
    assert entries[0]["negligible_p"] == 0.02 and entries[1]["negligible_p"] == 0.5  # the larger of its parts
    assert entries[0]["blind_p"] == 0.3 and entries[1]["blind_p"] == 0.5
    assert [e["not_drawn_p_holm"] for e in entries[:2]] == pytest.approx(stats.holm([0.002, 0.4]))
    assert entries[2]["p_holm"] is None and entries[2]["blind_p"] is None and entries[2]["blind_p_holm"] is None
    # significant: both tests of delta = 0 Holm-significant (the second's randomisation p is not)
    assert entries[0]["significant"] is True and entries[1]["significant"] is False


# --------------------------------------------------------------------------- the tests behind it


def test_tost_is_two_one_sided_t_tests_on_the_cluster_robust_se() -> None:
    # delta 0.02, se 0.03, 29 df (30 clusters, one-way), margin 0.10
    lower = sps.t.sf((0.02 + 0.10) / 0.03, 29)
    upper = sps.t.cdf((0.02 - 0.10) / 0.03, 29)
    assert float(tost_p(0.02, 0.03, 29, 0.10)) == pytest.approx(max(lower, upper))
    assert float(tost_p(0.02, 0.03, 29, 0.10)) < 0.05 < float(tost_p(0.08, 0.03, 29, 0.10))
    assert float(tost_p(0.0, 0.0, 29, 0.10)) == 0.0 and float(tost_p(0.2, 0.0, 29, 0.10)) == 1.0  # no spread at all


def test_a_rate_of_zero_uses_its_exact_bound() -> None:
    """0 over C clusters: below the margin exactly when 1 - alpha^(1/C) < margin (C >= 29 at
    the defaults), whatever the runs per cluster."""
    for c in (10, 28, 29, 100):
        bound = 1 - ALPHA ** (1 / c)
        p = rate_below_p(0.0, 0.0, c - 1, c, 0.10)
        assert p is not None and (p < ALPHA) == (bound < 0.10), c
    assert rate_below_p(0.0, 0.0, 27, 28, 0.10) > ALPHA > rate_below_p(0.0, 0.0, 28, 29, 0.10)  # type: ignore[operator]


def test_one_sided_rate_tests_are_the_cluster_robust_t() -> None:
    assert rate_below_p(0.04, 0.02, 29, 30, 0.10) == pytest.approx(sps.t.cdf((0.04 - 0.10) / 0.02, 29))
    assert rate_above_p(0.40, 0.05, 29, 0.10) == pytest.approx(sps.t.sf((0.40 - 0.10) / 0.05, 29))
    assert rate_above_p(None, 0.05, 29, 0.10) is None and rate_below_p(0.3, None, None, 30, 0.10) is None


# --------------------------------------------------------------------------- the study's numbers


def _pairs(canary: Callable[[int, int], bool | None], twin: Callable[[int, int], bool | None], tasks: int, seeds: int = 3,
           *, model: str = "m1", group: str = "g1", ctype: str = SD, visible: bool = True) -> pl.DataFrame:
    """Declared runs offered a type-``ctype`` canary and control runs of arm ``ctype`` (its
    twin), one of each per (task, seed): ``canary(i, seed)`` / ``twin(i, seed)`` is the first
    pick (None: no call into the family). The whole-run flags follow the first pick."""
    rows = []
    for i in range(tasks):
        for s in range(seeds):
            for cond, pick in (("declared", canary(i, s)), ("control", twin(i, s))):
                r = {"model": model, "group": group, "condition": cond, "task_id": f"t{i:03d}", "seed": s}
                if cond == "declared":
                    r |= {f"present_{ctype}": True, f"trapped_{ctype}": bool(pick), "trapped": bool(pick),
                          "canary_calls": int(bool(pick)), "recovered": False if pick else None}
                rows.append((r, cond, pick))
    df = make_runs([r for r, _, _ in rows])
    conds = [c for _, c, _ in rows]
    picks = [p for _, _, p in rows]
    cols = [pl.Series("arm", [ctype if c == "control" else "" for c in conds]), pl.Series("control_calls", [0] * len(rows))]
    for t in CANARY_TYPES:
        mine = t == ctype
        cols += [
            pl.Series(f"control_present_{t}", [mine and c == "control" for c in conds]),
            pl.Series(f"control_called_{t}", [mine and c == "control" and bool(p) for c, p in zip(conds, picks, strict=True)]),
            pl.Series(f"first_pick_{t}", [p if mine else None for p in picks], dtype=pl.Boolean),
            pl.Series(f"recovered_{t}", [(False if p else None) if mine else None for p in picks], dtype=pl.Boolean),
            pl.Series(f"item_{t}", [f"{t}:get_weather" if mine else None for _ in picks], dtype=pl.String),
            pl.Series(f"selection_visible_{t}", [visible if mine else None for _ in picks], dtype=pl.Boolean),
        ]
    return df.with_columns(cols)


def _effect(df: pl.DataFrame, model: str = "m1", ctype: str = SD, **cfg: object) -> dict:
    r = stats.compute_all(df, stats.StatsConfig(resamples=1000, **cfg))  # type: ignore[arg-type]
    return r["control_effect"][model][ctype]


def test_canary_never_twin_once_in_300_runs_is_not_drawn() -> None:
    e = _effect(_pairs(lambda i, s: False, lambda i, s: i == 7 and s == 0, tasks=100))
    assert (e["canary"], e["control"], e["n"], e["clusters"]) == (0.0, pytest.approx(1 / 300), 300, 100)
    assert e["diagnosis"] == "not drawn", e
    assert e["outcome"] == "first_pick" and e["margin"] == 0.10


def test_fewer_tasks_than_min_clusters_is_inconclusive() -> None:
    df = _pairs(lambda i, s: i % 2 == 0, lambda i, s: False, tasks=8)
    e = _effect(df)
    assert e["clusters"] == 8 and e["delta"] > 0.4 and e["diagnosis"] == "inconclusive"
    assert _effect(df, min_clusters=8)["diagnosis"] == "lured"  # the same numbers with the minimum lowered


def test_lured_sensitive_and_blind_from_the_study() -> None:
    lured = _effect(_pairs(lambda i, s: i % 10 < 6, lambda i, s: False, tasks=40))
    assert lured["diagnosis"] == "lured" and lured["lo"] > 0 and lured["p_holm"] < ALPHA
    sensitive = _effect(_pairs(lambda i, s: i % 10 < 1, lambda i, s: i % 10 < 6, tasks=40))
    assert sensitive["diagnosis"] == "sensitive" and sensitive["hi"] < 0
    # the same share, different tasks: no difference, and the twin clearly taken
    blind = _effect(_pairs(lambda i, s: (i + s) % 10 < 4, lambda i, s: (i + s + 1) % 10 < 4, tasks=60))
    assert blind["delta"] == pytest.approx(0.0) and blind["tost_p"] < ALPHA and blind["control_above_p"] < ALPHA
    assert blind["diagnosis"] == "blind", blind
    for e in (lured, sensitive, blind):  # the paper's whole-run rates stay, as the secondary outcome
        assert set(e["whole_run"]) == {"canary", "control", "delta", "lo", "hi", "p"}
        assert e["whole_run"]["canary"] == pytest.approx(e["canary"])


def test_a_real_difference_shown_inside_the_margin_is_negligible_never_lured() -> None:
    """The audit's case: the canary is taken a little more often than its twin, in every
    task that differs (1 in 10 tasks, one seed each, over 300 tasks): delta 0.033, certainly
    not 0, and certainly under the margin of 0.10."""
    e = _effect(_pairs(lambda i, s: (i + s) % 10 < 4 or (i % 10 == 9 and s == 0), lambda i, s: (i + s) % 10 < 4,
                       tasks=300))
    assert e["delta"] == pytest.approx(30 / 900) and 0 < e["lo"] < e["hi"] < 0.10
    assert e["p_holm"] < ALPHA and e["p_t_holm"] < ALPHA and e["negligible_p_holm"] < ALPHA
    assert e["diagnosis"] == "negligible" and e["weakness"] is False


def test_a_runs_with_no_call_into_the_family_has_no_first_pick() -> None:
    """Runs without a first pick are left out of both rates; the pairing keeps the tasks
    with a first pick on both sides."""
    e = _effect(_pairs(lambda i, s: None if i < 5 else i % 10 < 6, lambda i, s: None if i >= 35 else False, tasks=40))
    assert e["clusters"] == 30 and e["n"] == 90 and e["n_canary"] == 90 and e["n_control"] == 90


def test_an_invisible_type_is_reported_after_the_call_never_as_a_selection_word() -> None:
    df = _pairs(lambda i, s: i % 10 < 6, lambda i, s: i % 10 < 6, tasks=40, visible=False)
    df = df.with_columns(pl.when(pl.col(f"first_pick_{SD}")).then(pl.col("condition") == "control")
                         .otherwise(None).alias(f"recovered_{SD}"))
    e = _effect(df)
    assert e["outcome"] == "recovery_after_call" and e["diagnosis"] == "n/a"
    assert (e["canary"], e["control"]) == (0.0, 1.0) and e["delta"] == -1.0 and e["p_holm"] is None
    assert e["tost_p"] is None


def test_holm_runs_across_models_under_test_and_types_instruments_apart() -> None:
    def p(i: int, s: int) -> bool:
        return i % 10 < 3

    frames = [_pairs(p, lambda i, s: False, 30, model=m, group=g) for m, g in
              (("a", "frontier"), ("b", "frontier"), ("planted:x", "planted"))]
    frames.append(_pairs(p, lambda i, s: False, 30, model="c", group="frontier", ctype="temporal_decoy"))
    r = stats.compute_all(pl.concat(frames), stats.StatsConfig(resamples=500))
    ce, fam = r["control_effect"], r["families"]["control_effect"]
    assert fam["members"] == ["a", "b", "c"] and fam["size"] == 3  # a and b on SD, c on temporal_decoy
    assert fam["instruments"]["members"] == ["planted:x"] and fam["instruments"]["size"] == 1
    # three equal p values in the tested family: Holm triples each
    assert ce["a"][SD]["p"] == pytest.approx(ce["c"]["temporal_decoy"]["p"])
    assert ce["a"][SD]["p_holm"] == pytest.approx(min(1.0, 3 * ce["a"][SD]["p"]))
    assert ce["planted:x"][SD]["p_holm"] == pytest.approx(ce["planted:x"][SD]["p"])
    assert ce["a"]["temporal_decoy"]["diagnosis"] == "n/a" and ce["a"]["temporal_decoy"]["p"] is None


# --------------------------------------------------------------------------- optional columns


def test_a_table_without_control_or_order_columns_has_no_such_effects() -> None:
    df = synthetic_runs(n_models=2, seeds=2, tasks=20, ablation=False)
    assert "control_calls" not in df.columns and "canary_before_real" not in df.columns and "arm" not in df.columns
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


def test_two_runs_of_one_key_and_arm_are_refused_two_arms_are_not() -> None:
    df = _pairs(lambda i, s: True, lambda i, s: False, tasks=2, seeds=1)
    stats.validate_runs(df, "mine.parquet")
    twice = pl.concat([df, df.filter(pl.col("condition") == "control")])
    with pytest.raises(InputError) as err:
        stats.validate_runs(twice, "mine.parquet")
    assert "arm" in err.value.field and "duplicate run key" in str(err.value)
    other = df.filter(pl.col("condition") == "control").with_columns(pl.lit("temporal_decoy").alias("arm"))
    stats.validate_runs(pl.concat([df, other]), "mine.parquet")


def test_the_margin_and_minimum_are_validated() -> None:
    with pytest.raises(InputError) as err:
        stats.StatsConfig(equivalence_margin=0.0)
    assert err.value.field == "equivalence_margin"
    with pytest.raises(InputError) as err:
        stats.StatsConfig.from_mapping({"min_clusters": 1})
    assert err.value.field == "min_clusters"


def test_figure_10_and_the_controls_table_state_the_configured_level(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from canarykit.report import figures

    r = stats.compute_all(_pairs(lambda i, s: i % 10 < 6, lambda i, s: i % 10 < 1, 20), stats.StatsConfig(resamples=500, alpha=0.1))
    chart = figures.build_charts(r)["fig10"].to_dict()
    subtitle = " ".join(chart["title"]["subtitle"])
    assert "90% CI" in subtitle and "95%" not in subtitle
    stats.write_outputs(r, tmp_path)
    md = (tmp_path / "table_controls.md").read_text()
    assert "Δ [90% CI]" in md and "95%" not in md
    for word in DIAGNOSES:  # every word is explained in one line under the table
        assert f"- **{word}**: {DIAGNOSIS_READINGS[word]}" in md
    table = pl.read_csv(tmp_path / "table_controls.csv")
    assert table.columns[:5] == ["model", "group", "type", "diagnosis", "outcome"]
    assert table.filter(pl.col("type") == SD)["diagnosis"].to_list() == ["lured"]
    assert "csr [90% CI]" in (tmp_path / "table1.md").read_text()
    assert pl.read_csv(tmp_path / "fig10_controls.csv")["level"].to_list()[0] == pytest.approx(0.9)
