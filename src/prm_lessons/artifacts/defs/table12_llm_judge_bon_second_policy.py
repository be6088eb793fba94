"""Table 12: what it reads, its params, its cells builder, its notes and its rule function `run`."""
from __future__ import annotations

from prm_lessons.artifacts.defs.table11_llm_judge_bon import judge_table

ID = "table12"
KIND = "table"
SOURCE = "Table 12"
TITLE = ("LLMs as Best-of-N verifiers with the second policy: accuracy (%) of pointwise and pairwise judges beside "
         "pass@N, maj@N and PRMs")
SECTION = "Second policy"
# what the rule reads: input groups of workflow/rules/analysis.smk (ARTIFACT_INPUT_GROUPS)
INPUTS = ("bon", "judges")
# the config `analysis.*` keys the rule receives as params (besides `run`)
PARAMS = ("aggregation", "n", "benchmarks", "paper_rows", "paper_columns", "second_policy", "policy_labels", "grader")


def run(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 12: Table 11 on the second policy (analysis.second_policy); judge rows only where
    judge_bon.csv names that policy."""
    judge_table("table12", inputs, outputs, params, "second_policy")
