"""Table 9: what it reads, its params, its cells builder, its notes and its rule function `run`."""
from __future__ import annotations

from prm_lessons.artifacts.cells import grader_notes, policy_notes
from prm_lessons.artifacts.defs.table6_bon_main import build_table6
from prm_lessons.artifacts.inputs import read_bon
from prm_lessons.artifacts.published import load_published
from prm_lessons.artifacts.render import emit_table

ID = "table9"
KIND = "table"
SOURCE = "Table 9"
TITLE = "Best-of-N accuracy (%) with the second policy, product scoring, with pass@N and maj@N"
SECTION = "Second policy"
# what the rule reads: input groups of workflow/rules/analysis.smk (ARTIFACT_INPUT_GROUPS)
INPUTS = ("bon",)
# the config `analysis.*` keys the rule receives as params (besides `run`)
PARAMS = ("aggregation", "n", "benchmarks", "paper_rows", "paper_columns", "second_policy", "policy_labels",
          "grader", "not_compared")


def run(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 9: Table 6 on the second policy's rows (analysis.second_policy)."""
    emit_table("table9",
               build_table6(read_bon(inputs, params, "second_policy"), load_published(), params, tid="table9"),
                outputs, params, inputs, notes=policy_notes(params, "second_policy") + grader_notes(params))
