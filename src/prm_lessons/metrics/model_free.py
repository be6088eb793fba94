"""Model-free ProcessBench baselines: they see the subset and the number of steps, never a step's text.
"""
from __future__ import annotations

import itertools
from collections import Counter
from typing import Sequence

import numpy as np
import pandas as pd

from .processbench import crossfit_folds, f1_harmonic

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
