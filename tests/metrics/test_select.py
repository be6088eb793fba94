"""Step-score aggregation for Best-of-N selection (prm_lessons.metrics.select)."""
from __future__ import annotations

import math

import pytest

from prm_lessons.metrics import select as m_select

# ------------------------------------------------------------------ aggregation and selection rules

def test_aggregations():
    s = [0.9, 0.5, 0.8]
    assert m_select.aggregate(s, "product") == pytest.approx(0.36)
    assert m_select.aggregate(s, "min") == 0.5
    assert m_select.aggregate(s, "last") == 0.8
    assert m_select.aggregate(s, "mean") == pytest.approx(2.2 / 3)
    assert m_select.aggregate([], "product") == -math.inf and m_select.aggregate(None, "min") == -math.inf
    with pytest.raises(ValueError, match="unknown aggregation 'max'"):
        m_select.aggregate(s, "max")
