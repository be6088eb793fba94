"""ProcessBench F1 with training variance (prm_lessons.metrics.resampled): the hierarchical bootstrap over
resample heads and cases gives a PRM paired with itself a zero difference with a zero-width interval,
the right sign to a PRM that is right on more cases, a wider interval to a PRM whose resamples disagree;
an undefined F1 does not crash; each resample's threshold is tuned as the PRM's own; the rule writes
results/tables/processbench_paired.csv."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from prm_lessons.metrics import processbench as PB
from prm_lessons.metrics import resampled as RM
from prm_lessons.rules import evaluation as E
from prm_lessons.tables import read_csv, write_table


def _cases(n_per_subset=30, subsets=("gsm8k", "math")) -> pd.DataFrame:
    rows = []
    for s in subsets:
        for i in range(n_per_subset):
            rows.append({"id": f"{s}-{i}", "subset": s, "label": -1 if i % 2 else i % 3,
                         "problem": "q", "steps": ["a", "b", "c"], "final_answer_correct": bool(i % 2),
                         "generator": "g"})
    return pd.DataFrame(rows)


def _hits(n, rate, seed):
    return np.random.default_rng(seed).random(n) < rate


def _row(rows, a, b="", subset="average"):
    (r,) = [r for r in rows if r["prm_a"] == a and r["prm_b"] == b and r["subset"] == subset]
    return r


def test_a_prm_paired_with_itself_differs_by_zero_with_a_zero_width_interval():
    cases = _cases()
    h = np.stack([_hits(len(cases), 0.6, r) for r in range(5)])
    rows = RM.paired_rows(cases, {"a": h, "a_again": h.copy()}, n_boot=300, seed=1)
    pair = _row(rows, "a", "a_again")
    assert pair["value"] == 0 and pair["ci_low"] == 0 and pair["ci_high"] == 0 and pair["n_resamples"] == 5
    one = _row(rows, "a")
    assert one["ci_low"] < one["value"] < one["ci_high"] and one["n_cases"] == len(cases)
    # value: the mean over resamples of the average F1 on all cases (processbench_metrics' average)
    ids = cases["id"].tolist()
    labels = cases["label"].tolist()
    f1s = [PB.processbench_metrics(cases, {i: (lab if hit else 99) for i, lab, hit in zip(ids, labels, row)})[
        "average_f1"] for row in h]
    assert one["value"] == pytest.approx(np.mean(f1s))
    assert {r["subset"] for r in rows} == {"average", "gsm8k", "math"}


def test_the_difference_has_the_sign_of_the_better_prm():
    cases = _cases()
    worse = np.stack([_hits(len(cases), 0.5, r) for r in range(4)])
    better = worse.copy()
    better[:, ::5] = True  # right on some more cases, never on fewer
    rows = RM.paired_rows(cases, {"worse": worse, "better": better}, n_boot=300, seed=2)
    pair = _row(rows, "worse", "better")  # config order: prm_a is the first
    assert pair["value"] < 0 and pair["ci_high"] <= 0
    assert _row(rows, "better")["value"] - _row(rows, "worse")["value"] == pytest.approx(-pair["value"])


def test_training_variance_widens_the_interval():
    cases = _cases(40)
    n = len(cases)
    v = _hits(n, 0.6, 0)
    steady = np.stack([v] * 6)
    # resamples that disagree: alternately right on many more and on many fewer cases
    shaky = np.stack([v | _hits(n, 0.5, 10 + r) if r % 2 else v & _hits(n, 0.5, 10 + r) for r in range(6)])
    rows = RM.paired_rows(cases, {"steady": steady, "shaky": shaky}, n_boot=500, seed=3)
    width = {p: _row(rows, p)["ci_high"] - _row(rows, p)["ci_low"] for p in ("steady", "shaky")}
    assert width["shaky"] > 1.5 * width["steady"], width


def test_fixed_predictor_rows_and_undefined_f1_do_not_crash():
    cases = _cases(10)
    cases.loc[cases["subset"] == "math", "label"] = 0  # no clean case in math: its F1 is undefined (0)
    h = np.stack([_hits(len(cases), 0.7, r) for r in range(3)])
    structure = _hits(len(cases), 0.5, 9)
    rows = RM.paired_rows(cases, {"a": h}, {"structure": structure}, n_boot=100, seed=0)
    assert _row(rows, "a", subset="math")["value"] == 0
    vs = _row(rows, "a", "structure")
    assert np.isfinite([vs["value"], vs["ci_low"], vs["ci_high"]]).all() and vs["n_resamples"] == 3
    none = RM.paired_rows(cases, {"a": h}, n_boot=0)
    assert np.isnan(_row(none, "a")["ci_low"])


def test_each_resample_threshold_is_tuned_as_the_prms_own():
    cases = _cases(12)
    dev = _cases(12, subsets=("gsm8k", "math")).assign(id=lambda d: "dev-" + d["id"])
    rng = np.random.default_rng(0)
    scores = [{str(i): rng.random(3).tolist() for i in cases["id"]} for _ in range(3)]
    dev_scores = [{str(i): rng.random(3).tolist() for i in dev["id"]} for _ in range(3)]
    h, used = RM.resample_hits(cases, scores, "tune", dev, dev_scores, "auto")
    for r in range(3):
        m, per_case = PB.evaluate_processbench(cases, {}, scores[r], "tune", dev_cases=dev, dev_scores=dev_scores[r],
                                               truncated_ok=True)
        assert used[r] == m["threshold"]
        assert (h[r] == (per_case["prediction"].to_numpy() == cases["label"].to_numpy())).all()
    assert len(set(used)) > 1  # each head its own threshold
    fixed, t = RM.resample_hits(cases, scores, 0.5)
    assert t == [0.5] * 3 and fixed.shape == (3, len(cases))


def test_rule_writes_the_paired_table(tmp_path):
    cases = _cases(8)
    write_table(cases, tmp_path / "cases.parquet", "processbench")
    rng = np.random.default_rng(1)
    paths = []
    for prm in ("exact", "mc_hard"):
        df = pd.DataFrame({"id": cases["id"], "subset": cases["subset"],
                           "step_scores": [rng.random(3).tolist() for _ in range(len(cases))]})
        df[RM.RESAMPLE_COLUMN] = [[rng.random(3).tolist() for _ in range(4)] for _ in range(len(cases))]
        write_table(df, tmp_path / f"{prm}.parquet", "pb_scores")
        paths.append(str(tmp_path / f"{prm}.parquet"))
    pd.DataFrame({"id": cases["id"], "prediction": pd.array([-1] * len(cases), dtype="Int64")}).to_parquet(
        tmp_path / "structure.parquet")
    cfg = {"threshold": "tune", "tune_on": "crossfit", "bootstrap": {"samples": 50, "seed": 0, "confidence": 0.9}}
    E.processbench_paired(inputs={"cases": str(tmp_path / "cases.parquet"), "scores": paths,
                                  "structure": [str(tmp_path / "structure.parquet")]},
                          outputs={"table": str(tmp_path / "paired.csv")},
                          params={"prms": ["exact", "mc_hard"], "thresholds": {}, "processbench_eval": cfg,
                                  "run_label": "t"}, wildcards={}, threads=1)
    df = read_csv(tmp_path / "paired.csv", "processbench_paired_csv")
    assert list(df.columns) == RM.PAIRED_COLUMNS + ["run"]
    avg = df[df["subset"] == "average"]
    assert [(a, "" if pd.isna(b) else b) for a, b in zip(avg["prm_a"], avg["prm_b"])] == [
        ("exact", ""), ("mc_hard", ""), ("exact", "mc_hard"), ("exact", "structure"), ("mc_hard", "structure")]
    assert (df["n_resamples"] == 4).all() and len(df) == 5 * 3


def test_scores_without_resample_column_are_refused():
    with pytest.raises(ValueError, match="resample_scores"):
        RM.scores_per_resample(pd.DataFrame({"id": ["a"], "step_scores": [[0.5]]}), "x.parquet")
