"""Best-of-N selection: response scores from step scores, the best response, and the answer keys and
winner of majority voting that need no grading (`normalized`, `exact`).
"""
from __future__ import annotations

import math
import re
from collections import Counter
from typing import Sequence

import numpy as np

AGGREGATIONS = ("product", "min", "last", "mean")
MAJ_GROUPINGS = ("harness", "exact", "normalized", "math_verify")


def aggregate(step_scores: Sequence[float] | None, how: str = "product") -> float:
    """One response score from its step scores. Empty or missing → −inf."""
    if how not in AGGREGATIONS:
        raise ValueError(f"unknown aggregation '{how}' (allowed: {', '.join(AGGREGATIONS)})")
    if step_scores is None or len(step_scores) == 0:
        return -math.inf
    s = np.asarray(step_scores, dtype=float)
    if np.isnan(s).any():
        return -math.inf
    if how == "product":
        return float(np.prod(s))
    if how == "min":
        return float(s.min())
    if how == "last":
        return float(s[-1])
    return float(s.mean())


def best_index(scores: Sequence[float]) -> int:
    """Index of the highest score; ties → the lowest index (callers order by sample_idx).
    NaN counts as −inf."""
    best, best_i = -math.inf, 0
    for i, v in enumerate(scores):
        v = -math.inf if v is None or (isinstance(v, float) and math.isnan(v)) else v
        if v > best:
            best, best_i = v, i
    return best_i


_WS = re.compile(r"\s+")


def _no_answer(ans) -> bool:
    # pandas turns a missing pred (None) into NaN in object columns; both mean "no answer"
    return ans is None or (isinstance(ans, float) and math.isnan(ans))


def normalize_answer(ans) -> str | None:
    """Answer key for `normalized` majority grouping (None for no answer)."""
    if _no_answer(ans):
        return None
    s = _WS.sub("", str(ans))
    s = s.strip("$").rstrip(".").lower()
    return s or None


def exact_key(ans) -> str | None:
    if _no_answer(ans):
        return None
    s = str(ans)
    return s if s.strip() else None


def majority_winner(keys: Sequence) -> int | None:
    """Index of the first response of the most voted group (ties → the group seen first); None when no
    response has an answer."""
    votes = [k for k in keys if k is not None]
    if not votes:
        return None
    winner = Counter(votes).most_common(1)[0][0]  # Counter keeps first-seen order among equal counts
    return list(keys).index(winner)



def best_or_none(vals: Sequence[float]) -> int | None:
    """best_index over the finite scores; None when no response has a finite score."""
    vals = [v if v is not None and math.isfinite(v) else -math.inf for v in vals]
    return None if all(v == -math.inf for v in vals) else best_index(vals)
