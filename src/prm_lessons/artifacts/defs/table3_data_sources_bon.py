"""Table 3: what it reads, its params, its cells builder, its notes and its rule function `run`."""
from __future__ import annotations

from prm_lessons.artifacts.cells import (
    baseline_selections,
    bon_cells,
    grader_notes,
    keys_in,
    policy_notes,
    prm_metric,
    scorer_names,
)
from prm_lessons.artifacts.inputs import read_bon
from prm_lessons.artifacts.published import load_published, paper_key
from prm_lessons.artifacts.render import emit_table

ID = "table3"
KIND = "table"
SOURCE = "Table 3"
TITLE = "Data source comparison: Best-of-N accuracy (%) of PRMs trained on MC, LLM-as-a-judge and human labels"
SECTION = "Data sources"
# what the rule reads: input groups of workflow/rules/analysis.smk (ARTIFACT_INPUT_GROUPS)
INPUTS = ("bon", "trainsets")
# the config `analysis.*` keys the rule receives as params (besides `run`)
PARAMS = ("aggregation", "n", "benchmarks", "paper_rows", "paper_columns", "policy", "policy_labels",
          "mc_experiment", "grader", "data_setting")


def build_table3(bon, pub, params, tid: str = "table3", baselines: bool = False):
    """Table 3 (and Table 1, with pass@N / maj@N first): the rows whose paper key is in the table."""
    agg = params.get("aggregation", "product")
    names = [p for p in scorer_names(bon) if paper_key(p, params) in keys_in(pub, tid)]
    sels = (baseline_selections(bon) if baselines else []) + [
        {"row": p, "prm": p, "metric": prm_metric(bon, p, agg)} for p in names]
    return bon_cells(bon, sels, pub, tid, params)


def run(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 3 (BoN by training-data source)."""
    emit_table("table3", build_table3(read_bon(inputs, params), load_published(), params), outputs, params, inputs,
                notes=policy_notes(params) + grader_notes(params))
