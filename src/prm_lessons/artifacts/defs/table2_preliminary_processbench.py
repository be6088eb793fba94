"""Table 2: what it reads, its params, its cells builder, its notes and its rule function `run`."""
from __future__ import annotations

from prm_lessons.artifacts.defs.table1_preliminary_bon import preliminary_notes
from prm_lessons.artifacts.defs.table4_data_sources_processbench import build_table4
from prm_lessons.artifacts.inputs import read_pb
from prm_lessons.artifacts.published import load_published
from prm_lessons.artifacts.render import emit_table

ID = "table2"
KIND = "table"
SOURCE = "Table 2"
TITLE = ("Preliminary trials: ProcessBench error/correct accuracy and F1 (%) of PRMs trained on MC hard and soft "
         "labels and on PRM800K")
SECTION = "Preliminary trials"
# what the rule reads: input groups of workflow/rules/analysis.smk (ARTIFACT_INPUT_GROUPS)
INPUTS = ("processbench", "trainsets")
# the config `analysis.*` keys the rule receives as params (besides `run`)
PARAMS = ("paper_rows", "paper_columns", "mc_experiment", "data_setting")


def run(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 2 (preliminary trials, ProcessBench): Table 4's builder on the rows keyed human / mc_hard /
    mc_soft; notes as in Table 1."""
    cells = build_table4(read_pb(inputs), load_published(), params, tid="table2")
    emit_table("table2", cells, outputs, params, inputs, notes=preliminary_notes(cells, params))
