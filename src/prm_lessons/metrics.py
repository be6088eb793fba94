"""Evaluation metrics: Best-of-N (prm@N per aggregation, maj@N, pass@N, orm@N) and the official
ProcessBench metric, with bootstrap confidence intervals (CLI: `prm-lessons eval {bon,processbench}`,
in prm_lessons.cli).

Definitions (docs/architecture.md "Evaluation outputs"; paper_reference §1.6–1.7, §3.4–3.5):

Best-of-N, per problem over its first N responses (by sample_idx):
- response score = aggregation of its step scores: product (the paper's default), min, last, mean;
  a response without a finite score (no step scores, an empty list, NaN or ±inf) is never picked;
- prm@N (`prm_<agg>`) = correctness of the highest-scoring response; ties → lowest sample_idx; a
  problem none of whose responses has a finite score counts as wrong and is reported (`unscored`,
  `n_unscored` in bon_metrics);
- orm@N (`orm`) = the same with one outcome score per response (an ORM's single "step" score);
- maj@N (`maj`) = correctness of the first response carrying the most frequent answer; ties between
  equally frequent answers → the answer that appears first (as Qwen2.5-Math `rm_maj_eval.py`, whose
  Counter.most_common keeps first-seen order). Answers are grouped by `maj_grouping`:
  `harness` (the Qwen2.5-Math harness's: its `strip_string` form of the answer, prm_lessons.answer_key,
  and a response without an answer votes for the empty answer, as rm_maj_eval.py counts it; the paper
  config's), `exact` (the string as is), `normalized` (whitespace removed, surrounding $ and a trailing
  period stripped, lower-cased) or `math_verify` (a response joins the first earlier group whose
  representative math-verify judges equivalent, as the harness's `use_symbol=True`; each comparison in
  a grading worker killed after a timeout). Except under `harness`, responses without an answer (pred
  null/empty) do not vote; a problem whose responses all lack an answer counts as wrong (under
  `harness`, an empty majority picks a response without an answer, which is wrong);
- pass@N (`pass`) = any of the N responses correct.
Rows are validated first (check_bon_rows): `correct` must be a boolean or 0/1, never a string.
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
import json
import logging
import math
import numbers
import re
from collections import Counter
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from .answer_key import KEEP_UNITS, harness_key
from .errors import InputError, as_bool01, as_int, is_bool, json_type
from .grading import pool as grading

log = logging.getLogger(__name__)

AGGREGATIONS = ("product", "min", "last", "mean")
MAJ_GROUPINGS = ("harness", "exact", "normalized", "math_verify")


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


def _winner(keys: Sequence) -> int | None:
    """Index of the first response of the most voted group (ties → the group seen first); None when no
    response has an answer."""
    votes = [k for k in keys if k is not None]
    if not votes:
        return None
    winner = Counter(votes).most_common(1)[0][0]  # Counter keeps first-seen order among equal counts
    return list(keys).index(winner)


def vote_keys(pred_lists: Sequence[Sequence], grouping: str = "normalized", timeout_s: float = 5.0,
              workers: int = 2, pool: "grading.GradingPool | None" = None,
              keep_units: Sequence[bool] | bool = False) -> tuple[list[list], dict]:
    """Group key of every answer of every problem (one list of preds per problem; None = no vote) and
    {"answers", "comparisons", "timeouts", "errors"} of the math-verify parses and comparisons (all 0 for the string
    groupings). `math_verify` runs every comparison in a grading worker killed after `timeout_s`
    (math_verify_groups). `keep_units` (per problem, or one for all): the harness keeps units in the
    answers of some benchmarks (answer_key.KEEP_UNITS); only the `harness` grouping reads it."""
    if grouping not in MAJ_GROUPINGS:
        raise ValueError(f"unknown maj_grouping '{grouping}' (allowed: {', '.join(MAJ_GROUPINGS)})")
    if grouping == "harness":
        keep = [keep_units] * len(pred_lists) if isinstance(keep_units, bool) else list(keep_units)
        return ([[harness_key(p, skip_unit=k) for p in preds] for preds, k in zip(pred_lists, keep)],
                {"answers": 0, "comparisons": 0, "timeouts": 0, "errors": 0})
    if grouping == "math_verify":
        return math_verify_groups(pred_lists, timeout_s=timeout_s, workers=workers, pool=pool)
    keyf = normalize_answer if grouping == "normalized" else _exact_key
    return [[keyf(p) for p in preds] for preds in pred_lists], {"answers": 0, "comparisons": 0, "timeouts": 0, "errors": 0}


def majority_index(preds: Sequence, grouping: str = "normalized", timeout_s: float = 5.0) -> int | None:
    """Index of the first response carrying the most frequent answer (ties → the answer seen first);
    None when no response has an answer. `math_verify` compares in the process-wide grading worker."""
    pool = grading.shared_pool() if grouping == "math_verify" else None
    keys, _ = vote_keys([list(preds)], grouping, timeout_s=timeout_s, pool=pool)
    return _winner(keys[0])


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
        winner = _winner(k)
        per_problem.append({"pass": bool(g["correct"].any()),
                            "maj": winner is not None and bool(g["correct"].iloc[winner]),
                            "n": len(g), "mean_acc": float(g["correct"].mean())})
    pp = pd.DataFrame(per_problem, columns=["pass", "maj", "n", "mean_acc"])
    empty = len(pp) == 0
    return {"n_problems": len(pp), "N": 0 if empty else int(pp["n"].max()),
            **{k: float("nan") if empty else float(pp[k].mean()) for k in ("pass", "maj", "mean_acc")}}


def math_verify_groups(pred_lists: Sequence[Sequence], timeout_s: float = 5.0, workers: int = 2,
                       pool: "grading.GradingPool | None" = None) -> tuple[list[list], dict]:
    """Group ids by math-verify equivalence to each group's first member (harness use_symbol=True), for
    many problems at once: a response joins the first earlier group whose representative math-verify
    judges equivalent (grading._equivalent), else starts a group. Identical answer strings always share
    a group; an answer math-verify cannot parse equals no other answer.

    Bounded: every parse and comparison runs in a grading worker process killed after `timeout_s`, so a
    hostile answer (a SymPy power tower, a huge factorial) costs at most one parse timeout, after which
    it counts as unparsable; a comparison that times out or fails counts as not equivalent. First each
    distinct answer is parsed once (all problems in one batch); then the problems advance together,
    each round comparing the next new answer of every problem with its groups' parsable representatives
    in one batch. Returns the keys per problem and {"answers", "comparisons", "timeouts", "errors"}."""
    keys = [[None] * len(preds) for preds in pred_lists]
    todo = [[(j, str(p)) for j, p in enumerate(preds) if _exact_key(p) is not None] for preds in pred_lists]
    distinct = sorted({t for items in todo for _, t in items})
    stats = {"answers": len(distinct), "comparisons": 0, "timeouts": 0, "errors": 0}
    own = None
    if pool is None and distinct:
        own = grading.GradingPool(min(workers, len(distinct)))
    try:
        parsed = grading.parses_many(distinct, timeout_s=timeout_s, pool=pool or own)
        parsable = {t: r.correct for t, r in zip(distinct, parsed)}
        for r in parsed:
            stats["timeouts"] += r.status == "timeout"
            stats["errors"] += r.status == "error"
        reps: list[list[str]] = [[] for _ in pred_lists]  # representative text of each group, by group id
        memo: list[dict] = [{} for _ in pred_lists]  # answer text -> group id
        pos = [0] * len(pred_lists)
        while True:
            pending = []  # (problem, response index, text, group ids to compare with)
            for q in range(len(pred_lists)):
                while pos[q] < len(todo[q]):
                    j, text = todo[q][pos[q]]
                    pos[q] += 1
                    if text in memo[q]:
                        keys[q][j] = memo[q][text]
                        continue
                    cands = [g for g, rep in enumerate(reps[q]) if parsable[rep]] if parsable[text] else []
                    if cands:
                        pending.append((q, j, text, cands))
                        break
                    memo[q][text] = keys[q][j] = len(reps[q])
                    reps[q].append(text)
            if not pending:
                break
            pairs = [(reps[q][g], text) for q, _, text, cands in pending for g in cands]
            results = grading.equivalent_many(pairs, timeout_s=timeout_s, pool=pool or own)
            stats["comparisons"] += len(results)
            stats["timeouts"] += sum(r.status == "timeout" for r in results)
            stats["errors"] += sum(r.status == "error" for r in results)
            k = 0
            for q, j, text, cands in pending:
                same = [g for g, r in zip(cands, results[k:k + len(cands)]) if r.correct]
                k += len(cands)
                gid = same[0] if same else len(reps[q])
                if not same:
                    reps[q].append(text)
                memo[q][text] = keys[q][j] = gid
    finally:
        if own is not None:
            own.close()
    return keys, stats


BON_COLUMNS = ["benchmark", "problem_id", "sample_idx", "pred", "correct", "step_scores"]


def _show(v, limit: int = 60) -> str:
    """A value as a message shows it: strings quoted, numbers plain, JSON words (true, null, NaN)."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, str):
        text = repr(v)
    else:
        try:
            text = json.dumps(v.tolist() if isinstance(v, np.ndarray) else v, default=str, allow_nan=True)
        except (TypeError, ValueError, RecursionError):
            text = repr(v)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _missing(v) -> bool:
    """null, or the NaN pandas puts in place of a missing value."""
    return v is None or (isinstance(v, (float, np.floating)) and math.isnan(v))


def _element_problem(x, finite: bool) -> str | None:
    """Why a step score is not one (None when it is): a real number, NaN/±inf only when not `finite`."""
    if is_bool(x):
        return f"is a boolean ({_show(x)})"
    if x is None:
        return "is null"
    if isinstance(x, numbers.Real):
        try:
            f = float(x)
        except OverflowError:
            return f"{_show(x)} is too large for a float"
        if finite and not math.isfinite(f):
            return "is NaN" if math.isnan(f) else f"is {f}"
        return None
    if isinstance(x, str):
        return f"is a string ({_show(x)}), not a number"
    return f"is a JSON {json_type(x)}, not a number"


def score_list_problem(s, finite: bool = True, allow_empty: bool = False, what: str = "step_scores") -> str | None:
    """Why `s` is not a list of step scores (None when it is): a list (tuple, 1-D array) of real numbers,
    finite ones only when `finite`, non-empty unless `allow_empty`. Names the first bad element."""
    if isinstance(s, np.ndarray):
        if s.ndim != 1:
            return f"{what} must be a list of numbers, got a {s.ndim}-D array"
        if s.dtype.kind in "iu" or (s.dtype.kind == "f" and (not finite or np.isfinite(s).all())):
            return None if (len(s) or allow_empty) else f"{what} is empty"
        s = s.tolist()
    if not isinstance(s, (list, tuple)):
        return f"{what} must be a list of numbers, got a JSON {json_type(s)} ({_show(s)})"
    if not s and not allow_empty:
        return f"{what} is empty"
    bad = [(k, why) for k, x in enumerate(s) if (why := _element_problem(x, finite))]
    if not bad:
        return None
    k, why = bad[0]
    return f"{what}[{k}] {why}" + (f" ({len(bad) - 1} more bad element(s))" if len(bad) > 1 else "")


def _key_problem(v) -> str | None:
    if _missing(v):
        return "is null"
    if is_bool(v):
        return f"is a boolean ({_show(v)})"
    if isinstance(v, str):
        return None if v.strip() else "is empty"
    if as_int(v) is not None:
        return None
    return f"is a JSON {json_type(v)} ({_show(v)}), not a string or an integer"


def _correct_value(v) -> tuple[bool | None, str | None]:
    """`correct` as a bool: a boolean, or a number equal to 0 or 1 (1.0 too: pandas stores integers
    beside a missing value as floats). Anything else is an error: a string ("False" would be truthy),
    null/NaN (ungraded), 2, a list."""
    if _missing(v):
        return None, "correct is null (an ungraded response)"
    if (c := as_bool01(v)) is not None:
        return c, None
    if isinstance(v, numbers.Real):
        return None, f"correct is {_show(v)}; it must be true/false or 0/1"
    if isinstance(v, str):
        return None, f"correct is the string {_show(v)}; it must be the JSON boolean true/false (or 0/1)"
    return None, f"correct is a JSON {json_type(v)}; it must be true/false or 0/1"


def _pred_problem(v) -> str | None:
    if _missing(v) or isinstance(v, str):
        return None
    if is_bool(v):
        return f"pred is a boolean ({_show(v)}); it must be the answer text or null"
    if isinstance(v, numbers.Real):
        return None if math.isfinite(float(v)) else f"pred is {_show(v)}; it must be the answer text or null"
    return f"pred is a JSON {json_type(v)}; it must be the answer text or null"


def _orm_problem(v) -> str | None:
    if _missing(v) or (isinstance(v, (list, tuple, np.ndarray)) and len(v) == 0):
        return None
    if isinstance(v, (list, tuple, np.ndarray)):
        why = _element_problem(v[0], finite=False)
        return f"orm score [0] {why}" if why else None
    why = _element_problem(v, finite=False)
    return f"orm score {why}" if why else None


def check_bon_rows(df: pd.DataFrame, aggregations: Sequence[str] = (), orm_column: str | None = None) -> pd.DataFrame:
    """Every Best-of-N row checked, all problems listed (InputError, one line per problem, naming the
    row's position, 1-based, and its benchmark / problem_id / sample_idx):
    benchmark and problem_id a non-empty string or an integer; sample_idx an integer ≥ 0; `correct` a
    boolean or a number equal to 0 or 1 (the strings "False" and "yes" are errors, as are null/NaN);
    `pred` text, a finite number or null/NaN (no answer); with aggregations, `step_scores` null or a list
    of real numbers (NaN and ±inf allowed: such a response has no finite score, see bon_problem_table;
    null elements, strings and booleans are errors); `orm_column` null, a number or a list of them.
    Returns a copy with `correct` as bool, sample_idx as int, benchmark as text (problem ids too when
    their types are mixed), missing step scores as None. Missing columns are left to the caller."""
    df = df.reset_index(drop=True)
    cols = set(df.columns)
    problems: list[str] = []
    have = {c: df[c].tolist() if c in cols else [None] * len(df) for c in
            ("benchmark", "problem_id", "sample_idx", "correct", "pred", "step_scores")}
    correct_out = []
    for r in range(len(df)):
        b, p, si = have["benchmark"][r], have["problem_id"][r], have["sample_idx"][r]
        label = (f"row {r + 1} (" + ", ".join(f"{k}={_show(v, 30)}" for k, v in
                 (("benchmark", b), ("problem_id", p), ("sample_idx", si)) if k in cols) + ")")
        for col, v in (("benchmark", b), ("problem_id", p)):
            if col in cols and (why := _key_problem(v)):
                problems.append(f"{label}: {col} {why}")
        if "sample_idx" in cols:
            i = as_int(si)
            if i is None or i < 0:
                problems.append(f"{label}: sample_idx {_show(si)} is not an integer ≥ 0")
        if "correct" in cols:
            c, why = _correct_value(have["correct"][r])
            correct_out.append(c)
            if why:
                problems.append(f"{label}: {why}")
        if "pred" in cols and (why := _pred_problem(have["pred"][r])):
            problems.append(f"{label}: {why}")
        if aggregations and "step_scores" in cols:
            s = have["step_scores"][r]
            if not _missing(s) and (why := score_list_problem(s, finite=False, allow_empty=True)):
                problems.append(f"{label}: {why}")
        if orm_column and orm_column in cols and (why := _orm_problem(df[orm_column].iloc[r])):
            problems.append(f"{label}: {why}")
    if problems:
        raise InputError(problems)
    df = df.copy()
    if "correct" in cols:
        df["correct"] = pd.Series(correct_out, index=df.index, dtype=bool)
    if "sample_idx" in cols:
        df["sample_idx"] = [as_int(v) for v in df["sample_idx"]]
    if "benchmark" in cols:
        df["benchmark"] = [str(v) for v in df["benchmark"]]
    if "problem_id" in cols:
        vals = df["problem_id"].tolist()
        if not all(isinstance(v, str) for v in vals):  # integers (maybe stored as floats), or mixed types
            mixed = any(isinstance(v, str) for v in vals)
            df["problem_id"] = [v if isinstance(v, str) else (str(as_int(v)) if mixed else as_int(v))
                                for v in vals]
    if "step_scores" in cols:
        df["step_scores"] = [None if _missing(v) else v for v in df["step_scores"]]
    if orm_column and orm_column in cols:
        df[orm_column] = [None if _missing(v) else v for v in df[orm_column]]
    return df


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
                     f"{_show(own)}); Best-of-{n} is evaluated on the first {n} samples of each problem")
    if lines:
        raise ValueError("\n".join(lines[:10]) + (f"\n… and {len(lines) - 10} more" if len(lines) > 10 else ""))
    return part


def _best_or_none(vals: Sequence[float]) -> int | None:
    """best_index over the finite scores; None when no response has a finite score."""
    vals = [v if v is not None and math.isfinite(v) else -math.inf for v in vals]
    return None if all(v == -math.inf for v in vals) else best_index(vals)


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
        mi = _winner(keys_all[k])
        row["maj"] = float(correct[mi]) if mi is not None else 0.0
        row["maj_sample_idx"] = sidx[mi] if mi is not None else None
        if aggregations:
            scores_list = g["step_scores"].tolist()
            for a in aggregations:
                with np.errstate(over="ignore", invalid="ignore"):  # inf / NaN scores: no finite score
                    bi = _best_or_none([aggregate(s, a) for s in scores_list])
                row[f"prm_{a}"] = float(correct[bi]) if bi is not None else 0.0
                row[f"prm_{a}_sample_idx"] = sidx[bi] if bi is not None else None
        if orm_column:
            bi = _best_or_none([_orm_value(v) for v in g[orm_column].tolist()])
            row[orm_name] = float(correct[bi]) if bi is not None else 0.0
            row[f"{orm_name}_sample_idx"] = sidx[bi] if bi is not None else None
        out.append(row)
    table = pd.DataFrame(out)
    table.attrs["maj_comparisons"] = stats
    return table, n_by_bench


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
    return {"benchmarks": benches, "average": avg, "vs_maj": vs_maj, "unscored": unscored,
            "n_unscored": n_unscored, "maj_comparisons": dict(probs.attrs.get("maj_comparisons", {})),
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
                             "n_unparsed", "threshold", "delta_f1_structure", "delta_ci_low", "delta_ci_high",
                             "setting"]


def processbench_long_rows(metrics: dict, prm: str) -> list[dict]:
    """Rows of results/tables/processbench.csv, columns PROCESSBENCH_LONG_COLUMNS (subset 'average':
    f1 = average_f1, accuracies = the unweighted means of the subset accuracies, n = all cases).
    threshold: the number used, 'a|b' for the two cross-fitted fold thresholds, None for critics.
    delta_f1_structure / delta_ci_low / delta_ci_high: metrics["vs_structure"] (paired bootstrap of
    this average F1 minus the structure-only baseline's), on the 'average' row only; NaN elsewhere.
    setting: what a critic row ran with (metrics["setting"]); None for PRMs and baselines."""
    nan = float("nan")
    setting = metrics.get("setting")
    thr = _threshold_cell(metrics.get("threshold"))
    rows = []
    for name, s in metrics["subsets"].items():
        ci = s.get("ci", {}).get("f1", [nan, nan])
        rows.append({"prm": prm, "subset": name, "n": s["n"], "error_acc": s["error_acc"],
                     "correct_acc": s["correct_acc"], "f1": s["f1"], "f1_ci_low": ci[0], "f1_ci_high": ci[1],
                     "n_unparsed": s.get("n_unparsed", 0), "threshold": thr,
                     "delta_f1_structure": nan, "delta_ci_low": nan, "delta_ci_high": nan, "setting": setting})
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
                 "delta_ci_high": float(dci[1]) if dci[1] is not None else nan, "setting": setting})
    return rows


def check_threshold(threshold) -> float:
    """A fixed ProcessBench threshold as a float: a finite number (a numeric string too); NaN, ±inf,
    booleans and other strings are errors."""
    if not is_bool(threshold) and isinstance(threshold, (numbers.Real, str)):
        try:
            t = float(threshold)
        except ValueError:
            t = math.nan
        if math.isfinite(t):
            return t
    raise ValueError(f"threshold must be a finite number (or 'tune'), got {threshold!r}")


def _prediction_value(v) -> tuple[int | None, str | None]:
    """A first-error prediction: null (unparsable, counted wrong) or an integer ≥ −1 (an integral float
    too); booleans, strings, fractions, NaN are errors. The upper bound needs the case (check_processbench_inputs)."""
    if v is None:
        return None, None
    if is_bool(v):
        return None, f"prediction {_show(v)} is a boolean, not a step index"
    p = as_int(v)
    if p is None:
        return None, (f"prediction {_show(v)} is not an integer" if isinstance(v, (str, numbers.Real))
                      else f"prediction is a JSON {json_type(v)} ({_show(v)}), not an integer")
    if p < -1:
        return None, f"prediction {p} < -1 (-1 = no error)"
    return p, None


def predictions_from_rows(rows: Iterable[dict], threshold: float,
                          cases: pd.DataFrame | None = None) -> tuple[dict, dict]:
    """{"id", "prediction"} or {"id", "step_scores"} rows → (predictions by id, step_scores by id).
    Every row is checked and every problem listed (InputError, naming the row or the id): a row that is
    not an object or has no usable id, a duplicate id, both or neither of prediction / step_scores, a
    prediction that is not null or an integer ≥ −1 (booleans, strings, 1.9 are errors), step_scores that
    are not a non-empty list of finite numbers (null, NaN, ±inf, strings, booleans are errors). A
    `threshold` that is not a finite number is an error. With `cases`, the predictions and score lists
    are also checked against the cases' numbers of steps (check_processbench_inputs) and those problems
    are listed with the others (evaluate_processbench checks them anyway)."""
    threshold = check_threshold(threshold)
    preds, scores, seen, problems = {}, {}, {}, []
    for k, r in enumerate(rows):
        if not isinstance(r, dict):
            problems.append(f"row {k + 1}: a JSON {json_type(r)}, not an object")
            continue
        if "id" not in r:
            problems.append(f"row {k + 1}: no 'id'")
            continue
        raw = r["id"]
        if is_bool(raw) or not (isinstance(raw, str) and raw.strip() or isinstance(raw, (int, np.integer))):
            problems.append(f"row {k + 1}: id {_show(raw)} is not a non-empty string or an integer")
            continue
        i = str(raw)
        if i in seen:
            problems.append(f"duplicate prediction for id '{i}' (rows {seen[i]} and {k + 1})")
            continue
        seen[i] = k + 1
        if "prediction" in r and "step_scores" in r:
            problems.append(f"id '{i}': the row has both 'prediction' and 'step_scores' (give one)")
        elif "prediction" in r:  # null = an unparsable critic answer: counted wrong, reported
            p, why = _prediction_value(r["prediction"])
            if why:
                problems.append(f"id '{i}': {why}")
            else:
                preds[i] = p
        elif "step_scores" in r:
            why = score_list_problem(r["step_scores"], finite=True)
            if why:
                problems.append(f"id '{i}': {why}")
            else:
                s = [float(x) for x in r["step_scores"]]
                scores[i] = s
                preds[i] = first_error(s, threshold)
        else:
            problems.append(f"id '{i}': row needs 'prediction' or 'step_scores'")
    if cases is not None:
        problems += _processbench_input_problems(cases, preds, scores)
    if problems:
        raise InputError(problems)
    return preds, scores


def _case_steps(cases: pd.DataFrame) -> dict | None:
    """{id: number of steps} from the cases' `steps` (or `n_steps`); None when they have neither."""
    if "steps" in cases.columns:
        return {str(i): (0 if s is None or (isinstance(s, float) and math.isnan(s)) else len(s))
                for i, s in zip(cases["id"], cases["steps"])}
    if "n_steps" in cases.columns:
        return {str(i): int(n) for i, n in zip(cases["id"], cases["n_steps"])}
    return None


def check_processbench_inputs(cases: pd.DataFrame, preds: dict, scores: dict, truncated_ok: bool = False,
                              what: str = "") -> None:
    """Predictions and step scores checked against the cases (ids of other cases are left to
    processbench_metrics, which names unknown and missing ids); InputError with one line per id:
    step scores not a list of finite real numbers (NaN, ±inf, null, strings, booleans), or whose length
    differs from the case's number of steps (fewer only allowed with `truncated_ok`: a PRM truncated at
    its max length, which the workflow records as n_truncated); a prediction (of an id without bad
    scores) not null or an integer in [−1, n_steps − 1]. Without `steps`/`n_steps` in the cases only
    the lower bound is checked."""
    problems = _processbench_input_problems(cases, preds, scores, truncated_ok, what)
    if problems:
        raise InputError(problems)


def _processbench_input_problems(cases: pd.DataFrame, preds: dict, scores: dict, truncated_ok: bool = False,
                                 what: str = "") -> list[str]:
    n_steps = _case_steps(cases)
    known = {str(i) for i in cases["id"]}
    problems, bad = [], set()
    for i, s in scores.items():
        i = str(i)
        if i not in known:
            continue
        why = score_list_problem(s, finite=True, allow_empty=truncated_ok)
        if not why and n_steps is not None:
            n, m = n_steps[i], len(s)
            if m > n or (m < n and not truncated_ok):
                why = f"{m} step score(s) for a case of {n} step(s) (one score per step)"
        if why:
            problems.append(f"{what}id '{i}': {why}")
            bad.add(i)
    for i, p in preds.items():
        i = str(i)
        if i not in known or i in bad or p is None:
            continue
        q, why = _prediction_value(p)
        if not why and n_steps is not None and q > n_steps[i] - 1:
            why = (f"prediction {q} is past the last step (the case has {n_steps[i]} step(s): "
                   f"predictions -1..{n_steps[i] - 1})")
        if why:
            problems.append(f"{what}id '{i}': {why}")
    return problems


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
                          bootstrap: int = 0, seed: int = 0, confidence: float = 0.95,
                          truncated_ok: bool = False) -> tuple[dict, pd.DataFrame]:
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
    (+ crossfit_fold_sizes when cross-fitted).

    Inputs are checked first (check_processbench_inputs: InputError naming every bad id): predictions
    in [−1, n_steps − 1], step-score lists of finite numbers with one score per step (fewer allowed
    with `truncated_ok`, for PRMs truncated at their max length); a numeric threshold must be finite."""
    extra: dict = {}
    if (dev_cases is None) != (dev_scores is None) and threshold == "tune":
        raise ValueError("a dev split needs both dev_cases and dev_scores")
    if threshold != "tune":
        threshold = check_threshold(threshold)
    if as_int(bootstrap) is None or bootstrap < 0 or isinstance(bootstrap, float):
        raise ValueError(f"bootstrap must be an integer ≥ 0 (0 = no intervals), got {bootstrap!r}")
    check_processbench_inputs(cases, preds, scores, truncated_ok)
    if threshold == "tune":
        _need_scores(cases, scores, "the evaluated cases")
        ids = [str(i) for i in cases["id"]]
        if dev_cases is not None:
            shared = sorted(set(ids) & {str(i) for i in dev_cases["id"]})
            if shared:
                raise ValueError(f"the dev split shares {len(shared)} id(s) with the evaluated cases "
                                 f"(tuning on them would score cases with a threshold fitted on themselves): "
                                 f"{', '.join(shared[:10])}" + (" …" if len(shared) > 10 else ""))
            check_processbench_inputs(dev_cases, {}, dev_scores, truncated_ok, what="dev split: ")
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
