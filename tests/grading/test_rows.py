"""Grading rows of a file (prm_lessons.grading.rows) and `prm-lessons grade`."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prm_lessons.errors import InputError
from prm_lessons.grading.rows import grade_rows

# -------------------------------------------------------------------------------------------- CLI

def test_cli_grade_writes_rows_and_counts(tmp_path, capsys):
    from prm_lessons.cli import main

    inp = tmp_path / "in.jsonl"
    rows = [{"id": 1, "response": "so \\boxed{4}", "answer": "4"},
            {"id": 2, "response": "nothing", "answer": "4"},
            {"id": 3, "code": ["\\boxed{1}", "\\boxed{2}"], "response": "x", "answer": "2"}]
    inp.write_text("".join(json.dumps(r) + "\n" for r in rows[:2]))
    out = tmp_path / "out.jsonl"
    assert main(["grade", "--input", str(inp), "--output", str(out)]) == 0
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(g["id"], g["pred"], g["correct"]) for g in got] == [(1, "4", True), (2, None, False)]
    printed = capsys.readouterr().out
    assert "2 responses" in printed and "1 without an answer" in printed and "0 timed out" in printed

    # a list-valued response field (the harness's `code`) gives lists of the same length
    inp.write_text(json.dumps(rows[2]) + "\n")
    assert main(["grade", "--input", str(inp), "--output", str(out), "--response-field", "code"]) == 0
    got = json.loads(out.read_text())
    assert got["pred"] == ["1", "2"] and got["correct"] == [False, True]

    # a missing field is a clear error naming the row
    assert main(["grade", "--input", str(inp), "--output", str(out), "--response-field", "nope"]) == 2
    assert "row 1 (id 3): no field 'nope'" in capsys.readouterr().err


def test_grade_rows_empty_list():
    out, summary = grade_rows([{"response": [], "answer": "1"}])
    assert out[0]["pred"] == [] and summary["n"] == 0


# -- choice golds of the grade CLI: read as the problems loader reads them, graded as read ----------------

@settings(max_examples=60, deadline=None)
@given(gold=st.one_of(st.text(max_size=4), st.integers(min_value=-3, max_value=12),
                      st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.none(),
                      st.lists(st.sampled_from("ABCDE"), max_size=2)))
def test_a_choice_gold_is_a_letter_or_its_index_and_is_graded_as_read(gold):
    """Every gold the checked reader takes (a letter A-E in any case, an index 0-4, 2.0 as 2) is graded as
    that letter; every other ("2" as text, "Z", 7, "(A)", a list) is an error naming the row."""
    from prm_lessons.fields import FieldError, read_choice_gold
    from prm_lessons.grading.extract import CHOICE_LETTERS

    try:
        letter = read_choice_gold(gold, list(CHOICE_LETTERS), "")
    except FieldError:
        letter = None
    rows = [{"id": "r1", "response": f"The answer is {letter or 'A'}", "answer": gold}]
    if letter is None:
        with pytest.raises(InputError, match=r"row 1 \(id r1\): gold answer"):
            grade_rows(rows, answer_format="choice", workers=1)
        return
    out, _ = grade_rows(rows, answer_format="choice", workers=1)
    assert out[0]["correct"] is True and out[0]["pred"] == letter, out
