"""Figure 6's annotation sheet (prm_lessons.labels.annotation): the seeded draw of correct-answer
responses, and the filled-in sheet read back with every bad row named by its id."""
from __future__ import annotations

import pandas as pd
import pytest

from prm_lessons.labels import annotation as A


def _samples(n_problems: int = 6, n: int = 4) -> pd.DataFrame:
    rows = [{"problem_id": f"p{p}", "sample_idx": i, "question": f"Q{p}?", "steps": [f"s{p}.{i}", "\\boxed{1}"],
             "correct": (p + i) % 2 == 0} for p in range(n_problems) for i in range(n)]
    return pd.DataFrame(rows)


def test_sheet_draws_correct_answers_of_the_first_n_seeded_and_order_free():
    s = _samples()
    sheet = A.sample_sheet({"gsm8k": s, "math": s}, per_benchmark=3, seed=0, n=2)
    assert list(sheet.columns) == A.SHEET_COLUMNS
    assert sheet.groupby("benchmark").size().to_dict() == {"gsm8k": 3, "math": 3}
    for r in sheet.itertuples():  # only correct responses among the first n samples
        src = s[(s["problem_id"] == r.problem_id) & (s["sample_idx"] == r.sample_idx)].iloc[0]
        assert bool(src["correct"]) and r.sample_idx < 2
        assert r.id == f"{r.benchmark}/{r.problem_id}/{r.sample_idx}"
    assert sheet["steps"].iloc[0].startswith("[1] ") and "\n\n[2] \\boxed{1}" in sheet["steps"].iloc[0]
    assert (sheet[["process_flawed", "first_error_step", "notes"]] == "").all().all()
    shuffled = A.sample_sheet({"gsm8k": s.sample(frac=1, random_state=3)}, 3, 0, 2)
    assert list(shuffled["id"]) == list(sheet[sheet["benchmark"] == "gsm8k"]["id"])
    other = A.sample_sheet({"gsm8k": s}, 3, 1, 2)
    assert set(other["id"]) != set(shuffled["id"])  # the seed changes the draw (6 candidates, 3 drawn)


def test_a_set_without_a_correct_answer_gives_no_rows():
    """A benchmark where the policy got nothing right (the rehearsal's random weights) adds no row; the
    other benchmarks' rows stay."""
    s = _samples()
    none_right = s.assign(correct=False)
    sheet = A.sample_sheet({"gsm8k": none_right, "math": s}, per_benchmark=3, seed=0, n=2)
    assert set(sheet["benchmark"]) == {"math"} and len(sheet) == 3
    assert A.sample_sheet({"gsm8k": none_right}, 3, 0, 2).empty


def test_sheet_round_trip_and_labels(tmp_path):
    sheet = A.sample_sheet({"gsm8k": _samples()}, 4, 0, None)
    path = tmp_path / "sheet.csv"
    A.write_sheet(sheet, path)
    back = A.read_sheet(path)
    back.loc[0, "process_flawed"] = "yes"
    back.loc[0, "first_error_step"] = "2"
    back.loc[1, "process_flawed"] = "No"
    back.to_csv(tmp_path / "filled.csv", index=False)
    labels = A.read_labels(tmp_path / "filled.csv", back)
    assert labels["labelled"].tolist() == [True, True, False, False]
    assert labels["flawed"].tolist()[:2] == [True, False] and labels["first_error_step"].iloc[0] == 2


@pytest.mark.parametrize("edit, message", [
    ({"id": "gsm8k/nope/0"}, "row id 'gsm8k/nope/0' \\(line 2\\): not in the exported sheet"),
    ({"process_flawed": "maybe"}, "process_flawed 'maybe', expected yes or no"),
    ({"process_flawed": "yes", "first_error_step": "9"}, "first_error_step '9', expected a step number 1..2"),
    ({"process_flawed": "yes", "first_error_step": "x"}, "first_error_step 'x'"),
    ({"process_flawed": "no", "first_error_step": "1"}, "first_error_step 1 on a row not marked process_flawed yes"),
    # str.isdigit() takes these; int() refuses the first and the last (a traceback, not the row)
    ({"process_flawed": "yes", "first_error_step": "²"}, "first_error_step '²', expected a step number 1..2"),
    ({"process_flawed": "yes", "first_error_step": "١"}, "first_error_step '١', expected a step number 1..2"),
    ({"process_flawed": "yes", "first_error_step": "1" * 5000}, "first_error_step '1111"),
    ({"process_flawed": "yes", "first_error_step": "2.0"}, "first_error_step '2.0'"),
    ({"id": " "}, "row id '' \\(line 2\\): empty id"),
])
def test_bad_rows_are_named_by_id(tmp_path, edit, message):
    sheet = A.sample_sheet({"gsm8k": _samples()}, 2, 0, None)
    filled = sheet.copy()
    for k, v in edit.items():
        filled.loc[0, k] = v
    filled.to_csv(tmp_path / "filled.csv", index=False)
    with pytest.raises(ValueError, match=message) as exc:
        A.read_labels(tmp_path / "filled.csv", sheet)
    if "id" not in edit:
        assert f"row id '{sheet['id'].iloc[0]}'" in str(exc.value)


def test_repeated_row_and_missing_column_are_errors(tmp_path):
    sheet = A.sample_sheet({"gsm8k": _samples()}, 2, 0, None)
    pd.concat([sheet, sheet.iloc[:1]]).to_csv(tmp_path / "twice.csv", index=False)
    with pytest.raises(ValueError, match="labelled twice"):
        A.read_labels(tmp_path / "twice.csv", sheet)
    sheet.drop(columns=["process_flawed"]).to_csv(tmp_path / "nocol.csv", index=False)
    with pytest.raises(ValueError, match="process_flawed"):
        A.read_labels(tmp_path / "nocol.csv", sheet)
    with pytest.raises(ValueError, match="per_benchmark"):
        A.sample_sheet({"gsm8k": _samples()}, 0, 0, None)


def test_every_bad_row_is_reported_together_with_its_id_and_line(tmp_path):
    sheet = A.sample_sheet({"gsm8k": _samples()}, 4, 0, None)
    filled = sheet.copy()
    filled.loc[0, "process_flawed"] = "perhaps"
    filled.loc[1, ["process_flawed", "first_error_step"]] = ["yes", "0"]
    filled.loc[2, ["process_flawed", "first_error_step"]] = ["yes", "2"]  # a good row among them
    filled.loc[3, ["process_flawed", "first_error_step"]] = ["", "1"]
    filled.to_csv(tmp_path / "filled.csv", index=False)
    with pytest.raises(ValueError, match="3 bad row") as exc:
        A.read_labels(tmp_path / "filled.csv", sheet)
    for k in (0, 1, 3):
        assert f"row id '{sheet['id'].iloc[k]}' (line {k + 2}): " in str(exc.value)
    assert sheet["id"].iloc[2] not in str(exc.value)
