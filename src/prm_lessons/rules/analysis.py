"""Rule glue of workflow/rules/analysis.smk: one function per artifact rule, named after the rule, which
is the artifact's file stem (`fig5_mc_threshold` writes figures/fig5_mc_threshold.{pdf,png} and
results/tables/fig5_mc_threshold.{csv,json}). Names, paths and the params each rule receives:
prm_lessons.artifacts.registry; the cells: artifacts.cells; drawing: artifacts.plots; LaTeX:
artifacts.render; the Best-of-N bias analyses (Table 5, Figures 6 and 8): prm_lessons.analysis.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable, Mapping

import pandas as pd

from prm_lessons import analysis
from prm_lessons.artifacts.cells import (
    BON_FRAME,
    baselines_as_bon,
    build_fig1,
    build_fig5,
    build_fig6,
    build_fig8,
    build_fig9,
    build_summary_figure,
    build_table3,
    build_table4,
    build_table5,
    build_table6,
    build_table7,
    build_table8,
    build_table11,
    build_table13,
    fig8_bon_full,
    finish_cells,
    judge_table_notes,
    load_bon,
    load_cells,
    load_processbench_table,
    mc_experiment_comparability,
    policy_notes,
    preliminary_notes,
    row_setting_notes,
    select_rows,
    write_cells,
)
from prm_lessons.artifacts.plots import (
    plot_fig1,
    plot_fig2,
    plot_fig3,
    plot_fig4,
    plot_fig5,
    plot_fig6,
    plot_fig7,
    plot_fig8,
    plot_fig9,
    save_figure,
)
from prm_lessons.artifacts.published import load_published
from prm_lessons.artifacts.render import table_tex
from prm_lessons.tables import read_csv, read_table

log = logging.getLogger(__name__)


# ------------------------------------------------------------------------------------------------
# Reading the inputs, writing the outputs
# ------------------------------------------------------------------------------------------------

def _csv_or_empty(inputs: Mapping, name: str, loader: Callable) -> pd.DataFrame | None:
    path = inputs.get(name)
    if not path or not Path(path).exists():
        log.warning("input '%s' is missing; artifact rows that need it are skipped", name)
        return None
    return loader(path)


def _bon_input(inputs) -> pd.DataFrame | None:
    bon = _csv_or_empty(inputs, "bon", load_bon)
    if (bon is None or bon.empty) and inputs.get("baselines") and Path(inputs["baselines"]).exists():
        bon = baselines_as_bon(inputs["baselines"])
    return bon


def _empty_bon() -> pd.DataFrame:
    return pd.DataFrame(columns=BON_FRAME)


def _empty_pb() -> pd.DataFrame:
    return pd.DataFrame(columns=["prm", "subset", "n", "error_acc", "correct_acc", "f1"])


def _bon(inputs, params, policy_key: str = "policy", n=None) -> pd.DataFrame:
    """bon.csv (bon_baselines.csv when no PRM was scored) restricted to the artifact's policy
    (params[policy_key]: `policy` = analysis.policy, `second_policy` for Tables 9, 12, 14, 16) and N
    (`n`, else params n = analysis.n or bon.n), so other policies' and other N's rows never mix in."""
    bon = _bon_input(inputs)
    bon = bon if bon is not None else _empty_bon()
    return select_rows(bon, params.get(policy_key), params.get("n") if n is None else n,
                       primary=policy_key == "policy")


def _pb(inputs) -> pd.DataFrame:
    pb = _csv_or_empty(inputs, "processbench", load_processbench_table)
    return pb if pb is not None else _empty_pb()


def _emit_table(aid: str, cells: pd.DataFrame, outputs: Mapping, params: Mapping, inputs: Mapping,
                notes: list[str] | None = None) -> None:
    pub = load_published()
    cells = mc_experiment_comparability(aid, cells, pub, params)
    write_cells(aid, cells, outputs, params, inputs)
    Path(outputs["tex"]).parent.mkdir(parents=True, exist_ok=True)
    Path(outputs["tex"]).write_text(table_tex(aid, cells, pub, params.get("run") or {}, notes))


def _emit_figure(aid: str, cells: pd.DataFrame, plot: Callable, outputs: Mapping, params: Mapping,
                 inputs: Mapping) -> None:
    pub = load_published()
    cells = mc_experiment_comparability(aid, cells, pub, params)
    write_cells(aid, cells, outputs, params, inputs)
    save_figure(plot(cells, pub, params), aid, outputs, params)


# ------------------------------------------------------------------------------------------------
# Tables
# ------------------------------------------------------------------------------------------------

def table3_data_sources_bon(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 3 (BoN by training-data source)."""
    _emit_table("table3", build_table3(_bon(inputs, params), load_published(), params), outputs, params, inputs,
                notes=policy_notes(params))


def table4_data_sources_processbench(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 4 (ProcessBench by training-data source)."""
    _emit_table("table4", build_table4(_pb(inputs), load_published(), params), outputs, params, inputs)


def table5_prm_tolerance(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 5 from every PRM's ProcessBench predictions."""
    preds = {name: read_table(path, None) for name, path in analysis.named_inputs(inputs, "predictions").items()}
    tol = analysis.tolerance_accuracy(preds)
    _emit_table("table5", build_table5(tol, load_published(), params), outputs, params, inputs)


def table6_bon_main(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 6 (main Best-of-N results with pass@N / maj@N)."""
    _emit_table("table6", build_table6(_bon(inputs, params), load_published(), params), outputs, params, inputs,
                notes=policy_notes(params))


def table7_processbench_main(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 7 (ProcessBench for every PRM and critic; the notes name each critic row's setting)."""
    pb = _pb(inputs)
    cells = build_table7(pb, load_published(), params)
    _emit_table("table7", cells, outputs, params, inputs, notes=row_setting_notes(pb, cells))


def table8_greedy_search(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 8 (PRM-guided greedy search beside the same policy's baselines) from results/tables/search.csv."""
    search = _csv_or_empty(inputs, "search", lambda p: load_bon(p, "search_csv"))
    _emit_table("table8", build_table8(search if search is not None else _empty_bon(), load_published(), params),
                outputs, params, inputs)


def _judge_rows(inputs, params, policy_key: str) -> tuple[pd.DataFrame, pd.DataFrame | None, list[str]]:
    """results/tables/judge_bon.csv restricted to the table's policy: (rows as load_bon reads them, the raw
    rows for judge_table_notes, notes). A table without a `policy` column holds the primary policy's judges
    only, so the second policy's table gets no judge rows and a note saying why."""
    judges = _csv_or_empty(inputs, "judges", lambda p: load_bon(p, "judge_bon_csv"))
    raw = _csv_or_empty(inputs, "judges", lambda p: read_csv(p, "judge_bon_csv"))
    if judges is None or raw is None:
        return _empty_bon(), None, []
    name = params.get(policy_key)
    if "policy" in raw.columns and raw["policy"].notna().any():
        raw = raw[raw["policy"].astype(str) == str(name)]
    elif policy_key != "policy":
        return _empty_bon(), None, [
            "The LLM judges ran on the primary policy only (results/tables/judge_bon.csv names no policy), so "
            "this table has no judge rows; its pass@N, maj@N and PRM rows are this policy's."]
    return select_rows(judges, name, None, primary=policy_key == "policy"), raw, []


def _judge_table(aid: str, inputs, outputs, params, policy_key: str) -> None:
    judges, raw, notes = _judge_rows(inputs, params, policy_key)
    cells = build_table11(_bon(inputs, params, policy_key), judges, load_published(), params, tid=aid)
    _emit_table(aid, cells, outputs, params, inputs,
                notes=judge_table_notes(raw) + notes + policy_notes(params, policy_key))


def table11_llm_judge_bon(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 11 (LLMs as Best-of-N verifiers, pointwise and pairwise) from results/tables/judge_bon.csv and
    bon.csv; the notes say the prompts are the project's and which problems the judge rows cover."""
    _judge_table("table11", inputs, outputs, params, "policy")


def table12_llm_judge_bon_second_policy(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 12: Table 11 on the second policy (analysis.second_policy); judge rows only where
    judge_bon.csv names that policy."""
    _judge_table("table12", inputs, outputs, params, "second_policy")


def table1_preliminary_bon(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 1 (preliminary trials, Best-of-N): pass@N, maj@N and the rows keyed human / mc_hard / mc_soft,
    Table 3's builder on analysis.policy's rows; the notes name the variants that stand in for the paper's
    preliminary (3M) models."""
    cells = build_table3(_bon(inputs, params), load_published(), params, tid="table1", baselines=True)
    _emit_table("table1", cells, outputs, params, inputs, notes=preliminary_notes(cells, params) + policy_notes(params))


def table2_preliminary_processbench(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 2 (preliminary trials, ProcessBench): Table 4's builder on the rows keyed human / mc_hard /
    mc_soft; notes as in Table 1."""
    cells = build_table4(_pb(inputs), load_published(), params, tid="table2")
    _emit_table("table2", cells, outputs, params, inputs, notes=preliminary_notes(cells, params))


def table9_bon_second_policy(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 9: Table 6 on the second policy's rows (analysis.second_policy)."""
    _emit_table("table9", build_table6(_bon(inputs, params, "second_policy"), load_published(), params, tid="table9"),
                outputs, params, inputs, notes=policy_notes(params, "second_policy"))


def table10_bon_large_n(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 10: Table 6 at analysis.table10's N on its benchmarks (analysis.policy's rows; the paper:
    Best-of-64 on MATH500, AIME24, AMC23, Minerva Math, GaoKao 2023 En, OlympiadBench)."""
    t10 = params.get("table10") or {}
    n, benches = t10.get("n"), list(t10.get("benchmarks") or [])
    own = {**{k: params.get(k) for k in ("run", "aggregation", "paper_rows", "paper_columns")},
           "n": n, "benchmarks": benches}
    cells = build_table6(_bon(inputs, params, n=n), load_published(), own, tid="table10") if n else finish_cells([], own)
    notes = [f"Best-of-{n} on {', '.join(benches) or 'every benchmark evaluated at that N'}: every N is evaluated on "
             "the first N samples of each problem of one sampling pass (bon.more_n), not on new draws."] if n else []
    _emit_table("table10", cells, outputs, params, inputs, notes=notes + policy_notes(params))


def _chinese_table(aid: str, inputs, outputs, params, policy_key: str) -> None:
    """Tables 15 / 16: Table 13's builder on analysis.chinese_benchmarks (no rows when it is empty)."""
    own = {**{k: params.get(k) for k in ("run", "aggregations", "n", "paper_rows", "paper_columns")},
           "benchmarks": list(params.get("chinese_benchmarks") or [])}
    bon = _bon(inputs, params, policy_key)
    cells = build_table13(bon, load_published(), own, tid=aid) if own["benchmarks"] else finish_cells([], own)
    _emit_table(aid, cells, outputs, params, inputs, notes=policy_notes(params, policy_key))


def table13_scoring_strategies(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 13 (last / product / min per PRM)."""
    _emit_table("table13", build_table13(_bon(inputs, params), load_published(), params), outputs, params, inputs,
                notes=policy_notes(params))


def table14_scoring_strategies_second_policy(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 14: Table 13 on the second policy's rows (analysis.second_policy)."""
    _emit_table("table14", build_table13(_bon(inputs, params, "second_policy"), load_published(), params,
                                         tid="table14"), outputs, params, inputs,
                notes=policy_notes(params, "second_policy"))


def table15_scoring_strategies_chinese(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 15: last / product / min on the Chinese benchmarks (analysis.chinese_benchmarks), analysis.policy."""
    _chinese_table("table15", inputs, outputs, params, "policy")


def table16_scoring_strategies_chinese_second_policy(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 16: Table 15 on the second policy's rows (analysis.second_policy)."""
    _chinese_table("table16", inputs, outputs, params, "second_policy")


# ------------------------------------------------------------------------------------------------
# Figures
# ------------------------------------------------------------------------------------------------

def fig1_overview(*, inputs, outputs, params, wildcards, threads) -> None:
    """Figure 1: Best-of-N average and ProcessBench average F1 per PRM, pass@N / maj@N of
    results/tables/bon_baselines.csv (this policy and N) and o1-mini's published F1 as reference lines."""
    base = _csv_or_empty(inputs, "baselines", baselines_as_bon)
    if base is not None:
        base = select_rows(base, params.get("policy"), params.get("n"))
    cells = build_fig1(_bon(inputs, params), _pb(inputs), base, load_published(), params)
    _emit_figure("fig1", cells, plot_fig1, outputs, params, inputs)


def fig2_consensus_filtering(*, inputs, outputs, params, wildcards, threads) -> None:
    """Figure 2 (consensus filtering)."""
    cells = build_summary_figure("fig2", _bon(inputs, params), _pb(inputs), load_published(), params)
    _emit_figure("fig2", cells, plot_fig2, outputs, params, inputs)


def fig3_hard_soft_bon(*, inputs, outputs, params, wildcards, threads) -> None:
    """Figure 3 (hard vs soft labels, Best-of-N)."""
    cells = build_summary_figure("fig3", _bon(inputs, params), _pb(inputs), load_published(), params)
    _emit_figure("fig3", cells, plot_fig3, outputs, params, inputs)


def fig4_hard_soft_processbench(*, inputs, outputs, params, wildcards, threads) -> None:
    """Figure 4 (hard vs soft labels, ProcessBench)."""
    cells = build_summary_figure("fig4", _bon(inputs, params), _pb(inputs), load_published(), params)
    _emit_figure("fig4", cells, plot_fig4, outputs, params, inputs)


def fig5_mc_threshold(*, inputs, outputs, params, wildcards, threads) -> None:
    """Figure 5 (MC hard-label threshold sweep; params.threshold_sweep, else a trainsets.csv input)."""
    bon, pb = _bon(inputs, params), _pb(inputs)
    sweep = params.get("threshold_sweep") or _csv_or_empty(inputs, "trainsets", lambda p: read_csv(p, "trainsets_csv"))
    _emit_figure("fig5", build_fig5(bon, pb, sweep, load_published(), params), plot_fig5, outputs, params, inputs)


def fig6_flawed_process(*, inputs, outputs, params, wildcards, threads) -> None:
    """Figure 6: judge-based flawed-process rate on the policy's correct answers, and ProcessBench's
    annotated rate per subset."""
    # the paper's Figure 6 judged N (8) responses per query: a benchmark sampled at a larger N for another
    # table (Table 10's 64) counts only its first N, as rule judge labels only those (plan.judge_sample_cap)
    cap = params.get("n")
    samples = {d: (df[df["sample_idx"] < int(cap)] if cap and "sample_idx" in df.columns else df)
               for d, df in ((d, read_table(p, None)) for d, p in analysis.named_inputs(inputs, "samples").items())}
    judges = {d: read_table(p, None) for d, p in analysis.named_inputs(inputs, "judge").items()}
    cases = read_table(inputs["cases"], None) if inputs.get("cases") and Path(inputs["cases"]).exists() else None
    rates = analysis.flaw_rates(samples, judges, cases)
    _emit_figure("fig6", build_fig6(rates, load_published(), params) if len(rates) else finish_cells([], params),
                 plot_fig6, outputs, params, inputs)


def fig7_tolerance_vs_bon(*, inputs, outputs, params, wildcards, threads) -> None:
    """Figure 7: BoN mean accuracy vs Table 5's average, per training-data source."""
    bon = _bon(inputs, params)
    tol = load_cells(inputs["table5"]) if Path(inputs["table5"]).exists() else None
    cells = build_summary_figure("fig7", bon, None, load_published(), params, tol=tol)
    _emit_figure("fig7", cells, plot_fig7, outputs, params, inputs)


def fig8_min_at_last_step(*, inputs, outputs, params, wildcards, threads) -> None:
    """Figure 8: where the minimum step score of Best-of-N responses falls (all of them, and the selected ones)."""
    scores = {}
    for name, path in analysis.named_inputs(inputs, "scores").items():
        prm, _, bench = name.partition("__")
        scores[(prm, bench)] = read_table(path, None)
    shares = analysis.min_at_last_shares(scores, params.get("aggregation", "product"), params.get("n"))
    for _, r in shares[shares["benchmark"] == "all"].iterrows():
        log.info("fig8 %s, %s responses: %d of %d scored with the minimum at the final step; %d final steps "
                 "only tie an earlier minimum (counted as not at the end); %d one-step responses", r["prm"],
                 r["population"], r["n_min_at_last"], r["n_scored"], r["n_min_tied"], r["n_single_step"])
    pub = load_published()
    _emit_figure("fig8", build_fig8(shares, pub, params, fig8_bon_full(scores, pub, params)), plot_fig8, outputs,
                 params, inputs)


def fig9_scoring_strategies(*, inputs, outputs, params, wildcards, threads) -> None:
    """Figure 9 (Best-of-N by scoring strategy per training-data source)."""
    _emit_figure("fig9", build_fig9(_bon(inputs, params), load_published(), params), plot_fig9, outputs, params, inputs)
