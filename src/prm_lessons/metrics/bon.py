"""Best-of-N: the first N responses of each problem, pass@N / maj@N baselines, the per-problem table of
every selector, bon_metrics (bootstrap intervals, paired differences against maj@N) and its long rows.
"""
from __future__ import annotations

import logging
import math
import numbers
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import InputError, as_int
from ..grading.answer_key import KEEP_UNITS
from .rows import BON_COLUMNS, check_bon_rows, show_value
from .select import AGGREGATIONS, MAJ_GROUPINGS, aggregate, best_or_none, majority_winner
from .stats import interval
from .vote import vote_keys

log = logging.getLogger(__name__)

def baselines(samples: pd.DataFrame, n: int | None = None, grouping: str = "normalized",
              timeout_s: float = 5.0, workers: int = 2, keep_units: bool = False) -> dict:
    """pass@N (any of the first N correct) and maj@N (majority_index: most frequent extracted
    answer among the first N, ties to the answer seen first; responses without an answer do not vote).
    The rows are checked first (check_bon_rows: `correct` a boolean or 0/1, `pred` text or null, …;
    InputError names every bad row). math-verify comparisons that time out are logged (as not equal)."""
    _check_n(n)
    samples = check_bon_rows(samples, [])
    groups = [g.head(n) if n else g for _, g in samples.sort_values("sample_idx", kind="stable")
              .groupby("problem_id", sort=True)]
    keys, stats = vote_keys([list(g["pred"]) for g in groups], grouping, timeout_s=timeout_s, workers=workers,
                            keep_units=keep_units)
    if stats["timeouts"] or stats["errors"]:
        log.warning("maj@N (%s grouping): %d of %d answer comparisons timed out after %.1f s and %d failed; "
                    "each counted as different answers", grouping, stats["timeouts"], stats["comparisons"],
                    timeout_s, stats["errors"])
    per_problem = []
    for g, k in zip(groups, keys):
        winner = majority_winner(k)
        per_problem.append({"pass": bool(g["correct"].any()),
                            "maj": winner is not None and bool(g["correct"].iloc[winner]),
                            "n": len(g), "mean_acc": float(g["correct"].mean())})
    pp = pd.DataFrame(per_problem, columns=["pass", "maj", "n", "mean_acc"])
    empty = len(pp) == 0
    return {"n_problems": len(pp), "n": 0 if empty else int(pp["n"].max()),
            **{k: float("nan") if empty else float(pp[k].mean()) for k in ("pass", "maj", "mean_acc")}}




def _check_n(n) -> None:
    if n is not None and (as_int(n) is None or as_int(n) < 1 or isinstance(n, float)):
        raise ValueError(f"N must be a positive integer (or None for all responses), got {n!r}")


def select_first_n(df: pd.DataFrame, n: int | None) -> tuple[pd.DataFrame, dict[str, int]]:
    """Keep the first n responses (by sample_idx) of every problem; check every problem of a benchmark
    has the same N. Returns the frame (sorted) and N per benchmark. Errors name the problems."""
    _check_n(n)
    missing = [c for c in ("benchmark", "problem_id", "sample_idx") if c not in df.columns]
    if missing:
        raise ValueError(f"Best-of-N rows lack column(s) {missing}")
    df = df.sort_values(["benchmark", "problem_id", "sample_idx"], kind="stable").reset_index(drop=True)
    dup = df.duplicated(["benchmark", "problem_id", "sample_idx"], keep="first")
    if dup.any():
        raise InputError([f"duplicate response: benchmark={r.benchmark} problem_id={r.problem_id} "
                          f"sample_idx={r.sample_idx}" for r in df.loc[dup].itertuples()])
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


def first_n_samples(df: pd.DataFrame, n: int) -> pd.DataFrame:
    """The Best-of-n prefix of a table sampled at a larger N: the rows with sample_idx < n, where every
    problem must hold each of sample_idx 0..n-1 (a gap or fewer than n samples is an error naming the
    benchmark and its problems), so every N is evaluated on the same first draws."""
    _check_n(n)
    if n is None:
        raise ValueError("first_n_samples needs an N")
    idx = pd.to_numeric(df["sample_idx"], errors="coerce")
    part = df[idx < n]
    keys = ["benchmark", "problem_id"]
    have = part.groupby(keys, sort=True)["sample_idx"].nunique()
    have = have.reindex(df.groupby(keys, sort=True).size().index, fill_value=0)
    lines = []
    for (bench, pid), k in have[have < n].items():
        own = sorted(int(i) for i in df.loc[(df["benchmark"] == bench) & (df["problem_id"] == pid), "sample_idx"])
        lines.append(f"benchmark '{bench}': problem {pid} has {k} of sample_idx 0..{n - 1} (its sample_idx: "
                     f"{show_value(own)}); Best-of-{n} is evaluated on the first {n} samples of each problem")
    if lines:
        raise ValueError("\n".join(lines[:10]) + (f"\n… and {len(lines) - 10} more" if len(lines) > 10 else ""))
    return part





def _orm_value(v) -> float:
    if v is None or (isinstance(v, (list, tuple, np.ndarray)) and len(v) == 0):
        return -math.inf
    return float(v[0] if isinstance(v, (list, tuple, np.ndarray)) else v)


def bon_problem_table(df: pd.DataFrame, aggregations: Sequence[str] = ("product", "min", "last"),
                      n: int | None = None, maj_grouping: str = "normalized",
                      orm_column: str | None = None, maj_timeout_s: float = 5.0,
                      workers: int = 2, orm_name: str = "orm") -> tuple[pd.DataFrame, dict[str, int]]:
    """One row per (benchmark, problem): 0/1 correctness of pass, maj, prm_<agg> (and the `orm_column`
    selector, named `orm_name`), plus the chosen sample_idx of each selector. Rows need BON_COLUMNS
    (step_scores may be null for a selector-free evaluation) and are checked first (check_bon_rows:
    InputError naming every bad row).

    A response whose aggregated score is not finite (no step scores, an empty list, NaN or ±inf among
    them) is never chosen. A problem none of whose responses has a finite score is unscored for that
    selector: it counts as wrong (0) and its `<selector>_sample_idx` is null; bon_metrics reports such
    problems (`unscored`, `n_unscored`). `table.attrs["maj_comparisons"]`: {"answers", "comparisons", "timeouts",
    "errors"} of maj_grouping math_verify (a comparison that timed out after `maj_timeout_s` or failed
    counts as two different answers)."""
    for a in aggregations:
        if a not in AGGREGATIONS:
            raise ValueError(f"unknown aggregation '{a}' (allowed: {', '.join(AGGREGATIONS)})")
    if maj_grouping not in MAJ_GROUPINGS:
        raise ValueError(f"unknown maj_grouping '{maj_grouping}' (allowed: {', '.join(MAJ_GROUPINGS)})")
    need = [c for c in BON_COLUMNS if c not in df.columns and not (c == "step_scores" and not aggregations)]
    if orm_column and orm_column not in df.columns:
        need.append(orm_column)
    if need:
        raise ValueError(f"Best-of-N rows lack column(s) {need}")
    if len(df) == 0:
        raise InputError(["no Best-of-N rows"])
    df = check_bon_rows(df, aggregations, orm_column)
    df, n_by_bench = select_first_n(df, n)
    groups = list(df.groupby(["benchmark", "problem_id"], sort=False))
    keys_all, stats = vote_keys([g["pred"].tolist() for _, g in groups], maj_grouping, timeout_s=maj_timeout_s,
                                workers=workers, keep_units=[b in KEEP_UNITS for (b, _), _ in groups])
    out = []
    for k, ((bench, pid), g) in enumerate(groups):
        correct = g["correct"].tolist()
        sidx = g["sample_idx"].tolist()
        row = {"benchmark": bench, "problem_id": pid, "n": len(correct), "pass": float(any(correct))}
        mi = majority_winner(keys_all[k])
        row["maj"] = float(correct[mi]) if mi is not None else 0.0
        row["maj_sample_idx"] = sidx[mi] if mi is not None else None
        if aggregations:
            scores_list = g["step_scores"].tolist()
            for a in aggregations:
                with np.errstate(over="ignore", invalid="ignore"):  # inf / NaN scores: no finite score
                    bi = best_or_none([aggregate(s, a) for s in scores_list])
                row[f"prm_{a}"] = float(correct[bi]) if bi is not None else 0.0
                row[f"prm_{a}_sample_idx"] = sidx[bi] if bi is not None else None
        if orm_column:
            bi = best_or_none([_orm_value(v) for v in g[orm_column].tolist()])
            row[orm_name] = float(correct[bi]) if bi is not None else 0.0
            row[f"{orm_name}_sample_idx"] = sidx[bi] if bi is not None else None
        out.append(row)
    table = pd.DataFrame(out)
    table.attrs["maj_comparisons"] = stats
    return table, n_by_bench




def bon_metrics(df: pd.DataFrame, aggregations: Sequence[str] = ("product", "min", "last"),
                n: int | None = None, maj_grouping: str = "normalized", orm_column: str | None = None,
                bootstrap: int = 1000, seed: int = 0, confidence: float = 0.95, maj_timeout_s: float = 5.0,
                workers: int = 2, orm_name: str = "orm") -> dict:
    """Best-of-N metrics JSON: {"benchmarks": {name: {"n_problems", "n", "pass", "maj", "prm_<agg>",
    …, "ci": {metric: [low, high]}}}, "average": {…}, "vs_maj": {…}, "unscored": {…},
    "n_unscored": {…}, "maj_comparisons": {…}, "settings": {…}} — fractions in [0, 1].

    The rows are checked first (check_bon_rows; InputError names every bad row). Problems without a
    finite score: a problem none of whose N responses has a finite aggregated score (step scores null,
    empty, NaN or ±inf) counts as WRONG for that selector, as if the selector had chosen a wrong
    response (never a silent pick of sample 0), and is reported: "unscored" = {benchmark: {selector:
    [problem ids]}} (only those with some), "n_unscored" = {selector: count over all benchmarks} (every
    selector, 0 included). "maj_comparisons" = {"comparisons", "timeouts", "errors"} of maj_grouping
    math_verify, whose comparisons run in grading workers killed after `maj_timeout_s` seconds (a
    timed-out or failed comparison counts as two different answers).

    "vs_maj" = the paired difference of every selector (prm_<agg>, orm) minus maj@N:
    {"benchmarks": {name: {col: {"diff", "ci"}}}, "average": {col: {"diff", "ci"}}}. A benchmark's
    interval resamples its problems once for both columns (the same indices); the average's resamples
    every benchmark's problems and averages the per-benchmark differences, replicate by replicate.
    Without bootstrap the intervals are [nan, nan]. `orm_name` names the `orm_column` selector (a judge's
    choice: "judge")."""
    if as_int(bootstrap) is None or bootstrap < 0 or isinstance(bootstrap, float):
        raise ValueError(f"bootstrap must be an integer ≥ 0 (0 = no intervals), got {bootstrap!r}")
    if not (isinstance(confidence, numbers.Real) and 0 < confidence < 1):
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    probs, n_by_bench = bon_problem_table(df, aggregations, n, maj_grouping, orm_column,
                                          maj_timeout_s=maj_timeout_s, workers=workers, orm_name=orm_name)
    selectors = [f"prm_{a}" for a in aggregations] + ([orm_name] if orm_column else [])
    unscored: dict = {}
    for bench, g in probs.groupby("benchmark", sort=True):
        lists = {col: [str(p) for p in g.loc[g[f"{col}_sample_idx"].isna(), "problem_id"]] for col in selectors}
        lists = {col: ids for col, ids in lists.items() if ids}
        if lists:
            unscored[str(bench)] = lists
    n_unscored = {col: int(probs[f"{col}_sample_idx"].isna().sum()) for col in selectors}
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
                ci[m] = interval(reps, confidence)
        entry["ci"] = ci
        benches[str(bench)] = entry
        vs_maj["benchmarks"][str(bench)] = {
            col: {"diff": entry[col] - entry["maj"],
                  "ci": interval(reps_here[col] - reps_here["maj"], confidence) if bootstrap else list(nan2)}
            for col in selectors}
    avg: dict = {"n_benchmarks": len(benches)}
    ci = {}
    for m in metrics:
        avg[m] = float(np.mean([b[m] for b in benches.values()])) if benches else float("nan")
        if bootstrap and benches:
            ci[m] = interval(np.mean(np.stack(reps_by_metric[m]), axis=0), confidence)
    avg["ci"] = ci
    for col in selectors:
        diffs = [d[col]["diff"] for d in vs_maj["benchmarks"].values()]
        if bootstrap and benches:
            reps = np.mean(np.stack(reps_by_metric[col]) - np.stack(reps_by_metric["maj"]), axis=0)
            dci = interval(reps, confidence)
        else:
            dci = list(nan2)
        vs_maj["average"][col] = {"diff": float(np.mean(diffs)) if diffs else float("nan"), "ci": dci}
    return {"benchmarks": benches, "average": avg, "vs_maj": vs_maj, "unscored": unscored,
            "n_unscored": n_unscored, "maj_comparisons": dict(probs.attrs.get("maj_comparisons", {})),
            "settings": {"n": n, "aggregations": list(aggregations), "maj_grouping": maj_grouping,
                         "orm": bool(orm_column), "bootstrap": bootstrap, "seed": seed,
                         "confidence": confidence}}


def bon_long_rows(metrics: dict, prm: str) -> list[dict]:
    """Rows of results/tables/bon.csv: prm, benchmark, metric, n (the N), accuracy, ci_low, ci_high
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
            rows.append({"prm": prm, "benchmark": bench, "metric": key, "n": n_val, "accuracy": val,
                         "ci_low": lo, "ci_high": hi})
    vs = metrics["vs_maj"]
    paired = [*vs["benchmarks"].items(), ("average", vs["average"])]
    for bench, cols in paired:
        entry = metrics["benchmarks"].get(bench, {}) if bench != "average" else metrics["average"]
        n_val = entry.get("n", metrics.get("settings", {}).get("n"))
        for col, d in cols.items():
            lo, hi = (d.get("ci") or [float("nan"), float("nan")])
            rows.append({"prm": prm, "benchmark": bench, "metric": f"{col}-maj", "n": n_val,
                         "accuracy": d["diff"], "ci_low": lo, "ci_high": hi})
    return rows
