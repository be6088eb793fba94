"""PRMBench's metric (prm_lessons.metrics.prmbench) on cases worked by hand."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from prm_lessons.metrics.prmbench import (
    confusion,
    evaluate_prmbench,
    long_rows,
    processbench_threshold,
    scores_from_counts,
    step_validity,
)


def test_a_step_is_valid_when_its_score_reaches_the_threshold():
    assert step_validity([0.5, 0.49, None, float("nan"), 0.9], 0.5) == [True, False, False, False, True]


def test_correct_steps_are_the_positive_class():
    # steps 0, 1 correct; step 2 an error. Called: valid, invalid, valid
    assert confusion([2], [True, False, True]) == {"TP": 1, "FN": 1, "FP": 1, "TN": 0}
    assert confusion([2], [True, True, False]) == {"TP": 2, "FN": 0, "FP": 0, "TN": 1}


def test_prmscore_is_the_mean_of_positive_and_negative_f1():
    c = {"TP": 6, "FP": 2, "TN": 3, "FN": 1}
    s = scores_from_counts(c)
    f1 = 2 * (6 / 8) * (6 / 7) / (6 / 8 + 6 / 7)
    neg = 2 * (3 / 4) * (3 / 5) / (3 / 4 + 3 / 5)
    assert s["f1"] == pytest.approx(f1) and s["negative_f1"] == pytest.approx(neg)
    assert s["prmscore"] == pytest.approx(0.5 * f1 + 0.5 * neg)
    # no error step called invalid and none missed: negative F1 undefined, and so PRMScore (never 0 or -1)
    assert scores_from_counts({"TP": 3, "FP": 0, "TN": 0, "FN": 0})["prmscore"] is None
    assert scores_from_counts({"TP": 3, "FP": 0, "TN": 0, "FN": 0}, f1_only=True)["prmscore"] == 1.0


def _cases():
    return pd.DataFrame([
        {"id": "a", "pair_id": "a", "classification": "redundency", "problem": "q", "steps": ["s"] * 3,
         "error_steps": [1]},
        {"id": "b", "pair_id": "b", "classification": "circular", "problem": "q", "steps": ["s"] * 2,
         "error_steps": [0]},
        {"id": "c", "pair_id": "c", "classification": "multi_solutions", "problem": "q", "steps": ["s"] * 2,
         "error_steps": []},
        {"id": "o", "pair_id": "a", "classification": "correct", "problem": "q", "steps": ["s"] * 3,
         "error_steps": []},
    ])


def test_overall_pools_every_case_but_the_originals_and_classes_score_apart():
    scores = {"a": [0.9, 0.2, 0.8], "b": [0.7, 0.6], "c": [0.9, 0.1], "o": [0.1, 0.1, 0.1]}
    m, per_case = evaluate_prmbench(_cases(), scores, 0.5)
    # a: TP 2, TN 1; b: FP 1, TP 1; c: TP 1, FN 1; o (correct, not in the overall): FN 3
    assert {k: m["overall"][k] for k in ("TP", "FP", "TN", "FN")} == {"TP": 4, "FP": 1, "TN": 1, "FN": 1}
    assert m["classes"]["correct"]["FN"] == 3 and m["n_cases_scored_overall"] == 3
    assert m["classes"]["redundency"]["prmscore"] == pytest.approx(1.0)
    # circular: TP 1, FP 1 -> F1 2/3, negative F1 undefined (no TN, no FN) -> PRMScore undefined
    assert m["classes"]["circular"]["prmscore"] is None
    # multi_solutions: F1 alone (TP 1, FN 1 -> precision 1, recall 1/2)
    assert m["classes"]["multi_solutions"]["prmscore"] == pytest.approx(2 / 3)
    f1 = 2 * (4 / 5) * (4 / 5) / (8 / 5)
    neg = 2 * (1 / 2) * (1 / 2) / 1
    assert m["overall"]["prmscore"] == pytest.approx(0.5 * f1 + 0.5 * neg)
    # a dimension averages its classes; an undefined class leaves it undefined
    assert m["dimensions"]["simplicity"]["prmscore"] is None
    assert not m["dimensions"]["sensitivity"]["complete"]
    rows = {r["column"]: r for r in long_rows(m)}
    assert rows["NR"]["prmscore"] == pytest.approx(1.0) and rows["sensitivity"]["prmscore"] is None
    assert list(per_case["id"]) == ["a", "b", "c", "o"]


def test_truncated_scores_count_only_the_scored_steps_and_missing_cases_are_named():
    m, _ = evaluate_prmbench(_cases(), {"a": [0.9], "b": [0.1, 0.9], "c": [0.9, 0.9], "o": [0.9] * 3}, 0.5)
    assert m["n_truncated"] == 1 and m["classes"]["redundency"]["TP"] == 1
    assert not math.isnan(m["overall"]["f1"])
    with pytest.raises(KeyError, match="'o'"):
        evaluate_prmbench(_cases(), {"a": [0.9], "b": [0.1, 0.9], "c": [0.9, 0.9]}, 0.5)


def test_the_threshold_is_processbench_s():
    assert processbench_threshold({"threshold": 0.55}) == 0.55
    assert processbench_threshold({"threshold": [0.4, 0.6]}) == pytest.approx(0.5)  # cross-fitted folds
    with pytest.raises(ValueError, match="no threshold"):
        processbench_threshold({"threshold": None, "prm": "x"})
