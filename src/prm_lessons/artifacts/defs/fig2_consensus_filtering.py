"""Figure 2: what it reads, its params, its cells builder, its plot and its rule function `run`."""
from __future__ import annotations

from typing import Mapping

import pandas as pd

from prm_lessons.artifacts.cells import build_summary_figure
from prm_lessons.artifacts.inputs import read_bon, read_pb
from prm_lessons.artifacts.plots import emit_figure, plot_metric_grid
from prm_lessons.artifacts.published import load_published

ID = "fig2"
KIND = "figure"
SOURCE = "Figure 2"
TITLE = "Consensus filtering: Best-of-N mean accuracy and ProcessBench mean F1"
SECTION = "Data sources"
# what the rule reads: input groups of workflow/rules/analysis.smk (ARTIFACT_INPUT_GROUPS)
INPUTS = ("bon", "processbench", "trainsets")
# the config `analysis.*` keys the rule receives as params (besides `run`)
PARAMS = ("grader", "aggregation", "n", "benchmarks", "paper_rows", "paper_columns", "policy", "policy_labels",
          "figure", "mc_experiment", "data_setting")


def plot_fig2(cells: pd.DataFrame, pub: Mapping, params: Mapping):
    """Figure 2: consensus filtering, Best-of-N mean accuracy and ProcessBench mean F1."""
    return plot_metric_grid("fig2", cells, pub, params,
                            {"bon_average": "BoN mean acc. (%)", "processbench_f1": "ProcessBench F1 (%)"})


def run(*, inputs, outputs, params, wildcards, threads) -> None:
    """Figure 2 (consensus filtering)."""
    cells = build_summary_figure("fig2", read_bon(inputs, params), read_pb(inputs), load_published(), params)
    emit_figure("fig2", cells, plot_fig2, outputs, params, inputs)
