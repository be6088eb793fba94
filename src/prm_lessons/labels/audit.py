"""The label audit's analysis: MC, judge and consensus labels of constructed solutions against exact truth.

Input: one row per solution of the slice (labels.audit_slice) with ``generator``, ``kind`` (gold / error /
keep), ``error_index`` (-1 for gold), ``n_steps``, ``outcomes`` (per step, the 0/1 grade of each of the
K completions, in completion-index order, for every step up to the first one without a success: MC's
early protocol with soft labels; the steps after it were never rolled out and read as negative at every
threshold, as MC's truncation makes them) and ``judge_first_error`` (None: no readable verdict). Every MC
variant is read from those same completions, no model call:

* hard label of step i at threshold t from the first K' completions: ``s' > t·K'`` (s' = successes among
  them). The first K' completions are what an MC run with K = K' draws (per-completion seeds);
* step-level accuracy: every step of every solution, the step's label against its truth (the correctness
  of the prefix up to it; labels.audit_slice.truth_labels). Steps of one solution are not independent:
  the Wilson intervals over steps are narrower than the data warrant;
* first-error accuracy: the first negative step (-1: none) equals the true first error;
* soft labels (s/K) against truth: Brier score, expected calibration error and one reliability bin per
  value s/K; hard labels at t = 0 beside them (their Brier score is 1 - step accuracy);
* consensus (the paper's filter): a solution is kept where MC's first error at ``consensus_threshold``
  equals the judge's; share kept (of all solutions) and precision (kept ones whose agreed first error
  is the true one).

* mechanism rows (section ``mechanism``, generator ``all``), the label-level contrasts the paper's account
  of MC rests on: ``error_step_detected`` per error kind (share of solutions whose injected error step,
  when MC reached it, is negative at t = 0 with all K: MC misses errors that keep the final answer),
  ``detection_gap`` (answer-changing minus answer-keeping, Newcombe's interval) and
  ``first_error_accuracy_gap`` (first-error accuracy at t = 0 minus at the largest threshold, same
  solutions, paired bootstrap): the threshold trade-off.

Every row carries (n, successes, value, ci_low, ci_high) in fractions; metrics without an interval
(Brier, ECE, token counts) leave the interval empty.
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Sequence

import numpy as np
import pandas as pd

from ..evaluation.bias_analysis import wilson_interval
from . import NOT_JUDGED, first_error_from_labels
from .audit_slice import KINDS, truth_labels

ALL = "all"
COLUMNS = ["section", "source", "generator", "kind", "threshold", "k_used", "metric", "n", "successes", "value",
           "ci_low", "ci_high"]


def thresholds_for(k: int) -> list[Fraction]:
    """The sweep's thresholds for K completions: 0, 1/K, …, (K-1)/K (the paper's 0 … 7/8 at K = 8)."""
    return [Fraction(j, k) for j in range(k)]


def k_subsets(k: int) -> list[int]:
    """K' read from the first K' completions: the powers of two below K, and K (1, 2, 4, 8 at K = 8)."""
    out = [2 ** p for p in range(k.bit_length()) if 2 ** p < k]
    return out + [k]


def mc_hard(outcomes: Sequence[Sequence[int]], k_used: int, t: Fraction) -> list[int]:
    """Hard label per step (not truncated) from the first k_used completions: successes > t·k_used."""
    labels = []
    for i, o in enumerate(outcomes):
        if len(o) < k_used:
            raise ValueError(f"step {i} has {len(o)} kept completions, K'={k_used} needs that many")
        labels.append(int(sum(int(x) for x in o[:k_used]) > t * k_used))
    return labels


def pad_outcomes(outcomes: Sequence[Sequence[int]], k: int, where: str = "") -> list[list[int]]:
    """Outcomes with the steps MC's early protocol never rolled out (after the first step without a success
    among all K) read as K failures: negative at every threshold and K', as truncation makes them. A step
    missing completions before that point is an error naming the solution (its labels are undecided)."""
    out, stopped = [], False
    for i, o in enumerate(outcomes):
        o = [int(x) for x in (o if o is not None else [])]
        if stopped and not o:
            out.append([0] * k)
            continue
        if len(o) < k:
            raise ValueError(f"audit {where}: step {i} has {len(o)} of K={k} completions and no earlier step "
                             "without a success (rerun rule audit_labels)")
        stopped = stopped or sum(o[:k]) == 0
        out.append(o)
    return out


def judge_step_labels(first_error, n_steps: int) -> list[int] | None:
    """Step labels a judge's first error implies (every step from it on negative); None when unparsed."""
    if first_error is None or pd.isna(first_error):
        return None
    return truth_labels(int(first_error), n_steps)


def _row(section, source, gen, kind, metric, successes, n, t=None, k_used=None, value=None, interval=True) -> dict:
    if value is None:
        value = successes / n if n else float("nan")
    lo, hi = (x / 100 for x in wilson_interval(int(successes), int(n))) if interval else (float("nan"),) * 2
    return {"section": section, "source": source, "generator": gen, "kind": kind,
            "threshold": None if t is None else float(t), "k_used": k_used, "metric": metric, "n": int(n),
            "successes": successes if interval else None, "value": float(value), "ci_low": lo, "ci_high": hi}


def _groups(df: pd.DataFrame):
    gens = list(dict.fromkeys(df["generator"]))
    for gen in gens + [ALL]:
        for kind in list(KINDS) + [ALL]:
            sub = df[((df["generator"] == gen) | (gen == ALL)) & ((df["kind"] == kind) | (kind == ALL))]
            if len(sub):
                yield gen, kind, sub


def _accuracy(section, source, gen, kind, pairs, t=None, k_used=None) -> list[dict]:
    """pairs: (labels, truth) per solution → step and first-error accuracy rows; labels None (no verdict)
    count as wrong at every step and at the first error."""
    steps_ok = sum(int(a == b) for lab, tr in pairs if lab is not None for a, b in zip(lab, tr))
    n_steps = sum(len(tr) for _, tr in pairs)
    fe_ok = sum(int(lab is not None and first_error_from_labels(lab) == first_error_from_labels(tr))
                for lab, tr in pairs)
    return [_row(section, source, gen, kind, "step_accuracy", steps_ok, n_steps, t, k_used),
            _row(section, source, gen, kind, "first_error_accuracy", fe_ok, len(pairs), t, k_used)]


def audit_metrics(records: pd.DataFrame, k: int, consensus_threshold: float = 0.0) -> pd.DataFrame:
    """The audit table (COLUMNS): the MC grid (every threshold × every K'), the judge, consensus, and
    calibration, per generator × kind and pooled (generator / kind ``all``)."""
    need = {"generator", "kind", "error_index", "n_steps", "outcomes", "judge_first_error"}
    missing = need - set(records.columns)
    if missing:
        raise ValueError(f"audit records lack {sorted(missing)}")
    df = records.copy()
    df["truth"] = [truth_labels(e, n) for e, n in zip(df["error_index"], df["n_steps"])]
    where = df["problem_id"] if "problem_id" in df.columns else pd.Series(range(len(df)), index=df.index)
    df["outcomes"] = [pad_outcomes(oc, k, str(w)) for oc, w in zip(df["outcomes"], where)]
    ct = Fraction(str(consensus_threshold)).limit_denominator(1000)
    # audit.judge off: no verdict was asked for, so the judge and consensus have no rows (not a 0 % judge)
    judged = "judge_status" not in df.columns or bool((df["judge_status"] != NOT_JUDGED).any())
    rows: list[dict] = []
    for gen, kind, sub in _groups(df):
        for kk in k_subsets(k):
            for t in thresholds_for(k):
                pairs = [(mc_hard(oc, kk, t), tr) for oc, tr in zip(sub["outcomes"], sub["truth"])]
                rows += _accuracy("mc", "mc", gen, kind, pairs, t, kk)
        if judged:
            verdicts = [(judge_step_labels(fe, n), tr) for fe, n, tr in zip(sub["judge_first_error"], sub["n_steps"],
                                                                            sub["truth"])]
            parsed = [(lab, tr) for lab, tr in verdicts if lab is not None]
            rows.append(_row("judge", "judge", gen, kind, "parsed", len(parsed), len(verdicts)))
            rows += _accuracy("judge", "judge", gen, kind, verdicts)  # no verdict: wrong (the judge gave no label)
            rows += _consensus(gen, kind, sub, k, ct)
        rows += _calibration(gen, kind, sub, k)
    rows += _mechanism(df, k)
    return pd.DataFrame(rows, columns=COLUMNS)


def _detected(sub: pd.DataFrame, k: int) -> tuple[int, int]:
    """(solutions whose error step MC reached, of them those whose error step is negative at t = 0, K)."""
    reached = detected = 0
    for oc, e in zip(sub["outcomes"], sub["error_index"]):
        e = int(e)
        if e < 0 or any(sum(o[:k]) == 0 for o in oc[:e]):  # an earlier step stopped MC: never reached
            continue
        reached += 1
        detected += int(sum(oc[e][:k]) == 0)
    return detected, reached


def newcombe_interval(s1: int, n1: int, s2: int, n2: int) -> tuple[float, float]:
    """Newcombe's hybrid score interval (95 %) for p1 - p2 of two independent proportions (fractions)."""
    p1, p2 = s1 / n1, s2 / n2
    l1, u1 = (x / 100 for x in wilson_interval(s1, n1))
    l2, u2 = (x / 100 for x in wilson_interval(s2, n2))
    d = p1 - p2
    return d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2), d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)


def paired_gap(a: Sequence[int], b: Sequence[int], n_boot: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """mean(a - b) over paired 0/1 outcomes with a percentile bootstrap 95 % interval over the pairs."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if not len(d):
        return float("nan"), float("nan"), float("nan")
    idx = np.random.default_rng(seed).integers(0, len(d), size=(n_boot, len(d)))
    boots = d[idx].mean(axis=1)
    return float(d.mean()), float(np.percentile(boots, 2.5)), float(np.percentile(boots, 97.5))


def _mechanism(df: pd.DataFrame, k: int) -> list[dict]:
    """The label-level contrasts (module docstring), pooled over generators."""
    rows, counts = [], {}
    for kind in ("error", "keep"):
        s, n = _detected(df[df["kind"] == kind], k)
        counts[kind] = (s, n)
        if n:
            rows.append(_row("mechanism", "mc", ALL, kind, "error_step_detected", s, n, Fraction(0), k))
    (s1, n1), (s2, n2) = counts["error"], counts["keep"]
    if n1 and n2:
        lo, hi = newcombe_interval(s1, n1, s2, n2)
        r = _row("mechanism", "mc", ALL, "error-keep", "detection_gap", None, n1 + n2, Fraction(0), k,
                 s1 / n1 - s2 / n2, interval=False)
        rows.append({**r, "ci_low": lo, "ci_high": hi})
    t_max = max(thresholds_for(k))
    if t_max > 0 and len(df):
        def correct(t):
            return [int(first_error_from_labels(mc_hard(oc, k, t)) == first_error_from_labels(tr))
                    for oc, tr in zip(df["outcomes"], df["truth"])]
        v, lo, hi = paired_gap(correct(Fraction(0)), correct(t_max))
        r = _row("mechanism", "mc", ALL, ALL, "first_error_accuracy_gap", None, len(df), t_max, k, v, interval=False)
        rows.append({**r, "ci_low": lo, "ci_high": hi})
    return rows


def _consensus(gen, kind, sub, k, ct) -> list[dict]:
    kept = []
    for oc, n, fe, tr in zip(sub["outcomes"], sub["n_steps"], sub["judge_first_error"], sub["truth"]):
        mc_fe = first_error_from_labels(mc_hard(oc, k, ct))
        j = judge_step_labels(fe, n)
        if j is not None and first_error_from_labels(j) == mc_fe:
            kept.append((truth_labels(mc_fe, n), tr))
    out = [_row("consensus", "consensus", gen, kind, "share_kept", len(kept), len(sub), ct, k)]
    prec = sum(int(first_error_from_labels(lab) == first_error_from_labels(tr)) for lab, tr in kept)
    out.append(_row("consensus", "consensus", gen, kind, "precision", prec, len(kept), ct, k))
    steps_ok = sum(int(a == b) for lab, tr in kept for a, b in zip(lab, tr))
    out.append(_row("consensus", "consensus", gen, kind, "step_accuracy", steps_ok, sum(len(tr) for _, tr in kept),
                    ct, k))
    return out


def _calibration(gen, kind, sub, k) -> list[dict]:
    soft = [sum(o[:k]) for oc in sub["outcomes"] for o in oc]
    truth = [t for tr in sub["truth"] for t in tr]
    n = len(truth)
    hard = mc_hard([[1] * s + [0] * (k - s) for s in soft], k, Fraction(0))
    brier_soft = sum((s / k - t) ** 2 for s, t in zip(soft, truth)) / n if n else float("nan")
    brier_hard = sum((h - t) ** 2 for h, t in zip(hard, truth)) / n if n else float("nan")
    out = [_row("calibration", "mc_soft", gen, kind, "brier", None, n, None, k, brier_soft, interval=False),
           _row("calibration", "mc_hard", gen, kind, "brier", None, n, 0, k, brier_hard, interval=False)]
    ece = 0.0
    for s in range(k + 1):
        ts = [t for v, t in zip(soft, truth) if v == s]
        if ts:
            ece += len(ts) / n * abs(s / k - sum(ts) / len(ts))
            out.append(_row("reliability", "mc_soft", gen, kind, "truth_positive_rate", sum(ts), len(ts),
                            Fraction(s, k), k))
    out.append(_row("calibration", "mc_soft", gen, kind, "ece", None, n, None, k, ece if n else float("nan"),
                    interval=False))
    return out


def cost_rows(costs: dict[str, dict]) -> list[dict]:
    """Token-cost rows ({source: {metric: count}}, e.g. prompt_tokens, generated_tokens) for the table."""
    return [_row("cost", src, ALL, ALL, metric, None, 0, value=float(v), interval=False)
            for src, d in costs.items() for metric, v in d.items()]


# -- rendering -----------------------------------------------------------------------------------------

def _get(df: pd.DataFrame, **where) -> pd.Series | None:
    m = pd.Series(True, index=df.index)
    for c, v in where.items():
        m &= df[c].isna() if v is None else (df[c] == v)
    hit = df[m]
    return None if hit.empty else hit.iloc[0]


def _cell(r) -> str:
    if r is None or r["n"] == 0 or pd.isna(r["value"]):
        return "–"
    if pd.isna(r["ci_low"]):
        return f"{r['value']:.3f}"
    return f"{100 * r['value']:.0f}% [{100 * r['ci_low']:.0f}, {100 * r['ci_high']:.0f}] (n={int(r['n'])})"


def render_markdown(table: pd.DataFrame, k: int, label: str = "") -> list[str]:
    """The audit's summary as Markdown lines: first-error accuracy per kind (MC at t=0 with all K, judge,
    consensus precision and share kept), the best threshold / K', calibration and the token cost."""
    t0 = 0.0
    lines = ["### Label audit: MC, judge and consensus against exact step truth", ""]
    if label:
        lines += [f"*{label}*", ""]
    lines += ["| solutions | MC first error (t=0, K=%d) | MC step acc. | judge first error | consensus kept | "
              "consensus precision |" % k, "|---|---|---|---|---|---|"]
    not_run = "not run (audit.judge off)"
    judged = bool((table["section"] == "judge").any())
    for kind in list(KINDS) + [ALL]:
        mc_fe = _get(table, section="mc", generator=ALL, kind=kind, threshold=t0, k_used=k,
                     metric="first_error_accuracy")
        if mc_fe is None:
            continue
        mc_st = _get(table, section="mc", generator=ALL, kind=kind, threshold=t0, k_used=k, metric="step_accuracy")
        j = _get(table, section="judge", generator=ALL, kind=kind, metric="first_error_accuracy")
        kept = _get(table, section="consensus", generator=ALL, kind=kind, metric="share_kept")
        prec = _get(table, section="consensus", generator=ALL, kind=kind, metric="precision")
        judge_cells = [_cell(j), _cell(kept), _cell(prec)] if judged else [not_run] * 3
        lines.append(f"| {kind} | {_cell(mc_fe)} | {_cell(mc_st)} | " + " | ".join(judge_cells) + " |")
    # the sweep's two ends and K' = 1 vs K, fixed in advance (the best grid point on this slice would be
    # chosen on the evaluation data)
    t_max = float(max(thresholds_for(k)))
    ends = [(f"t = 0, K' = {k}", _get(table, section="mc", generator=ALL, kind=ALL, threshold=t0, k_used=k,
                                       metric="first_error_accuracy")),
            (f"t = {Fraction(t_max).limit_denominator(64)}, K' = {k}",
             _get(table, section="mc", generator=ALL, kind=ALL, threshold=t_max, k_used=k,
                  metric="first_error_accuracy")),
            ("t = 0, K' = 1", _get(table, section="mc", generator=ALL, kind=ALL, threshold=t0, k_used=1,
                                   metric="first_error_accuracy"))]
    ends = [(name, r) for name, r in ends if r is not None]
    if ends:
        lines += ["", "MC first-error accuracy read from the same completions: "
                  + "; ".join(f"{name}: {_cell(r)}" for name, r in ends) + "."]
    soft = _get(table, section="calibration", source="mc_soft", generator=ALL, kind=ALL, metric="brier")
    hard = _get(table, section="calibration", source="mc_hard", generator=ALL, kind=ALL, metric="brier")
    ece = _get(table, section="calibration", source="mc_soft", generator=ALL, kind=ALL, metric="ece")
    if soft is not None and hard is not None:
        lines.append(f"Calibration against step truth: Brier soft {soft['value']:.3f} "
                     f"vs hard (t=0) {hard['value']:.3f}; "
                     f"soft-label ECE {ece['value']:.3f}.")
    det = {kind: _get(table, section="mechanism", kind=kind, metric="error_step_detected")
           for kind in ("error", "keep")}
    gap = _get(table, section="mechanism", metric="detection_gap")
    if det["error"] is not None and det["keep"] is not None:
        lines.append(f"Label level: MC (t = 0, K = {k}) marks the error step wrong where the error changes the answer "
                     f"{_cell(det['error'])}, where it keeps it {_cell(det['keep'])}"
                     + (f"; difference {100 * gap['value']:+.0f} points [{100 * gap['ci_low']:+.0f}, "
                        f"{100 * gap['ci_high']:+.0f}] (Newcombe)" if gap is not None else "") + ".")
    tgap = _get(table, section="mechanism", metric="first_error_accuracy_gap")
    if tgap is not None and not pd.isna(tgap["value"]):
        lines.append(f"First-error accuracy at t = 0 minus t = {Fraction(tgap['threshold']).limit_denominator(64)}: "
                     f"{100 * tgap['value']:+.0f} points [{100 * tgap['ci_low']:+.0f}, {100 * tgap['ci_high']:+.0f}] "
                     f"(same {int(tgap['n'])} solutions, paired bootstrap).")
    cost = table[table["section"] == "cost"]
    if len(cost):
        parts = [f"{r.source} {r.metric.replace('_', ' ')} {int(r.value):,}" for r in cost.itertuples()]
        lines.append("Model-token cost: " + "; ".join(parts) + ".")
    lines.append("Intervals: Wilson 95 % (steps of one solution are not independent; step intervals are optimistic).")
    return lines
