"""The test families of ``stats.json``: each test's unit, members, size, correction and role
(``families``), and the declared primary hypotheses (``primary``).

**Primary and secondary.** ``stats.primary`` names the families a study is run to test
(default: ``control_effect``, whose tests decide the diagnoses, and ``trap_rate``). Within
each primary family Holm's correction runs across every (model under test, canary type)
member at ``stats.alpha``; every other p-value of ``stats.json`` is secondary (exploratory,
``families.<name>.role: secondary``), and the paper's tests, which treat runs as
independent, are ``replication`` (the ``replication`` block).

``trap_rate``: per model under test and type, the one-sided test of "the trap rate (the
``declared`` condition, else ``full``) exceeds ``stats.equivalence_margin``": the model
is drawn by the type more than negligibly. ``control_effect``: the two-sided test of
``delta = 0`` of each entry (the diagnoses' lured / sensitive). ``position_effect`` and
``ablation``: the per-type two-sided tests of those blocks.
"""

from __future__ import annotations

from typing import Any

from ..types import CANARY_TYPES
from ._cells import Study
from ._tests import holm
from ._wald import cluster_robust_rate, rate_p_value

#: The paper's tests, which treat runs (or calls) as independent: the ``replication`` block.
REPLICATION_TESTS: tuple[str, ...] = ("chi2", "kruskal", "fisher_holm", "spearman")
REPLICATION_NOTE = ("the paper's tests, reproduced for comparison: they assume independent runs (chi-square: independent "
                    "tool calls), which runs of one task are not; read the task-clustered results instead")


def _role(name: str, primary: tuple[str, ...]) -> str:
    base = name.split(".", 1)[0]
    if base in REPLICATION_TESTS:
        return "replication"
    return "primary" if base in primary else "secondary"


def families(st: Study, result: dict[str, Any]) -> dict[str, Any]:
    fam: dict[str, Any] = {}
    a = st.config.alpha
    rep = result["replication"]

    def add(name: str, test: str, unit: str, members: list[str], size: int, correction: str, **extra: Any) -> None:
        fam[name] = {"test": test, "unit": unit, "members": members, "size": size, "correction": correction, "alpha": a,
                     "role": _role(name, st.config.primary), **extra}

    for c in st.conds:
        chi, kw, fh = rep["chi2"][c], rep["kruskal"][c], rep["fisher_holm"][c]
        add(f"chi2.{c}", "Pearson chi-square, models x {canary, other} calls (paper)", "tool call",
            chi["models"], int(chi["p"] is not None), "none")
        add(f"kruskal.{c}", "Kruskal-Wallis on per-run csr (paper)", "task-run", kw["models"], int(kw["p"] is not None), "none")
        add(f"fisher_holm.{c}", "Fisher exact, pairs of models per type (paper)", "task-run", fh["models"], fh["n_contrasts"], "holm")
        add(f"spearman.{c}", "Spearman csr vs success, models pooled (paper)", "task-run (interval: " + st.boot.unit + ")",
            st.tested_in(c), int(rep["spearman"][c]["rho"] is not None), "none")
        sbm = result["spearman_by_model"][c]
        members = [m for m in st.tested_in(c) if sbm.get(m, {}).get("p_bootstrap") is not None]
        add(f"spearman_by_model.{c}", "Spearman csr vs success within each model under test; p_bootstrap (interval "
            "inversion, " + st.boot.unit + " resampling) Holm-adjusted across them as p_bootstrap_holm",
            "task-run (interval: " + st.boot.unit + ")", members, len(members), "holm")
        fr, gt, co, asn = result["friedman"][c], result["gee_trap"][c], result["contrasts"][c], result["association"][c]
        add(f"friedman.{c}", "Friedman across models on per-task mean csr", "task", fr["models"], int(fr["p"] is not None), "none")
        add(f"gee_trap.{c}", "GEE logistic trapped ~ model, exchangeable within task, robust Wald", "task-run clustered by task",
            gt["groups"], int(gt["p"] is not None), "none")
        tp, tt = result["trap_permutation"][c], result["trap_test"][c]
        add(f"trap_permutation.{c}", "permutation test of trapped ~ model: model labels of (task, model) blocks permuted "
            "within each task, statistic sum_m N_m (rate_m - pooled)^2", "task (blocks of a model's runs on a task)",
            tp["groups"], int(tp["p"] is not None), "none")
        add(f"trap_test.{c}", "the omnibus trap-rate test that answers: gee_trap when it keeps every model and converges, "
            "else trap_permutation", "task", tt["models"], int(tt["p"] is not None), "none", answered_by=tt["test"],
            gee_not_used=tt["gee_not_used"])
        add(f"contrasts.{c}", "trap rate difference per type and pair of models, cluster-robust t", f"task-run clustered by {st.boot.unit}",
            co["models"], co["n_contrasts"], "holm")
        add(f"association.{c}", "GEE logistic success ~ csr + model, exchangeable within task", "task-run clustered by task",
            asn["strata"], int(asn["p"] is not None), "none")
    # The control effect: Holm across the models under test x types; each instrument (the models
    # stats.test_groups leaves out: reference and planted by default) across its types, on its own.
    ce = result.get("control_effect", {})
    tested = set(st.tested)

    def selection(models: list[str]) -> int:
        """The tests of the models' selection entries (a family's size)."""
        return sum(1 for m in models for e in ce[m].values() if e.get("outcome") == "first_pick" and e.get("p") is not None)

    under_test = sorted(m for m in ce if m in tested)
    instruments = sorted(m for m in ce if m not in tested)
    add("control_effect", "first-pick rate of the canary (declared) minus of its twin (control, arm T) per type, paired by "
        "(task, seed), over the tasks with a first pick on both sides: randomisation test of sides (p) and cluster-robust t "
        "(p_t; tasks, tools and wordings crossed); each word a Holm-adjusted claim (lured / sensitive: both tests; "
        "negligible, blind, not drawn: intersection-union tests with TOST and one-sided rate tests against the margin)",
        f"task-run clustered by {st.boot.unit}", under_test, selection(under_test),
        "holm across the models under test x types", margin=st.config.equivalence_margin, min_clusters=st.config.min_clusters,
        instruments={"members": instruments, "size": max((selection([m]) for m in instruments), default=0),
                     "correction": "holm across the canary types within each instrument (a family per instrument)"},
        note="the instruments (reference and planted agents, or the groups stats.test_groups leaves out) are the "
             "known-answer checks of this effect: each is a check of its own, with its p-values in a family of its own "
             "across its types; a type invisible at "
             "selection (outcome recovery_after_call) is in neither family (p_holm null)")
    note = ("every model, the reference and planted agents included on purpose: they are the known-answer checks of "
            "this effect (stats.test_groups does not apply)")
    block = result.get("position_effect", {})
    per_model = [sum(1 for e in v["by_type"].values() if e.get("p") is not None) for v in block.values()]
    add("position_effect", "trap rate with canaries before minus after their real tools (declared + mirrored) per type, "
        "paired by (task, seed), cluster-robust t", f"task-run clustered by {st.boot.unit}", sorted(block),
        max(per_model, default=0), "holm across the canary types within each model", includes_instruments=True, note=note)
    return fam


# --------------------------------------------------------------------------- the primary block


def _holm_members(rows: list[tuple[str, str, dict[str, Any]]], alpha: float) -> None:
    live = [e for _, _, e in rows if e.get("p") is not None]
    for e, ph in zip(live, holm([e["p"] for e in live]), strict=True):
        e["p_holm"] = float(ph)
    for _, _, e in rows:
        e.setdefault("p_holm", None)
        e["significant"] = bool(e["p_holm"] is not None and e["p_holm"] < alpha)


def _trap_rate_family(st: Study, result: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[str, str, dict[str, Any]]]]:
    cond = "declared" if "declared" in st.conds else ("full" if "full" in st.conds else None)
    margin = st.config.equivalence_margin
    head = {"hypothesis": f"the trap rate exceeds stats.equivalence_margin ({margin:g}): the model is drawn by the type "
                          "more than negligibly", "test": "one-sided cluster-robust t (the study's unit), rate > margin",
            "condition": cond, "margin": margin}
    rows: list[tuple[str, str, dict[str, Any]]] = []
    if cond is None:
        return head, rows
    ci = result["trap_rate_ci"][cond]
    for m in st.tested_in(cond):
        cell = st.cell(cond, m)
        for j, t in enumerate(CANARY_TYPES):
            s = cell.trap_sample(j)
            if not s.n:
                continue
            rate = cluster_robust_rate(st.boot, s)
            e = ci[m][t]
            rows.append((m, t, {"rate": e["rate"], "lo": e["lo"], "hi": e["hi"], "n": s.n, "clusters": s.clusters,
                                "few_clusters": e["few_clusters"], "p": rate_p_value(rate, margin, "greater")}))
    return head, rows


def _entries(block: dict[str, Any], models: list[str], by_type: bool) -> list[tuple[str, str, dict[str, Any]]]:
    rows = []
    for m in models:
        per = block.get(m) or {}
        per = per.get("by_type", {}) if by_type else per
        for t in CANARY_TYPES:
            e = per.get(t)
            if e is not None and e.get("p") is not None:
                rows.append((m, t, {"estimate": e.get("delta"), "lo": e.get("lo"), "hi": e.get("hi"), "p": e["p"],
                                    "few_clusters": e.get("few_clusters")}))
    return rows


def primary(st: Study, result: dict[str, Any]) -> dict[str, Any]:
    """The ``primary`` block: per declared family its hypothesis, members (``model/type``),
    size, correction and each member's ``p``, ``p_holm`` and ``significant`` (module docstring)."""
    a = st.config.alpha
    tested = sorted(set(st.tested))
    out: dict[str, Any] = {
        "families": list(st.config.primary), "alpha": a,
        "note": "Holm across model x type within each primary family (models under test only; the reference and planted "
                "agents are instruments, never members). Every other p-value in stats.json is secondary "
                "(families.<name>.role); the replication block holds the paper's tests, which assume independent runs.",
    }
    for name in st.config.primary:
        head: dict[str, Any]
        if name == "trap_rate":
            head, rows = _trap_rate_family(st, result)
        elif name == "control_effect":
            head = {"hypothesis": "the canary's tell changes nothing: canary and twin are taken alike (lured / sensitive)",
                    "test": "randomisation test of sides within (task, seed) pairs, control_effect.<model>.<type>.p "
                            "(exact under the hypothesis); the words also need the interval's t test (p_t_holm)"}
            rows = _entries(result.get("control_effect", {}), tested, by_type=False)
        elif name == "position_effect":
            head = {"hypothesis": "the trap rate does not depend on the canary's side of its real tool",
                    "test": "two-sided cluster-robust t of position_effect.<model>.by_type.<type>.p"}
            rows = _entries(result.get("position_effect", {}), tested, by_type=True)
        else:
            head = {"hypothesis": "the subtle pool's trap rate equals the standard pool's",
                    "test": "two-sided cluster-robust t of ablation_by_type.<model>.<type>.p"}
            rows = _entries(result.get("ablation_by_type", {}), tested, by_type=False)
        _holm_members(rows, a)
        results: dict[str, Any] = {}
        for m, t, e in rows:
            results.setdefault(m, {})[t] = e
        out[name] = {**head, "correction": "holm across model x type", "members": [f"{m}/{t}" for m, t, _ in rows],
                     "size": len(rows), "n_significant": sum(1 for *_, e in rows if e["significant"]), "results": results}
    return out
