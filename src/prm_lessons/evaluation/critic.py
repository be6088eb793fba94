"""LLM critics on ProcessBench: the ProcessBench critic protocol (paper (2) §4.1, `run_eval.py`).

The prompt and the generation (n samples per case, each its own request with a seed derived from
(seed, case id, sample)) are the labels stage's (`prm_lessons.labels.judge`, style `processbench`), so
the critic rows of Table 7 and the judge labels of Tables 3/4 come from one implementation. n = 1 is
greedy (temperature 0), n > 1 a majority vote. Each configured critic has its own sampling settings
(`critics.judges.<name>`, resolved by `plan.critic_specs`), a template and a parse mode:

* template `project`: the project's ProcessBench-style text (`labels.judge.PROCESSBENCH_TEMPLATE`) or
  `template_path`; `official`: ProcessBench's `critique_template.txt`, fetched at a pinned commit by rule
  `critique_template`. Either is read `.strip()`-ed and filled as `run_eval.py` fills it (`{problem}`,
  `{tagged_response}`: `<paragraph_i>` tags from 0 joined by blank lines), one user turn, no system
  message unless configured, the chat template with the generation prompt.
* parse `official` (:func:`official_prediction`): `run_eval.py` exactly: per sample the last match of
  ``\\boxed\\{([^}]*)\\}``, stripped; samples without a match drop out; the most common raw string wins
  (ties: the one seen first, `Counter.most_common`); `int()` of the winner, and a winner that is not an
  integer is no prediction (counted wrong). `lenient`: the project's reader (nested braces,
  ``\\text{}``, "paragraph 2", a majority over the parsed integers; `labels.judge.parse_verdict`).
  A prediction outside [-1, n_steps - 1] is no prediction under both (status `out_of_range`): it can
  never match a label, so the metric is the same as `run_eval.py`'s.

The forced answer (`force_answer`, off in the official protocol) is decided by the lenient reader and
appended to a critique (its start recorded per sample, `forced_at`). So a critic reads the critiques of an
earlier one with the same model and generation settings (`plan.critic_generation_sources`, rule
`critic_reparse`, :func:`apply_parse`) when it differs only in `parse`, or when it forces no answers where
that one does: the forced continuations are then cut off again.

Output (one row per case, `results/critics/{critic}/processbench.parquet`): id, subset, label,
prediction (Int64; null = no prediction), parsed, status, votes, n_forced, n_truncated,
tokens_generated, verdicts, cut, forced_at, parse.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Mapping, Sequence

import pandas as pd

from ..labels.judge import case_verdict, judge_responses, parse_verdict_detail

PARSE_MODES = ("official", "lenient")
# the columns of a critic's predictions table, in order (critic_predictions)
COLUMNS = ["id", "subset", "label", "prediction", "verdicts", "parsed", "status", "votes", "n_forced", "n_truncated",
           "tokens_generated", "cut", "forced_at", "parse"]
TEMPLATES = ("project", "official")

# ProcessBench code/run_eval.py, extract_answer
OFFICIAL_BOXED_RE = re.compile(r"\\boxed\{([^}]*)\}")


def official_extract(text: str | None) -> str | None:
    """`run_eval.py`'s extract_answer: the last ``\\boxed{...}`` without a '}' inside, stripped."""
    matches = OFFICIAL_BOXED_RE.findall(text or "")
    return matches[-1].strip() if matches else None


def _official_int(answer: str | None) -> int | None:
    try:
        return int(answer)  # as run_eval.py: int() of the string (accepts ' 2', '+2', '-1', '1_0')
    except (TypeError, ValueError):
        return None


def official_prediction(texts: Sequence[str | None], n_steps: int | None = None) -> tuple[int | None, str]:
    """(prediction, status) of one case's critiques as `run_eval.py` reads them (greedy is n = 1):
    majority over the raw extracted strings, then int(). status: ok, no_verdict (no sample has a
    box), not_integer (the winning string is not an integer), out_of_range (outside [-1, n_steps-1])."""
    answers = [a for a in (official_extract(t) for t in texts) if a is not None]
    if not answers:
        return None, "no_verdict"
    pred = _official_int(Counter(answers).most_common(1)[0][0])
    if pred is None:
        return None, "not_integer"
    if n_steps is not None and not -1 <= pred < n_steps:
        return None, "out_of_range"
    return pred, "ok"


def _parse_case(texts: Sequence[str], cut: Sequence[bool], n_steps: int, parse: str) -> tuple:
    """(prediction, status, votes) of one case under `parse`."""
    if parse == "official":
        pred, status = official_prediction(texts, n_steps)
        return pred, status, [_official_int(official_extract(t)) for t in texts]
    details = [parse_verdict_detail(t, n_steps, "processbench") for t in texts]
    pred, status = case_verdict(details, list(cut) or [False] * len(texts))
    return pred, status, [d[0] for d in details]


def unforce(df: pd.DataFrame) -> pd.DataFrame:
    """The critiques as the model wrote them: every forced continuation (`forced_at`) cut off again;
    n_forced 0, and every sample cut off at max_tokens counted in n_truncated."""
    out = df.copy()
    if "forced_at" not in out.columns:
        if int(out["n_forced"].sum()):
            raise ValueError("forced answers without `forced_at` (a critic table older than it): rerun its critic")
        return out
    out["verdicts"] = [[t[:k] if k >= 0 else t for t, k in zip(list(ts), list(ks))]
                       for ts, ks in zip(out["verdicts"], out["forced_at"])]
    out["forced_at"] = [[-1] * len(list(ks)) for ks in out["forced_at"]]
    out["n_forced"] = 0
    if "cut" in out.columns:
        out["n_truncated"] = [int(sum(bool(c) for c in cs)) for cs in out["cut"]]
    return out


def apply_parse(df: pd.DataFrame, n_steps: Mapping[str, int], parse: str, force: bool = True) -> pd.DataFrame:
    """A critic's predictions frame with prediction / parsed / status / votes read again from its
    verdicts under `parse` (cases without steps keep status no_steps); `force` False first drops the
    forced answers (:func:`unforce`). `n_steps`: case id → steps."""
    if parse not in PARSE_MODES:
        raise ValueError(f"critic parse mode must be one of {PARSE_MODES}, not {parse!r}")
    out = df.copy() if force else unforce(df)
    preds, statuses, votes = [], [], []
    cuts = out["cut"] if "cut" in out.columns else [[]] * len(out)
    for i, texts, cut, status in zip(out["id"], out["verdicts"], cuts, out["status"]):
        texts = [str(t) for t in (list(texts) if texts is not None else [])]
        p, s, v = None, status, []
        if status != "no_steps" and texts:
            p, s, v = _parse_case(texts, [bool(c) for c in (list(cut) if cut is not None else [])],
                                  int(n_steps[str(i)]), parse)
        preds.append(p)
        statuses.append(s)
        votes.append(v)
    out["prediction"] = pd.array(preds, dtype="Int64")
    out["parsed"] = out["prediction"].notna()
    out["status"] = statuses
    out["votes"] = votes
    out["parse"] = parse
    return out


def case_steps(cases: pd.DataFrame) -> dict[str, int]:
    """case id → number of steps (the range a prediction may take)."""
    return {str(i): len(list(s)) for i, s in zip(cases["id"], cases["steps"])}


def critic_predictions(engine, cases, *, n: int = 1, temperature: float = 0.0, top_p: float = 1.0,
                       top_k: int | None = None, max_tokens: int = 2048, seed: int = 42,
                       system_prompt: str | None = None, template: str | None = None, force_answer: bool = False,
                       force_truncated: bool = False, parse: str = "lenient"):
    """Run the critic over ProcessBench cases (a `processbench` table) → per-case predictions frame
    (COLUMNS; no cases: an empty frame)."""
    if not len(cases):
        return pd.DataFrame(columns=COLUMNS)
    rows = judge_responses(engine, cases["problem"].tolist(), [list(s) for s in cases["steps"]],
                           [str(i) for i in cases["id"]], style="processbench", n=n,
                           temperature=temperature, top_p=top_p, top_k=top_k, max_tokens=max_tokens, seed=seed,
                           template=template, system_prompt=system_prompt, force_answer=force_answer,
                           force_truncated=force_truncated)
    out = pd.DataFrame(rows)
    out.insert(0, "label", cases["label"].astype(int).values)
    out.insert(0, "subset", cases["subset"].values)
    out.insert(0, "id", cases["id"].astype(str).values)
    out = out.rename(columns={"first_error": "prediction"})
    return apply_parse(out, case_steps(cases), parse)
