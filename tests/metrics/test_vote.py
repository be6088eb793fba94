"""Majority voting (prm_lessons.metrics.vote): ties, missing answers, answer grouping."""
from __future__ import annotations

import pandas as pd
import pytest

from metric_inputs import bon_rows
from prm_lessons.metrics import bon as m_bon
from prm_lessons.metrics import vote as m_vote


def test_majority_ties_pick_answer_seen_first_and_skip_missing():
    assert m_vote.majority_index(["7", "5", "5", "7"]) == 0  # 2-2 tie: "7" appears first
    assert m_vote.majority_index([None, "5", " 5 ", "$5$", "7"]) == 1  # normalised grouping
    assert m_vote.majority_index([None, "5", " 5 ", "7"], grouping="exact") == 1
    assert m_vote.majority_index(["7", "5", " 5 "], grouping="exact") == 0  # exact: 1-1-1 → first
    assert m_vote.majority_index([None, None]) is None
    rows = bon_rows("b", "p", [None, None], [False, False], [[1.0], [1.0]])
    assert m_bon.bon_metrics(pd.DataFrame(rows), ["last"], bootstrap=0)["benchmarks"]["b"]["maj"] == 0.0


def test_majority_math_verify_grouping():
    pytest.importorskip("math_verify")
    # 1/2 and 0.5 are one group under math-verify (2 votes) and beat "3" seen first
    assert m_vote.majority_index(["3", "\\frac{1}{2}", "0.5"], grouping="math_verify") == 1
    assert m_vote.majority_index(["3", "\\frac{1}{2}", "0.5"], grouping="normalized") == 0
