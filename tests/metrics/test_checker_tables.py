"""metrics.checker on tiny frames: validation against exact labels, Best-of-N ceiling and checker-selected
Best-of-N, the flawed-process rate, and the `checker` training labels."""
from __future__ import annotations

import pandas as pd
import pytest

from prm_lessons.evaluation.bias_analysis import policy_flaw_rate
from prm_lessons.labels.trainsets import build_variant, checker_labels
from prm_lessons.metrics.checker import bon, check_samples, validation

GOOD = ["First, 2 * 3 = 6, so the expression becomes 6 + 1.", "Finally, 6 + 1 = 7.", "\\boxed{7}"]
BAD_KEEP = ["First, 2 * 3 = 5, so the expression becomes 6 + 1.", "Finally, 6 + 1 = 7.", "\\boxed{7}"]
BAD_CHANGE = ["First, 2 * 3 = 5, so the expression becomes 5 + 1.", "Finally, 5 + 1 = 6.", "\\boxed{6}"]
SWAP = ["First, 2 / 3 = 0.6667, so the expression becomes 0.6667 + 1.", "Finally, 0.6667 + 1 = 1.6667.",
        "\\boxed{1.6667}"]
WORDS = ["I add them up in my head.", "\\boxed{9}"]


def _cases():
    rows = [("a", GOOD, -1, True), ("b", BAD_KEEP, 0, True), ("c", BAD_CHANGE, 0, False), ("d", SWAP, 0, False),
            ("e", GOOD, -1, True)]
    return pd.DataFrame([{"id": i, "subset": "s", "steps": st, "label": lab, "final_answer_correct": fac}
                         for i, st, lab, fac in rows])


def _get(df, kind, metric, subset="all"):
    r = df[(df["subset"] == subset) & (df["kind"] == kind) & (df["metric"] == metric)]
    assert len(r) == 1
    return r.iloc[0]


def test_validation_counts_recall_misses_and_false_alarms():
    df = validation(_cases())
    assert _get(df, "gold", "false_alarm")[["k", "n"]].tolist() == [0, 2]
    assert _get(df, "answer_keeping", "recall")[["k", "n"]].tolist() == [1, 1]
    assert _get(df, "answer_changing", "recall")[["k", "n"]].tolist() == [1, 2]
    # the operation swap (2 / 3 written for 2 * 3, computed consistently) is the miss, and says why
    assert _get(df, "answer_changing", "missed_equations_hold")[["k", "n"]].tolist() == [1, 2]
    assert _get(df, "all", "first_error_acc")[["k", "n"]].tolist() == [4, 5]
    r = _get(df, "error", "located")
    assert r["rate"] == pytest.approx(2 / 3) and 0 <= r["ci_low"] < r["rate"] < r["ci_high"] <= 1


def _samples():
    # problem p: sample 0 wrong answer, 1 correct but flawed, 2 correct and clean; q: all wrong, 0 flagged
    rows = [("p", 0, BAD_CHANGE, False), ("p", 1, BAD_KEEP, True), ("p", 2, GOOD, True),
            ("q", 0, BAD_CHANGE, False), ("q", 1, WORDS, False)]
    return pd.DataFrame([{"problem_id": p, "sample_idx": i, "steps": st, "correct": c} for p, i, st, c in rows])


def test_bon_ceiling_checker_selection_and_flaw_rate():
    s = _samples()
    checks = check_samples(s)
    assert checks["first_error"].tolist() == [0, 0, -1, 0, -1]
    out = bon(s, checks, "arith").set_index("metric")
    assert out.loc["pass", ["count", "total"]].tolist() == [1, 2]
    # p: the first flawless sample (2) is correct; q: sample 1 (nothing checkable) counts flawless and is wrong
    assert out.loc["checker", ["count", "total"]].tolist() == [1, 2]
    assert out.loc["single", ["count", "total"]].tolist() == [2, 5]
    assert out.loc["flawed_among_correct", ["count", "total"]].tolist() == [1, 2]
    assert out.loc["unflagged_among_wrong", ["count", "total"]].tolist() == [1, 3]
    assert (out["n"] == 3).all()
    # the first N only: N=2 drops p's clean sample, so the checker has nothing flawless there and takes sample 0
    two = bon(s, checks, "arith", n=2).set_index("metric")
    assert two.loc["checker", "count"] == 0 and two.loc["pass", "count"] == 1
    # Figure 6's reading of the same table agrees
    r = policy_flaw_rate(s, checks, "arith", source="policy_checker")
    assert (r["n_flawed"], r["n_judged"], r["source"]) == (1, 2, "policy_checker")


def test_checker_training_labels_skip_wrong_answers_the_checker_cannot_locate():
    s = _samples()
    s["question"], s["dataset"] = "What is 2 * 3 + 1?", "train"
    labels, counts = checker_labels(check_samples(s), s)
    assert labels[("p", 1)] == [0.0] and labels[("p", 2)] == [1.0, 1.0, 1.0]
    assert ("q", 1) not in labels and counts["unlocated_wrong_answer"] == 1 and counts["labelled"] == 4
    df, st = build_variant("checker", {"source": "checker", "label_type": "hard", "threshold": None},
                           samples=[s], checker=[check_samples(s)])
    assert st["n_instances"] == 4 and st["n_candidates"] == 5
    assert df.set_index("instance_id").loc["p#1", "steps"] == BAD_KEEP[:1]


def test_step_coverage_of_the_correct_answer_samples_is_their_own():
    """Lesson 4a's coverage is over the samples its rate is about (the correct-answer ones), not all samples."""
    s = _samples()
    checks = check_samples(s)
    out = bon(s, checks, "arith").set_index("metric")
    right = checks.merge(s[["problem_id", "sample_idx", "correct"]], on=["problem_id", "sample_idx"])
    right = right[right["correct"]]
    assert out.loc["step_coverage_correct", ["count", "total"]].tolist() == [
        int(right["n_checkable"].sum()), int(right["n_steps"].sum())]
    assert out.loc["step_coverage", ["count", "total"]].tolist() == [
        int(checks["n_checkable"].sum()), int(checks["n_steps"].sum())]
    assert out.loc["step_coverage_correct", "total"] == 6      # p's two correct samples, 3 steps each
