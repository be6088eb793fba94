"""PRMBench's metric (Song et al. 2025, arXiv 2501.03124, §3/§4; the repository ssmisya/PRMBench at
a1ae4ea: mr_eval/tasks/prmtest_classified/task.py, evaluate_function, and the PRMScore of
mr_visualize/eval_res_view/form_latex_strs.ipynb), re-implemented here.

Every step of a case is a binary decision: the PRM calls it valid when its score reaches the threshold
(the ProcessBench decision rule of :func:`prm_lessons.metrics.processbench.first_error`: a score below
it, or a missing one, is an error). PRMBench counts a correct step called valid as TP, a correct step
called invalid as FN, an error step called invalid as TN and an error step called valid as FP; F1 is the
F1 of the positive class (correct steps), negative F1 that of the negative class (error steps), and
PRMScore = 0.5 * F1 + 0.5 * negative F1 (the weights of the repository's PRMScore). Per class the counts
of its cases; for `multi_solutions` (no error steps) PRMScore is F1 alone, as the repository scores it.
The overall counts pool every case but the `correct` ones (the original processes: scored per class,
not in the overall, as the repository does). A dimension's score is the mean of its classes' PRMScores.
An F1 with an empty denominator is undefined (null; the repository writes -1).
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

import pandas as pd

from ..data.prmbench import ABBREVIATIONS, CORRECT, DIMENSIONS

WEIGHTS = (0.5, 0.5)  # PRMScore = w_pos * F1 + w_neg * negative F1 (the repository's PRMScore)
F1_ONLY = ("multi_solutions",)  # classes whose PRMScore is F1 alone (no error steps)
# results/tables/prmbench.csv (rule prmbench_table; tables.CSV_DTYPES["prmbench_csv"]), `run` appended
PRMBENCH_LONG_COLUMNS = ["prm", "column", "classification", "n", "f1", "negative_f1", "prmscore", "published",
                         "published_label", "threshold", "data"]


def processbench_threshold(pb_metrics: Mapping) -> float:
    """The threshold a PRM's ProcessBench evaluation used (its metrics JSON): the number, fixed or tuned; for
    thresholds cross-fitted over two folds of ProcessBench, their mean (PRMBench's cases are none of
    ProcessBench's, so either fold's is out of sample; the mean uses both)."""
    t = pb_metrics.get("threshold")
    if isinstance(t, (list, tuple)) and t:
        return float(sum(float(v) for v in t) / len(t))
    if t is None or isinstance(t, bool):
        raise ValueError(f"ProcessBench metrics of {pb_metrics.get('prm')!r} hold no threshold ({t!r})")
    return float(t)


def step_validity(step_scores: Sequence[float] | None, threshold: float) -> list[bool]:
    """Per scored step: valid (score >= threshold) or not (below it, missing, NaN)."""
    out = []
    for s in step_scores or []:
        ok = s is not None and not (isinstance(s, float) and math.isnan(s)) and s >= threshold
        out.append(bool(ok))
    return out


def confusion(error_steps: Sequence[int], valid: Sequence[bool]) -> dict[str, int]:
    """PRMBench's per-case counts over the scored steps (0-based `error_steps`): a correct step is the
    positive class."""
    errors = set(int(e) for e in error_steps)
    c = {"TP": 0, "FP": 0, "TN": 0, "FN": 0}
    for k, ok in enumerate(valid):
        if k in errors:
            c["FP" if ok else "TN"] += 1
        else:
            c["TP" if ok else "FN"] += 1
    return c


def _f1(tp: int, fp: int, fn: int) -> float | None:
    if tp + fp == 0 or tp + fn == 0:
        return None
    p, r = tp / (tp + fp), tp / (tp + fn)
    return None if p + r == 0 else 2 * p * r / (p + r)


def scores_from_counts(c: Mapping[str, int], f1_only: bool = False) -> dict:
    """F1 (positive: correct steps), negative F1 (error steps) and PRMScore from pooled counts."""
    f1 = _f1(c["TP"], c["FP"], c["FN"])
    neg = _f1(c["TN"], c["FN"], c["FP"])
    if f1_only:
        score = f1
    else:
        score = None if f1 is None or neg is None else WEIGHTS[0] * f1 + WEIGHTS[1] * neg
    return {**{k: int(c[k]) for k in ("TP", "FP", "TN", "FN")}, "f1": f1, "negative_f1": neg, "prmscore": score}


def _mean(values):
    vals = [v for v in values]
    return None if not vals or any(v is None for v in vals) else sum(vals) / len(vals)


def evaluate_prmbench(cases: pd.DataFrame, scores: Mapping[str, Sequence[float]], threshold: float
                      ) -> tuple[dict, pd.DataFrame]:
    """PRMBench metrics of one PRM: (metrics, per-case rows). `cases`: the PRMBench cases table; `scores`:
    id -> step scores (a case's scores may be shorter than its steps: a PRM truncated at its max length;
    the unscored steps are not counted, as the repository counts only the labels it gets). Every case
    needs scores (KeyError naming the first missing)."""
    missing = [i for i in cases["id"].astype(str) if i not in scores]
    if missing:
        raise KeyError(f"PRMBench: no step scores for {len(missing)} case(s), first {missing[0]!r}")
    per_case, by_class = [], {}
    overall = {"TP": 0, "FP": 0, "TN": 0, "FN": 0}
    for row in cases.itertuples(index=False):
        valid = step_validity(scores[str(row.id)], threshold)
        c = confusion(row.error_steps, valid)
        acc = by_class.setdefault(row.classification, {"TP": 0, "FP": 0, "TN": 0, "FN": 0, "n": 0})
        for k in c:
            acc[k] += c[k]
            if row.classification != CORRECT:
                overall[k] += c[k]
        acc["n"] += 1
        per_case.append({"id": str(row.id), "classification": row.classification, "n_steps": len(row.steps),
                         "n_scored": len(valid), "valid": valid, **c})
    classes = {cls: {"n": acc["n"], **scores_from_counts(acc, cls in F1_ONLY)} for cls, acc in sorted(by_class.items())}
    dims = {}
    for dim, members in DIMENSIONS.items():
        present = [c for c in members if c in classes]
        if present:
            dims[dim] = {"classes": present, "prmscore": _mean(classes[c]["prmscore"] for c in present),
                         "complete": len(present) == len(members)}
    n_eval = sum(a["n"] for cls, a in by_class.items() if cls != CORRECT)
    m = {"threshold": float(threshold), "n_cases": int(len(cases)), "n_cases_scored_overall": n_eval,
         "overall": scores_from_counts(overall), "classes": classes, "dimensions": dims,
         "n_truncated": int(sum(r["n_scored"] < r["n_steps"] for r in per_case))}
    return m, pd.DataFrame(per_case)


def long_rows(m: Mapping) -> list[dict]:
    """One PRM's metrics as table rows: `overall`, each class (its paper abbreviation where it has one)
    and each dimension, with n, f1, negative_f1 and prmscore."""
    rows = [{"column": "overall", "classification": "overall", "n": m["n_cases_scored_overall"],
             **{k: m["overall"][k] for k in ("f1", "negative_f1", "prmscore")}}]
    for cls, c in m["classes"].items():
        rows.append({"column": ABBREVIATIONS.get(cls, cls), "classification": cls, "n": c["n"],
                     **{k: c[k] for k in ("f1", "negative_f1", "prmscore")}})
    for dim, d in m["dimensions"].items():
        rows.append({"column": dim, "classification": dim, "n": None, "f1": None, "negative_f1": None,
                     "prmscore": d["prmscore"] if d["complete"] else None})
    return rows
