"""The step-labelling judge scored as a ProcessBench critic: which cases it judges
(a stratified slice of the ProcessBench cases), its metrics and paired F1 difference to the structure
baseline as table rows, and the lesson-2 verdict those rows support.

Lesson 2 (LLM-as-a-judge labels vs MC labels) is only decidable where the judge that labels finds
errors better than structure alone (subset × number of steps, never a step's text): a judge at or
below that baseline produces labels no better than a rule that reads no step, so a PRM trained on
them says nothing about the judge's labels against MC's.
"""
from __future__ import annotations

import hashlib
import math

import numpy as np
import pandas as pd

from ..artifacts.published import published_row, published_value
from .processbench import evaluate_processbench, paired_f1_difference, processbench_long_rows

# the configured judge's prompt with and without the gold solution (judge.reference off / on)
SETTINGS = ("judge", "judge_reference")

COLUMNS = ["judge", "reference", "configured", "subset", "n", "error_acc", "correct_acc", "f1", "f1_ci_low",
           "f1_ci_high", "n_unparsed", "delta_f1_structure", "delta_ci_low", "delta_ci_high",
           "tokens_generated", "setting"]

# the paper's labelling judge: its row of the paper's Table 7 (published.yaml), where its ProcessBench
# average F1 as a critic is printed
PAPER_JUDGE = ("table7", "qwen25_72b_instruct")


def setting_config(judge_cfg: dict, setting: str) -> dict:
    """The `judge` section a setting runs with: the configured one with `reference` off (judge) or on
    (judge_reference); every other key as configured."""
    if setting not in SETTINGS:
        raise ValueError(f"judge ProcessBench setting must be one of {SETTINGS}, not {setting!r}")
    return {**judge_cfg, "reference": setting == "judge_reference"}


def configured_setting(judge_cfg: dict) -> str:
    """The setting that is the configured judge (the one rule `judge` labels with)."""
    return "judge_reference" if judge_cfg.get("reference") else "judge"


def _hash_order(ids) -> list:
    return sorted(ids, key=lambda i: (hashlib.sha256(str(i).encode()).hexdigest(), str(i)))


def case_slice(cases: pd.DataFrame, n: int) -> pd.DataFrame:
    """At most `n` cases, stratified: an even share per subset (the first subsets, sorted, take the
    remainder), within a subset half erroneous (label ≠ −1) and half correct; within each stratum the
    cases ordered by a SHA-256 hash of their id (independent of row order and of the judge). A stratum
    short of its share gives what it has. Rows keep the cases' order."""
    if n < 1:
        raise ValueError(f"judge.processbench_cases: {n} cases asked; the slice needs at least 1")
    subsets = sorted(map(str, cases["subset"].unique()))
    if not subsets:
        raise ValueError("judge ProcessBench slice: no cases")
    picked: set[str] = set()
    for k, sub in enumerate(subsets):
        quota = n // len(subsets) + (1 if k < n % len(subsets) else 0)
        g = cases[cases["subset"].astype(str) == sub]
        err = _hash_order(g.loc[g["label"] != -1, "id"].astype(str))
        cor = _hash_order(g.loc[g["label"] == -1, "id"].astype(str))
        n_cor = min(quota // 2, len(cor))
        n_err = min(quota - n_cor, len(err))
        n_cor = min(quota - n_err, len(cor))  # a subset short of errors fills up with correct cases
        picked |= set(err[:n_err]) | set(cor[:n_cor])
    return cases[cases["id"].astype(str).isin(picked)].reset_index(drop=True)


def case_golds(cases: pd.DataFrame, golds: pd.DataFrame) -> list[tuple]:
    """(gold_steps, answer) of every case's problem, from `golds` (problem_id, answer, gold_steps);
    a case without problem_id, or whose problem is not in `golds`, is an error naming the case ids."""
    if "problem_id" not in cases.columns:
        raise ValueError("a reference-guided judge needs the cases' problem_id (processbench.source: constructed)")
    by_id = {str(p): (g, a) for p, g, a in zip(golds["problem_id"], golds["gold_steps"], golds["answer"])}
    missing = [str(c) for c, p in zip(cases["id"], cases["problem_id"]) if str(p) not in by_id]
    if missing:
        raise ValueError(f"no gold solution for ProcessBench case(s) {', '.join(missing[:10])}"
                         + (f" … and {len(missing) - 10} more" if len(missing) > 10 else "")
                         + ": their problems are not among processbench.constructed.subsets")
    return [by_id[str(p)] for p in cases["problem_id"]]


def setting_rows(cases: pd.DataFrame, judged: pd.DataFrame, structure: dict, name: str, *, configured: bool,
                 setting: str, bootstrap: int, seed: int, confidence: float) -> tuple[list[dict], dict]:
    """Rows (COLUMNS) and metrics of one judge setting: `judged` holds id, prediction (null = no readable
    verdict, counted wrong) and tokens_generated for the cases of `cases` (the slice); `structure` the
    structure baseline's predictions by id (on at least those cases). The paired F1 difference to the
    baseline uses the same bootstrap draws (paired_f1_difference)."""
    preds = {str(i): (None if pd.isna(p) else int(p)) for i, p in zip(judged["id"], judged["prediction"])}
    base = {str(i): structure[str(i)] for i in cases["id"] if str(i) in structure}
    lacking = [str(i) for i in cases["id"] if str(i) not in base]
    if lacking:
        raise ValueError(f"the structure baseline has no prediction for case(s) {', '.join(lacking[:10])}")
    m, _ = evaluate_processbench(cases, preds, {}, bootstrap=bootstrap, seed=seed, confidence=confidence)
    m["vs_structure"] = paired_f1_difference(cases, preds, base, n_boot=bootstrap, seed=seed, confidence=confidence)
    m["setting"] = setting
    tok = (judged["tokens_generated"] if "tokens_generated" in judged.columns else pd.Series(0, index=judged.index))
    tok_by_subset = tok.groupby(judged["subset"].astype(str)).sum()
    rows = []
    for r in processbench_long_rows(m, name):
        r = {k: v for k, v in r.items() if k not in ("prm", "threshold")}
        n_tok = tok.sum() if r["subset"] == "average" else tok_by_subset.get(r["subset"], 0)
        rows.append({"judge": name, "reference": str(name == "judge_reference").lower(),
                     "configured": str(configured).lower(), **r, "tokens_generated": int(n_tok)})
    return [{c: row.get(c) for c in COLUMNS} for row in rows], m


def _fmt(x: float) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:+.3f}"


def lesson2_verdict(table: pd.DataFrame, model: str = "roles.judge") -> dict:
    """The lesson-2 verdict from results/tables/judge_processbench.csv (its `average` rows): a judge
    setting beats the structure baseline where the paired interval of its F1 difference lies above 0.
    `model`: the judge model's name, as the text shows it. Returns {"verdict": "decidable" | "undecidable",
    "best": the setting with the largest difference (None without one), "measured": the differences with
    intervals, "text": the sentence}."""
    avg = table[table["subset"].astype(str) == "average"].copy()
    if avg.empty:
        raise ValueError("lesson 2 verdict: the judge ProcessBench table has no 'average' rows")
    avg["dlt"] = pd.to_numeric(avg["delta_f1_structure"], errors="coerce")
    avg["dlo"] = pd.to_numeric(avg["delta_ci_low"], errors="coerce")
    avg["dhi"] = pd.to_numeric(avg["delta_ci_high"], errors="coerce")
    measured = "; ".join(f"{r.judge}: F1 {float(r.f1):.3f}, ΔF1 vs structure {_fmt(r.dlt)} [{_fmt(r.dlo)}, "
                         f"{_fmt(r.dhi)}] (n={int(r.n)})" for r in avg.itertuples())
    winners = avg[avg["dlo"] > 0]
    best = avg.loc[avg["dlt"].fillna(-np.inf).idxmax(), "judge"] if avg["dlt"].notna().any() else None
    if not winners.empty:
        w = winners.loc[winners["dlt"].idxmax()]
        text = (f"The labelling judge ({model}, setting '{w['judge']}') beats the structure "
                f"baseline on its ProcessBench cases (ΔF1 {_fmt(w['dlt'])}, interval "
                f"[{_fmt(w['dlo'])}, {_fmt(w['dhi'])}]): its labels carry information beyond "
                "structure, so lesson 2 (LLM-as-a-judge labels vs MC labels) is decidable at this size by "
                "training PRMs on its labels and on MC labels of the same responses.")
        return {"verdict": "decidable", "best": str(w["judge"]), "measured": measured, "text": text}
    ref = avg[avg["judge"].astype(str) == "judge_reference"]
    with_ref = ""
    if not ref.empty:
        with_ref = (" even with the gold solution in its prompt (on these constructed cases the gold steps match "
                    "every correct step word for word)")
    text = (f"Lesson 2 (LLM-as-a-judge labels vs MC labels) is undecidable at this size: no setting of the "
            f"labelling judge ({model}) beats the structure baseline on its ProcessBench cases"
            f"{with_ref} ({measured}), so "
            "its labels are not shown to say more than a rule that reads no step, and PRMs trained on them "
            "cannot rank the judge against MC. What would decide it: a labelling judge whose paired ProcessBench F1 "
            f"difference to the structure baseline lies above 0, such as the paper's judge "
            f"{published_row(*PAPER_JUDGE)['label']} (ProcessBench average F1 "
            f"{published_value(*PAPER_JUDGE, 'average/f1'):.1f} as a critic, the paper's Table 7), "
            "labelling the same responses as MC.")
    return {"verdict": "undecidable", "best": None if best is None else str(best), "measured": measured,
            "text": text}
