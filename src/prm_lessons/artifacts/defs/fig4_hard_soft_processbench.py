"""Figure 4: what it reads, its params, its cells builder, its plot and its rule function `run`."""
from __future__ import annotations

from typing import Mapping

import pandas as pd

from prm_lessons.artifacts.cells import build_summary_figure
from prm_lessons.artifacts.inputs import read_bon, read_pb
from prm_lessons.artifacts.plots import emit_figure, plot_hard_soft
from prm_lessons.artifacts.published import load_published

ID = "fig4"
KIND = "figure"
SOURCE = "Figure 4"
TITLE = "Hard vs soft labels before/after consensus filtering: ProcessBench mean F1"
SECTION = "Hard vs soft labels"
# what the rule reads: input groups of workflow/rules/analysis.smk (ARTIFACT_INPUT_GROUPS)
INPUTS = ("bon", "processbench", "trainsets")
# the config `analysis.*` keys the rule receives as params (besides `run`)
PARAMS = ("aggregation", "n", "benchmarks", "paper_rows", "paper_columns", "policy", "policy_labels", "figure",
          "mc_experiment", "data_setting")


def plot_fig4(cells: pd.DataFrame, pub: Mapping, params: Mapping):
    """Figure 4: hard vs soft labels, ProcessBench mean F1."""
    return plot_hard_soft("fig4", cells, pub, params, "processbench_f1", "ProcessBench F1 (%)")


def run(*, inputs, outputs, params, wildcards, threads) -> None:
    """Figure 4 (hard vs soft labels, ProcessBench)."""
    cells = build_summary_figure("fig4", read_bon(inputs, params), read_pb(inputs), load_published(), params)
    emit_figure("fig4", cells, plot_fig4, outputs, params, inputs)
