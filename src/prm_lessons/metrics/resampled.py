"""ProcessBench F1 with training variance and paired PRM-vs-PRM differences (processbench_paired.csv).

A hierarchical bootstrap over the resample heads of head-only PRMs (training.resamples,
prm_lessons.training.resamples) and over the cases; pairs are compared on the same draws.

Per resample r of a PRM the threshold is chosen as the PRM's own (evaluate_processbench: a fixed number,
or tuned by processbench_eval.tune_on on the dev split's scores of that same head) and its predictions on
the cases give a hit (prediction == label) per case: a hits matrix [R, cases]. A fixed predictor (the
structure-only baseline) is one row.

Bootstrap draw b picks u_b uniform in [0, 1) (resample index floor(u_b * R): uniform over a PRM's R, and
the same r for two PRMs with the same R) and resamples the cases within each subset x (error, clean)
stratum, as processbench_metrics' bootstrap does; the draw's F1 is the mean of the per-subset F1s
(processbench.csv's `average`). Every PRM and pair is evaluated on the same B draws, so a difference
F1(a) − F1(b) uses the same r and the same cases for both. A stratum without cases gives accuracy 0 and
the subset F1 0, as processbench_metrics reports an undefined F1 (never an error).

value: the mean over r of the F1 on all cases (of the difference, for a pair); ci: the central
`confidence` percentile interval of the B draws.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from .processbench import evaluate_processbench, f1_harmonic, first_error
from .stats import interval

RESAMPLE_COLUMN = "resample_scores"  # pb_scores: per case a list of R per-step score lists (score_processbench)
PAIRED_COLUMNS = ["prm_a", "prm_b", "subset", "n_cases", "n_resamples", "value", "ci_low", "ci_high"]
STRUCTURE = "structure"  # prm_b of the rows against the structure-only baseline


def scores_per_resample(df: pd.DataFrame, where: str = "") -> list[dict]:
    """A pb_scores frame's resample scores as one {id: step scores} per resample; a ValueError when the
    column is missing (the PRM was trained without resample heads, or scored without stored features)."""
    if RESAMPLE_COLUMN not in df.columns:
        raise ValueError(f"{where}: no column '{RESAMPLE_COLUMN}' (a head-only PRM trained with "
                         "training.resamples > 0 and scored from stored features has it)")
    cells = [[[float(x) for x in s] for s in cell] for cell in df[RESAMPLE_COLUMN]]
    counts = {len(c) for c in cells}
    if len(counts) != 1 or 0 in counts:
        raise ValueError(f"{where}: cases hold {sorted(counts)} resample score lists; every case needs the same R ≥ 1")
    ids = [str(i) for i in df["id"]]
    return [{i: c[r] for i, c in zip(ids, cells)} for r in range(counts.pop())]


def hits(cases: pd.DataFrame, preds: dict) -> np.ndarray:
    """Per case (cases' order) whether the prediction (None: unparsed, counted wrong) equals the label."""
    labels = cases["label"].to_numpy(dtype=int)
    got = [preds[str(i)] for i in cases["id"]]
    return np.array([p is not None and not pd.isna(p) and int(p) == int(lab) for p, lab in zip(got, labels)],
                    dtype=bool)


def resample_hits(cases: pd.DataFrame, scores: Sequence[dict], threshold: float | str,
                  dev_cases: pd.DataFrame | None = None, dev_scores: Sequence[dict] | None = None,
                  tune_on: str = "auto") -> tuple[np.ndarray, list]:
    """Hits matrix [R, cases] of a PRM's R resample heads and the threshold each used: resample r's
    threshold is fixed or tuned exactly as the PRM's own (evaluate_processbench, on the dev split's
    scores of head r with tune_on dev)."""
    rows, used = [], []
    for r, sc in enumerate(scores):
        if threshold == "tune":
            dev = dev_scores[r] if dev_scores is not None else None
            m, per_case = evaluate_processbench(cases, {}, sc, "tune", dev_cases=dev_cases if dev is not None else None,
                                                dev_scores=dev, truncated_ok=True, tune_on=tune_on)
            preds = {str(i): (None if pd.isna(p) else int(p)) for i, p in zip(per_case["id"], per_case["prediction"])}
            used.append(m["threshold"])
        else:
            preds = {str(i): first_error(sc[str(i)], float(threshold)) for i in cases["id"]}
            used.append(float(threshold))
        rows.append(hits(cases, preds))
    return np.stack(rows) if rows else np.zeros((0, len(cases)), dtype=bool), used


class Draws:
    """The B hierarchical bootstrap draws shared by every PRM and pair: u (B,) for the resample index and,
    per subset, per stratum (error, clean) the case positions and their resampled indices (B, n)."""

    def __init__(self, cases: pd.DataFrame, n_boot: int, seed: int):
        rng = np.random.default_rng(seed)
        self.n_boot = int(n_boot)
        self.u = rng.random(self.n_boot)
        labels = cases["label"].to_numpy(dtype=int)
        subsets = cases["subset"].astype(str).to_numpy()
        self.subsets: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
        for name in pd.unique(subsets):
            strata = []
            for err in (True, False):
                pos = np.flatnonzero((subsets == name) & ((labels != -1) == err))
                strata.append((pos, rng.integers(0, len(pos), size=(self.n_boot, len(pos))) if len(pos)
                               else np.zeros((self.n_boot, 0), dtype=int)))
            self.subsets[str(name)] = strata

    def sizes(self) -> dict[str, int]:
        return {s: int(sum(len(p) for p, _ in st)) for s, st in self.subsets.items()}


def _acc(h: np.ndarray) -> np.ndarray:
    """Mean over the last axis; 0 for no cases (an undefined accuracy gives F1 0, as processbench_metrics)."""
    return h.mean(axis=-1) if h.shape[-1] else np.zeros(h.shape[:-1])


def f1_by_subset(h: np.ndarray, draws: Draws) -> tuple[dict, dict]:
    """(per subset: F1 of each resample on all cases [R]; per subset: F1 of each bootstrap draw [B])."""
    rr = np.minimum((draws.u * len(h)).astype(int), len(h) - 1)
    point, boot = {}, {}
    for name, ((pe, ie), (pc, ic)) in draws.subsets.items():
        point[name] = f1_harmonic(_acc(h[:, pe].astype(float)), _acc(h[:, pc].astype(float)))
        boot[name] = f1_harmonic(_acc(h[rr[:, None], pe[ie]].astype(float)),
                                 _acc(h[rr[:, None], pc[ic]].astype(float)))
    return point, boot


def _with_average(by_subset: dict) -> dict:
    return {"average": np.mean(np.stack(list(by_subset.values())), axis=0), **by_subset}


def paired_rows(cases: pd.DataFrame, prms: dict[str, np.ndarray], fixed: dict[str, np.ndarray] | None = None,
                n_boot: int = 1000, seed: int = 0, confidence: float = 0.95) -> list[dict]:
    """Rows of processbench_paired.csv (PAIRED_COLUMNS) for hits matrices `prms` (name → [R, cases], in
    config order) and fixed predictors `fixed` (name → [cases]): each PRM's F1 (prm_b empty), every pair
    of PRMs in order (prm_a before prm_b), each PRM against each fixed predictor; subset `average` first,
    then each subset in the cases' order. n_resamples: prm_a's R."""
    draws = Draws(cases, n_boot, seed)
    sizes = {"average": len(cases), **draws.sizes()}
    f1 = {n: tuple(map(_with_average, f1_by_subset(np.atleast_2d(h), draws)))
          for n, h in {**prms, **(fixed or {})}.items()}
    nan = float("nan")

    def rows(a: str, b: str | None) -> list[dict]:
        out = []
        for sub in sizes:
            pa, ba = f1[a][0][sub], f1[a][1][sub]
            point, boot = (pa.mean(), ba) if b is None else (pa.mean() - f1[b][0][sub].mean(), ba - f1[b][1][sub])
            lo, hi = interval(boot, confidence) if n_boot else [nan, nan]
            out.append({"prm_a": a, "prm_b": b or "", "subset": sub, "n_cases": sizes[sub],
                        "n_resamples": int(np.atleast_2d(prms[a]).shape[0]), "value": float(point),
                        "ci_low": lo, "ci_high": hi})
        return out

    names = list(prms)
    out = [r for a in names for r in rows(a, None)]
    out += [r for i, a in enumerate(names) for b in names[i + 1:] for r in rows(a, b)]
    out += [r for a in names for b in (fixed or {}) for r in rows(a, b)]
    return out
