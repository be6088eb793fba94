"""Table 1: what it reads, its params, its cells builder, its notes and its rule function `run`."""
from __future__ import annotations

from typing import Mapping

import pandas as pd

from prm_lessons.artifacts.cells import grader_notes, policy_notes
from prm_lessons.artifacts.defs.table3_data_sources_bon import build_table3
from prm_lessons.artifacts.inputs import read_bon
from prm_lessons.artifacts.published import load_published
from prm_lessons.artifacts.render import emit_table

ID = "table1"
KIND = "table"
SOURCE = "Table 1"
TITLE = "Preliminary trials: Best-of-N accuracy (%) of PRMs trained on MC hard and soft labels and on PRM800K"
SECTION = "Preliminary trials"
# what the rule reads: input groups of workflow/rules/analysis.smk (ARTIFACT_INPUT_GROUPS)
INPUTS = ("bon", "trainsets")
# the config `analysis.*` keys the rule receives as params (besides `run`)
PARAMS = ("aggregation", "n", "benchmarks", "paper_rows", "paper_columns", "policy", "policy_labels",
          "mc_experiment", "grader", "data_setting")


def preliminary_notes(cells: pd.DataFrame, params: Mapping) -> list[str]:
    """Tables 1-2: which configured variants stand in for the paper's preliminary models, and whether they
    are compared (analysis.mc_experiment; mc_experiment_comparability marks the cells)."""
    rows = {k: sorted(set(cells.loc[cells["key"] == k, "row"])) for k in ("mc_hard", "mc_soft", "human")} \
        if len(cells) else {}
    named = "; ".join(f"{k}: {', '.join(v)}" for k, v in rows.items() if v) or "none in this run"
    ours = params.get("mc_experiment")
    compared = ("compared with them" if ours == "3M" else
                f"shown beside them but not compared (this run reproduces the {ours} set, analysis.mc_experiment)"
                if ours else "compared with them only as far as this config's MC data resembles that set")
    return [("The paper's preliminary PRMs (Qwen2.5-Math-7B-PRM-MC-hard / -MC-soft) were trained on its "
             "preliminary MC set: ~500k queries with responses of Qwen2-Math-Instruct and Qwen2.5-Math-Instruct "
             "(7B and 72B), INFERRED to be the 3M set of its Sec. 3.1.4. This config's MC variants stand in, "
             f"trained on this config's own MC data (the same runs as Table 3's MC row), {compared}; the "
             f"PRM800K row is Table 3's human row. Rows here (paper key: this run's rows): {named}.")]


def run(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 1 (preliminary trials, Best-of-N): pass@N, maj@N and the rows keyed human / mc_hard / mc_soft,
    Table 3's builder on analysis.policy's rows; the notes name the variants that stand in for the paper's
    preliminary (3M) models."""
    cells = build_table3(read_bon(inputs, params), load_published(), params, tid="table1", baselines=True)
    emit_table("table1", cells, outputs, params, inputs,
               notes=preliminary_notes(cells, params) + policy_notes(params) + grader_notes(params))
