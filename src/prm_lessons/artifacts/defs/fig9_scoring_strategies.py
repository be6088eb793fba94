"""Figure 9: what it reads, its params, its cells builder, its plot and its rule function `run`."""
from __future__ import annotations

from typing import Mapping

import pandas as pd

from prm_lessons.artifacts.cells import bon_avg_cells, keys_in, scorer_names, summary_cells
from prm_lessons.artifacts.inputs import read_bon
from prm_lessons.artifacts.plots import (
    ORIGIN_PAPER,
    ORIGIN_RUN,
    draw_bars,
    emit_figure,
    figure_style,
    figure_width,
    legend_small,
    mark_empty,
    origin_title,
    run_and_paper,
    wrap_name,
    zoom_to,
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
    """Figure 9: BoN mean accuracy by scoring strategy per training-data row; this run over the paper."""
    plt, sns = figure_style(params)
    cols = ["min", "product", "last"]
    data = run_and_paper(cells, published_long(pub, "fig9"), cols)
    fig, axes = plt.subplots(2, 1, figsize=(figure_width(params), 3.3), squeeze=False)
    for i, origin in enumerate((ORIGIN_RUN, ORIGIN_PAPER)):
        ax = axes[i][0]
        d = data[data["origin"] == origin].copy()
        if d.empty:
            mark_empty(ax, f"{origin}: no rows")
            continue
        d["name"] = d["name"].map(lambda s: wrap_name(s, 12))
        draw_bars(ax, sns, d, "name", "value", hue="column", hue_order=[c for c in cols if c in set(d["column"])],
              label_fmt="")
        ax.set_xlabel("")
        ax.set_ylabel("BoN mean acc. (%)")
        origin_title(ax, origin)
        zoom_to(ax, pd.concat([d["value"], d["ci_high"].dropna()]), headroom=4.0)
        ax.tick_params(axis="x", labelsize=5)
        legend_small(ax, None, ncol=3, loc="upper left")
    fig.tight_layout(rect=(0, 0.03, 1, 1), h_pad=0.6)
    return fig


def run(*, inputs, outputs, params, wildcards, threads) -> None:
    """Figure 9 (Best-of-N by scoring strategy per training-data source)."""
    emit_figure("fig9", build_fig9(read_bon(inputs, params), load_published(), params), plot_fig9, outputs, params,
                inputs)
