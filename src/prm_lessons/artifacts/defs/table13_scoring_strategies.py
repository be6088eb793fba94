"""Table 13: what it reads, its params, its cells builder, its notes and its rule function `run`."""
from __future__ import annotations

from prm_lessons.artifacts.cells import baseline_selections, bon_cells, grader_notes, policy_notes, scorer_names
from prm_lessons.artifacts.inputs import read_bon
from prm_lessons.artifacts.published import load_published
from prm_lessons.artifacts.render import emit_table

ID = "table13"
KIND = "table"
SOURCE = "Table 13"
TITLE = "Best-of-N accuracy (%) by scoring strategy (last / product / min)"
SECTION = "Scoring strategy"
# what the rule reads: input groups of workflow/rules/analysis.smk (ARTIFACT_INPUT_GROUPS)
INPUTS = ("bon",)
# the config `analysis.*` keys the rule receives as params (besides `run`)
PARAMS = ("aggregations", "n", "benchmarks", "paper_rows", "paper_columns", "policy", "policy_labels", "grader",
          "not_compared")


def build_table13(bon, pub, params, tid: str = "table13"):
    """Table 13 (and Tables 14-16 on their own rows): pass@N, maj@N, then every scorer per aggregation."""
    sels = baseline_selections(bon)
    for p in scorer_names(bon):
        for agg in params.get("aggregations") or ["last", "product", "min"]:
            if ((bon["prm"] == p) & (bon["metric"] == f"prm_{agg}")).any():
                sels.append({"row": p, "prm": p, "metric": f"prm_{agg}", "aggregation": agg})
    return bon_cells(bon, sels, pub, tid, params)


def run(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 13 (last / product / min per PRM)."""
    emit_table("table13", build_table13(read_bon(inputs, params), load_published(), params), outputs, params, inputs,
                notes=policy_notes(params) + grader_notes(params))
