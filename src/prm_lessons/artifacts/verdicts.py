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
- Every row has a gate, fixed here before any run: a precondition its instrument must pass before it
  may say reproduced OR contradicted (equal training sizes and a PRM above the structure-only baseline;
  a judge above that baseline; enough solutions per kind, MIN_PER_KIND; the checker's false alarms on
  gold solutions at most MAX_FALSE_ALARM; MIN_LATER_STEPS). A failed gate gives "undecidable here" with
  the reason computed from the run, and the row shows its gate ("gate: …" in `measured`). Where the
  precondition cannot be met at laptop scale (lessons 2, 3a: a judge; 6: thousands of problems) the
  reason says "not a laptop lesson" and the size that would decide it; where it is met (a paper-scale
  run), the interval decides as for every other row.
- Label-level rows ("(label level) …") test a mechanism on the labels themselves (the pool's exact step
  truth, label_audit.csv `mechanism` rows), never a PRM; PRM-level rows never name the label audit as
  what would decide them.

One function per lesson, each taking the frames it needs (None when absent). A new measurement (a label
audit, a process checker's flaw rate, a same-pool label comparison) plugs in as a keyword of its lesson's
function and is passed by `verdict_rows`. Numbering: the lessons follow the paper's §3.1.2, §3.1.3,
§3.1.4, §3.2 and §4 (Table 6); 1a / 1b, 4a / 4b split a lesson by instrument.

Same-pool design (the embedded run): `exact`, `mc_hard`, `mc_hard_t1of2`, `mc_soft` (and, where the judge
labels the pool, `judge`, `consensus_*`) train on ONE pool of constructed solutions with exact step truth;
processbench_paired.csv holds their paired F1 differences with intervals over training resamples of the
pool and evaluation cases. `human` trains on another pool (context only); `checker` may be absent.

Pure: frames in, rows out; the verdict vocabulary, the interval rules and the Markdown table are
prm_lessons.artifacts.verdict_rules (rule glue: prm_lessons.rules.paper.paper_report).
"""
from __future__ import annotations

import logging
import math
from typing import Callable, Sequence

import pandas as pd

from prm_lessons.artifacts.estimates import (
    STRUCTURE,
    Est,
    Fmt,
    bon_average,
    delta_est,
    f1_est,
    finite,
    frac_text,
    has_columns,
    paired_est,
    pb_average,
    scale_of,
    sweep_points,
)
from prm_lessons.artifacts.estimates import int_or_none as _int
from prm_lessons.artifacts.estimates import paired_how as _paired_how
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


def _f(x) -> float:
    return float(x) if finite(x) else math.nan

# Fixed in advance (never chosen from the results): the PRMs each lesson compares.
MC, JUDGE, HUMAN, CHECKER, EXACT = "mc_hard", "judge", "human", "checker", "exact"
CONSENSUS_HARD, CONSENSUS_SOFT = "consensus_hard", "consensus_soft"
RECIPE = CONSENSUS_HARD          # the paper's final recipe: consensus-filtered hard labels (§4.1)
MIN_AT_LAST_PRM = MC             # Figure 8: the paper ties the shift to outcome to MC (outcome-derived) labels
FIG8_HEADLINE = "3+ steps"       # artifacts/defs/fig8_min_at_last_step.LENGTH_COLUMNS["3+"]
# Gates, fixed before any run (module docstring):
MIN_PER_KIND = 8                 # label-level rows and 4b: at least this many solutions / cases of each kind
MAX_FALSE_ALARM = 0.05           # 4a: the checker's false-alarm rate on constructed gold solutions at most this
NOT_LAPTOP = "not a laptop lesson"
PF, PCT = Fmt(100.0), Fmt(1.0)   # fractions (the paired table) and percents, as points


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

# ------------------------------------------------------------------------------------------------
# Shared instruments: the paired table, the structure-only gate, the judge's instrument check, sizes
# ------------------------------------------------------------------------------------------------

def _beats(e: Est | None) -> bool:
    return e is not None and e.has_ci and e.lo > 0


def _vs_structure(prm: str, paired: pd.DataFrame | None, avg: pd.DataFrame | None,
                  fmt: Fmt | None) -> tuple[Est | None, str]:
    """`prm` minus the structure-only baseline: the paired table's row (training variance included) first,
    else processbench.csv's paired-over-cases delta; (None, '… not measured') when neither has it."""
    p = paired_est(paired, prm, STRUCTURE)
    if p is not None:
        return p.est, f"`{prm}` − structure-only {PF.diff(p.est)} points (paired, training resamples included)"
    d = delta_est(avg, prm) if avg is not None else None
    if d is not None:
        return d, f"`{prm}` − structure-only {(fmt or PF).diff(d)} points (paired over cases)"
    return None, f"`{prm}` − structure-only: not measured"


def _sizes(trainsets: pd.DataFrame | None) -> dict[str, int]:
    if not has_columns(trainsets, ("variant", "n_instances")):
        return {}
    n = pd.to_numeric(trainsets["n_instances"], errors="coerce")
    return {str(v): int(x) for v, x in zip(trainsets["variant"], n) if finite(x)}


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


def _judge_instrument(judge_pb: pd.DataFrame | None, processbench: pd.DataFrame | None,
                      judge_critics: Sequence[str] = ()) -> tuple[str, Est, Fmt] | None:
    """The labelling judge's instrument check: its F1 minus structure-only on ProcessBench, with the very
    prompt that labelled (judge_processbench.csv, setting `judge`), else its first critic row in config
    order (processbench.csv); None when neither is in the run."""
    own = _judge_pb_deltas(judge_pb).get("judge")
    if own is not None:
        return "its labelling prompt", own, PF
    avg, fmt = _pb(processbench)
    if avg is not None:
        for c in judge_critics:
            d = delta_est(avg, c)
            if d is not None:
                return f"`{c}`", d, fmt
    return None


def _judge_gate_text(inst: tuple[str, Est, Fmt]) -> str:
    name, d, fmt = inst
    return f"the judge ({name}) F1 − structure-only {fmt.diff(d)} points on ProcessBench"


JUDGE_UNMEASURED = ("gate not measured: the judge's instrument check (its F1 minus the structure-only baseline on "
                    "ProcessBench: results/tables/judge_processbench.csv or a critic row of the labelling judge) is "
                    "not in this run, so its labels are not known to carry any error signal")


def _gate_measured(parts: Sequence[str]) -> str:
    return "; gate: " + ", ".join(p for p in parts if p) if any(parts) else ""


# ------------------------------------------------------------------------------------------------
# The lessons
# ------------------------------------------------------------------------------------------------

L1 = "1a. MC-estimated labels train worse PRMs than LLM-as-a-judge and human labels (§3.1.2)"
L1A = "1a. MC-estimated labels train worse PRMs than exact labels (same pool, same size) (§3.1.2)"
_p = published_text
L1_PAPER = (f"ProcessBench avg F1 (Table 4): MC {_p('table4', MC, 'average/f1')}, judge "
            f"{_p('table4', JUDGE, 'average/f1')}, human (PRM800K) {_p('table4', HUMAN, 'average/f1')}; Best-of-8 "
            f"about equal (Table 3: {_p('table3', MC)} / {_p('table3', JUDGE)} / {_p('table3', HUMAN)})")
L1_DECIDE = ("MC, judge and exact labels on the same responses at the same size (the same-pool comparison), "
             "with a judge that beats the structure-only baseline (at 135M only a reference-guided one might; "
             "else a ≥1.5B judge on a GPU)")
L1A_PAPER = (f"ProcessBench avg F1 (Table 4): MC {_p('table4', MC, 'average/f1')} vs human-annotated (PRM800K, "
             f"another pool) {_p('table4', HUMAN, 'average/f1')}; Best-of-8 about equal (Table 3: "
             f"{_p('table3', MC)} / {_p('table3', HUMAN)})")
L1A_DECIDE = ("a larger constructed pool (more instances in every training resample) and more ProcessBench cases, "
              "with the exact-label PRM above the structure-only baseline")


def _lesson1_unpaired(processbench: pd.DataFrame | None, judge_pb: pd.DataFrame | None,
                      audit: pd.DataFrame | None) -> Verdict:
    """Runs without the same-pool paired table (e.g. the paper config): MC vs exact labels (`exact`, else
    the arithmetic checker's `checker`) when present, else vs the judge, from the two unpaired intervals.
    `human` (by construction) is context only: it trains on another pool."""
    avg, fmt = _pb(processbench)
    if avg is None:
        return _absent(L1, L1_PAPER, "no ProcessBench table (results/tables/processbench.csv)", L1_DECIDE)
    exact_name = next((n for n in (EXACT, CHECKER) if f1_est(avg, n) is not None), EXACT)
    mc, judge, exact = f1_est(avg, MC), f1_est(avg, JUDGE), f1_est(avg, exact_name)
    if mc is None or (judge is None and exact is None):
        return _absent(L1, L1_PAPER, f"no ProcessBench row for `{MC}` and `{JUDGE}` or `{EXACT}` (MC and one "
                       "other are needed)", L1_DECIDE)
    parts = [f"MC `{MC}` {fmt.est(mc)}"]
    if judge is not None:
        parts.append(f"judge `{JUDGE}` {fmt.est(judge)}")
    if exact is not None:
        parts.append(f"exact labels `{exact_name}` {fmt.est(exact)}")
    measured = "ProcessBench avg F1, same responses (unpaired intervals): " + ", ".join(parts)
    human = f1_est(avg, HUMAN)
    if human is not None:
        measured += f"; human stand-in `{HUMAN}` {fmt.est(human)} (another pool, not compared)"
    measured += _structure_note(avg, fmt, [MC] + ([exact_name] if exact is not None else [JUDGE]))
    measured += _judge_pb_note(judge_pb) + _audit_note(audit, "sources")
    if exact is not None:
        verdict, reason = separated_verdict(exact, mc, "exact labels", "MC")
    else:
        verdict, reason = separated_verdict(judge, mc, "judge", "MC")
    return _row(L1, L1_PAPER, L1_DECIDE, measured, verdict, reason)


def lesson1_label_sources(processbench: pd.DataFrame | None, judge_pb: pd.DataFrame | None = None,
                          audit: pd.DataFrame | None = None, paired: pd.DataFrame | None = None,
                          trainsets: pd.DataFrame | None = None) -> Verdict:
    """1a: `exact` (exact step labels) vs `mc_hard` (MC, t = 0), both trained on the same constructed pool
    of solutions: their PAIRED ProcessBench F1 difference (processbench_paired.csv, an interval over
    training resamples of the pool and evaluation cases). Above 0 → reproduced, below → contradicted.
    Gate (fixed before any run): the two trained on equal n_instances (trainsets.csv) and the exact PRM
    beats the structure-only baseline (its paired difference to it has lo > 0); else the heads measure
    noise and the row is "undecidable here" naming what failed. Without the paired table (runs without
    the pool, e.g. the paper config): the unpaired comparison of _lesson1_unpaired."""
    d = paired_est(paired, EXACT, MC)
    if d is None:
        return _lesson1_unpaired(processbench, judge_pb, audit)
    avg, fmt = _pb(processbench)
    parts = []
    for name, what in ((EXACT, "exact"), (MC, "MC")):
        own = paired_est(paired, name)
        e = own.est if own is not None else (f1_est(avg, name) if avg is not None else None)
        if e is not None:
            parts.append(f"{what} `{name}` {(PF if own is not None else fmt).est(e)}")
    measured = (f"ProcessBench avg F1 on the same pool: {', '.join(parts)}; " if parts else "") + (
        f"paired difference exact − MC {PF.diff(d.est)} points {_paired_how(d)}")
    sizes = _sizes(trainsets)
    ne, nm = sizes.get(EXACT), sizes.get(MC)
    st, st_text = _vs_structure(EXACT, paired, avg, fmt)
    size_text = (f"trained on {ne} vs {nm} instances" if ne is not None and nm is not None
                 else "training sizes not in trainsets.csv")
    measured += _gate_measured([size_text, st_text])
    failed = []
    if ne is None or nm is None or ne != nm:
        failed.append(f"the two PRMs are not shown to train on equal sizes ({size_text})")
    if not _beats(st):
        failed.append(f"the exact-label PRM does not beat the structure-only baseline ({st_text})")
    if failed:
        return Verdict(L1A, L1A_PAPER, measured, UNDECIDABLE, "gate not passed: " + "; ".join(failed)
                       + ": the heads measure training noise, not the label source", L1A_DECIDE)
    verdict, reason = interval_verdict(d.est, 0.0, "0")
    return _row(L1A, L1A_PAPER, L1A_DECIDE, measured, verdict, reason)


L1B = "1b. LLM-as-a-judge labels train better PRMs than MC labels (§3.1.2)"
L1B_PAPER = (f"ProcessBench avg F1 (Table 4): judge {_p('table4', JUDGE, 'average/f1')} vs MC "
             f"{_p('table4', MC, 'average/f1')}")
L1B_DECIDE = ("a labelling judge that beats the structure-only baseline on ProcessBench (the embedded run's 135M "
              "judge does not; a ≥1.5B judge on a GPU), labelling the same pool as MC")


def lesson1b_judge(processbench: pd.DataFrame | None, judge_pb: pd.DataFrame | None = None,
                   paired: pd.DataFrame | None = None, judge_critics: Sequence[str] = ()) -> Verdict:
    """1b: `judge` vs `mc_hard`. Gate (fixed before any run): the labelling judge's own instrument check,
    its F1 minus structure-only on ProcessBench (judge_processbench.csv, else its first critic row) must
    lie above 0; a judge that does not beat the structure rule labels without error signal, so PRMs on
    its labels test nothing. When it passes: the paired difference judge − MC (processbench_paired.csv)
    above 0 reproduces, below contradicts; without a paired row, the two unpaired intervals."""
    inst = _judge_instrument(judge_pb, processbench, judge_critics)
    avg, fmt = _pb(processbench)
    pj = paired_est(paired, JUDGE, MC)
    judge, mc = (f1_est(avg, JUDGE), f1_est(avg, MC)) if avg is not None else (None, None)
    if pj is not None:
        cmp = f"paired ProcessBench avg F1 difference judge − MC {PF.diff(pj.est)} points {_paired_how(pj)}"
    elif judge is not None and mc is not None:
        cmp = f"ProcessBench avg F1: judge `{JUDGE}` {fmt.est(judge)}, MC `{MC}` {fmt.est(mc)} (unpaired)"
    else:
        cmp = ""
    if inst is None and not cmp:
        return _absent(L1B, L1B_PAPER, f"no judge in this run: no ProcessBench row for `{JUDGE}` and no instrument "
                       "check of the labelling judge (judge_processbench.csv or a critic row)", L1B_DECIDE)
    measured = (cmp or f"no PRM trained on `{JUDGE}` labels") + (
        _gate_measured([_judge_gate_text(inst)]) if inst is not None else "; gate: not measured")
    if inst is None:
        return Verdict(L1B, L1B_PAPER, measured, UNDECIDABLE, JUDGE_UNMEASURED, L1B_DECIDE)
    if not _beats(inst[1]):
        return Verdict(L1B, L1B_PAPER, measured, UNDECIDABLE, "not decidable with this run's judge: it does not "
                       f"beat the structure-only baseline ({_judge_gate_text(inst)}), so its labels carry no "
                       "measured error signal", L1B_DECIDE)
    if not cmp:
        return _absent(L1B, L1B_PAPER, f"no ProcessBench row for `{JUDGE}` and `{MC}` (both are needed)", L1B_DECIDE)
    verdict, reason = (interval_verdict(pj.est, 0.0, "0") if pj is not None
                       else separated_verdict(judge, mc, "judge", "MC"))
    return _row(L1B, L1B_PAPER, L1B_DECIDE, measured, verdict, reason)


# --- label level: the mechanisms, on the pool's exact step truth (label_audit.csv, section `mechanism`)

def _mech_row(audit: pd.DataFrame | None, metric: str, kind: str | None = None) -> pd.Series | None:
    """A pooled (generator `all`) mechanism row of the label audit; the largest threshold when several."""
    if not has_columns(audit, ("section", "generator", "kind", "metric", "value", "ci_low", "ci_high")):
        return None
    m = ((audit["section"].astype(str) == "mechanism") & (audit["generator"].astype(str) == "all")
         & (audit["metric"].astype(str) == metric))
    if kind is not None:
        m &= audit["kind"].astype(str) == kind
    r = audit[m]
    r = r[pd.to_numeric(r["value"], errors="coerce").notna()]
    if r.empty:
        return None
    if "threshold" in r:
        r = r.assign(_t=pd.to_numeric(r["threshold"], errors="coerce")).sort_values("_t", ascending=False)
    return r.iloc[0]


def _pct(r: pd.Series) -> Est:
    return Est(100 * float(r["value"]), 100 * _f(r["ci_low"]), 100 * _f(r["ci_high"]))


def _count_gate(counts: dict[str, int | None], what: str) -> str | None:
    """None when every count is ≥ MIN_PER_KIND, else the reason naming them."""
    low = {k: n for k, n in counts.items() if n is None or n < MIN_PER_KIND}
    if not low:
        return None
    shown = ", ".join(f"{k} {'not counted' if n is None else n}" for k, n in counts.items())
    return f"gate not passed: fewer than {MIN_PER_KIND} {what} ({shown})"


LM = ("(label level) 1/4. MC estimation misses errors that keep the final answer (the mechanism of lessons 1 "
      "and 4)")
LM_PAPER = ("§3.1.2: MC labels a step by whether completions from it reach the correct answer, so a wrong step "
            "from which they still reach it is labelled correct (mechanism stated, no rate published)")
LM_DECIDE = (f"at least {MIN_PER_KIND} constructed solutions of each error kind with MC labels, enough that the "
             "two detection rates separate (more solutions per kind in the pool)")


def lesson_label_mc_misses_keep(audit: pd.DataFrame | None) -> Verdict:
    """Label level (not a PRM): the share of the pool's solutions whose injected error step MC labels
    negative (t = 0, all K), answer-changing minus answer-keeping errors (label_audit.csv `mechanism`
    rows: `error_step_detected` per kind, `detection_gap` kind `error-keep` with its Newcombe interval).
    Above 0 reproduces, below contradicts. Gate (fixed before any run): at least MIN_PER_KIND solutions of
    each kind, else "undecidable here" naming the counts."""
    gap = _mech_row(audit, "detection_gap", "error-keep")
    if gap is None:
        return _absent(LM, LM_PAPER, "no mechanism rows in the label audit (results/tables/label_audit.csv, section "
                       "`mechanism`, metric `detection_gap`)", LM_DECIDE)
    parts, counts = [], {}
    for kind, label in (("error", "answer-changing"), ("keep", "answer-keeping")):
        r = _mech_row(audit, "error_step_detected", kind)
        counts[label] = _int(r["n"]) if r is not None and "n" in r else None
        if r is not None:
            k = _int(r.get("successes"))
            of = f"{k} of {counts[label]}, " if k is not None and counts[label] is not None else ""
            parts.append(f"{label} errors {of}{PCT.est(_pct(r))} %")
    est = _pct(gap)
    measured = ("MC labels (t = 0, all K) mark the injected error step negative: " + ", ".join(parts) + "; "
                if parts else "") + f"difference answer-changing − answer-keeping {PCT.diff(est)} points (Newcombe)"
    measured += _gate_measured([f"≥ {MIN_PER_KIND} solutions of each kind"])
    failed = _count_gate(counts, "solutions of a kind")
    if failed:
        return Verdict(LM, LM_PAPER, measured, UNDECIDABLE, failed, LM_DECIDE)
    verdict, reason = interval_verdict(est, 0.0, "0")
    return _row(LM, LM_PAPER, LM_DECIDE, measured, verdict, reason)


LT = ("(label level) 3b. Raising the MC threshold makes MC labels locate the first error less accurately; "
      "t = 0 is best")
LT_PAPER = (f"Fig 5 (PRM level): ProcessBench F1 {_p('fig5', 't0', 'processbench_f1')} at t = 0 falling to "
            f"{_p('fig5', 't7/8', 'processbench_f1')} at t = 7/8; the labels themselves are not published")
LT_DECIDE = f"at least {MIN_PER_KIND} pool solutions with MC labels at both ends of the sweep, enough to separate"


def lesson_label_threshold(audit: pd.DataFrame | None) -> Verdict:
    """Label level (not a PRM): MC first-error accuracy at t = 0 minus at the largest threshold t_max, over
    the same pool solutions (label_audit.csv `mechanism` row `first_error_accuracy_gap`, paired bootstrap
    interval). Above 0 reproduces (t = 0 best), below contradicts. Gate (fixed before any run): at least
    MIN_PER_KIND solutions."""
    gap = _mech_row(audit, "first_error_accuracy_gap")
    if gap is None:
        return _absent(LT, LT_PAPER, "no mechanism row `first_error_accuracy_gap` in the label audit "
                       "(results/tables/label_audit.csv)", LT_DECIDE)
    t = _f(gap.get("threshold"))
    n = _int(gap.get("n"))
    est = _pct(gap)
    measured = (f"MC first-error accuracy at t = 0 minus at t = {frac_text(t) if finite(t) else 't_max'}: "
                f"{PCT.diff(est)} points over {n if n is not None else 'an unknown number of'} solutions "
                f"(paired bootstrap)" + _audit_note(audit, "threshold")
                + _gate_measured([f"≥ {MIN_PER_KIND} solutions"]))
    failed = _count_gate({"solutions": n}, "solutions")
    if failed:
        return Verdict(LT, LT_PAPER, measured, UNDECIDABLE, failed, LT_DECIDE)
    verdict, reason = interval_verdict(est, 0.0, "0")
    return _row(LT, LT_PAPER, LT_DECIDE, measured, verdict, reason)


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


def _needs_judge(lesson: str, paper: str, decide: str, inst: tuple[str, Est, Fmt], measured: str,
                 what: str) -> Verdict:
    """The row of a lesson whose precondition (a judge above the structure-only baseline) failed."""
    return Verdict(lesson, paper, measured, UNDECIDABLE, f"{NOT_LAPTOP}: {what} needs a judge that beats the "
                   f"structure-only baseline, and this run's does not ({_judge_gate_text(inst)})", decide)


def _two_prms(processbench, paired, a: str, b: str, a_name: str, b_name: str
              ) -> tuple[str, tuple[str, str] | None]:
    """(measured text, verdict) of F1(a) vs F1(b): paired when processbench_paired.csv has the pair, else the
    two unpaired intervals; ("", None) when neither has both."""
    p = paired_est(paired, a, b)
    if p is not None:
        return (f"paired ProcessBench avg F1 difference {a_name} `{a}` − {b_name} `{b}` {PF.diff(p.est)} points "
                f"{_paired_how(p)}"), interval_verdict(p.est, 0.0, "0")
    avg, fmt = _pb(processbench)
    ea, eb = (f1_est(avg, a), f1_est(avg, b)) if avg is not None else (None, None)
    if ea is None or eb is None:
        return "", None
    return (f"ProcessBench avg F1: {a_name} `{a}` {fmt.est(ea)}, {b_name} `{b}` {fmt.est(eb)}"
            + _structure_note(avg, fmt, [a, b])), separated_verdict(ea, eb, a_name, b_name)


def lesson2_consensus(processbench: pd.DataFrame | None, trainsets: pd.DataFrame | None = None,
                      audit: pd.DataFrame | None = None, judge_pb: pd.DataFrame | None = None,
                      paired: pd.DataFrame | None = None, judge_critics: Sequence[str] = ()) -> Verdict:
    """consensus_hard vs mc_hard on ProcessBench (the filter's input is the MC set), paired when
    processbench_paired.csv has the pair; the training-set sizes from trainsets.csv as context. Gate (fixed
    before any run): the labelling judge beats the structure-only baseline (_judge_instrument); a failed
    gate says "not a laptop lesson" with the judge's measured difference, an unmeasured one "gate not
    measured". Where the gate passes (a paper-scale judge) the interval decides as before."""
    inst = _judge_instrument(judge_pb, processbench, judge_critics)
    measured, decided = _two_prms(processbench, paired, CONSENSUS_HARD, MC, "consensus", "MC")
    sizes = _sizes(trainsets)
    if measured and CONSENSUS_HARD in sizes and MC in sizes:
        measured += f"; trained on {sizes[CONSENSUS_HARD]} vs {sizes[MC]} instances"
    measured += _audit_note(audit, "consensus") if measured else ""
    gate = _gate_measured([_judge_gate_text(inst)]) if inst is not None else "; gate: not measured"
    if inst is not None and not _beats(inst[1]):
        return _needs_judge(L2, L2_PAPER, L2_DECIDE, inst, (measured or "no consensus PRM") + gate,
                            "consensus filtering (MC and judge agree)")
    if decided is None:
        return _absent(L2, L2_PAPER, f"no ProcessBench row for `{CONSENSUS_HARD}` and `{MC}` (both are needed)",
                       L2_DECIDE)
    if inst is None:
        return Verdict(L2, L2_PAPER, measured + gate, UNDECIDABLE, JUDGE_UNMEASURED, L2_DECIDE)
    return _row(L2, L2_PAPER, L2_DECIDE, measured + gate, *decided)


L3A = "3a. Hard labels beat soft labels once the data is filtered (§3.1.4)"
L3A_PAPER = (f"Fig 4: after consensus filtering hard {_p('fig4', CONSENSUS_HARD, 'processbench_f1')} vs soft "
             f"{_p('fig4', CONSENSUS_SOFT, 'processbench_f1')} F1 (before: {_p('fig4', MC, 'processbench_f1')} both)")
L3A_DECIDE = ("a judge that beats the structure-only baseline (the filter needs it), and hard and soft PRMs "
              "trained on the same filtered set large enough to separate (hundreds of instances)")


def lesson3_hard_soft(processbench: pd.DataFrame | None, judge_pb: pd.DataFrame | None = None,
                      paired: pd.DataFrame | None = None, judge_critics: Sequence[str] = ()) -> Verdict:
    """consensus_hard vs consensus_soft on ProcessBench (the paper's deciding comparison is after
    filtering), paired when processbench_paired.csv has the pair. Gate as lesson 2's (the filter is the
    judge's): a failed one says "not a laptop lesson" with the judge's measured difference."""
    inst = _judge_instrument(judge_pb, processbench, judge_critics)
    measured, decided = _two_prms(processbench, paired, CONSENSUS_HARD, CONSENSUS_SOFT, "hard", "soft")
    gate = _gate_measured([_judge_gate_text(inst)]) if inst is not None else "; gate: not measured"
    if inst is not None and not _beats(inst[1]):
        return _needs_judge(L3A, L3A_PAPER, L3A_DECIDE, inst, (measured or "no consensus PRMs") + gate,
                            "hard vs soft labels after consensus filtering")
    if decided is None:
        return _absent(L3A, L3A_PAPER, f"no ProcessBench row for `{CONSENSUS_HARD}` and `{CONSENSUS_SOFT}`",
                       L3A_DECIDE)
    if inst is None:
        return Verdict(L3A, L3A_PAPER, measured + gate, UNDECIDABLE, JUDGE_UNMEASURED, L3A_DECIDE)
    return _row(L3A, L3A_PAPER, L3A_DECIDE, measured + gate, *decided)


L3B = "3b. Raising the MC threshold lowers PRM quality; t = 0 is best (§3.1.4)"
L3B_PAPER = (f"Fig 5: ProcessBench F1 {_p('fig5', 't0', 'processbench_f1')} at t = 0 falling to "
             f"{_p('fig5', 't7/8', 'processbench_f1')} at t = 7/8")
L3B_DECIDE = ("the sweep's PRMs trained on the same pool with hundreds of instances each, one end above the "
              "structure-only baseline, and more ProcessBench cases")


def lesson3_threshold(processbench: pd.DataFrame | None, trainsets: pd.DataFrame | None = None,
                      threshold_sweep: Sequence | None = None, audit: pd.DataFrame | None = None,
                      paired: pd.DataFrame | None = None) -> Verdict:
    """PRM level: the sweep's two ends, fixed in advance: t = 0 (`mc_hard`) vs the largest threshold
    trained; their paired difference (processbench_paired.csv) when present, else the unpaired intervals.
    Gate (fixed before any run): at least one end beats the structure-only baseline (else both heads are
    noise), and where trainsets.csv has both ends, they trained on equal n_instances (the sweep relabels
    the same instances). The label-level reading is its own row (lesson_label_threshold); `audit` is
    accepted for compatibility and unused."""
    avg, fmt = _pb(processbench)
    if avg is None:
        return _absent(L3B, L3B_PAPER, "no ProcessBench table (results/tables/processbench.csv)", L3B_DECIDE)
    pts = [(t, n, f1_est(avg, n)) for t, n in sweep_points(avg, trainsets, threshold_sweep)]
    pts = [(t, n, e) for t, n, e in pts if e is not None]
    if len(pts) < 2 or pts[0][0] != 0:
        return _absent(L3B, L3B_PAPER, "fewer than two MC thresholds (t = 0 and a larger one) have a ProcessBench "
                       "row (config labels.mc threshold sweep)", L3B_DECIDE)
    (t0, n0, e0), (tk, nk, ek) = pts[0], pts[-1]
    measured = "ProcessBench avg F1: " + "; ".join(f"t = {frac_text(t)} `{n}` {fmt.est(e)}" for t, n, e in pts)
    p = paired_est(paired, n0, nk)
    if p is not None:
        measured += f"; paired difference t = 0 − t = {frac_text(tk)} {PF.diff(p.est)} points {_paired_how(p)}"
        verdict, reason = interval_verdict(p.est, 0.0, "0")
    else:
        verdict, reason = separated_verdict(e0, ek, f"t = {frac_text(t0)}", f"t = {frac_text(tk)}")
    sizes = _sizes(trainsets)
    (s0, t0_text), (sk, tk_text) = _vs_structure(n0, paired, avg, fmt), _vs_structure(nk, paired, avg, fmt)
    both = n0 in sizes and nk in sizes
    measured += _gate_measured([t0_text, tk_text,
                                f"trained on {sizes[n0]} vs {sizes[nk]} instances" if both else ""])
    failed = []
    if not (_beats(s0) or _beats(sk)):
        failed.append("neither end beats the structure-only baseline, so both heads measure noise")
    if both and sizes[n0] != sizes[nk]:
        failed.append(f"the ends trained on unequal sizes ({sizes[n0]} vs {sizes[nk]} instances)")
    if failed:
        return Verdict(L3B, L3B_PAPER, measured, UNDECIDABLE, "gate not passed: " + "; ".join(failed), L3B_DECIDE)
    return _row(L3B, L3B_PAPER, L3B_DECIDE, measured, verdict, reason)


L4 = "4a. Policies write correct answers over flawed processes (§3.2, Fig 6)"
L4_PAPER = ("Fig 6 (human annotation of the policy's correct-answer responses): "
            f"{_p('fig6', 'policy', 'gsm8k')} % GSM8K, {_p('fig6', 'policy', 'math')} % MATH, "
            f"{_p('fig6', 'policy', 'olympiadbench')} % OlympiadBench, {_p('fig6', 'policy', 'omnimath')} % Omni-MATH "
            "flawed")
L4_DECIDE = ("an exact process checker on the policy's samples (every `expression = number` verified) whose "
             f"false alarms on constructed gold solutions stay ≤ {100 * MAX_FALSE_ALARM:.0f} %, or a judge that beats "
             "the structure-only baseline, on multi-step Best-of-N problems; human annotation of the correct-answer "
             "samples decides first")


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
    metric = checker_bon["metric"].astype(str)
    own = (metric == "step_coverage_correct").any()  # the correct-answer samples' own coverage, where the table has it
    cov = checker_bon[metric == ("step_coverage_correct" if own else "step_coverage")]
    ck, cm = int(pd.to_numeric(cov["count"]).sum()), int(pd.to_numeric(cov["total"]).sum())
    coverage = ""
    if cm:
        coverage = (f"; it could check {100 * ck / cm:.0f} % of their steps ({ck} of {cm})" if own else
                    f"; it could check {100 * ck / cm:.0f} % of the steps of all samples (their own coverage "
                    "is not in the table)")
    return Est(100 * k / m, lo, hi), k, m, coverage  # wilson_interval is in percent


def checker_precision(validation: pd.DataFrame | None) -> tuple[bool | None, str]:
    """4a's gate: the checker's false alarms on constructed gold solutions (process_check.csv, subset
    `all`, kind `gold`, metric `false_alarm`): (passes, text); passes None when not measured. Passes when
    at least MIN_PER_KIND gold solutions were checked and the rate is ≤ MAX_FALSE_ALARM."""
    if not has_columns(validation, ("subset", "kind", "metric", "k", "n")):
        return None, "the checker's false alarms on constructed gold solutions: not measured (no process_check.csv)"
    r = validation[(validation["subset"].astype(str) == "all") & (validation["kind"].astype(str) == "gold")
                   & (validation["metric"].astype(str) == "false_alarm")]
    k, n = (_int(r.iloc[0]["k"]), _int(r.iloc[0]["n"])) if len(r) else (None, None)
    if k is None or not n:
        return None, "the checker's false alarms on constructed gold solutions: not measured (no `false_alarm` row)"
    text = (f"the checker's false alarms on constructed gold solutions {k} of {n} ({100 * k / n:.1f} %; at most "
            f"{100 * MAX_FALSE_ALARM:.0f} % of at least {MIN_PER_KIND} allowed)")
    return n >= MIN_PER_KIND and k / n <= MAX_FALSE_ALARM, text


def _checker_gate_failed(validation: pd.DataFrame | None) -> tuple[str, str | None]:
    """(gate text for `measured`, the reason when the gate fails or is not measured)."""
    ok, text = checker_precision(validation)
    if ok is None:
        return "; gate: " + text, "gate not measured: " + text + ", so a flag is not known to mean a flaw"
    if not ok:
        return "; gate: " + text, "gate not passed: " + text
    return "; gate: " + text, None


def lesson4_flawed_process(fig6: pd.DataFrame | None, processbench: pd.DataFrame | None = None,
                           judge_critics: Sequence[str] = (), judge_pb: pd.DataFrame | None = None,
                           checker_bon: pd.DataFrame | None = None,
                           checker_validation: pd.DataFrame | None = None) -> Verdict:
    """4a: correct answers over flawed processes exist, and at what rate: the flaw rate among the policy's
    correct answers, per instrument. The arithmetic process checker decides when present (on the Best-of-N
    samples, process_check_bon.csv `flawed_among_correct`, else its Figure 6 row): it verifies every
    `expression = number`, and a step with nothing checkable counts as sound, so its rate is a LOWER BOUND
    on the flaw rate: it can reproduce the claim (interval above 0) or leave it undecidable (interval
    contains 0), never contradict it. Its coverage is over the correct-answer samples when the table has
    `step_coverage_correct`. Gate (fixed before any run): the checker's precision, its false alarms on the
    constructed gold solutions (`checker_validation`: process_check.csv), at most MAX_FALSE_ALARM of at
    least MIN_PER_KIND; failed or not measured → "undecidable here" whatever the rate. Without the
    checker, the judge's rate decides only if the instrument is shown to work: the labelling judge,
    scored as a ProcessBench critic (`judge_critics`: its critic rows in config order; the first one
    present counts), must beat the structure-only baseline (paired interval above 0). Human labels
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
        gate, failed = _checker_gate_failed(checker_validation)
        if failed:
            return Verdict(L4, L4_PAPER, measured + gate, UNDECIDABLE, failed, L4_DECIDE)
        measured += gate
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
        gate, failed = _checker_gate_failed(checker_validation)
        measured += gate
        if failed:
            return Verdict(L4, L4_PAPER, measured, UNDECIDABLE, failed, L4_DECIDE)
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


L4B = ("4b. PRMs tolerate answer-keeping flaws: an MC-trained PRM finds them less often than one trained on "
       "exact labels (§3.2, Table 5)")
L4B_PAPER = ("Table 5 (accuracy on ProcessBench cases with a correct final answer and a wrong step, avg): "
             f"MC-trained Qwen2.5-Math-7B-Math-Shepherd {_p('table5', 'mc_math_shepherd')} vs "
             f"PRM800K-trained {_p('table5', 'human')}")
L4B_DECIDE = (f"at least {MIN_PER_KIND} answer-keeping error cases on ProcessBench, enough for the two accuracies "
              "to separate (per-case predictions would allow a paired interval), with the exact-label PRM above "
              "the structure-only baseline")


def _tolerance(table5: pd.DataFrame, prm: str) -> tuple[Est, int, int] | None:
    """`prm`'s accuracy (%) on answer-keeping error cases pooled over subsets (Table 5 cells: value in %,
    n cases per subset), with its Wilson interval."""
    r = table5[(table5["row"].astype(str) == prm) & (table5["column"].astype(str) != "average")]
    n = pd.to_numeric(r["n"], errors="coerce")
    v = pd.to_numeric(r["value"], errors="coerce")
    ok = n.notna() & v.notna() & (n > 0)
    if not ok.any():
        return None
    k, m = int(round(float((v[ok] * n[ok] / 100).sum()))), int(n[ok].sum())
    lo, hi = wilson_interval(k, m)
    return Est(100 * k / m, lo, hi), k, m


def lesson4b_tolerance(table5: pd.DataFrame | None, processbench: pd.DataFrame | None = None,
                       paired: pd.DataFrame | None = None) -> Verdict:
    """4b, the Table 5 analogue on one pool: `exact` vs `mc_hard` (both trained on the same constructed
    solutions), their error-finding accuracy (prediction == the erroneous step) on the ProcessBench cases
    whose final answer is correct but a step is wrong (Table 5 cells, rows = PRMs, pooled over subsets,
    Wilson intervals). The paper: MC-trained PRMs tolerate such flaws, so exact above MC reproduces, MC
    above exact contradicts; the two unpaired intervals decide (conservative: the cases are the same).
    Gate (fixed before any run): at least MIN_PER_KIND such cases and the exact-label PRM beats the
    structure-only baseline (paired table, else processbench.csv's delta)."""
    if not has_columns(table5, ("row", "column", "n", "value")):
        return _absent(L4B, L4B_PAPER, "no Table 5 cells (results/tables/table5_prm_tolerance.csv: each PRM's "
                       "accuracy on answer-keeping error cases of ProcessBench)", L4B_DECIDE)
    ex, mc = _tolerance(table5, EXACT), _tolerance(table5, MC)
    if ex is None or mc is None:
        return _absent(L4B, L4B_PAPER, f"no Table 5 row for `{EXACT}` and `{MC}` (both PRMs trained on the same "
                       "pool are needed)", L4B_DECIDE)
    measured = ("accuracy on answer-keeping error cases (correct final answer, a wrong step): "
                f"exact `{EXACT}` {ex[1]} of {ex[2]}, {PCT.est(ex[0])} %; MC `{MC}` {mc[1]} of {mc[2]}, "
                f"{PCT.est(mc[0])} % (unpaired Wilson intervals)")
    avg, fmt = _pb(processbench)
    st, st_text = _vs_structure(EXACT, paired, avg, fmt)
    measured += _gate_measured([f"≥ {MIN_PER_KIND} cases", st_text])
    failed = []
    if min(ex[2], mc[2]) < MIN_PER_KIND:
        failed.append(f"{min(ex[2], mc[2])} answer-keeping error cases, fewer than {MIN_PER_KIND}")
    if not _beats(st):
        failed.append(f"the exact-label PRM does not beat the structure-only baseline ({st_text})")
    if failed:
        return Verdict(L4B, L4B_PAPER, measured, UNDECIDABLE, "gate not passed: " + "; ".join(failed), L4B_DECIDE)
    verdict, reason = separated_verdict(ex[0], mc[0], "exact", "MC")
    return _row(L4B, L4B_PAPER, L4B_DECIDE, measured, verdict, reason)


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
                   "steps up to the first negative one: more pool solutions, or solutions whose first steps are "
                   "mostly right)")
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


def _two_step_evidence(fig8: pd.DataFrame, prm: str) -> str:
    """The gate's evidence from this run: `prm`'s share on 2-step responses against its chance rate."""
    o = _fig8_cell(fig8, prm, "2 steps", "all responses: observed")
    c = _fig8_cell(fig8, prm, "2 steps", "all responses: chance")
    if o is None or c is None or not finite(o["value"]) or not finite(c["value"]):
        return ""
    est = Est(float(o["value"]), _f(o.get("ci_low")), _f(o.get("ci_high")))
    ch = float(c["value"])
    below = (" (below chance: its minimum sits on the first step, as a PRM that learnt only 'first step bad' "
             "would put it)") if est.has_ci and est.hi < ch else ""
    return (f"; on 2-step responses its minimum is on the last step in {PCT.est(est)} % of {_int(o['n'])} "
            f"against {ch:.0f} % by chance{below}")


def lesson5_min_at_last(fig8: pd.DataFrame | None, prm: str = MIN_AT_LAST_PRM,
                        trainsets: pd.DataFrame | None = None) -> Verdict:
    """`prm`'s share of responses of 3+ steps (all Best-of-N responses, the paper's population) whose
    minimum step score is on the final step, against the chance rate of the same responses (Figure 8
    cells): above chance → reproduced, below → contradicted. One- and two-step responses are reported
    apart (100 % by definition; about 50 % by chance). This is the project's operationalisation: "a PRM
    trained on outcome-derived (MC) labels puts its minimum on the last step above chance"; `mc_hard` now
    trains on the constructed pool.

    Gate: with `trainsets`, a PRM trained on fewer than MIN_LATER_STEPS labelled steps after the first is
    "undecidable here" whatever the share, in both directions. Provenance: the threshold 30 was set after
    two runs had printed "contradicted" (0/82, then 1/57; review science-3 §4), i.e. post hoc; its
    rationale is supported by the 2-step cells, which the reason cites (a PRM that learnt only "first step
    bad" puts its minimum on step 1 of 2-step responses, well below the 50 % chance rate)."""
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
    if later is not None and later[1] < MIN_LATER_STEPS and later[0] > 0:
        per = later[1] / later[0]   # this run's yield of later labelled steps per training instance
        need = (f"about {math.ceil(MIN_LATER_STEPS / per)} training instances at this run's yield of {per:.2f} later "
                "steps per instance" if per > 0 else "instances whose later steps are labelled (none here were)")
        later_decide = L5_DECIDE_LATER.format(n=MIN_LATER_STEPS) + f": {need}"
    else:
        later_decide = L5_DECIDE_LATER.format(n=MIN_LATER_STEPS)
    if later is not None:
        measured += (f"; `{prm}` trained on {later[0]} instances, {later[1]} labelled steps after the first"
                     f"; gate: ≥ {MIN_LATER_STEPS} labelled steps after the first")
        if later[1] < MIN_LATER_STEPS:
            return Verdict(L5, L5_PAPER, measured, UNDECIDABLE,
                           f"gate not passed: `{prm}` saw {later[1]} labelled steps after a first step (fewer than "
                           f"{MIN_LATER_STEPS}): it never learnt what a later or last step looks like, so where its "
                           "minimum falls says nothing about a drift to outcome scoring"
                           + _two_step_evidence(fig8, prm), later_decide)
    return _row(L5, L5_PAPER, L5_DECIDE, measured, verdict, reason)


L6 = "6. A PRM trained with the paper's recipe beats majority voting in Best-of-N (§4, Table 6)"
L6_GAIN_POINTS = (published_value('table6', 'qwen25_math_prm_7b', 'average')
                  - published_value('table6', 'maj', 'average'))
_L6_GAIN = f"{L6_GAIN_POINTS:+.1f}"
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


def _n_problems(bon: pd.DataFrame, n_problems: int | None) -> int | None:
    """Best-of-N problems behind the average row: bon.csv's `n_problems` where it has one, else the param."""
    if "n_problems" in bon.columns:
        b = bon[bon["benchmark"].astype(str) != "average"].assign(
            _n=pd.to_numeric(bon["n_problems"], errors="coerce")).dropna(subset=["_n"])
        if len(b):
            return int(b.drop_duplicates("benchmark")["_n"].sum())
    return int(n_problems) if finite(n_problems) and n_problems else None


def problems_needed(half_width: float, gain: float, n_now: int | None) -> str:
    """The size that would decide lesson 6, from this run's paired interval: its half-width scales as
    sqrt(n_now / n), so it falls below the paper's gain at n = n_now × (half_width / gain)²."""
    factor = (half_width / abs(gain)) ** 2
    if n_now:
        return (f"~{math.ceil(n_now * factor):,} Best-of-N problems (this run: {n_now}; half-width × sqrt(n_now / n) "
                f"< {abs(gain):.1f} points)")
    return f"~{factor:.0f}× this run's Best-of-N problems (half-width × sqrt(n_now / n) < {abs(gain):.1f} points)"


def _no_recipe(ba: dict, fmt: Fmt, prm: str, bon: pd.DataFrame, n_problems: int | None) -> Verdict:
    """Lesson 6 without the recipe's PRM (a run that trains no consensus PRM: its judge cannot filter): the
    size that would decide it from the per-problem spread of the MC PRM's paired difference to maj@N, the
    same problems and N (fixed in advance: `mc_hard`, the filter's input)."""
    diff = ba["paired"].get(MC)
    if diff is None or not diff.has_ci:
        return _absent(L6, L6_PAPER, f"no Best-of-N row for the recipe's PRM `{prm}`", L6_DECIDE)
    hw = (diff.hi - diff.lo) / 2 * fmt.scale
    measured = (f"no recipe PRM (`{prm}`: consensus filtering needs a judge, and this run trains none on it); "
                f"the MC PRM `{MC}` − maj@{ba['N']} {fmt.diff(diff)} points (paired) sets the spread")
    reason = (f"{NOT_LAPTOP}: no consensus-filtered PRM here, and at this run's spread the paired interval's "
              f"half-width is {hw:.1f} points against the paper's gain of {L6_GAIN_POINTS:+.1f}")
    return Verdict(L6, L6_PAPER, measured, UNDECIDABLE, reason,
                   problems_needed(hw, L6_GAIN_POINTS, _n_problems(bon, n_problems)))


def lesson6_bon_vs_maj(bon: pd.DataFrame | None, aggregation: str = "product", prm: str = RECIPE,
                       trainsets: pd.DataFrame | None = None, processbench: pd.DataFrame | None = None,
                       paired: pd.DataFrame | None = None, n_problems: int | None = None) -> Verdict:
    """`prm` (the paper's recipe) minus maj@N in Best-of-N, its paired interval (bon.csv `<metric>-maj`,
    the average row at the largest N). Gate (fixed before any run): the recipe's PRM beats the
    structure-only baseline on ProcessBench (paired table, else processbench.csv's delta, lo > 0): a PRM
    that finds errors no better than the structure rule does not embody the recipe, so its Best-of-N
    choices test nothing about it (Best-of-N itself has no structure baseline). Undecidable by interval
    with a half-width wider than the paper's gain: "not a laptop lesson", with the number of problems
    that would decide it at this run's per-problem spread (problems_needed; n from bon.csv's
    `n_problems` or the param `n_problems`)."""
    if not has_columns(bon, ("prm", "benchmark", "metric", "n", "accuracy", "ci_low", "ci_high")):
        return _absent(L6, L6_PAPER, "no Best-of-N table (results/tables/bon.csv)", L6_DECIDE)
    ba = bon_average(bon, aggregation)
    if ba is None:
        return _absent(L6, L6_PAPER, "the Best-of-N table has no `average` rows with a prm_* score", L6_DECIDE)
    fmt = Fmt(scale_of(pd.to_numeric(bon.loc[~bon["metric"].astype(str).str.endswith("-maj"), "accuracy"],
                                    errors="coerce")))
    acc, diff, maj = ba["acc"].get(prm), ba["paired"].get(prm), ba["maj"].get(prm)
    if acc is None:
        return _no_recipe(ba, fmt, prm, bon, n_problems)
    n_val, col = ba["N"], ba["metric"]
    measured = f"`{prm}` {col}@{n_val} {fmt.est(acc)}" + (f", maj@{n_val} {fmt.est(maj)}" if maj is not None else "")
    if diff is not None:
        measured += f"; paired difference {fmt.diff(diff)} points"
    measured += _trained_on(trainsets, prm)
    avg, pfmt = _pb(processbench)
    st, st_text = _vs_structure(prm, paired, avg, pfmt)
    measured += _gate_measured([st_text])
    n_now = _n_problems(bon, n_problems)
    not_laptop, decide = "", L6_DECIDE
    if diff is not None and diff.has_ci:
        hw = (diff.hi - diff.lo) / 2 * fmt.scale
        if hw > abs(L6_GAIN_POINTS):
            decide = problems_needed(hw, L6_GAIN_POINTS, n_now)
            not_laptop = (f"{NOT_LAPTOP}: the paired interval's half-width is {hw:.1f} points against the paper's "
                          f"gain of {L6_GAIN_POINTS:+.1f}")
    if not _beats(st):
        why = ("gate not measured: " if st is None else "gate not passed: ") + (
            f"the recipe's PRM is not shown to beat the structure-only baseline on ProcessBench ({st_text}), so its "
            "Best-of-N choices do not test the recipe")
        return Verdict(L6, L6_PAPER, measured, UNDECIDABLE, why + (f"; and {not_laptop}" if not_laptop else ""),
                       decide)
    if diff is None:  # the two unpaired intervals then (conservative: they share the problems)
        verdict, reason = separated_verdict(acc, maj, prm, f"maj@{n_val}")
        reason = (f"no paired difference to maj@{n_val} (metric `{col}-maj`): "
                  + (reason if verdict == UNDECIDABLE else "decided by the two unpaired intervals"))
        return _row(L6, L6_PAPER, L6_DECIDE, measured, verdict, reason)
    verdict, reason = interval_verdict(diff, 0.0, "0")
    if verdict == UNDECIDABLE and not_laptop:
        reason += "; " + not_laptop
    return _row(L6, L6_PAPER, decide, measured, verdict, reason)


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
                 threshold_sweep: Sequence | None = None, judge_critics: Sequence[str] = (),
                 paired: pd.DataFrame | None = None, checker_validation: pd.DataFrame | None = None,
                 table5: pd.DataFrame | None = None, bon_problems: int | None = None) -> list[Verdict]:
    """Every lesson's row, in order: 1a, 1b, the two label-level rows, 2, 3a, 3b, 4a, 4b, 5, 6.
    `processbench`, `bon`, `trainsets`: results/tables/*.csv (bon: the main policy's rows at the main N);
    `fig6`, `fig8`, `table5`: those artifacts' cells; `judge_critics`: the ProcessBench critic rows of the
    model that labels (`critic-<name>`); `judge_pb`: results/tables/judge_processbench.csv (the labelling
    judge scored with its own prompt); `audit`: results/tables/label_audit.csv (its `mechanism` rows
    decide the label-level rows; the rest is context); `checker_bon`: results/tables/process_check_bon.csv
    (4a on the Best-of-N samples); `checker_validation`: results/tables/process_check.csv (4a's gate);
    `paired`: results/tables/processbench_paired.csv (paired PRM differences with training resamples);
    `bon_problems`: the Best-of-N problems behind bon.csv's average (lesson 6's deciding size)."""
    calls = [
        (L1A, L1A_PAPER, lambda: lesson1_label_sources(processbench, judge_pb, audit, paired, trainsets)),
        (L1B, L1B_PAPER, lambda: lesson1b_judge(processbench, judge_pb, paired, judge_critics)),
        (LM, LM_PAPER, lambda: lesson_label_mc_misses_keep(audit)),
        (LT, LT_PAPER, lambda: lesson_label_threshold(audit)),
        (L2, L2_PAPER, lambda: lesson2_consensus(processbench, trainsets, audit, judge_pb, paired, judge_critics)),
        (L3A, L3A_PAPER, lambda: lesson3_hard_soft(processbench, judge_pb, paired, judge_critics)),
        (L3B, L3B_PAPER, lambda: lesson3_threshold(processbench, trainsets, threshold_sweep, audit, paired)),
        (L4, L4_PAPER, lambda: lesson4_flawed_process(fig6, processbench, judge_critics, judge_pb, checker_bon,
                                                      checker_validation)),
        (L4B, L4B_PAPER, lambda: lesson4b_tolerance(table5, processbench, paired)),
        (L5, L5_PAPER, lambda: lesson5_min_at_last(fig8, trainsets=trainsets)),
        (L6, L6_PAPER, lambda: lesson6_bon_vs_maj(bon, aggregation, trainsets=trainsets, processbench=processbench,
                                                  paired=paired, n_problems=bon_problems)),
    ]
    return [_guarded(fn, lesson, paper) for lesson, paper, fn in calls]
