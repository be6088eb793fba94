"""Lesson 4 decided by human labels of the annotation sheet (Figure 6's row 'policy samples, human
annotation') before any proxy."""
import pandas as pd

from prm_lessons.artifacts.verdicts import REPRODUCED, UNDECIDABLE, lesson4_flawed_process


def _cells(human_value: float, n: int) -> pd.DataFrame:
    return pd.DataFrame([
        {"key": "policy", "row": "policy samples, human annotation", "n": n, "value": human_value},
        {"key": "policy", "row": "policy samples, judge", "n": 400, "value": 0.0},
    ])


def test_human_labels_decide_lesson4():
    v = lesson4_flawed_process(_cells(20.0, 200))
    assert v.verdict == REPRODUCED and "human annotation" in v.measured and "40 of 200" in v.measured
    v0 = lesson4_flawed_process(_cells(0.0, 20))
    assert v0.verdict == UNDECIDABLE and "20 labelled" in v0.reason
