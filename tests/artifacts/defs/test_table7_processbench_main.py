"""Table 7's notes: every scored row's ProcessBench threshold and the protocol that chose it."""
from __future__ import annotations

import numpy as np
import pandas as pd

from prm_lessons.artifacts.defs import table7_processbench_main as T7


def _pb(rows):
    """processbench.csv rows (prm, threshold, tuned_on) on two subsets and the average."""
    out = [{"prm": p, "subset": s, "n": 4, "error_acc": 50.0, "correct_acc": 50.0, "f1": 50.0, "threshold": t,
            "tuned_on": o, "setting": None} for p, t, o in rows for s in ("gsm8k", "math", "average")]
    return pd.DataFrame(out)


def _cells(pb):
    return pd.DataFrame({"row": list(dict.fromkeys(pb["prm"]))})


def test_notes_name_each_protocol_and_threshold_in_row_order():
    pb = _pb([("qwen25_math_prm_7b", 0.5, None), ("skywork_prm_7b", 0.62, "gsm8k"), ("human", 0.5, None),
              ("eurus_prm_stage1", "0.0125|0.02", "crossfit"), ("skywork_prm_1_5b", 0.4, "gsm8k"),
              ("mine", 0.3, "dev"), ("critic-qwq", np.nan, None), ("baseline_structure", np.nan, None)])
    notes = T7.threshold_notes(pb, _cells(pb))
    assert notes == [
        "Threshold 0.5 (fixed; a step is erroneous when its score is below it): qwen25_math_prm_7b, human.",
        f"Threshold {T7.TUNED_ON_TEXT['gsm8k']} (processbench_eval.tune_on: gsm8k): skywork_prm_7b 0.62, "
        "skywork_prm_1_5b 0.4.",
        f"Threshold {T7.TUNED_ON_TEXT['crossfit']} (processbench_eval.tune_on: crossfit): eurus_prm_stage1 "
        "0.0125 / 0.02.",
        f"Threshold {T7.TUNED_ON_TEXT['dev']} (processbench_eval.tune_on: dev): mine 0.3."]
    assert "GSM8K subset" in T7.TUNED_ON_TEXT["gsm8k"] and "§4.1" in T7.TUNED_ON_TEXT["gsm8k"]


def test_rows_not_in_the_table_and_tables_without_the_columns_get_no_note():
    pb = _pb([("skywork_prm_7b", 0.62, "gsm8k"), ("other", 0.5, None)])
    assert T7.threshold_notes(pb, pd.DataFrame({"row": ["other"]})) == [
        "Threshold 0.5 (fixed; a step is erroneous when its score is below it): other."]
    # a processbench.csv without `tuned_on` cannot say how a threshold was chosen: no note, rather than "fixed"
    assert T7.threshold_notes(pb.drop(columns="tuned_on"), _cells(pb)) == []
    assert T7.threshold_notes(pb.drop(columns=["threshold", "tuned_on"]), _cells(pb)) == []
