"""Rules processbench_metrics and processbench_table under config/paper.yaml: a scalar PRM's `threshold: tune`
follows ProcessBench's rule (best GSM8K F1, processbench_eval.tune_on gsm8k), recorded in the metrics, the
long table and Table 7's notes."""
from __future__ import annotations

import json

import pandas as pd

from prm_lessons import plan
from prm_lessons.artifacts.cells import load_processbench_table
from prm_lessons.artifacts.defs import table7_processbench_main as T7
from prm_lessons.artifacts.published import load_published
from prm_lessons.rules import evaluation
from prm_lessons.tables import write_table
from specs import paper_config

# what rule table7 is given (workflow/rules/analysis.smk: run + the PARAMS of table7)
T7_PARAMS = {"run": {"name": "t", "label": "t"}, "paper_rows": {}, "paper_columns": {}}


def test_paper_plan_tunes_scalar_prms_on_gsm8k_and_table7_says_so(tmp_path):
    cfg = paper_config()
    assert cfg["processbench_eval"]["tune_on"] == "gsm8k" and not plan.processbench_dev(cfg)
    spec = plan.resolve_prm_specs(cfg)["skywork_prm_7b"]
    assert spec["threshold"] == "tune"
    # every T in (0.3, 0.6] is perfect on gsm8k (smallest candidate 0.6); the average F1's best is 0.35
    scores = {"g0": [0.9, 0.8], "g1": [0.9, 0.3, 0.2], "g2": [0.25, 0.9], "g3": [0.7, 0.6],
              "m0": [0.9, 0.9, 0.1], "m1": [0.35]}
    cases = pd.DataFrame({"id": list(scores), "subset": ["gsm8k"] * 4 + ["math"] * 2, "generator": "g",
                          "problem": "q", "steps": [["s"] * len(s) for s in scores.values()],
                          "final_answer_correct": True, "label": [-1, 1, 0, -1, 2, -1]})
    write_table(cases, tmp_path / "cases.parquet", "processbench")
    pd.DataFrame({"id": list(scores), "step_scores": list(scores.values())}).to_parquet(tmp_path / "scores.parquet")
    metrics = tmp_path / "skywork_prm_7b.json"
    evaluation.processbench_metrics(
        inputs={"cases": str(tmp_path / "cases.parquet"), "scores": str(tmp_path / "scores.parquet")},
        outputs={"metrics": str(metrics), "predictions": str(tmp_path / "p.parquet")},
        params={"processbench_eval": {**cfg["processbench_eval"], "bootstrap": {"samples": 0, "seed": 0,
                                                                              "confidence": 0.95}},
                "threshold": spec["threshold"], "run_label": "t"},
        wildcards={"prm": "skywork_prm_7b"}, threads=1)
    m = json.loads(metrics.read_text())
    assert (m["threshold"], m["tuned_on"]) == (0.6, "gsm8k")
    table = tmp_path / "processbench.csv"
    evaluation.processbench_table(inputs={"metrics": [str(metrics)]}, outputs={"table": str(table)},
                                  params={"run_label": "t"}, wildcards={}, threads=1)
    pb = load_processbench_table(table)
    assert set(pb["tuned_on"]) == {"gsm8k"}
    notes = T7.threshold_notes(pb, T7.build_table7(pb, load_published(), T7_PARAMS))
    assert notes == [f"Threshold {T7.TUNED_ON_TEXT['gsm8k']} (processbench_eval.tune_on: gsm8k): skywork_prm_7b 0.6."]
    assert "GSM8K" in notes[0]
