"""The paper's tables and figures as data: the workflow's result tables → long "cells" tables. The
loaders and the builders artifacts share (Best-of-N, ProcessBench and summary cells) live here; each
artifact's own builder lives in its module, artifacts/defs/<stem>.py.

Every artifact is a long "cells" table (one row per number of this run) with the columns

    run, row, key, label, aggregation, column, paper_column, n, value, ci_low, ci_high,
    published, diff, comparable   (+ threshold / stage / labels where the artifact has them)

`row` is the workflow's name (PRM / training-set variant / baseline), `key` the paper row it reproduces
(config `analysis.paper_rows`, identity by default; the keys are those of published.yaml), `column`
the workflow's benchmark / subset (mapped to the paper's by `analysis.paper_columns`), `value` the
number this run measured, in percent, `published` the paper's number for that cell (NaN when the paper has
none), `diff = value - published` only where `comparable` (same cell definition: same benchmark or
subset, same Best-of-N N, and for averages the same set of benchmarks). Missing inputs, PRMs or
variants are skipped with a logged note; an artifact with no rows is still written (empty table, a
figure that says so), so paper/ always builds.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable, Iterable, Mapping

import numpy as np
import pandas as pd

from prm_lessons.artifacts.published import EXTRA_FIELDS, lookup, paper_column, paper_key, published_long
from prm_lessons.artifacts.registry import provenance
from prm_lessons.tables import FRACTIONS, read_csv, read_plain_csv, write_json, write_plain_csv

log = logging.getLogger(__name__)

CELL_COLUMNS = ["run", "row", "key", "label", "aggregation", "column", "paper_column", "n", "value",
                "ci_low", "ci_high", "published", "diff", "comparable"]
PB_METRICS = ("error_acc", "correct_acc", "f1")
AGG_METRICS = ("product", "min", "last", "mean")


# ------------------------------------------------------------------------------------------------
# Reading the workflow's result tables
# ------------------------------------------------------------------------------------------------

BON_FRAME = ["prm", "benchmark", "metric", "n", "accuracy", "ci_low", "ci_high", "policy"]


def to_percent(df: pd.DataFrame, kind: str) -> pd.DataFrame:
    """The fraction columns of a `kind` stage table (tables.FRACTIONS) × 100: the one place where a stage
    table's numbers become the percent the artifacts render."""
    df = df.copy()
    for c in FRACTIONS[kind]:
        if c in df.columns:
            df[c] = 100 * pd.to_numeric(df[c], errors="coerce")
    return df


def load_bon(path: str | Path, kind: str = "bon_csv") -> pd.DataFrame:
    """results/tables/bon.csv (or search.csv, kind search_csv; judge_bon.csv, kind judge_bon_csv), read
    and checked by tables.read_csv → BON_FRAME with accuracy and intervals in percent. `metric` is pass,
    maj, orm, prm_<aggregation>, or a paired difference "<metric>-maj"."""
    df = to_percent(read_csv(path, kind), kind)
    for c in ("prm", "benchmark", "metric"):
        df[c] = df[c].astype(str)
    # `policy`: the Best-of-N policy setting of the row (bon.policies); a table without it holds one policy's
    df["policy"] = df["policy"].astype(object).where(df["policy"].notna(), None) if "policy" in df.columns else None
    return df[BON_FRAME]


def select_rows(bon: pd.DataFrame, policy: str | None, n=None, primary: bool = True) -> pd.DataFrame:
    """The rows of one policy at one N (load_bon's frame). `policy` None: every policy; a table without a
    `policy` column holds the primary policy's rows only, which it is whenever `primary` (the second
    policy's tables pass False and get no rows from it). `n` None: every N."""
    if policy is not None and "policy" in bon.columns:
        if bon["policy"].notna().any():
            bon = bon[bon["policy"].astype(str) == str(policy)]
        elif not primary:
            bon = bon.iloc[0:0]
    if n is not None and "n" in bon.columns and bon["n"].notna().any():
        bon = bon[pd.to_numeric(bon["n"], errors="coerce") == float(n)]
    return bon


def load_processbench_table(path: str | Path) -> pd.DataFrame:
    """results/tables/processbench.csv (tables kind processbench_csv; fractions) → percent."""
    df = to_percent(read_csv(path, "processbench_csv"), "processbench_csv")
    df["prm"] = df["prm"].astype(str)
    df["subset"] = df["subset"].astype(str)
    return df


def load_cells(path: str | Path) -> pd.DataFrame:
    """An artifact's cells CSV (results/tables/<stem>.csv) with missing text cells as None."""
    df = read_plain_csv(path, keep_default_na=True)
    for c in ("row", "key", "label", "aggregation", "column", "paper_column"):
        if c in df.columns:
            df[c] = df[c].astype(object).where(df[c].notna(), None)
    return df


# ------------------------------------------------------------------------------------------------
# Best-of-N and ProcessBench cells
# ------------------------------------------------------------------------------------------------

def _benchmarks(bon: pd.DataFrame, params: Mapping) -> list[str]:
    chosen = list(params.get("benchmarks") or [])
    present = [b for b in dict.fromkeys(bon["benchmark"]) if b != "average"]
    if not chosen:
        return present
    missing = [b for b in chosen if b not in present]
    if missing:
        log.warning("analysis.benchmarks %s have no Best-of-N rows; skipped", missing)
    return [b for b in chosen if b in present]


def finish_cells(rows: list[dict], params: Mapping) -> pd.DataFrame:
    """Cell dicts → the cells table: every CELL_COLUMNS column (plus extra fields present), the run
    name, `comparable` only where there is a published number, and `diff` where comparable."""
    df = pd.DataFrame(rows)
    for c in CELL_COLUMNS:
        if c not in df.columns:
            df[c] = np.nan if c not in ("row", "key", "label", "aggregation", "column", "paper_column") else None
    df["run"] = params["run"]["name"]
    df["comparable"] = df["comparable"].fillna(False).astype(bool) & df["published"].notna()
    df["diff"] = np.where(df["comparable"], df["value"] - df["published"], np.nan)
    extra = [c for c in EXTRA_FIELDS if c in df.columns]
    return df[CELL_COLUMNS + extra]


def _pick_n(g: pd.DataFrame, params: Mapping) -> pd.DataFrame:
    """One N per cell: analysis.n when set, else the largest N present."""
    if g["n"].notna().any():
        want = params.get("n")
        n = want if want is not None else g["n"].max()
        g = g[g["n"] == n]
    return g


def bon_cells(bon: pd.DataFrame, selections: Iterable[Mapping], pub: Mapping, tid: str,
              params: Mapping) -> pd.DataFrame:
    """Cells of a Best-of-N table. Each selection = {row, prm, metric[, key, aggregation]}: the
    row `row` is bon.csv's (prm, metric) on every benchmark, plus the unweighted average."""
    pub_long = published_long(pub, tid)
    paper_cols = [c for c in pub["tables"].get(tid, {}).get("columns", []) if c != "average"]
    paper_n = pub["tables"].get(tid, {}).get("bon_n", pub.get("bon_n"))  # Table 10: its own N (64)
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
            pv, plabel = lookup(pub_long, key, pc, agg)
            cell = {"row": sel["row"], "key": key, "label": plabel, "aggregation": agg, "column": b,
                    "paper_column": pc, "n": r["n"], "value": r["accuracy"], "ci_low": r["ci_low"],
                    "ci_high": r["ci_high"], "published": pv, "comparable": paper_n is None or r["n"] == paper_n}
            bench_cells.append(cell)
        if not bench_cells:
            continue
        comparable = all(c["comparable"] for c in bench_cells)
        complete = len(bench_cells) == len(benches)
        # members per paper column as configured (a configured benchmark without rows still counts)
        sizes = pd.Series([paper_column(b, params)
                           for b in (params.get("benchmarks") or benches)]).value_counts().to_dict()
        bench_cells, per_column = _merge_paper_columns(bench_cells, sizes, pub_long, key, agg)
        rows.extend(bench_cells)
        same_set = sorted(per_column) == sorted(paper_cols)
        avg_row = g[g["benchmark"] == "average"]
        full_set = not params.get("benchmarks") and complete and len(per_column) == len(benches)
        pv, plabel = lookup(pub_long, key, "average", agg)
        rows.append({"row": sel["row"], "key": key, "label": plabel, "aggregation": agg, "column": "average",
                     "paper_column": "average", "n": bench_cells[0]["n"],
                     "value": float(np.mean(list(per_column.values()))) if complete else np.nan,
                     "ci_low": avg_row["ci_low"].iloc[0] if full_set and len(avg_row) else np.nan,
                     "ci_high": avg_row["ci_high"].iloc[0] if full_set and len(avg_row) else np.nan,
                     "published": pv, "comparable": same_set and comparable})
        if not complete:
            log.warning("%s: row '%s' lacks some benchmarks; its average is left empty", tid, sel["row"])
    return finish_cells(rows, params)


def _merge_paper_columns(cells: list[dict], sizes: Mapping[str, int], pub_long: pd.DataFrame, key: str,
                         agg) -> tuple[list[dict], dict]:
    """Benchmarks that analysis.paper_columns maps to one paper column (config/paper.yaml: the paper's
    Chinese "GaoKao" = the harness's gaokao_math_cloze and gaokao_math_qa) make that column their unweighted
    mean, a cell of its own after them (only when all `sizes[column]` members are present); the members keep
    their values but no published number. Returns the cells and {paper column: value} (the row's average)."""
    groups: dict[str, list[dict]] = {}
    for c in cells:
        groups.setdefault(c["paper_column"], []).append(c)
    out, per_column = [], {}
    for c in cells:
        members = groups[c["paper_column"]]
        if sizes.get(c["paper_column"], 1) == 1:
            out.append(c)
            per_column[c["paper_column"]] = c["value"]
            continue
        out.append({**c, "published": np.nan, "label": None, "comparable": False})
        if c is members[-1] and len(members) == sizes[c["paper_column"]]:
            pc = c["paper_column"]
            pv, plabel = lookup(pub_long, key, pc, agg)
            value = float(np.mean([m["value"] for m in members]))
            out.append({**c, "column": pc, "label": plabel, "value": value, "ci_low": np.nan, "ci_high": np.nan,
                        "published": pv, "comparable": all(m["comparable"] for m in members)})
            per_column[pc] = value
    return out, per_column


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
                pv, plabel = lookup(pub_long, key, f"{ps}/{m}")
                ci = (r.get("f1_ci_low", np.nan), r.get("f1_ci_high", np.nan)) if m == "f1" else (np.nan, np.nan)
                rows.append({"row": name, "key": key, "label": plabel, "column": f"{r['subset']}/{m}",
                             "paper_column": f"{ps}/{m}", "n": r.get("n", np.nan), "value": r[m],
                             "ci_low": ci[0], "ci_high": ci[1], "published": pv, "comparable": True})
        avg = g[g["subset"] == "average"]
        pv, plabel = lookup(pub_long, key, "average/f1")
        rows.append({"row": name, "key": key, "label": plabel, "column": "average/f1", "paper_column": "average/f1",
                     "n": subs["n"].sum() if "n" in subs else np.nan, "value": float(subs["f1"].mean()),
                     "ci_low": avg["f1_ci_low"].iloc[0] if len(avg) and "f1_ci_low" in avg else np.nan,
                     "ci_high": avg["f1_ci_high"].iloc[0] if len(avg) and "f1_ci_high" in avg else np.nan,
                     "published": pv, "comparable": sorted(mapped) == paper_subsets})
    return finish_cells(rows, params)


def keys_in(pub: Mapping, tid: str) -> set[str]:
    return {str(r["key"]) for r in pub["tables"].get(tid, {}).get("rows", [])}


def prm_metric(bon: pd.DataFrame, prm: str, aggregation: str) -> str:
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
    """results/tables/bon_baselines.csv (tables kind bon_baselines_csv: benchmark, n, pass, maj in
    fractions) → BON_FRAME rows (prm '_baselines') for a run without any scored PRM; percent at 0.1 point,
    the precision these reference rows have always been shown at."""
    df = to_percent(read_csv(path, "bon_baselines_csv"), "bon_baselines_csv")
    df[["pass", "maj"]] = df[["pass", "maj"]].round(1)
    rows = []
    for _, r in df.iterrows():
        for metric in ("pass", "maj"):
            rows.append({"prm": "_baselines", "benchmark": str(r["benchmark"]), "metric": metric,
                         "n": r["n"], "accuracy": float(r[metric]), "ci_low": np.nan,
                         "ci_high": np.nan, "policy": r["policy"] if pd.notna(r.get("policy")) else None})
    return pd.DataFrame(rows, columns=BON_FRAME)


# ------------------------------------------------------------------------------------------------
# Summary cells (averages per row), shared by the figures
# ------------------------------------------------------------------------------------------------

def bon_avg_cells(bon, pub, params, tid) -> dict[tuple[str, str], dict]:
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


def pb_avg_cells(pb, pub, params) -> dict[str, dict]:
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
            pv, plabel = lookup(pub_long, key, col, extra.get("aggregation"))
            rows.append({"row": name, "key": key, "label": plabel, "column": col, "paper_column": col,
                         "n": src.get("n"), "value": src["value"], "ci_low": src.get("ci_low"),
                         "ci_high": src.get("ci_high"), "published": pv,
                         "comparable": bool(src.get("comparable", False)), **extra})
    return finish_cells(rows, params)


def _published_extra(pub, tid, key) -> dict:
    for r in pub["tables"][tid]["rows"]:
        if str(r["key"]) == key:
            return {f: r.get(f) for f in EXTRA_FIELDS if r.get(f) is not None}
    return {}


def build_summary_figure(tid: str, bon, pb, pub, params, tol: pd.DataFrame | None = None):
    """Figures 2, 3, 4, 7: rows = workflow PRMs whose paper key appears in the figure."""
    agg = params.get("aggregation", "product")
    bavg, pavg = bon_avg_cells(bon, pub, params, tid), pb_avg_cells(pb, pub, params)
    tol_avg = {}
    if tol is not None and len(tol):
        for _, r in tol[tol["column"] == "average"].iterrows():
            tol_avg[r["row"]] = r.to_dict()
    sources = {"bon_average": lambda p: bavg.get((p, agg)) or bavg.get((p, "orm")),
               "processbench_f1": lambda p: pavg.get(p),
               "tolerance_average": lambda p: tol_avg.get(p)}
    cols = pub["tables"][tid]["columns"]
    keys = keys_in(pub, tid)
    names = list(dict.fromkeys(scorer_names(bon) + (list(pb["prm"]) if pb is not None else [])))
    names = [n for n in names if paper_key(n, params) in keys]
    return summary_cells(tid, names, {c: sources[c] for c in cols}, pub, params,
                         extra_of=lambda n: _published_extra(pub, tid, paper_key(n, params)))


def policy_notes(params: Mapping, key: str = "policy") -> list[str]:
    """The footnote naming a table's Best-of-N policy (params[key] = its name, policy_labels its label)."""
    name = params.get(key)
    if not name:
        return []
    label = params["policy_labels"].get(name) or name
    return [f"Policy: {label} (policy setting '{name}' of bon.policies)."]


GRADER_LABELS = {"harness": "the Qwen2.5-Math evaluation harness's math_equal (grader.py at a45202b, re-implemented), "
                 "as the paper grades",
                 "math_verify": "math-verify (the project's default; the paper grades with the Qwen2.5-Math "
                 "harness's math_equal)"}


def grader_notes(params: Mapping) -> list[str]:
    """The footnote naming the grader behind a Best-of-N table's correctness (params `grader`:
    grading.grader, which the samples tables record in their metadata)."""
    grader = params.get("grader")
    if not grader:
        return []
    return [f"Correctness graded by {GRADER_LABELS.get(grader, grader)} (grading.grader: {grader})."]


def mc_experiment_comparability(aid: str, cells: pd.DataFrame, pub: Mapping, params: Mapping) -> pd.DataFrame:
    """Cells whose published row comes from another MC data set than the one this run reproduces
    (published.yaml `mc_experiments`, config `analysis.mc_experiment`) keep their published number but
    are not comparable (no diff): one MC run cannot stand for the paper's 860k and 3M experiments at once."""
    tags = pub["mc_experiments"].get(aid, {})
    if not tags:  # read the param only where the artifact has MC rows: the others are not given it
        return cells
    ours = params.get("mc_experiment")
    if ours is None or cells.empty:
        return cells
    other = cells["key"].map(lambda k: tags.get(str(k), tags.get("*")) not in (None, ours)).astype(bool)
    if other.any():
        cells = cells.copy()
        cells.loc[other, "comparable"] = False
        cells.loc[other, "diff"] = np.nan
        log.info("%s: %d cells come from the paper's other MC data set (this run reproduces the %s one): not "
                 "compared", aid, int(other.sum()), ours)
    return cells


# the paper's set sizes are rounded ("860k", "350k"): a training set within 10 % of one is that size
DATA_SIZE_TOLERANCE = 0.10


def data_source_matches(pub: Mapping, experiment: str | None, setting: Mapping | None) -> bool:
    """Whether the run's data policies (params `data_setting`, plan.data_setting: each one's model and
    completer Hub ids) produced the paper's MC-labelled set `experiment` (published.yaml `data_sources`):
    every policy among the set's models and completers, or, for a mix (`mix`), exactly its pairs."""
    src = pub["data_sources"].get(str(experiment))
    if not src or not setting:
        return False
    pairs = [(p.get("model_id"), p.get("completer_id")) for p in setting.get("policies") or [setting]]
    if "mix" in src:
        return sorted(pairs, key=str) == sorted((tuple(p) for p in src["mix"]), key=str)
    return all(m in src["models"] and c in src["completers"] for m, c in pairs)


def training_sizes(trainsets: pd.DataFrame | None) -> dict[str, int]:
    """Training-set variant → its instances (results/tables/trainsets.csv n_instances)."""
    if trainsets is None or trainsets.empty:
        return {}
    return {str(v): int(n) for v, n in zip(trainsets["variant"], trainsets["n_instances"]) if pd.notna(n)}


def data_comparability(aid: str, cells: pd.DataFrame, pub: Mapping, params: Mapping,
                       trainsets: pd.DataFrame | None) -> pd.DataFrame:
    """The "# samples" of each row (`n_samples`: its training set's instances; `paper_n_samples`: the
    published row's, published.yaml `data_sizes`) and the data rule: a cell of a row built from the paper's
    MC-labelled data (published.yaml `mc_experiments`) is compared only when the run's data policy produced
    that set (data_source_matches) and the row's training set has the published size (within
    DATA_SIZE_TOLERANCE); otherwise it is shown, not compared."""
    if cells.empty:
        return cells
    sizes, paper_sizes = training_sizes(trainsets), pub["data_sizes"].get(aid, {})
    tags = pub["mc_experiments"].get(aid, {})
    cells = cells.copy()
    cells["n_samples"] = cells["row"].map(lambda r: sizes.get(str(r), np.nan)).astype(float)
    cells["paper_n_samples"] = cells["key"].map(lambda k: paper_sizes.get(str(k), paper_sizes.get("*", np.nan))
                                                ).astype(float)
    setting = params.get("data_setting")

    def matches(key, n, paper_n) -> bool:
        tag = tags.get(str(key), tags.get("*"))
        if tag is None:  # not built from the paper's own MC-labelled data (released sets, baselines)
            return True
        return (data_source_matches(pub, tag, setting) and pd.notna(n) and pd.notna(paper_n)
                and abs(n - paper_n) <= DATA_SIZE_TOLERANCE * paper_n)

    ok = np.array([matches(k, n, p) for k, n, p in zip(cells["key"], cells["n_samples"], cells["paper_n_samples"])],
                  dtype=bool)
    off = ~ok & cells["comparable"].astype(bool).to_numpy()
    if off.any():
        cells.loc[off, "comparable"] = False
        cells.loc[off, "diff"] = np.nan
        log.info("%s: %d cells of MC-labelled rows not compared: the data source or size is not the published "
                 "row's (data_policies; results/tables/trainsets.csv)", aid, int(off.sum()))
    return cells


def data_notes(aid: str, cells: pd.DataFrame, pub: Mapping, params: Mapping) -> list[str]:
    """The provenance footnote of a data-source artifact: which policy and completer produced the labelled
    responses, the # samples per row against the paper's, and whether the MC-labelled rows are compared."""
    setting = params.get("data_setting")
    if not setting:
        return []
    pols = setting.get("policies") or [setting]
    who = "; ".join(f"{p.get('model_id') or p['model']} responses, MC completions by "
                    f"{p.get('completer_id') or p['completer']}" + (f" ({p['n']} per problem)" if len(pols) > 1 else "")
                    for p in pols)
    if len(pols) > 1:
        origin = f"a mix of {len(pols)} data policies ({', '.join(p['name'] for p in pols)}; data_policies)"
    elif setting.get("configured"):
        origin = f"{setting.get('label') or setting['name']}, data policy '{setting['name']}' (data_policies)"
    else:
        origin = f"the Best-of-N policy '{setting['name']}' labelling its own responses (no data_policies)"
    notes = [f"Labelled data: {origin}: {who}."]
    if "n_samples" in cells.columns and not cells.empty:
        rows = cells.drop_duplicates("row")
        sizes = ", ".join(f"{r} {_count(n)}" + (f" (paper {_count(p)})" if pd.notna(p) else "")
                          for r, n, p in zip(rows["row"], rows["n_samples"], rows["paper_n_samples"]))
        notes.append(f"# samples (training instances per row, results/tables/trainsets.csv): {sizes}.")
    notes += mc_set_notes(aid, cells, pub, params)
    return notes


def artifact_mc_sets(aid: str, cells: pd.DataFrame, pub: Mapping) -> list[str]:
    """The paper's MC-labelled sets (published.yaml `mc_experiments`: 860k, 3M) the artifact's rows come
    from: the tags of the keys among `cells` (every tag of the artifact when the cells name none)."""
    tags = pub["mc_experiments"].get(aid, {})
    keys = set(cells["key"].astype(str)) if "key" in cells.columns and not cells.empty else set()
    own = [tags.get(k, tags.get("*")) for k in sorted(keys)]
    sets = [t for t in own if t is not None] or list(tags.values())
    return sorted(dict.fromkeys(str(t) for t in sets))


def mc_set_notes(aid: str, cells: pd.DataFrame, pub: Mapping, params: Mapping) -> list[str]:
    """The data rule's footnote, naming the sets the artifact's own rows come from (artifact_mc_sets), whether
    the run's data source matches each, and, for a set other than the one the run reproduces
    (analysis.mc_experiment), that its rows are shown, never compared (mc_experiment_comparability)."""
    exp = params.get("mc_experiment")
    sets = artifact_mc_sets(aid, cells, pub)
    if not sets or exp is None:
        return []
    setting = params.get("data_setting")
    match = "; ".join(f"{'matches' if data_source_matches(pub, s, setting) else 'does not match'} the paper's {s} set"
                      for s in sets)
    notes = [f"A row built from the paper's {' or '.join(sets)} data is compared with the paper only where its "
             f"data source and size match the published row's; otherwise the paper's number is shown without a "
             f"difference. This run's data source {match}."]
    other = [s for s in sets if s != str(exp)]
    if other:
        notes.append(f"This run's MC data stands for the paper's {exp} set (analysis.mc_experiment): rows from the "
                     f"paper's {' and '.join(other)} set are shown, never compared.")
    return notes


def count_label(n) -> str:
    """A # samples cell: '860k', '412', or '' when unknown."""
    return "" if n is None or pd.isna(n) else _count(n)


def read_trainsets(inputs: Mapping) -> pd.DataFrame | None:
    """results/tables/trainsets.csv of a rule's `trainsets` input; None when the rule has none or it is absent."""
    path = inputs.get("trainsets")
    return read_plain_csv(path) if path and Path(path).exists() else None


def _count(n) -> str:
    if n is None or pd.isna(n):
        return "n/a"
    n = int(n)
    return f"{n / 1000:.0f}k" if n >= 10_000 else str(n)


# ------------------------------------------------------------------------------------------------
# Writing
# ------------------------------------------------------------------------------------------------

def write_cells(aid: str, cells: pd.DataFrame, outputs: Mapping, params: Mapping, inputs: Mapping,
                notes: Iterable[str] = ()) -> None:
    """An artifact's cells CSV and its provenance record (outputs `csv`, `provenance`); the record's `notes`
    are the artifact's footnotes (the LaTeX table's, a figure's), which paper/report.md prints under it."""
    write_plain_csv(cells, outputs["csv"])
    write_json({**provenance(aid, params["run"], inputs), "notes": [str(n) for n in notes]},
               outputs["provenance"])
    n_pub = int(cells["published"].notna().sum()) if len(cells) else 0
    log.info("%s: %d cells (%d with a published number, %d comparable) → %s", aid, len(cells), n_pub,
             int(cells["comparable"].sum()) if len(cells) else 0, outputs["csv"])
