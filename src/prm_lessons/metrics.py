"""Evaluation metrics: Best-of-N (prm@N per aggregation, maj@N, pass@N, orm@N) and the official
ProcessBench metric, with bootstrap confidence intervals (CLI: `prm-lessons eval {bon,processbench}`,
in prm_lessons.cli).

Definitions (docs/architecture.md "Evaluation outputs"; paper_reference §1.6–1.7, §3.4–3.5):

Best-of-N, per problem over its first N responses (by sample_idx):
- response score = aggregation of its step scores: product (the paper's default), min, last, mean;
  a response without step scores gets −inf (never picked unless all are empty);
- prm@N (`prm_<agg>`) = correctness of the highest-scoring response; ties → lowest sample_idx;
- orm@N (`orm`) = the same with one outcome score per response (an ORM's single "step" score);
- maj@N (`maj`) = correctness of the first response carrying the most frequent answer; ties between
  equally frequent answers → the answer that appears first (as Qwen2.5-Math `rm_maj_eval.py`, whose
  Counter.most_common keeps first-seen order). Answers are grouped by `maj_grouping`:
  `exact` (the string as is, the harness's default), `normalized` (default: whitespace removed,
  surrounding $ and a trailing period stripped, lower-cased) or `math_verify` (a response joins the
  first earlier group whose representative math-verify judges equivalent, as the harness's
  `use_symbol=True`). Responses without an answer (pred null/empty) do not vote; a problem whose
  responses all lack an answer counts as wrong;
- pass@N (`pass`) = any of the N responses correct.
Benchmark accuracy = mean over problems; `average` = unweighted mean over benchmarks. Every number
has a percentile bootstrap interval from resampling problems (within each benchmark; the average's
interval resamples every benchmark and averages, replicate by replicate), fixed seed.

ProcessBench (official `run_eval.py`): per subset, error_acc = mean over label != −1 of
[prediction == label]; correct_acc = mean over label == −1 of [prediction == −1];
f1 = 2·e·c/(e+c), 0 when both are 0; average_f1 = unweighted mean of the subset F1s. A PRM's
prediction = index of the first step whose score is < threshold, −1 if none. A prediction of None
(an unparsable critic answer) never equals the label: it is counted wrong and reported.
"""
from __future__ import annotations

import logging
import math
import re
from collections import Counter
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

log = logging.getLogger(__name__)

AGGREGATIONS = ("product", "min", "last", "mean")
MAJ_GROUPINGS = ("exact", "normalized", "math_verify")


# ----------------------------------------------------------------------------------------------
# Best-of-N
# ----------------------------------------------------------------------------------------------

def aggregate(step_scores: Sequence[float] | None, how: str = "product") -> float:
    """One response score from its step scores. Empty or missing → −inf."""
    if how not in AGGREGATIONS:
        raise ValueError(f"unknown aggregation '{how}' (allowed: {', '.join(AGGREGATIONS)})")
    if step_scores is None or len(step_scores) == 0:
        return -math.inf
    s = np.asarray(step_scores, dtype=float)
    if np.isnan(s).any():
        return -math.inf
    if how == "product":
        return float(np.prod(s))
    if how == "min":
        return float(s.min())
    if how == "last":
        return float(s[-1])
    return float(s.mean())


def best_index(scores: Sequence[float]) -> int:
    """Index of the highest score; ties → the lowest index (callers order by sample_idx).
    NaN counts as −inf."""
    best, best_i = -math.inf, 0
    for i, v in enumerate(scores):
        v = -math.inf if v is None or (isinstance(v, float) and math.isnan(v)) else v
        if v > best:
            best, best_i = v, i
    return best_i


_WS = re.compile(r"\s+")


def _no_answer(ans) -> bool:
    # pandas turns a missing pred (None) into NaN in object columns; both mean "no answer"
    return ans is None or (isinstance(ans, float) and math.isnan(ans))


def normalize_answer(ans) -> str | None:
    """Answer key for `normalized` majority grouping (None for no answer)."""
    if _no_answer(ans):
        return None
    s = _WS.sub("", str(ans))
    s = s.strip("$").rstrip(".").lower()
    return s or None


def _exact_key(ans) -> str | None:
    if _no_answer(ans):
        return None
    s = str(ans)
    return s if s.strip() else None


def majority_index(preds: Sequence, grouping: str = "normalized") -> int | None:
    """Index of the first response carrying the most frequent answer (ties → the answer seen first);
    None when no response has an answer."""
    if grouping not in MAJ_GROUPINGS:
        raise ValueError(f"unknown maj_grouping '{grouping}' (allowed: {', '.join(MAJ_GROUPINGS)})")
    if grouping == "math_verify":
        keys = _math_verify_groups(preds)
    else:
        keyf = normalize_answer if grouping == "normalized" else _exact_key
        keys = [keyf(p) for p in preds]
    votes = [k for k in keys if k is not None]
    if not votes:
        return None
    winner = Counter(votes).most_common(1)[0][0]  # Counter keeps first-seen order among equal counts
    return keys.index(winner)


def baselines(samples: pd.DataFrame, n: int | None = None, grouping: str = "normalized") -> dict:
    """pass@N (any of the first N correct) and maj@N (majority_index: most frequent extracted
    answer among the first N, ties to the answer seen first; responses without an answer do not vote)."""
    per_problem = []
    for _, grp in samples.sort_values("sample_idx").groupby("problem_id", sort=True):
        g = grp.head(n) if n else grp
        winner = majority_index(list(g["pred"]), grouping)
        per_problem.append({"pass": bool(g["correct"].any()),
                            "maj": winner is not None and bool(g["correct"].iloc[winner]),
                            "n": len(g), "mean_acc": float(g["correct"].mean())})
    pp = pd.DataFrame(per_problem, columns=["pass", "maj", "n", "mean_acc"])
    empty = len(pp) == 0
    return {"n_problems": len(pp), "N": 0 if empty else int(pp["n"].max()),
            **{k: float("nan") if empty else float(pp[k].mean()) for k in ("pass", "maj", "mean_acc")}}



def _math_verify_groups(preds: Sequence) -> list:
    """Group ids by math-verify equivalence to each group's first member (harness use_symbol=True)."""
    from math_verify import parse, verify  # lazy: heavy import, optional grouping

    reps: list[tuple[int, object]] = []
    keys: list = []
    for p in preds:
        if _exact_key(p) is None:
            keys.append(None)
            continue
        text = str(p)
        parsed = parse(text if "$" in text or "\\boxed" in text else f"${text}$")
        gid = None
        for g, rep in reps:
            try:
                if verify(rep, parsed):
                    gid = g
                    break
            except Exception:  # math-verify failures never crash a vote: the answer starts a new group
                continue
        if gid is None:
            gid = len(reps)
            reps.append((gid, parsed))
        keys.append(gid)
    return keys


BON_COLUMNS = ["benchmark", "problem_id", "sample_idx", "pred", "correct", "step_scores"]


def select_first_n(df: pd.DataFrame, n: int | None) -> tuple[pd.DataFrame, dict[str, int]]:
    """Keep the first n responses (by sample_idx) of every problem; check every problem of a benchmark
    has the same N. Returns the frame (sorted) and N per benchmark. Errors name the problems."""
    missing = [c for c in ("benchmark", "problem_id", "sample_idx") if c not in df.columns]
    if missing:
        raise ValueError(f"Best-of-N rows lack column(s) {missing}")
    df = df.sort_values(["benchmark", "problem_id", "sample_idx"], kind="stable").reset_index(drop=True)
    dup = df.duplicated(["benchmark", "problem_id", "sample_idx"], keep=False)
    if dup.any():
        r = df.loc[dup].iloc[0]
        raise ValueError(f"duplicate response: benchmark={r['benchmark']} problem_id={r['problem_id']} "
                         f"sample_idx={r['sample_idx']}")
    counts = df.groupby(["benchmark", "problem_id"], sort=False).size()
    n_by_bench: dict[str, int] = {}
    if n is not None:
        short = counts[counts < n]
        if len(short):
            names = [f"{b}/{p} ({c})" for (b, p), c in short.items()]
            raise ValueError(f"problems with fewer than N={n} responses: {', '.join(names[:10])}"
                             + (f" … and {len(names) - 10} more" if len(names) > 10 else ""))
        df = df.groupby(["benchmark", "problem_id"], sort=False, group_keys=False).head(n)
        n_by_bench = {b: n for b in df["benchmark"].unique()}
    else:
        for bench, c in counts.groupby(level=0, sort=False):
            mode = int(c.mode().iloc[0])
            odd = c[c != mode]
            if len(odd):
                names = [f"{p} ({k})" for (_, p), k in odd.items()]
                raise ValueError(f"benchmark '{bench}': problems with a different number of responses "
                                 f"than the usual N={mode}: {', '.join(names[:10])}"
                                 + (f" … and {len(names) - 10} more" if len(names) > 10 else ""))
            n_by_bench[str(bench)] = mode
    return df.reset_index(drop=True), n_by_bench


def bon_problem_table(df: pd.DataFrame, aggregations: Sequence[str] = ("product", "min", "last"),
                      n: int | None = None, maj_grouping: str = "normalized",
                      orm_column: str | None = None) -> tuple[pd.DataFrame, dict[str, int]]:
    """One row per (benchmark, problem): 0/1 correctness of pass, maj, prm_<agg> (and orm), plus the
    chosen sample_idx of each selector. Rows need BON_COLUMNS (step_scores may be null for a
    selector-free evaluation)."""
    for a in aggregations:
        if a not in AGGREGATIONS:
            raise ValueError(f"unknown aggregation '{a}' (allowed: {', '.join(AGGREGATIONS)})")
    need = [c for c in BON_COLUMNS if c not in df.columns and not (c == "step_scores" and not aggregations)]
    if need:
        raise ValueError(f"Best-of-N rows lack column(s) {need}")
    df, n_by_bench = select_first_n(df, n)
    out = []
    for (bench, pid), g in df.groupby(["benchmark", "problem_id"], sort=False):
        correct = [bool(c) if c is not None and not (isinstance(c, float) and math.isnan(c)) else False
                   for c in g["correct"].tolist()]
        sidx = g["sample_idx"].tolist()
        row = {"benchmark": bench, "problem_id": pid, "n": len(correct), "pass": float(any(correct))}
        mi = majority_index(g["pred"].tolist(), maj_grouping)
        row["maj"] = float(correct[mi]) if mi is not None else 0.0
        row["maj_sample_idx"] = sidx[mi] if mi is not None else None
        if aggregations:
            scores_list = g["step_scores"].tolist()
            for a in aggregations:
                bi = best_index([aggregate(s, a) for s in scores_list])
                row[f"prm_{a}"] = float(correct[bi])
                row[f"prm_{a}_sample_idx"] = sidx[bi]
        if orm_column:
            vals = [(-math.inf if v is None else float(v[0] if isinstance(v, (list, tuple, np.ndarray)) else v))
                    for v in g[orm_column].tolist()]
            bi = best_index(vals)
            row["orm"] = float(correct[bi])
            row["orm_sample_idx"] = sidx[bi]
        out.append(row)
    return pd.DataFrame(out), n_by_bench


def bootstrap_means(values: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Means of n_boot resamples (with replacement) of `values` (1-D) → shape (n_boot,)."""
    values = np.asarray(values, dtype=float)
    if len(values) == 0:
        return np.full(n_boot, np.nan)
    idx = rng.integers(0, len(values), size=(n_boot, len(values)))
    return values[idx].mean(axis=1)


def _interval(reps: np.ndarray, confidence: float) -> list[float]:
    lo, hi = np.nanpercentile(reps, [50 * (1 - confidence), 100 - 50 * (1 - confidence)])
    return [float(lo), float(hi)]


def bon_metrics(df: pd.DataFrame, aggregations: Sequence[str] = ("product", "min", "last"),
                n: int | None = None, maj_grouping: str = "normalized", orm_column: str | None = None,
                bootstrap: int = 1000, seed: int = 0, confidence: float = 0.95) -> dict:
    """Best-of-N metrics JSON: {"benchmarks": {name: {"n_problems", "n", "pass", "maj", "prm_<agg>",
    …, "ci": {metric: [low, high]}}}, "average": {…}, "settings": {…}} — fractions in [0, 1]."""
    probs, n_by_bench = bon_problem_table(df, aggregations, n, maj_grouping, orm_column)
    metrics = ["pass", "maj"] + [f"prm_{a}" for a in aggregations] + (["orm"] if orm_column else [])
    rng = np.random.default_rng(seed)
    benches: dict[str, dict] = {}
    reps_by_metric: dict[str, list[np.ndarray]] = {m: [] for m in metrics}
    for bench, g in probs.groupby("benchmark", sort=True):
        entry: dict = {"n_problems": int(len(g)), "n": int(n_by_bench[str(bench)])}
        ci = {}
        # one set of resampled problem indices per benchmark, shared by all metrics (paired CIs)
        idx = rng.integers(0, len(g), size=(bootstrap, len(g))) if bootstrap else None
        for m in metrics:
            vals = g[m].to_numpy(dtype=float)
            entry[m] = float(vals.mean())
            if bootstrap:
                reps = vals[idx].mean(axis=1)
                reps_by_metric[m].append(reps)
                ci[m] = _interval(reps, confidence)
        entry["ci"] = ci
        benches[str(bench)] = entry
    avg: dict = {"n_benchmarks": len(benches)}
    ci = {}
    for m in metrics:
        avg[m] = float(np.mean([b[m] for b in benches.values()])) if benches else float("nan")
        if bootstrap and benches:
            ci[m] = _interval(np.mean(np.stack(reps_by_metric[m]), axis=0), confidence)
    avg["ci"] = ci
    return {"benchmarks": benches, "average": avg,
            "settings": {"n": n, "aggregations": list(aggregations), "maj_grouping": maj_grouping,
                         "orm": bool(orm_column), "bootstrap": bootstrap, "seed": seed,
                         "confidence": confidence}}


def bon_long_rows(metrics: dict, prm: str) -> list[dict]:
    """Rows of results/tables/bon.csv: prm, benchmark, metric, N, accuracy, ci_low, ci_high
    (benchmark 'average' = unweighted mean over benchmarks)."""
    rows = []
    items = list(metrics["benchmarks"].items()) + [("average", metrics["average"])]
    for bench, entry in items:
        for key, val in entry.items():
            if key in ("n_problems", "n", "n_benchmarks", "ci"):
                continue
            lo, hi = entry.get("ci", {}).get(key, [float("nan"), float("nan")])
            n_val = entry.get("n", metrics.get("settings", {}).get("n"))
            rows.append({"prm": prm, "benchmark": bench, "metric": key, "N": n_val, "accuracy": val,
                         "ci_low": lo, "ci_high": hi})
    return rows


# ----------------------------------------------------------------------------------------------
# ProcessBench
# ----------------------------------------------------------------------------------------------

def first_error(step_scores: Sequence[float] | None, threshold: float = 0.5) -> int:
    """PRM decision rule: index of the first step with score < threshold, −1 if none."""
    for i, s in enumerate(step_scores or []):
        if s is None or (isinstance(s, float) and math.isnan(s)) or s < threshold:
            return i
    return -1


def f1_harmonic(error_acc: float, correct_acc: float) -> float:
    return 0.0 if error_acc + correct_acc == 0 else 2 * error_acc * correct_acc / (error_acc + correct_acc)


def _subset_stats(labels: np.ndarray, preds: list) -> dict:
    err = labels != -1
    match = np.array([p is not None and int(p) == int(l) for p, l in zip(preds, labels)], dtype=bool)
    e = float(match[err].mean()) if err.any() else float("nan")
    c = float(match[~err].mean()) if (~err).any() else float("nan")
    f1 = f1_harmonic(0.0 if math.isnan(e) else e, 0.0 if math.isnan(c) else c)
    return {"n": int(len(labels)), "n_error": int(err.sum()), "n_correct": int((~err).sum()),
            "error_acc": e, "correct_acc": c, "f1": f1,
            "n_unparsed": int(sum(p is None for p in preds)), "match": match}


def processbench_metrics(cases: pd.DataFrame, predictions: dict, bootstrap: int = 0, seed: int = 0,
                         confidence: float = 0.95) -> dict:
    """Official ProcessBench metric. `cases` needs id, subset, label; `predictions` maps every case id
    to an int (−1 = no error) or None (unparsable: counted wrong, reported as n_unparsed).
    Errors name unknown and missing ids."""
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
            with np.errstate(invalid="ignore", divide="ignore"):
                f_r = np.where(e_r + c_r > 0, 2 * e_r * c_r / (e_r + c_r), 0.0)
            st["ci"] = {"error_acc": _interval(e_r, confidence), "correct_acc": _interval(c_r, confidence),
                        "f1": _interval(f_r, confidence)}
            f1_reps.append(f_r)
        subsets[str(subset)] = st
    out = {"subsets": subsets,
           "average_f1": float(np.mean([s["f1"] for s in subsets.values()])) if subsets else float("nan"),
           "n_unparsed": int(sum(s["n_unparsed"] for s in subsets.values()))}
    if bootstrap and f1_reps:
        out["average_f1_ci"] = _interval(np.mean(np.stack(f1_reps), axis=0), confidence)
    return out


def tune_threshold(cases: pd.DataFrame, scores: dict, subset: str = "gsm8k") -> float:
    """Threshold maximising F1 on one subset (ProcessBench's rule for scalar-score PRMs). Candidates:
    every distinct step score of the subset (+ one above the maximum, i.e. "every step wrong");
    ties → the smallest threshold."""
    g = cases[cases["subset"] == subset]
    if g.empty:
        raise ValueError(f"threshold tuning subset '{subset}' has no cases "
                         f"(subsets: {', '.join(sorted(map(str, cases['subset'].unique())))})")
    labels = g["label"].to_numpy(dtype=int)
    lists = [list(scores[str(i)] or []) for i in g["id"]]
    flat = sorted({float(s) for lst in lists for s in lst if s is not None and not math.isnan(s)})
    if not flat:
        return 0.5
    candidates = flat + [np.nextafter(flat[-1], math.inf)]
    # prefix minima: first i with s_i < T  ⇔  first i with min(s_0..s_i) < T
    L = max(len(x) for x in lists)
    pm = np.full((len(lists), max(L, 1)), np.inf)
    for r, lst in enumerate(lists):
        if lst:
            pm[r, :len(lst)] = np.minimum.accumulate(np.asarray(lst, dtype=float))
    err = labels != -1
    best_t, best_f = candidates[0], -1.0
    for t in candidates:
        below = pm < t
        pred = np.where(below.any(axis=1), below.argmax(axis=1), -1)
        match = pred == labels
        e = match[err].mean() if err.any() else 0.0
        c = match[~err].mean() if (~err).any() else 0.0
        f = f1_harmonic(float(e), float(c))
        if f > best_f:
            best_f, best_t = f, float(t)
    return best_t


def processbench_long_rows(metrics: dict, prm: str) -> list[dict]:
    """Rows of results/tables/processbench.csv (subset 'average': f1 = average_f1, accuracies = the
    unweighted means of the subset accuracies, n = all cases)."""
    rows = []
    for name, s in metrics["subsets"].items():
        ci = s.get("ci", {}).get("f1", [float("nan"), float("nan")])
        rows.append({"prm": prm, "subset": name, "n": s["n"], "error_acc": s["error_acc"],
                     "correct_acc": s["correct_acc"], "f1": s["f1"], "f1_ci_low": ci[0], "f1_ci_high": ci[1],
                     "n_unparsed": s.get("n_unparsed", 0), "threshold": metrics.get("threshold")})
    subs = list(metrics["subsets"].values())
    ci = metrics.get("average_f1_ci", [float("nan"), float("nan")])
    rows.append({"prm": prm, "subset": "average", "n": int(sum(s["n"] for s in subs)),
                 "error_acc": float(np.mean([s["error_acc"] for s in subs])) if subs else float("nan"),
                 "correct_acc": float(np.mean([s["correct_acc"] for s in subs])) if subs else float("nan"),
                 "f1": metrics["average_f1"], "f1_ci_low": ci[0], "f1_ci_high": ci[1],
                 "n_unparsed": metrics.get("n_unparsed", 0), "threshold": metrics.get("threshold")})
    return rows


def predictions_from_rows(rows: Iterable[dict], threshold: float) -> tuple[dict, dict]:
    """{"id", "prediction"} or {"id", "step_scores"} rows → (predictions by id, step_scores by id).
    Errors name the offending id."""
    preds, scores = {}, {}
    for k, r in enumerate(rows):
        if "id" not in r:
            raise ValueError(f"prediction row {k} has no 'id'")
        i = str(r["id"])
        if i in preds:
            raise ValueError(f"duplicate prediction for id '{i}'")
        if "prediction" in r:  # null = an unparsable critic answer: counted wrong, reported
            p = r["prediction"]
            if p is not None:
                try:
                    p = int(p)
                except (TypeError, ValueError):
                    raise ValueError(f"id '{i}': prediction {p!r} is not an integer") from None
                if p < -1:
                    raise ValueError(f"id '{i}': prediction {p} < -1")
            preds[i] = p
        elif "step_scores" in r:
            s = r["step_scores"]
            if s is None or not isinstance(s, (list, tuple, np.ndarray)):
                raise ValueError(f"id '{i}': step_scores must be a list of floats")
            s = [float(x) for x in s]
            scores[i] = s
            preds[i] = first_error(s, threshold)
        else:
            raise ValueError(f"id '{i}': row needs 'prediction' or 'step_scores'")
    return preds, scores




# ----------------------------------------------------------------------------------------------
# Evaluating one PRM / critic on ProcessBench (shared by the CLI and the workflow)
# ----------------------------------------------------------------------------------------------

def evaluate_processbench(cases: pd.DataFrame, preds: dict, scores: dict, threshold: float | str = 0.5,
                          tune_subset: str = "gsm8k", bootstrap: int = 0, seed: int = 0,
                          confidence: float = 0.95) -> tuple[dict, pd.DataFrame]:
    """Metrics JSON + per-case predictions frame (id, subset, label, final_answer_correct, prediction).
    threshold: a number, or "tune" (maximise F1 on `tune_subset`, apply to all) — then every case
    needs step scores."""
    if threshold == "tune":
        lacking = [str(i) for i in cases["id"] if str(i) not in scores]
        if lacking:
            raise ValueError(f"threshold tuning needs step_scores for every case; none for "
                             f"{', '.join(lacking[:10])}" + (" …" if len(lacking) > 10 else ""))
        t = tune_threshold(cases, scores, tune_subset)
        preds = {i: first_error(s, t) for i, s in scores.items()}
        threshold_used: float | None = t
    else:
        threshold_used = float(threshold) if scores else None
    m = processbench_metrics(cases, preds, bootstrap=bootstrap, seed=seed, confidence=confidence)
    m["threshold"] = threshold_used
    m["threshold_policy"] = (f"tuned on {tune_subset}" if threshold == "tune"
                             else ("fixed" if scores else "predictions given"))
    per_case = cases[["id", "subset", "label"]].copy()
    per_case["final_answer_correct"] = (cases["final_answer_correct"].astype("boolean")
                                        if "final_answer_correct" in cases.columns else pd.NA)
    per_case["prediction"] = pd.array([preds[str(i)] for i in cases["id"]], dtype="Int64")
    return m, per_case.reset_index(drop=True)
