"""The opening of paper/report.md: what this run found about the paper's questions, in a few bullets
generated from results/tables/{processbench,bon,trainsets}.csv, with intervals.

Nothing here is hard-coded about the outcome: each sentence is derived from the numbers, and its wording
follows the intervals. A paired bootstrap interval (PRM minus the structure-only baseline on ProcessBench,
PRM minus maj@N in Best-of-N) that lies above 0 gives "beats", one below 0 "falls below", one containing 0
"indistinguishable". Two PRMs are compared by their paired difference (results/tables/processbench_paired.csv:
the same cases and training resamples) where that table has the pair; otherwise their own (unpaired)
intervals only say "separated" when they do not overlap.
A table, row or column that is absent (an older run, another configuration) drops its sentence with a
note; nothing raises.

Pure: frames in, Markdown out (rule glue: prm_lessons.rules.paper.paper_report).
"""
from __future__ import annotations

import logging
from typing import Callable, Sequence

import pandas as pd

from .estimates import (
    DELTA_COLUMNS,
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
    paired_how,
    paired_verdict,
    pb_average,
    scale_of,
    sweep_points,
)
from .render import md_escape

log = logging.getLogger(__name__)

HEADING = "## What this run found"

BASELINES = {"baseline_always_correct": "always “no error”", "baseline_first_step": "always “error at step 1”",
             "baseline_structure": "structure only (subset and number of steps)"}
# The paper's label-source comparison (Table 3/4), only between variants labelling the SAME pool (the
# exact pool of constructed solutions, or the policy's sampled responses to the training problems): the
# label source is then the one difference. `exact` (the pool's step truth) exists only on the constructed
# pool, `checker` (exact arithmetic labels) only on sampled responses with process_check.enabled; no note
# where either is absent.
LABEL_SOURCES = [("exact", "exact step truth"), ("mc_hard", "MC, hard"), ("judge", "LLM-as-a-judge"),
                 ("consensus_hard", "consensus, hard"), ("checker", "exact, arithmetic checker")]
OPTIONAL_SOURCES = {"exact", "checker"}
# human labels come from another pool (PRM800K, or instances by construction): another size and another
# distribution, so they are a "more data" row apart, never ranked against the same-pool sources
OTHER_POOL = ("human", "human labels, another pool")
HARD_SOFT = [("MC", "mc_hard", "mc_soft"), ("consensus", "consensus_hard", "consensus_soft")]














def _separated(a: Est, b: Est) -> bool | None:
    """Whether two unpaired intervals do not overlap (None: an interval is missing)."""
    if not (a.has_ci and b.has_ci):
        return None
    return a.lo > b.hi or b.lo > a.hi


def _names(names: Sequence[str]) -> str:
    names = [f"`{n}`" for n in names]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]




# ------------------------------------------------------------------------------------------------
# Reading the long tables (missing columns → None, never an exception)
# ------------------------------------------------------------------------------------------------









def _is_model(name: str) -> bool:
    return name not in BASELINES


# ------------------------------------------------------------------------------------------------
# The bullets
# ------------------------------------------------------------------------------------------------

def _other_pool(avg: pd.DataFrame, fmt: Fmt) -> str:
    n, lab = OTHER_POOL
    e = f1_est(avg, n)
    if e is None:
        return ""
    return (f" Apart, as a \"more data\" row and not a label-source comparison (another pool: another size and "
            f"distribution of instances): {lab} `{n}`: {fmt.est(e)}.")


def _paired_text(fmt: Fmt, paired: pd.DataFrame | None, a: str, b: str) -> str | None:
    """'paired difference `a` − `b` +x.x [lo, hi] points (R training resamples × N cases, ...): beats /
    indistinguishable / below', from processbench_paired.csv; None when the table lacks the pair."""
    p = paired_est(paired, a, b)
    if p is None:
        return None
    fmt = Fmt(100.0)  # the paired table holds fractions, whatever processbench.csv's unit
    v = paired_verdict(p.est)
    word = {"beats": f"`{a}` higher", "below": f"`{b}` higher", "indistinguishable": "not separated",
            None: "no interval, not tested"}[v]
    return f"paired difference `{a}` − `{b}` {fmt.diff(p.est)} points {paired_how(p)}: {word}"


def _label_sources(avg: pd.DataFrame, fmt: Fmt, paired: pd.DataFrame | None = None) -> str:
    head = ("**Label sources on one pool** (the same solutions, labelled each way; ProcessBench "
            "average F1, % [interval]): ")
    have = [(n, lab, f1_est(avg, n)) for n, lab in LABEL_SOURCES]
    present = [(n, lab, e) for n, lab, e in have if e is not None]
    missing = [n for n, _, e in have if e is None and n not in OPTIONAL_SOURCES]
    apart = _other_pool(avg, fmt)
    if not present:
        return head + f"none of {_names([n for n, _ in LABEL_SOURCES])} is in this run's table." + apart
    text = head + "; ".join(f"{lab} `{n}`: {fmt.est(e)}" for n, lab, e in present) + "."
    if missing:
        text += f" Not in this run: {_names(missing)}."
    if len(present) < 2:
        return text + apart
    best_n, best_lab, best = max(present, key=lambda x: x[2].value)
    others = [(n, e) for n, _, e in present if n != best_n]
    text += f" Highest: {best_lab} `{best_n}`"
    pairs = [(n, _paired_text(fmt, paired, best_n, n)) for n, _ in others]
    if all(t is not None for _, t in pairs):  # the same cases and training resamples: the comparison to read
        return text + "; " + "; ".join(t for _, t in pairs) + "." + apart
    clear = [n for n, e in others if _separated(best, e)]
    overlap = [n for n, e in others if _separated(best, e) is False]
    untested = [n for n, e in others if _separated(best, e) is None]
    parts = []
    if clear:
        parts.append(f"its interval lies above that of {_names(clear)}")
    if overlap:
        parts.append(f"it overlaps that of {_names(overlap)}, so this run does not separate them")
    if untested:
        parts.append(f"no interval to compare with {_names(untested)}")
    return text + ("; " + "; ".join(parts) if parts else "") + "." + apart


def _compare(fmt: Fmt, a_name: str, a: Est, b_name: str, b: Est) -> str:
    sep = _separated(a, b)
    if sep is None:
        tail = "no intervals, not tested"
    elif sep:
        hi = a_name if a.value > b.value else b_name
        tail = f"{hi} higher, intervals do not overlap"
    else:
        tail = "intervals overlap: not separated"
    return f"{a_name} {fmt.est(a)} vs {b_name} {fmt.est(b)} ({tail})"


def _hard_soft(avg: pd.DataFrame | None, fmt_pb: Fmt | None, bon_avg: dict | None, fmt_bon: Fmt | None,
               paired: pd.DataFrame | None = None) -> str | None:
    parts = []
    for label, hard, soft in HARD_SOFT:
        bits = []
        if avg is not None:
            h, s = f1_est(avg, hard), f1_est(avg, soft)
            if h is not None and s is not None:
                pt = _paired_text(fmt_pb, paired, hard, soft)
                bits.append("ProcessBench F1 " + (f"hard {fmt_pb.est(h)} vs soft {fmt_pb.est(s)}, {pt}" if pt else
                                                  _compare(fmt_pb, "hard", h, "soft", s)))
        if bon_avg is not None:
            col, n_val, acc = bon_avg["metric"], bon_avg["N"], bon_avg["acc"]
            h, s = acc.get(hard), acc.get(soft)
            if h is not None and s is not None:
                bits.append(f"{col}@{n_val} " + _compare(fmt_bon, "hard", h, "soft", s))
        if bits:
            parts.append(f"{label} (`{hard}` vs `{soft}`): " + "; ".join(bits))
    if not parts:
        return None
    return "**Hard vs soft labels:** " + ". ".join(parts) + "."




def _sweep(avg: pd.DataFrame, fmt: Fmt, trainsets, threshold_sweep, paired: pd.DataFrame | None = None
           ) -> str | None:
    pts = [(t, n, f1_est(avg, n)) for t, n in sweep_points(avg, trainsets, threshold_sweep)]
    pts = [(t, n, e) for t, n, e in pts if e is not None]
    if len(pts) < 2:
        return None
    text = ("**MC hard-label threshold** (a step is positive when more than this share of its completions "
            "reach the answer; ProcessBench average F1): "
            + "; ".join(f"{frac_text(t)} `{n}`: {fmt.est(e)}" for t, n, e in pts) + ".")
    hi = max(pts, key=lambda x: x[2].value)
    lo = min(pts, key=lambda x: x[2].value)
    if hi[2].value == lo[2].value:
        return text + " Every threshold gives the same F1."
    pt = _paired_text(fmt, paired, hi[1], lo[1])
    if pt:
        return text + f" Highest at {frac_text(hi[0])}, lowest at {frac_text(lo[0])}; {pt}."
    sep = _separated(hi[2], lo[2])
    tail = {True: "their intervals do not overlap", False: "their intervals overlap, so the threshold's effect "
            "is not separated from noise here", None: "no intervals to compare"}[sep]
    return text + f" Highest at {frac_text(hi[0])}, lowest at {frac_text(lo[0])}; {tail}."


def _structure(avg: pd.DataFrame, fmt: Fmt) -> str:
    base = [(n, lab, f1_est(avg, n)) for n, lab in BASELINES.items()]
    base_txt = "; ".join(f"{lab} `{n}`: {fmt.est(e)}" for n, lab, e in base if e is not None)
    head = "**Against model-free baselines** (ProcessBench average F1"
    text = head + (f": {base_txt}" if base_txt else ": no baseline rows in this run") + ")."
    if f1_est(avg, STRUCTURE) is None:
        return text + " No structure-only baseline in this run, so no PRM is compared with it."
    models = [n for n in avg.index if _is_model(n)]
    if not models:
        return text + " No PRM or critic in this run's table."
    if not all(c in avg.columns for c in DELTA_COLUMNS):
        return text + (" The paired difference to `baseline_structure` (columns "
                       + ", ".join(f"`{c}`" for c in DELTA_COLUMNS) + ") is not in this run's ProcessBench table, "
                       "so whether a PRM beats it is not tested here.")
    groups: dict[str | None, list[tuple[str, Est]]] = {"beats": [], "indistinguishable": [], "below": [], None: []}
    no_delta = []
    for n in models:
        d = delta_est(avg, n)
        if d is None:
            no_delta.append(n)
        else:
            groups[paired_verdict(d)].append((n, d))
    tested = sum(len(groups[k]) for k in ("beats", "indistinguishable", "below"))
    if not tested:
        return text + (" No PRM or critic has a paired difference to `baseline_structure` with an interval in "
                       "this run's table, so whether one beats it is not tested here.")
    text += (f" Paired difference of each PRM/critic's average F1 minus `baseline_structure`'s, points "
             f"[interval]: **{len(groups['beats'])} of {tested}** beat it (interval above 0)")
    if groups["below"]:
        text += f", {len(groups['below'])} fall below it (interval below 0)"
    text += f", {len(groups['indistinguishable'])} are indistinguishable from it (interval contains 0)."
    words = {"beats": "Beat it", "indistinguishable": "Indistinguishable", "below": "Below it",
             None: "No interval (not tested)"}
    for k in ("beats", "indistinguishable", "below", None):
        if groups[k]:
            items = sorted(groups[k], key=lambda x: -x[1].value)
            text += f" {words[k]}: " + ", ".join(f"`{n}` {fmt.diff(d)}" for n, d in items) + "."
    if no_delta:
        text += f" No paired difference recorded for {_names(no_delta)}."
    return text




def _bon(ba: dict, fmt: Fmt) -> str:
    col, n_val, acc, paired = ba["metric"], ba["N"], ba["acc"], ba["paired"]
    head = f"**Best-of-N** (average over benchmarks, N={n_val}, response score {col}): "
    if not acc:
        return head + f"no {col} rows in this run's table."
    best = max(acc, key=lambda p: acc[p].value) if not paired else max(paired, key=lambda p: paired[p].value)
    maj, pas = ba["maj"].get(best), ba["pass"].get(best)
    ctx = []
    if maj is not None:
        ctx.append(f"maj@{n_val} {fmt.est(maj)}")
    if pas is not None:
        ctx.append(f"pass@{n_val} {fmt.est(pas)}")
    text = head + (", ".join(ctx) + ". " if ctx else "")
    text += f"Best PRM: `{best}`" + (f", {col}@{n_val} {fmt.est(acc[best])}" if best in acc else "")
    if not paired:
        text += (f". The paired difference to maj@{n_val} (metric `{col}-maj`) is not in this run's table, "
                 "so whether a PRM beats majority voting is not tested here")
        if maj is not None and best in acc:
            sep = _separated(acc[best], maj)
            text += {True: " (unpaired intervals do not overlap)", False: " (unpaired intervals overlap)",
                     None: ""}[sep]
        return text + "."
    v = paired_verdict(paired[best])
    phrase = {"beats": f"beats maj@{n_val}", "below": f"falls below maj@{n_val}",
              "indistinguishable": f"indistinguishable from maj@{n_val}", None: "not tested (no interval)"}[v]
    text += f"; paired difference to maj@{n_val} {fmt.diff(paired[best])} points: {phrase}."
    verdicts = [paired_verdict(e) for e in paired.values()]
    tested = sum(x is not None for x in verdicts)
    if not tested:
        return text + f" No paired difference has an interval, so whether a PRM beats maj@{n_val} is not tested."
    text += (f" **{verdicts.count('beats')} of {tested}** PRMs beat maj@{n_val} (paired interval above 0), "
             f"{verdicts.count('indistinguishable')} are indistinguishable (interval contains 0)")
    if verdicts.count("below"):
        text += f", {verdicts.count('below')} fall below it (interval below 0)"
    text += "."
    missing = sorted(set(acc) - set(paired))
    if missing:
        text += f" No paired difference recorded for {_names(missing)}."
    return text


def _int(x) -> str:
    return f"{int(round(float(x))):,}" if finite(x) else "n/a"


def _trainsets(ts: pd.DataFrame) -> str | None:
    if not has_columns(ts, ("variant", "n_instances")) or ts.empty:
        return None
    items = []
    for _, r in ts.iterrows():
        bits = [f"{_int(r.get('n_instances'))} instances"]
        if finite(r.get("n_steps")):
            bits.append(f"{_int(r['n_steps'])} steps")
        if finite(r.get("positive_rate")):
            word = "mean step label" if str(r.get("label_type")) == "soft" else "positive steps"
            bits.append(f"{float(r['positive_rate']) * 100:.1f}% {word}")
        if finite(r.get("retained_fraction")) and float(r["retained_fraction"]) < 1:
            bits.append(f"{float(r['retained_fraction']) * 100:.1f}% of candidates kept")
        items.append(f"`{r['variant']}`: " + ", ".join(bits))
    return "**Training sets:** " + "; ".join(items) + "."


def _guard(fn: Callable[[], str | None], what: str) -> str | None:
    """A sentence that cannot be written becomes a note, never a failed report."""
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - the report must build whatever the tables hold
        log.warning("findings: could not summarise %s: %r", what, e)
        return f"_{what}: could not be summarised from this run's table ({type(e).__name__}: {e})._"


def _stale_note(frames: dict[str, pd.DataFrame | None], run_label: str) -> str | None:
    """Tables whose `run` column names another run than this report's."""
    other = []
    for name, df in frames.items():
        if has_columns(df, ("run",)) and run_label:
            runs = {str(x) for x in df["run"].dropna().unique()}
            if runs and runs != {run_label}:
                other.append(f"`{name}` ({', '.join(md_escape(r) for r in sorted(runs))})")
    if not other:
        return None
    return "Note: these tables name another run than this report: " + "; ".join(other) + "."


# ------------------------------------------------------------------------------------------------

def findings_markdown(processbench: pd.DataFrame | None, bon: pd.DataFrame | None,
                      trainsets: pd.DataFrame | None, run_label: str, *, aggregation: str = "product",
                      threshold_sweep: Sequence | None = None, paired: pd.DataFrame | None = None) -> str:
    """The "## What this run found" section: label sources, hard vs soft, MC threshold, PRMs against the
    structure-only baseline, Best-of-N against maj@N, training-set sizes. `processbench`, `bon`,
    `trainsets`: results/tables/{processbench,bon,trainsets}.csv (None when absent). `aggregation`: the
    Best-of-N response score (analysis.aggregation; another prm_* metric when absent). `threshold_sweep`:
    [(threshold, variant)] (plan.threshold_sweep_variants); otherwise read from `trainsets`, then names.
    `paired`: results/tables/processbench_paired.csv; where it holds a pair, PRM-vs-PRM sentences read its
    paired difference (same cases, training resamples) instead of two unpaired intervals."""
    md = [HEADING, ""]
    md.append((f"Run: {md_escape(run_label)}. " if run_label else "")
              + "Generated from this run's tables: ProcessBench F1 and Best-of-N accuracy in %, differences in "
              "points, brackets are bootstrap intervals. “Beats” is said only where a paired interval lies "
              "above 0, “indistinguishable” where it contains 0; two PRMs are compared by their paired "
              "difference (same cases, training resamples) where there is one, else two PRMs' own intervals "
              "that overlap do not separate them.")
    md.append("")
    bullets: list[str | None] = []

    avg = fmt_pb = None
    if not has_columns(processbench, ("prm", "subset", "f1")):
        bullets.append("ProcessBench: no table in this run (results/tables/processbench.csv absent or without "
                       "`prm`, `subset`, `f1`), so label sources, threshold and baselines are not summarised.")
    else:
        avg = pb_average(processbench)
        if avg.empty:
            bullets.append("ProcessBench: the table has no `average` rows.")
            avg = None
        else:
            fmt_pb = Fmt(scale_of(avg["f1"]))

    bon_avg = fmt_bon = None
    if not has_columns(bon, ("prm", "benchmark", "metric", "n", "accuracy", "ci_low", "ci_high")):
        bon_note = "Best-of-N: no table in this run (results/tables/bon.csv absent or without its columns)."
    else:
        bon_avg = _guard(lambda: bon_average(bon, aggregation), "Best-of-N")
        if isinstance(bon_avg, str):  # the guard's note
            bon_note, bon_avg = bon_avg, None
        elif bon_avg is None:
            bon_note = "Best-of-N: the table has no `average` rows with a prm_* response score."
        else:
            bon_note = None
            b = bon[~bon["metric"].astype(str).str.endswith("-maj")]
            fmt_bon = Fmt(scale_of(pd.to_numeric(b["accuracy"], errors="coerce")))

    if avg is not None:
        bullets.append(_guard(lambda: _label_sources(avg, fmt_pb, paired), "Label sources"))
    if avg is not None or bon_avg is not None:
        bullets.append(_guard(lambda: _hard_soft(avg, fmt_pb, bon_avg, fmt_bon, paired), "Hard vs soft labels"))
    if avg is not None:
        bullets.append(_guard(lambda: _sweep(avg, fmt_pb, trainsets, threshold_sweep, paired), "MC threshold"))
        bullets.append(_guard(lambda: _structure(avg, fmt_pb), "Baselines"))
    bullets.append(bon_note if bon_note else _guard(lambda: _bon(bon_avg, fmt_bon), "Best-of-N"))
    if trainsets is None:
        bullets.append("Training sets: no table in this run (results/tables/trainsets.csv absent).")
    else:
        bullets.append(_guard(lambda: _trainsets(trainsets), "Training sets")
                       or "Training sets: the table has no rows or lacks `variant`/`n_instances`.")
    md += [f"- {b}" for b in bullets if b]
    stale = _stale_note({"processbench.csv": processbench, "bon.csv": bon, "trainsets.csv": trainsets}, run_label)
    if stale:
        md += ["", stale]
    md.append("")
    return "\n".join(md)
