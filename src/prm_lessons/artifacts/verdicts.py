"""The table that opens paper/report.md: the paper's lessons one by one, what the paper found, what this
run measured (numbers with intervals), and a verdict: reproduced / contradicted / undecidable here (with
the reason and the smallest setting that would decide it) / not measured in this run (with the reason).

Rules, whichever way the results fall:
- A verdict comes from an interval, never from a point estimate: an interval that excludes the null (0,
  the other arm, the chance rate) decides; one that contains it gives "undecidable here: interval
  contains …". Two PRMs' own (unpaired) 95 % intervals decide only when they do not overlap.
- Every comparison is fixed here in advance (which PRMs, which ends of the threshold sweep, which PRM
  for Figure 8): nothing is chosen by looking at the evaluation results.
- Absent inputs give a "not measured in this run" row naming what is missing; nothing raises.

One function per lesson, each taking the frames it needs (None when absent). A new measurement (a label
audit, a process checker's flaw rate, a same-pool label comparison) plugs in as a keyword of its lesson's
function and is passed by `verdict_rows`. Numbering: the lessons follow the paper's §3.1.2, §3.1.3,
§3.1.4, §3.2 and §4 (Table 6).

Pure: frames in, rows out; the verdict vocabulary, the interval rules and the Markdown table are
prm_lessons.artifacts.verdict_rules (rule glue: prm_lessons.rules.paper.paper_report).
"""
from __future__ import annotations

import logging
from typing import Callable, Sequence

import pandas as pd

from prm_lessons.artifacts.estimates import (
    Est,
    Fmt,
    bon_average,
    delta_est,
    f1_est,
    finite,
    frac_text,
    has_columns,
    pb_average,
    scale_of,
    sweep_points,
)
from prm_lessons.artifacts.findings import STRUCTURE
from prm_lessons.artifacts.published import (
    load_published,
    published_range,
    published_size,
    published_text,
    published_value,
)
from prm_lessons.artifacts.verdict_rules import (
    ABSENT,
    CONTRADICTED,
    REPRODUCED,
    UNDECIDABLE,
    Verdict,
    interval_verdict,
    separated_verdict,
)
from prm_lessons.evaluation.bias_analysis import FLAW_ROWS, wilson_interval

log = logging.getLogger(__name__)

# Fixed in advance (never chosen from the results): the PRMs each lesson compares.
MC, JUDGE, HUMAN, CHECKER = "mc_hard", "judge", "human", "checker"
CONSENSUS_HARD, CONSENSUS_SOFT = "consensus_hard", "consensus_soft"
RECIPE = CONSENSUS_HARD          # the paper's final recipe: consensus-filtered hard labels (§4.1)
MIN_AT_LAST_PRM = MC             # Figure 8: the paper ties the shift to outcome to MC (outcome-derived) labels
FIG8_HEADLINE = "3+ steps"       # artifacts/defs/fig8_min_at_last_step.LENGTH_COLUMNS["3+"]


def _row(lesson: str, paper: str, decide: str, measured: str, verdict: str, reason: str) -> Verdict:
    """A measured row; `decide` (the smallest deciding setting) is shown only when undecidable."""
    return Verdict(lesson, paper, measured, verdict, reason, decide if verdict == UNDECIDABLE else "")


def _absent(lesson: str, paper: str, why: str, decide: str = "") -> Verdict:
    return Verdict(lesson, paper, "—", ABSENT, why, decide)


def _pb(processbench: pd.DataFrame | None) -> tuple[pd.DataFrame | None, Fmt | None]:
    if not has_columns(processbench, ("prm", "subset", "f1")):
        return None, None
    avg = pb_average(processbench)
    return (None, None) if avg.empty else (avg, Fmt(scale_of(avg["f1"])))


def _structure_note(avg: pd.DataFrame, fmt: Fmt, prms: Sequence[str]) -> str:
    """How each PRM stands against the structure-only baseline (context for a verdict, not a verdict)."""
    bits = []
    for p in prms:
        d = delta_est(avg, p)
        if d is not None and p != STRUCTURE:
            bits.append(f"`{p}` {fmt.diff(d)}")
    return ("; minus structure-only baseline, points: " + ", ".join(bits)) if bits else ""


# ------------------------------------------------------------------------------------------------
# The lessons
# ------------------------------------------------------------------------------------------------

L1 = "1. MC-estimated labels train worse PRMs than LLM-as-a-judge and human labels (§3.1.2)"
_p = published_text
L1_PAPER = (f"ProcessBench avg F1 (Table 4): MC {_p('table4', MC, 'average/f1')}, judge "
            f"{_p('table4', JUDGE, 'average/f1')}, human (PRM800K) {_p('table4', HUMAN, 'average/f1')}; Best-of-8 "
            f"about equal (Table 3: {_p('table3', MC)} / {_p('table3', JUDGE)} / {_p('table3', HUMAN)})")
L1_DECIDE = ("MC, judge and exact labels on the same responses at the same size (the same-pool comparison), "
             "with a judge that beats the structure-only baseline (at 135M only a reference-guided one might; "
             "else a ≥1.5B judge on a GPU)")


def _judge_pb_deltas(judge_pb: pd.DataFrame | None) -> dict[str, Est]:
    """Setting → the labelling judge's F1 minus structure-only on the constructed ProcessBench slice
    (results/tables/judge_processbench.csv, its `average` rows)."""
    if not has_columns(judge_pb, ("judge", "subset", "delta_f1_structure", "delta_ci_low", "delta_ci_high")):
        return {}
    avg = judge_pb[judge_pb["subset"].astype(str) == "average"]
    return {str(r["judge"]): Est(float(r["delta_f1_structure"]), float(r["delta_ci_low"]), float(r["delta_ci_high"]))
            for _, r in avg.iterrows() if finite(r["delta_f1_structure"])}


def _judge_pb_note(judge_pb: pd.DataFrame | None) -> str:
    """The labelling judge, with its own prompt, on the constructed ProcessBench slice (rule
    judge_processbench_table): F1 minus structure-only per setting, as context for the judge's labels."""
    # the table's F1 differences are fractions: points here, as every other F1 of the verdicts
    parts = [f"`{name}` {Fmt(100.0).diff(d)}" for name, d in _judge_pb_deltas(judge_pb).items()]
    return ("; the labelling judge with its own prompt on ProcessBench, F1 minus structure-only: " + ", ".join(parts)
            if parts else "")


def _audit_est(audit: pd.DataFrame | None, **where) -> Est | None:
    """One pooled row of results/tables/label_audit.csv (generator and kind `all`) as a percent Est."""
    if not has_columns(audit, ("section", "generator", "kind", "metric", "value", "ci_low", "ci_high")):
        return None
    m = (audit["generator"].astype(str) == "all") & (audit["kind"].astype(str) == "all")
    for col, val in where.items():
        m &= (pd.to_numeric(audit[col], errors="coerce") == float(val)) if isinstance(val, (int, float)) \
            else (audit[col].astype(str) == str(val))
    r = audit[m]
    if r.empty or not finite(r.iloc[0]["value"]):
        return None
    r = r.iloc[0]
    return Est(100 * float(r["value"]), 100 * float(r["ci_low"]), 100 * float(r["ci_high"]))


def _audit_note(audit: pd.DataFrame | None, which: str) -> str:
    """Label-quality context from the label audit (exact step truth): first-error accuracy of MC (t = 0,
    all K), of the judge, of consensus-kept labels, or of the sweep's ends."""
    if audit is None:
        return ""
    f, fe = Fmt(1.0), "first_error_accuracy"
    k = pd.to_numeric(audit.get("k_used"), errors="coerce").max() if "k_used" in audit else None
    mc = _audit_est(audit, section="mc", threshold=0.0, k_used=k, metric=fe) if finite(k) else None
    parts = []
    if which == "sources":
        judge = _audit_est(audit, section="judge", metric=fe)
        parts = [f"MC {f.est(mc)} %" if mc else "", f"judge {f.est(judge)} %" if judge else ""]
    elif which == "consensus":
        prec = _audit_est(audit, section="consensus", metric="precision")
        kept = _audit_est(audit, section="consensus", metric="share_kept")
        parts = [f"MC {f.est(mc)} %" if mc else "", f"consensus-kept {f.est(prec)} %" if prec else "",
                 f"share kept {f.est(kept)} %" if kept else ""]
    elif which == "threshold" and finite(k):
        tmax = pd.to_numeric(audit.loc[audit["section"].astype(str) == "mc", "threshold"], errors="coerce").max()
        hi = _audit_est(audit, section="mc", threshold=tmax, k_used=k, metric=fe) if finite(tmax) else None
        parts = [f"t = 0 {f.est(mc)} %" if mc else "", f"t = {frac_text(float(tmax))} {f.est(hi)} %" if hi else ""]
    parts = [p for p in parts if p]
    return ("; label audit against exact step truth, first-error accuracy: " + ", ".join(parts)) if parts else ""


def lesson1_label_sources(processbench: pd.DataFrame | None, judge_pb: pd.DataFrame | None = None,
                          audit: pd.DataFrame | None = None) -> Verdict:
    """MC vs exact and judge labels on ProcessBench, all labelling the same policy responses (the paper's
    design). The exact labels of the arithmetic process checker (`checker`, the same pool) stand in for
    human annotation and decide when present (checker above MC); without them judge vs MC decides.
    `human` (by construction) is shown as context only: it trains on another pool, so it is no
    label-source comparison."""
    avg, fmt = _pb(processbench)
    if avg is None:
        return _absent(L1, L1_PAPER, "no ProcessBench table (results/tables/processbench.csv)", L1_DECIDE)
    mc, judge, exact = f1_est(avg, MC), f1_est(avg, JUDGE), f1_est(avg, CHECKER)
    if mc is None or (judge is None and exact is None):
        return _absent(L1, L1_PAPER, f"no ProcessBench row for `{MC}` and `{JUDGE}` or `{CHECKER}` (MC and one "
                       "other are needed)", L1_DECIDE)
    parts = [f"MC `{MC}` {fmt.est(mc)}"]
    if judge is not None:
        parts.append(f"judge `{JUDGE}` {fmt.est(judge)}")
    if exact is not None:
        parts.append(f"exact (checker) `{CHECKER}` {fmt.est(exact)}")
    measured = "ProcessBench avg F1, same responses: " + ", ".join(parts)
    human = f1_est(avg, HUMAN)
    if human is not None:
        measured += (f"; human stand-in `{HUMAN}` {fmt.est(human)} (another pool, not compared)")
    measured += _structure_note(avg, fmt, [MC] + ([CHECKER] if exact is not None else [JUDGE]))
    measured += _judge_pb_note(judge_pb) + _audit_note(audit, "sources")
    if exact is not None:
        verdict, reason = separated_verdict(exact, mc, "exact labels", "MC")
    else:
        verdict, reason = separated_verdict(judge, mc, "judge", "MC")
    return _row(L1, L1_PAPER, L1_DECIDE, measured, verdict, reason)


L2 = "2. Consensus filtering (MC and judge agree) trains a better PRM with less data (§3.1.3)"
_KEPT = load_published()["data_sizes"]["fig2"][CONSENSUS_HARD] / load_published()["data_sizes"]["fig2"][MC]
L2_PAPER = (f"Fig 2: consensus {_p('fig2', CONSENSUS_HARD, 'processbench_f1')} F1 with "
            f"{published_size('fig2', CONSENSUS_HARD)} of {published_size('fig2', MC)} "
            f"(≈{round(100 * _KEPT, -1):.0f} % "
            f"kept) vs MC {_p('fig2', MC, 'processbench_f1')}; Fig 4 (hard labels): "
            f"{_p('fig4', CONSENSUS_HARD, 'processbench_f1')} after filtering "
            f"({published_size('fig4', CONSENSUS_HARD)} "
            f"of {published_size('fig4', MC)}) vs {_p('fig4', MC, 'processbench_f1')} before")
L2_DECIDE = ("a judge that beats the structure-only baseline (else the filter keeps the cases both call "
             "correct), and enough kept instances to train on (hundreds, not a few)")


def lesson2_consensus(processbench: pd.DataFrame | None, trainsets: pd.DataFrame | None = None,
                      audit: pd.DataFrame | None = None) -> Verdict:
    """consensus_hard vs mc_hard on ProcessBench (the filter's input is the MC set); the training-set
    sizes from trainsets.csv as context."""
    avg, fmt = _pb(processbench)
    if avg is None:
        return _absent(L2, L2_PAPER, "no ProcessBench table (results/tables/processbench.csv)", L2_DECIDE)
    cons, mc = f1_est(avg, CONSENSUS_HARD), f1_est(avg, MC)
    if cons is None or mc is None:
        return _absent(L2, L2_PAPER, f"no ProcessBench row for `{CONSENSUS_HARD}` and `{MC}` (both are needed)",
                       L2_DECIDE)
    measured = f"ProcessBench avg F1: consensus `{CONSENSUS_HARD}` {fmt.est(cons)}, MC `{MC}` {fmt.est(mc)}"
    if has_columns(trainsets, ("variant", "n_instances")):
        sizes = {str(v): n for v, n in zip(trainsets["variant"], trainsets["n_instances"]) if finite(n)}
        if CONSENSUS_HARD in sizes and MC in sizes:
            measured += f"; trained on {int(sizes[CONSENSUS_HARD])} vs {int(sizes[MC])} instances"
    measured += _structure_note(avg, fmt, [CONSENSUS_HARD, MC]) + _audit_note(audit, "consensus")
    verdict, reason = separated_verdict(cons, mc, "consensus", "MC")
    return _row(L2, L2_PAPER, L2_DECIDE, measured, verdict, reason)


L3A = "3a. Hard labels beat soft labels once the data is filtered (§3.1.4)"
L3A_PAPER = (f"Fig 4: after consensus filtering hard {_p('fig4', CONSENSUS_HARD, 'processbench_f1')} vs soft "
             f"{_p('fig4', CONSENSUS_SOFT, 'processbench_f1')} F1 (before: {_p('fig4', MC, 'processbench_f1')} both)")
L3A_DECIDE = "hard and soft PRMs trained on the same filtered set large enough to separate (hundreds of instances)"


def lesson3_hard_soft(processbench: pd.DataFrame | None) -> Verdict:
    """consensus_hard vs consensus_soft on ProcessBench (the paper's deciding comparison is after filtering)."""
    avg, fmt = _pb(processbench)
    if avg is None:
        return _absent(L3A, L3A_PAPER, "no ProcessBench table (results/tables/processbench.csv)", L3A_DECIDE)
    hard, soft = f1_est(avg, CONSENSUS_HARD), f1_est(avg, CONSENSUS_SOFT)
    if hard is None or soft is None:
        return _absent(L3A, L3A_PAPER, f"no ProcessBench row for `{CONSENSUS_HARD}` and `{CONSENSUS_SOFT}`",
                       L3A_DECIDE)
    measured = (f"ProcessBench avg F1: hard `{CONSENSUS_HARD}` {fmt.est(hard)}, soft `{CONSENSUS_SOFT}` "
                f"{fmt.est(soft)}")
    verdict, reason = separated_verdict(hard, soft, "hard", "soft")
    return _row(L3A, L3A_PAPER, L3A_DECIDE, measured, verdict, reason)


L3B = "3b. Raising the MC threshold lowers PRM quality; t = 0 is best (§3.1.4)"
L3B_PAPER = (f"Fig 5: ProcessBench F1 {_p('fig5', 't0', 'processbench_f1')} at t = 0 falling to "
             f"{_p('fig5', 't7/8', 'processbench_f1')} at t = 7/8")
L3B_DECIDE = ("the sweep's label accuracy against exact truth (label audit), or its PRMs trained on hundreds of "
              "instances each")


def lesson3_threshold(processbench: pd.DataFrame | None, trainsets: pd.DataFrame | None = None,
                      threshold_sweep: Sequence | None = None, audit: pd.DataFrame | None = None) -> Verdict:
    """The sweep's two ends, fixed in advance: t = 0 (`mc_hard`) vs the largest threshold trained."""
    avg, fmt = _pb(processbench)
    if avg is None:
        return _absent(L3B, L3B_PAPER, "no ProcessBench table (results/tables/processbench.csv)", L3B_DECIDE)
    pts = [(t, n, f1_est(avg, n)) for t, n in sweep_points(avg, trainsets, threshold_sweep)]
    pts = [(t, n, e) for t, n, e in pts if e is not None]
    if len(pts) < 2 or pts[0][0] != 0:
        return _absent(L3B, L3B_PAPER, "fewer than two MC thresholds (t = 0 and a larger one) have a ProcessBench "
                       "row (config labels.mc threshold sweep)", L3B_DECIDE)
    (t0, _, e0), (tk, _, ek) = pts[0], pts[-1]
    measured = "ProcessBench avg F1: " + "; ".join(f"t = {frac_text(t)} `{n}` {fmt.est(e)}" for t, n, e in pts)
    measured += _audit_note(audit, "threshold")
    verdict, reason = separated_verdict(e0, ek, f"t = {frac_text(t0)}", f"t = {frac_text(tk)}")
    return _row(L3B, L3B_PAPER, L3B_DECIDE, measured, verdict, reason)


L4 = "4. Policies write correct answers over flawed processes, which Best-of-N rewards (§3.2, Fig 6)"
L4_PAPER = ("Fig 6 (human annotation of the policy's correct-answer responses): "
            f"{_p('fig6', 'policy', 'gsm8k')} % GSM8K, {_p('fig6', 'policy', 'math')} % MATH, "
            f"{_p('fig6', 'policy', 'olympiadbench')} % OlympiadBench, {_p('fig6', 'policy', 'omnimath')} % Omni-MATH "
            "flawed")
L4_DECIDE = ("an exact process checker on the policy's samples (every `expression = number` verified), or a "
             "judge that beats the structure-only baseline, on multi-step Best-of-N problems")


def _pooled_rate(rows: pd.DataFrame) -> tuple[Est, int, int] | None:
    """Pooled share (%) with its Wilson interval from per-dataset cells (value in %, n judged)."""
    n = pd.to_numeric(rows["n"], errors="coerce")
    v = pd.to_numeric(rows["value"], errors="coerce")
    ok = n.notna() & v.notna() & (n > 0)
    if not ok.any():
        return None
    k, m = int(round(float((v[ok] * n[ok] / 100).sum()))), int(n[ok].sum())
    lo, hi = wilson_interval(k, m)
    return Est(100 * k / m, lo, hi), k, m


def _checker_bon_rate(checker_bon: pd.DataFrame | None) -> tuple[Est, int, int, str] | None:
    """The checker's flawed-process share among the correct Best-of-N samples, pooled over benchmarks
    (results/tables/process_check_bon.csv, metric `flawed_among_correct`), with its step coverage."""
    if not has_columns(checker_bon, ("metric", "count", "total")):
        return None
    rows = checker_bon[checker_bon["metric"].astype(str) == "flawed_among_correct"]
    k, m = int(pd.to_numeric(rows["count"]).sum()), int(pd.to_numeric(rows["total"]).sum())
    if m == 0:
        return None
    lo, hi = wilson_interval(k, m)
    cov = checker_bon[checker_bon["metric"].astype(str) == "step_coverage"]
    ck, cm = int(pd.to_numeric(cov["count"]).sum()), int(pd.to_numeric(cov["total"]).sum())
    coverage = f"; it could check {100 * ck / cm:.0f} % of their steps" if cm else ""
    return Est(100 * k / m, lo, hi), k, m, coverage  # wilson_interval is in percent


def lesson4_flawed_process(fig6: pd.DataFrame | None, processbench: pd.DataFrame | None = None,
                           judge_critics: Sequence[str] = (), judge_pb: pd.DataFrame | None = None,
                           checker_bon: pd.DataFrame | None = None) -> Verdict:
    """The flaw rate among the policy's correct answers (Figure 6 cells, key `policy`), pooled over
    datasets, per instrument. The arithmetic process checker (its row, FLAW_ROWS) decides when present: it
    verifies every `expression = number` and raised no false alarm on the constructed gold solutions
    (process_check.csv), so its rate is a lower bound on the flaw rate and can only reproduce the claim or
    leave it undecided. Without it, the judge's rate decides only if the instrument is shown to work: the
    labelling judge, scored as a ProcessBench critic (`judge_critics`: its critic rows in config order; the
    first one present counts), must beat the structure-only baseline (paired interval above 0). Human labels
    of the annotation sheet (the paper's own instrument, row FLAW_ROWS["policy_human"]) decide before all
    of these. The claim is that the rate is above 0, so it is never "contradicted"."""
    human = (fig6[(fig6["key"].astype(str) == "policy") & (fig6["row"].astype(str) == FLAW_ROWS["policy_human"])]
             if has_columns(fig6, ("key", "row", "n", "value")) else None)
    if human is not None and len(human) and _pooled_rate(human) is not None:
        est_h, kh, mh = _pooled_rate(human)
        measured = (f"flawed per human annotation of random correct-answer policy responses: {kh} of {mh}, "
                    f"{Fmt(1.0).est(est_h)} %")
        verdict, reason = interval_verdict(est_h, 0.0, "0")
        if verdict != REPRODUCED:
            verdict, reason = UNDECIDABLE, f"the human rate's interval contains 0 ({mh} labelled responses)"
        return _row(L4, L4_PAPER, L4_DECIDE, measured, verdict, reason)
    bon_rate = _checker_bon_rate(checker_bon)
    if bon_rate is not None:  # the Best-of-N samples themselves, where the lesson lives
        est_b, kb, mb, coverage = bon_rate
        measured = (f"flawed per the arithmetic checker among the policy's correct Best-of-N samples: {kb} of {mb}, "
                    f"{Fmt(1.0).est(est_b)} %{coverage} (a lower bound: unchecked steps count as sound)")
        verdict, reason = interval_verdict(est_b, 0.0, "0")
        if verdict != REPRODUCED:
            verdict, reason = UNDECIDABLE, f"the checker's interval contains 0 ({mb} correct-answer samples)"
        return _row(L4, L4_PAPER, L4_DECIDE, measured, verdict, reason)
    if not has_columns(fig6, ("key", "n", "value")):
        return _absent(L4, L4_PAPER, "no Figure 6 cells (results/tables/fig6_flawed_process.csv)", L4_DECIDE)
    pol = fig6[fig6["key"].astype(str) == "policy"]
    rows = pol["row"].astype(str) if "row" in pol else pd.Series("", index=pol.index)
    is_checker = rows == FLAW_ROWS["policy_checker"]
    checker = _pooled_rate(pol[is_checker]) if is_checker.any() else None
    judged = pol[~is_checker & (rows != FLAW_ROWS["policy_human"])]
    pooled = _pooled_rate(judged) if len(judged) else None
    if pooled is None and checker is None:
        return _absent(L4, L4_PAPER, "no judged correct-answer policy responses (Figure 6 has no `policy` cells)",
                       L4_DECIDE)
    fmt = Fmt(1.0)
    parts = []
    if checker is not None:
        est_c, kc, mc = checker
        parts.append(f"flawed per the arithmetic checker: {kc} of {mc} correct-answer responses, {fmt.est(est_c)} %")
    if pooled is not None:
        est, k, m = pooled
        parts.append(f"per the LLM judge: {k} of {m}, {fmt.est(est)} %")
    measured = "; ".join(parts)
    if checker is not None:
        verdict, reason = interval_verdict(checker[0], 0.0, "0")
        if verdict == CONTRADICTED:  # unreachable for a rate ≥ 0; kept explicit: a lower bound never contradicts
            verdict, reason = UNDECIDABLE, "the checker's rate is a lower bound"
        if verdict == UNDECIDABLE:
            reason = (f"the checker's interval contains 0 ({mc} correct-answer responses; it sees arithmetic "
                      "errors only)")
        return _row(L4, L4_PAPER, L4_DECIDE, measured, verdict, reason)
    avg, fpb = _pb(processbench)
    deltas = [(c, delta_est(avg, c)) for c in judge_critics] if avg is not None else []
    own = _judge_pb_deltas(judge_pb).get("judge")  # the setting with the prompt that labelled
    if own is not None:  # the judge with the very prompt that labelled: the instrument itself
        deltas, fpb = [("judge, its labelling prompt", own)], fpb or Fmt(1.0)
    # the first critic of the judge's model in config order (fixed in advance, not the best-scoring one)
    deltas = [(c, d) for c, d in deltas if d is not None][:1]
    if deltas:
        measured += "; the judge as critic minus structure-only: " + ", ".join(
            f"`{c}` {fpb.diff(d)}" for c, d in deltas)
    if not deltas:
        return Verdict(L4, L4_PAPER, measured, UNDECIDABLE, "the judge's error finding is not measured (no critic row "
                       "of the labelling judge with a paired difference to the structure-only baseline)", L4_DECIDE)
    if not all(d.has_ci and d.lo > 0 for _, d in deltas):
        return Verdict(L4, L4_PAPER, measured, UNDECIDABLE, "the judge that measured the rate does not beat the "
                       "structure-only baseline at finding errors, so its verdicts do not measure flaws", L4_DECIDE)
    verdict, reason = interval_verdict(est, 0.0, "0")
    return _row(L4, L4_PAPER, L4_DECIDE, measured, verdict, reason)


L5 = "5. PRMs' minimum step score sits on the final step: Best-of-N drifts to outcome scoring (§3.2, Fig 8)"
# Figure 8's two groups of PRMs: most, and the outcome-leaning ones the paper names
_FIG8_MOST = ("rlhflow_prm_mistral_8b", "mc_math_shepherd", "rlhflow_prm_deepseek_8b", "qwen25_math_prm_7b",
              "qwen25_math_prm_72b", "human")
_FIG8_HIGH = ("skywork_prm_7b", "math_shepherd_prm_7b", "eurus_prm_stage1", "eurus_prm_stage2")
L5_PAPER = ("Fig 8: share of all Best-of-8 responses with the minimum at the final step "
            f"{published_range('fig8', _FIG8_MOST, 'min_at_last')} % for most PRMs, "
            f"{published_range('fig8', _FIG8_HIGH, 'min_at_last')} % "
            "for Skywork-7B, Math-Shepherd-PRM-7B and Eurus (length mix not published)")
L5_DECIDE = ("Best-of-N problems whose responses have ≥ 3 steps, in the hundreds (e.g. 2–4 terms with `*`), "
             "so the observed share can be told from its chance rate")
L5_DECIDE_LATER = ("an MC training set with at least {n} labelled steps after a response's first step (MC keeps "
                   "steps up to the first negative one: a policy whose first steps are mostly right, or more "
                   "training responses)")
# Fixed in advance: a PRM that saw fewer labelled steps after the first learnt "first step" against "no
# step", not what a last step looks like, so where its minimum falls says nothing about outcome drift.
MIN_LATER_STEPS = 30


def _fig8_cell(fig8: pd.DataFrame, prm: str, column: str, stage: str) -> pd.Series | None:
    r = fig8[(fig8["row"].astype(str) == prm) & (fig8["column"].astype(str) == column)
             & (fig8["stage"].astype(str) == stage)]
    return None if r.empty else r.iloc[0]


def _later_steps(trainsets: pd.DataFrame | None, prm: str) -> tuple[int, int] | None:
    """(instances, labelled steps after each instance's first) of `prm`'s training set (trainsets.csv)."""
    if not has_columns(trainsets, ("variant", "n_instances", "n_steps")):
        return None
    r = trainsets[trainsets["variant"].astype(str) == prm]
    if r.empty:
        return None
    n, steps = (pd.to_numeric(r[c], errors="coerce").iloc[0] for c in ("n_instances", "n_steps"))
    return (int(n), int(steps - n)) if finite(n) and finite(steps) else None


def lesson5_min_at_last(fig8: pd.DataFrame | None, prm: str = MIN_AT_LAST_PRM,
                        trainsets: pd.DataFrame | None = None) -> Verdict:
    """`prm`'s share of responses of 3+ steps (all Best-of-N responses, the paper's population) whose
    minimum step score is on the final step, against the chance rate of the same responses (Figure 8
    cells): above chance → reproduced, below → contradicted. One- and two-step responses are reported
    apart (100 % by definition; about 50 % by chance). With `trainsets`, a PRM trained on fewer than
    MIN_LATER_STEPS labelled steps after the first is "undecidable here" whatever the share."""
    if not has_columns(fig8, ("row", "column", "stage", "n", "value", "ci_low", "ci_high")):
        return _absent(L5, L5_PAPER, "no Figure 8 cells per response length (results/tables/fig8_min_at_last_step.csv)",
                       L5_DECIDE)
    obs = _fig8_cell(fig8, prm, FIG8_HEADLINE, "all responses: observed")
    chance = _fig8_cell(fig8, prm, FIG8_HEADLINE, "all responses: chance")
    short = []
    for col, what in (("1 step", "by definition"), ("2 steps", "chance")):
        o, c = (_fig8_cell(fig8, prm, col, "all responses: observed"),
                _fig8_cell(fig8, prm, col, "all responses: chance"))
        if o is not None and c is not None:
            short.append(f"{col}: {float(o['value']):.1f} % ({what} {float(c['value']):.1f} %, n = {int(o['n'])})")
    if obs is None or chance is None or not finite(obs["n"]) or int(obs["n"]) == 0:
        measured = f"`{prm}`: no response of 3+ steps" + ("; " + "; ".join(short) if short else "")
        if _fig8_cell(fig8, prm, "all", "all responses") is None and not short:
            return _absent(L5, L5_PAPER, f"no Figure 8 cells for `{prm}`", L5_DECIDE)
        return Verdict(L5, L5_PAPER, measured, UNDECIDABLE, "no Best-of-N response has 3 or more steps: a "
                       "one-step response is 'min at last' by definition, a two-step one by chance half the time",
                       L5_DECIDE)
    est = Est(float(obs["value"]), float(obs["ci_low"]), float(obs["ci_high"]))
    ch = float(chance["value"])
    measured = (f"`{prm}`, 3+ steps: {Fmt(1.0).est(est)} % of {int(obs['n'])} responses vs chance {ch:.1f} %"
                + ("; " + "; ".join(short) if short else ""))
    verdict, reason = interval_verdict(est, ch, f"the chance rate {ch:.1f} %")
    later = _later_steps(trainsets, prm)
    if later is not None:
        measured += f"; `{prm}` trained on {later[0]} instances, {later[1]} labelled steps after the first"
        if later[1] < MIN_LATER_STEPS:
            return Verdict(L5, L5_PAPER, measured, UNDECIDABLE,
                           f"`{prm}` saw {later[1]} labelled steps after a first step (fewer than {MIN_LATER_STEPS}): "
                           "it never learnt what a later or last step looks like, so where its minimum falls "
                           "says nothing about a drift to outcome scoring", L5_DECIDE_LATER.format(n=MIN_LATER_STEPS))
    return _row(L5, L5_PAPER, L5_DECIDE, measured, verdict, reason)


L6 = "6. A PRM trained with the paper's recipe beats majority voting in Best-of-N (§4, Table 6)"
_L6_GAIN = f"""{published_value('table6', 'qwen25_math_prm_7b', 'average')
                - published_value('table6', 'maj', 'average'):+.1f}"""
L6_PAPER = (f"Table 6: Qwen2.5-Math-PRM-7B {_p('table6', 'qwen25_math_prm_7b')} vs maj@8 {_p('table6', 'maj')} "
            f"({_L6_GAIN}); most public PRMs at or below maj@8")
L6_DECIDE = ("the recipe's PRM (consensus-filtered hard labels) trained in distribution for the Best-of-N "
             f"policy, on enough problems that the paired interval is narrower than the paper's {_L6_GAIN} points")


def _trained_on(trainsets: pd.DataFrame | None, prm: str) -> str:
    """"; trained on N instances" from trainsets.csv (a verdict on a PRM says what it learnt from)."""
    if not has_columns(trainsets, ("variant", "n_instances")):
        return ""
    r = trainsets[trainsets["variant"].astype(str) == prm]
    n = pd.to_numeric(r["n_instances"], errors="coerce")
    return (f"; `{prm}` trained on {int(n.iloc[0])} instances (the paper's: ~{published_size('fig4', RECIPE)})"
            if len(n) and finite(n.iloc[0]) else "")


def lesson6_bon_vs_maj(bon: pd.DataFrame | None, aggregation: str = "product", prm: str = RECIPE,
                       trainsets: pd.DataFrame | None = None) -> Verdict:
    """`prm` (the paper's recipe) minus maj@N in Best-of-N, its paired interval (bon.csv `<metric>-maj`,
    the average row at the largest N)."""
    if not has_columns(bon, ("prm", "benchmark", "metric", "n", "accuracy", "ci_low", "ci_high")):
        return _absent(L6, L6_PAPER, "no Best-of-N table (results/tables/bon.csv)", L6_DECIDE)
    ba = bon_average(bon, aggregation)
    if ba is None:
        return _absent(L6, L6_PAPER, "the Best-of-N table has no `average` rows with a prm_* score", L6_DECIDE)
    fmt = Fmt(scale_of(pd.to_numeric(bon.loc[~bon["metric"].astype(str).str.endswith("-maj"), "accuracy"],
                                    errors="coerce")))
    acc, paired, maj = ba["acc"].get(prm), ba["paired"].get(prm), ba["maj"].get(prm)
    if acc is None:
        return _absent(L6, L6_PAPER, f"no Best-of-N row for the recipe's PRM `{prm}`", L6_DECIDE)
    n_val, col = ba["N"], ba["metric"]
    measured = f"`{prm}` {col}@{n_val} {fmt.est(acc)}" + (f", maj@{n_val} {fmt.est(maj)}" if maj is not None else "")
    if paired is None:  # the two unpaired intervals then (conservative: they share the problems)
        verdict, reason = separated_verdict(acc, maj, prm, f"maj@{n_val}")
        reason = (f"no paired difference to maj@{n_val} (metric `{col}-maj`): "
                  + (reason if verdict == UNDECIDABLE else "decided by the two unpaired intervals"))
        return _row(L6, L6_PAPER, L6_DECIDE, measured, verdict, reason)
    measured += f"; paired difference {fmt.diff(paired)} points" + _trained_on(trainsets, prm)
    verdict, reason = interval_verdict(paired, 0.0, "0")
    return _row(L6, L6_PAPER, L6_DECIDE, measured, verdict, reason)


# ------------------------------------------------------------------------------------------------

def _guarded(fn: Callable[[], Verdict], lesson: str, paper: str) -> Verdict:
    """A lesson whose row cannot be computed becomes a row saying so, never a failed report."""
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - the report must build whatever the tables hold
        log.warning("verdicts: lesson %r failed: %r", lesson, e)
        return Verdict(lesson, paper, "—", ABSENT, f"could not be computed from this run's tables "
                       f"({type(e).__name__}: {e})")


def verdict_rows(*, processbench: pd.DataFrame | None = None, bon: pd.DataFrame | None = None,
                 judge_pb: pd.DataFrame | None = None, audit: pd.DataFrame | None = None,
                 checker_bon: pd.DataFrame | None = None,
                 trainsets: pd.DataFrame | None = None, fig6: pd.DataFrame | None = None,
                 fig8: pd.DataFrame | None = None, aggregation: str = "product",
                 threshold_sweep: Sequence | None = None, judge_critics: Sequence[str] = ()) -> list[Verdict]:
    """Every lesson's row, in order. `processbench`, `bon`, `trainsets`: results/tables/*.csv (bon: the
    main policy's rows at the main N); `fig6`, `fig8`: those artifacts' cells; `judge_critics`: the
    ProcessBench critic rows of the model that labels (`critic-<name>`); `judge_pb`:
    results/tables/judge_processbench.csv (the labelling judge scored with its own prompt); `audit`:
    results/tables/label_audit.csv (label quality against exact truth: context, never the verdict);
    `checker_bon`: results/tables/process_check_bon.csv (lesson 4 on the Best-of-N samples)."""
    calls = [
        (L1, L1_PAPER, lambda: lesson1_label_sources(processbench, judge_pb, audit)),
        (L2, L2_PAPER, lambda: lesson2_consensus(processbench, trainsets, audit)),
        (L3A, L3A_PAPER, lambda: lesson3_hard_soft(processbench)),
        (L3B, L3B_PAPER, lambda: lesson3_threshold(processbench, trainsets, threshold_sweep, audit)),
        (L4, L4_PAPER, lambda: lesson4_flawed_process(fig6, processbench, judge_critics, judge_pb, checker_bon)),
        (L5, L5_PAPER, lambda: lesson5_min_at_last(fig8, trainsets=trainsets)),
        (L6, L6_PAPER, lambda: lesson6_bon_vs_maj(bon, aggregation, trainsets=trainsets)),
    ]
    return [_guarded(fn, lesson, paper) for lesson, paper, fn in calls]
