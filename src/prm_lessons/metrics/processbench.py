"""ProcessBench: the official metric (per-subset error / correct accuracy, F1), first_error predictions,
threshold tuning and cross-fitting, evaluating one PRM or critic, long rows, and the paired F1 difference
of two predictors.
"""
from __future__ import annotations

import hashlib
import math
import warnings
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import as_int
from .rows import (
    check_processbench_inputs,
    check_threshold,
)
from .stats import bootstrap_means, interval


def first_error(step_scores: Sequence[float] | None, threshold: float = 0.5) -> int:
    """PRM decision rule: index of the first step with score < threshold, −1 if none."""
    for i, s in enumerate(step_scores or []):
        if s is None or (isinstance(s, float) and math.isnan(s)) or s < threshold:
            return i
    return -1


def f1_harmonic(error_acc, correct_acc):
    """ProcessBench's F1: the harmonic mean 2ec/(e+c) of the error and correct accuracies, 0 where both are
    0. Two numbers give a float; arrays (bootstrap replicates, threshold candidates) an array, elementwise."""
    if np.ndim(error_acc) == 0 and np.ndim(correct_acc) == 0:
        return 0.0 if error_acc + correct_acc == 0 else 2 * error_acc * correct_acc / (error_acc + correct_acc)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(error_acc + correct_acc > 0, 2 * error_acc * correct_acc / (error_acc + correct_acc), 0.0)


def _subset_stats(labels: np.ndarray, preds: list) -> dict:
    err = labels != -1
    match = np.array([p is not None and int(p) == int(label) for p, label in zip(preds, labels)], dtype=bool)
    e = float(match[err].mean()) if err.any() else float("nan")
    c = float(match[~err].mean()) if (~err).any() else float("nan")
    f1 = f1_harmonic(0.0 if math.isnan(e) else e, 0.0 if math.isnan(c) else c)
    return {"n": int(len(labels)), "n_error": int(err.sum()), "n_correct": int((~err).sum()),
            "error_acc": e, "correct_acc": c, "f1": f1,
            "n_unparsed": int(sum(p is None for p in preds)), "match": match}


def f1_undefined_reason(stats: dict) -> str | None:
    """Why a subset's F1 (stats: a processbench_metrics subset, with n_error / n_correct) is undefined, or None:
    F1 is the harmonic mean of the error and the correct accuracy, and a subset without erroneous cases or
    without clean cases has only one of them. processbench_metrics reports 0.0 there (the workflow's tables
    keep it, and their subsets always hold both kinds); mark_undefined_f1 says so instead."""
    if not stats["n_correct"] and not stats["n_error"]:
        return "no cases"
    if not stats["n_correct"]:
        return "no clean cases"
    if not stats["n_error"]:
        return "no erroneous cases"
    return None


def mark_undefined_f1(metrics: dict) -> list[str]:
    """processbench_metrics' output with every undefined F1 (f1_undefined_reason) made NaN in place: the
    subset's f1 and its interval, with `f1_undefined` = the reason, and the average F1 and its interval
    (an average over a subset without an F1 has none). Returns one warning line per such subset."""
    lines = []
    for name, st in metrics["subsets"].items():
        why = f1_undefined_reason(st)
        if why is None:
            continue
        st["f1"], st["f1_undefined"] = float("nan"), why
        if "ci" in st:
            st["ci"]["f1"] = [float("nan"), float("nan")]
        lines.append(f"subset {name}: F1 undefined ({why}: {st['n_error']} erroneous, {st['n_correct']} clean "
                     "case(s)); the average F1 is undefined too")
    if lines:
        metrics["average_f1"] = float("nan")
        if "average_f1_ci" in metrics:
            metrics["average_f1_ci"] = [float("nan"), float("nan")]
    return lines


class DegenerateTuningWarning(UserWarning):
    """Threshold tuning on cases of which some subset has no clean or no erroneous case: that subset's F1 is
    0 at every threshold (it does not inform the choice); when every subset is so, the threshold is arbitrary."""


def _pred_by_id(cases: pd.DataFrame, predictions: dict) -> dict:
    """Predictions keyed by str(id), checked against the cases (id, subset, label): errors name unknown
    and missing ids."""
    for c in ("id", "subset", "label"):
        if c not in cases.columns:
            raise ValueError(f"ProcessBench cases lack column '{c}'")
    ids = [str(i) for i in cases["id"]]
    known = set(ids)
    unknown = sorted(str(k) for k in predictions if str(k) not in known)
    if unknown:
        raise KeyError(f"prediction(s) for unknown ProcessBench id(s): {', '.join(unknown[:10])}"
                       + (f" … and {len(unknown) - 10} more" if len(unknown) > 10 else ""))
    pred_by_id = {str(k): v for k, v in predictions.items()}
    missing = [i for i in ids if i not in pred_by_id]
    if missing:
        raise KeyError(f"no prediction for ProcessBench id(s): {', '.join(missing[:10])}"
                       + (f" … and {len(missing) - 10} more" if len(missing) > 10 else ""))
    return pred_by_id


def processbench_metrics(cases: pd.DataFrame, predictions: dict, bootstrap: int = 0, seed: int = 0,
                         confidence: float = 0.95) -> dict:
    """Official ProcessBench metric. `cases` needs id, subset, label; `predictions` maps every case id
    to an int (−1 = no error) or None (unparsable: counted wrong, reported as n_unparsed).
    Errors name unknown and missing ids."""
    pred_by_id = _pred_by_id(cases, predictions)
    rng = np.random.default_rng(seed)
    subsets: dict[str, dict] = {}
    f1_reps = []
    for subset, g in cases.groupby("subset", sort=False):
        labels = g["label"].to_numpy(dtype=int)
        preds = [pred_by_id[str(i)] for i in g["id"]]
        st = _subset_stats(labels, preds)
        match = st.pop("match")
        if bootstrap:
            err = labels != -1
            m_err, m_cor = match[err].astype(float), match[~err].astype(float)
            # stratified resampling (error / correct cases separately) keeps both accuracies defined
            e_r = bootstrap_means(m_err, bootstrap, rng)
            c_r = bootstrap_means(m_cor, bootstrap, rng)
            f_r = f1_harmonic(e_r, c_r)
            st["ci"] = {"error_acc": interval(e_r, confidence), "correct_acc": interval(c_r, confidence),
                        "f1": interval(f_r, confidence)}
            f1_reps.append(f_r)
        subsets[str(subset)] = st
    out = {"subsets": subsets,
           "average_f1": float(np.mean([s["f1"] for s in subsets.values()])) if subsets else float("nan"),
           "n_unparsed": int(sum(s["n_unparsed"] for s in subsets.values()))}
    if bootstrap and f1_reps:
        out["average_f1_ci"] = interval(np.mean(np.stack(f1_reps), axis=0), confidence)
    return out


def _prefix_minima(step_scores) -> np.ndarray:
    """Running minima of a response's step scores; None / NaN → −inf (first_error counts such a step
    as below every threshold)."""
    a = np.array([-math.inf if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)
                  for v in (step_scores or [])], dtype=float)
    return np.minimum.accumulate(a) if len(a) else a


def tune_threshold(cases: pd.DataFrame, scores: dict, subset: str | None = None, what: str = "") -> float:
    """Threshold maximising ProcessBench F1 on `cases` (id, subset, label) with step scores `scores`
    (id → list): subset None = the average F1 over all subsets of `cases` (the ProcessBench average);
    a name = that subset's F1 only. Candidates: every distinct step score of the cases considered
    (+ one above the maximum, i.e. "every step wrong"); ties → the smallest threshold. Reads the labels
    of `cases` only: pass a dev split (or one cross-fitting fold), never the cases being scored.

    A case's prediction (first i with score_i < T) matches its label on one interval of T: label −1
    on T ≤ min(scores); label l on min(scores[:l+1]) < T ≤ min(scores[:l]); so every candidate is
    scored at once from interval counts.

    A subset of the cases considered without clean or without erroneous cases has F1 0 at every candidate:
    a DegenerateTuningWarning names it (`what` names the cases: "the dev split", "fold 0"), and says the
    threshold is arbitrary when no subset has both kinds. The threshold chosen is unchanged."""
    if subset is not None:
        g = cases[cases["subset"].astype(str) == str(subset)]
        if g.empty:
            raise ValueError(f"threshold tuning subset '{subset}' has no cases "
                             f"(subsets: {', '.join(sorted(map(str, cases['subset'].unique())))})")
    else:
        g = cases
        if g.empty:
            raise ValueError("threshold tuning needs at least one case")
    ids = [str(i) for i in g["id"]]
    lacking = [i for i in ids if i not in scores]
    if lacking:
        raise ValueError(f"threshold tuning needs step_scores for every case; none for "
                         f"{', '.join(lacking[:10])}" + (" …" if len(lacking) > 10 else ""))
    labels = g["label"].to_numpy(dtype=int)
    subs = g["subset"].astype(str).to_numpy()
    pms = [_prefix_minima(scores[i]) for i in ids]
    flat = sorted({float(v) for i in ids for v in (scores[i] or [])
                   if v is not None and not (isinstance(v, float) and math.isnan(v)) and math.isfinite(float(v))})
    if not flat:
        return 0.5
    cand = np.asarray(flat + [float(np.nextafter(flat[-1], math.inf))])
    names = sorted(set(subs))
    pos = {n: k for k, n in enumerate(names)}
    hits = np.zeros((len(names), 2, len(cand) + 1))  # [subset, error?, candidate] difference arrays
    n_err = np.zeros(len(names))
    n_cor = np.zeros(len(names))
    for pm, lab, sub in zip(pms, labels, subs):
        k = pos[sub]
        if lab == -1:
            n_cor[k] += 1
            lo, hi = -math.inf, (pm[-1] if len(pm) else math.inf)
        else:
            n_err[k] += 1
            if lab >= len(pm):  # the error step was never scored: no threshold finds it
                continue
            lo, hi = pm[lab], (pm[lab - 1] if lab > 0 else math.inf)
        start, end = np.searchsorted(cand, lo, "right"), np.searchsorted(cand, hi, "right")
        if end > start:
            e = int(lab != -1)
            hits[k, e, start] += 1
            hits[k, e, end] -= 1
    counts = np.cumsum(hits, axis=2)[:, :, :-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        e_acc = np.where(n_err[:, None] > 0, counts[:, 1] / np.maximum(n_err, 1)[:, None], 0.0)
        c_acc = np.where(n_cor[:, None] > 0, counts[:, 0] / np.maximum(n_cor, 1)[:, None], 0.0)
    f1 = f1_harmonic(e_acc, c_acc)
    avg = np.round(f1.mean(axis=0), 12)  # exact ties → the first (smallest) candidate
    best = float(cand[int(np.argmax(avg))])
    degenerate = [(n, "no clean cases" if not n_cor[k] else "no erroneous cases")
                  for k, n in enumerate(names) if not (n_cor[k] and n_err[k])]
    if degenerate:
        where = f"threshold tuning{' on ' + what if what else ''}: " + "; ".join(
            f"subset {n} has {why} (its F1 is 0 at every threshold)" for n, why in degenerate)
        if len(degenerate) == len(names):
            warnings.warn(f"{where}; the tuned threshold {best:.6g} is arbitrary (the smallest candidate); give "
                          "cases of both kinds or a fixed threshold", DegenerateTuningWarning, stacklevel=2)
        else:
            warnings.warn(f"{where}; the threshold is chosen by the other subsets", DegenerateTuningWarning,
                          stacklevel=2)
    return best


def crossfit_folds(ids: Sequence, subsets: Sequence, labels: Sequence, n_folds: int = 2) -> np.ndarray:
    """Cross-fitting fold (0 … n_folds−1) of every case: within each stratum subset × (error / correct),
    the cases ordered by a SHA-256 hash of their id are dealt round-robin. Depends on the ids, subsets
    and labels only, not on row order."""
    ids = [str(i) for i in ids]
    strata: dict[tuple, list[int]] = {}
    for r, (sub, lab) in enumerate(zip(subsets, labels)):
        strata.setdefault((str(sub), int(lab) != -1), []).append(r)
    folds = np.zeros(len(ids), dtype=int)
    for rows in strata.values():
        order = sorted(rows, key=lambda r: (hashlib.sha256(ids[r].encode()).hexdigest(), ids[r]))
        for rank, r in enumerate(order):
            folds[r] = rank % n_folds
    return folds


# how `threshold: tune` picks the threshold (config processbench_eval.tune_on): auto = the dev split where
# there is one, else crossfit; gsm8k = ProcessBench §4.1's rule (the best F1 on the evaluated GSM8K subset,
# in-sample, applied to every subset), the paper's setting for its scalar PRMs
TUNE_PROTOCOLS = ("auto", "dev", "crossfit", "gsm8k")


def _threshold_cell(t):
    """The threshold column of the long table: a number, None, or 'a|b' for cross-fitted fold thresholds."""
    if isinstance(t, (list, tuple)):
        return "|".join(f"{float(x):.6g}" for x in t)
    return t


PROCESSBENCH_LONG_COLUMNS = ["prm", "subset", "n", "error_acc", "correct_acc", "f1", "f1_ci_low", "f1_ci_high",
                             "n_unparsed", "threshold", "tuned_on", "delta_f1_structure", "delta_ci_low",
                             "delta_ci_high", "setting"]


def processbench_long_rows(metrics: dict, prm: str) -> list[dict]:
    """Rows of results/tables/processbench.csv, columns PROCESSBENCH_LONG_COLUMNS (subset 'average':
    f1 = average_f1, accuracies = the unweighted means of the subset accuracies, n = all cases).
    threshold: the number used, 'a|b' for the two cross-fitted fold thresholds, None for critics.
    tuned_on: how a tuned threshold was chosen (metrics["tuned_on"]: dev, crossfit, gsm8k; None = not tuned).
    delta_f1_structure / delta_ci_low / delta_ci_high: metrics["vs_structure"] (paired bootstrap of
    this average F1 minus the structure-only baseline's), on the 'average' row only; NaN elsewhere.
    setting: what a critic row ran with (metrics["setting"]); None for PRMs and baselines."""
    nan = float("nan")
    setting = metrics.get("setting")
    thr = _threshold_cell(metrics.get("threshold"))
    tuned_on = metrics.get("tuned_on")
    rows = []
    for name, s in metrics["subsets"].items():
        ci = s.get("ci", {}).get("f1", [nan, nan])
        rows.append({"prm": prm, "subset": name, "n": s["n"], "error_acc": s["error_acc"],
                     "correct_acc": s["correct_acc"], "f1": s["f1"], "f1_ci_low": ci[0], "f1_ci_high": ci[1],
                     "n_unparsed": s.get("n_unparsed", 0), "threshold": thr, "tuned_on": tuned_on,
                     "delta_f1_structure": nan, "delta_ci_low": nan, "delta_ci_high": nan, "setting": setting})
    subs = list(metrics["subsets"].values())
    ci = metrics.get("average_f1_ci", [nan, nan])
    vs = metrics.get("vs_structure") or {}
    dci = vs.get("ci") or [nan, nan]
    rows.append({"prm": prm, "subset": "average", "n": int(sum(s["n"] for s in subs)),
                 "error_acc": float(np.mean([s["error_acc"] for s in subs])) if subs else nan,
                 "correct_acc": float(np.mean([s["correct_acc"] for s in subs])) if subs else nan,
                 "f1": metrics["average_f1"], "f1_ci_low": ci[0], "f1_ci_high": ci[1],
                 "n_unparsed": metrics.get("n_unparsed", 0), "threshold": thr, "tuned_on": tuned_on,
                 "delta_f1_structure": float(vs["diff"]) if "diff" in vs and vs["diff"] is not None else nan,
                 "delta_ci_low": float(dci[0]) if dci[0] is not None else nan,
                 "delta_ci_high": float(dci[1]) if dci[1] is not None else nan, "setting": setting})
    return rows


def _need_scores(cases: pd.DataFrame, scores: dict, what: str) -> None:
    lacking = [str(i) for i in cases["id"] if str(i) not in scores]
    if lacking:
        raise ValueError(f"threshold tuning needs step_scores for every case of {what}; none for "
                         f"{', '.join(lacking[:10])}" + (" …" if len(lacking) > 10 else ""))


def evaluate_processbench(cases: pd.DataFrame, preds: dict, scores: dict, threshold: float | str = 0.5,
                          dev_cases: pd.DataFrame | None = None, dev_scores: dict | None = None,
                          bootstrap: int = 0, seed: int = 0, confidence: float = 0.95,
                          truncated_ok: bool = False, tune_on: str = "auto") -> tuple[dict, pd.DataFrame]:
    """Metrics JSON + per-case predictions frame (id, subset, label, final_answer_correct, prediction).

    threshold: a number (`preds` were made with it from `scores`; "fixed"), or predictions given
    (`scores` empty: a critic), or "tune", chosen by `tune_on` (TUNE_PROTOCOLS; "auto" = "dev" with a dev
    split, else "crossfit"):
    - "dev": the threshold maximising the dev split's average F1 (tune_threshold, subset None; `dev_cases`
      + `dev_scores`, no id shared with `cases`), applied to every evaluated case ("threshold" = that value);
    - "crossfit": the evaluated cases are split into 2 folds (crossfit_folds: by a hash of the id,
      stratified by subset × error/correct); the threshold maximising fold k's average F1 predicts the
      cases of the other fold ("threshold" = [tuned on fold 0, tuned on fold 1]); no case is scored with a
      threshold tuned on itself;
    - "gsm8k": ProcessBench §4.1: the threshold maximising the F1 of the evaluated GSM8K subset (in-sample,
      as published), applied to every subset (the dev split is not read).
    "tuned_on" records the protocol used. Tuning needs step scores for every evaluated (and dev) case. The
    dev split is ignored with a numeric threshold. Keys added to processbench_metrics': threshold,
    threshold_policy, tuned_on (+ crossfit_fold_sizes when cross-fitted).

    Inputs are checked first (check_processbench_inputs: InputError naming every bad id): predictions
    in [−1, n_steps − 1], step-score lists of finite numbers with one score per step (fewer allowed
    with `truncated_ok`, for PRMs truncated at their max length); a numeric threshold must be finite."""
    extra: dict = {}
    if (dev_cases is None) != (dev_scores is None) and threshold == "tune":
        raise ValueError("a dev split needs both dev_cases and dev_scores")
    if threshold != "tune":
        threshold = check_threshold(threshold)
    elif tune_on not in TUNE_PROTOCOLS:
        raise ValueError(f"threshold tuning protocol {tune_on!r} is not one of {', '.join(TUNE_PROTOCOLS)}")
    elif tune_on == "auto":
        tune_on = "dev" if dev_cases is not None else "crossfit"
    elif tune_on == "dev" and dev_cases is None:
        raise ValueError("threshold tuning on the dev split (tune_on 'dev') needs a dev split")
    if as_int(bootstrap) is None or bootstrap < 0 or isinstance(bootstrap, float):
        raise ValueError(f"bootstrap must be an integer ≥ 0 (0 = no intervals), got {bootstrap!r}")
    check_processbench_inputs(cases, preds, scores, truncated_ok)
    if threshold == "tune":
        _need_scores(cases, scores, "the evaluated cases")
        ids = [str(i) for i in cases["id"]]
        if tune_on == "dev":
            shared = sorted(set(ids) & {str(i) for i in dev_cases["id"]})
            if shared:
                raise ValueError(f"the dev split shares {len(shared)} id(s) with the evaluated cases "
                                 f"(tuning on them would score cases with a threshold fitted on themselves): "
                                 f"{', '.join(shared[:10])}" + (" …" if len(shared) > 10 else ""))
            check_processbench_inputs(dev_cases, {}, dev_scores, truncated_ok, what="dev split: ")
            _need_scores(dev_cases, dev_scores, "the dev split")
            t = tune_threshold(dev_cases, dev_scores, what="the dev split")
            preds = {i: first_error(scores[i], t) for i in ids}
            threshold_used: float | list | None = t
            policy = f"tuned on the dev split ({len(dev_cases)} cases)"
        elif tune_on == "gsm8k":
            t = tune_threshold(cases, scores, subset="gsm8k", what="the GSM8K subset")
            preds = {i: first_error(scores[i], t) for i in ids}
            threshold_used = t
            n_gsm8k = int((cases["subset"].astype(str) == "gsm8k").sum())
            policy = f"best F1 on the GSM8K subset ({n_gsm8k} cases, in-sample; ProcessBench §4.1)"
        else:
            folds = crossfit_folds(cases["id"], cases["subset"], cases["label"])
            sizes = [int((folds == k).sum()) for k in (0, 1)]
            if min(sizes) == 0:
                raise ValueError(f"cross-fitting the threshold needs cases in both folds (fold sizes {sizes}); "
                                 "give a dev split or a fixed threshold")
            ts = [tune_threshold(cases[folds == k], scores, what=f"cross-fitting fold {k}") for k in (0, 1)]
            preds = {i: first_error(scores[i], ts[1 - int(f)]) for i, f in zip(ids, folds)}
            threshold_used = ts
            policy = "cross-fitted over 2 folds"
            extra["crossfit_fold_sizes"] = sizes
        tuned_on = tune_on
    else:
        threshold_used = float(threshold) if scores else None
        policy, tuned_on = ("fixed" if scores else "predictions given"), None
    m = processbench_metrics(cases, preds, bootstrap=bootstrap, seed=seed, confidence=confidence)
    m["threshold"] = threshold_used
    m["threshold_policy"] = policy
    m["tuned_on"] = tuned_on
    m.update(extra)
    per_case = cases[["id", "subset", "label"]].copy()
    per_case["final_answer_correct"] = (cases["final_answer_correct"].astype("boolean")
                                        if "final_answer_correct" in cases.columns else pd.NA)
    per_case["prediction"] = pd.array([preds[str(i)] for i in cases["id"]], dtype="Int64")
    return m, per_case.reset_index(drop=True)





def paired_f1_difference(cases: pd.DataFrame, preds_a: dict, preds_b: dict, n_boot: int = 1000, seed: int = 0,
                         confidence: float = 0.95) -> dict:
    """Average F1 of predictor a minus that of b on the same cases, with a paired bootstrap interval:
    every replicate resamples the cases once (stratified by subset × error/correct, as
    processbench_metrics) and scores both predictors on the same draw; F1 is averaged over subsets in
    each replicate. Returns {"diff", "ci" ([nan, nan] when n_boot = 0), "f1_a", "f1_b", "n_boot",
    "confidence"}."""
    pa, pb = _pred_by_id(cases, preds_a), _pred_by_id(cases, preds_b)
    ma = processbench_metrics(cases, pa)
    mb = processbench_metrics(cases, pb)
    rng = np.random.default_rng(seed)
    diff_reps = []
    for _, g in cases.groupby("subset", sort=False):
        labels = g["label"].to_numpy(dtype=int)
        gid = [str(i) for i in g["id"]]
        hit_a = np.array([pa[i] is not None and int(pa[i]) == int(label) for i, label in zip(gid, labels)], dtype=float)
        hit_b = np.array([pb[i] is not None and int(pb[i]) == int(label) for i, label in zip(gid, labels)], dtype=float)
        if not n_boot:
            continue
        err = labels != -1
        reps = {}
        for stratum, mask in (("e", err), ("c", ~err)):
            n = int(mask.sum())
            if n == 0:
                reps[stratum] = (np.zeros(n_boot), np.zeros(n_boot))
                continue
            idx = rng.integers(0, n, size=(n_boot, n))
            reps[stratum] = (hit_a[mask][idx].mean(axis=1), hit_b[mask][idx].mean(axis=1))
        diff_reps.append(f1_harmonic(reps["e"][0], reps["c"][0]) - f1_harmonic(reps["e"][1], reps["c"][1]))
    ci = (interval(np.mean(np.stack(diff_reps), axis=0), confidence) if n_boot and diff_reps
          else [float("nan"), float("nan")])
    return {"diff": float(ma["average_f1"] - mb["average_f1"]), "ci": ci, "f1_a": ma["average_f1"],
            "f1_b": mb["average_f1"], "n_boot": int(n_boot), "confidence": confidence}
