"""Threshold protocols (prm_lessons.metrics.processbench): dev-split and cross-fitted thresholds (nothing
tuned on the cases being scored), ProcessBench's own rule (best GSM8K F1, in-sample), paired bootstrap
comparisons of ProcessBench F1 against another predictor, and the CLI's --tune-threshold / --tune-on."""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from prm_lessons.metrics import processbench as m_processbench

SUBSETS = ("gsm8k", "math")


def _scored_set(prefix: str, n: int, cut: float, seed: int, subsets=SUBSETS):
    """n cases per subset, 3 steps each, whose step scores separate correct from wrong steps at `cut`:
    correct steps score in (cut, cut + 0.2], the first wrong step in [cut − 0.2, cut). The best
    threshold of the set is therefore just above `cut`'s wrong-step scores and at most `cut`'s correct ones."""
    rng = np.random.default_rng(seed)
    rows, scores = [], {}
    for sub in subsets:
        for k in range(n):
            i = f"{prefix}-{sub}-{k}"
            label = int(rng.integers(-1, 3))
            s = (cut + rng.uniform(0.01, 0.2, 3)).round(4)
            if label >= 0:
                s[label] = round(cut - float(rng.uniform(0.01, 0.2)), 4)
            rows.append({"id": i, "subset": sub, "label": label, "steps": ["x"] * 3})
            scores[i] = s.tolist()
    return pd.DataFrame(rows), scores


# ------------------------------------------------------------------------------ threshold tuning


def test_tuned_threshold_comes_from_the_dev_split_not_the_evaluated_labels():
    dev, dev_scores = _scored_set("dev", 40, cut=0.3, seed=0)
    ev, ev_scores = _scored_set("ev", 40, cut=0.7, seed=1)
    t_dev = m_processbench.tune_threshold(dev, dev_scores)
    t_ev = m_processbench.tune_threshold(ev, ev_scores)
    assert t_dev < 0.5 < t_ev  # the two sets disagree about the best threshold
    m, per_case = m_processbench.evaluate_processbench(ev, {}, ev_scores, "tune", dev_cases=dev, dev_scores=dev_scores)
    assert m["threshold"] == t_dev and m["tuned_on"] == "dev"
    assert m["threshold_policy"] == f"tuned on the dev split ({len(dev)} cases)"
    assert list(per_case["prediction"]) == [m_processbench.first_error(ev_scores[i], t_dev) for i in ev["id"]]
    # the evaluated labels are never read for tuning: shuffled labels → the same threshold and predictions
    shuffled = ev.assign(label=np.random.default_rng(5).permutation(ev["label"].to_numpy()))
    m2, per_case2 = m_processbench.evaluate_processbench(shuffled, {}, ev_scores, "tune", dev_cases=dev,
                                                         dev_scores=dev_scores)
    assert m2["threshold"] == t_dev
    assert list(per_case2["prediction"]) == list(per_case["prediction"])


def test_dev_split_sharing_an_id_with_the_evaluated_cases_is_refused():
    dev, dev_scores = _scored_set("dev", 5, cut=0.3, seed=0)
    ev, ev_scores = _scored_set("ev", 5, cut=0.7, seed=1)
    leak = pd.concat([dev, ev.iloc[[3]]], ignore_index=True)
    with pytest.raises(ValueError, match=r"shares 1 id.*ev-gsm8k-3"):
        m_processbench.evaluate_processbench(ev, {}, ev_scores, "tune", dev_cases=leak,
                                             dev_scores={**dev_scores, **ev_scores})
    with pytest.raises(ValueError, match="dev split.*none for dev-math-4"):
        m_processbench.evaluate_processbench(ev, {}, ev_scores, "tune", dev_cases=dev,
                                dev_scores={k: v for k, v in dev_scores.items() if k != "dev-math-4"})
    # a fixed threshold ignores the dev split
    preds = {i: m_processbench.first_error(s, 0.5) for i, s in ev_scores.items()}
    m, _ = m_processbench.evaluate_processbench(ev, preds, ev_scores, 0.5, dev_cases=dev, dev_scores=dev_scores)
    assert (m["threshold"], m["threshold_policy"], m["tuned_on"]) == (0.5, "fixed", None)
    m, _ = m_processbench.evaluate_processbench(ev, preds, {})
    assert (m["threshold"], m["threshold_policy"], m["tuned_on"]) == (None, "predictions given", None)


def test_crossfit_folds_are_stable_stratified_and_order_free():
    ev, _ = _scored_set("ev", 41, cut=0.5, seed=2)
    folds = m_processbench.crossfit_folds(ev["id"], ev["subset"], ev["label"])
    assert set(folds) == {0, 1}
    for (sub, err), g in ev.assign(fold=folds, err=ev["label"] != -1).groupby(["subset", "err"]):
        assert abs((g["fold"] == 0).sum() - (g["fold"] == 1).sum()) <= 1  # balanced in every stratum
    rev = ev.iloc[::-1]
    again = dict(zip(rev["id"], m_processbench.crossfit_folds(rev["id"], rev["subset"], rev["label"])))
    assert again == dict(zip(ev["id"], folds))


def test_crossfit_never_scores_a_case_with_a_threshold_from_its_own_fold(monkeypatch):
    """Each fold's tuning returns its own threshold (0.3, then 0.7); every case scores 0.5 on each of its 3
    steps, so its prediction tells which threshold it got (0.3 → −1, 0.7 → 0): it must be the other fold's."""
    ev, _ = _scored_set("ev", 30, cut=0.5, seed=3)
    scores = {i: [0.5] * 3 for i in ev["id"]}
    calls: list[tuple[set, float]] = []
    real = m_processbench.tune_threshold

    def spy(cases, sc, subset=None, **kw):
        real(cases, sc, subset, **kw)  # still validates
        t = (0.3, 0.7)[len(calls)]
        calls.append(({str(i) for i in cases["id"]}, t))
        return t

    monkeypatch.setattr(m_processbench, "tune_threshold", spy)
    m, per_case = m_processbench.evaluate_processbench(ev, {}, scores, "tune")
    assert m["tuned_on"] == "crossfit" and m["threshold_policy"] == "cross-fitted over 2 folds"
    assert m["threshold"] == [0.3, 0.7] and len(calls) == 2
    (fit0, t0), (fit1, t1) = calls
    assert fit0 and fit1 and not fit0 & fit1 and fit0 | fit1 == set(ev["id"])
    assert sorted(m["crossfit_fold_sizes"]) == sorted([len(fit0), len(fit1)])
    for i, p in zip(per_case["id"], per_case["prediction"]):
        other_t = t1 if i in fit0 else t0
        assert p == m_processbench.first_error(scores[i], other_t)


def test_crossfit_predictions_do_not_depend_on_their_own_folds_labels():
    """Moving the error positions of fold 0's error cases (folds unchanged: still errors) cannot change the
    predictions of fold 0, only those of fold 1."""
    ev, scores = _scored_set("ev", 60, cut=0.5, seed=4)
    folds = m_processbench.crossfit_folds(ev["id"], ev["subset"], ev["label"])
    _, base = m_processbench.evaluate_processbench(ev, {}, scores, "tune")
    moved = ev.copy()
    sel = (folds == 0) & (ev["label"].to_numpy() >= 0)
    moved.loc[sel, "label"] = (moved.loc[sel, "label"] + 1) % 3
    assert (m_processbench.crossfit_folds(moved["id"], moved["subset"], moved["label"]) == folds).all()
    m2, changed = m_processbench.evaluate_processbench(moved, {}, scores, "tune")
    f0 = folds == 0
    assert list(changed["prediction"][f0]) == list(base["prediction"][f0])
    m1, _ = m_processbench.evaluate_processbench(ev, {}, scores, "tune")
    assert m2["threshold"][1] == m1["threshold"][1] and m2["threshold"][0] != m1["threshold"][0]


def gsm8k_vs_average_set():
    """Six cases whose best thresholds disagree: every T in (0.3, 0.6] is perfect on gsm8k (the smallest
    candidate: 0.6), while math needs T in (0.1, 0.35] too, so the average F1's best is 0.35."""
    cases = pd.DataFrame({"id": ["g0", "g1", "g2", "g3", "m0", "m1"], "subset": ["gsm8k"] * 4 + ["math"] * 2,
                          "label": [-1, 1, 0, -1, 2, -1]})
    scores = {"g0": [0.9, 0.8], "g1": [0.9, 0.3, 0.2], "g2": [0.25, 0.9], "g3": [0.7, 0.6],
              "m0": [0.9, 0.9, 0.1], "m1": [0.35]}
    return cases.assign(steps=[["x"] * len(scores[i]) for i in cases["id"]]), scores


def test_gsm8k_protocol_takes_the_best_gsm8k_f1_and_applies_it_to_every_subset():
    cases, scores = gsm8k_vs_average_set()
    assert m_processbench.tune_threshold(cases, scores, "gsm8k") == 0.6
    assert m_processbench.tune_threshold(cases, scores) == 0.35  # the average's best: another threshold
    assert m_processbench.tune_threshold(cases, scores, "math") == 0.35
    m, per_case = m_processbench.evaluate_processbench(cases, {}, scores, "tune", tune_on="gsm8k")
    assert (m["threshold"], m["tuned_on"]) == (0.6, "gsm8k")
    assert m["threshold_policy"] == "best F1 on the GSM8K subset (4 cases, in-sample; ProcessBench §4.1)"
    # 0.6 predicts every subset, math included: m1's single step (0.35) is read as wrong there
    assert list(per_case["prediction"]) == [-1, 1, 0, -1, 2, 0]
    assert m["subsets"]["gsm8k"]["f1"] == 1.0 and m["subsets"]["math"]["correct_acc"] == 0.0
    # a dev split is not read by the gsm8k rule (its own best threshold is 0.3-ish)
    dev, dev_scores = _scored_set("dev", 20, cut=0.3, seed=0)
    m2, _ = m_processbench.evaluate_processbench(cases, {}, scores, "tune", dev_cases=dev, dev_scores=dev_scores,
                                                 tune_on="gsm8k")
    assert (m2["threshold"], m2["tuned_on"]) == (0.6, "gsm8k")
    rows = pd.DataFrame(m_processbench.processbench_long_rows(m, "skywork"))
    assert set(rows["tuned_on"]) == {"gsm8k"} and set(rows["threshold"]) == {0.6}


def test_tune_protocols_auto_dev_crossfit_and_their_errors():
    dev, dev_scores = _scored_set("dev", 30, cut=0.3, seed=0)
    ev, ev_scores = _scored_set("ev", 30, cut=0.7, seed=1)
    auto, _ = m_processbench.evaluate_processbench(ev, {}, ev_scores, "tune", dev_cases=dev, dev_scores=dev_scores)
    dev_m, _ = m_processbench.evaluate_processbench(ev, {}, ev_scores, "tune", dev_cases=dev, dev_scores=dev_scores,
                                                    tune_on="dev")
    assert auto["tuned_on"] == dev_m["tuned_on"] == "dev" and auto["threshold"] == dev_m["threshold"]
    # crossfit ignores a dev split it is given
    cf, _ = m_processbench.evaluate_processbench(ev, {}, ev_scores, "tune", dev_cases=dev, dev_scores=dev_scores,
                                                 tune_on="crossfit")
    alone, _ = m_processbench.evaluate_processbench(ev, {}, ev_scores, "tune")
    assert cf["tuned_on"] == alone["tuned_on"] == "crossfit" and cf["threshold"] == alone["threshold"]
    with pytest.raises(ValueError, match=r"tune_on 'dev'\) needs a dev split"):
        m_processbench.evaluate_processbench(ev, {}, ev_scores, "tune", tune_on="dev")
    with pytest.raises(ValueError, match="'nope' is not one of auto, dev, crossfit, gsm8k"):
        m_processbench.evaluate_processbench(ev, {}, ev_scores, "tune", tune_on="nope")
    no_gsm8k, sc = _scored_set("x", 5, cut=0.5, seed=2, subsets=("math",))
    with pytest.raises(ValueError, match="subset 'gsm8k' has no cases"):
        m_processbench.evaluate_processbench(no_gsm8k, {}, sc, "tune", tune_on="gsm8k")


# ------------------------------------------------------------------------------ paired comparisons


def _pb_random(n=400, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(-1, 4, size=n)
    cases = pd.DataFrame({"id": [f"c{k}" for k in range(n)], "subset": [SUBSETS[k % 2] for k in range(n)],
                          "label": labels})
    # a: right 70% of the time; b: a with 8% of its predictions changed (strongly correlated with a)
    a = {f"c{k}": int(label) if rng.random() < 0.7 else int(rng.integers(-1, 4)) for k, label in enumerate(labels)}
    b = {i: (int(rng.integers(-1, 4)) if rng.random() < 0.08 else p) for i, p in a.items()}
    return cases, a, b


def test_paired_f1_difference_point_estimate_and_a_narrower_interval():
    cases, a, b = _pb_random()
    d = m_processbench.paired_f1_difference(cases, a, b, n_boot=2000, seed=1)
    ma = m_processbench.processbench_metrics(cases, a, bootstrap=2000, seed=1)
    mb = m_processbench.processbench_metrics(cases, b, bootstrap=2000, seed=2)
    assert d["diff"] == pytest.approx(ma["average_f1"] - mb["average_f1"], abs=1e-12)
    assert d["f1_a"] == ma["average_f1"] and d["n_boot"] == 2000
    lo, hi = d["ci"]
    assert lo <= d["diff"] <= hi
    # unpaired: independent estimates → width of the difference ≈ sqrt(wa² + wb²)
    wa = ma["average_f1_ci"][1] - ma["average_f1_ci"][0]
    wb = mb["average_f1_ci"][1] - mb["average_f1_ci"][0]
    assert hi - lo < 0.5 * math.hypot(wa, wb)
    # identical predictors: exactly 0 in every replicate
    same = m_processbench.paired_f1_difference(cases, a, dict(a), n_boot=200)
    assert same["diff"] == 0.0 and same["ci"] == [0.0, 0.0]
    assert all(math.isnan(x) for x in m_processbench.paired_f1_difference(cases, a, b, n_boot=0)["ci"])
    with pytest.raises(KeyError, match="no prediction.*c3"):
        m_processbench.paired_f1_difference(cases, a, {k: v for k, v in b.items() if k != "c3"})


def test_processbench_long_rows_carry_the_structure_difference_on_the_average_row():
    cases, a, b = _pb_random(80)
    m = m_processbench.processbench_metrics(cases, a, bootstrap=50)
    m.update(threshold=[0.25, 0.5], vs_structure=m_processbench.paired_f1_difference(cases, a, b, n_boot=50))
    rows = pd.DataFrame(m_processbench.processbench_long_rows(m, "x"))
    assert list(rows.columns) == m_processbench.PROCESSBENCH_LONG_COLUMNS == [
        "prm", "subset", "n", "error_acc", "correct_acc", "f1", "f1_ci_low", "f1_ci_high", "n_unparsed",
        "threshold", "tuned_on", "delta_f1_structure", "delta_ci_low", "delta_ci_high", "setting"]
    avg = rows[rows["subset"] == "average"].iloc[0]
    assert avg["delta_f1_structure"] == m["vs_structure"]["diff"]
    assert [avg["delta_ci_low"], avg["delta_ci_high"]] == m["vs_structure"]["ci"]
    assert rows[rows["subset"] != "average"]["delta_f1_structure"].isna().all()
    assert set(rows["threshold"]) == {"0.25|0.5"}  # cross-fitted: both fold thresholds
    del m["vs_structure"]
    m["threshold"] = 0.5
    rows = pd.DataFrame(m_processbench.processbench_long_rows(m, "x"))
    assert rows["delta_f1_structure"].isna().all() and set(rows["threshold"]) == {0.5}


# ------------------------------------------------------------------------------------------- CLI


def test_cli_tunes_on_the_dev_split_or_cross_fits(tmp_path):
    from prm_lessons.cli import build_parser

    def write(name, cases, scores):
        d = tmp_path / name
        d.mkdir()
        for sub, g in cases.groupby("subset"):
            recs = [{"id": r.id, "generator": "x", "problem": "p", "steps": ["a", "b", "c"],
                     "final_answer_correct": r.label == -1, "label": int(r.label)} for r in g.itertuples()]
            (d / f"{sub}.json").write_text(json.dumps(recs))
        pred = tmp_path / f"{name}.jsonl"
        pred.write_text("\n".join(json.dumps({"id": i, "step_scores": s}) for i, s in scores.items()))
        return str(d), str(pred)

    dev_dir, dev_pred = write("dev", *_scored_set("dev", 20, cut=0.3, seed=0))
    ev_dir, ev_pred = write("ev", *_scored_set("ev", 20, cut=0.7, seed=1))
    out = tmp_path / "m.json"
    base = ["eval", "processbench", "--data", ev_dir, "--predictions", ev_pred, "--output", str(out),
            "--tune-threshold"]
    args = build_parser().parse_args(base + ["--dev-data", dev_dir, "--dev-predictions", dev_pred])
    args.func(args)
    m = json.loads(out.read_text())
    assert m["tuned_on"] == "dev" and m["threshold"] < 0.5
    args = build_parser().parse_args(base)
    args.func(args)
    m = json.loads(out.read_text())
    assert m["tuned_on"] == "crossfit" and len(m["threshold"]) == 2
    with pytest.raises(ValueError, match="--dev-data: --tune-on gsm8k does not read a dev split"):
        args = build_parser().parse_args(base + ["--tune-on", "gsm8k", "--dev-data", dev_dir,
                                                 "--dev-predictions", dev_pred])
        args.func(args)
    args = build_parser().parse_args(base + ["--tune-on", "gsm8k"])
    args.func(args)
    m = json.loads(out.read_text())
    assert m["tuned_on"] == "gsm8k" and m["threshold"] == m_processbench.tune_threshold(
        *_scored_set("ev", 20, cut=0.7, seed=1), subset="gsm8k")
    with pytest.raises(ValueError, match="go together"):
        args = build_parser().parse_args(base + ["--dev-data", dev_dir])
        args.func(args)
