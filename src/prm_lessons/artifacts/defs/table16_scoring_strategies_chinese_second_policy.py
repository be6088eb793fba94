"""Table 16: what it reads, its params, its cells builder, its notes and its rule function `run`."""
from __future__ import annotations

from prm_lessons.artifacts.defs.table15_scoring_strategies_chinese import chinese_table

ID = "table16"
KIND = "table"
SOURCE = "Table 16"
TITLE = "Chinese benchmarks with the second policy: Best-of-N accuracy (%) by scoring strategy (last / product / min)"
SECTION = "Chinese benchmarks"
# what the rule reads: input groups of workflow/rules/analysis.smk (ARTIFACT_INPUT_GROUPS)
INPUTS = ("bon",)
# the config `analysis.*` keys the rule receives as params (besides `run`)
PARAMS = ("aggregations", "n", "chinese_benchmarks", "paper_rows", "paper_columns", "second_policy",
          "policy_labels", "grader", "not_compared")


def run(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 16: Table 15 on the second policy's rows (analysis.second_policy)."""
    chinese_table("table16", inputs, outputs, params, "second_policy")
