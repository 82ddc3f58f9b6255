"""Trap detector and per-run metrics on hand-built records whose answers are known."""

from __future__ import annotations

import random
from typing import Any

import polars as pl
import pytest
from fakes.records import call_events

from canarykit.detection.detect import calls_table, classify_calls, detect, run_metrics
from canarykit.detection.metrics import type_trap_rates
from canarykit.store.records import (
    BackendErrorEvent,
    FinalAnswerEvent,
    ModelTurnEvent,
    OfferedTool,
    RunRecord,
)
from canarykit.types import CANARY_TYPES

OFFERED = [
    OfferedTool("get_weather"),
    OfferedTool("get_forecast"),
    OfferedTool("get_weather_v2", "pt-get_weather", "parameter_trap", "get_weather"),
    OfferedTool("cached_weather", "sd-get_weather", "semantic_decoy", "get_weather"),
    OfferedTool("advanced_forecast", "cm-get_forecast", "capability_mirage", "get_forecast"),
]


def make_record(
    run_id: str,
    calls: list[tuple[str, str] | tuple[str, str, bool]],
    *,
    offered: list[OfferedTool] | None = None,
    error: bool = False,
    final: str | None = "done",
    correct: tuple[str, ...] = ("get_weather", "get_forecast"),
    **labels: Any,
) -> RunRecord:
    """A record whose tool calls are ``(name, status[, result_is_error])``."""
    events = [ModelTurnEvent(turn=0, n_tool_calls=len(calls))]
    events += call_events(calls)
    if error:
        events.append(
            BackendErrorEvent(turn=len(calls), message="HTTP 500", status_code=500)
        )
    elif final is not None:
        events.append(FinalAnswerEvent(turn=len(calls), content=final))
    base: dict[str, Any] = {
        "model": "m",
        "group": "g",
        "backend": "reference",
        "condition": "full",
        "pool": "standard",
        "seed": 0,
        "task_id": "t1",
        "difficulty": "easy",
    }
    base.update(labels)
    return RunRecord(
        run_id=run_id,
        identity={},
        offered=list(OFFERED if offered is None else offered),
        correct_tools=list(correct),
        events=events,
        final_answer=None if error else final,
        status="error" if error else "completed",
        error=error,
        **base,
    )


def test_recovery_after_invalid_args_parameter_trap() -> None:
    rec = make_record("r1", [("get_weather_v2", "invalid_arguments"), ("get_weather", "ok")])
    calls = classify_calls(rec)
    assert [c.cls for c in calls] == ["canary", "real"]
    assert (calls[0].canary_id, calls[0].canary_type, calls[0].shadows) == (
        "pt-get_weather",
        "parameter_trap",
        "get_weather",
    )
    m = run_metrics(rec)
    assert (m["tool_calls"], m["canary_calls"], m["unknown_calls"]) == (2, 1, 0)
    assert m["csr"] == 0.5
    assert m["trapped"] is True and m["recovered"] is True
    assert m["trapped_parameter_trap"] is True and m["trapped_semantic_decoy"] is False


def test_repeated_canary_calls_count_each_call_trap_once() -> None:
    rec = make_record(
        "r2", [("cached_weather", "ok"), ("cached_weather", "ok"), ("get_forecast", "ok")]
    )
    m = run_metrics(rec)
    assert m["canary_calls"] == 2 and m["tool_calls"] == 3
    assert m["csr"] == pytest.approx(2 / 3)
    assert m["trapped"] is True
    # get_forecast is not what the sprung canary (cached_weather) shadows: not a recovery
    assert m["recovered"] is False


def test_real_call_before_the_trap_is_not_a_recovery() -> None:
    m = run_metrics(make_record("r3", [("get_weather", "ok"), ("cached_weather", "ok")]))
    assert m["trapped"] is True and m["recovered"] is False


def test_no_trap_means_recovered_null() -> None:
    m = run_metrics(make_record("r4", [("get_weather", "ok"), ("get_forecast", "ok")]))
    assert m["csr"] == 0.0 and m["trapped"] is False and m["recovered"] is None


def test_zero_call_run_has_null_csr() -> None:
    m = run_metrics(make_record("r5", []))
    assert m["tool_calls"] == 0 and m["csr"] is None and m["zero_call"] is True
    assert m["trapped"] is False and m["recovered"] is None and m["error"] is False


def test_unknown_tool_and_malformed_arguments_are_unknown() -> None:
    rec = make_record(
        "r6",
        [
            ("no_such_tool", "unknown_tool"),
            ("get_weather", "malformed_arguments"),
            (
                "get_weather_v2",
                "malformed_arguments",
            ),  # malformed call of a canary: not a canary call
            ("ghost", "ok"),  # not offered, whatever the status says
            ("get_weather", "ok"),
        ],
    )
    assert [c.cls for c in classify_calls(rec)] == ["unknown"] * 4 + ["real"]
    m = run_metrics(rec)
    assert (m["tool_calls"], m["canary_calls"], m["unknown_calls"]) == (5, 0, 4)
    assert m["csr"] == 0.0 and m["trapped"] is False
    assert m["trapped_parameter_trap"] is False


def test_backend_error_run_is_inert() -> None:
    rec = make_record("r7", [("cached_weather", "ok"), ("get_weather", "ok")], error=True)
    m = run_metrics(rec)
    assert m["error"] is True
    assert (m["tool_calls"], m["canary_calls"], m["unknown_calls"]) == (0, 0, 0)
    assert (
        m["csr"] is None
        and m["trapped"] is False
        and m["recovered"] is None
        and m["zero_call"] is False
    )
    assert not any(m[f"present_{t}"] or m[f"trapped_{t}"] for t in CANARY_TYPES)
    # its calls stay visible in the per-call table
    assert calls_table([rec])["cls"].to_list() == ["canary", "real"]


def test_per_type_present_and_trapped_flags() -> None:
    m = run_metrics(make_record("r8", [("advanced_forecast", "ok"), ("get_forecast", "ok")]))
    present = {t for t in CANARY_TYPES if m[f"present_{t}"]}
    trapped = {t for t in CANARY_TYPES if m[f"trapped_{t}"]}
    assert present == {"parameter_trap", "semantic_decoy", "capability_mirage"}
    assert trapped == {"capability_mirage"}
    assert m["recovered"] is True
    baseline = run_metrics(make_record("r9", [("get_weather", "ok")], offered=OFFERED[:2]))
    assert not any(baseline[f"present_{t}"] for t in CANARY_TYPES)


def test_canary_without_shadow_recovers_on_any_correct_tool() -> None:
    offered = [OfferedTool("get_weather"), OfferedTool("mystery", "x", "temporal_decoy", None)]
    m = run_metrics(make_record("r10", [("mystery", "ok"), ("get_weather", "ok")], offered=offered))
    assert m["recovered"] is True


def test_calls_table_columns() -> None:
    rec = make_record("r1", [("get_weather_v2", "invalid_arguments"), ("get_weather", "ok")])
    calls, runs = detect([rec, make_record("r5", [])])
    assert calls.columns[:3] == ["run_id", "arm", "idx"]
    assert {"name", "cls", "canary_id", "canary_type", "shadows"} <= set(calls.columns)
    assert calls["idx"].to_list() == [1, 3]  # event positions in the record
    assert runs.height == 2 and runs["csr"].to_list() == [0.5, None]


def test_planted_agents_trap_rate_peaks_at_their_own_type() -> None:
    """Synthetic planted agents: in the full condition each canary type shadows a correct tool;
    a planted agent takes its own type's canary with probability 0.5 and otherwise the real
    tool (never another canary). Its highest trap rate must be its own type."""
    real = ["get_weather", "web_search"]
    offered = [OfferedTool(n) for n in real] + [
        OfferedTool(f"{t}_{r}", f"{t}:{r}", t, r) for t in CANARY_TYPES for r in real
    ]
    rng = random.Random(7)
    records = []
    for agent_type in CANARY_TYPES:
        for i in range(40):
            calls: list[tuple[str, str] | tuple[str, str, bool]] = []
            for r in real:
                if rng.random() < 0.5:
                    status = "invalid_arguments" if agent_type == "parameter_trap" else "ok"
                    calls.append((f"{agent_type}_{r}", status))
                    if rng.random() < 0.5:
                        calls.append((r, "ok"))
                else:
                    calls.append((r, "ok"))
            records.append(
                make_record(
                    f"{agent_type}-{i}",
                    calls,
                    offered=offered,
                    correct=tuple(real),
                    model=f"planted:{agent_type}",
                )
            )
    _, metrics = detect(records)
    df = metrics.with_columns(
        pl.Series("model", [r.model for r in records]),
        pl.lit("full").alias("condition"),
        pl.lit(None, dtype=pl.Boolean).alias("success"),
    )
    rates = type_trap_rates(df)
    for agent_type in CANARY_TYPES:
        mine = rates.filter(pl.col("model") == f"planted:{agent_type}").sort(
            "rate", descending=True
        )
        assert mine["canary_type"][0] == agent_type
        assert mine["rate"][0] > 0.5 and mine["rate"][1] == 0.0


# --------------------------------------------------------------------------- first pick (issue 19)

TWIN_SD = OfferedTool("fresh_weather", shadows="get_weather", control_id="control:sd-get_weather", control_type="semantic_decoy")


@pytest.mark.parametrize(
    ("calls", "offered", "want"),
    [
        # the first call into get_weather's family goes to the semantic decoy: its first pick
        ([("get_forecast", "ok"), ("cached_weather", "ok"), ("get_weather", "ok")], OFFERED,
         {"semantic_decoy": True, "parameter_trap": False, "capability_mirage": False}),
        # to another type's canary of the same tool: false for both shadowing types but that one
        ([("get_weather_v2", "invalid_arguments"), ("cached_weather", "ok")], OFFERED,
         {"semantic_decoy": False, "parameter_trap": True, "capability_mirage": None}),
        # to the real tool: false; an unknown call goes into no family
        ([("nope", "unknown_tool"), ("get_weather", "ok"), ("advanced_forecast", "ok")], OFFERED,
         {"semantic_decoy": False, "parameter_trap": False, "capability_mirage": True}),
        # the control list of arm semantic_decoy: its twin is the type's stand-in
        ([("fresh_weather", "ok")], [o for o in OFFERED if o.canary_type != "semantic_decoy"] + [TWIN_SD],
         {"semantic_decoy": True, "parameter_trap": False, "capability_mirage": None}),
        # no call at all: no first pick
        ([], OFFERED, {"semantic_decoy": None, "parameter_trap": None, "capability_mirage": None}),
    ],
)
def test_first_pick_per_type(calls: list, offered: list[OfferedTool], want: dict) -> None:
    m = run_metrics(make_record("r1", calls, offered=offered))
    assert {t: m[f"first_pick_{t}"] for t in want} == want
    assert {m[f"first_pick_{t}"] for t in CANARY_TYPES if t not in want} == {None}  # not offered: null


def test_item_recovery_and_visibility_per_type() -> None:
    offered = [o for o in OFFERED if o.canary_type != "semantic_decoy"] + [TWIN_SD]
    m = run_metrics(make_record("r1", [("fresh_weather", "ok"), ("get_forecast", "ok"), ("get_weather", "ok")],
                                offered=offered, condition="control", arm="semantic_decoy"))
    assert m["item_semantic_decoy"] == "sd-get_weather"  # the canary whose twin was offered
    assert m["item_capability_mirage"] == "cm-get_forecast" and m["item_temporal_decoy"] is None
    assert m["recovered_semantic_decoy"] is True  # the twin, then its real tool
    assert m["recovered_capability_mirage"] is None  # its stand-in was never called
    assert m["selection_visible_semantic_decoy"] is True and m["selection_visible_temporal_decoy"] is None
    hidden = [OfferedTool("get_weather"), OfferedTool("cached_weather", "sd-get_weather", "semantic_decoy", "get_weather",
                                                      selection_visible=False)]
    m = run_metrics(make_record("r2", [("cached_weather", "ok")], offered=hidden, correct=("get_weather",)))
    assert m["selection_visible_semantic_decoy"] is False and m["recovered_semantic_decoy"] is False
    err = run_metrics(make_record("r3", [("cached_weather", "ok")], error=True))
    assert {err[f"first_pick_{t}"] for t in CANARY_TYPES} == {None} and err["item_semantic_decoy"] is None


def test_the_calls_table_carries_the_runs_arm() -> None:
    rec = make_record("r1", [("fresh_weather", "ok")], offered=[OfferedTool("get_weather"), TWIN_SD], condition="control",
                      arm="semantic_decoy")
    calls, runs = detect([rec])
    assert calls["arm"].to_list() == ["semantic_decoy"] and calls["cls"].to_list() == ["control"]
    assert runs["first_pick_semantic_decoy"].to_list() == [True]
