"""Figure 9: what it reads, its params, its cells builder, its plot and its rule function `run`."""
from __future__ import annotations

from typing import Mapping

import pandas as pd

from prm_lessons.artifacts.cells import bon_avg_cells, keys_in, scorer_names, summary_cells
from prm_lessons.artifacts.inputs import read_bon
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
from prm_lessons.artifacts.published import load_published, paper_key, published_long

ID = "fig9"
KIND = "figure"
SOURCE = "Figure 9"
TITLE = "Best-of-N mean accuracy by scoring strategy (min / product / last) per training-data source"
SECTION = "Scoring strategy"
# what the rule reads: input groups of workflow/rules/analysis.smk (ARTIFACT_INPUT_GROUPS)
INPUTS = ("bon", "trainsets")
# the config `analysis.*` keys the rule receives as params (besides `run`)
PARAMS = ("grader", "n", "benchmarks", "paper_rows", "paper_columns", "policy", "policy_labels", "figure",
          "mc_experiment", "data_setting")


def build_fig9(bon, pub, params):
    """Figure 9: Best-of-N mean accuracy per aggregation (min / product / last) for the training-data rows."""
    bavg = bon_avg_cells(bon, pub, params, "fig9")
    keys = keys_in(pub, "fig9")
    cols = pub["tables"]["fig9"]["columns"]
    names = [p for p in scorer_names(bon) if paper_key(p, params) in keys]
    return summary_cells("fig9", names, {c: (lambda p, c=c: bavg.get((p, c))) for c in cols}, pub, params)


def plot_fig9(cells: pd.DataFrame, pub: Mapping, params: Mapping):
    """Figure 9: BoN mean accuracy by scoring strategy per training-data row; this run over the paper. Bars
    run across (the rows' names on the left, where they have room), one panel's height per its rows."""
    plt, sns = figure_style(params)
    cols = ["min", "product", "last"]
    data = run_and_paper(cells, published_long(pub, "fig9"), cols)
    data["name"] = data["name"].map(lambda s: short_name(s, 30))
    rows = [max(1, data.loc[data["origin"] == o, "name"].nunique()) for o in (ORIGIN_RUN, ORIGIN_PAPER)]
    heights = [0.35 + 0.2 * n for n in rows]
    fig, axes = plt.subplots(2, 1, figsize=(figure_width(params), sum(heights) + 1.3), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for i, origin in enumerate((ORIGIN_RUN, ORIGIN_PAPER)):
        ax = axes[i][0]
        d = data[data["origin"] == origin].copy()
        if d.empty:
            mark_empty(ax, f"{origin}: no rows")
            continue
        draw_bars(ax, sns, d, "name", "value", hue="column", hue_order=[c for c in cols if c in set(d["column"])],
                  horizontal=True, label_fmt="")
        ax.set_ylabel("")
        ax.set_xlabel("BoN mean acc. (%)" if i == 1 else "")
        bar_limits(ax, pd.concat([d["value"], d["ci_high"]]), horizontal=True, room=0.05)
        ax.tick_params(axis="y", labelsize=5)
        legend_small(ax, origin_label(origin), ncol=3, outside=True)
        if ax.get_legend() is None:
            origin_title(ax, origin)
    finish_layout(fig, "fig9", params, BOOTSTRAP_CI, h_pad=0.6)
    return fig


def run(*, inputs, outputs, params, wildcards, threads) -> None:
    """Figure 9 (Best-of-N by scoring strategy per training-data source)."""
    emit_figure("fig9", build_fig9(read_bon(inputs, params), load_published(), params), plot_fig9, outputs, params,
                inputs)
