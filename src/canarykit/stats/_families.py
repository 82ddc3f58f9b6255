"""The test families of ``stats.json`` (``families``): each test's unit, members, size and
correction."""

from __future__ import annotations

from typing import Any

from ._cells import Study


def families(st: Study, result: dict[str, Any]) -> dict[str, Any]:
    fam: dict[str, Any] = {}
    a = st.config.alpha

    def add(name: str, test: str, unit: str, members: list[str], size: int, correction: str, **extra: Any) -> None:
        fam[name] = {"test": test, "unit": unit, "members": members, "size": size, "correction": correction, "alpha": a,
                     **extra}

    for c in st.conds:
        chi, kw, fh = result["chi2"][c], result["kruskal"][c], result["fisher_holm"][c]
        add(f"chi2.{c}", "Pearson chi-square, models x {canary, other} calls (paper)", "tool call",
            chi["models"], int(chi["p"] is not None), "none")
        add(f"kruskal.{c}", "Kruskal-Wallis on per-run csr (paper)", "task-run", kw["models"], int(kw["p"] is not None), "none")
        add(f"fisher_holm.{c}", "Fisher exact, pairs of models per type (paper)", "task-run", fh["models"], fh["n_contrasts"], "holm")
        add(f"spearman.{c}", "Spearman csr vs success, models pooled", "task-run (interval: " + st.boot.unit + ")",
            st.tested_in(c), int(result["spearman"][c]["rho"] is not None), "none")
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
    # The control effect: Holm across the models under test x types, the instruments (the
    # models stats.test_groups leaves out: reference and planted by default) as their own family.
    ce = result.get("control_effect", {})
    tested = set(st.tested)

    def selection(models: list[str]) -> int:
        return sum(1 for m in models for e in ce[m].values() if e.get("outcome") == "first_pick" and e.get("p") is not None)

    under_test = sorted(m for m in ce if m in tested)
    instruments = sorted(m for m in ce if m not in tested)
    add("control_effect", "first-pick rate of the canary (declared) minus of its twin (control, arm T) per type, paired by "
        "(task, seed), over the tasks with a first pick on both sides, cluster-robust t; diagnoses by equivalence (TOST and "
        "one-sided rate tests against the margin)", f"task-run clustered by {st.boot.unit}", under_test, selection(under_test),
        "holm across the models under test x types", margin=st.config.equivalence_margin, min_clusters=st.config.min_clusters,
        instruments={"members": instruments, "size": selection(instruments),
                     "correction": "holm across the instrument models x types (a family of their own)"},
        note="the instruments (reference and planted agents, or the groups stats.test_groups leaves out) are the "
             "known-answer checks of this effect: they get their p-values in a family of their own; a type invisible at "
             "selection (outcome recovery_after_call) is in neither family (p_holm null)")
    note = ("every model, the reference and planted agents included on purpose: they are the known-answer checks of "
            "this effect (stats.test_groups does not apply)")
    block = result.get("position_effect", {})
    per_model = [sum(1 for e in v["by_type"].values() if e.get("p") is not None) for v in block.values()]
    add("position_effect", "trap rate with canaries before minus after their real tools (declared + mirrored) per type, "
        "paired by (task, seed), cluster-robust t", f"task-run clustered by {st.boot.unit}", sorted(block),
        max(per_model, default=0), "holm across the canary types within each model", includes_instruments=True, note=note)
    return fam
