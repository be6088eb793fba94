"""Figure 8: what it reads, its params, its cells builder, its plot and its rule function `run`."""
from __future__ import annotations

import logging
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
    origin_title,
    short_name,
)
from prm_lessons.artifacts.published import load_published, lookup, paper_column, paper_key, published_long
from prm_lessons.evaluation import bias_analysis as analysis
from prm_lessons.tables import read_table

ID = "fig8"
KIND = "figure"
SOURCE = "Figure 8"
TITLE = ("Share of Best-of-N responses (all of them; the selected ones beside) whose minimum step score is on the "
         "final step, per response length beside the share expected by chance")
SECTION = "Best-of-N bias"
# what the rule reads: input groups of workflow/rules/analysis.smk (ARTIFACT_INPUT_GROUPS)
INPUTS = ("scores",)
# the config `analysis.*` keys the rule receives as params (besides `run`)
PARAMS = ("aggregation", "n", "paper_rows", "paper_columns", "figure")

log = logging.getLogger(__name__)


FIG8_STAGES = {"all": "all responses", "selected": "selected responses"}  # analysis.FIG8_POPULATIONS
# per-length cells (analysis.min_at_last_by_length): column = length bucket, stage = population + series
LENGTH_COLUMNS = {"1": "1 step", "2": "2 steps", "3": "3 steps", "4": "4 steps", "5+": "5+ steps",
                  "3+": "3+ steps"}
HEADLINE = LENGTH_COLUMNS["3+"]
OBSERVED, CHANCE = "observed", "chance"


def length_stage(population: str, series: str) -> str:
    """The `stage` of a per-length cell: e.g. "all responses: chance"."""
    return f"{FIG8_STAGES[population]}: {series}"


def build_fig8(shares: pd.DataFrame, pub, params, bon_full: bool, by_length: pd.DataFrame | None = None):
    """Figure 8 cells from analysis.min_at_last_shares output: one row per (PRM, population), `stage`
    naming the population. Only the pooled share over ALL responses is the paper's quantity (its caption:
    "among all Best of 8 responses"); the selected-only share is shown beside it, never compared.
    `by_length` (analysis.min_at_last_by_length): per length bucket (column "1 step" … "5+ steps", and the
    headline "3+ steps") the observed share with its interval and the chance share (stage "<population>:
    observed" / "<population>: chance"), `n` the responses of that length; never compared with the paper,
    whose responses' length mix is not published."""
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
    for _, r in (by_length if by_length is not None else pd.DataFrame()).iterrows():
        if not r["n_scored"]:
            continue
        base = {"row": r["prm"], "key": paper_key(r["prm"], params), "column": LENGTH_COLUMNS[r["length"]],
                "n": r["n_scored"], "published": np.nan, "comparable": False}
        rows.append({**base, "stage": length_stage(r["population"], OBSERVED), "value": r["share"],
                     "ci_low": r["ci_low"], "ci_high": r["ci_high"]})
        rows.append({**base, "stage": length_stage(r["population"], CHANCE), "value": r["chance"],
                     "ci_low": np.nan, "ci_high": np.nan})
    return finish_cells(rows, params)


def fig8_bon_full(scores: Mapping[tuple[str, str], pd.DataFrame], pub: Mapping, params: Mapping) -> bool:
    """Whether Figure 8's step-score tables cover the paper's Best-of-N setup (the paper's benchmarks,
    N responses per problem), the condition for comparing its pooled shares with the paper's."""
    benches = sorted({paper_column(b, params) for (_, b) in scores})
    paper_benches = sorted(c for c in pub["bon_columns"] if c != "average")
    ns = {len(df.groupby("problem_id").head(params.get("n") or 10**9)) // max(1, df["problem_id"].nunique())
          for df in scores.values()} if scores else set()
    return benches == paper_benches and ns == {pub.get("bon_n")}


EVERY = "all, every length"


def _series(stage: str) -> str:
    """Legend text of a 3+-step cell's stage: "all responses: chance" → "all, 3+ steps: chance"."""
    pop, series = stage.split(": ")
    return f"{pop.split()[0]}, 3+ steps: {series}"


def plot_fig8(cells: pd.DataFrame, pub: Mapping, params: Mapping):
    """Figure 8 per PRM: over all responses (the paper's population) the share of every length, and on
    responses of 3+ steps the observed share beside its chance rate, for all and for the selected
    responses (hue); the paper's shares below."""
    plt, sns = figure_style(params)
    paper_pop = cells[(cells["column"] == "all") & (cells["stage"] == FIG8_STAGES["all"])].assign(series=EVERY)
    head = cells[cells["column"] == HEADLINE].copy()
    head["series"] = head["stage"].map(_series)
    run = pd.concat([paper_pop, head], ignore_index=True)
    run["name"] = run["row"].map(lambda s: short_name(s, 24))
    hue_order = [s for s in [EVERY] + [_series(length_stage(p, k)) for p in FIG8_STAGES for k in (OBSERVED, CHANCE)]
                 if s in set(run["series"])]
    paper = published_long(pub, "fig8").rename(columns={"published": "value"})
    paper["name"] = paper["label"]
    paper["ci_low"] = paper["ci_high"] = np.nan
    n_run = run["name"].nunique()
    heights = [max(0.8, 0.12 * n_run * max(1, len(hue_order)) + 0.4), 0.15 * len(paper) + 0.3]
    fig, axes = plt.subplots(2, 1, figsize=(figure_width(params), sum(heights) + 0.7), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for i, (origin, d) in enumerate(((ORIGIN_RUN, run), (ORIGIN_PAPER, paper))):
        ax = axes[i][0]
        if d.empty:
            mark_empty(ax, f"{origin}: no scored Best-of-N responses")
            continue
        if i == 0:
            draw_bars(ax, sns, d, "name", "value", hue="series", order=list(dict.fromkeys(d["name"])),
                      hue_order=hue_order, horizontal=True)
            legend_small(ax, ORIGIN_RUN, ncol=1, outside=True)
        else:
            draw_bars(ax, sns, d.sort_values("value"), "name", "value", horizontal=True)
        ax.set_ylabel("")  # this run: its legend above it is titled so
        ax.set_xlabel("min. step score on the final step (%)" + ("\n(chance: scores shuffled)" if i == 0 else ""),
                      fontsize=5)
        ax.tick_params(axis="y", labelsize=5)
        if i == 1:
            origin_title(ax, origin)
        bar_limits(ax, pd.concat([d["value"], d["ci_high"]]), horizontal=True, at_least=10, room=0.3)
    finish_layout(fig, "fig8", params, WILSON_CI, h_pad=0.5)
    return fig


def run(*, inputs, outputs, params, wildcards, threads) -> None:
    """Figure 8: where the minimum step score of Best-of-N responses falls (all of them, and the selected ones)."""
    scores = {}
    for name, path in analysis.named_inputs(inputs, "scores").items():
        prm, _, bench = name.partition("__")
        scores[(prm, bench)] = read_table(path, None)
    shares = analysis.min_at_last_shares(scores, params.get("aggregation", "product"), params.get("n"))
    by_length = analysis.min_at_last_by_length(scores, params.get("aggregation", "product"), params.get("n"))
    for _, r in by_length[by_length["length"].isin(["1", "2", "3+"])].iterrows():
        log.info("fig8 %s, %s responses of %s step(s): %d of %d with the minimum at the final step (%.1f%%), "
                 "chance %.1f%%", r["prm"], r["population"], r["length"], r["n_min_at_last"], r["n_scored"],
                 r["share"], r["chance"])
    for _, r in shares[shares["benchmark"] == "all"].iterrows():
        log.info("fig8 %s, %s responses: %d of %d scored with the minimum at the final step; %d final steps "
                 "only tie an earlier minimum (counted as not at the end); %d one-step responses", r["prm"],
                 r["population"], r["n_min_at_last"], r["n_scored"], r["n_min_tied"], r["n_single_step"])
    pub = load_published()
    emit_figure("fig8", build_fig8(shares, pub, params, fig8_bon_full(scores, pub, params), by_length), plot_fig8,
                outputs, params, inputs)
