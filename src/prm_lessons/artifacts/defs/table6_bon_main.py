"""Table 6: what it reads, its params, its cells builder, its notes and its rule function `run`."""
from __future__ import annotations

from prm_lessons.artifacts.cells import (
    baseline_selections,
    bon_cells,
    grader_notes,
    policy_notes,
    prm_metric,
    scorer_names,
)
from prm_lessons.artifacts.inputs import read_bon
from prm_lessons.artifacts.published import load_published
from prm_lessons.artifacts.render import emit_table
from prm_lessons.artifacts.seeds import seed_notes, seed_spread

ID = "table6"
KIND = "table"
SOURCE = "Table 6"
TITLE = "Main results: Best-of-N accuracy (%), product scoring, with pass@N and maj@N"
SECTION = "Main results"
# what the rule reads: input groups of workflow/rules/analysis.smk (ARTIFACT_INPUT_GROUPS)
INPUTS = ("bon", "seed_bon")
# the config `analysis.*` keys the rule receives as params (besides `run`)
PARAMS = ("aggregation", "n", "benchmarks", "paper_rows", "paper_columns", "policy", "policy_labels", "grader",
          "not_compared", "seed_runs")


def build_table6(bon, pub, params, tid: str = "table6"):
    """Table 6 (and Tables 9, 10 on their own rows): pass@N, maj@N, then every scorer."""
    agg = params.get("aggregation", "product")
    sels = baseline_selections(bon) + [{"row": p, "prm": p, "metric": prm_metric(bon, p, agg)}
                                       for p in scorer_names(bon)]
    return bon_cells(bon, sels, pub, tid, params)


def run(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 6 (main Best-of-N results with pass@N / maj@N)."""
    pub = load_published()
    cells = build_table6(read_bon(inputs, params), pub, params)
    # analysis.seeds: the same cells from each seed replica's Best-of-N tables, and their spread
    replicas = [build_table6(read_bon({"bon": inputs[f"seed_bon__{r['name']}"],
                                       "baselines": inputs[f"seed_baselines__{r['name']}"]}, params), pub, params)
                for r in params["seed_runs"]["replicas"]]
    emit_table("table6", seed_spread(cells, replicas), outputs, params, inputs,
               notes=policy_notes(params) + grader_notes(params) + seed_notes(params))
