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
    baselines_as_bon,
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
    row_setting_notes,
    write_cells,
)
from prm_lessons.artifacts.plots import (
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
from prm_lessons.tables import read_table

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
    return pd.DataFrame(columns=["prm", "benchmark", "metric", "n", "accuracy", "ci_low", "ci_high"])


def _empty_pb() -> pd.DataFrame:
    return pd.DataFrame(columns=["prm", "subset", "n", "error_acc", "correct_acc", "f1"])


def _bon(inputs) -> pd.DataFrame:
    bon = _bon_input(inputs)
    return bon if bon is not None else _empty_bon()


def _pb(inputs) -> pd.DataFrame:
    pb = _csv_or_empty(inputs, "processbench", load_processbench_table)
    return pb if pb is not None else _empty_pb()


def _emit_table(aid: str, cells: pd.DataFrame, outputs: Mapping, params: Mapping, inputs: Mapping,
                notes: list[str] | None = None) -> None:
    pub = load_published()
    write_cells(aid, cells, outputs, params, inputs)
    Path(outputs["tex"]).parent.mkdir(parents=True, exist_ok=True)
    Path(outputs["tex"]).write_text(table_tex(aid, cells, pub, params.get("run") or {}, notes))


def _emit_figure(aid: str, cells: pd.DataFrame, plot: Callable, outputs: Mapping, params: Mapping,
                 inputs: Mapping) -> None:
    pub = load_published()
    write_cells(aid, cells, outputs, params, inputs)
    save_figure(plot(cells, pub, params), aid, outputs, params)


# ------------------------------------------------------------------------------------------------
# Tables
# ------------------------------------------------------------------------------------------------

def table3_data_sources_bon(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 3 (BoN by training-data source)."""
    _emit_table("table3", build_table3(_bon(inputs), load_published(), params), outputs, params, inputs)


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
    _emit_table("table6", build_table6(_bon(inputs), load_published(), params), outputs, params, inputs)


def table7_processbench_main(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 7 (ProcessBench for every PRM and critic; the notes name each critic row's setting)."""
    pb = _pb(inputs)
    cells = build_table7(pb, load_published(), params)
    _emit_table("table7", cells, outputs, params, inputs, notes=row_setting_notes(pb, cells))


def table8_greedy_search(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 8 (PRM-guided greedy search beside the same policy's baselines) from results/tables/search.csv."""
    search = _csv_or_empty(inputs, "search", load_bon)
    _emit_table("table8", build_table8(search if search is not None else _empty_bon(), load_published(), params),
                outputs, params, inputs)


def table11_llm_judge_bon(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 11 (LLMs as Best-of-N verifiers, pointwise and pairwise) from results/tables/judge_bon.csv and
    bon.csv; the notes say the prompts are the project's and which problems the judge rows cover."""
    judges = _csv_or_empty(inputs, "judges", load_bon)
    raw = _csv_or_empty(inputs, "judges", pd.read_csv)
    cells = build_table11(_bon(inputs), judges if judges is not None else _empty_bon(), load_published(), params)
    _emit_table("table11", cells, outputs, params, inputs, notes=judge_table_notes(raw))


def table13_scoring_strategies(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 13 (last / product / min per PRM)."""
    _emit_table("table13", build_table13(_bon(inputs), load_published(), params), outputs, params, inputs)


# ------------------------------------------------------------------------------------------------
# Figures
# ------------------------------------------------------------------------------------------------

def fig2_consensus_filtering(*, inputs, outputs, params, wildcards, threads) -> None:
    """Figure 2 (consensus filtering)."""
    cells = build_summary_figure("fig2", _bon(inputs), _pb(inputs), load_published(), params)
    _emit_figure("fig2", cells, plot_fig2, outputs, params, inputs)


def fig3_hard_soft_bon(*, inputs, outputs, params, wildcards, threads) -> None:
    """Figure 3 (hard vs soft labels, Best-of-N)."""
    cells = build_summary_figure("fig3", _bon(inputs), _pb(inputs), load_published(), params)
    _emit_figure("fig3", cells, plot_fig3, outputs, params, inputs)


def fig4_hard_soft_processbench(*, inputs, outputs, params, wildcards, threads) -> None:
    """Figure 4 (hard vs soft labels, ProcessBench)."""
    cells = build_summary_figure("fig4", _bon(inputs), _pb(inputs), load_published(), params)
    _emit_figure("fig4", cells, plot_fig4, outputs, params, inputs)


def fig5_mc_threshold(*, inputs, outputs, params, wildcards, threads) -> None:
    """Figure 5 (MC hard-label threshold sweep; params.threshold_sweep, else a trainsets.csv input)."""
    bon, pb = _bon(inputs), _pb(inputs)
    sweep = params.get("threshold_sweep") or _csv_or_empty(inputs, "trainsets", pd.read_csv)
    _emit_figure("fig5", build_fig5(bon, pb, sweep, load_published(), params), plot_fig5, outputs, params, inputs)


def fig6_flawed_process(*, inputs, outputs, params, wildcards, threads) -> None:
    """Figure 6: judge-based flawed-process rate on the policy's correct answers, and ProcessBench's
    annotated rate per subset."""
    samples = {d: read_table(p, None) for d, p in analysis.named_inputs(inputs, "samples").items()}
    judges = {d: read_table(p, None) for d, p in analysis.named_inputs(inputs, "judge").items()}
    cases = read_table(inputs["cases"], None) if inputs.get("cases") and Path(inputs["cases"]).exists() else None
    rates = analysis.flaw_rates(samples, judges, cases)
    _emit_figure("fig6", build_fig6(rates, load_published(), params) if len(rates) else finish_cells([], params),
                 plot_fig6, outputs, params, inputs)


def fig7_tolerance_vs_bon(*, inputs, outputs, params, wildcards, threads) -> None:
    """Figure 7: BoN mean accuracy vs Table 5's average, per training-data source."""
    bon = _bon(inputs)
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
    _emit_figure("fig9", build_fig9(_bon(inputs), load_published(), params), plot_fig9, outputs, params, inputs)
