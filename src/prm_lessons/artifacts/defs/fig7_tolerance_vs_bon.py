"""Figure 7: what it reads, its params, its cells builder, its plot and its rule function `run`."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

import pandas as pd

from prm_lessons.artifacts.cells import build_summary_figure, load_cells
from prm_lessons.artifacts.inputs import read_bon
from prm_lessons.artifacts.plots import (
    ORIGIN_PAPER,
    ORIGIN_RUN,
    emit_figure,
    figure_style,
    figure_width,
    key_palette,
    mark_empty,
    origin_title,
    run_and_paper,
    wrap_name,
)
from prm_lessons.artifacts.published import load_published, published_long

ID = "fig7"
KIND = "figure"
SOURCE = "Figure 7"
TITLE = "Best-of-N mean accuracy vs accuracy on answer-correct/process-wrong ProcessBench cases"
SECTION = "Best-of-N bias"
# what the rule reads: input groups of workflow/rules/analysis.smk (ARTIFACT_INPUT_GROUPS)
INPUTS = ("bon", "table5", "trainsets")
# the config `analysis.*` keys the rule receives as params (besides `run`)
PARAMS = ("grader", "aggregation", "n", "benchmarks", "paper_rows", "paper_columns", "policy", "policy_labels",
          "figure", "mc_experiment", "data_setting")


def plot_fig7(cells: pd.DataFrame, pub: Mapping, params: Mapping):
    """Figure 7: BoN mean accuracy against accuracy on answer-correct/process-wrong cases."""
    plt, sns = figure_style(params)
    pub_long = published_long(pub, "fig7")
    data = run_and_paper(cells, pub_long, ["bon_average", "tolerance_average"])
    palette = key_palette(sns, list(pub_long["key"]) + list(cells["key"]), params)
    fig, axes = plt.subplots(1, 2, figsize=(figure_width(params), 2.0), squeeze=False)
    for j, origin in enumerate((ORIGIN_RUN, ORIGIN_PAPER)):
        ax = axes[0][j]
        d = data[data["origin"] == origin].pivot_table(index=["name", "key"], columns="column", values="value",
                                                       aggfunc="first")
        if d.empty or not {"bon_average", "tolerance_average"} <= set(d.columns):
            mark_empty(ax, f"{origin}: needs both BoN and tolerance results")
            continue
        d = d.dropna().reset_index()
        sns.scatterplot(data=d, x="tolerance_average", y="bon_average", hue="key", palette=palette, ax=ax, s=18,
                        legend=False)
        for _, r in d.iterrows():
            ax.annotate(wrap_name(r["name"], 14), (r["tolerance_average"], r["bon_average"]), fontsize=4.5,
                        xytext=(2, 2), textcoords="offset points")
        ax.set_xlabel("acc. on answer-correct,\nprocess-wrong cases (%)")
        ax.set_ylabel("BoN mean acc. (%)" if j == 0 else "")
        origin_title(ax, origin)
        ax.margins(0.3)
    fig.tight_layout(rect=(0, 0.05, 1, 1), w_pad=0.6)
    return fig


def run(*, inputs, outputs, params, wildcards, threads) -> None:
    """Figure 7: BoN mean accuracy vs Table 5's average, per training-data source."""
    bon = read_bon(inputs, params)
    tol = load_cells(inputs["table5"]) if Path(inputs["table5"]).exists() else None
    cells = build_summary_figure("fig7", bon, None, load_published(), params, tol=tol)
    emit_figure("fig7", cells, plot_fig7, outputs, params, inputs)
