"""Figure 7: what it reads, its params, its cells builder, its plot and its rule function `run`."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

import pandas as pd

from prm_lessons.artifacts.cells import build_summary_figure, load_cells
from prm_lessons.artifacts.inputs import read_bon
from prm_lessons.artifacts.plots import (
    BOOTSTRAP_CI,
    ORIGIN_PAPER,
    ORIGIN_RUN,
    declutter_annotations,
    emit_figure,
    figure_style,
    figure_width,
    finish_layout,
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
    """Figure 7: BoN mean accuracy against accuracy on answer-correct/process-wrong cases; this run's
    intervals (where its cells have them) as whiskers, point labels moved off one another."""
    plt, sns = figure_style(params)
    pub_long = published_long(pub, "fig7")
    data = run_and_paper(cells, pub_long, ["bon_average", "tolerance_average"])
    palette = key_palette(sns, list(pub_long["key"]) + list(cells["key"]), params)
    fig, axes = plt.subplots(1, 2, figsize=(figure_width(params), 2.3), squeeze=False)
    with_ci = False
    for j, origin in enumerate((ORIGIN_RUN, ORIGIN_PAPER)):
        ax = axes[0][j]
        mine = data[data["origin"] == origin]
        wide = {f: mine.groupby(["name", "key", "column"])[f].first().unstack("column")
                for f in ("value", "ci_low", "ci_high")} if len(mine) else {}
        d = wide.get("value", pd.DataFrame())
        if d.empty or not {"bon_average", "tolerance_average"} <= set(d.columns):
            mark_empty(ax, f"{origin}: needs both BoN and tolerance results")
            continue
        d = d[["tolerance_average", "bon_average"]].dropna()
        lo = wide["ci_low"].reindex(index=d.index, columns=d.columns)
        hi = wide["ci_high"].reindex(index=d.index, columns=d.columns)
        d = d.reset_index()
        sns.scatterplot(data=d, x="tolerance_average", y="bon_average", hue="key", palette=palette, ax=ax, s=18,
                        legend=False)
        for (_, r), (_, rl), (_, rh) in zip(d.iterrows(), lo.iterrows(), hi.iterrows()):
            x, y = r["tolerance_average"], r["bon_average"]
            for axis, v, a, b in (("y", y, rl["bon_average"], rh["bon_average"]),
                                  ("x", x, rl["tolerance_average"], rh["tolerance_average"])):
                if pd.notna(a) and pd.notna(b):
                    with_ci = True
                    err = {f"{axis}err": [[max(0.0, v - a)], [max(0.0, b - v)]]}
                    ax.errorbar([x], [y], fmt="none", ecolor=palette.get(r["key"], "0.3"), elinewidth=0.5,
                                capsize=1, **err)
        ax.set_xlabel("acc. on answer-correct,\nprocess-wrong cases (%)")
        ax.set_ylabel("BoN mean acc. (%)" if j == 0 else "")
        origin_title(ax, origin)
        ax.margins(0.3)
        mid = sum(ax.get_xlim()) / 2
        # a label points into the panel: right of a point on the left half, left of one on the right
        for _, r in d.iterrows():
            left = r["tolerance_average"] > mid
            ax.annotate(wrap_name(r["name"], 14), (r["tolerance_average"], r["bon_average"]), fontsize=4.5,
                        xytext=(-2 if left else 2, 2), textcoords="offset points", ha="right" if left else "left")
    finish_layout(fig, "fig7", params, BOOTSTRAP_CI if with_ci else None, w_pad=0.6)
    for ax in fig.axes:
        declutter_annotations(ax)
    return fig


def run(*, inputs, outputs, params, wildcards, threads) -> None:
    """Figure 7: BoN mean accuracy vs Table 5's average, per training-data source."""
    bon = read_bon(inputs, params)
    tol = load_cells(inputs["table5"]) if Path(inputs["table5"]).exists() else None
    cells = build_summary_figure("fig7", bon, None, load_published(), params, tol=tol)
    emit_figure("fig7", cells, plot_fig7, outputs, params, inputs)
