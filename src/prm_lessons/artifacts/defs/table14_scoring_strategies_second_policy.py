"""Table 14: what it reads, its params, its cells builder, its notes and its rule function `run`."""
from __future__ import annotations

from prm_lessons.artifacts.cells import grader_notes, policy_notes
from prm_lessons.artifacts.defs.table13_scoring_strategies import build_table13
from prm_lessons.artifacts.inputs import read_bon
from prm_lessons.artifacts.published import load_published
from prm_lessons.artifacts.render import emit_table

ID = "table14"
KIND = "table"
SOURCE = "Table 14"
TITLE = "Best-of-N accuracy (%) by scoring strategy (last / product / min) with the second policy"
SECTION = "Second policy"
# what the rule reads: input groups of workflow/rules/analysis.smk (ARTIFACT_INPUT_GROUPS)
INPUTS = ("bon",)
# the config `analysis.*` keys the rule receives as params (besides `run`)
PARAMS = ("aggregations", "n", "benchmarks", "paper_rows", "paper_columns", "second_policy", "policy_labels",
          "grader", "not_compared")


def run(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 14: Table 13 on the second policy's rows (analysis.second_policy)."""
    emit_table("table14", build_table13(read_bon(inputs, params, "second_policy"), load_published(), params,
                                         tid="table14"), outputs, params, inputs,
                notes=policy_notes(params, "second_policy") + grader_notes(params))
