"""Table 4: what it reads, its params, its cells builder, its notes and its rule function `run`."""
from __future__ import annotations

from prm_lessons.artifacts.cells import keys_in, pb_cells
from prm_lessons.artifacts.inputs import read_pb
from prm_lessons.artifacts.published import load_published, paper_key
from prm_lessons.artifacts.render import emit_table

ID = "table4"
KIND = "table"
SOURCE = "Table 4"
TITLE = "Data source comparison: ProcessBench error/correct accuracy and F1 (%)"
SECTION = "Data sources"
# what the rule reads: input groups of workflow/rules/analysis.smk (ARTIFACT_INPUT_GROUPS)
INPUTS = ("processbench", "trainsets")
# the config `analysis.*` keys the rule receives as params (besides `run`)
PARAMS = ("paper_rows", "paper_columns", "mc_experiment", "data_setting")


def build_table4(pb, pub, params, tid: str = "table4"):
    """Table 4 (and Table 2): the ProcessBench rows whose paper key is in the table."""
    names = [p for p in dict.fromkeys(pb["prm"]) if paper_key(p, params) in keys_in(pub, tid)]
    return pb_cells(pb, names, pub, tid, params)


def run(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 4 (ProcessBench by training-data source)."""
    emit_table("table4", build_table4(read_pb(inputs), load_published(), params), outputs, params, inputs)
