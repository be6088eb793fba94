"""The comparison of named runs (prm_lessons.artifacts.compare, rule compare_runs): a column per run, the Best-of-N
averages at each N and the ProcessBench average F1, a row missing from one run empty there."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from prm_lessons.artifacts.compare import comparison, comparison_markdown


def bon(acc: float, extra_prm: bool = False) -> pd.DataFrame:
    rows = [{"policy": "p", "prm": "mc_hard", "benchmark": b, "metric": "prm_product", "n": 4, "accuracy": a}
            for b, a in (("gsm8k", acc + 0.1), ("average", acc))]
    rows.append({"policy": "p", "prm": "mc_hard", "benchmark": "average", "metric": "prm_product-maj", "n": 4,
                 "accuracy": 0.01})
    if extra_prm:
        rows.append({"policy": "p", "prm": "judge", "benchmark": "average", "metric": "prm_product", "n": 4,
                     "accuracy": 0.2})
    return pd.DataFrame(rows)


def processbench(f1: float) -> pd.DataFrame:
    return pd.DataFrame([{"prm": "mc_hard", "subset": s, "f1": v} for s, v in (("gsm8k", 0.9), ("average", f1))])


def test_runs_side_by_side():
    t = comparison({"embedded": (bon(0.5), processbench(0.3)), "aggregation": (bon(0.6, True), processbench(0.3))})
    assert list(t.columns) == ["table", "policy", "prm", "metric", "n", "embedded", "aggregation"]
    prod = t[(t["table"] == "bon") & (t["prm"] == "mc_hard")]
    assert len(prod) == 1 and prod.iloc[0]["embedded"] == 0.5 and prod.iloc[0]["aggregation"] == 0.6
    assert not t["metric"].str.endswith("-maj").any()  # the paired differences stay in each run's bon.csv
    only = t[t["prm"] == "judge"].iloc[0]
    assert math.isnan(only["embedded"]) and only["aggregation"] == 0.2
    f1 = t[t["table"] == "processbench"].iloc[0]
    assert f1["metric"] == "f1" and f1["embedded"] == f1["aggregation"] == 0.3
    head = [c.strip() for c in comparison_markdown(t).splitlines()[0].strip("|").split("|")]
    assert head == list(t.columns)


def test_no_run_is_an_error():
    with pytest.raises(ValueError, match="run.compare"):
        comparison({})
