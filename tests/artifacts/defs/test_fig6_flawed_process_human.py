"""Figure 6 from human labels of the annotation sheet: its own row, compared with the paper's bars; the
judge's proxy beside it, never diffed; the rule reads the labels when the config names them."""
from __future__ import annotations

import pandas as pd
import pytest

from analysis_synth import analysis_params
from prm_lessons.artifacts.defs import fig6_flawed_process as fig6
from prm_lessons.artifacts.published import load_published
from prm_lessons.evaluation import bias_analysis as analysis
from prm_lessons.labels import annotation


def _setup(tmp_path):
    samples = pd.DataFrame({"problem_id": ["p", "p", "q", "q"], "sample_idx": [0, 1, 0, 1],
                            "question": ["P?", "P?", "Q?", "Q?"], "steps": [["a", "b"]] * 4,
                            "correct": [True, True, True, False]})
    judge = samples[["problem_id", "sample_idx"]].assign(first_error=[-1, -1, -1, 0], parsed=True)
    sheet = annotation.sample_sheet({"gsm8k": samples}, 3, 0, None)
    annotation.write_sheet(sheet, tmp_path / "sheet.csv")
    filled = sheet.assign(process_flawed=["yes", "no", ""], first_error_step=["1", "", ""])
    filled.to_csv(tmp_path / "filled.csv", index=False)
    return samples, judge, sheet


def test_human_rate_counts_labelled_rows_only(tmp_path):
    _, _, sheet = _setup(tmp_path)
    rates = analysis.human_flaw_rates(annotation.read_labels(tmp_path / "filled.csv", sheet), sheet)
    r = rates.iloc[0]
    assert (r["dataset"], r["source"], r["n_judged"], r["n_unjudged"], r["n_flawed"]) == (
        "gsm8k", "policy_human", 2, 1, 1)
    assert r["rate"] == 50.0 and r["ci_low"] < 50.0 < r["ci_high"]


def test_human_row_is_compared_and_the_judge_proxy_is_not(tmp_path):
    samples, judge, sheet = _setup(tmp_path)
    human = analysis.human_flaw_rates(annotation.read_labels(tmp_path / "filled.csv", sheet), sheet)
    rates = analysis.flaw_rates({"gsm8k": samples}, {"gsm8k": judge}, None, None, human)
    cells = fig6.build_fig6(rates, load_published(), analysis_params())
    by_row = {r["row"]: r for r in cells.to_dict("records")}
    assert by_row["policy samples, human annotation"]["comparable"]
    assert by_row["policy samples, human annotation"]["diff"] == pytest.approx(50.0 - 5.1)  # the paper's GSM8K bar
    assert not by_row["policy samples, judge"]["comparable"]


def test_rule_reads_the_labels_when_given(tmp_path, monkeypatch):
    samples, judge, sheet = _setup(tmp_path)
    samples.to_parquet(tmp_path / "s.parquet")
    judge.to_parquet(tmp_path / "j.parquet")
    got = {}
    monkeypatch.setattr(fig6, "emit_figure", lambda aid, cells, *a, **k: got.setdefault("cells", cells))
    inputs = {"samples__gsm8k": str(tmp_path / "s.parquet"), "judge__gsm8k": str(tmp_path / "j.parquet")}
    fig6.run(inputs=inputs, outputs={}, params=analysis_params(), wildcards={}, threads=1)
    assert "policy samples, human annotation" not in set(got.pop("cells")["row"])
    fig6.run(inputs={**inputs, "annotation_sheet": str(tmp_path / "sheet.csv"),
                     "human_labels": str(tmp_path / "filled.csv")},
             outputs={}, params=analysis_params(), wildcards={}, threads=1)
    assert "policy samples, human annotation" in set(got["cells"]["row"])
