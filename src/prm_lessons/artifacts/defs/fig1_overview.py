"""Figure 1: what it reads, its params, its cells builder, its plot and its rule function `run`."""
from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

from prm_lessons.artifacts.cells import (
    baseline_selections,
    baselines_as_bon,
    bon_avg_cells,
    bon_cells,
    finish_cells,
    pb_avg_cells,
    scorer_names,
    select_rows,
    summary_cells,
)
from prm_lessons.artifacts.inputs import csv_or_empty, read_bon, read_pb
from prm_lessons.artifacts.plots import (
    BOOTSTRAP_CI,
    ORIGIN_PAPER,
    ORIGIN_RUN,
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
    run_and_paper,
    short_name,
)
from prm_lessons.artifacts.published import load_published, lookup, published_long

ID = "fig1"
KIND = "figure"
SOURCE = "Figure 1"
TITLE = ("Overview: Best-of-N average accuracy and ProcessBench average F1 per PRM, with pass@N, maj@N and o1-mini "
         "(published) reference lines")
SECTION = "Overview"
# what the rule reads: input groups of workflow/rules/analysis.smk (ARTIFACT_INPUT_GROUPS)
INPUTS = ("bon", "processbench")
# the config `analysis.*` keys the rule receives as params (besides `run`)
PARAMS = ("grader", "aggregation", "n", "benchmarks", "paper_rows", "paper_columns", "policy", "policy_labels",
          "figure", "not_compared")


REFERENCE_KEYS = ("pass", "maj", "o1_mini")  # Figure 1's reference lines (published.yaml fig1 keys)


O1_MINI_ROW = "o1-mini (published, not run here)"


def build_fig1(bon, pb, baselines, pub, params):
    """Figure 1: per PRM, the Best-of-N average (Table 6's Avg., analysis.aggregation) and the ProcessBench
    average F1 (Table 7's Avg.); pass@N and maj@N (reference lines) from `baselines` (bon_baselines.csv as
    bon rows, baselines_as_bon; bon.csv's own pass/maj rows when absent); o1-mini's published ProcessBench
    F1 as a reference line this run does not reproduce (a critic of the paper; value left empty)."""
    agg = params.get("aggregation", "product")
    bavg, pavg = bon_avg_cells(bon, pub, params, "fig1"), pb_avg_cells(pb, pub, params)
    pb_names = [p for p in (pb["prm"] if pb is not None else []) if not str(p).startswith(("critic-", "baseline_"))]
    names = list(dict.fromkeys(scorer_names(bon) + pb_names))
    prms = summary_cells("fig1", names, {"bon_average": lambda p: bavg.get((p, agg)) or bavg.get((p, "orm")),
                                         "processbench_f1": lambda p: pavg.get(p)}, pub, params)
    base = baselines if baselines is not None and len(baselines) else bon
    ref, key_of = {}, {}
    for sel in baseline_selections(base) if base is not None else []:
        c = bon_cells(base, [sel], pub, "table6", params)
        avg = c[c["column"] == "average"]
        if len(avg):
            ref[sel["row"]], key_of[sel["row"]] = avg.iloc[0].to_dict(), sel["key"]
    lines = summary_cells("fig1", list(ref), {"bon_average": lambda r: ref.get(r)}, pub, params,
                          key_of=lambda r: key_of[r])
    pv, plabel = lookup(published_long(pub, "fig1"), "o1_mini", "processbench_f1")
    o1 = finish_cells([{"row": O1_MINI_ROW, "key": "o1_mini", "label": plabel, "column": "processbench_f1",
                        "paper_column": "processbench_f1", "value": np.nan, "published": pv, "comparable": False}],
                      params)
    return pd.concat([prms, lines, o1], ignore_index=True)


def plot_fig1(cells: pd.DataFrame, pub: Mapping, params: Mapping):
    """Figure 1: per PRM, Best-of-N average accuracy and ProcessBench average F1 (two bar panels, PRMs in
    one order, by Best-of-N), this run above the paper; pass@N / maj@N as lines on the Best-of-N panels,
    o1-mini's published ProcessBench F1 on the ProcessBench panels (in this run's: "published, not run
    here"). The lines are named, with their values, in the panel's legend above it: a label drawn on a line
    would cover the bars' value labels."""
    plt, sns = figure_style(params)
    from matplotlib.lines import Line2D  # lazy: as in figure_style

    cols = {"bon_average": "BoN avg. acc. (%)", "processbench_f1": "ProcessBench avg. F1 (%)"}
    data = run_and_paper(cells, published_long(pub, "fig1"), cols)
    data["name"] = data["name"].map(lambda s: short_name(s, 30))
    lines = data[data["key"].isin(REFERENCE_KEYS)]
    bars = data[~data["key"].isin(REFERENCE_KEYS)].dropna(subset=["value"])
    n_rows = max([bars[bars["origin"] == o]["name"].nunique() for o in (ORIGIN_RUN, ORIGIN_PAPER)] + [1])
    fig, axes = plt.subplots(2, 2, figsize=(2 * figure_width(params), 1.2 + 2 * (0.14 * n_rows + 0.7)),
                             squeeze=False)
    styles = {"pass": ("0.2", ":"), "maj": ("0.45", "--"), "o1_mini": ("tab:red", "-.")}
    o1_paper = lines[(lines["origin"] == ORIGIN_PAPER) & (lines["key"] == "o1_mini")
                     & (lines["column"] == "processbench_f1")].dropna(subset=["value"])
    for i, origin in enumerate((ORIGIN_RUN, ORIGIN_PAPER)):
        mine = bars[bars["origin"] == origin]
        order = list(mine[mine["column"] == "bon_average"].sort_values("value")["name"])
        order += [n for n in dict.fromkeys(mine["name"]) if n not in order]
        for j, (col, xlabel) in enumerate(cols.items()):
            ax = axes[i][j]
            d = mine[mine["column"] == col]
            ref = lines[(lines["column"] == col) & (lines["origin"] == origin)].dropna(subset=["value"])
            if col == "processbench_f1" and origin == ORIGIN_RUN:  # o1-mini: the paper's number, not this run's
                ref = pd.concat([ref, o1_paper])
            if d.empty:
                mark_empty(ax, f"{origin}: no {xlabel.split(' (')[0]} rows")
                continue
            draw_bars(ax, sns, d, "name", "value", order=[n for n in order if n in set(d["name"])], horizontal=True)
            handles = []
            for _, r in ref.iterrows():
                colour, ls = styles.get(r["key"], ("0.3", "--"))
                text = ("o1-mini (published, not run here)" if r["key"] == "o1_mini" and origin == ORIGIN_RUN
                        else str(r["name"]).split(" (")[0]) + f" {float(r['value']):.1f}"
                ax.axvline(float(r["value"]), color=colour, ls=ls, lw=0.8)
                handles.append(Line2D([], [], color=colour, ls=ls, lw=0.8, label=text))
            ax.set_ylabel("")
            ax.set_xlabel(xlabel if i == 1 else "")
            ax.tick_params(axis="y", labelsize=5)
            bar_limits(ax, pd.concat([d["value"], d["ci_high"]]), horizontal=True, at_least=100, room=0.15)
            if handles:
                legend_small(ax, origin_label(origin), ncol=len(handles), outside=True, handles=handles)
            else:
                origin_title(ax, origin)
    finish_layout(fig, "fig1", params, BOOTSTRAP_CI, h_pad=0.6, w_pad=0.8)
    return fig


def run(*, inputs, outputs, params, wildcards, threads) -> None:
    """Figure 1: Best-of-N average and ProcessBench average F1 per PRM, pass@N / maj@N of
    results/tables/bon_baselines.csv (this policy and N) and o1-mini's published F1 as reference lines."""
    base = csv_or_empty(inputs, "baselines", baselines_as_bon)
    if base is not None:
        base = select_rows(base, params.get("policy"), params.get("n"))
    cells = build_fig1(read_bon(inputs, params), read_pb(inputs), base, load_published(), params)
    emit_figure("fig1", cells, plot_fig1, outputs, params, inputs)
