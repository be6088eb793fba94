"""LLM critics on ProcessBench: the ProcessBench critic protocol (paper (2) §4.1, `run_eval.py`).

The prompt, the verdict parsing (last `\\boxed{}` → int) and the vote are the labels stage's
(`prm_lessons.labels.judge`, style `processbench`), so the critic rows of Table 7 and the judge labels
of Tables 3/4 come from one implementation. Greedy (n = 1, temperature 0) or a majority vote over n
samples (ties → the value seen first). Official protocol: an unparsable answer is wrong — by default
no "force the answer" continuation is made (`critics.force_answer`), the prediction is None, the
metric counts it wrong and reports the count (`n_unparsed`).

Output (one row per case, `results/critics/{judge}/processbench.parquet`): id, subset, label,
prediction (Int64; null = unparsable), parsed, status, votes, n_forced, n_truncated, tokens_generated,
verdicts.
"""
from __future__ import annotations

import pandas as pd

from .labels.judge import judge_responses


def critic_predictions(engine, cases, *, n: int = 1, temperature: float = 0.0, top_p: float = 1.0,
                       max_tokens: int = 2048, seed: int = 42, system_prompt: str | None = None,
                       template: str | None = None, force_answer: bool = False, force_truncated: bool = False):
    """Run the critic over ProcessBench cases (a `processbench` table) → per-case predictions frame."""
    rows = judge_responses(engine, cases["problem"].tolist(), [list(s) for s in cases["steps"]],
                           [str(i) for i in cases["id"]], style="processbench", n=n,
                           temperature=temperature, top_p=top_p, max_tokens=max_tokens, seed=seed,
                           template=template, system_prompt=system_prompt, force_answer=force_answer,
                           force_truncated=force_truncated)
    out = pd.DataFrame(rows)
    out.insert(0, "label", cases["label"].astype(int).values)
    out.insert(0, "subset", cases["subset"].values)
    out.insert(0, "id", cases["id"].astype(str).values)
    out = out.rename(columns={"first_error": "prediction"})
    out["prediction"] = out["prediction"].astype("Int64")
    return out
