"""ProcessBench metrics (prm_lessons.metrics.processbench): the official metric and F1, unparsable and
unknown ids, the first-error threshold and its tuning, prediction rows, long tables, and the official
definitions on the real cases (../shared)."""
from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest

from conftest import shared_data_dir
from metric_inputs import bon_rows, six_pb_cases
from prm_lessons.cli import predictions_from_rows
from prm_lessons.data.processbench import load_processbench_cases
from prm_lessons.metrics import bon as m_bon
from prm_lessons.metrics import processbench as m_processbench

# ------------------------------------------------------------------------------------ ProcessBench


def test_processbench_official_metric():
    preds = {"g0": -1, "g1": 1, "g2": 1, "g3": 0, "m0": 2, "m1": -1}
    m = m_processbench.processbench_metrics(six_pb_cases(), preds)
    g = m["subsets"]["gsm8k"]
    assert (g["n"], g["n_error"], g["n_correct"]) == (4, 2, 2)
    assert g["error_acc"] == 0.5 and g["correct_acc"] == 0.5 and g["f1"] == 0.5
    assert m["subsets"]["math"]["f1"] == 1.0
    assert m["average_f1"] == pytest.approx(0.75)  # mean of subset F1s, not a pooled F1


def test_processbench_f1_zero_and_unparsable_counted_wrong():
    preds = {i: -1 for i in six_pb_cases()["id"]}
    m = m_processbench.processbench_metrics(six_pb_cases(), preds)
    assert m["subsets"]["gsm8k"]["error_acc"] == 0 and m["subsets"]["gsm8k"]["correct_acc"] == 1
    assert m["subsets"]["gsm8k"]["f1"] == 0.0
    preds = {"g0": None, "g1": 1, "g2": 0, "g3": -1, "m0": None, "m1": -1}
    m = m_processbench.processbench_metrics(six_pb_cases(), preds)
    assert m["subsets"]["gsm8k"]["correct_acc"] == 0.5 and m["n_unparsed"] == 2
    assert m_processbench.f1_harmonic(0.0, 0.0) == 0.0


def test_processbench_unknown_and_missing_ids_are_named():
    preds = {i: -1 for i in six_pb_cases()["id"]}
    with pytest.raises(KeyError, match="unknown ProcessBench id.*zzz"):
        m_processbench.processbench_metrics(six_pb_cases(), {**preds, "zzz": 0})
    del preds["m1"]
    with pytest.raises(KeyError, match="no prediction for ProcessBench id.*m1"):
        m_processbench.processbench_metrics(six_pb_cases(), preds)


def test_first_error_threshold_is_strict():
    assert m_processbench.first_error([0.9, 0.5, 0.1], 0.5) == 2
    assert m_processbench.first_error([0.9, 0.49, 0.1], 0.5) == 1
    assert m_processbench.first_error([0.9, 0.9], 0.5) == -1
    assert m_processbench.first_error([], 0.5) == -1


def test_tune_threshold_on_one_subset_or_the_average():
    cases = six_pb_cases()
    scores = {"g0": [0.9, 0.8], "g1": [0.9, 0.3, 0.2], "g2": [0.25, 0.9], "g3": [0.7, 0.6],
              "m0": [0.9, 0.9, 0.1], "m1": [0.35]}
    t = m_processbench.tune_threshold(cases, scores, "gsm8k")
    # every threshold in (0.3, 0.6] is perfect on gsm8k; the smallest candidate (a step score) is taken
    assert t == 0.6
    # the average over subsets: math needs T in (0.1, 0.35] as well → (0.3, 0.35] → 0.35
    assert m_processbench.tune_threshold(cases, scores) == 0.35
    with pytest.raises(ValueError, match="subset 'nope'"):
        m_processbench.tune_threshold(cases, scores, "nope")
    with pytest.raises(ValueError, match="step_scores for every case.*m1"):
        m_processbench.tune_threshold(cases, {k: v for k, v in scores.items() if k != "m1"})


def test_tune_threshold_equals_brute_force_over_candidates():
    """The interval-count search equals scoring every candidate with first_error + processbench_metrics."""
    rng = np.random.default_rng(3)
    rows, scores = [], {}
    for k in range(120):
        n = int(rng.integers(1, 7))
        lab = int(rng.integers(-1, n))
        rows.append({"id": f"c{k}", "subset": ["a", "b", "c"][k % 3], "label": lab})
        s = np.round(rng.uniform(0, 1, n), 2).tolist()
        if lab >= 0:
            s[lab] = round(s[lab] * 0.5, 2)
        scores[f"c{k}"] = s
    cases = pd.DataFrame(rows)
    for subset in (None, "b"):
        g = cases if subset is None else cases[cases["subset"] == subset]
        pool = sorted({v for i in g["id"] for v in scores[i]})
        cands = pool + [np.nextafter(pool[-1], 1.0)]
        f = [round(m_processbench.processbench_metrics(
                 g, {i: m_processbench.first_error(scores[i], t) for i in g["id"]})["average_f1"], 12)
             for t in cands]
        # first maximum = smallest
        assert m_processbench.tune_threshold(cases, scores, subset) == cands[int(np.argmax(f))]


def test_predictions_rows_validation():
    preds, scores = predictions_from_rows([{"id": "a", "prediction": 2}, {"id": "b", "step_scores": [0.9, 0.1]},
                                           {"id": "c", "prediction": None}], 0.5)
    assert preds == {"a": 2, "b": 1, "c": None} and scores == {"b": [0.9, 0.1]}
    with pytest.raises(ValueError, match="id 'x'.*'prediction' or 'step_scores'"):
        predictions_from_rows([{"id": "x"}], 0.5)
    with pytest.raises(ValueError, match="duplicate prediction for id 'a'"):
        predictions_from_rows([{"id": "a", "prediction": 1}, {"id": "a", "prediction": 1}], 0.5)
    with pytest.raises(ValueError, match="id 'a'.*not an integer"):
        predictions_from_rows([{"id": "a", "prediction": "two"}], 0.5)


def test_long_tables():
    rows = bon_rows("a", "p1", ["1", "2"], [False, True], [[0.2], [0.8]])
    m = m_bon.bon_metrics(pd.DataFrame(rows), ["product"], bootstrap=10)
    long = pd.DataFrame(m_bon.bon_long_rows(m, "x"))
    assert list(long.columns) == ["prm", "benchmark", "metric", "n", "accuracy", "ci_low", "ci_high"]
    assert set(long["benchmark"]) == {"a", "average"}
    pm = m_processbench.processbench_metrics(six_pb_cases(), {i: -1 for i in six_pb_cases()["id"]}, bootstrap=10)
    pl = pd.DataFrame(m_processbench.processbench_long_rows(pm, "x"))
    assert list(pl["subset"]) == ["gsm8k", "math", "average"]
    assert pl.iloc[-1]["f1"] == pm["average_f1"]


# --------------------------------------------------------------------------- real data (../shared)
# The official definitions on the real data (these checks were bench/validate_official_metrics.py).


@pytest.fixture(scope="module")
def pb_cases():
    """ProcessBench's 3,400 cases from ../shared/data/processbench."""
    return load_processbench_cases(str(shared_data_dir("processbench")))


def _official_pb(cases: pd.DataFrame, preds: dict) -> dict:
    """The official run_eval.py arithmetic, written out independently (percentages → fractions)."""
    out = {}
    for subset, g in cases.groupby("subset"):
        data = [{"match": preds[i] == label, "label": label} for i, label in zip(g["id"], g["label"])]
        d1 = [e for e in data if e["label"] != -1]
        d2 = [e for e in data if e["label"] == -1]
        a1 = np.mean([e["match"] for e in d1]) * 100
        a2 = np.mean([e["match"] for e in d2]) * 100
        f1 = 2 * a1 * a2 / (a1 + a2) if a1 + a2 else 0.0
        out[subset] = (a1 / 100, a2 / 100, f1 / 100)
    return {"subsets": out, "average_f1": float(np.mean([v[2] for v in out.values()]))}


def test_official_processbench_gold_and_all_correct(pb_cases):
    cases = pb_cases
    assert len(cases) == 3400
    gold = dict(zip(cases["id"], cases["label"].astype(int)))
    m = m_processbench.processbench_metrics(cases, gold)
    assert all(s["f1"] == 1.0 for s in m["subsets"].values()) and m["average_f1"] == 1.0
    assert all((s["error_acc"], s["correct_acc"], s["f1"]) == (1.0, 1.0, 1.0) for s in m["subsets"].values())
    m = m_processbench.processbench_metrics(cases, {i: -1 for i in gold})
    counts = {k: (s["n_error"], s["n_correct"]) for k, s in m["subsets"].items()}
    assert counts == {"gsm8k": (207, 193), "math": (594, 406), "olympiadbench": (661, 339), "omnimath": (759, 241)}
    assert all(s["error_acc"] == 0 and s["correct_acc"] == 1 and s["f1"] == 0 for s in m["subsets"].values())


def test_official_processbench_arithmetic_on_random_predictions(pb_cases):
    """A random prediction set scored by an independent re-implementation of the official run_eval.py
    arithmetic (numpy means, harmonic mean, mean of subset F1s) equals ours."""
    cases = pb_cases
    gold = dict(zip(cases["id"], cases["label"].astype(int)))
    rnd = random.Random(0)
    steps = dict(zip(cases["id"], cases["steps"]))
    preds = {i: rnd.choice([-1, -1, label if label >= 0 else 0, rnd.randrange(len(steps[i]))])
             for i, label in gold.items()}
    ours = m_processbench.processbench_metrics(cases, preds)
    ref = _official_pb(cases, preds)
    got = {k: (s["error_acc"], s["correct_acc"], s["f1"]) for k, s in ours["subsets"].items()}
    assert all(np.allclose(got[k], ref["subsets"][k], atol=1e-12) for k in ref["subsets"])
    assert abs(ours["average_f1"] - ref["average_f1"]) < 1e-12
