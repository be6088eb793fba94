"""artifacts.seeds: Table 6's seed spread (analysis.seeds), each cell's standard deviation over this run and
its seed replicas, beside the problem-resampling interval."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from analysis_synth import analysis_params, bon_frame
from prm_lessons.artifacts.defs import table6_bon_main as T6
from prm_lessons.artifacts.seeds import seed_spread


def _cells(values: dict, aggregation=None) -> pd.DataFrame:
    return pd.DataFrame([{"row": r, "aggregation": aggregation, "column": c, "value": v, "ci_low": v - 1,
                          "ci_high": v + 1} for (r, c), v in values.items()])


def test_the_spread_is_the_sample_sd_over_runs_of_the_same_cell():
    base = _cells({("mc_hard", "math"): 60.0, ("mc_hard", "gsm8k"): 90.0, ("judge", "math"): 50.0})
    r1 = _cells({("mc_hard", "math"): 62.0, ("mc_hard", "gsm8k"): 90.0})
    r2 = _cells({("mc_hard", "math"): 64.0, ("mc_hard", "gsm8k"): 90.0, ("judge", "math"): np.nan})
    out = seed_spread(base, [r1, r2]).set_index(["row", "column"])
    assert out.loc[("mc_hard", "math"), "seed_sd"] == 2.0 and out.loc[("mc_hard", "math"), "n_seeds"] == 3
    assert out.loc[("mc_hard", "gsm8k"), "seed_sd"] == 0.0
    # a cell only this run has: no spread, not a zero
    assert math.isnan(out.loc[("judge", "math"), "seed_sd"]) and out.loc[("judge", "math"), "n_seeds"] == 1
    # the cells themselves are unchanged, aggregation None stays None
    assert list(out["value"]) == list(base["value"]) and out["aggregation"].isna().all()
    assert seed_spread(base, []) is base


def _run(tmp_path: Path, replicas: list[pd.DataFrame]) -> tuple[pd.DataFrame, str]:
    bon = tmp_path / "bon.csv"
    bon_frame(seed=0).to_csv(bon, index=False)
    inputs = {"bon": str(bon), "baselines": str(tmp_path / "none.csv")}
    reps = []
    for i, df in enumerate(replicas, start=1):
        p = tmp_path / f"bon_seed{i}.csv"
        df.to_csv(p, index=False)
        inputs[f"seed_bon__seed{i}"] = str(p)
        inputs[f"seed_baselines__seed{i}"] = str(tmp_path / "none.csv")
        reps.append({"seed": i, "name": f"seed{i}"})
    params = analysis_params(grader="math_verify", not_compared=[], seed_runs={"seed": 0, "replicas": reps})
    out = {"csv": str(tmp_path / "t6.csv"), "provenance": str(tmp_path / "t6.json"), "tex": str(tmp_path / "t6.tex")}
    T6.run(inputs=inputs, outputs=out, params=params, wildcards={}, threads=1)
    return pd.read_csv(out["csv"]), Path(out["tex"]).read_text()


def test_table6_reports_the_seed_spread_of_each_cell(tmp_path):
    cells, tex = _run(tmp_path, [bon_frame(seed=1), bon_frame(seed=2)])
    three = [bon_frame(seed=s) for s in (0, 1, 2)]
    row = cells[(cells["row"] == "mc_hard") & (cells["column"] == "arith")].iloc[0]
    want = np.std([100 * f.query("prm == 'mc_hard' and benchmark == 'arith' and metric == 'prm_product'")
                   ["accuracy"].iloc[0] for f in three], ddof=1)
    assert row["n_seeds"] == 3 and abs(row["seed_sd"] - want) < 1e-6, (row["seed_sd"], want)
    assert {"ci_low", "ci_high", "seed_sd"} <= set(cells.columns)
    assert "seed s.d. (3 seeds)" in tex and "over seeds 0, 1, 2" in tex


def test_without_replicas_table6_says_its_intervals_resample_problems_only(tmp_path):
    cells, tex = _run(tmp_path, [])
    assert "seed_sd" not in cells.columns and "seed s.d." not in tex
    assert "Intervals resample problems only" in tex
