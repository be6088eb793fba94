"""Grading of sampled responses: a `responses` table (prm_lessons.generation.sampling) → the `samples` table, with
``pred``, ``correct`` and ``grade_status`` per response. A CPU step of its own (rule grade_samples), out
of the sampling and scoring jobs, so a grading fix costs a regrade and the metrics, not GPU work."""
from __future__ import annotations

import logging

import pandas as pd

from ..tables import SCHEMAS
from .pool import grade_many

log = logging.getLogger(__name__)


def grade_samples(responses: pd.DataFrame, *, timeout_s: float, workers: int = 1,
                  answer_format: str = "plain", grader: str = "math_verify", keep_units: bool = False) -> pd.DataFrame:
    """`responses` with pred / correct / grade_status appended (in that order, after its own columns),
    each response graded against its row's gold answer (``answer_format``: the dataset's, so multiple
    choice is graded as the harness does) by ``grader`` (`grading.grader`; ``keep_units``: the dataset
    is one the harness grades with its units, answer_key.KEEP_UNITS). An empty table gives an empty
    `samples` table."""
    if not len(responses):
        return pd.DataFrame(columns=SCHEMAS["samples"])
    out = responses.copy()
    results = grade_many(list(out["response"]), list(out["answer"]), timeout_s=timeout_s, workers=workers,
                         answer_format=answer_format, grader=grader, keep_units=keep_units)
    out["pred"] = [r.pred for r in results]
    out["correct"] = [bool(r.correct) for r in results]
    out["grade_status"] = [r.status for r in results]
    counts = out["grade_status"].value_counts().to_dict()
    log.info("grading (%s): %s; accuracy %.3f", grader, counts, out["correct"].mean())
    if counts.get("timeout"):
        log.warning("%d responses hit the grading time limit and count as incorrect", counts["timeout"])
    return out
