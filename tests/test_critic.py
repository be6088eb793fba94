"""ProcessBench critic: verdict parsing, voting, unparsable answers counted wrong and reported."""
from __future__ import annotations

import pandas as pd
import pytest

pytest.importorskip("transformers")

from fakes import ScriptedEngine  # noqa: E402
from prm_lessons import critic  # noqa: E402
from prm_lessons.metrics.processbench import processbench_metrics  # noqa: E402

CASES = pd.DataFrame({"id": ["a-0", "a-1", "a-2"], "subset": ["a"] * 3,
                      "problem": ["PROB0", "PROB1", "PROB2"], "steps": [["x", "y"], ["x", "y", "z"], ["x"]],
                      "label": [1, -1, 0], "final_answer_correct": [False, True, False]})


def test_critic_predictions_and_metric():
    eng = ScriptedEngine({"PROB0": "the second paragraph is wrong: \\boxed{1}", "PROB1": "all fine \\boxed{-1}",
                          "PROB2": "I cannot decide"})
    df = critic.critic_predictions(eng, CASES, n=1, force_answer=False)
    assert df["prediction"].tolist()[:2] == [1, -1] and pd.isna(df["prediction"].iloc[2])
    assert str(df["prediction"].dtype) == "Int64"
    assert "<paragraph_0>" in eng.prompts[0]  # ProcessBench template: paragraphs indexed from 0
    preds = {i: (None if pd.isna(p) else int(p)) for i, p in zip(df["id"], df["prediction"])}
    m = processbench_metrics(CASES, preds)
    assert m["n_unparsed"] == 1
    assert m["subsets"]["a"]["error_acc"] == 0.5 and m["subsets"]["a"]["correct_acc"] == 1.0


def test_out_of_range_index_is_unparsable():
    eng = ScriptedEngine({"PROB0": "\\boxed{7}", "PROB1": "\\boxed{-1}", "PROB2": "\\boxed{0}"})
    df = critic.critic_predictions(eng, CASES, n=1)
    assert pd.isna(df["prediction"].iloc[0]) and df["prediction"].iloc[2] == 0
