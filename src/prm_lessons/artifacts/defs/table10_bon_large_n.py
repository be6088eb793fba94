"""Table 10: what it reads, its params, its cells builder, its notes and its rule function `run`."""
from __future__ import annotations

from prm_lessons.artifacts.cells import finish_cells, grader_notes, policy_notes
from prm_lessons.artifacts.defs.table6_bon_main import build_table6
from prm_lessons.artifacts.inputs import read_bon
from prm_lessons.artifacts.published import load_published
from prm_lessons.artifacts.render import emit_table

ID = "table10"
KIND = "table"
SOURCE = "Table 10"
TITLE = "Best-of-N accuracy (%) at the larger N (the paper: Best-of-64), product scoring, with pass@N and maj@N"
SECTION = "Larger N"
# what the rule reads: input groups of workflow/rules/analysis.smk (ARTIFACT_INPUT_GROUPS)
INPUTS = ("bon",)
# the config `analysis.*` keys the rule receives as params (besides `run`)
PARAMS = ("aggregation", "table10", "paper_rows", "paper_columns", "policy", "policy_labels", "grader", "not_compared")


def run(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 10: Table 6 at analysis.table10's N on its benchmarks (analysis.policy's rows; the paper:
    Best-of-64 on MATH500, AIME24, AMC23, Minerva Math, GaoKao 2023 En, OlympiadBench)."""
    t10 = params["table10"]
    n, benches = t10["n"], list(t10["benchmarks"])
    own = {**{k: params[k] for k in ("run", "aggregation", "paper_rows", "paper_columns")},
           "n": n, "benchmarks": benches}
    cells = (build_table6(read_bon(inputs, params, n=n), load_published(), own, tid="table10") if n
             else finish_cells([], own))
    notes = [f"Best-of-{n} on {', '.join(benches) or 'every benchmark evaluated at that N'}: every N is evaluated on "
             "the first N samples of each problem of one sampling pass (bon.more_n), not on new draws."] if n else []
    emit_table("table10", cells, outputs, params, inputs, notes=notes + policy_notes(params) + grader_notes(params))
