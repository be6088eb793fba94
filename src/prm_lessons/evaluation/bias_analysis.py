"""The three Best-of-N bias analyses of the paper (§3.2), on the workflow's own outputs.

1. Unreliable policy (Figure 6): among responses whose final answer is correct, the share whose process
   is flawed — judged by the configured LLM judge on the workflow's own policy samples
   (`first_error != -1`) and, where the data is arithmetic, by the process checker
   (prm_lessons.labels.process_check), beside ProcessBench's own annotation of its cases
   (`final_answer_correct & label != -1` among `final_answer_correct`).
2. PRM tolerance (Table 5, Figure 7): a PRM's accuracy on the ProcessBench cases whose final answer is
   correct but a step is wrong (prediction == label); Figure 7 sets it against Best-of-N accuracy.
3. Where minimum scores fall (Figure 8): among ALL Best-of-N responses (the first N of every problem,
   as the paper's caption says: "among all Best of 8 responses"), the share whose lowest step score is on
   the final step; the same share among the responses Best-of-N selects is a second, named series.

Inputs are the documented tables (docs/architecture.md); a missing PRM, dataset or subset is skipped
with a logged note, never a crash. Rates are percentages (the paper's unit).
"""
from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from prm_lessons.metrics.select import aggregate, best_index

log = logging.getLogger(__name__)


def wilson_interval(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval for a binomial share, in percent (NaN for n = 0). Hand-rolled: three lines,
    and the project does not otherwise depend on scipy/statsmodels."""
    if n <= 0:
        return (float("nan"), float("nan"))
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (100 * max(0.0, centre - half), 100 * min(1.0, centre + half))


# ------------------------------------------------------------------------------------------------
# 1. Unreliable policy: correct answer, flawed process
# ------------------------------------------------------------------------------------------------

def policy_flaw_rate(samples: pd.DataFrame, judge: pd.DataFrame, dataset: str, source: str = "policy_judge") -> dict:
    """Flawed-process share among correct-answer responses of one dataset, by the judge's verdicts (or
    any table of first errors: source "policy_checker" for the arithmetic process checker's).

    Responses the judge could not parse (`parsed` false or `first_error` null) are excluded and
    counted (`n_unparsed`); correct responses without any judge row are counted as `n_unjudged`."""
    need_s = [c for c in ("problem_id", "sample_idx", "correct") if c not in samples.columns]
    need_j = [c for c in ("problem_id", "sample_idx", "first_error") if c not in judge.columns]
    if need_s or need_j:
        raise ValueError(f"dataset '{dataset}': samples lack {need_s} / judge labels lack {need_j}")
    correct = samples.loc[samples["correct"].fillna(False).astype(bool), ["problem_id", "sample_idx"]]
    j = judge[["problem_id", "sample_idx", "first_error"] + (["parsed"] if "parsed" in judge.columns else [])]
    merged = correct.merge(j, on=["problem_id", "sample_idx"], how="left", indicator=True)
    unjudged = merged["_merge"] == "left_only"
    ok = ~unjudged & merged["first_error"].notna()
    if "parsed" in merged.columns:
        ok &= merged["parsed"].fillna(False).astype(bool)
    n_judged = int(ok.sum())
    flawed = int((merged.loc[ok, "first_error"].astype(int) != -1).sum())
    lo, hi = wilson_interval(flawed, n_judged)
    return {"dataset": dataset, "source": source, "n_responses": int(len(samples)),
            "n_correct": int(len(correct)), "n_judged": n_judged,
            "n_unparsed": int((~unjudged & ~ok).sum()), "n_unjudged": int(unjudged.sum()),
            "n_flawed": flawed, "rate": 100 * flawed / n_judged if n_judged else float("nan"),
            "ci_low": lo, "ci_high": hi}


def processbench_flaw_rates(cases: pd.DataFrame) -> pd.DataFrame:
    """ProcessBench's own annotated rate per subset: label != -1 among final_answer_correct cases."""
    need = [c for c in ("subset", "final_answer_correct", "label") if c not in cases.columns]
    if need:
        raise ValueError(f"ProcessBench cases lack column(s) {need}")
    rows = []
    for subset, g in cases.groupby("subset", sort=True):
        fac = g[g["final_answer_correct"].fillna(False).astype(bool)]
        flawed = int((fac["label"].astype(int) != -1).sum())
        lo, hi = wilson_interval(flawed, len(fac))
        rows.append({"dataset": str(subset), "source": "processbench_annotation",
                     "n_responses": int(len(g)), "n_correct": int(len(fac)), "n_judged": int(len(fac)),
                     "n_unparsed": 0, "n_unjudged": 0, "n_flawed": flawed,
                     "rate": 100 * flawed / len(fac) if len(fac) else float("nan"),
                     "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(rows)


def human_flaw_rates(labels: pd.DataFrame, sheet: pd.DataFrame) -> pd.DataFrame:
    """Figure 6's human rate per benchmark (source "policy_human"): flawed among the labelled rows of the
    annotation sheet (prm_lessons.labels.annotation.read_labels); sheet rows left blank are counted as
    `n_unjudged`. Benchmarks in the sheet's order."""
    rows = []
    for bench in dict.fromkeys(sheet["benchmark"].astype(str)):
        lab = labels[(labels["benchmark"].astype(str) == bench) & labels["labelled"].astype(bool)]
        n_sheet = int((sheet["benchmark"].astype(str) == bench).sum())
        flawed = int(lab["flawed"].astype(bool).sum())
        lo, hi = wilson_interval(flawed, len(lab))
        rows.append({"dataset": bench, "source": "policy_human", "n_responses": n_sheet, "n_correct": n_sheet,
                     "n_judged": int(len(lab)), "n_unparsed": 0, "n_unjudged": n_sheet - int(len(lab)),
                     "n_flawed": flawed, "rate": 100 * flawed / len(lab) if len(lab) else float("nan"),
                     "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(rows)


# Figure 6's row label per policy-sample instrument (the verdict table reads the rows apart)
FLAW_ROWS = {"policy_judge": "policy samples, judge", "policy_checker": "policy samples, arithmetic checker",
             "policy_human": "policy samples, human annotation"}


def flaw_rates(samples: Mapping[str, pd.DataFrame], judges: Mapping[str, pd.DataFrame],
               cases: pd.DataFrame | None, checkers: Mapping[str, pd.DataFrame] | None = None,
               human: pd.DataFrame | None = None) -> pd.DataFrame:
    """Figure 6 data: the human rate per benchmark where annotation labels came back (`human`:
    human_flaw_rates), the judge-based rate per policy dataset (the proxy), the arithmetic process
    checker's on the same responses (exact where it sees the error; `checkers`: its tables, rule
    process_check_labels) + ProcessBench's rate per subset."""
    rows = [] if human is None else human.to_dict("records")
    for ds, chk in (checkers or {}).items():
        if ds in samples:
            rows.append(policy_flaw_rate(samples[ds], chk, ds, source="policy_checker"))
    for ds, s in samples.items():
        if ds not in judges:
            if judges:  # no judge at all is analysis.flaw_judge false: nothing missing
                log.warning("flawed-process rate: no judge labels for dataset '%s'; skipped", ds)
            continue
        r = policy_flaw_rate(s, judges[ds], ds)
        if r["n_unparsed"] or r["n_unjudged"]:
            log.info("dataset '%s': %d correct responses with unparsable verdicts, %d without a verdict "
                     "(excluded)", ds, r["n_unparsed"], r["n_unjudged"])
        rows.append(r)
    out = pd.DataFrame(rows)
    if cases is not None and len(cases):
        out = pd.concat([out, processbench_flaw_rates(cases)], ignore_index=True)
    return out


# ------------------------------------------------------------------------------------------------
# 2. PRM tolerance: accuracy on answer-correct / process-wrong ProcessBench cases
# ------------------------------------------------------------------------------------------------

def tolerance_accuracy(predictions: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Table 5 values: per PRM and subset, accuracy (prediction == label) on cases with
    final_answer_correct and label != -1, plus the unweighted mean over subsets (`average`).
    A null prediction (unparsable critic output) counts as wrong."""
    rows = []
    for prm, df in predictions.items():
        need = [c for c in ("subset", "label", "final_answer_correct", "prediction") if c not in df.columns]
        if need:
            raise ValueError(f"ProcessBench predictions of '{prm}' lack column(s) {need}")
        fac = df["final_answer_correct"]
        if fac.isna().all():
            log.warning("ProcessBench predictions of '%s' carry no final_answer_correct; skipped", prm)
            continue
        sel = df[fac.fillna(False).astype(bool) & (df["label"].astype(int) != -1)]
        per = []
        for subset, g in sel.groupby("subset", sort=True):
            pred = g["prediction"]
            hit = (pred.notna() & (pred.astype("Float64") == g["label"].astype("Float64"))).fillna(False)
            acc = 100 * float(hit.mean())
            per.append(acc)
            rows.append({"prm": prm, "subset": str(subset), "n": int(len(g)), "n_correct": int(hit.sum()),
                         "accuracy": acc})
        if per:
            rows.append({"prm": prm, "subset": "average", "n": int(len(sel)),
                         "n_correct": int(sum(r["n_correct"] for r in rows[-len(per):])),
                         "accuracy": float(np.mean(per))})
        else:
            log.warning("ProcessBench predictions of '%s': no answer-correct/process-wrong cases", prm)
    return pd.DataFrame(rows, columns=["prm", "subset", "n", "n_correct", "accuracy"])


# ------------------------------------------------------------------------------------------------
# 3. Where the minimum step score falls among Best-of-N responses
# ------------------------------------------------------------------------------------------------

def min_at_last(step_scores) -> bool | None:
    """True when the final step's score is strictly below every earlier step's (a one-step response
    counts as True); None for a response without scores. Strict, i.e. the FIRST step holding the minimum
    is the final one: a response whose last step only ties the minimum (e.g. every step 1.0) does not
    show the ORM-like behaviour the analysis looks for. The paper does not say how ties are located
    (UNVERIFIED); `min_tie` counts them so the choice can be judged."""
    if step_scores is None or len(step_scores) == 0:
        return None
    s = np.asarray(step_scores, dtype=float)
    if np.isnan(s).any():
        return None
    return bool(len(s) == 1 or s[-1] < s[:-1].min())


def min_tie(step_scores) -> bool:
    """Whether the final step ties the minimum with an earlier step (counted as not-at-last above)."""
    if step_scores is None or len(step_scores) < 2:
        return False
    s = np.asarray(step_scores, dtype=float)
    return bool(not np.isnan(s).any() and s[-1] == s[:-1].min())


def min_at_last_chance(step_scores) -> float | None:
    """The chance that `min_at_last` holds if the response's own step scores were placed in random order:
    1/L for an L-step response whose minimum is held by one step, 0 when several steps share the minimum
    (min_at_last is strict, so a tied minimum can never count as "at the last step"), 1 for one step;
    None where min_at_last is None. Without ties this is the uniform 1/L."""
    if step_scores is None or len(step_scores) == 0:
        return None
    s = np.asarray(step_scores, dtype=float)
    if np.isnan(s).any():
        return None
    return float((s == s.min()).sum() == 1) / len(s)


def first_n(scores: pd.DataFrame, n: int | None = None) -> pd.DataFrame:
    """The first n responses (by sample_idx) of every problem: Best-of-n's candidates."""
    need = [c for c in ("problem_id", "sample_idx", "step_scores") if c not in scores.columns]
    if need:
        raise ValueError(f"step-score table lacks column(s) {need}")
    df = scores.sort_values(["problem_id", "sample_idx"], kind="stable")
    return df if n is None else df.groupby("problem_id", sort=False, group_keys=False).head(n)


def selected_responses(scores: pd.DataFrame, aggregation: str = "product", n: int | None = None) -> pd.DataFrame:
    """The response Best-of-N picks per problem: highest aggregated score, ties → lowest sample_idx,
    over the first n responses (by sample_idx) — the same rule as prm_lessons.metrics."""
    df = first_n(scores, n)
    picks = []
    for _, g in df.groupby("problem_id", sort=False):
        agg = [aggregate(s, aggregation) for s in g["step_scores"].tolist()]
        picks.append(g.index[best_index(agg)])
    return df.loc[picks]


# Figure 8's two populations: the paper's (every response) and the selected-only one shown beside it
FIG8_POPULATIONS = ("all", "selected")
FIG8_COLUMNS = ["prm", "benchmark", "population", "n_responses", "n_scored", "n_single_step", "n_min_tied",
                "n_min_at_last", "share", "ci_low", "ci_high"]


def _share_row(prm: str, bench: str, population: str, step_scores: list) -> dict:
    flags = [min_at_last(s) for s in step_scores]
    valid = [f for f in flags if f is not None]
    k = int(sum(valid))
    lo, hi = wilson_interval(k, len(valid))
    return {"prm": prm, "benchmark": bench, "population": population, "n_responses": len(step_scores),
            "n_scored": len(valid), "n_single_step": sum(1 for s in step_scores if s is not None and len(s) == 1),
            "n_min_tied": sum(min_tie(s) for s in step_scores), "n_min_at_last": k,
            "share": 100 * k / len(valid) if valid else float("nan"), "ci_low": lo, "ci_high": hi}


def min_at_last_shares(scores: Mapping[tuple[str, str], pd.DataFrame], aggregation: str = "product",
                       n: int | None = None) -> pd.DataFrame:
    """Figure 8 data: per (PRM, benchmark) and per PRM pooled over benchmarks (`benchmark` = "all"), the
    share (%) of responses whose minimum step score is on the final step, for two populations:
    `all` (every one of the first n responses of each problem: the paper's) and `selected` (the one per
    problem that Best-of-N with `aggregation` picks). `n_min_tied` counts final steps that only tie it."""
    rows = []
    for (prm, bench), df in scores.items():
        cand = first_n(df, n)
        rows.append(_share_row(prm, bench, "all", cand["step_scores"].tolist()))
        rows.append(_share_row(prm, bench, "selected",
                               selected_responses(cand, aggregation)["step_scores"].tolist()))
    out = pd.DataFrame(rows, columns=FIG8_COLUMNS)
    pooled = []
    for (prm, pop), g in out.groupby(["prm", "population"], sort=False):
        k, m = int(g["n_min_at_last"].sum()), int(g["n_scored"].sum())
        lo, hi = wilson_interval(k, m)
        pooled.append({"prm": prm, "benchmark": "all", "population": pop,
                       **{c: int(g[c].sum()) for c in ("n_responses", "n_single_step", "n_min_tied")},
                       "n_scored": m, "n_min_at_last": k,
                       "share": 100 * k / m if m else float("nan"), "ci_low": lo, "ci_high": hi})
    return pd.concat([out, pd.DataFrame(pooled, columns=FIG8_COLUMNS)], ignore_index=True)


# Figure 8 per response length: one-step responses are "min at last" by definition and two-step ones by
# chance half the time, so the headline is responses of >= 3 steps, the shorter ones reported apart.
FIG8_LENGTHS = ("1", "2", "3", "4", "5+", "3+")
FIG8_LENGTH_COLUMNS = ["prm", "population", "length", "n_scored", "n_min_at_last", "share", "ci_low", "ci_high",
                       "chance", "n_min_tied"]


def _length_bucket(n_steps: int) -> list[str]:
    """The FIG8_LENGTHS buckets a response of `n_steps` steps belongs to (one exact, and "3+" from 3 on)."""
    exact = str(n_steps) if n_steps <= 4 else "5+"
    return [exact, "3+"] if n_steps >= 3 else [exact]


def min_at_last_by_length(scores: Mapping[tuple[str, str], pd.DataFrame], aggregation: str = "product",
                          n: int | None = None) -> pd.DataFrame:
    """Figure 8 per response length, pooled over benchmarks: per (PRM, population, length bucket) the
    observed share (%) of responses whose minimum step score is on the final step (min_at_last, Wilson
    interval), and the share expected by chance (%): the mean of min_at_last_chance over the bucket's
    responses (1/L per L-step response without ties; a tied minimum counts 0 on both sides). Buckets:
    FIG8_LENGTHS ("3+" is the headline; "1" is 100 % by definition)."""
    pooled: dict[tuple[str, str], list] = {}
    for (prm, _bench), df in scores.items():
        cand = first_n(df, n)
        for pop, frame in (("all", cand), ("selected", selected_responses(cand, aggregation))):
            pooled.setdefault((prm, pop), []).extend(frame["step_scores"].tolist())
    rows = []
    for (prm, pop), step_scores in pooled.items():
        by: dict[str, list] = {b: [] for b in FIG8_LENGTHS}
        for s in step_scores:
            if min_at_last(s) is not None:
                for b in _length_bucket(len(s)):
                    by[b].append(s)
        for b in FIG8_LENGTHS:
            ss = by[b]
            k = int(sum(min_at_last(s) for s in ss))
            lo, hi = wilson_interval(k, len(ss))
            chance = 100 * float(np.mean([min_at_last_chance(s) for s in ss])) if ss else float("nan")
            rows.append({"prm": prm, "population": pop, "length": b, "n_scored": len(ss), "n_min_at_last": k,
                         "share": 100 * k / len(ss) if ss else float("nan"), "ci_low": lo, "ci_high": hi,
                         "chance": chance, "n_min_tied": sum(min_tie(s) for s in ss)})
    return pd.DataFrame(rows, columns=FIG8_LENGTH_COLUMNS)


# ------------------------------------------------------------------------------------------------
# Loading helpers: named inputs whose key says what they are (rule inputs are named per item)
# ------------------------------------------------------------------------------------------------

def named_inputs(inputs: Mapping[str, str], prefix: str) -> dict[str, str]:
    """Inputs named `<prefix>__<name>` → {name: path}; files that do not exist are skipped with a note."""
    out = {}
    for key, path in inputs.items():
        if key.startswith(prefix + "__"):
            if Path(path).exists():
                out[key[len(prefix) + 2:]] = path
            else:
                log.warning("input %s (%s) does not exist; skipped", key, path)
    return out
