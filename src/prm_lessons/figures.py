"""The paper's tables and figures from the workflow's result tables, each beside the published numbers.

Every artifact is a long "cells" table (one row per reproduced number) with the columns

    run, row, key, label, aggregation, column, paper_column, n, value, ci_low, ci_high,
    published, diff, comparable   (+ threshold / stage / labels where the artifact has them)

`row` is the workflow's name (PRM / training-set variant / baseline), `key` the paper row it reproduces
(config `analysis.paper_rows`, identity by default; the keys are those of published.yaml), `column`
the workflow's benchmark / subset (mapped to the paper's by `analysis.paper_columns`), `value` the
reproduced number in percent, `published` the paper's number for that cell (NaN when the paper has
none), `diff = value - published` only where `comparable` (same cell definition: same benchmark or
subset, same Best-of-N N, and for averages the same set of benchmarks). Missing inputs, PRMs or
variants are skipped with a logged note; an artifact with no rows is still written (empty table, a
figure that says so), so paper/ always builds.
"""
from __future__ import annotations

import functools
import logging
import math
import textwrap
from pathlib import Path
from typing import Callable, Iterable, Mapping

import numpy as np
import pandas as pd
import yaml

from prm_lessons import analysis
from prm_lessons.paper import (ARTIFACTS, ORIGIN_PAPER, ORIGIN_RUN, artifact_paths, latex_table, provenance,
                               stamp, write_json)

log = logging.getLogger(__name__)

PUBLISHED_PATH = Path(__file__).with_name("published.yaml")
CELL_COLUMNS = ["run", "row", "key", "label", "aggregation", "column", "paper_column", "n", "value",
                "ci_low", "ci_high", "published", "diff", "comparable"]
EXTRA_FIELDS = ("threshold", "stage", "labels")
PB_METRICS = ("error_acc", "correct_acc", "f1")
PB_METRIC_LABELS = {"error_acc": "err", "correct_acc": "cor", "f1": "F1"}
AGG_METRICS = ("product", "min", "last", "mean")


# ------------------------------------------------------------------------------------------------
# Published numbers
# ------------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=4)
def _load_published_cached(path: str) -> dict:
    with open(path) as fh:
        pub = yaml.safe_load(fh)
    for tid, t in pub["tables"].items():
        for r in t["rows"]:
            if len(r["values"]) != len(t["columns"]):
                raise ValueError(f"published.yaml: {tid} row '{r['key']}' has {len(r['values'])} values "
                                 f"for {len(t['columns'])} columns")
    return pub


def load_published(path: str | Path | None = None) -> dict:
    """The paper's numbers (published.yaml) with the citation; rows checked against their columns."""
    return _load_published_cached(str(path or PUBLISHED_PATH))


def published_long(pub: Mapping, tid: str) -> pd.DataFrame:
    """One published table/figure as long rows: key, label, column, published (+ extra fields)."""
    t = pub["tables"].get(tid)
    cols = ["key", "label", "aggregation", *EXTRA_FIELDS, "column", "published"]
    if t is None:
        return pd.DataFrame(columns=cols)
    rows = []
    for r in t["rows"]:
        for c, v in zip(t["columns"], r["values"]):
            rows.append({"key": str(r["key"]), "label": r["label"], "aggregation": r.get("aggregation"),
                         **{f: r.get(f) for f in EXTRA_FIELDS}, "column": c,
                         "published": float(v) if v is not None else np.nan})
    return pd.DataFrame(rows, columns=cols)


def column_label(pub: Mapping, column: str) -> str:
    """Display label of a (paper) column key: benchmark label, or '<subset> <metric>' for ProcessBench."""
    names = pub.get("columns", {})
    if "/" in column:
        sub, metric = column.split("/", 1)
        if sub == "average" and metric == "f1":
            return "Avg. F1"
        return f"{names.get(sub, sub)} {PB_METRIC_LABELS.get(metric, metric)}"
    return names.get(column, column)


# ------------------------------------------------------------------------------------------------
# Reading the workflow's result tables
# ------------------------------------------------------------------------------------------------

def load_bon(path: str | Path) -> pd.DataFrame:
    """results/tables/bon.csv (prm, benchmark, metric, N, accuracy, ci_low, ci_high; fractions) →
    prm, benchmark, metric, n, accuracy, ci_low, ci_high in percent. `metric` is pass, maj, orm or
    prm_<aggregation>; an `aggregation` column or a bare aggregation name is accepted too."""
    df = pd.read_csv(path)
    if "metric" not in df.columns and "aggregation" in df.columns:
        df = df.rename(columns={"aggregation": "metric"})
    if "N" in df.columns and "n" not in df.columns:
        df = df.rename(columns={"N": "n"})
    need = [c for c in ("prm", "benchmark", "metric", "accuracy") if c not in df.columns]
    if need:
        raise ValueError(f"{path}: Best-of-N table lacks column(s) {need}")
    for c in ("n", "ci_low", "ci_high"):
        if c not in df.columns:
            df[c] = np.nan
    df["metric"] = df["metric"].astype(str).map(lambda m: f"prm_{m}" if m in AGG_METRICS else m)
    for c in ("accuracy", "ci_low", "ci_high"):
        df[c] = 100 * pd.to_numeric(df[c], errors="coerce")
    df["prm"] = df["prm"].astype(str)
    df["benchmark"] = df["benchmark"].astype(str)
    return df[["prm", "benchmark", "metric", "n", "accuracy", "ci_low", "ci_high"]]


def load_processbench_table(path: str | Path) -> pd.DataFrame:
    """results/tables/processbench.csv (prm, subset, n, error_acc, correct_acc, f1; fractions) → percent."""
    df = pd.read_csv(path)
    need = [c for c in ("prm", "subset", "error_acc", "correct_acc", "f1") if c not in df.columns]
    if need:
        raise ValueError(f"{path}: ProcessBench table lacks column(s) {need}")
    for c in ("error_acc", "correct_acc", "f1", "f1_ci_low", "f1_ci_high"):
        if c in df.columns:
            df[c] = 100 * pd.to_numeric(df[c], errors="coerce")
    df["prm"] = df["prm"].astype(str)
    df["subset"] = df["subset"].astype(str)
    return df


def load_cells(path: str | Path) -> pd.DataFrame:
    df = pd.read_csv(path, keep_default_na=True)
    for c in ("row", "key", "label", "aggregation", "column", "paper_column"):
        if c in df.columns:
            df[c] = df[c].astype(object).where(df[c].notna(), None)
    return df


def _csv_or_empty(inputs: Mapping, name: str, loader: Callable) -> pd.DataFrame | None:
    path = inputs.get(name)
    if not path or not Path(path).exists():
        log.warning("input '%s' is missing; artifact rows that need it are skipped", name)
        return None
    return loader(path)


# ------------------------------------------------------------------------------------------------
# Row / column mapping (config `analysis`)
# ------------------------------------------------------------------------------------------------

def paper_key(name: str, params: Mapping) -> str:
    return str((params.get("paper_rows") or {}).get(name, name))


def paper_column(name: str, params: Mapping) -> str:
    return str((params.get("paper_columns") or {}).get(name, name))


def _benchmarks(bon: pd.DataFrame, params: Mapping) -> list[str]:
    chosen = list(params.get("benchmarks") or [])
    present = [b for b in dict.fromkeys(bon["benchmark"]) if b != "average"]
    if not chosen:
        return present
    missing = [b for b in chosen if b not in present]
    if missing:
        log.warning("analysis.benchmarks %s have no Best-of-N rows; skipped", missing)
    return [b for b in chosen if b in present]


def _published_lookup(pub_long: pd.DataFrame, key: str, column: str, aggregation: str | None = None,
                      **extra) -> tuple[float, str | None]:
    m = (pub_long["key"] == key) & (pub_long["column"] == column)
    if aggregation is not None and pub_long["aggregation"].notna().any():
        sub = m & (pub_long["aggregation"] == aggregation)
        m = sub if sub.any() else m & pub_long["aggregation"].isna()
    hit = pub_long[m]
    if hit.empty:
        return np.nan, None
    return float(hit["published"].iloc[0]), str(hit["label"].iloc[0])


def _finish_cells(rows: list[dict], params: Mapping) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    for c in CELL_COLUMNS:
        if c not in df.columns:
            df[c] = np.nan if c not in ("row", "key", "label", "aggregation", "column", "paper_column") else None
    df["run"] = (params.get("run") or {}).get("name", "")
    df["comparable"] = df["comparable"].fillna(False).astype(bool) & df["published"].notna()
    df["diff"] = np.where(df["comparable"], df["value"] - df["published"], np.nan)
    extra = [c for c in EXTRA_FIELDS if c in df.columns]
    return df[CELL_COLUMNS + extra]


# ------------------------------------------------------------------------------------------------
# Best-of-N and ProcessBench cells
# ------------------------------------------------------------------------------------------------

def _pick_n(g: pd.DataFrame, params: Mapping) -> pd.DataFrame:
    """One N per cell: analysis.n when set, else the largest N present."""
    if g["n"].notna().any():
        want = params.get("n")
        n = want if want is not None else g["n"].max()
        g = g[g["n"] == n]
    return g


def bon_cells(bon: pd.DataFrame, selections: Iterable[Mapping], pub: Mapping, tid: str, params: Mapping) -> pd.DataFrame:
    """Cells of a Best-of-N table. Each selection = {row, prm, metric[, key, aggregation]}: the reproduced
    row `row` is bon.csv's (prm, metric) on every benchmark, plus the unweighted average."""
    pub_long = published_long(pub, tid)
    paper_cols = [c for c in pub["tables"].get(tid, {}).get("columns", []) if c != "average"]
    paper_n = pub.get("bon_n")
    benches = _benchmarks(bon, params)
    rows = []
    for sel in selections:
        g = bon[(bon["prm"] == sel["prm"]) & (bon["metric"] == sel["metric"])]
        g = _pick_n(g, params)
        if g.empty:
            log.info("%s: no Best-of-N rows for prm '%s' metric '%s'; row skipped", tid, sel["prm"], sel["metric"])
            continue
        key = sel.get("key") or paper_key(sel["row"], params)
        agg = sel.get("aggregation")
        bench_cells = []
        for b in benches:
            gb = g[g["benchmark"] == b]
            if gb.empty:
                continue
            r = gb.iloc[0]
            pc = paper_column(b, params)
            pv, plabel = _published_lookup(pub_long, key, pc, agg)
            cell = {"row": sel["row"], "key": key, "label": plabel, "aggregation": agg, "column": b,
                    "paper_column": pc, "n": r["n"], "value": r["accuracy"], "ci_low": r["ci_low"],
                    "ci_high": r["ci_high"], "published": pv, "comparable": paper_n is None or r["n"] == paper_n}
            bench_cells.append(cell)
        if not bench_cells:
            continue
        rows.extend(bench_cells)
        complete = len(bench_cells) == len(benches)
        same_set = sorted(c["paper_column"] for c in bench_cells) == sorted(paper_cols)
        avg_row = g[g["benchmark"] == "average"]
        full_set = not params.get("benchmarks") and complete
        pv, plabel = _published_lookup(pub_long, key, "average", agg)
        rows.append({"row": sel["row"], "key": key, "label": plabel, "aggregation": agg, "column": "average",
                     "paper_column": "average", "n": bench_cells[0]["n"],
                     "value": float(np.mean([c["value"] for c in bench_cells])) if complete else np.nan,
                     "ci_low": avg_row["ci_low"].iloc[0] if full_set and len(avg_row) else np.nan,
                     "ci_high": avg_row["ci_high"].iloc[0] if full_set and len(avg_row) else np.nan,
                     "published": pv,
                     "comparable": same_set and all(c["comparable"] for c in bench_cells)})
        if not complete:
            log.warning("%s: row '%s' lacks some benchmarks; its average is left empty", tid, sel["row"])
    return _finish_cells(rows, params)


def pb_cells(pb: pd.DataFrame, names: Iterable[str], pub: Mapping, tid: str, params: Mapping) -> pd.DataFrame:
    """Cells of a ProcessBench table: per subset error_acc / correct_acc / f1, and the average F1."""
    pub_long = published_long(pub, tid)
    paper_subsets = sorted({c.split("/")[0] for c in pub["tables"].get(tid, {}).get("columns", [])} - {"average"})
    rows = []
    for name in names:
        g = pb[pb["prm"] == name]
        subs = g[g["subset"] != "average"]
        if subs.empty:
            log.info("%s: no ProcessBench rows for '%s'; row skipped", tid, name)
            continue
        key = paper_key(name, params)
        mapped = []
        for _, r in subs.iterrows():
            ps = paper_column(r["subset"], params)
            mapped.append(ps)
            for m in PB_METRICS:
                pv, plabel = _published_lookup(pub_long, key, f"{ps}/{m}")
                ci = (r.get("f1_ci_low", np.nan), r.get("f1_ci_high", np.nan)) if m == "f1" else (np.nan, np.nan)
                rows.append({"row": name, "key": key, "label": plabel, "column": f"{r['subset']}/{m}",
                             "paper_column": f"{ps}/{m}", "n": r.get("n", np.nan), "value": r[m],
                             "ci_low": ci[0], "ci_high": ci[1], "published": pv, "comparable": True})
        avg = g[g["subset"] == "average"]
        pv, plabel = _published_lookup(pub_long, key, "average/f1")
        rows.append({"row": name, "key": key, "label": plabel, "column": "average/f1", "paper_column": "average/f1",
                     "n": subs["n"].sum() if "n" in subs else np.nan, "value": float(subs["f1"].mean()),
                     "ci_low": avg["f1_ci_low"].iloc[0] if len(avg) and "f1_ci_low" in avg else np.nan,
                     "ci_high": avg["f1_ci_high"].iloc[0] if len(avg) and "f1_ci_high" in avg else np.nan,
                     "published": pv, "comparable": sorted(mapped) == paper_subsets})
    return _finish_cells(rows, params)


def _keys_in(pub: Mapping, tid: str) -> set[str]:
    return {str(r["key"]) for r in pub["tables"].get(tid, {}).get("rows", [])}


def _prm_metric(bon: pd.DataFrame, prm: str, aggregation: str) -> str:
    """The Best-of-N metric that scores with a PRM: prm_<aggregation>, or orm for an outcome RM."""
    have = set(bon.loc[bon["prm"] == prm, "metric"])
    if f"prm_{aggregation}" in have:
        return f"prm_{aggregation}"
    return "orm" if "orm" in have else f"prm_{aggregation}"


def scorer_names(bon: pd.DataFrame | None) -> list[str]:
    """PRM / ORM names in bon.csv, in file order (baseline-only names excluded)."""
    if bon is None:
        return []
    scored = bon[bon["metric"].str.startswith("prm_") | (bon["metric"] == "orm")]
    return list(dict.fromkeys(scored["prm"]))


def baseline_selections(bon: pd.DataFrame) -> list[dict]:
    """pass@N and maj@N rows (the same for every PRM: taken from the first PRM that has them)."""
    out = []
    for metric in ("pass", "maj"):
        have = bon.loc[bon["metric"] == metric, "prm"]
        if len(have):
            n = bon.loc[bon["metric"] == metric, "n"].max()
            label = f"{metric}@{int(n)}" if pd.notna(n) else f"{metric}@N"
            out.append({"row": label, "prm": have.iloc[0], "metric": metric, "key": metric})
    return out


def baselines_as_bon(path: str | Path) -> pd.DataFrame:
    """results/tables/bon_baselines.csv (benchmark, N, pass, maj in percent) → bon rows (prm '_baselines')
    for a run without any scored PRM."""
    df = pd.read_csv(path)
    rows = []
    for _, r in df.iterrows():
        for metric in ("pass", "maj"):
            if metric in df.columns:
                rows.append({"prm": "_baselines", "benchmark": str(r["benchmark"]), "metric": metric,
                             "n": r.get("N", np.nan), "accuracy": float(r[metric]), "ci_low": np.nan,
                             "ci_high": np.nan})
    return pd.DataFrame(rows, columns=["prm", "benchmark", "metric", "n", "accuracy", "ci_low", "ci_high"])


# ------------------------------------------------------------------------------------------------
# Artifact builders (cells); one per table / figure
# ------------------------------------------------------------------------------------------------

def build_table3(bon, pub, params):
    agg = params.get("aggregation", "product")
    names = [p for p in scorer_names(bon) if paper_key(p, params) in _keys_in(pub, "table3")]
    return bon_cells(bon, [{"row": p, "prm": p, "metric": _prm_metric(bon, p, agg)} for p in names], pub, "table3", params)


def build_table4(pb, pub, params):
    names = [p for p in dict.fromkeys(pb["prm"]) if paper_key(p, params) in _keys_in(pub, "table4")]
    return pb_cells(pb, names, pub, "table4", params)


def build_table6(bon, pub, params):
    agg = params.get("aggregation", "product")
    sels = baseline_selections(bon) + [{"row": p, "prm": p, "metric": _prm_metric(bon, p, agg)}
                                       for p in scorer_names(bon)]
    return bon_cells(bon, sels, pub, "table6", params)


def build_table7(pb, pub, params):
    return pb_cells(pb, list(dict.fromkeys(pb["prm"])), pub, "table7", params)


def build_table13(bon, pub, params):
    sels = baseline_selections(bon)
    for p in scorer_names(bon):
        for agg in params.get("aggregations") or ["last", "product", "min"]:
            if ((bon["prm"] == p) & (bon["metric"] == f"prm_{agg}")).any():
                sels.append({"row": p, "prm": p, "metric": f"prm_{agg}", "aggregation": agg})
    return bon_cells(bon, sels, pub, "table13", params)


def build_table5(tol: pd.DataFrame, pub, params):
    """Table 5 cells from analysis.tolerance_accuracy output (prm, subset, n, n_correct, accuracy)."""
    pub_long = published_long(pub, "table5")
    paper_subsets = sorted(c for c in pub["tables"]["table5"]["columns"] if c != "average")
    rows = []
    for prm, g in tol.groupby("prm", sort=False):
        key = paper_key(prm, params)
        subs = g[g["subset"] != "average"]
        mapped = [paper_column(s, params) for s in subs["subset"]]
        for _, r in g.iterrows():
            pc = "average" if r["subset"] == "average" else paper_column(r["subset"], params)
            pv, plabel = _published_lookup(pub_long, key, pc)
            lo, hi = analysis.wilson_interval(int(r["n_correct"]), int(r["n"])) if r["subset"] != "average" else (np.nan, np.nan)
            rows.append({"row": prm, "key": key, "label": plabel, "column": r["subset"], "paper_column": pc,
                         "n": r["n"], "value": r["accuracy"], "ci_low": lo, "ci_high": hi, "published": pv,
                         "comparable": True if r["subset"] != "average" else sorted(mapped) == paper_subsets})
    return _finish_cells(rows, params)


def _bon_avg_cells(bon, pub, params, tid) -> dict[tuple[str, str], dict]:
    """{(prm, aggregation): average cell} over all scorers and aggregations present."""
    out = {}
    if bon is None:
        return out
    for p in scorer_names(bon):
        for metric in sorted(set(bon.loc[bon["prm"] == p, "metric"])):
            if not (metric.startswith("prm_") or metric == "orm"):
                continue
            c = bon_cells(bon, [{"row": p, "prm": p, "metric": metric}], pub, "table6", params)
            avg = c[c["column"] == "average"]
            if len(avg):
                out[(p, metric.removeprefix("prm_"))] = avg.iloc[0].to_dict()
    return out


def _pb_avg_cells(pb, pub, params) -> dict[str, dict]:
    out = {}
    if pb is None:
        return out
    for p in dict.fromkeys(pb["prm"]):
        c = pb_cells(pb, [p], pub, "table7", params)
        avg = c[c["column"] == "average/f1"]
        if len(avg):
            out[p] = avg.iloc[0].to_dict()
    return out


def summary_cells(tid: str, names: Iterable[str], sources: Mapping[str, Callable[[str], dict | None]], pub,
                  params, key_of: Callable[[str], str] | None = None, extra_of: Callable[[str], dict] | None = None):
    """Cells of a figure whose columns are summary numbers (e.g. bon_average, processbench_f1) per row.
    sources[column](name) → a cell dict (value, ci_low, ci_high, n, comparable) or None."""
    pub_long = published_long(pub, tid)
    rows = []
    for name in names:
        key = key_of(name) if key_of else paper_key(name, params)
        extra = extra_of(name) if extra_of else {}
        for col, fn in sources.items():
            src = fn(name)
            if src is None or pd.isna(src.get("value")):
                log.info("%s: no %s for '%s'; cell skipped", tid, col, name)
                continue
            pv, plabel = _published_lookup(pub_long, key, col, extra.get("aggregation"))
            rows.append({"row": name, "key": key, "label": plabel, "column": col, "paper_column": col,
                         "n": src.get("n"), "value": src["value"], "ci_low": src.get("ci_low"),
                         "ci_high": src.get("ci_high"), "published": pv,
                         "comparable": bool(src.get("comparable", False)), **extra})
    return _finish_cells(rows, params)


def _published_extra(pub, tid, key) -> dict:
    for r in pub["tables"][tid]["rows"]:
        if str(r["key"]) == key:
            return {f: r.get(f) for f in EXTRA_FIELDS if r.get(f) is not None}
    return {}


def build_summary_figure(tid: str, bon, pb, pub, params, tol: pd.DataFrame | None = None):
    """Figures 2, 3, 4, 7: rows = workflow PRMs whose paper key appears in the figure."""
    agg = params.get("aggregation", "product")
    bavg, pavg = _bon_avg_cells(bon, pub, params, tid), _pb_avg_cells(pb, pub, params)
    tol_avg = {}
    if tol is not None and len(tol):
        for _, r in tol[tol["column"] == "average"].iterrows():
            tol_avg[r["row"]] = r.to_dict()
    sources = {"bon_average": lambda p: bavg.get((p, agg)) or bavg.get((p, "orm")),
               "processbench_f1": lambda p: pavg.get(p),
               "tolerance_average": lambda p: tol_avg.get(p)}
    cols = pub["tables"][tid]["columns"]
    keys = _keys_in(pub, tid)
    names = list(dict.fromkeys(scorer_names(bon) + (list(pb["prm"]) if pb is not None else [])))
    names = [n for n in names if paper_key(n, params) in keys]
    return summary_cells(tid, names, {c: sources[c] for c in cols}, pub, params,
                         extra_of=lambda n: _published_extra(pub, tid, paper_key(n, params)))


def build_fig5(bon, pb, sweep: Iterable | pd.DataFrame | None, pub, params):
    """Figure 5: the MC hard-label threshold sweep. `sweep` = [(threshold, variant), …] (the workflow
    passes labels.trainsets.threshold_sweep_variants), or a trainsets.csv frame whose hard MC rows are
    used. Rows are matched to the paper's thresholds by value."""
    if isinstance(sweep, pd.DataFrame):
        ts = sweep[(sweep.get("source").astype(str) == "mc") & (sweep.get("label_type").astype(str) == "hard")]
        sweep = [(float(t), str(v)) for v, t in zip(ts["variant"], pd.to_numeric(ts["threshold"], errors="coerce"))
                 if pd.notna(t)]
    sweep = sorted((float(t), str(v)) for t, v in (sweep or []))
    if not sweep:
        log.warning("fig5: no threshold sweep configured (trainsets.mc_threshold_sweep); no rows")
        return _finish_cells([], params)
    threshold_of = {v: t for t, v in sweep}
    agg = params.get("aggregation", "product")
    bavg, pavg = _bon_avg_cells(bon, pub, params, "fig5"), _pb_avg_cells(pb, pub, params)
    pub_rows = pub["tables"]["fig5"]["rows"]

    def key_of(variant):
        t = threshold_of[variant]
        for r in pub_rows:
            if abs(float(r["threshold"]) - t) < 1e-6:
                return str(r["key"])
        return f"t{t:g}"

    names = [v for _, v in sweep if (v, agg) in bavg or v in pavg]
    skipped = sorted(set(threshold_of) - set(names))
    if skipped:
        log.info("fig5: sweep variants without evaluation results (skipped): %s", skipped)
    return summary_cells("fig5", names, {"bon_average": lambda v: bavg.get((v, agg)),
                                         "processbench_f1": lambda v: pavg.get(v)}, pub, params, key_of=key_of,
                         extra_of=lambda v: {"threshold": threshold_of[v]})


def build_fig9(bon, pub, params):
    """Figure 9: Best-of-N mean accuracy per aggregation (min / product / last) for the training-data rows."""
    bavg = _bon_avg_cells(bon, pub, params, "fig9")
    keys = _keys_in(pub, "fig9")
    cols = pub["tables"]["fig9"]["columns"]
    names = [p for p in scorer_names(bon) if paper_key(p, params) in keys]
    return summary_cells("fig9", names, {c: (lambda p, c=c: bavg.get((p, c))) for c in cols}, pub, params)


def build_fig6(rates: pd.DataFrame, pub, params):
    """Figure 6 cells from analysis.flaw_rates output."""
    pub_long = published_long(pub, "fig6")
    rows = []
    for _, r in rates.iterrows():
        key = "policy" if r["source"] == "policy_judge" else "processbench"
        row = "policy samples, judge" if key == "policy" else "ProcessBench annotation"
        pc = paper_column(r["dataset"], params)
        pv, plabel = _published_lookup(pub_long, key, pc)
        rows.append({"row": row, "key": key, "label": plabel, "column": r["dataset"], "paper_column": pc,
                     "n": r["n_judged"], "value": r["rate"], "ci_low": r["ci_low"], "ci_high": r["ci_high"],
                     "published": pv, "comparable": True})
    return _finish_cells(rows, params)


def build_fig8(shares: pd.DataFrame, pub, params, bon_full: bool):
    """Figure 8 cells from analysis.min_at_last_shares output (pooled 'all' rows carry the published value)."""
    pub_long = published_long(pub, "fig8")
    rows = []
    for _, r in shares.iterrows():
        key = paper_key(r["prm"], params)
        pooled = r["benchmark"] == "all"
        pv, plabel = _published_lookup(pub_long, key, "min_at_last") if pooled else (np.nan, None)
        rows.append({"row": r["prm"], "key": key, "label": plabel, "column": r["benchmark"],
                     "paper_column": "min_at_last" if pooled else paper_column(r["benchmark"], params),
                     "n": r["n_scored"], "value": r["share"], "ci_low": r["ci_low"], "ci_high": r["ci_high"],
                     "published": pv, "comparable": pooled and bon_full})
    return _finish_cells(rows, params)


# ------------------------------------------------------------------------------------------------
# Display (wide) frames for LaTeX / Markdown
# ------------------------------------------------------------------------------------------------

def _fmt(v) -> str:
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.1f}"


def display_frame(cells: pd.DataFrame, aid: str, pub: Mapping) -> pd.DataFrame:
    """Wide frame: one line per reproduced row, then 'paper: <label>' with the published numbers of the
    matching cells and 'Δ' where comparable. Columns in the order they appear in the cells."""
    if cells.empty:
        return pd.DataFrame({"": []})
    tid = aid
    cols = list(dict.fromkeys(cells["column"]))
    pcol_of = dict(zip(cells["column"], cells["paper_column"]))
    headers = [column_label(pub, str(pcol_of.get(c) or c)) if pcol_of.get(c) in _paper_columns(pub, tid) or
               str(c).startswith("average") else _workflow_column_label(str(c)) for c in cols]
    id_cols = ["row"] + [c for c in ("aggregation", *EXTRA_FIELDS) if c in cells.columns and cells[c].notna().any()]
    out = []
    for ident, g in cells.groupby(id_cols, sort=False, dropna=False):
        ident = ident if isinstance(ident, tuple) else (ident,)
        name = str(ident[0]) + "".join(f" [{_fmt(x) if isinstance(x, float) else x}]" for x in ident[1:]
                                       if x is not None and not (isinstance(x, float) and math.isnan(x)))
        by_col = g.set_index("column")
        out.append([name] + [_fmt(by_col["value"].get(c)) for c in cols])
        if by_col["published"].notna().any():
            label = next((x for x in by_col["label"] if x), by_col["key"].iloc[0])
            out.append([f"paper: {label}"] + [_fmt(by_col["published"].get(c)) for c in cols])
            if by_col["diff"].notna().any():
                out.append(["Δ"] + [(("+" if by_col["diff"].get(c) > 0 else "") + _fmt(by_col["diff"].get(c)))
                                    if pd.notna(by_col["diff"].get(c)) else "" for c in cols])
    return pd.DataFrame(out, columns=["row"] + headers)


def _paper_columns(pub, tid) -> set[str]:
    return set(pub["tables"].get(tid, {}).get("columns", []))


def _workflow_column_label(c: str) -> str:
    if "/" in c:
        sub, metric = c.split("/", 1)
        return f"{sub} {PB_METRIC_LABELS.get(metric, metric)}"
    return {"bon_average": "BoN avg.", "processbench_f1": "PB avg. F1", "tolerance_average": "PB tolerance avg.",
            "all": "all benchmarks"}.get(c, c)


# ------------------------------------------------------------------------------------------------
# Plotting (seaborn, colour-blind palette, one paper column wide)
# ------------------------------------------------------------------------------------------------

def _style(params: Mapping):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    logging.getLogger("fontTools").setLevel(logging.WARNING)  # PDF font subsetting logs every glyph at INFO
    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    fig_cfg = params.get("figure") or {}
    fs = float(fig_cfg.get("font_size", 7))
    sns.set_theme(context="paper", style="whitegrid", palette=fig_cfg.get("palette", "colorblind"),
                  rc={"font.size": fs, "axes.titlesize": fs, "axes.labelsize": fs, "xtick.labelsize": fs - 1,
                      "ytick.labelsize": fs - 1, "legend.fontsize": fs - 1, "legend.title_fontsize": fs - 1,
                      "pdf.fonttype": 42, "axes.linewidth": 0.6, "grid.linewidth": 0.4})
    return plt, sns


def _width(params) -> float:
    return float((params.get("figure") or {}).get("width_in", 3.3))


def _empty(ax, text: str) -> None:
    ax.set_axis_off()
    ax.text(0.5, 0.5, textwrap.fill(text, 40), ha="center", va="center", fontsize=6, color="0.3",
            transform=ax.transAxes)


def _short(name: str, width: int = 18) -> str:
    return textwrap.shorten(str(name), width=width, placeholder="…") if len(str(name)) > width else str(name)


def _wrap(name: str, width: int = 14) -> str:
    return "\n".join(textwrap.wrap(str(name), width=width, break_on_hyphens=False, break_long_words=False)) or str(name)


def _key_palette(sns, keys: Iterable[str], params: Mapping) -> dict:
    """One colour per paper key, the same in the 'this run' and 'paper' panels."""
    keys = list(dict.fromkeys(k for k in keys if k is not None))
    colours = sns.color_palette((params.get("figure") or {}).get("palette", "colorblind"), max(len(keys), 1))
    return {k: colours[i % len(colours)] for i, k in enumerate(keys)}


def _bars(ax, sns, df: pd.DataFrame, x: str, y: str, hue: str | None = None, order=None, hue_order=None,
          palette=None, horizontal: bool = False, label_fmt: str = "{:.1f}") -> None:
    """Bars of precomputed values (no seaborn estimation), CI whiskers where the data has them, and value
    labels. Whiskers are placed from the drawn patches (one container per hue level, bars in `order`)."""
    order = order or list(dict.fromkeys(df[x]))
    levels = (hue_order or list(dict.fromkeys(df[hue]))) if hue else [None]
    kw = dict(hue=hue, order=order, hue_order=levels if hue else None, palette=palette, ax=ax, errorbar=None,
              legend=bool(hue) and hue != x, saturation=0.9)
    if horizontal:
        sns.barplot(data=df, y=x, x=y, orient="h", **kw)
    else:
        sns.barplot(data=df, x=x, y=y, **kw)
    if label_fmt:
        for cont in ax.containers:
            ax.bar_label(cont, fmt=label_fmt, fontsize=4.5, padding=1)
    if not ({"ci_low", "ci_high"} <= set(df.columns) and df["ci_low"].notna().any()):
        return
    if hue == x or hue is None:  # one container per level when hue == x, one container otherwise
        pairs = [(cont, [lvl]) for cont, lvl in zip(ax.containers, order)] if hue == x else [(ax.containers[0], order)]
        for cont, cats in pairs:
            for patch, cat in zip(cont.patches, cats):
                _whisker(ax, patch, df[df[x] == cat], horizontal)
    else:
        for cont, lvl in zip(ax.containers, levels):
            present = [c for c in order if ((df[x] == c) & (df[hue] == lvl)).any()]
            patches = [p for p in cont.patches if not (np.isnan(p.get_height()) or np.isnan(p.get_width()))]
            for patch, cat in zip(patches, present):
                _whisker(ax, patch, df[(df[x] == cat) & (df[hue] == lvl)], horizontal)


def _whisker(ax, patch, r: pd.DataFrame, horizontal: bool) -> None:
    if r.empty or pd.isna(r["ci_low"].iloc[0]) or pd.isna(r["ci_high"].iloc[0]):
        return
    lo, hi = float(r["ci_low"].iloc[0]), float(r["ci_high"].iloc[0])
    if horizontal:
        yc = patch.get_y() + patch.get_height() / 2
        ax.plot([lo, hi], [yc, yc], color="0.15", lw=0.6, solid_capstyle="butt")
    else:
        xc = patch.get_x() + patch.get_width() / 2
        ax.plot([xc, xc], [lo, hi], color="0.15", lw=0.6, solid_capstyle="butt")


def _legend_small(ax, title=None, loc="best", ncol: int = 1, outside: bool = False) -> None:
    if ax.get_legend() is None:
        return
    kw = dict(title=title, frameon=False, handlelength=1, borderaxespad=0.2, labelspacing=0.2, ncol=ncol,
              columnspacing=0.8)
    if outside:
        ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), **kw)
    else:
        ax.legend(loc=loc, **kw)


def _zoom(ax, values: pd.Series, horizontal: bool = False, headroom: float = 2.0) -> None:
    """Axis range around the values (the paper zooms its bar charts too); 0-100 bounds kept."""
    lo, hi = float(values.min()), float(values.max())
    pad = max(1.0, 0.25 * (hi - lo))
    rng = (max(0.0, lo - 3 * pad), min(100.0, hi + headroom * pad))
    (ax.set_xlim if horizontal else ax.set_ylim)(*rng)


def _save(fig, aid: str, outputs: Mapping, params: Mapping) -> None:
    run = params.get("run") or {}
    info = ARTIFACTS[aid]
    note = f"{info['source']} reproduced. {stamp(run)}"
    fig.text(0.01, 0.003, textwrap.fill(note, int(_width(params) * 30)), fontsize=4.5, color="0.35",
             ha="left", va="bottom")
    meta = {"Title": f"{info['source']}: {info['title']}", "Subject": stamp(run),
            "Creator": "prm-lessons (workflow/rules/analysis.smk)"}
    dpi = int((params.get("figure") or {}).get("dpi", 300))
    for kind in ("pdf", "png"):
        Path(outputs[kind]).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(outputs["pdf"], metadata=meta)
    fig.savefig(outputs["png"], dpi=dpi, metadata={"Title": meta["Title"], "Description": meta["Subject"]})
    import matplotlib.pyplot as plt

    plt.close(fig)


def _run_and_paper(cells: pd.DataFrame, pub_long: pd.DataFrame, value_cols: Iterable[str]) -> pd.DataFrame:
    """Both origins in one long frame: this run's cells (name = workflow row) and the paper's figure rows
    (name = the paper's label)."""
    run = cells[cells["column"].isin(list(value_cols))].copy()
    run["origin"] = ORIGIN_RUN
    run["name"] = run["row"]
    paper = pub_long[pub_long["column"].isin(list(value_cols))].copy()
    paper = paper.rename(columns={"published": "value"})
    paper["origin"] = ORIGIN_PAPER
    paper["name"] = paper["label"]
    paper["ci_low"] = paper["ci_high"] = np.nan
    keep = ["origin", "name", "key", "column", "value", "ci_low", "ci_high"] + \
        [c for c in ("aggregation", *EXTRA_FIELDS) if c in run.columns or c in paper.columns]
    return pd.concat([run.reindex(columns=keep), paper.reindex(columns=keep)], ignore_index=True)


def _origin_title(ax, origin: str) -> None:
    ax.set_title(origin if origin == ORIGIN_RUN else "paper (Zhang et al. 2025)", fontsize=6, pad=2)


def plot_metric_grid(aid: str, cells: pd.DataFrame, pub: Mapping, params: Mapping, ylabels: Mapping[str, str]):
    """Figure 2: rows = origin (this run, paper), columns = metric; one bar per training-data row,
    coloured by the paper row it reproduces (same colour in both panels; a legend names both)."""
    plt, sns = _style(params)
    from matplotlib.patches import Patch

    cols = list(ylabels)
    pub_long = published_long(pub, aid)
    data = _run_and_paper(cells, pub_long, cols)
    keys = list(dict.fromkeys(list(pub_long["key"]) + [k for k in cells["key"] if k is not None]))
    palette = _key_palette(sns, keys, params)
    fig, axes = plt.subplots(2, len(cols), figsize=(_width(params), 3.1), squeeze=False)
    for i, origin in enumerate((ORIGIN_RUN, ORIGIN_PAPER)):
        for j, col in enumerate(cols):
            ax = axes[i][j]
            d = data[(data["origin"] == origin) & (data["column"] == col)].copy()
            if d.empty:
                _empty(ax, f"{origin}: no rows" + (" (see the rule's log)" if origin == ORIGIN_RUN else ""))
                continue
            _bars(ax, sns, d, "key", "value", hue="key", order=[k for k in keys if k in set(d["key"])],
                  palette=palette)
            ax.set_xlabel("")
            ax.set_xticklabels([])
            ax.set_ylabel(ylabels[col])
            _origin_title(ax, origin)
            _zoom(ax, d["value"])
    handles = []
    for k in keys:
        run_rows = sorted(set(cells.loc[cells["key"] == k, "row"]))
        plabel = next(iter(pub_long.loc[pub_long["key"] == k, "label"]), None)
        text = " / ".join(run_rows) + (" ↔ " if run_rows and plabel else "") + (plabel or "")
        handles.append(Patch(color=palette[k], label=text))
    fig.legend(handles=handles, loc="lower center", ncol=1, frameon=False, fontsize=5, bbox_to_anchor=(0.5, 0.03))
    fig.tight_layout(rect=(0, 0.04 + 0.045 * len(handles), 1, 1), h_pad=0.6, w_pad=0.6)
    return fig


def plot_hard_soft(aid: str, cells: pd.DataFrame, pub: Mapping, params: Mapping, col: str, ylabel: str):
    """Figures 3 / 4: x = before / after consensus filtering, hue = soft / hard; this run and paper."""
    plt, sns = _style(params)
    data = _run_and_paper(cells, published_long(pub, aid), [col])
    fig, axes = plt.subplots(1, 2, figsize=(_width(params), 2.0), squeeze=False)
    for j, origin in enumerate((ORIGIN_RUN, ORIGIN_PAPER)):
        ax = axes[0][j]
        d = data[data["origin"] == origin].copy()
        if d.empty or "stage" not in d or d["stage"].isna().all():
            _empty(ax, f"{origin}: no hard/soft rows before/after filtering")
            continue
        _bars(ax, sns, d, "stage", "value", hue="labels", order=[s for s in ("before", "after") if s in set(d["stage"])],
              hue_order=[h for h in ("soft", "hard") if h in set(d["labels"])])
        ax.set_xlabel("consensus filtering", fontsize=6)
        ax.set_ylabel(ylabel if j == 0 else "")
        _origin_title(ax, origin)
        _zoom(ax, pd.concat([d["value"], d["ci_high"].dropna()]), headroom=5.0)
        _legend_small(ax, None, ncol=2, outside=False, loc="upper left")
    fig.tight_layout(rect=(0, 0.05, 1, 1), w_pad=0.6)
    return fig


def plot_fig5(cells: pd.DataFrame, pub: Mapping, params: Mapping):
    """Figure 5: metric against the MC threshold, this run and the paper as two lines."""
    plt, sns = _style(params)
    cols = {"bon_average": "BoN mean acc. (%)", "processbench_f1": "ProcessBench F1 (%)"}
    data = _run_and_paper(cells, published_long(pub, "fig5"), cols)
    data["origin"] = data["origin"].map({ORIGIN_RUN: ORIGIN_RUN, ORIGIN_PAPER: "paper"})
    fig, axes = plt.subplots(1, 2, figsize=(_width(params), 1.9), squeeze=False)
    for j, (col, ylabel) in enumerate(cols.items()):
        ax = axes[0][j]
        d = data[data["column"] == col].dropna(subset=["threshold"])
        if d.empty:
            _empty(ax, "no threshold-sweep rows")
            continue
        sns.lineplot(data=d, x="threshold", y="value", hue="origin", style="origin", markers=True, dashes=False,
                     hue_order=[o for o in (ORIGIN_RUN, "paper") if o in set(d["origin"])], ax=ax, markersize=3,
                     linewidth=0.9)
        ax.set_xlabel("MC threshold (hard labels)")
        ax.set_ylabel(ylabel)
        ax.set_xticks([0, 0.25, 0.5, 0.75])
        _legend_small(ax, None, loc="best")
    fig.tight_layout(rect=(0, 0.05, 1, 1), w_pad=0.6)
    return fig


def plot_fig6(cells: pd.DataFrame, pub: Mapping, params: Mapping):
    """Figure 6: flawed-process rate among correct answers; this run (judge on the policy's samples,
    ProcessBench's annotation of its cases) over the paper (human annotation, ProcessBench)."""
    plt, sns = _style(params)
    pub_long = published_long(pub, "fig6")
    run = cells.copy()
    run["series"] = run["row"]
    run["x"] = run["column"]
    paper = pub_long.rename(columns={"published": "value"}).copy()
    paper["series"] = paper["key"].map({"policy": "policy samples, human", "processbench": "ProcessBench annotation"})
    paper["x"] = paper["column"].map(lambda c: pub["columns"].get(c, c))
    paper["ci_low"] = paper["ci_high"] = np.nan
    fig, axes = plt.subplots(2, 1, figsize=(_width(params), 3.4), squeeze=False)
    for i, (origin, d) in enumerate(((ORIGIN_RUN, run), (ORIGIN_PAPER, paper))):
        ax = axes[i][0]
        if d.empty:
            _empty(ax, f"{origin}: no rates (no judge labels or ProcessBench cases)")
            continue
        _bars(ax, sns, d, "x", "value", hue="series")
        ax.set_xlabel("")
        ax.set_ylabel("flawed process among\ncorrect answers (%)")
        top = max(10.0, float(d["ci_high"].max() if d["ci_high"].notna().any() else 0), float(d["value"].max()))
        ax.set_ylim(0, min(100.0, top * 1.2) if top * 1.2 < 100 else 115)
        _legend_small(ax, None, ncol=2, loc="upper left")
        _origin_title(ax, origin)
    fig.tight_layout(rect=(0, 0.03, 1, 1), h_pad=0.8)
    return fig


def plot_fig7(cells: pd.DataFrame, pub: Mapping, params: Mapping):
    """Figure 7: BoN mean accuracy against accuracy on answer-correct/process-wrong cases."""
    plt, sns = _style(params)
    pub_long = published_long(pub, "fig7")
    data = _run_and_paper(cells, pub_long, ["bon_average", "tolerance_average"])
    palette = _key_palette(sns, list(pub_long["key"]) + list(cells["key"]), params)
    fig, axes = plt.subplots(1, 2, figsize=(_width(params), 2.0), squeeze=False)
    for j, origin in enumerate((ORIGIN_RUN, ORIGIN_PAPER)):
        ax = axes[0][j]
        d = data[data["origin"] == origin].pivot_table(index=["name", "key"], columns="column", values="value",
                                                       aggfunc="first")
        if d.empty or not {"bon_average", "tolerance_average"} <= set(d.columns):
            _empty(ax, f"{origin}: needs both BoN and tolerance results")
            continue
        d = d.dropna().reset_index()
        sns.scatterplot(data=d, x="tolerance_average", y="bon_average", hue="key", palette=palette, ax=ax, s=18,
                        legend=False)
        for _, r in d.iterrows():
            ax.annotate(_wrap(r["name"], 14), (r["tolerance_average"], r["bon_average"]), fontsize=4.5,
                        xytext=(2, 2), textcoords="offset points")
        ax.set_xlabel("acc. on answer-correct,\nprocess-wrong cases (%)")
        ax.set_ylabel("BoN mean acc. (%)" if j == 0 else "")
        _origin_title(ax, origin)
        ax.margins(0.3)
    fig.tight_layout(rect=(0, 0.05, 1, 1), w_pad=0.6)
    return fig


def plot_fig8(cells: pd.DataFrame, pub: Mapping, params: Mapping):
    """Figure 8: share of selected responses whose minimum step score is on the final step, per PRM."""
    plt, sns = _style(params)
    run = cells[cells["column"] == "all"].copy()
    run["name"] = run["row"].map(lambda s: _short(s, 24))
    paper = published_long(pub, "fig8").rename(columns={"published": "value"})
    paper["name"] = paper["label"]
    paper["ci_low"] = paper["ci_high"] = np.nan
    heights = [max(0.8, 0.15 * len(run) + 0.3), 0.15 * len(paper) + 0.3]
    fig, axes = plt.subplots(2, 1, figsize=(_width(params), sum(heights) + 0.7), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for i, (origin, d) in enumerate(((ORIGIN_RUN, run), (ORIGIN_PAPER, paper))):
        ax = axes[i][0]
        if d.empty:
            _empty(ax, f"{origin}: no scored Best-of-N responses")
            continue
        d = d.sort_values("value")
        _bars(ax, sns, d, "name", "value", horizontal=True)
        ax.set_ylabel("")
        ax.set_xlabel("min. step score on the final step (%)" if i == 1 else "")
        ax.tick_params(axis="y", labelsize=5)
        _origin_title(ax, origin)
        ax.set_xlim(0, min(100, max(10, float(d[["value", "ci_high"]].max().max()) * 1.2)))
    fig.tight_layout(rect=(0, 0.03, 1, 1), h_pad=0.5)
    return fig


def plot_fig9(cells: pd.DataFrame, pub: Mapping, params: Mapping):
    """Figure 9: BoN mean accuracy by scoring strategy per training-data row; this run over the paper."""
    plt, sns = _style(params)
    cols = ["min", "product", "last"]
    data = _run_and_paper(cells, published_long(pub, "fig9"), cols)
    fig, axes = plt.subplots(2, 1, figsize=(_width(params), 3.3), squeeze=False)
    for i, origin in enumerate((ORIGIN_RUN, ORIGIN_PAPER)):
        ax = axes[i][0]
        d = data[data["origin"] == origin].copy()
        if d.empty:
            _empty(ax, f"{origin}: no rows")
            continue
        d["name"] = d["name"].map(lambda s: _wrap(s, 12))
        _bars(ax, sns, d, "name", "value", hue="column", hue_order=[c for c in cols if c in set(d["column"])],
              label_fmt="")
        ax.set_xlabel("")
        ax.set_ylabel("BoN mean acc. (%)")
        _origin_title(ax, origin)
        _zoom(ax, pd.concat([d["value"], d["ci_high"].dropna()]), headroom=4.0)
        ax.tick_params(axis="x", labelsize=5)
        _legend_small(ax, None, ncol=3, loc="upper left")
    fig.tight_layout(rect=(0, 0.03, 1, 1), h_pad=0.6)
    return fig


# ------------------------------------------------------------------------------------------------
# Writing artifacts
# ------------------------------------------------------------------------------------------------

def _write_cells(aid: str, cells: pd.DataFrame, outputs: Mapping, params: Mapping, inputs: Mapping) -> None:
    Path(outputs["csv"]).parent.mkdir(parents=True, exist_ok=True)
    cells.to_csv(outputs["csv"], index=False)
    write_json(provenance(aid, params.get("run") or {}, inputs), outputs["provenance"])
    n_pub = int(cells["published"].notna().sum()) if len(cells) else 0
    log.info("%s: %d cells (%d with a published number, %d comparable) → %s", aid, len(cells), n_pub,
             int(cells["comparable"].sum()) if len(cells) else 0, outputs["csv"])


def _table_notes(aid: str, cells: pd.DataFrame, pub: Mapping) -> list[str]:
    notes = []
    if len(cells) and cells["published"].notna().any() and not cells["comparable"].any():
        notes.append("No cell is comparable with the paper (different benchmarks/subsets or Best-of-N N), "
                     "so no difference is given; the paper's numbers are shown for orientation only.")
    if pub["tables"].get(aid, {}).get("notes"):
        notes.append("Paper: " + " ".join(str(pub["tables"][aid]["notes"]).split()))
    if cells.empty:
        notes.append("This run has no rows for this table (see the rule's log).")
    return notes


def emit_table(aid: str, cells: pd.DataFrame, outputs: Mapping, params: Mapping, inputs: Mapping) -> None:
    pub = load_published()
    _write_cells(aid, cells, outputs, params, inputs)
    a = ARTIFACTS[aid]
    display = display_frame(cells, aid, pub) if len(cells) else pd.DataFrame({"row": ["(no rows in this run)"]})
    Path(outputs["tex"]).parent.mkdir(parents=True, exist_ok=True)
    Path(outputs["tex"]).write_text(latex_table(display, a["title"], a["source"], params.get("run") or {}, aid,
                                                _table_notes(aid, cells, pub)))


def emit_figure(aid: str, cells: pd.DataFrame, plot: Callable, outputs: Mapping, params: Mapping,
                inputs: Mapping) -> None:
    pub = load_published()
    _write_cells(aid, cells, outputs, params, inputs)
    fig = plot(cells, pub, params)
    _save(fig, aid, outputs, params)


# ------------------------------------------------------------------------------------------------
# Rule functions (workflow/rules/analysis.smk); one per table / figure
# ------------------------------------------------------------------------------------------------

def _bon_input(inputs) -> pd.DataFrame | None:
    bon = _csv_or_empty(inputs, "bon", load_bon)
    if (bon is None or bon.empty) and inputs.get("baselines") and Path(inputs["baselines"]).exists():
        bon = baselines_as_bon(inputs["baselines"])
    return bon


def _empty_bon() -> pd.DataFrame:
    return pd.DataFrame(columns=["prm", "benchmark", "metric", "n", "accuracy", "ci_low", "ci_high"])


def _empty_pb() -> pd.DataFrame:
    return pd.DataFrame(columns=["prm", "subset", "n", "error_acc", "correct_acc", "f1"])


def rule_table3(*, inputs, outputs, params, wildcards, threads) -> None:
    """Rule `table3_data_sources_bon`: Table 3 (BoN by training-data source)."""
    bon = _bon_input(inputs)
    emit_table("table3", build_table3(bon if bon is not None else _empty_bon(), load_published(), params),
               outputs, params, inputs)


def rule_table4(*, inputs, outputs, params, wildcards, threads) -> None:
    """Rule `table4_data_sources_processbench`: Table 4 (ProcessBench by training-data source)."""
    pb = _csv_or_empty(inputs, "processbench", load_processbench_table)
    emit_table("table4", build_table4(pb if pb is not None else _empty_pb(), load_published(), params),
               outputs, params, inputs)


def rule_table5(*, inputs, outputs, params, wildcards, threads) -> None:
    """Rule `table5_prm_tolerance`: Table 5 from every PRM's ProcessBench predictions."""
    preds = {name: pd.read_parquet(path) for name, path in analysis._named(inputs, "predictions").items()}
    tol = analysis.tolerance_accuracy(preds)
    emit_table("table5", build_table5(tol, load_published(), params), outputs, params, inputs)


def rule_table6(*, inputs, outputs, params, wildcards, threads) -> None:
    """Rule `table6_bon_main`: Table 6 (main Best-of-N results with pass@N / maj@N)."""
    bon = _bon_input(inputs)
    emit_table("table6", build_table6(bon if bon is not None else _empty_bon(), load_published(), params),
               outputs, params, inputs)


def rule_table7(*, inputs, outputs, params, wildcards, threads) -> None:
    """Rule `table7_processbench_main`: Table 7 (ProcessBench for every PRM and critic)."""
    pb = _csv_or_empty(inputs, "processbench", load_processbench_table)
    emit_table("table7", build_table7(pb if pb is not None else _empty_pb(), load_published(), params),
               outputs, params, inputs)


def rule_table13(*, inputs, outputs, params, wildcards, threads) -> None:
    """Rule `table13_scoring_strategies`: Table 13 (last / product / min per PRM)."""
    bon = _bon_input(inputs)
    emit_table("table13", build_table13(bon if bon is not None else _empty_bon(), load_published(), params),
               outputs, params, inputs)


def _bon_pb(inputs):
    bon = _bon_input(inputs)
    pb = _csv_or_empty(inputs, "processbench", load_processbench_table)
    return (bon if bon is not None else _empty_bon()), (pb if pb is not None else _empty_pb())


def rule_fig2(*, inputs, outputs, params, wildcards, threads) -> None:
    """Rule `fig2_consensus_filtering`."""
    bon, pb = _bon_pb(inputs)
    pub = load_published()
    cells = build_summary_figure("fig2", bon, pb, pub, params)
    emit_figure("fig2", cells, lambda c, p, q: plot_metric_grid(
        "fig2", c, p, q, {"bon_average": "BoN mean acc. (%)", "processbench_f1": "ProcessBench F1 (%)"}),
        outputs, params, inputs)


def rule_fig3(*, inputs, outputs, params, wildcards, threads) -> None:
    """Rule `fig3_hard_soft_bon`."""
    bon, pb = _bon_pb(inputs)
    cells = build_summary_figure("fig3", bon, pb, load_published(), params)
    emit_figure("fig3", cells, lambda c, p, q: plot_hard_soft("fig3", c, p, q, "bon_average", "BoN mean acc. (%)"),
                outputs, params, inputs)


def rule_fig4(*, inputs, outputs, params, wildcards, threads) -> None:
    """Rule `fig4_hard_soft_processbench`."""
    bon, pb = _bon_pb(inputs)
    cells = build_summary_figure("fig4", bon, pb, load_published(), params)
    emit_figure("fig4", cells, lambda c, p, q: plot_hard_soft("fig4", c, p, q, "processbench_f1",
                                                              "ProcessBench F1 (%)"), outputs, params, inputs)


def rule_fig5(*, inputs, outputs, params, wildcards, threads) -> None:
    """Rule `fig5_mc_threshold`."""
    bon, pb = _bon_pb(inputs)
    sweep = params.get("threshold_sweep") or _csv_or_empty(inputs, "trainsets", pd.read_csv)
    emit_figure("fig5", build_fig5(bon, pb, sweep, load_published(), params), plot_fig5, outputs, params, inputs)


def rule_fig6(*, inputs, outputs, params, wildcards, threads) -> None:
    """Rule `fig6_flawed_process`: judge-based flawed-process rate on the policy's correct answers, and
    ProcessBench's annotated rate per subset."""
    samples = {d: pd.read_parquet(p) for d, p in analysis._named(inputs, "samples").items()}
    judges = {d: pd.read_parquet(p) for d, p in analysis._named(inputs, "judge").items()}
    cases = pd.read_parquet(inputs["cases"]) if inputs.get("cases") and Path(inputs["cases"]).exists() else None
    rates = analysis.flaw_rates(samples, judges, cases)
    emit_figure("fig6", build_fig6(rates, load_published(), params) if len(rates) else _finish_cells([], params),
                plot_fig6, outputs, params, inputs)


def rule_fig7(*, inputs, outputs, params, wildcards, threads) -> None:
    """Rule `fig7_tolerance_vs_bon`: BoN mean accuracy vs Table 5's average, per training-data source."""
    bon = _bon_input(inputs)
    tol = load_cells(inputs["table5"]) if Path(inputs["table5"]).exists() else None
    cells = build_summary_figure("fig7", bon if bon is not None else _empty_bon(), None, load_published(), params,
                                 tol=tol)
    emit_figure("fig7", cells, plot_fig7, outputs, params, inputs)


def rule_fig8(*, inputs, outputs, params, wildcards, threads) -> None:
    """Rule `fig8_min_at_last_step`: where the minimum step score of Best-of-N-selected responses falls."""
    scores = {}
    for name, path in analysis._named(inputs, "scores").items():
        prm, _, bench = name.partition("__")
        scores[(prm, bench)] = analysis.read_parquet_list_columns(path)
    shares = analysis.min_at_last_shares(scores, params.get("aggregation", "product"), params.get("n"))
    pub = load_published()
    benches = sorted({paper_column(b, params) for (_, b) in scores})
    paper_benches = sorted(c for c in pub["bon_columns"] if c != "average")
    ns = {len(df.groupby("problem_id").head(params.get("n") or 10**9)) // max(1, df["problem_id"].nunique())
          for df in scores.values()} if scores else set()
    bon_full = benches == paper_benches and ns == {pub.get("bon_n")}
    emit_figure("fig8", build_fig8(shares, pub, params, bon_full), plot_fig8, outputs, params, inputs)


def rule_fig9(*, inputs, outputs, params, wildcards, threads) -> None:
    """Rule `fig9_scoring_strategies`."""
    bon = _bon_input(inputs)
    emit_figure("fig9", build_fig9(bon if bon is not None else _empty_bon(), load_published(), params),
                plot_fig9, outputs, params, inputs)
