"""Figure 8: what it reads, its params, its cells builder, its plot and its rule function `run`."""
from __future__ import annotations

import logging
from typing import Mapping

import numpy as np
import pandas as pd

from prm_lessons import analysis
from prm_lessons.artifacts.cells import finish_cells
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
    short_name,
)
from prm_lessons.artifacts.published import load_published, lookup, paper_column, paper_key, published_long
from prm_lessons.tables import read_table

ID = "fig8"
KIND = "figure"
SOURCE = "Figure 8"
TITLE = "Share of Best-of-N responses (all of them; the selected ones beside) whose minimum step score is on the final step"
SECTION = "Best-of-N bias"
# what the rule reads: input groups of workflow/rules/analysis.smk (ARTIFACT_INPUT_GROUPS)
INPUTS = ("scores",)
# the config `analysis.*` keys the rule receives as params (besides `run`)
PARAMS = ("aggregation", "n", "paper_rows", "paper_columns", "figure")

log = logging.getLogger(__name__)


FIG8_STAGES = {"all": "all responses", "selected": "selected responses"}  # analysis.FIG8_POPULATIONS


def build_fig8(shares: pd.DataFrame, pub, params, bon_full: bool):
    """Figure 8 cells from analysis.min_at_last_shares output: one row per (PRM, population), `stage`
    naming the population. Only the pooled share over ALL responses is the paper's quantity (its caption:
    "among all Best of 8 responses"); the selected-only share is shown beside it, never compared."""
    pub_long = published_long(pub, "fig8")
    rows = []
    for _, r in shares.iterrows():
        key = paper_key(r["prm"], params)
        paper_pop = r["benchmark"] == "all" and r["population"] == "all"
        pv, plabel = lookup(pub_long, key, "min_at_last") if paper_pop else (np.nan, None)
        rows.append({"row": r["prm"], "key": key, "label": plabel, "stage": FIG8_STAGES[r["population"]],
                     "column": r["benchmark"],
                     "paper_column": "min_at_last" if r["benchmark"] == "all" else paper_column(r["benchmark"], params),
                     "n": r["n_scored"], "value": r["share"], "ci_low": r["ci_low"], "ci_high": r["ci_high"],
                     "published": pv, "comparable": paper_pop and bon_full})
    return finish_cells(rows, params)


def fig8_bon_full(scores: Mapping[tuple[str, str], pd.DataFrame], pub: Mapping, params: Mapping) -> bool:
    """Whether Figure 8's step-score tables cover the paper's Best-of-N setup (the paper's benchmarks,
    N responses per problem), the condition for comparing its pooled shares with the paper's."""
    benches = sorted({paper_column(b, params) for (_, b) in scores})
    paper_benches = sorted(c for c in pub["bon_columns"] if c != "average")
    ns = {len(df.groupby("problem_id").head(params.get("n") or 10**9)) // max(1, df["problem_id"].nunique())
          for df in scores.values()} if scores else set()
    return benches == paper_benches and ns == {pub.get("bon_n")}


def plot_fig8(cells: pd.DataFrame, pub: Mapping, params: Mapping):
    """Figure 8: share of Best-of-N responses whose minimum step score is on the final step, per PRM:
    over all responses (the paper's population) and over the selected ones (hue)."""
    plt, sns = figure_style(params)
    run = cells[cells["column"] == "all"].copy()
    run["name"] = run["row"].map(lambda s: short_name(s, 24))
    paper = published_long(pub, "fig8").rename(columns={"published": "value"})
    paper["name"] = paper["label"]
    paper["ci_low"] = paper["ci_high"] = np.nan
    n_run = run["name"].nunique()
    heights = [max(0.8, 0.25 * n_run + 0.4), 0.15 * len(paper) + 0.3]
    fig, axes = plt.subplots(2, 1, figsize=(figure_width(params), sum(heights) + 0.7), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for i, (origin, d) in enumerate(((ORIGIN_RUN, run), (ORIGIN_PAPER, paper))):
        ax = axes[i][0]
        if d.empty:
            mark_empty(ax, f"{origin}: no scored Best-of-N responses")
            continue
        if i == 0:
            order = list(d[d["stage"] == "all responses"].sort_values("value")["name"]) or None
            draw_bars(ax, sns, d, "name", "value", hue="stage", order=order,
                  hue_order=[s for s in ("all responses", "selected responses") if s in set(d["stage"])],
                  horizontal=True)
            legend_small(ax, None, ncol=1, loc="upper right")  # the top bar is the shortest
        else:
            draw_bars(ax, sns, d.sort_values("value"), "name", "value", horizontal=True)
        ax.set_ylabel("")
        ax.set_xlabel("min. step score on the final step (%)" if i == 1 else "")
        ax.tick_params(axis="y", labelsize=5)
        origin_title(ax, origin)
        ax.set_xlim(0, min(100, max(10, float(d[["value", "ci_high"]].max().max()) * 1.2)))
    fig.tight_layout(rect=(0, 0.03, 1, 1), h_pad=0.5)
    return fig


def run(*, inputs, outputs, params, wildcards, threads) -> None:
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
    emit_figure("fig8", build_fig8(shares, pub, params, fig8_bon_full(scores, pub, params)), plot_fig8, outputs,
                 params, inputs)
