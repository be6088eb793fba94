"""The label audit's slice: constructed solutions whose every step's truth is known exactly.

Per generator (a problem set of `audit.problems`) and per kind, `per_cell` full solutions, each from a
problem of its own:

* ``gold``: the untouched gold solution (every step correct; first error -1);
* ``error``: one injected error that changes the final answer (later steps carry the wrong value);
* ``keep``: one injected error before the last step that keeps the final answer (later steps unchanged:
  "correct answer, flawed process").

Solutions are NOT truncated after the error (MC rolls out every prefix and the judge reads the whole
solution, as ProcessBench cases are). The truth of step i is the correctness of the prefix s_0..s_i:
positive iff the solution is gold or i < error_index. Error positions spread over the valid positions
(every step for ``error``, every step but the last for ``keep``): the k-th solution of a cell
at relative depth k / per_cell. Problems whose normalised question
is an evaluation question are skipped (the audit never labels an evaluation problem), as are repeats.
"""
from __future__ import annotations

import random

import pandas as pd

from . import clean_steps
from .construction import CorruptionError, corrupt_solution
from .human import normalize_question

KINDS = ("gold", "error", "keep")
COLUMNS = ["problem_id", "sample_idx", "generator", "kind", "question", "answer", "steps", "error_index"]


def truth_labels(error_index: int, n_steps: int) -> list[int]:
    """Exact step truth: 1 where the prefix up to that step is correct (before the first error)."""
    e = int(error_index)
    return [1 if e < 0 or i < e else 0 for i in range(int(n_steps))]


def _make(kind: str, gold: list[str], answer: str, rnd: random.Random, turn: int, per_cell: int
          ) -> tuple[list[str], int]:
    if kind == "gold":
        return list(gold), -1
    n = len(gold) if kind == "error" else len(gold) - 1  # a kept answer needs a later step to restate it
    if n < 1:
        raise CorruptionError(f"a {len(gold)}-step solution has no position for a '{kind}' error")
    # the cell's k-th solution at relative depth k / per_cell: early, middle and late errors alike
    return corrupt_solution(gold, answer, rnd, keep_final_answer=kind == "keep", position=turn * n // per_cell)


def build_slice(problem_sets: dict[str, pd.DataFrame], per_cell: int, seed: int = 0,
                exclude_questions=()) -> tuple[pd.DataFrame, dict]:
    """The stratified slice (COLUMNS; sample_idx 0, problem_id unique) and per-generator counts of what
    was skipped. Deterministic for a seed; raises ValueError naming the generator when its problems do
    not fill every cell."""
    if per_cell < 1:
        raise ValueError(f"audit.per_cell must be ≥ 1, not {per_cell}")
    banned = {normalize_question(q) for q in exclude_questions if q}
    rows: list[dict] = []
    counts: dict[str, dict] = {}
    for gen, probs in problem_sets.items():
        rnd = random.Random(f"audit-{seed}-{gen}")
        order = list(range(len(probs)))
        rnd.shuffle(order)
        filled = dict.fromkeys(KINDS, 0)
        c = {"problems": len(probs), "evaluation_question": 0, "repeated_question": 0, "no_gold_steps": 0,
             "not_corruptible": 0}
        seen: set[str] = set()
        for idx in order:
            if min(filled.values()) >= per_cell:
                break
            row = probs.iloc[idx]
            q = normalize_question(row["question"])
            if q in banned:
                c["evaluation_question"] += 1
                continue
            if q in seen:
                c["repeated_question"] += 1
                continue
            gold = clean_steps(row["gold_steps"] if row["gold_steps"] is not None else [])
            if not gold:
                c["no_gold_steps"] += 1
                continue
            # the emptiest cell first; a solution that cannot take that kind tries the next
            for kind in sorted((k for k in KINDS if filled[k] < per_cell), key=lambda k: (filled[k], KINDS.index(k))):
                try:
                    steps, err = _make(kind, gold, str(row["answer"]), rnd, filled[kind], per_cell)
                except CorruptionError:
                    continue
                seen.add(q)
                filled[kind] += 1
                rows.append({"problem_id": f"{row['problem_id']}-{kind}", "sample_idx": 0, "generator": gen,
                             "kind": kind, "question": row["question"], "answer": str(row["answer"]),
                             "steps": steps, "error_index": int(err)})
                break
            else:
                c["not_corruptible"] += 1
        short = {k: per_cell - v for k, v in filled.items() if v < per_cell}
        if short:
            raise ValueError(f"audit.problems.{gen}: {len(probs)} problems fill no {per_cell} solutions per kind "
                             f"(short: {short}; skipped: {c}); raise its size")
        counts[gen] = c
    return pd.DataFrame(rows, columns=COLUMNS), counts
