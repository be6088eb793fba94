"""The harness grader (prm_lessons.grading.harness): math_equal's semantics on unit cases, the strip_string
normalisation in front of it, grading through the worker pool (`grader="harness"`, timeouts included) and
its agreement with the Qwen2.5-Math harness's own verdicts on the harness's example file."""
from __future__ import annotations

import sys

import pytest

from conftest import ROOT, shared_data_dir
from prm_lessons.grading.harness import math_equal, normalise, normalise_gold, normalise_pred, read_number, to_sympy
from prm_lessons.grading.pool import grade, grade_many, harness_settled

# ------------------------------------------------------------------------------ math_equal semantics


@pytest.mark.parametrize("pred, gold", [
    ("1/2", "0.5"),                                   # a fraction read by SymPy against a decimal
    ("\\frac{1}{2}", "0.5"),
    ("0.5", "\\frac{1}{2}"),
    ("50%", "0.5"),                                   # a percentage: /100
    ("50\\%", "0.5"),
    ("0.5", "50"),                                    # gold × 100 and gold / 100 count too (the harness's
    ("50", "0.5"),                                    # include_percentage)
    ("1,000", "1000"),                                # commas dropped before reading a number
    ("1.00009", "1"),                                 # relative tolerance 1e-4
    ("0.0833333", "\\frac{1}{12}"),
    ("ABC", "abc"),                                   # case-insensitive string match first
    ("C", "C"),                                       # a letter choice
    ("(C)", "C"),
    ("the option C", "C"),                            # the last standalone letter of the answer
    ("(1,2)", "(1, \\frac{4}{2})"),                   # tuples element-wise
    ("(0.6,2.6667]", "(\\frac{3}{5},\\frac{8}{3}]"),  # intervals element-wise, within tolerance
    ("[1,2)", "(1,2]"),                               # ... the bracket kinds are not compared, as there
    ("\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", "\\begin{pmatrix}1&2\\\\3&4.00001\\end{pmatrix}"),  # entry-wise
    ("x+2=0", "-x-2=0"),                              # equations up to sign
    ("x=3", "3"),                                     # a short left side is dropped
    ("3", "y=3"),
    ("2\\sqrt{2}", "\\sqrt{8}"),                      # symbolic equality
    ("\\frac{x}{7}+\\frac{2}{7}", "\\frac{x+2}{7}"),
    ("\\sec^2(y)", "\\tan^2(y)+1"),
])
def test_math_equal_holds(pred, gold):
    assert math_equal(pred, gold)


@pytest.mark.parametrize("pred, gold", [
    ("1.0002", "1"),                                  # outside the tolerance
    ("2", "0.5"),
    ("B", "C"),
    ("(1,2)", "(2,1)"),                               # order matters in a tuple
    ("(1,2,3)", "(1,2)"),
    ("\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", "\\begin{pmatrix}1&2\\\\3&5\\end{pmatrix}"),
    ("", "0"),                                        # an empty answer equals nothing
    ("x+1", "x+2n+1"),
    ("10000", "10{,}000"),                            # the harness never reads "{,}": no parse, no match
    (None, "1"),
])
def test_math_equal_fails(pred, gold):
    assert not math_equal(pred, gold)


def test_two_numbers_are_decided_by_tolerance_alone():
    """Numbers that differ are unequal outright: no symbolic fallback ('1e2' is a number, 100.0)."""
    assert read_number("1e2") == 100.0 and math_equal("1e2", "100")
    assert read_number("12\\%") == pytest.approx(0.12)
    assert read_number("x") is None


def test_normalise_is_the_harness_strip_string():
    assert normalise("\\dfrac{1}{2}") == "\\frac{1}{2}"
    assert normalise("5 cm") == "5"                    # unit words removed ...
    assert normalise("5 cm", keep_units=True) == "5cm"  # ... except for Minerva Math (KEEP_UNITS)
    assert normalise("\\text{4:30 p.m.}") == "4:30p.."  # its quirks too: the harness's own gold here
    assert normalise("x = 3") == "3"
    assert normalise("3/4") == "\\frac{3}{4}"


# ------------------------------------------------------------------------------ parse_latex's readings

# (prediction, gold, the harness's verdict): recorded from the harness's own grader.py and parser.py at
# a45202b in its test-only environment (bench/harness_agreement.py, 2026-11-29), on normalised strings
@pytest.mark.parametrize("pred, gold, harness", [
    ("12.5", "12\\frac{1}{2}", False),                 # a number before a factor: a product there (6) ...
    ("6", "12\\frac{1}{2}", True),
    ("12\\frac{1}{2}", "12.5", False),
    ("6", "2(3)", True),                                # ... not a mixed number nor 2 + 3
    ("3.14159", "\\pi", False),                        # \pi, a bare e: plain symbols there
    ("6.2832", "2\\pi", False),
    ("1.5708", "\\frac{\\pi}{2}", False),
    ("\\pi\\cdot2", "2\\pi", True),
    ("2.718281828", "e", False),
    ("7.389056", "e^{2}", False),
    ("e^2", "e^{2}", True),
    ("(2,3)\\cup(4,5)", "(4,5)\\cup(2,3)", False),      # no parser of the harness reads a union
    ("(3,\\infty)\\cup(-\\infty,2)", "(-\\infty,2)\\cup(3,\\infty)", False),
    ("(2,3)\\cup(4,5)", "(2,3)\\cup(4,5)", True),
    ("\\frac{1}{2},4", "\\frac{1}{2},3", True),          # parse_latex stops at a top-level comma
    ("-3,0dollars", "-3,0", True),
])
def test_math_equal_reads_as_the_harness_parsers(pred, gold, harness):
    assert math_equal(pred, gold) is harness


def test_to_sympy_readings():
    from sympy import Symbol
    assert [float(to_sympy(t)) for t in ("12\\frac{1}{2}", "2(3)", "3\\sqrt{4}", "-12\\frac{1}{2}")] == [6, 6, 6, -6]
    assert to_sympy("\\pi") == Symbol("pi") and to_sympy("e") == Symbol("e") and to_sympy("I") == Symbol("I")
    assert to_sympy("e^{2}") == Symbol("e") ** 2
    assert float(to_sympy("\\exp(2)")) == pytest.approx(7.389056)  # \exp: Euler's number there too
    assert to_sympy("(4,5)\\cup(2,3)") == "(4,5)\\cup(2,3)"      # left a string
    assert to_sympy("3,5") == 3 and to_sympy("(2,3)") == (2, 3)    # up to a top-level comma; parse_expr's tuple


def test_normalisation_passes_are_the_harness_ones():
    """strip_string is not idempotent: a prediction gets two passes (parser.py:568, :736), a gold read from a
    solution one, any other gold two (load and evaluate.py's re-parse), a unit-keeping gold that is not
    extracted none."""
    assert normalise("x \\in [1,3]") == "x\\in[1,3]" and normalise_pred("x \\in [1,3]") == "[1,3]"
    assert normalise_gold("x \\in [1,3]") == "[1,3]"
    assert normalise_gold("x \\in [1,3]", "gsm8k") == "[1,3]"
    assert normalise_gold("x \\in [1,3]", "boxed") == "x\\in[1,3]"
    assert normalise_gold("x \\leq 5 \\text{ cm}", "plain", keep_units=True) == "x \\le 5 \\text{ cm}"
    assert normalise_gold("5 \\text{ cm}", "boxed", keep_units=True) == "5"


@pytest.mark.parametrize("response, gold, fmt, correct", [
    ("\\boxed{[1,3]}", "x \\in [1,3]", "plain", True),       # the harness: True (gold on its 2nd pass)
    ("\\boxed{x \\in [1,3]}", "[1,3]", "plain", True),       # True (prediction on its 2nd pass)
    ("\\boxed{yes}", "\\text{\\text{yes}}", "plain", True),
    ("\\boxed{(-\\infty, \\infty)}", "(-\\infty, \\infty)", "plain", True),  # both become \mathbb{R}
])
def test_grading_normalises_as_the_harness(response, gold, fmt, correct):
    res = grade(response, gold, timeout_s=10, answer_format=fmt, grader="harness")
    assert res.status == "ok" and res.correct is correct, res


# ------------------------------------------------------------------------------ through the pool


@pytest.mark.parametrize("response, gold, correct", [
    ("\\boxed{1/2}", "0.5", True),
    ("\\boxed{50\\%}", "0.5", True),
    ("\\boxed{\\frac{1}{2}}", "0.5", True),
    ("\\boxed{(1, \\frac{4}{2})}", "(1,2)", True),
    ("\\boxed{[1,2)}", "[1, 2)", True),
    ("\\boxed{5 \\text{ cm}}", "5", True),
    ("\\boxed{x = 3}", "3", True),
    ("\\boxed{2\\sqrt{2}}", "\\sqrt{8}", True),
    ("\\boxed{7}", "6", False),
])
def test_grade_with_the_harness_grader(response, gold, correct):
    res = grade(response, gold, timeout_s=10, grader="harness")
    assert res.status == "ok" and res.correct is correct, res


def test_harness_grader_reports_the_extracted_answer_not_its_normal_form():
    res = grade("So it is \\boxed{\\dfrac{1}{2} \\text{ cm}}", "0.5", timeout_s=10, grader="harness")
    assert res.correct and res.pred == "\\dfrac{1}{2} \\text{ cm}"


def test_harness_grader_on_choices():
    texts = ["The answer is (B).", "The answer is (C).", "The answer is 12.", "\\boxed{B}"]
    res = grade_many(texts, [1, 1, 1, 1], answer_format="choice", grader="harness", timeout_s=10)
    assert [(r.pred, r.correct) for r in res] == [("B", True), ("C", False), ("12", False), ("B", True)]


def test_harness_grader_grades_a_multi_part_gold_on_its_first_part():
    """The harness reads OlympiadBench's final_answer[0] only; math-verify grades the joined list."""
    assert grade_many(["\\boxed{3}"], [["3", "4"]], grader="harness", timeout_s=10)[0].correct
    assert not grade_many(["\\boxed{3}"], [["3", "4"]], grader="math_verify", timeout_s=10)[0].correct


def test_harness_settled_needs_no_worker_for_strings_letters_and_numbers():
    assert harness_settled("\\dfrac12", "\\frac{1}{2}") is True
    assert harness_settled("B", "C", "choice") is False
    assert harness_settled("12", "C") is False                # no symbol C in it: never equal to C
    assert harness_settled("0.5", "50") is True
    assert harness_settled("2\\sqrt{2}", "\\sqrt{8}") == ("2\\sqrt{2}", "\\sqrt{8}")  # SymPy: a worker job


def test_a_pathological_comparison_times_out_in_the_pool(caplog):
    res = grade("\\boxed{" + "(" * 3000 + "1" + ")" * 3000 + "}", "2", timeout_s=1.0, grader="harness")
    assert res.status == "timeout" and res.correct is False and res.pred.startswith("((")
    assert "harness math_equal" in caplog.text and "timed out" in caplog.text
    assert grade("\\boxed{\\frac{2}{4}}", "0.5", timeout_s=10, grader="harness").correct  # the pool recovers


def test_an_unknown_grader_is_refused():
    with pytest.raises(ValueError, match="grading.grader must be one of math_verify, harness"):
        grade_many(["\\boxed{1}"], ["1"], grader="sympy")


# ------------------------------------------------------------------------------ fidelity (../shared data)


def test_harness_grader_agrees_with_the_harness_at_least_as_often_as_math_verify():
    """100 MATH problems x 8 responses with the harness's own verdicts: the harness grader agrees on every
    one (800/800; math-verify 799/800), and never on fewer than the default grader."""
    sys.path.insert(0, str(ROOT / "bench"))
    from grading_agreement import agreement

    data = shared_data_dir("bon", "math_cot_100_samples.jsonl")
    _, res_h, disagree_h, _ = agreement(data, workers=2, timeout_s=5.0, verbose=False, grader="harness")
    _, res_m, disagree_m, _ = agreement(data, workers=2, timeout_s=5.0, verbose=False, grader="math_verify")
    assert len(res_h) == len(res_m) == 800
    assert len(disagree_h) <= len(disagree_m)
    assert not disagree_h, disagree_h[:5]
