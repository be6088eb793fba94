"""The estimate layer of the report's prose (findings, verdicts): a number with its interval (Est), its
formatting on a table's scale (Fmt), and the estimates read from the long tables: ProcessBench average F1
and its paired difference to the structure-only baseline, Best-of-N averages, the MC threshold sweep.
A paired interval above 0 "beats", below 0 "falls below", containing 0 is "indistinguishable"
(paired_verdict).

Pure: frames in, estimates out; an absent table, row or column gives None, never an error.
"""
from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Iterable, NamedTuple, Sequence

import pandas as pd

_SWEEP_NAME = re.compile(r"^mc_hard_t(\d+)(?:of(\d+))?$")


DELTA_COLUMNS = ("delta_f1_structure", "delta_ci_low", "delta_ci_high")
STRUCTURE = "baseline_structure"
STRUCTURE_NAMES = ("structure", STRUCTURE)   # the structure-only baseline's names (paired table, processbench.csv)


class Est(NamedTuple):
    """A number with its interval (NaN where absent), in the table's own units."""
    value: float
    lo: float = math.nan
    hi: float = math.nan

    @property
    def has_ci(self) -> bool:
        return finite(self.lo) and finite(self.hi)


def finite(x) -> bool:
    try:
        return x is not None and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def _num(x) -> float:
    return float(x) if finite(x) else math.nan


def scale_of(values: Iterable) -> float:
    """100 when the table holds fractions (the documented unit), 1 when it already holds percents."""
    vals = [abs(float(v)) for v in values if finite(v)]
    return 1.0 if vals and max(vals) > 1.0 + 1e-9 else 100.0


class Fmt:
    """Formatting in percent (points for differences), one decimal, the table's numbers rescaled only."""

    def __init__(self, scale: float):
        self.scale = scale

    def pt(self, v) -> str:
        return f"{float(v) * self.scale:.1f}" if finite(v) else "n/a"

    def est(self, e: Est) -> str:
        ci = f" [{self.pt(e.lo)}, {self.pt(e.hi)}]" if e.has_ci else " (no interval)"
        return self.pt(e.value) + ci

    def diff(self, e: Est) -> str:
        s = lambda v: f"{float(v) * self.scale:+.1f}" if finite(v) else "n/a"  # noqa: E731
        ci = f" [{s(e.lo)}, {s(e.hi)}]" if e.has_ci else " (no interval)"
        return s(e.value) + ci


def paired_verdict(e: Est) -> str | None:
    """'beats' (interval above 0), 'below' (interval below 0), 'indistinguishable' (contains 0), or None
    (no interval: not tested)."""
    if not e.has_ci:
        return None
    if e.lo > 0:
        return "beats"
    if e.hi < 0:
        return "below"
    return "indistinguishable"


def frac_text(t: float) -> str:
    f = Fraction(t).limit_denominator(64)
    return str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}"


def has_columns(df: pd.DataFrame | None, cols: Iterable[str]) -> bool:
    return df is not None and isinstance(df, pd.DataFrame) and all(c in df.columns for c in cols)


def pb_average(pb: pd.DataFrame) -> pd.DataFrame:
    """processbench.csv's subset 'average' rows, one per PRM, numeric columns coerced."""
    avg = pb[pb["subset"].astype(str) == "average"].drop_duplicates("prm", keep="last").copy()
    for c in ("f1", "f1_ci_low", "f1_ci_high", *DELTA_COLUMNS):
        if c in avg.columns:
            avg[c] = pd.to_numeric(avg[c], errors="coerce")
    return avg.set_index(avg["prm"].astype(str))


def f1_est(avg: pd.DataFrame, prm: str) -> Est | None:
    if prm not in avg.index or not finite(avg.at[prm, "f1"]):
        return None
    r = avg.loc[prm]
    return Est(float(r["f1"]), _num(r.get("f1_ci_low")), _num(r.get("f1_ci_high")))


def delta_est(avg: pd.DataFrame, prm: str) -> Est | None:
    if (not all(c in avg.columns for c in DELTA_COLUMNS) or prm not in avg.index
            or not finite(avg.at[prm, DELTA_COLUMNS[0]])):
        return None
    r = avg.loc[prm]
    return Est(float(r[DELTA_COLUMNS[0]]), _num(r[DELTA_COLUMNS[1]]), _num(r[DELTA_COLUMNS[2]]))


def sweep_points(avg: pd.DataFrame, trainsets: pd.DataFrame | None,
                  threshold_sweep: Sequence | None) -> list[tuple[float, str]]:
    pairs: list[tuple[float, str]] = []
    if threshold_sweep:
        pairs = [(float(t), str(n)) for t, n in threshold_sweep]
    elif has_columns(trainsets, ("variant", "source", "label_type", "threshold")):
        t = trainsets[(trainsets["source"].astype(str) == "mc") & (trainsets["label_type"].astype(str) == "hard")]
        pairs = [(float(x), str(v)) for v, x in zip(t["variant"], pd.to_numeric(t["threshold"], errors="coerce"))
                 if finite(x)]
    if not pairs:  # names: `mc_hard` is threshold 0, `mc_hard_t{p}of{q}` is p/q (prm_lessons.plan)
        for n in avg.index:
            m = _SWEEP_NAME.match(n)
            if n == "mc_hard":
                pairs.append((0.0, n))
            elif m:
                pairs.append((int(m.group(1)) / int(m.group(2) or 1), n))
    seen, out = set(), []
    for t, n in sorted(pairs):
        if n in avg.index and t not in seen:
            seen.add(t)
            out.append((t, n))
    return out


def bon_average(bon: pd.DataFrame, aggregation: str) -> dict | None:
    """The Best-of-N 'average' rows at the largest N: {metric, N, acc: {prm: Est}, maj, pass, paired}."""
    b = bon[bon["benchmark"].astype(str) == "average"].copy()
    for c in ("n", "accuracy", "ci_low", "ci_high"):
        b[c] = pd.to_numeric(b[c], errors="coerce")
    if b.empty:
        return None
    if b["n"].notna().any():
        b = b[b["n"] == b["n"].max()]
    metrics = [m for m in dict.fromkeys(b["metric"].astype(str)) if not m.endswith("-maj")]
    pref = f"prm_{aggregation}"
    col = pref if pref in metrics else next((m for m in sorted(metrics) if m.startswith("prm_")), None)
    if col is None:
        return None

    def est(metric):
        out = {}
        for r in b[b["metric"].astype(str) == metric].itertuples():
            if finite(r.accuracy):
                out[str(r.prm)] = Est(float(r.accuracy), _num(r.ci_low), _num(r.ci_high))
        return out

    acc = est(col)
    for prm, e in est("orm").items():  # outcome RMs report `orm` instead of prm_<aggregation>
        acc.setdefault(prm, e)
    paired = est(f"{col}-maj")
    for prm, e in est("orm-maj").items():
        paired.setdefault(prm, e)
    n_val = b["n"].max()
    return {"metric": col, "N": int(n_val) if finite(n_val) else "N", "acc": acc, "maj": est("maj"),
            "pass": est("pass"), "paired": paired}


# ------------------------------------------------------------------------------------------------
# results/tables/processbench_paired.csv: paired PRM differences with training resamples (verdicts, findings)
# ------------------------------------------------------------------------------------------------

class Paired(NamedTuple):
    """One `average` row of results/tables/processbench_paired.csv: F1(a) − F1(b) (or one PRM's F1 when b
    is empty) as fractions, with the interval that includes training variance."""
    est: Est
    n_cases: int | None
    n_resamples: int | None


def int_or_none(x) -> int | None:
    return int(float(x)) if finite(x) else None


def _aliases(name: str) -> set[str]:
    return set(STRUCTURE_NAMES) if name in STRUCTURE_NAMES else {name}


def paired_est(paired: pd.DataFrame | None, a: str, b: str = "") -> Paired | None:
    """F1(a) − F1(b) from processbench_paired.csv's `average` rows (b empty: a's own F1). A pair stored as
    (b, a) is read with its sign flipped; `structure` and `baseline_structure` name the same baseline."""
    if not has_columns(paired, ("prm_a", "prm_b", "subset", "value", "ci_low", "ci_high")):
        return None
    avg = paired[paired["subset"].astype(str) == "average"]
    pa = avg["prm_a"].where(avg["prm_a"].notna(), "").astype(str).str.strip()
    pb_ = avg["prm_b"].where(avg["prm_b"].notna(), "").astype(str).str.strip()
    ways = [(1.0, pa.isin(_aliases(a)) & pb_.isin(_aliases(b)))]
    if b:
        ways.append((-1.0, pa.isin(_aliases(b)) & pb_.isin(_aliases(a))))
    for sign, m in ways:
        r = avg[m]
        if len(r) and finite(r.iloc[0]["value"]):
            r = r.iloc[0]
            v, lo, hi = float(r["value"]), _num(r["ci_low"]), _num(r["ci_high"])
            est = Est(v, lo, hi) if sign > 0 else Est(-v, -hi, -lo)
            return Paired(est, int_or_none(r.get("n_cases")), int_or_none(r.get("n_resamples")))
    return None


def paired_how(p: Paired) -> str:
    """'(10 training resamples of the pool × 240 cases, hierarchical bootstrap)'."""
    rs = f"{p.n_resamples} training resamples of the pool" if p.n_resamples is not None else "training resamples"
    cs = f"{p.n_cases} cases" if p.n_cases is not None else "the cases"
    return f"({rs} × {cs}, hierarchical bootstrap)"
