"""Figure 6: what it reads, its params, its cells builder, its plot and its rule function `run`."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from prm_lessons.artifacts.cells import finish_cells
from prm_lessons.artifacts.plots import (
    ORIGIN_PAPER,
    ORIGIN_RUN,
    WILSON_CI,
    bar_limits,
    draw_bars,
    emit_figure,
    figure_style,
    figure_width,
    finish_layout,
    legend_small,
    mark_empty,
    origin_label,
    origin_title,
)
from prm_lessons.artifacts.published import load_published, lookup, paper_column, published_long
from prm_lessons.evaluation import bias_analysis as analysis
from prm_lessons.labels import annotation
from prm_lessons.tables import read_table

ID = "fig6"
KIND = "figure"
SOURCE = "Figure 6"
TITLE = "Unreliable policy: share of correct-answer responses whose process is flawed"
SECTION = "Best-of-N bias"
# what the rule reads: input groups of workflow/rules/analysis.smk (ARTIFACT_INPUT_GROUPS)
INPUTS = ("flaws",)
# the config `analysis.*` keys the rule receives as params (besides `run`)
PARAMS = ("n", "paper_columns", "figure")


def build_fig6(rates: pd.DataFrame, pub, params):
    """Figure 6 cells from analysis.flaw_rates output."""
    pub_long = published_long(pub, "fig6")
    rows = []
    for _, r in rates.iterrows():
        key = "policy" if str(r["source"]).startswith("policy_") else "processbench"
        row = analysis.FLAW_ROWS.get(
            r["source"], "ProcessBench annotation")
        pc = paper_column(r["dataset"], params)
        pv, plabel = lookup(pub_long, key, pc)
        rows.append({"row": row, "key": key, "label": plabel, "column": r["dataset"], "paper_column": pc,
                     "n": r["n_judged"], "value": r["rate"], "ci_low": r["ci_low"], "ci_high": r["ci_high"],
                     # the paper's policy bars are HUMAN annotations of random correct-answer responses: only
                     # this run's human labels of its annotation sheet are compared with them; an LLM judge's
                     # verdicts (or the checker's, which sees only arithmetic) are another measurement (shown
                     # beside them, never differenced). ProcessBench's share is counted from its data the same
                     # way on both sides.
                     "published": pv, "comparable": key == "processbench" or r["source"] == "policy_human"})
    return finish_cells(rows, params)


def plot_fig6(cells: pd.DataFrame, pub: Mapping, params: Mapping):
    """Figure 6: flawed-process rate among correct answers; this run (judge on the policy's samples,
    ProcessBench's annotation of its cases) over the paper (human annotation, ProcessBench). This run's bars
    carry their n (a share of 3 responses is not one of 300), the panels' legends sit above them."""
    plt, sns = figure_style(params)
    pub_long = published_long(pub, "fig6")
    run = cells.copy()
    run["series"] = run["row"]
    run["x"] = run["column"]
    paper = pub_long.rename(columns={"published": "value"}).copy()
    paper["series"] = paper["key"].map({"policy": "policy samples, human annotation",
                                         "processbench": "ProcessBench annotation"})
    paper["x"] = paper["column"].map(lambda c: pub["columns"].get(c, c))
    paper["ci_low"] = paper["ci_high"] = np.nan
    fig, axes = plt.subplots(2, 1, figsize=(figure_width(params), 3.8), squeeze=False)
    for i, (origin, d) in enumerate(((ORIGIN_RUN, run), (ORIGIN_PAPER, paper))):
        ax = axes[i][0]
        if d.empty:
            mark_empty(ax, f"{origin}: no rates (no judge labels or ProcessBench cases)")
            continue
        draw_bars(ax, sns, d, "x", "value", hue="series", show_n=origin == ORIGIN_RUN)
        ax.set_xlabel("")
        ax.set_ylabel("flawed process among\ncorrect answers (%)")
        bar_limits(ax, pd.concat([d["value"], d["ci_high"]]), at_least=10, room=0.25)
        legend_small(ax, origin_label(origin), ncol=2, outside=True)
        if ax.get_legend() is None:
            origin_title(ax, origin)
    finish_layout(fig, "fig6", params, WILSON_CI, h_pad=0.8)
    return fig


def run(*, inputs, outputs, params, wildcards, threads) -> None:
    """Figure 6: the human rate from the returned annotation sheet (analysis.fig6_annotation.labels) when
    there is one, the judge-based proxy (and, process_check.enabled, checker-based) flawed-process rate on
    the policy's correct answers, and ProcessBench's annotated rate per subset."""
    # the paper's Figure 6 judged N (8) responses per query: a benchmark sampled at a larger N for another
    # table (Table 10's 64) counts only its first N, as rule judge labels only those (plan.judge_sample_cap)
    cap = params.get("n")
    samples = {d: (df[df["sample_idx"] < int(cap)] if cap and "sample_idx" in df.columns else df)
               for d, df in ((d, read_table(p, None)) for d, p in analysis.named_inputs(inputs, "samples").items())}
    judges = {d: read_table(p, None) for d, p in analysis.named_inputs(inputs, "judge").items()}
    checkers = {d: read_table(p, "checker") for d, p in analysis.named_inputs(inputs, "checker").items()}
    cases = read_table(inputs["cases"], None) if inputs.get("cases") and Path(inputs["cases"]).exists() else None
    human = None
    if inputs.get("human_labels"):  # analysis.fig6_annotation.labels: the sheet filled in by annotators
        sheet = annotation.read_sheet(inputs["annotation_sheet"])
        human = analysis.human_flaw_rates(annotation.read_labels(inputs["human_labels"], sheet), sheet)
    rates = analysis.flaw_rates(samples, judges, cases, checkers, human)
    emit_figure("fig6", build_fig6(rates, load_published(), params) if len(rates) else finish_cells([], params),
                 plot_fig6, outputs, params, inputs)
