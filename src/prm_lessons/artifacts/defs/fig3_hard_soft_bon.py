"""Figure 3: what it reads, its params, its cells builder, its plot and its rule function `run`."""
from __future__ import annotations

from typing import Mapping

import pandas as pd

from prm_lessons.artifacts.cells import build_summary_figure
from prm_lessons.artifacts.inputs import read_bon, read_pb
from prm_lessons.artifacts.plots import emit_figure, plot_hard_soft
from prm_lessons.artifacts.published import load_published

ID = "fig3"
KIND = "figure"
SOURCE = "Figure 3"
TITLE = "Hard vs soft labels before/after consensus filtering: Best-of-N mean accuracy"
SECTION = "Hard vs soft labels"
# what the rule reads: input groups of workflow/rules/analysis.smk (ARTIFACT_INPUT_GROUPS)
INPUTS = ("bon", "processbench", "trainsets")
# the config `analysis.*` keys the rule receives as params (besides `run`)
PARAMS = ("grader", "aggregation", "n", "benchmarks", "paper_rows", "paper_columns", "policy", "policy_labels",
          "figure", "mc_experiment", "data_setting")


def plot_fig3(cells: pd.DataFrame, pub: Mapping, params: Mapping):
    """Figure 3: hard vs soft labels, Best-of-N mean accuracy."""
    return plot_hard_soft("fig3", cells, pub, params, "bon_average", "BoN mean acc. (%)")


def run(*, inputs, outputs, params, wildcards, threads) -> None:
    """Figure 3 (hard vs soft labels, Best-of-N)."""
    cells = build_summary_figure("fig3", read_bon(inputs, params), read_pb(inputs), load_published(), params)
    emit_figure("fig3", cells, plot_fig3, outputs, params, inputs)
