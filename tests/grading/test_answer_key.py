"""maj@N as the Qwen2.5-Math harness groups answers (bon.maj_grouping: harness): its strip_string form
(prm_lessons.grading.answer_key) and an empty answer that votes (rm_maj_eval.py)."""
from __future__ import annotations

import json
from collections import Counter

import pandas as pd
import pytest

from conftest import shared_data_dir
from prm_lessons.grading.answer_key import harness_key
from prm_lessons.metrics.bon import bon_metrics, bon_problem_table


@pytest.mark.parametrize("raw,key", [
    ("\\dfrac{1}{2}", "\\frac{1}{2}"), ("\\tfrac12", "\\frac{1}{2}"), ("1/2", "\\frac{1}{2}"),
    ("\\frac1{72}", "\\frac{1}{72}"), ("five", "5"), ("10\\%", "10"), ("x=3", "3"), ("k = 7", "7"),
    ("5 cm", "5"), ("2.0", "2"), ("2.50", "2.50"), (".5", "0.5"), ("\\sqrt2", "\\sqrt{2}"),
    ("90^\\circ", "90"), ("\\$12", "12"), ("\\left( 1, 2 \\right)", "(1,2)"), ("\\{1,2\\}", "{1,2}"),
    ("3j", "3i"), ("infinity", "\\infty"), ("x \\leq 3", "x\\le3"), ("\\begin{bmatrix}1\\end{bmatrix}",
                                                               "\\begin{pmatrix}1\\end{pmatrix}"),
    (None, ""), ("", ""), ("  7.\n", "7"),
])
def test_harness_key_steps(raw, key):
    assert harness_key(raw) == key


def test_units_are_kept_where_the_harness_keeps_them():
    assert harness_key("5 cm") == "5" and harness_key("5 cm", skip_unit=True) == "5cm"
    # a benchmark in answer_key.KEEP_UNITS groups with units kept: "5 cm" and "5 m" are two answers there
    df = pd.DataFrame({"benchmark": ["minerva_math"] * 3 + ["gsm8k"] * 3, "problem_id": ["p"] * 3 + ["q"] * 3,
                       "sample_idx": [0, 1, 2] * 2, "pred": ["5 m", "5 cm", "6 cm"] * 2,
                       "correct": [False, False, True] * 2, "step_scores": [None] * 6})
    probs, _ = bon_problem_table(df, [], maj_grouping="harness")
    got = dict(zip(probs["benchmark"], probs["maj_sample_idx"]))
    assert got == {"minerva_math": 0, "gsm8k": 0}  # gsm8k: "5","5","6" → idx 0; minerva: a 1-1-1 tie → idx 0
    df.loc[df["benchmark"] == "minerva_math", "pred"] = ["6 cm", "5 m", "5 cm"]
    probs, _ = bon_problem_table(df, [], maj_grouping="harness")
    assert dict(zip(probs["benchmark"], probs["maj_sample_idx"]))["minerva_math"] == 0  # tie → first seen


def test_an_empty_answer_votes_under_harness_grouping_only():
    df = pd.DataFrame({"benchmark": ["b"] * 3, "problem_id": ["p"] * 3, "sample_idx": [0, 1, 2],
                       "pred": [None, None, "3"], "correct": [False, False, True], "step_scores": [None] * 3})
    harness, _ = bon_problem_table(df, [], maj_grouping="harness")
    normalized, _ = bon_problem_table(df, [], maj_grouping="normalized")
    assert harness["maj"].tolist() == [0.0] and harness["maj_sample_idx"].tolist() == [0]
    assert normalized["maj"].tolist() == [1.0] and normalized["maj_sample_idx"].tolist() == [2]


def test_harness_grouping_equals_rm_maj_eval_on_the_harness_example():
    """The harness's own Best-of-8 file: its `pred` strings are already strip_string output, so our key
    must leave every one of them unchanged (800 answers), and maj@8 must equal rm_maj_eval.py's (exact
    Counter.most_common over the preds, correctness of the first occurrence), written out independently."""
    rows = [json.loads(line) for line in open(shared_data_dir("bon", "math_cot_100_samples.jsonl"))]
    preds = [p for r in rows for p in r["pred"]]
    assert len(preds) == 800 and all(harness_key(p) == p for p in preds)
    official = 0
    for r in rows:
        top = Counter(r["pred"][:8]).most_common(1)[0][0]
        official += r["score"][r["pred"][:8].index(top)]
    flat = [{"benchmark": "math", "problem_id": str(r["idx"]), "sample_idx": j, "pred": r["pred"][j],
             "correct": bool(r["score"][j]), "step_scores": None} for r in rows for j in range(8)]
    m = bon_metrics(pd.DataFrame(flat), [], n=8, maj_grouping="harness", bootstrap=0)
    assert m["benchmarks"]["math"]["maj"] == pytest.approx(official / len(rows))
