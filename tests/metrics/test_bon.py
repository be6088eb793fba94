"""Best-of-N and ProcessBench metric definitions, tie rules, failure modes and the eval CLIs."""
from __future__ import annotations

import json
import math
import random
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import shared_data_dir
from prm_lessons.data.processbench import load_processbench_cases
from prm_lessons.metrics import bon as m_bon
from prm_lessons.metrics import processbench as m_processbench
from prm_lessons.metrics import select as m_select
from prm_lessons.metrics import vote as m_vote


def _rows(bench, pid, preds, correct, scores, start=0):
    return [{"benchmark": bench, "problem_id": pid, "sample_idx": start + i, "pred": p, "correct": c,
             "step_scores": s} for i, (p, c, s) in enumerate(zip(preds, correct, scores))]


# ------------------------------------------------------------------ aggregation and selection rules

def test_aggregations():
    s = [0.9, 0.5, 0.8]
    assert m_select.aggregate(s, "product") == pytest.approx(0.36)
    assert m_select.aggregate(s, "min") == 0.5
    assert m_select.aggregate(s, "last") == 0.8
    assert m_select.aggregate(s, "mean") == pytest.approx(2.2 / 3)
    assert m_select.aggregate([], "product") == -math.inf and m_select.aggregate(None, "min") == -math.inf
    with pytest.raises(ValueError, match="unknown aggregation 'max'"):
        m_select.aggregate(s, "max")


def test_best_of_n_ties_pick_lowest_sample_idx():
    # rows given out of order: sample 2 and sample 0 tie on product; sample 0 (wrong) must be chosen
    rows = _rows("b", "p1", ["1", "2", "3"], [False, True, True], [[0.5], [0.4], [0.5]])
    df = pd.DataFrame(rows[::-1])
    m = m_bon.bon_metrics(df, ["product"], bootstrap=0)
    assert m["benchmarks"]["b"]["prm_product"] == 0.0
    probs, _ = m_bon.bon_problem_table(df, ["product"])
    assert probs.loc[0, "prm_product_sample_idx"] == 0


def test_majority_ties_pick_answer_seen_first_and_skip_missing():
    assert m_vote.majority_index(["7", "5", "5", "7"]) == 0  # 2-2 tie: "7" appears first
    assert m_vote.majority_index([None, "5", " 5 ", "$5$", "7"]) == 1  # normalised grouping
    assert m_vote.majority_index([None, "5", " 5 ", "7"], grouping="exact") == 1
    assert m_vote.majority_index(["7", "5", " 5 "], grouping="exact") == 0  # exact: 1-1-1 → first
    assert m_vote.majority_index([None, None]) is None
    rows = _rows("b", "p", [None, None], [False, False], [[1.0], [1.0]])
    assert m_bon.bon_metrics(pd.DataFrame(rows), ["last"], bootstrap=0)["benchmarks"]["b"]["maj"] == 0.0


def test_majority_math_verify_grouping():
    pytest.importorskip("math_verify")
    # 1/2 and 0.5 are one group under math-verify (2 votes) and beat "3" seen first
    assert m_vote.majority_index(["3", "\\frac{1}{2}", "0.5"], grouping="math_verify") == 1
    assert m_vote.majority_index(["3", "\\frac{1}{2}", "0.5"], grouping="normalized") == 0


def test_bon_metrics_definitions_and_unweighted_average():
    rows = (_rows("a", "p1", ["1", "2", "2"], [False, True, True], [[0.9, 0.9], [0.2], [0.95]])
            + _rows("a", "p2", ["4", "4", "5"], [True, True, False], [[0.1], [0.2], [0.3, 0.99]])
            + _rows("b", "q1", ["x", "y", "z"], [False, False, False], [[1.0], [1.0], [1.0]]))
    m = m_bon.bon_metrics(pd.DataFrame(rows), ["product", "min", "last"], bootstrap=200, seed=1)
    a = m["benchmarks"]["a"]
    assert a["n_problems"] == 2 and a["n"] == 3
    assert a["pass"] == 1.0 and a["maj"] == 1.0
    # p1: product 0.81 / 0.2 / 0.95 → s2 (correct); p2: 0.1 / 0.2 / 0.297 → s2 (wrong)
    assert a["prm_product"] == 0.5
    # last: p1 0.9/0.2/0.95 → s2 correct; p2 0.1/0.2/0.99 → s2 wrong
    assert a["prm_last"] == 0.5
    assert m["benchmarks"]["b"]["pass"] == 0.0
    assert m["average"]["pass"] == pytest.approx(0.5)  # unweighted over benchmarks, not problems
    for bench in ("a", "b"):
        for key in ("pass", "maj", "prm_product", "prm_min", "prm_last"):
            lo, hi = m["benchmarks"][bench]["ci"][key]
            assert lo <= m["benchmarks"][bench][key] <= hi
    again = m_bon.bon_metrics(pd.DataFrame(rows), ["product", "min", "last"], bootstrap=200, seed=1)
    assert again["average"]["ci"] == m["average"]["ci"]  # fixed seed → same intervals


def test_first_n_samples_and_n_mismatch_errors():
    rows = (_rows("a", "p1", ["1"] * 4, [True, False, False, False], [[0.1], [0.9], [0.9], [0.9]])
            + _rows("a", "p2", ["1"] * 4, [False] * 4, [[0.1]] * 4))
    m = m_bon.bon_metrics(pd.DataFrame(rows), ["last"], n=1, bootstrap=0)
    assert m["benchmarks"]["a"]["prm_last"] == 0.5 and m["benchmarks"]["a"]["n"] == 1
    short = rows + _rows("a", "p3", ["1"] * 2, [False] * 2, [[0.1]] * 2)
    with pytest.raises(ValueError, match=r"a/p3 \(2\)"):
        m_bon.bon_metrics(pd.DataFrame(short), ["last"], n=4, bootstrap=0)
    with pytest.raises(ValueError, match=r"benchmark 'a'.*p3 \(2\)"):
        m_bon.bon_metrics(pd.DataFrame(short), ["last"], bootstrap=0)
    dup = rows + rows[:1]
    with pytest.raises(ValueError, match="duplicate response"):
        m_bon.bon_metrics(pd.DataFrame(dup), ["last"], bootstrap=0)


def test_orm_column():
    rows = _rows("a", "p1", ["1", "2"], [False, True], [None, None])
    for r, s in zip(rows, [0.3, 2.5]):
        r["orm_score"] = s
    m = m_bon.bon_metrics(pd.DataFrame(rows), [], orm_column="orm_score", bootstrap=0)
    assert m["benchmarks"]["a"]["orm"] == 1.0 and "prm_product" not in m["benchmarks"]["a"]


# ------------------------------------------------------------------------------------ ProcessBench

def _cases():
    return pd.DataFrame({"id": ["g0", "g1", "g2", "g3", "m0", "m1"],
                         "subset": ["gsm8k"] * 4 + ["math"] * 2,
                         "label": [-1, 1, 0, -1, 2, -1]})


def test_processbench_official_metric():
    preds = {"g0": -1, "g1": 1, "g2": 1, "g3": 0, "m0": 2, "m1": -1}
    m = m_processbench.processbench_metrics(_cases(), preds)
    g = m["subsets"]["gsm8k"]
    assert (g["n"], g["n_error"], g["n_correct"]) == (4, 2, 2)
    assert g["error_acc"] == 0.5 and g["correct_acc"] == 0.5 and g["f1"] == 0.5
    assert m["subsets"]["math"]["f1"] == 1.0
    assert m["average_f1"] == pytest.approx(0.75)  # mean of subset F1s, not a pooled F1


def test_processbench_f1_zero_and_unparsable_counted_wrong():
    preds = {i: -1 for i in _cases()["id"]}
    m = m_processbench.processbench_metrics(_cases(), preds)
    assert m["subsets"]["gsm8k"]["error_acc"] == 0 and m["subsets"]["gsm8k"]["correct_acc"] == 1
    assert m["subsets"]["gsm8k"]["f1"] == 0.0
    preds = {"g0": None, "g1": 1, "g2": 0, "g3": -1, "m0": None, "m1": -1}
    m = m_processbench.processbench_metrics(_cases(), preds)
    assert m["subsets"]["gsm8k"]["correct_acc"] == 0.5 and m["n_unparsed"] == 2
    assert m_processbench.f1_harmonic(0.0, 0.0) == 0.0


def test_processbench_unknown_and_missing_ids_are_named():
    preds = {i: -1 for i in _cases()["id"]}
    with pytest.raises(KeyError, match="unknown ProcessBench id.*zzz"):
        m_processbench.processbench_metrics(_cases(), {**preds, "zzz": 0})
    del preds["m1"]
    with pytest.raises(KeyError, match="no prediction for ProcessBench id.*m1"):
        m_processbench.processbench_metrics(_cases(), preds)


def test_first_error_threshold_is_strict():
    assert m_processbench.first_error([0.9, 0.5, 0.1], 0.5) == 2
    assert m_processbench.first_error([0.9, 0.49, 0.1], 0.5) == 1
    assert m_processbench.first_error([0.9, 0.9], 0.5) == -1
    assert m_processbench.first_error([], 0.5) == -1


def test_tune_threshold_on_one_subset_or_the_average():
    cases = _cases()
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
        f = [round(m_processbench.processbench_metrics(g, {i: m_processbench.first_error(scores[i], t) for i in g["id"]})["average_f1"], 12)
             for t in cands]
        assert m_processbench.tune_threshold(cases, scores, subset) == cands[int(np.argmax(f))]  # first maximum = smallest


def test_predictions_rows_validation():
    preds, scores = m_processbench.predictions_from_rows([{"id": "a", "prediction": 2}, {"id": "b", "step_scores": [0.9, 0.1]},
                                             {"id": "c", "prediction": None}], 0.5)
    assert preds == {"a": 2, "b": 1, "c": None} and scores == {"b": [0.9, 0.1]}
    with pytest.raises(ValueError, match="id 'x'.*'prediction' or 'step_scores'"):
        m_processbench.predictions_from_rows([{"id": "x"}], 0.5)
    with pytest.raises(ValueError, match="duplicate prediction for id 'a'"):
        m_processbench.predictions_from_rows([{"id": "a", "prediction": 1}, {"id": "a", "prediction": 1}], 0.5)
    with pytest.raises(ValueError, match="id 'a'.*not an integer"):
        m_processbench.predictions_from_rows([{"id": "a", "prediction": "two"}], 0.5)


# ------------------------------------------------------------------------------------------- CLIs

def _run(argv):
    """The subcommand's function itself (cli.main would turn its errors into exit status 2)."""
    from prm_lessons.cli import build_parser

    args = build_parser().parse_args(argv)
    return args.func(args)


def test_cli_processbench(tmp_path):
    data = tmp_path / "pb"
    data.mkdir()
    for subset, g in _cases().groupby("subset"):
        recs = [{"id": r.id, "generator": "x", "problem": "p", "steps": ["a", "b", "c"],
                 "final_answer_correct": r.label == -1, "label": int(r.label)} for r in g.itertuples()]
        (data / f"{subset}.json").write_text(json.dumps(recs))
    pred = tmp_path / "p.jsonl"
    pred.write_text("\n".join(json.dumps(r) for r in [
        {"id": "g0", "prediction": -1}, {"id": "g1", "step_scores": [0.9, 0.2, 0.1]}, {"id": "g2", "prediction": 0},
        {"id": "g3", "step_scores": [0.9, 0.9, 0.9]}, {"id": "m0", "prediction": 2}, {"id": "m1", "prediction": -1}]))
    out = tmp_path / "m.json"
    _run(["eval", "processbench", "--data", str(data), "--predictions", str(pred), "--output", str(out)])
    m = json.loads(out.read_text())
    assert m["average_f1"] == 1.0 and set(m["subsets"]) == {"gsm8k", "math"}
    assert set(m["subsets"]["gsm8k"]) >= {"n", "error_acc", "correct_acc", "f1"}
    pred.write_text(pred.read_text() + "\n" + json.dumps({"id": "nope-7", "prediction": 1}))
    with pytest.raises(KeyError, match="nope-7"):
        _run(["eval", "processbench", "--data", str(data), "--predictions", str(pred), "--output", str(out)])


def test_cli_bon(tmp_path):
    rows = (_rows("a", "p1", ["1", "2"], [False, True], [[0.2, 0.9], [0.8]])
            + _rows("b", "q1", ["3", "3"], [True, True], [[0.5], [0.5]]))
    s = tmp_path / "s.jsonl"
    s.write_text("\n".join(json.dumps(r) for r in rows))
    out = tmp_path / "m.json"
    _run(["eval", "bon", "--samples", str(s), "--aggregations", "product,min,last", "--output", str(out)])
    m = json.loads(out.read_text())
    assert set(m["benchmarks"]["a"]) >= {"n_problems", "pass", "maj", "prm_product", "prm_min", "prm_last"}
    assert m["benchmarks"]["a"]["prm_product"] == 1.0 and m["average"]["pass"] == 1.0
    s.write_text(json.dumps({"benchmark": "a", "problem_id": "p1", "sample_idx": 0}))
    with pytest.raises(ValueError, match="p1.*lacks field"):
        _run(["eval", "bon", "--samples", str(s), "--output", str(out)])


def test_long_tables():
    rows = _rows("a", "p1", ["1", "2"], [False, True], [[0.2], [0.8]])
    m = m_bon.bon_metrics(pd.DataFrame(rows), ["product"], bootstrap=10)
    long = pd.DataFrame(m_bon.bon_long_rows(m, "x"))
    assert list(long.columns) == ["prm", "benchmark", "metric", "n", "accuracy", "ci_low", "ci_high"]
    assert set(long["benchmark"]) == {"a", "average"}
    pm = m_processbench.processbench_metrics(_cases(), {i: -1 for i in _cases()["id"]}, bootstrap=10)
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
        data = [{"match": preds[i] == l, "label": l} for i, l in zip(g["id"], g["label"])]
        d1 = [e for e in data if e["label"] != -1]
        d2 = [e for e in data if e["label"] == -1]
        a1 = np.mean([e["match"] for e in d1]) * 100
        a2 = np.mean([e["match"] for e in d2]) * 100
        f1 = 2 * a1 * a2 / (a1 + a2) if a1 + a2 else 0.0
        out[subset] = (a1 / 100, a2 / 100, f1 / 100)
    return {"subsets": out, "average_f1": float(np.mean([v[2] for v in out.values()]))}


def _check_bon(path: Path, k: int = 8) -> dict:
    """maj@k, rm@k (the harness's `pred_score`, an ORM) and pass@k recomputed the Qwen2.5-Math harness's way
    (rm_maj_eval.py: Counter.most_common on the exact `pred` strings, index of the first max score), and
    ours through the `prm-lessons eval bon` code path with maj_grouping=exact."""
    rows = [json.loads(line) for line in open(path)]
    maj = rm = pas = 0
    for r in rows:  # rm_maj_eval.py, verbatim in logic
        preds, score = r["pred"][:k], r["score"][:k]
        majority = Counter(preds).most_common(1)[0][0]
        maj += score[preds.index(majority)]
        rs = [s for sc in r["pred_score"][:k] for s in sc]
        rm += score[rs.index(max(rs))]
        pas += any(score)
    harness = {"maj": maj / len(rows), "orm": rm / len(rows), "pass": pas / len(rows)}
    flat = [{"benchmark": "math", "problem_id": str(r["idx"]), "sample_idx": j, "pred": r["pred"][j],
             "correct": bool(r["score"][j]), "step_scores": None, "orm_score": r["pred_score"][j][0]}
            for r in rows for j in range(len(r["pred"]))]
    m = m_bon.bon_metrics(pd.DataFrame(flat), [], n=k, maj_grouping="exact", orm_column="orm_score", bootstrap=1000)
    b = m["benchmarks"]["math"]
    return {"harness": harness, "ours": {"maj": b["maj"], "orm": b["orm"], "pass": b["pass"]},
            "ci": b["ci"], "n_problems": b["n_problems"]}


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
    preds = {i: rnd.choice([-1, -1, l if l >= 0 else 0, rnd.randrange(len(steps[i]))]) for i, l in gold.items()}
    ours = m_processbench.processbench_metrics(cases, preds)
    ref = _official_pb(cases, preds)
    got = {k: (s["error_acc"], s["correct_acc"], s["f1"]) for k, s in ours["subsets"].items()}
    assert all(np.allclose(got[k], ref["subsets"][k], atol=1e-12) for k in ref["subsets"])
    assert abs(ours["average_f1"] - ref["average_f1"]) < 1e-12


def test_harness_maj_rm_pass_on_real_samples():
    """Best-of-8 on math_cot_100_samples.jsonl (100 MATH problems × 8 responses from the Qwen2.5-Math
    harness): maj@8, rm@8 and pass@8 the harness's way equal ours."""
    res = _check_bon(shared_data_dir("bon", "math_cot_100_samples.jsonl"))
    assert res["ours"] == res["harness"]
