"""Table 7: what it reads, its params, its cells builder, its notes and its rule function `run`."""
from __future__ import annotations

import pandas as pd

from prm_lessons.artifacts.cells import pb_cells
from prm_lessons.artifacts.inputs import read_pb
from prm_lessons.artifacts.published import load_published
from prm_lessons.artifacts.render import emit_table

ID = "table7"
KIND = "table"
SOURCE = "Table 7"
TITLE = "Main results: ProcessBench error/correct accuracy and F1 (%)"
SECTION = "Main results"
# what the rule reads: input groups of workflow/rules/analysis.smk (ARTIFACT_INPUT_GROUPS)
INPUTS = ("processbench",)
# the config `analysis.*` keys the rule receives as params (besides `run`)
PARAMS = ("paper_rows", "paper_columns")


def row_setting_notes(pb: pd.DataFrame, cells: pd.DataFrame) -> list[str]:
    """One footnote per table row that records what it ran with (processbench.csv `setting`: a critic's
    model, template, parse mode and sampling), in the table's row order."""
    if "setting" not in pb.columns or cells.empty:
        return []
    setting = {p: s for p, s in zip(pb["prm"], pb["setting"]) if isinstance(s, str) and s}
    return [f"{row}: {setting[row]}." for row in dict.fromkeys(cells["row"]) if row in setting]


def build_table7(pb, pub, params):
    return pb_cells(pb, list(dict.fromkeys(pb["prm"])), pub, "table7", params)


def run(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 7 (ProcessBench for every PRM and critic; the notes name each critic row's setting)."""
    pb = read_pb(inputs)
    cells = build_table7(pb, load_published(), params)
    emit_table("table7", cells, outputs, params, inputs, notes=row_setting_notes(pb, cells))
