"""Rule fig6_annotation_sheet (prm_lessons.rules.analysis): the sheet from the Figure 6 datasets' samples."""
import pandas as pd

from prm_lessons.labels.annotation import SHEET_COLUMNS, read_sheet
from prm_lessons.rules.analysis import fig6_annotation_sheet


def test_rule_writes_the_sheet(tmp_path):
    s = pd.DataFrame({"problem_id": ["p", "p", "q"], "sample_idx": [0, 8, 0], "question": ["P?", "P?", "Q?"],
                      "steps": [["a", "b"], ["c"], ["d"]], "correct": [True, True, False]})
    s.to_parquet(tmp_path / "gsm8k.parquet")
    out = tmp_path / "annotation" / "fig6_sheet.csv"
    fig6_annotation_sheet(inputs={"samples__gsm8k": str(tmp_path / "gsm8k.parquet")}, outputs={"sheet": str(out)},
                          params={"annotation": {"per_benchmark": 5, "seed": 0, "labels": None}, "n": 8},
                          wildcards={}, threads=1)
    sheet = read_sheet(out)
    assert list(sheet.columns) == SHEET_COLUMNS
    assert sheet["id"].tolist() == ["gsm8k/p/0"]  # the only correct answer among the first 8 samples
    assert sheet["steps"].iloc[0] == "[1] a\n\n[2] b"
