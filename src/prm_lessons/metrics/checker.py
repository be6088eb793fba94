"""The arithmetic process checker (prm_lessons.labels.process_check) applied to tables: its step labels on a
policy's samples, its validation on the constructed ProcessBench set (exact truth), and Best-of-N with
it: the perfect-verifier ceiling (pass@N) beside checker-selected Best-of-N.

Rates are fractions with Wilson 95% intervals (analysis.wilson_interval, which gives percent).

Validation (results/tables/process_check.csv; rows subset × kind × metric, subset ``all`` pooled):
kind ``all``: ``first_error_acc`` (checker's first error == the case's label) and ``step_coverage``
(steps with a verdict / steps); ``gold``: ``false_alarm`` (any step flagged); ``answer_changing`` /
``answer_keeping`` / ``error`` (both): ``recall`` (any step flagged), ``located`` (the first flagged step
is the erroneous one), ``missed_equations_hold`` (missed, and the erroneous step writes only true
equations: a wrong operation computed consistently, which no equation check can see) and
``missed_uncheckable`` (missed, the erroneous step has nothing checkable).

Best-of-N (results/tables/process_check_bon.csv; rows benchmark × metric, over the first N samples of
every problem): ``single`` (mean accuracy of one sample), ``pass`` (any of the N correct: a perfect
verifier's ceiling), ``checker`` (the first sample whose process the checker finds flawless, i.e. no
wrong step; none flawless: sample 0; it reads no gold answer), ``flawed_among_correct`` (correct final
answer, a step flagged: lesson 4 without a judge), ``unflagged_among_wrong`` (wrong final answer, no step
flagged: what the checker cannot see), ``step_coverage`` (steps with a verdict / steps, all samples) and
``step_coverage_correct`` (the same over the correct-answer samples only: the population of
``flawed_among_correct``, whose unchecked steps count as sound).
"""
from __future__ import annotations

import pandas as pd

from ..evaluation.bias_analysis import wilson_interval
from ..labels import clean_steps
from ..labels.process_check import ResponseCheck, check_response

VALIDATION_COLUMNS = ["subset", "kind", "metric", "k", "n", "rate", "ci_low", "ci_high"]
BON_COLUMNS = ["benchmark", "metric", "n", "count", "total", "value", "ci_low", "ci_high"]
CHECK_COLUMNS = ["problem_id", "sample_idx", "n_steps", "step_verdicts", "first_error", "n_checkable", "wrong"]
KINDS = ("answer_changing", "answer_keeping")


def _verdict_code(v: bool | None) -> int:
    """Step verdicts as stored: 1 right, 0 wrong, -1 nothing checkable."""
    return -1 if v is None else int(v)


def check_samples(samples: pd.DataFrame) -> pd.DataFrame:
    """One row per response: the checker's step verdicts (1 / 0 / -1 unchecked), first error (-1: none),
    steps with a verdict and the first wrong step's false statements."""
    rows = []
    for r in samples.itertuples():
        steps = clean_steps(r.steps)
        chk = check_response(steps)
        fe = chk.first_error
        rows.append({"problem_id": r.problem_id, "sample_idx": int(r.sample_idx), "n_steps": len(steps),
                     "step_verdicts": [_verdict_code(v) for v in chk.verdicts], "first_error": fe,
                     "n_checkable": chk.n_checkable, "wrong": list(chk.steps[fe].wrong) if fe >= 0 else []})
    return pd.DataFrame(rows, columns=CHECK_COLUMNS)


def _rate(k: int, n: int) -> dict:
    lo, hi = wilson_interval(k, n)
    return {"k": int(k), "n": int(n), "rate": k / n if n else float("nan"), "ci_low": lo / 100, "ci_high": hi / 100}


def case_kind(label: int, final_answer_correct: bool) -> str:
    """gold / answer_changing / answer_keeping: the constructed case's truth."""
    if int(label) == -1:
        return "gold"
    return "answer_keeping" if bool(final_answer_correct) else "answer_changing"


def validation(cases: pd.DataFrame) -> pd.DataFrame:
    """The checker against the exact labels of constructed ProcessBench cases (columns: module docstring)."""
    need = [c for c in ("id", "subset", "steps", "label", "final_answer_correct") if c not in cases.columns]
    if need:
        raise ValueError(f"ProcessBench cases lack column(s) {need}")
    recs = []
    for r in cases.itertuples():
        steps = [str(s) for s in r.steps]
        chk: ResponseCheck = check_response(steps)
        label = int(r.label)
        err_verdict = chk.verdicts[label] if 0 <= label < len(steps) else None
        recs.append({"subset": str(r.subset), "kind": case_kind(label, r.final_answer_correct), "label": label,
                     "pred": chk.first_error, "n_steps": len(steps), "n_checkable": chk.n_checkable,
                     "err_verdict": err_verdict})
    df = pd.DataFrame(recs)
    rows = []
    groups = [(s, g) for s, g in df.groupby("subset", sort=True)] + ([("all", df)] if len(df) else [])
    for subset, g in groups:
        def add(kind, metric, k, n):
            rows.append({"subset": subset, "kind": kind, "metric": metric, **_rate(k, n)})
        add("all", "first_error_acc", int((g["pred"] == g["label"]).sum()), len(g))
        add("all", "step_coverage", int(g["n_checkable"].sum()), int(g["n_steps"].sum()))
        gold = g[g["kind"] == "gold"]
        add("gold", "false_alarm", int((gold["pred"] != -1).sum()), len(gold))
        for kind in KINDS + ("error",):
            e = g[g["kind"] != "gold"] if kind == "error" else g[g["kind"] == kind]
            missed = e[e["pred"] == -1]
            add(kind, "recall", int((e["pred"] != -1).sum()), len(e))
            add(kind, "located", int((e["pred"] == e["label"]).sum()), len(e))
            add(kind, "missed_equations_hold", int((missed["err_verdict"] == True).sum()), len(e))  # noqa: E712
            add(kind, "missed_uncheckable", int(missed["err_verdict"].isna().sum()), len(e))
    return pd.DataFrame(rows, columns=VALIDATION_COLUMNS)


def bon(samples: pd.DataFrame, checks: pd.DataFrame, benchmark: str, n: int | None = None) -> pd.DataFrame:
    """Best-of-N with the checker on one benchmark's graded samples (rows: module docstring). ``n``: the
    first n samples of each problem (None: all)."""
    need = [c for c in ("problem_id", "sample_idx", "correct") if c not in samples.columns]
    if need:
        raise ValueError(f"benchmark '{benchmark}': samples lack {need}")
    s = samples[["problem_id", "sample_idx", "correct"]].copy()
    if n is not None:
        s = s[s["sample_idx"] < int(n)]
    m = s.merge(checks[["problem_id", "sample_idx", "first_error", "n_steps", "n_checkable"]],
                on=["problem_id", "sample_idx"], how="left", validate="one_to_one")
    if m["first_error"].isna().any():
        ids = m.loc[m["first_error"].isna(), "problem_id"].head(3).tolist()
        raise ValueError(f"benchmark '{benchmark}': no checker verdict for responses of {ids}")
    m["correct"] = m["correct"].fillna(False).astype(bool)
    m["flagged"] = m["first_error"].astype(int) != -1
    m = m.sort_values(["problem_id", "sample_idx"])
    per = m.groupby("problem_id", sort=True)
    passed = per["correct"].any()
    chosen = per.apply(lambda g: bool(g.loc[~g["flagged"], "correct"].iloc[0]) if (~g["flagged"]).any()
                       else bool(g["correct"].iloc[0]), include_groups=False)
    n_eff = int(per.size().max()) if len(m) else 0
    correct, wrong = m[m["correct"]], m[~m["correct"]]
    rows = [("single", int(m["correct"].sum()), len(m)),
            ("pass", int(passed.sum()), len(passed)),
            ("checker", int(chosen.sum()), len(chosen)),
            ("flawed_among_correct", int(correct["flagged"].sum()), len(correct)),
            ("unflagged_among_wrong", int((~wrong["flagged"]).sum()), len(wrong)),
            ("step_coverage", int(m["n_checkable"].sum()), int(m["n_steps"].sum())),
            ("step_coverage_correct", int(correct["n_checkable"].sum()), int(correct["n_steps"].sum()))]
    out = []
    for metric, k, tot in rows:
        r = _rate(k, tot)
        out.append({"benchmark": benchmark, "metric": metric, "n": n_eff, "count": r["k"], "total": r["n"],
                    "value": r["rate"], "ci_low": r["ci_low"], "ci_high": r["ci_high"]})
    return pd.DataFrame(out, columns=BON_COLUMNS)
