"""Table 15: what it reads, its params, its cells builder, its notes and its rule function `run`."""
from __future__ import annotations

from prm_lessons.artifacts.cells import finish_cells, grader_notes, policy_notes
from prm_lessons.artifacts.defs.table13_scoring_strategies import build_table13
from prm_lessons.artifacts.inputs import read_bon
from prm_lessons.artifacts.published import load_published
from prm_lessons.artifacts.render import emit_table

ID = "table15"
KIND = "table"
SOURCE = "Table 15"
TITLE = "Chinese benchmarks: Best-of-N accuracy (%) by scoring strategy (last / product / min)"
SECTION = "Chinese benchmarks"
# what the rule reads: input groups of workflow/rules/analysis.smk (ARTIFACT_INPUT_GROUPS)
INPUTS = ("bon",)
# the config `analysis.*` keys the rule receives as params (besides `run`)
PARAMS = ("aggregations", "n", "chinese_benchmarks", "paper_rows", "paper_columns", "policy", "policy_labels",
          "grader", "not_compared")


def chinese_table(aid: str, inputs, outputs, params, policy_key: str) -> None:
    """Tables 15 / 16: Table 13's builder on analysis.chinese_benchmarks (no rows when it is empty)."""
    own = {**{k: params.get(k) for k in ("run", "aggregations", "n", "paper_rows", "paper_columns")},
           "benchmarks": list(params.get("chinese_benchmarks") or [])}
    bon = read_bon(inputs, params, policy_key)
    cells = build_table13(bon, load_published(), own, tid=aid) if own["benchmarks"] else finish_cells([], own)
    emit_table(aid, cells, outputs, params, inputs, notes=policy_notes(params, policy_key) + grader_notes(params))


def run(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 15: last / product / min on the Chinese benchmarks (analysis.chinese_benchmarks), analysis.policy."""
    chinese_table("table15", inputs, outputs, params, "policy")
