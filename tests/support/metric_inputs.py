"""Small metric inputs shared by the metrics and CLI tests: Best-of-N sample rows and ProcessBench cases."""
from __future__ import annotations

import pandas as pd


def bon_rows(bench, pid, preds, correct, scores, start=0):
    """One row per sample of one problem, in the shape metrics.bon reads."""
    return [{"benchmark": bench, "problem_id": pid, "sample_idx": start + i, "pred": p, "correct": c,
             "step_scores": s} for i, (p, c, s) in enumerate(zip(preds, correct, scores))]


def six_pb_cases():
    """Six ProcessBench cases over two subsets (labels: first wrong step, -1 all correct)."""
    return pd.DataFrame({"id": ["g0", "g1", "g2", "g3", "m0", "m1"],
                         "subset": ["gsm8k"] * 4 + ["math"] * 2,
                         "label": [-1, 1, 0, -1, 2, -1]})
