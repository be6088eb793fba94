"""Figure 6 shows the arithmetic checker's rate as its own row, beside the judge's, never diffed."""
from __future__ import annotations

import pandas as pd

from analysis_synth import analysis_params
from prm_lessons.artifacts.defs.fig6_flawed_process import build_fig6
from prm_lessons.artifacts.published import load_published
from prm_lessons.evaluation import bias_analysis as analysis


def test_checker_row_beside_the_judge():
    samples = pd.DataFrame({"problem_id": ["p", "p", "q"], "sample_idx": [0, 1, 0], "correct": [True, True, False]})
    judge = pd.DataFrame({"problem_id": ["p", "p", "q"], "sample_idx": [0, 1, 0], "first_error": [-1, -1, 0],
                          "parsed": [True, True, True]})
    checker = judge.assign(first_error=[0, -1, 0]).drop(columns=["parsed"])
    rates = analysis.flaw_rates({"train": samples}, {"train": judge}, None, {"train": checker})
    assert dict(zip(rates["source"], rates["n_flawed"])) == {"policy_checker": 1, "policy_judge": 0}
    cells = build_fig6(rates, load_published(), analysis_params())
    row = cells[cells["row"] == "policy samples, arithmetic checker"]
    assert len(row) == 1 and row.iloc[0]["value"] == 50.0 and not row.iloc[0]["comparable"]
