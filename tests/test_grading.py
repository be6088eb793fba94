"""Answer extraction and grading: harness conventions, math-verify equivalence, timeouts, CLI, agreement."""
from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

import pytest

from prm_lessons.grading import (
    GradeResult,
    extract_answer,
    grade,
    grade_many,
    grade_rows,
    last_boxed_content,
)

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("PRM_LESSONS_SHARED", ROOT / ".." / "shared"))
HARNESS = SHARED / "data" / "bon" / "math_cot_100_samples.jsonl"


# -------------------------------------------------------------------------------------- extraction

@pytest.mark.parametrize("text, expected", [
    ("so the answer is \\boxed{5}.", "5"),
    ("\\boxed{\\frac{1}{\\sqrt{2}}}", "\\frac{1}{\\sqrt{2}}"),            # nested braces
    ("\\boxed{\\{1, 2\\}}", "\\{1, 2\\}"),
    ("first \\boxed{3}, then corrected: \\boxed{4}", "4"),               # the last box wins
    ("\\boxed{7} is it. Some text after the box with 99 in it.", "7"),    # text after the box
    ("The result is $\\boxed 5$.", "5"),                                  # \boxed without braces
    ("\\fbox{12}", "12"),
    ("We get 3 apples, so the answer is 12.", "12"),                     # "the answer is" fallback
    ("Thus the final answer is 8", "8"),
    ("We computed 4 and then 17 in total", "17"),                        # last number fallback
    ("No digits here at all", None),                                     # nothing: None
    ("", None),
    ("\\boxed{12", "12"),                                                # truncated box: the harness takes the rest
])
def test_extract_answer(text, expected):
    assert extract_answer(text) == expected


def test_last_boxed_content_none_without_box():
    assert last_boxed_content("no box") is None


# ---------------------------------------------------------------------------------------- grading

@pytest.mark.parametrize("response, gold, correct", [
    ("\\boxed{5 cm}", "5", True),                     # units
    ("\\boxed{\\$5}", "5", True),
    ("\\boxed{5\\%}", "5", True),
    ("\\boxed{5 \\text{ cm}}", "5", True),
    ("\\boxed{10}", "10 \\text{ cm}", True),
    ("\\boxed{\\frac{1}{2}}", "0.5", True),           # fractions / latex equivalence
    ("\\boxed{\\dfrac12}", "\\frac{1}{2}", True),
    ("\\boxed{1/2}", "$\\frac{1}{2}$", True),          # gold given as LaTeX in $...$
    ("\\boxed{2\\sqrt{2}}", "\\sqrt{8}", True),
    ("\\boxed{(1,2)}", "(1, 2)", True),
    ("\\boxed{x = 3}", "3", True),
    ("first \\boxed{3} then \\boxed{4}", "3", False),  # multiple boxes: the last one is graded
    ("first \\boxed{3} then \\boxed{4}", "4", True),
    ("\\boxed{5}", "6", False),
    ("\\boxed{-190}", "-190", True),
])
def test_grade_equivalences(response, gold, correct):
    res = grade(response, gold, timeout_s=10)
    assert res.status == "ok"
    assert res.correct is correct, res


def test_grade_no_answer():
    assert grade("I am not sure how to do this.", "1") == GradeResult(None, False, "no_answer")
    assert grade(None, "1").status == "no_answer"


def test_grade_accepts_a_bare_prediction():
    assert grade("\\frac{1}{2}", "0.5").correct
    assert grade("5 cm", "5").correct


def test_pathological_output_times_out_and_counts_incorrect(caplog):
    """A 20,000-character output whose comparison cannot finish: timeout, incorrect, reported."""
    patho = "\\boxed{" + "(" * 10000 + "1" + ")" * 10000 + "}"
    assert len(patho) > 20000
    res = grade(patho, "1", timeout_s=1.5)
    assert res.status == "timeout" and res.correct is False
    assert "timed out" in caplog.text
    # the pool recovers: the next response is graded normally
    assert grade("\\boxed{\\frac{2}{4}}", "0.5", timeout_s=10).correct


def test_long_text_without_answer_is_fast_no_answer():
    res = grade("blah " * 4000, "1", timeout_s=2)
    assert res == GradeResult(None, False, "no_answer")


def test_grade_many_mixed_batch_keeps_order():
    texts = ["\\boxed{2}", "\\boxed{\\frac{1}{2}}", "no answer here", "\\boxed{" + "(" * 5000 + "1" + ")" * 5000 + "}",
             "\\boxed{3}"]
    golds = ["2", "0.5", "1", "1", "4"]
    res = grade_many(texts, golds, timeout_s=1.5, workers=2)
    assert [r.status for r in res] == ["ok", "ok", "no_answer", "timeout", "ok"]
    assert [r.correct for r in res] == [True, True, False, False, False]
    with pytest.raises(ValueError):
        grade_many(["a"], [], timeout_s=1)


def test_grading_works_from_a_thread():
    """math-verify's own signal timeouts fail outside the main thread; ours must not."""
    out = {}

    def work():
        out["res"] = grade("\\boxed{\\frac{3}{6}}", "\\frac12", timeout_s=10)

    t = threading.Thread(target=work)
    t.start()
    t.join(60)
    assert out["res"].correct


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
    assert "row 3" in capsys.readouterr().err


def test_grade_rows_empty_list():
    out, summary = grade_rows([{"response": [], "answer": "1"}])
    assert out[0]["pred"] == [] and summary["n"] == 0


# ------------------------------------------------------------------------- agreement with the harness

@pytest.mark.skipif(not HARNESS.exists(), reason="../shared not present")
def test_agreement_with_qwen25_math_harness():
    sys.path.insert(0, str(ROOT / "bench"))
    from grading_agreement import agreement

    rate, results, disagree = agreement(HARNESS, workers=2, timeout_s=5.0, verbose=False)
    assert len(results) == 800
    assert rate >= 0.98, disagree[:5]
