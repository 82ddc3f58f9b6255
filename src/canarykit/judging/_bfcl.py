"""The ``bfcl`` judge: BFCL's own multi-turn checker (state and response) as an outcome judge.

For a run of a BFCL entry (a task of ``environment.kind: bfcl``, :mod:`canarykit.bfcl`) the
judge hands BFCL's ``multi_turn_checker`` what BFCL's own evaluation would: per user turn,
per model turn, the calls the run executed in its world, written as BFCL writes a
function-calling model's calls (``tool_result.executed``: a real tool's call, a twin's call as
its real tool's; a canary executes nothing in the world, so it is absent, as a call of a
function BFCL does not have would change nothing there), and the entry with its ground truth
as BFCL ships it. The checker replays both in fresh instances and compares, after every user
turn, the instances' state and whether the ground truth's results are among the run's.
As in BFCL, a run cut off before its last user turn (``truncated`` earlier) fails
(``force_terminated``); a run that ended with a backend error is not judged.

The checker keeps its instances in its module's globals under the model name it is given:
each verdict uses a name of its own and removes its instances afterwards.
"""

from __future__ import annotations

import hashlib
import threading
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ._base import JudgeInput, Verdict, register_judge, run_error_verdict

BFCL_JUDGE_VERSION: Final[str] = "1"
_LOCK = threading.Lock()


def run_calls(events: Sequence[Any], user_turns: int) -> list[list[list[str]]]:
    """Per user turn the run reached, per model turn with an executed call, the calls as BFCL
    strings (see the module doc); a user turn cut off counts as reached."""
    from ..bfcl.entries import call_string

    turns: list[dict[int, list[str]]] = [{}]
    for e in events:
        if e.kind == "final_answer":
            turns.append({})
        elif e.kind == "tool_result" and e.executed:
            turns[-1].setdefault(e.turn, []).extend(call_string(str(c["name"]), c.get("arguments") or {}) for c in e.executed)
    answered = len(turns) - 1
    reached = turns[:answered] if answered >= user_turns else turns[:answered + 1]
    return [[steps[k] for k in sorted(steps)] for steps in reached]


def _setup(run: JudgeInput) -> Mapping[str, Any] | None:
    setup = getattr(run.task, "setup", None)
    bfcl = setup.get("bfcl") if isinstance(setup, Mapping) else None
    return bfcl if isinstance(bfcl, Mapping) else None


def _checker_sha() -> str:
    import bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker as checker
    import bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils as utils

    h = hashlib.sha256()
    for module in (checker, utils):
        with open(str(module.__file__), "rb") as fh:
            h.update(fh.read())
    return h.hexdigest()


def check(decoded: list[list[list[str]]], setup: Mapping[str, Any]) -> dict[str, Any]:
    """BFCL's ``multi_turn_checker`` on one run (its instances removed afterwards)."""
    import bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils as utils
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

    name = f"canarykit_{uuid.uuid4().hex}"
    entry = {"id": setup["id"], "initial_config": setup.get("initial_config") or {},
             "involved_classes": list(setup["involved_classes"])}
    ground_truth = [list(t) for t in setup["ground_truth"]]
    with _LOCK:  # the checker's instances live in one module's globals
        try:
            return dict(multi_turn_checker(decoded, ground_truth, entry, str(setup["category"]), name))
        finally:
            for key in [k for k in vars(utils) if k.startswith(name)]:
                del vars(utils)[key]


class BfclJudge:
    """BFCL's multi-turn checker (module docstring). Deterministic."""

    name = "bfcl"
    deterministic = True

    def identity(self) -> dict[str, Any]:
        from ..bfcl.entries import bfcl_version, require_bfcl

        require_bfcl("params.yaml", "judge.primary.kind")
        return {"kind": "bfcl", "version": BFCL_JUDGE_VERSION, "bfcl_eval": bfcl_version(), "checker_sha256": _checker_sha()}

    def cache_inputs(self, run: JudgeInput) -> dict[str, Any]:
        setup = _setup(run)
        n = len(setup["ground_truth"]) if setup is not None else 0
        return {"setup": dict(setup) if setup is not None else None, "calls": run_calls(run.events, n), "error": run.error}

    def judge(self, run: JudgeInput) -> Verdict:
        if run.error:
            return run_error_verdict()
        setup = _setup(run)
        if setup is None:
            return Verdict(None, f"task {run.task_id!r} is not a BFCL entry (no setup.bfcl): the bfcl judge "
                                 "grades only studies of environment.kind bfcl", "error")
        decoded = run_calls(run.events, len(setup["ground_truth"]))
        if len(decoded) != len(setup["ground_truth"]):
            return Verdict(False, f"multi_turn:force_terminated: the run answered {len(decoded) - 1} of "
                                  f"{len(setup['ground_truth'])} user turns (cut off by agent.max_turns)", "ok")
        try:
            result = check(decoded, setup)
        except Exception as exc:  # the checker's own failure is not a verdict on the run
            return Verdict(None, f"BFCL's checker failed: {type(exc).__name__}: {exc}", "error")
        if result.get("valid"):
            return Verdict(True, "BFCL multi-turn checker: state and responses match the ground truth", "ok")
        reason = f"{result.get('error_type', 'multi_turn:invalid')}: {result.get('error_message', '')}"
        return Verdict(False, reason[:2000], "ok")


@register_judge("bfcl")
def _make_bfcl(cfg: dict[str, Any], **_: Any) -> BfclJudge:
    return BfclJudge()
