"""Figure 5: what it reads, its params, its cells builder, its plot and its rule function `run`."""
from __future__ import annotations

import logging
from typing import Iterable, Mapping

import pandas as pd

from prm_lessons.artifacts.cells import bon_avg_cells, finish_cells, pb_avg_cells, summary_cells
from prm_lessons.artifacts.inputs import csv_or_empty, read_bon, read_pb
from prm_lessons.artifacts.plots import (
    BOOTSTRAP_CI,
    ORIGIN_PAPER,
    ORIGIN_RUN,
    emit_figure,
    figure_style,
    figure_width,
    finish_layout,
    mark_empty,
    origin_label,
    run_and_paper,
)
from prm_lessons.artifacts.published import load_published, published_long
from prm_lessons.tables import read_csv

ID = "fig5"
KIND = "figure"
SOURCE = "Figure 5"
TITLE = "MC hard-label threshold sweep: Best-of-N mean accuracy and ProcessBench mean F1"
SECTION = "MC threshold"
# what the rule reads: input groups of workflow/rules/analysis.smk (ARTIFACT_INPUT_GROUPS)
INPUTS = ("bon", "processbench", "trainsets")
# the config `analysis.*` keys the rule receives as params (besides `run`)
PARAMS = ("grader", "aggregation", "n", "benchmarks", "paper_rows", "paper_columns", "policy", "policy_labels",
          "figure", "mc_experiment", "threshold_sweep", "data_setting")

log = logging.getLogger(__name__)


def build_fig5(bon, pb, sweep: Iterable | pd.DataFrame | None, pub, params):
    """Figure 5: the MC hard-label threshold sweep. `sweep` = [(threshold, variant), …] (the workflow
    passes plan.threshold_sweep_variants), or a trainsets.csv frame whose hard MC rows are
    used. Rows are matched to the paper's thresholds by value."""
    if isinstance(sweep, pd.DataFrame):
        ts = sweep[(sweep.get("source").astype(str) == "mc") & (sweep.get("label_type").astype(str) == "hard")]
        sweep = [(float(t), str(v)) for v, t in zip(ts["variant"], pd.to_numeric(ts["threshold"], errors="coerce"))
                 if pd.notna(t)]
    sweep = sorted((float(t), str(v)) for t, v in (sweep or []))
    if not sweep:
        log.warning("fig5: no threshold sweep configured (trainsets.mc_threshold_sweep); no rows")
        return finish_cells([], params)
    threshold_of = {v: t for t, v in sweep}
    agg = params.get("aggregation", "product")
    bavg, pavg = bon_avg_cells(bon, pub, params, "fig5"), pb_avg_cells(pb, pub, params)
    pub_rows = pub["tables"]["fig5"]["rows"]

    def key_of(variant):
        t = threshold_of[variant]
        for r in pub_rows:
            if abs(float(r["threshold"]) - t) < 1e-6:
                return str(r["key"])
        return f"t{t:g}"

    names = [v for _, v in sweep if (v, agg) in bavg or v in pavg]
    skipped = sorted(set(threshold_of) - set(names))
    if skipped:
        log.info("fig5: sweep variants without evaluation results (skipped): %s", skipped)
    return summary_cells("fig5", names, {"bon_average": lambda v: bavg.get((v, agg)),
                                         "processbench_f1": lambda v: pavg.get(v)}, pub, params, key_of=key_of,
                         extra_of=lambda v: {"threshold": threshold_of[v]})


def plot_fig5(cells: pd.DataFrame, pub: Mapping, params: Mapping):
    """Figure 5: metric against the MC threshold, this run (with its intervals, where its cells have them) and
    the paper as two lines; one legend across the top."""
    plt, sns = figure_style(params)
    from matplotlib.lines import Line2D  # lazy: as in figure_style

    cols = {"bon_average": "BoN mean acc. (%)", "processbench_f1": "ProcessBench F1 (%)"}
    data = run_and_paper(cells, published_long(pub, "fig5"), cols)
    colours = dict(zip((ORIGIN_RUN, ORIGIN_PAPER), sns.color_palette(params["figure"]["palette"], 2)))
    markers = {ORIGIN_RUN: "o", ORIGIN_PAPER: "s"}
    fig, axes = plt.subplots(1, 2, figsize=(figure_width(params), 2.1), squeeze=False)
    drawn, with_ci = set(), False
    for j, (col, ylabel) in enumerate(cols.items()):
        ax = axes[0][j]
        d = data[data["column"] == col].dropna(subset=["threshold"])
        if d.empty:
            mark_empty(ax, "no threshold-sweep rows")
            continue
        for origin in (ORIGIN_RUN, ORIGIN_PAPER):
            o = d[d["origin"] == origin].dropna(subset=["value"]).sort_values("threshold")
            if o.empty:
                continue
            drawn.add(origin)
            ax.plot(o["threshold"], o["value"], marker=markers[origin], markersize=3, lw=0.9, color=colours[origin])
            ci = o.dropna(subset=["ci_low", "ci_high"])
            if len(ci):
                with_ci = True
                err = [(ci["value"] - ci["ci_low"]).clip(lower=0), (ci["ci_high"] - ci["value"]).clip(lower=0)]
                ax.errorbar(ci["threshold"], ci["value"], yerr=err, fmt="none", ecolor=colours[origin],
                            elinewidth=0.6, capsize=1.5)
        ax.set_xlabel("MC threshold (hard labels)")
        ax.set_ylabel(ylabel)
        ax.set_xticks([0, 0.25, 0.5, 0.75])
        ax.margins(x=0.08)
    handles = [Line2D([], [], color=colours[o], marker=markers[o], markersize=3, lw=0.9,
                      label=(f"{o} (whiskers: 95% interval)" if o == ORIGIN_RUN and with_ci else origin_label(o)))
               for o in (ORIGIN_RUN, ORIGIN_PAPER) if o in drawn]
    finish_layout(fig, "fig5", params, BOOTSTRAP_CI if with_ci else None, legend=(handles, 2), w_pad=0.6)
    return fig


def run(*, inputs, outputs, params, wildcards, threads) -> None:
    """Figure 5 (MC hard-label threshold sweep; params.threshold_sweep, else a trainsets.csv input)."""
    bon, pb = read_bon(inputs, params), read_pb(inputs)
    sweep = params.get("threshold_sweep") or csv_or_empty(inputs, "trainsets", lambda p: read_csv(p, "trainsets_csv"))
    emit_figure("fig5", build_fig5(bon, pb, sweep, load_published(), params), plot_fig5, outputs, params, inputs)
