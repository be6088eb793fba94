"""Consensus filtering (the paper's §3.1.3, §4.1): keep a response only where MC estimation and
LLM-as-a-judge agree on the location of the first erroneous step.

MC's first error is the first step whose hard label at ``consensus.threshold`` (default 0) is
negative, -1 when every step is positive; the judge's is its verdict. Both "no error" (-1, -1) is
agreement (the paper does not spell this out; it is the natural reading). A response without steps,
without a readable judge verdict, or whose MC label is undecided at that threshold is not kept.
The retained share is reported (the paper kept about 40% of 860k, 50% of 3M).
"""
from __future__ import annotations

import pandas as pd

from .mc import LabelError, first_error


def consensus_table(mc: pd.DataFrame, judge: pd.DataFrame, k: int, threshold: float = 0.0) -> pd.DataFrame:
    """One row per response: mc_first_error, judge_first_error, agree, reason (why not kept)."""
    j = judge.set_index(["problem_id", "sample_idx"])
    rows = []
    for r in mc.itertuples():
        key = (r.problem_id, int(r.sample_idx))
        where = f"{r.problem_id}#{int(r.sample_idx)}"
        inferred = getattr(r, "inferred", None)
        try:
            mc_fe = first_error(r.n_success, r.n_total, int(getattr(r, "k", k) or k), threshold, inferred, where)
            mc_reason = None if mc_fe is not None else "no_steps"
        except LabelError:
            mc_fe, mc_reason = None, "mc_undecided"
        if key in j.index:
            jf = j.loc[key, "first_error"]
            judge_fe = None if pd.isna(jf) else int(jf)
        else:
            judge_fe = None
        if mc_reason is not None:
            reason = mc_reason
        elif key not in j.index:
            reason = "no_judge_row"
        elif judge_fe is None:
            reason = "judge_unparsed"
        elif judge_fe != mc_fe:
            reason = "disagree"
        else:
            reason = "agree"
        rows.append({"problem_id": r.problem_id, "sample_idx": int(r.sample_idx), "mc_first_error": mc_fe,
                     "judge_first_error": judge_fe, "agree": reason == "agree", "reason": reason})
    out = pd.DataFrame(rows, columns=["problem_id", "sample_idx", "mc_first_error", "judge_first_error", "agree",
                                      "reason"])
    for c in ("mc_first_error", "judge_first_error"):
        out[c] = out[c].astype("Int64")
    return out
