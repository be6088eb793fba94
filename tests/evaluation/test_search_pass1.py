"""search.pass1 (Table 8's pass@1): `mean` over the N baseline samples, or `greedy`, one greedy response per
problem from its own rule; config/paper.yaml reads the paper as greedy (tests/artifacts/test_published_fits.py)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from prm_lessons import plan
from prm_lessons.config import load_config
from prm_lessons.evaluation import search

ROOT = Path(__file__).resolve().parents[2]


def _samples():
    # problem a-0: 1 of 4 samples correct; a-1: 3 of 4; so the mean pass@1 is 0.5
    rows = [{"benchmark": "a", "problem_id": f"a-{i}", "sample_idx": k, "pred": str(k), "correct": ok}
            for i, oks in enumerate([(True, False, False, False), (True, True, True, False)])
            for k, ok in enumerate(oks)]
    return pd.DataFrame(rows)


def test_greedy_pass1_reads_one_response_per_problem_not_the_mean():
    samples = _samples()
    searched = {"x": pd.DataFrame({"benchmark": ["a", "a"], "problem_id": ["a-0", "a-1"], "correct": [True, True]})}
    mean = search.problem_table(searched, samples, 4)
    assert mean["pass1"].tolist() == [0.25, 0.75]
    greedy = pd.DataFrame({"benchmark": ["a"], "problem_id": ["a-1"], "sample_idx": [0], "correct": [False]})
    got = search.problem_table(searched, samples, 4, pass1_samples=greedy)
    # a-1's greedy response is wrong; a-0 has none (a lost row): NaN, never the mean
    assert got["pass1"].iloc[1] == 0.0 and pd.isna(got["pass1"].iloc[0])
    assert got["pass"].tolist() == mean["pass"].tolist()   # the other baselines are untouched
    rows = pd.DataFrame(search.search_metrics(got, ["x"], n=4, candidates=8, bootstrap=0))
    assert rows[(rows["metric"] == "pass1") & (rows["benchmark"] == "a")]["accuracy"].iloc[0] == 0.0


def test_paper_plan_samples_greedy_pass1_and_the_default_does_not():
    paper = load_config(ROOT / "config/paper.yaml")
    assert paper["search"]["pass1"] == "greedy"
    assert plan.search_greedy_path(paper, "math") == "results/search/greedy/math.parquet"
    g = plan.greedy_sampling(paper)
    assert (g["temperature"], g["top_p"], g["n"]) == (0.0, 1.0, 1)
    assert g["max_tokens"] == paper["sampling"]["max_tokens"]
    assert plan.analysis_settings(paper)["search_pass1"] == "greedy"
    default = load_config(ROOT / "config/config.yaml")
    assert default["search"]["pass1"] == "mean" and plan.search_greedy_path(default, "math") is None


@pytest.mark.parametrize("value", ["sampled", 1])
def test_an_unknown_pass1_stops_at_validation(value):
    import copy

    import yaml

    from prm_lessons.config import ConfigError, validate_config
    cfg = copy.deepcopy(yaml.safe_load((ROOT / "config/config.yaml").read_text()))
    cfg.setdefault("search", {})["pass1"] = value
    with pytest.raises(ConfigError, match="search.pass1"):
        validate_config(cfg)
