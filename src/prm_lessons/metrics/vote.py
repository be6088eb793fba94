"""Majority voting's answer groups (maj_grouping): the harness key, the string keys, and math-verify
equivalence, each comparison in a grading worker killed after a timeout.
"""
from __future__ import annotations

from typing import Sequence

from ..grading import pool as grading
from ..grading.harness import normalise_pred
from .select import MAJ_GROUPINGS, exact_key, majority_winner, normalize_answer


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
    none = {"answers": 0, "comparisons": 0, "timeouts": 0, "errors": 0}
    if grouping == "math_verify":
        return math_verify_groups(pred_lists, timeout_s=timeout_s, workers=workers, pool=pool)
    if grouping == "harness":
        keep = [keep_units] * len(pred_lists) if isinstance(keep_units, bool) else list(keep_units)
        # the harness votes on its recorded preds (rm_maj_eval.py:83, strip=False): extracted answers that went
        # through strip_string twice (parser.py:568, :736), so two passes here too (it is not idempotent)
        return _memo_keys(pred_lists, keep, lambda p, k: normalise_pred(p, keep_units=k)), none
    keyf = normalize_answer if grouping == "normalized" else exact_key
    return _memo_keys(pred_lists, [False] * len(pred_lists), lambda p, _: keyf(p)), none


def _memo_keys(pred_lists: Sequence[Sequence], keep: Sequence[bool], keyf) -> list[list]:
    """keyf(answer, keep) of every answer, computed once per distinct (answer, keep): N samples of a
    problem mostly repeat a few answers, and the harness key's regexes dominate maj@N otherwise."""
    memo: dict = {}
    out = []
    for preds, k in zip(pred_lists, keep):
        row = []
        for p in preds:
            m = (type(p), p, k)  # typed: 1, 1.0 and True are one dict key, not one answer
            try:
                key = memo[m]
            except KeyError:
                key = memo[m] = keyf(p, k)
            except TypeError:  # an unhashable value: its key uncached (rows are checked upstream)
                key = keyf(p, k)
            row.append(key)
        out.append(row)
    return out


def majority_index(preds: Sequence, grouping: str = "normalized", timeout_s: float = 5.0) -> int | None:
    """Index of the first response carrying the most frequent answer (ties → the answer seen first);
    None when no response has an answer. `math_verify` compares in the process-wide grading worker."""
    pool = grading.shared_pool() if grouping == "math_verify" else None
    keys, _ = vote_keys([list(preds)], grouping, timeout_s=timeout_s, pool=pool)
    return majority_winner(keys[0])




def math_verify_groups(pred_lists: Sequence[Sequence], timeout_s: float = 5.0, workers: int = 2,
                       pool: "grading.GradingPool | None" = None) -> tuple[list[list], dict]:
    """Group ids by math-verify equivalence to each group's first member (harness use_symbol=True), for
    many problems at once: a response joins the first earlier group whose representative math-verify
    judges equivalent (its worker comparison, prm_lessons.grading.pool), else starts a group. Identical answer
    strings always share a group; an answer math-verify cannot parse equals no other answer.

    Bounded: every parse and comparison runs in a grading worker process killed after `timeout_s`, so a
    hostile answer (a SymPy power tower, a huge factorial) costs at most one parse timeout, after which
    it counts as unparsable; a comparison that times out or fails counts as not equivalent. First each
    distinct answer is parsed once (all problems in one batch); then the problems advance together,
    each round comparing the next new answer of every problem with its groups' parsable representatives
    in one batch. Returns the keys per problem and {"answers", "comparisons", "timeouts", "errors"}."""
    keys = [[None] * len(preds) for preds in pred_lists]
    todo = [[(j, str(p)) for j, p in enumerate(preds) if exact_key(p) is not None] for preds in pred_lists]
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
