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
interval resamples every benchmark and averages, replicate by replicate), fixed seed. Every selector
is also compared with maj@N by a paired bootstrap (same resampled problems): `vs_maj`, rows
`<col>-maj` of the long table.

ProcessBench (official `run_eval.py`): per subset, error_acc = mean over label != −1 of
[prediction == label]; correct_acc = mean over label == −1 of [prediction == −1];
f1 = 2·e·c/(e+c), 0 when both are 0; average_f1 = unweighted mean of the subset F1s. A PRM's
prediction = index of the first step whose score is < threshold, −1 if none. A prediction of None
(an unparsable critic answer) never equals the label: it is counted wrong and reported.
Nothing is tuned on the cases being scored: a tuned threshold maximises the average F1 on a dev split
(disjoint ids) or is cross-fitted over two folds of the cases. Model-free baselines (always_correct,
first_step, structure: the best rule on subset × number of steps, fitted on the dev split) see only
structure_view(cases); paired_f1_difference compares two predictors on the same bootstrap draws.
"""
from __future__ import annotations

import hashlib
import itertools
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
    …, "ci": {metric: [low, high]}}}, "average": {…}, "vs_maj": {…}, "settings": {…}} — fractions in
    [0, 1].

    "vs_maj" = the paired difference of every selector (prm_<agg>, orm) minus maj@N:
    {"benchmarks": {name: {col: {"diff", "ci"}}}, "average": {col: {"diff", "ci"}}}. A benchmark's
    interval resamples its problems once for both columns (the same indices); the average's resamples
    every benchmark's problems and averages the per-benchmark differences, replicate by replicate.
    Without bootstrap the intervals are [nan, nan]."""
    probs, n_by_bench = bon_problem_table(df, aggregations, n, maj_grouping, orm_column)
    selectors = [f"prm_{a}" for a in aggregations] + (["orm"] if orm_column else [])
    metrics = ["pass", "maj"] + selectors
    rng = np.random.default_rng(seed)
    nan2 = [float("nan"), float("nan")]
    benches: dict[str, dict] = {}
    reps_by_metric: dict[str, list[np.ndarray]] = {m: [] for m in metrics}
    vs_maj: dict = {"benchmarks": {}, "average": {}}
    for bench, g in probs.groupby("benchmark", sort=True):
        entry: dict = {"n_problems": int(len(g)), "n": int(n_by_bench[str(bench)])}
        ci = {}
        # one set of resampled problem indices per benchmark, shared by all metrics (paired CIs)
        idx = rng.integers(0, len(g), size=(bootstrap, len(g))) if bootstrap else None
        reps_here: dict[str, np.ndarray] = {}
        for m in metrics:
            vals = g[m].to_numpy(dtype=float)
            entry[m] = float(vals.mean())
            if bootstrap:
                reps = vals[idx].mean(axis=1)
                reps_here[m] = reps
                reps_by_metric[m].append(reps)
                ci[m] = _interval(reps, confidence)
        entry["ci"] = ci
        benches[str(bench)] = entry
        vs_maj["benchmarks"][str(bench)] = {
            col: {"diff": entry[col] - entry["maj"],
                  "ci": _interval(reps_here[col] - reps_here["maj"], confidence) if bootstrap else list(nan2)}
            for col in selectors}
    avg: dict = {"n_benchmarks": len(benches)}
    ci = {}
    for m in metrics:
        avg[m] = float(np.mean([b[m] for b in benches.values()])) if benches else float("nan")
        if bootstrap and benches:
            ci[m] = _interval(np.mean(np.stack(reps_by_metric[m]), axis=0), confidence)
    avg["ci"] = ci
    for col in selectors:
        diffs = [d[col]["diff"] for d in vs_maj["benchmarks"].values()]
        if bootstrap and benches:
            reps = np.mean(np.stack(reps_by_metric[col]) - np.stack(reps_by_metric["maj"]), axis=0)
            dci = _interval(reps, confidence)
        else:
            dci = list(nan2)
        vs_maj["average"][col] = {"diff": float(np.mean(diffs)) if diffs else float("nan"), "ci": dci}
    return {"benchmarks": benches, "average": avg, "vs_maj": vs_maj,
            "settings": {"n": n, "aggregations": list(aggregations), "maj_grouping": maj_grouping,
                         "orm": bool(orm_column), "bootstrap": bootstrap, "seed": seed,
                         "confidence": confidence}}


def bon_long_rows(metrics: dict, prm: str) -> list[dict]:
    """Rows of results/tables/bon.csv: prm, benchmark, metric, N, accuracy, ci_low, ci_high
    (benchmark 'average' = unweighted mean over benchmarks). The paired differences against maj@N
    (metrics["vs_maj"]) follow as rows whose metric is "<col>-maj" (e.g. "prm_product-maj"):
    accuracy = the difference, ci_low / ci_high = its paired bootstrap interval."""
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
    vs = metrics.get("vs_maj") or {}
    paired = list((vs.get("benchmarks") or {}).items()) + ([("average", vs["average"])] if "average" in vs else [])
    for bench, cols in paired:
        entry = metrics["benchmarks"].get(bench, {}) if bench != "average" else metrics["average"]
        n_val = entry.get("n", metrics.get("settings", {}).get("n"))
        for col, d in cols.items():
            lo, hi = (d.get("ci") or [float("nan"), float("nan")])
            rows.append({"prm": prm, "benchmark": bench, "metric": f"{col}-maj", "N": n_val,
                         "accuracy": d["diff"], "ci_low": lo, "ci_high": hi})
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


def _prefix_minima(step_scores) -> np.ndarray:
    """Running minima of a response's step scores; None / NaN → −inf (first_error counts such a step
    as below every threshold)."""
    a = np.array([-math.inf if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)
                  for v in (step_scores or [])], dtype=float)
    return np.minimum.accumulate(a) if len(a) else a


def tune_threshold(cases: pd.DataFrame, scores: dict, subset: str | None = None) -> float:
    """Threshold maximising ProcessBench F1 on `cases` (id, subset, label) with step scores `scores`
    (id → list): subset None = the average F1 over all subsets of `cases` (the ProcessBench average);
    a name = that subset's F1 only. Candidates: every distinct step score of the cases considered
    (+ one above the maximum, i.e. "every step wrong"); ties → the smallest threshold. Reads the labels
    of `cases` only: pass a dev split (or one cross-fitting fold), never the cases being scored.

    A case's prediction (first i with score_i < T) matches its label on one interval of T: label −1
    on T ≤ min(scores); label l on min(scores[:l+1]) < T ≤ min(scores[:l]); so every candidate is
    scored at once from interval counts."""
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
        f1 = np.where(e_acc + c_acc > 0, 2 * e_acc * c_acc / (e_acc + c_acc), 0.0)
    avg = np.round(f1.mean(axis=0), 12)  # exact ties → the first (smallest) candidate
    return float(cand[int(np.argmax(avg))])


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


def _threshold_cell(t):
    """The threshold column of the long table: a number, None, or 'a|b' for cross-fitted fold thresholds."""
    if isinstance(t, (list, tuple)):
        return "|".join(f"{float(x):.6g}" for x in t)
    return t


PROCESSBENCH_LONG_COLUMNS = ["prm", "subset", "n", "error_acc", "correct_acc", "f1", "f1_ci_low", "f1_ci_high",
                             "n_unparsed", "threshold", "delta_f1_structure", "delta_ci_low", "delta_ci_high"]


def processbench_long_rows(metrics: dict, prm: str) -> list[dict]:
    """Rows of results/tables/processbench.csv, columns PROCESSBENCH_LONG_COLUMNS (subset 'average':
    f1 = average_f1, accuracies = the unweighted means of the subset accuracies, n = all cases).
    threshold: the number used, 'a|b' for the two cross-fitted fold thresholds, None for critics.
    delta_f1_structure / delta_ci_low / delta_ci_high: metrics["vs_structure"] (paired bootstrap of
    this average F1 minus the structure-only baseline's), on the 'average' row only; NaN elsewhere."""
    nan = float("nan")
    thr = _threshold_cell(metrics.get("threshold"))
    rows = []
    for name, s in metrics["subsets"].items():
        ci = s.get("ci", {}).get("f1", [nan, nan])
        rows.append({"prm": prm, "subset": name, "n": s["n"], "error_acc": s["error_acc"],
                     "correct_acc": s["correct_acc"], "f1": s["f1"], "f1_ci_low": ci[0], "f1_ci_high": ci[1],
                     "n_unparsed": s.get("n_unparsed", 0), "threshold": thr,
                     "delta_f1_structure": nan, "delta_ci_low": nan, "delta_ci_high": nan})
    subs = list(metrics["subsets"].values())
    ci = metrics.get("average_f1_ci", [nan, nan])
    vs = metrics.get("vs_structure") or {}
    dci = vs.get("ci") or [nan, nan]
    rows.append({"prm": prm, "subset": "average", "n": int(sum(s["n"] for s in subs)),
                 "error_acc": float(np.mean([s["error_acc"] for s in subs])) if subs else nan,
                 "correct_acc": float(np.mean([s["correct_acc"] for s in subs])) if subs else nan,
                 "f1": metrics["average_f1"], "f1_ci_low": ci[0], "f1_ci_high": ci[1],
                 "n_unparsed": metrics.get("n_unparsed", 0), "threshold": thr,
                 "delta_f1_structure": float(vs["diff"]) if "diff" in vs and vs["diff"] is not None else nan,
                 "delta_ci_low": float(dci[0]) if dci[0] is not None else nan,
                 "delta_ci_high": float(dci[1]) if dci[1] is not None else nan})
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

def _need_scores(cases: pd.DataFrame, scores: dict, what: str) -> None:
    lacking = [str(i) for i in cases["id"] if str(i) not in scores]
    if lacking:
        raise ValueError(f"threshold tuning needs step_scores for every case of {what}; none for "
                         f"{', '.join(lacking[:10])}" + (" …" if len(lacking) > 10 else ""))


def evaluate_processbench(cases: pd.DataFrame, preds: dict, scores: dict, threshold: float | str = 0.5,
                          dev_cases: pd.DataFrame | None = None, dev_scores: dict | None = None,
                          bootstrap: int = 0, seed: int = 0, confidence: float = 0.95) -> tuple[dict, pd.DataFrame]:
    """Metrics JSON + per-case predictions frame (id, subset, label, final_answer_correct, prediction).

    threshold: a number (`preds` were made with it from `scores`; "fixed"), or predictions given
    (`scores` empty: a critic), or "tune": the threshold maximising the average F1 (tune_threshold,
    subset None) is chosen where no evaluated label can reach it —
    - with a dev split (`dev_cases` + `dev_scores`, no id shared with `cases`): tuned on the dev split
      and applied to every evaluated case ("tuned_on": "dev", "threshold" = that value);
    - without one: cross-fitted: the evaluated cases are split into 2 folds (crossfit_folds: by a hash
      of the id, stratified by subset × error/correct); the threshold tuned on fold k predicts the
      cases of the other fold ("tuned_on": "crossfit", "threshold" = [tuned on fold 0, tuned on fold 1]).
    Tuning needs step scores for every evaluated (and dev) case. The dev split is ignored with a
    numeric threshold. Keys added to processbench_metrics': threshold, threshold_policy, tuned_on
    (+ crossfit_fold_sizes when cross-fitted)."""
    extra: dict = {}
    if (dev_cases is None) != (dev_scores is None) and threshold == "tune":
        raise ValueError("a dev split needs both dev_cases and dev_scores")
    if threshold == "tune":
        _need_scores(cases, scores, "the evaluated cases")
        ids = [str(i) for i in cases["id"]]
        if dev_cases is not None:
            shared = sorted(set(ids) & {str(i) for i in dev_cases["id"]})
            if shared:
                raise ValueError(f"the dev split shares {len(shared)} id(s) with the evaluated cases "
                                 f"(tuning on them would score cases with a threshold fitted on themselves): "
                                 f"{', '.join(shared[:10])}" + (" …" if len(shared) > 10 else ""))
            _need_scores(dev_cases, dev_scores, "the dev split")
            t = tune_threshold(dev_cases, dev_scores)
            preds = {i: first_error(scores[i], t) for i in ids}
            threshold_used: float | list | None = t
            policy, tuned_on = f"tuned on the dev split ({len(dev_cases)} cases)", "dev"
        else:
            folds = crossfit_folds(cases["id"], cases["subset"], cases["label"])
            sizes = [int((folds == k).sum()) for k in (0, 1)]
            if min(sizes) == 0:
                raise ValueError(f"cross-fitting the threshold needs cases in both folds (fold sizes {sizes}); "
                                 "give a dev split or a fixed threshold")
            ts = [tune_threshold(cases[folds == k], scores) for k in (0, 1)]
            preds = {i: first_error(scores[i], ts[1 - int(f)]) for i, f in zip(ids, folds)}
            threshold_used = ts
            policy, tuned_on = "cross-fitted over 2 folds", "crossfit"
            extra["crossfit_fold_sizes"] = sizes
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


# ----------------------------------------------------------------------------------------------
# Model-free ProcessBench baselines (they see the subset and the number of steps, never a step's text)
# ----------------------------------------------------------------------------------------------

BASELINE_KINDS = ("always_correct", "first_step", "structure")
STRUCTURE_VIEW_COLUMNS = ["id", "subset", "n_steps"]
_EXHAUSTIVE_MAX = 1 << 16  # a subset's rule is searched exhaustively up to this many combinations


def structure_view(cases: pd.DataFrame) -> pd.DataFrame:
    """All a model-free baseline may see of the cases: id, subset (the generator's problem set) and
    n_steps = the number of steps. No text, no label."""
    return pd.DataFrame({"id": [str(i) for i in cases["id"]],
                         "subset": [str(x) for x in cases["subset"]],
                         "n_steps": [len(s) if s is not None else 0 for s in cases["steps"]]},
                        columns=STRUCTURE_VIEW_COLUMNS)


def _check_view(view: pd.DataFrame) -> None:
    if list(view.columns) != STRUCTURE_VIEW_COLUMNS:
        raise ValueError(f"a baseline takes structure_view(cases) (columns {STRUCTURE_VIEW_COLUMNS}), "
                         f"got columns {list(view.columns)}")


def baseline_predictions(kind: str, view: pd.DataFrame, rule: dict | None = None) -> dict:
    """id → prediction of a model-free baseline from structure_view(cases): always_correct (−1 everywhere),
    first_step (0 everywhere), structure (rule[(subset, n_steps)] from fit_structure_rule; unseen
    strata → −1)."""
    _check_view(view)
    ids = view["id"].astype(str).tolist()
    if kind == "always_correct":
        return {i: -1 for i in ids}
    if kind == "first_step":
        return {i: 0 for i in ids}
    if kind == "structure":
        if rule is None:
            raise ValueError("the structure baseline needs a rule (fit_structure_rule on the dev split)")
        return {i: int(rule.get((str(s), int(n)), -1))
                for i, s, n in zip(ids, view["subset"], view["n_steps"])}
    raise ValueError(f"unknown ProcessBench baseline '{kind}' (allowed: {', '.join(BASELINE_KINDS)})")


def _f1_counts(e_hits: float, n_err: int, c_hits: float, n_cor: int) -> float:
    return f1_harmonic(e_hits / n_err if n_err else 0.0, c_hits / n_cor if n_cor else 0.0)


def fit_structure_rule(dev_view: pd.DataFrame, dev_labels: Sequence[int]) -> dict:
    """The best ProcessBench predictor that sees only the subset, the number of steps and step positions:
    (subset, n_steps) → prediction in {−1, 0, …, n_steps−1}, maximising the dev split's average F1.

    Subsets do not interact (the average is a mean of subset F1s), so each is fitted alone. Within a
    stratum, the only error prediction worth making is its most frequent error position (ties → the
    earliest): F1 grows with error accuracy at equal correct accuracy. So each stratum chooses between
    −1 and that position: exhaustively when a subset has at most 16 strata with errors (first maximum
    in enumeration order, which starts from all −1), else by coordinate ascent from all −1 (strata by
    n_steps, a change only on a strict gain) until a full pass changes nothing."""
    _check_view(dev_view)
    labels = np.asarray([int(x) for x in dev_labels], dtype=int)
    if len(labels) != len(dev_view):
        raise ValueError(f"fit_structure_rule: {len(labels)} labels for {len(dev_view)} cases")
    rule: dict = {}
    frame = dev_view.assign(_label=labels)
    for sub, g in frame.groupby("subset", sort=True):
        is_err = g["_label"].to_numpy() != -1
        n_err, n_cor = int(is_err.sum()), int((~is_err).sum())
        strata = []  # (n_steps, modal position or None, error hits if predicted, correct cases lost)
        for n_steps, h in g.groupby("n_steps", sort=True):
            lab = h["_label"].to_numpy()
            pos = [int(x) for x in lab if 0 <= x < int(n_steps)]
            modal, hits = None, 0
            if pos:
                cnt = Counter(pos)
                hits = max(cnt.values())
                modal = min(p for p, c in cnt.items() if c == hits)
            strata.append((int(n_steps), modal, hits, int((lab == -1).sum())))
        choosable = [k for k, st in enumerate(strata) if st[1] is not None]
        choice = [False] * len(strata)  # True = predict the modal error position

        def value(ch):
            e = sum(strata[k][2] for k in range(len(strata)) if ch[k])
            c = n_cor - sum(strata[k][3] for k in range(len(strata)) if ch[k])
            return round(_f1_counts(e, n_err, c, n_cor), 12)

        if (1 << len(choosable)) <= _EXHAUSTIVE_MAX:
            best_v = value(choice)
            best = list(choice)
            for bits in itertools.product((False, True), repeat=len(choosable)):
                ch = [False] * len(strata)
                for k, b in zip(choosable, bits):
                    ch[k] = b
                v = value(ch)
                if v > best_v:
                    best_v, best = v, ch
            choice = best
        else:
            cur = value(choice)
            changed = True
            while changed:
                changed = False
                for k in choosable:
                    trial = list(choice)
                    trial[k] = not trial[k]
                    v = value(trial)
                    if v > cur:
                        choice, cur, changed = trial, v, True
        for (n_steps, modal, _, _), ch in zip(strata, choice):
            rule[(str(sub), n_steps)] = modal if ch else -1
    return rule


def crossfit_structure_predictions(view: pd.DataFrame, labels: Sequence[int]) -> tuple[dict, list[dict]]:
    """The structure baseline without a dev split: crossfit_folds over the cases; the rule fitted on fold
    k predicts the other fold. Returns (id → prediction, the two rules as JSON records
    {"fitted_on_fold", "applied_to_fold", "subset", "n_steps", "prediction"})."""
    _check_view(view)
    labels = [int(x) for x in labels]
    if len(labels) != len(view):
        raise ValueError(f"crossfit_structure_predictions: {len(labels)} labels for {len(view)} cases")
    folds = crossfit_folds(view["id"], view["subset"], labels)
    lab = np.asarray(labels)
    preds: dict = {}
    records: list[dict] = []
    for k in (0, 1):
        fit_rows = folds == k
        rule = fit_structure_rule(view[fit_rows].reset_index(drop=True), lab[fit_rows].tolist())
        preds.update(baseline_predictions("structure", view[~fit_rows].reset_index(drop=True), rule))
        records += [{"fitted_on_fold": k, "applied_to_fold": 1 - k, "subset": sub, "n_steps": int(n),
                     "prediction": int(p)} for (sub, n), p in sorted(rule.items())]
    return preds, records


# ----------------------------------------------------------------------------------------------
# Paired comparison of two ProcessBench predictors
# ----------------------------------------------------------------------------------------------

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
        hit_a = np.array([pa[i] is not None and int(pa[i]) == int(l) for i, l in zip(gid, labels)], dtype=float)
        hit_b = np.array([pb[i] is not None and int(pb[i]) == int(l) for i, l in zip(gid, labels)], dtype=float)
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
        with np.errstate(invalid="ignore", divide="ignore"):
            fa = np.where(reps["e"][0] + reps["c"][0] > 0,
                          2 * reps["e"][0] * reps["c"][0] / (reps["e"][0] + reps["c"][0]), 0.0)
            fb = np.where(reps["e"][1] + reps["c"][1] > 0,
                          2 * reps["e"][1] * reps["c"][1] / (reps["e"][1] + reps["c"][1]), 0.0)
        diff_reps.append(fa - fb)
    ci = (_interval(np.mean(np.stack(diff_reps), axis=0), confidence) if n_boot and diff_reps
          else [float("nan"), float("nan")])
    return {"diff": float(ma["average_f1"] - mb["average_f1"]), "ci": ci, "f1_a": ma["average_f1"],
            "f1_b": mb["average_f1"], "n_boot": int(n_boot), "confidence": confidence}
