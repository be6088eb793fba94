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


# how each `tuned_on` protocol (processbench_eval.tune_on; metrics.processbench.evaluate_processbench) chose
# the threshold, as Table 7's note says it
TUNED_ON_TEXT = {
    "gsm8k": "tuned by ProcessBench's rule (§4.1; the paper's Skywork rows): best F1 on the GSM8K subset, "
             "in-sample, applied to every subset",
    "crossfit": "cross-fitted: the best average F1 on one half of the cases scores the other half (fold 0 / "
                "fold 1), no case scored with a threshold tuned on itself",
    "dev": "tuned on the dev split: its best average F1",
}


def _threshold_text(value) -> str | None:
    """processbench.csv's threshold cell (a number, 'a|b' for cross-fitted fold thresholds, empty) as text."""
    if value is None or (isinstance(value, float) and value != value) or str(value).strip() == "":
        return None
    return " / ".join(f"{float(x):.4g}" for x in str(value).split("|"))


def threshold_notes(pb: pd.DataFrame, cells: pd.DataFrame) -> list[str]:
    """Footnotes naming each scored row's ProcessBench threshold and how it was chosen (processbench.csv
    `threshold`, `tuned_on`), one per protocol (and one per fixed value), rows in the table's order.
    Critics and model-free baselines have no threshold and no note; a table without both columns, none."""
    if not {"threshold", "tuned_on"} <= set(pb.columns) or cells.empty:
        return []
    by_prm = {p: (t, o) for p, t, o in zip(pb["prm"], pb["threshold"], pb["tuned_on"])}  # one value per PRM
    groups: dict[tuple, list[str]] = {}
    for row in dict.fromkeys(cells["row"]):
        t, protocol = by_prm.get(row, (None, None))
        text = _threshold_text(t)
        if text is None:
            continue
        protocol = protocol if isinstance(protocol, str) and protocol else None
        if protocol is None:
            groups.setdefault(("fixed", text), []).append(row)
        else:
            groups.setdefault((protocol, None), []).append(f"{row} {text}")
    notes = []
    for (protocol, value), rows in groups.items():
        if protocol == "fixed":
            notes.append(f"Threshold {value} (fixed; a step is erroneous when its score is below it): "
                         f"{', '.join(rows)}.")
        else:
            how = TUNED_ON_TEXT.get(protocol, f"tuned ({protocol})")
            notes.append(f"Threshold {how} (processbench_eval.tune_on: {protocol}): {', '.join(rows)}.")
    return notes


def build_table7(pb, pub, params):
    return pb_cells(pb, list(dict.fromkeys(pb["prm"])), pub, "table7", params)


def run(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 7 (ProcessBench for every PRM and critic; the notes name each scored row's threshold and how
    it was chosen, and each critic row's setting)."""
    pb = read_pb(inputs)
    cells = build_table7(pb, load_published(), params)
    emit_table("table7", cells, outputs, params, inputs,
               notes=threshold_notes(pb, cells) + row_setting_notes(pb, cells))
