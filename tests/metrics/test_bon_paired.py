"""Paired bootstrap comparisons of Best-of-N selectors against maj@N (prm_lessons.metrics.bon)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from prm_lessons.metrics import bon as m_bon


def _bon_rows():
    rng = np.random.default_rng(0)
    rows = []
    for bench in ("a", "b"):
        for p in range(60):
            answers = [str(rng.integers(3)) for _ in range(4)]
            for j, ans in enumerate(answers):
                rows.append({"benchmark": bench, "problem_id": f"{bench}{p}", "sample_idx": j, "pred": ans,
                             "correct": ans == "0", "step_scores": rng.uniform(0, 1, 2).tolist(),
                             "orm_score": float(rng.uniform())})
    return pd.DataFrame(rows)


def test_bon_paired_difference_against_maj_and_its_long_rows():
    df = _bon_rows()
    m = m_bon.bon_metrics(df, ["product", "min"], orm_column="orm_score", bootstrap=500, seed=3)
    vs = m["vs_maj"]
    for bench in ("a", "b"):
        e = m["benchmarks"][bench]
        for col in ("prm_product", "prm_min", "orm"):
            d = vs["benchmarks"][bench][col]
            assert d["diff"] == pytest.approx(e[col] - e["maj"])
            assert d["ci"][0] <= d["diff"] <= d["ci"][1]
    for col in ("prm_product", "prm_min", "orm"):
        assert vs["average"][col]["diff"] == pytest.approx(m["average"][col] - m["average"]["maj"])
    long = pd.DataFrame(m_bon.bon_long_rows(m, "x"))
    paired = long[long["metric"].str.endswith("-maj")]
    assert set(paired["metric"]) == {"prm_product-maj", "prm_min-maj", "orm-maj"}
    assert set(paired["benchmark"]) == {"a", "b", "average"} and len(paired) == 9
    r = paired[(paired["benchmark"] == "average") & (paired["metric"] == "prm_product-maj")].iloc[0]
    assert (r["accuracy"], [r["ci_low"], r["ci_high"]]) == (vs["average"]["prm_product"]["diff"],
                                                          vs["average"]["prm_product"]["ci"])
    # the other rows are unchanged: every metric of every benchmark and the average, once
    plain = long[~long["metric"].str.endswith("-maj")]
    assert len(plain) == 3 * 5 and set(plain["metric"]) == {"pass", "maj", "prm_product", "prm_min", "orm"}


def test_bon_paired_interval_is_zero_when_the_selector_always_agrees_with_maj():
    """prm picks the majority answer's first response on every problem: the paired difference is 0 in every
    replicate although both accuracies vary a lot across replicates."""
    df = _bon_rows()
    probs, _ = m_bon.bon_problem_table(df, [], maj_grouping="normalized")
    maj_idx = dict(zip(probs["problem_id"], probs["maj_sample_idx"]))
    df["step_scores"] = [[1.0 if s == maj_idx[p] else 0.0] for p, s in zip(df["problem_id"], df["sample_idx"])]
    m = m_bon.bon_metrics(df, ["last"], bootstrap=300)
    assert m["vs_maj"]["average"]["prm_last"] == {"diff": 0.0, "ci": [0.0, 0.0]}
    for bench in ("a", "b"):
        assert m["vs_maj"]["benchmarks"][bench]["prm_last"] == {"diff": 0.0, "ci": [0.0, 0.0]}
    assert m["average"]["ci"]["prm_last"][1] - m["average"]["ci"]["prm_last"][0] > 0.05
    no_boot = m_bon.bon_metrics(df, ["last"], bootstrap=0)
    assert all(math.isnan(x) for x in no_boot["vs_maj"]["average"]["prm_last"]["ci"])
