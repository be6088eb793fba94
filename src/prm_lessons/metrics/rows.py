"""Input checks: Best-of-N rows (check_bon_rows) and ProcessBench inputs (check_processbench_inputs,
check_threshold); InputError names every bad row or id.
"""
from __future__ import annotations

import json
import math
import numbers
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import InputError, as_bool01, as_int, is_bool, json_type
from ..fields import id_text_problem

BON_COLUMNS = ["benchmark", "problem_id", "sample_idx", "pred", "correct", "step_scores"]
# the row of the mean over the benchmarks in the metrics and their tables (a config name cannot be it:
# config.names.RESERVED_NAMES; a job does not import the config package)
AVERAGE = "average"


def show_value(v, limit: int = 60) -> str:
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
        return f"is a boolean ({show_value(x)})"
    if x is None:
        return "is null"
    if isinstance(x, numbers.Real):
        try:
            f = float(x)
        except OverflowError:
            return f"{show_value(x)} is too large for a float"
        if finite and not math.isfinite(f):
            return "is NaN" if math.isnan(f) else f"is {f}"
        return None
    if isinstance(x, str):
        return f"is a string ({show_value(x)}), not a number"
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
        return f"{what} must be a list of numbers, got a JSON {json_type(s)} ({show_value(s)})"
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
        return f"is a boolean ({show_value(v)})"
    if isinstance(v, str):  # the ids' rule (fields): not blank, no control or format character
        return id_text_problem(v)
    if as_int(v) is not None:
        return None
    return f"is a JSON {json_type(v)} ({show_value(v)}), not a string or an integer"


def _correct_value(v) -> tuple[bool | None, str | None]:
    """`correct` as a bool: a boolean, or a number equal to 0 or 1 (1.0 too: pandas stores integers
    beside a missing value as floats). Anything else is an error: a string ("False" would be truthy),
    null/NaN (ungraded), 2, a list."""
    if _missing(v):
        return None, "correct is null (an ungraded response)"
    if (c := as_bool01(v)) is not None:
        return c, None
    if isinstance(v, numbers.Real):
        return None, f"correct is {show_value(v)}; it must be true/false or 0/1"
    if isinstance(v, str):
        return None, f"correct is the string {show_value(v)}; it must be the JSON boolean true/false (or 0/1)"
    return None, f"correct is a JSON {json_type(v)}; it must be true/false or 0/1"


def _pred_problem(v) -> str | None:
    if _missing(v) or isinstance(v, str):
        return None
    if is_bool(v):
        return f"pred is a boolean ({show_value(v)}); it must be the answer text or null"
    if isinstance(v, numbers.Real):
        return None if math.isfinite(float(v)) else f"pred is {show_value(v)}; it must be the answer text or null"
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
        label = (f"row {r + 1} (" + ", ".join(f"{k}={show_value(v, 30)}" for k, v in
                 (("benchmark", b), ("problem_id", p), ("sample_idx", si)) if k in cols) + ")")
        for col, v in (("benchmark", b), ("problem_id", p)):
            if col in cols and (why := _key_problem(v)):
                problems.append(f"{label}: {col} {why}")
        if "benchmark" in cols and str(b) == AVERAGE:
            problems.append(f"{label}: benchmark {b!r} is the name of the mean over the benchmarks")
        if "sample_idx" in cols:
            i = as_int(si)
            if i is None or i < 0:
                problems.append(f"{label}: sample_idx {show_value(si)} is not an integer ≥ 0")
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


def prediction_value(v) -> tuple[int | None, str | None]:
    """A first-error prediction: null (unparsable, counted wrong) or an integer ≥ −1 (an integral float
    too); booleans, strings, fractions, NaN are errors. The upper bound needs the case (check_processbench_inputs)."""
    if v is None:
        return None, None
    if is_bool(v):
        return None, f"prediction {show_value(v)} is a boolean, not a step index"
    p = as_int(v)
    if p is None:
        return None, (f"prediction {show_value(v)} is not an integer" if isinstance(v, (str, numbers.Real))
                      else f"prediction is a JSON {json_type(v)} ({show_value(v)}), not an integer")
    if p < -1:
        return None, f"prediction {p} < -1 (-1 = no error)"
    return p, None




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
    problems = processbench_input_problems(cases, preds, scores, truncated_ok, what)
    if problems:
        raise InputError(problems)


def processbench_input_problems(cases: pd.DataFrame, preds: dict, scores: dict, truncated_ok: bool = False,
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
        q, why = prediction_value(p)
        if not why and n_steps is not None and q > n_steps[i] - 1:
            why = (f"prediction {q} is past the last step (the case has {n_steps[i]} step(s): "
                   f"predictions -1..{n_steps[i] - 1})")
        if why:
            problems.append(f"{what}id '{i}': {why}")
    return problems
