"""The paper's tables and figures as data: the workflow's result tables → long "cells" tables, one
builder per artifact.

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

import logging
from pathlib import Path
from typing import Callable, Iterable, Mapping

import numpy as np
import pandas as pd

from prm_lessons import analysis
from prm_lessons.artifacts.published import EXTRA_FIELDS, lookup, paper_column, paper_key, published_long
from prm_lessons.artifacts.registry import provenance
from prm_lessons.tables import FRACTIONS, read_csv, write_json

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
    df = pd.read_csv(path, keep_default_na=True)
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
    df["run"] = (params.get("run") or {}).get("name", "")
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


def bon_cells(bon: pd.DataFrame, selections: Iterable[Mapping], pub: Mapping, tid: str, params: Mapping) -> pd.DataFrame:
    """Cells of a Best-of-N table. Each selection = {row, prm, metric[, key, aggregation]}: the reproduced
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
        sizes = pd.Series([paper_column(b, params) for b in (params.get("benchmarks") or benches)]).value_counts().to_dict()
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


def row_setting_notes(pb: pd.DataFrame, cells: pd.DataFrame) -> list[str]:
    """One footnote per table row that records what it ran with (processbench.csv `setting`: a critic's
    model, template, parse mode and sampling), in the table's row order."""
    if "setting" not in pb.columns or cells.empty:
        return []
    setting = {p: s for p, s in zip(pb["prm"], pb["setting"]) if isinstance(s, str) and s}
    return [f"{row}: {setting[row]}." for row in dict.fromkeys(cells["row"]) if row in setting]


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
# Artifact builders (cells); one per table / figure
# ------------------------------------------------------------------------------------------------

def build_table3(bon, pub, params, tid: str = "table3", baselines: bool = False):
    """Table 3 (and Table 1, with pass@N / maj@N first): the rows whose paper key is in the table."""
    agg = params.get("aggregation", "product")
    names = [p for p in scorer_names(bon) if paper_key(p, params) in _keys_in(pub, tid)]
    sels = (baseline_selections(bon) if baselines else []) + [
        {"row": p, "prm": p, "metric": _prm_metric(bon, p, agg)} for p in names]
    return bon_cells(bon, sels, pub, tid, params)


def build_table4(pb, pub, params, tid: str = "table4"):
    """Table 4 (and Table 2): the ProcessBench rows whose paper key is in the table."""
    names = [p for p in dict.fromkeys(pb["prm"]) if paper_key(p, params) in _keys_in(pub, tid)]
    return pb_cells(pb, names, pub, tid, params)


def build_table6(bon, pub, params, tid: str = "table6"):
    """Table 6 (and Tables 9, 10 on their own rows): pass@N, maj@N, then every scorer."""
    agg = params.get("aggregation", "product")
    sels = baseline_selections(bon) + [{"row": p, "prm": p, "metric": _prm_metric(bon, p, agg)}
                                       for p in scorer_names(bon)]
    return bon_cells(bon, sels, pub, tid, params)


def build_table8(search, pub, params):
    """Table 8 from results/tables/search.csv (read by load_bon): pass@N, pass@1, maj@N and orm@N of the
    search policy (prm `_policy`), then greedy search per guiding PRM; the paired greedy − maj@N rows stay
    in search.csv."""
    sels = []
    for metric, label in (("pass", "pass@{n}"), ("pass1", "pass@1"), ("maj", "maj@{n}"), ("orm", "orm@{n}")):
        have = search[(search["prm"] == "_policy") & (search["metric"] == metric)]
        if len(have):
            n = have["n"].max()
            sels.append({"row": label.format(n=int(n) if pd.notna(n) else "N"), "prm": "_policy", "metric": metric,
                         "key": metric})
    greedy = search[search["metric"] == "greedy"]
    sels += [{"row": p, "prm": p, "metric": "greedy"} for p in dict.fromkeys(greedy["prm"])]
    # every searched benchmark and the one N of search.csv (N = K for greedy rows): not analysis.benchmarks /
    # analysis.n, which are the Best-of-N tables'
    own = {k: params.get(k) for k in ("run", "paper_rows", "paper_columns")}
    return bon_cells(search, sels, pub, "table8", own)


def build_table7(pb, pub, params):
    return pb_cells(pb, list(dict.fromkeys(pb["prm"])), pub, "table7", params)


def build_table11(bon, judges, pub, params, tid: str = "table11"):
    """Table 11 (LLMs as Best-of-N verifiers) from results/tables/judge_bon.csv (read by load_bon; prm
    `<mode>-<judge>`, metric `judge`) and bon.csv: pass@N and maj@N of the judged problems (judge_bon.csv's,
    which with bon_judges.limit are a subset's; bon.csv's when no judge ran), the judges (pointwise rows
    first), then every scored PRM of bon.csv (all its problems; judge_table_notes says so)."""
    agg = params.get("aggregation", "product")
    judged = judges[judges["metric"] == "judge"]
    names = sorted(dict.fromkeys(judged["prm"]), key=lambda p: not p.startswith("pointwise-"))
    sels = (baseline_selections(judges) if len(judged) else baseline_selections(bon))
    sels += [{"row": p, "prm": p, "metric": "judge"} for p in names]
    sels += [{"row": p, "prm": p, "metric": _prm_metric(bon, p, agg)} for p in scorer_names(bon)]
    return bon_cells(pd.concat([bon, judges], ignore_index=True), sels, pub, tid, params)


def judge_table_notes(judge_bon: pd.DataFrame | None) -> list[str]:
    """Footnotes of Table 11: whose prompts these are, and the problems the judge rows cover
    (results/tables/judge_bon.csv as written, with its n_problems column)."""
    notes = ["The judges' prompts are this project's (src/prm_lessons/prompts/bon_judge_pointwise.txt, "
             "bon_judge_pairwise.txt, or the files set in bon_judges.*_template): the paper does not print its "
             "prompts. Pointwise: the highest fraction of steps judged correct wins (ties: the lowest sample "
             "index); pairwise: a single-elimination tournament, the lower sample index shown as Response A."]
    if judge_bon is not None and len(judge_bon) and "n_problems" in judge_bon.columns:
        per = judge_bon[(judge_bon["metric"] == "judge") & (judge_bon["benchmark"] != "average")]
        counts = per.drop_duplicates("benchmark").set_index("benchmark")["n_problems"]
        if len(counts):
            notes.append("Judge rows, pass@N and maj@N are over the judged problems ("
                         + ", ".join(f"{b}: {int(n)}" for b, n in counts.items())
                         + "); PRM rows over every problem of the Best-of-N sets.")
    return notes


def build_table13(bon, pub, params, tid: str = "table13"):
    """Table 13 (and Tables 14-16 on their own rows): pass@N, maj@N, then every scorer per aggregation."""
    sels = baseline_selections(bon)
    for p in scorer_names(bon):
        for agg in params.get("aggregations") or ["last", "product", "min"]:
            if ((bon["prm"] == p) & (bon["metric"] == f"prm_{agg}")).any():
                sels.append({"row": p, "prm": p, "metric": f"prm_{agg}", "aggregation": agg})
    return bon_cells(bon, sels, pub, tid, params)


def build_table5(tol: pd.DataFrame, pub, params):
    """Table 5 cells from analysis.tolerance_accuracy output (prm, subset, n, n_correct, accuracy). A
    subset cell is comparable only on the paper's cases: as many as the published n (7/94/161/259 on
    ProcessBench as released in Dec 2024); the average only when all four subsets are."""
    pub_long = published_long(pub, "table5")
    paper_subsets = sorted(c for c in pub["tables"]["table5"]["columns"] if c != "average")
    paper_n = pub["tables"]["table5"].get("n") or {}
    rows, off = [], {}
    for prm, g in tol.groupby("prm", sort=False):
        key = paper_key(prm, params)
        subs = g[g["subset"] != "average"]
        mapped = [paper_column(s, params) for s in subs["subset"]]
        same_n = {s: paper_n.get(paper_column(s, params)) == int(n) for s, n in zip(subs["subset"], subs["n"])}
        off.update({s: int(n) for s, n in zip(subs["subset"], subs["n"]) if not same_n[s]})
        for _, r in g.iterrows():
            pc = "average" if r["subset"] == "average" else paper_column(r["subset"], params)
            pv, plabel = lookup(pub_long, key, pc)
            lo, hi = analysis.wilson_interval(int(r["n_correct"]), int(r["n"])) if r["subset"] != "average" else (np.nan, np.nan)
            rows.append({"row": prm, "key": key, "label": plabel, "column": r["subset"], "paper_column": pc,
                         "n": r["n"], "value": r["accuracy"], "ci_low": lo, "ci_high": hi, "published": pv,
                         "comparable": same_n[r["subset"]] if r["subset"] != "average"
                         else sorted(mapped) == paper_subsets and all(same_n.values())})
    if off:
        log.warning("table5: case counts differ from the paper's n %s: %s (another ProcessBench revision, a "
                    "limit, or constructed cases); those cells are not compared", paper_n, off)
    return finish_cells(rows, params)


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


REFERENCE_KEYS = ("pass", "maj", "o1_mini")  # Figure 1's reference lines (published.yaml fig1 keys)
O1_MINI_ROW = "o1-mini (published, not reproduced)"


def build_fig1(bon, pb, baselines, pub, params):
    """Figure 1: per PRM, the Best-of-N average (Table 6's Avg., analysis.aggregation) and the ProcessBench
    average F1 (Table 7's Avg.); pass@N and maj@N (reference lines) from `baselines` (bon_baselines.csv as
    bon rows, baselines_as_bon; bon.csv's own pass/maj rows when absent); o1-mini's published ProcessBench
    F1 as a reference line this run does not reproduce (a critic of the paper; value left empty)."""
    agg = params.get("aggregation", "product")
    bavg, pavg = _bon_avg_cells(bon, pub, params, "fig1"), _pb_avg_cells(pb, pub, params)
    pb_names = [p for p in (pb["prm"] if pb is not None else []) if not str(p).startswith(("critic-", "baseline_"))]
    names = list(dict.fromkeys(scorer_names(bon) + pb_names))
    prms = summary_cells("fig1", names, {"bon_average": lambda p: bavg.get((p, agg)) or bavg.get((p, "orm")),
                                         "processbench_f1": lambda p: pavg.get(p)}, pub, params)
    base = baselines if baselines is not None and len(baselines) else bon
    ref, key_of = {}, {}
    for sel in baseline_selections(base) if base is not None else []:
        c = bon_cells(base, [sel], pub, "table6", params)
        avg = c[c["column"] == "average"]
        if len(avg):
            ref[sel["row"]], key_of[sel["row"]] = avg.iloc[0].to_dict(), sel["key"]
    lines = summary_cells("fig1", list(ref), {"bon_average": lambda r: ref.get(r)}, pub, params,
                          key_of=lambda r: key_of[r])
    pv, plabel = lookup(published_long(pub, "fig1"), "o1_mini", "processbench_f1")
    o1 = finish_cells([{"row": O1_MINI_ROW, "key": "o1_mini", "label": plabel, "column": "processbench_f1",
                        "paper_column": "processbench_f1", "value": np.nan, "published": pv, "comparable": False}],
                      params)
    return pd.concat([prms, lines, o1], ignore_index=True)


def policy_notes(params: Mapping, key: str = "policy") -> list[str]:
    """The footnote naming a table's Best-of-N policy (params[key] = its name, policy_labels its label)."""
    name = params.get(key)
    if not name:
        return []
    label = (params.get("policy_labels") or {}).get(name) or name
    return [f"Policy: {label} (policy setting '{name}' of bon.policies)."]


def preliminary_notes(cells: pd.DataFrame, params: Mapping) -> list[str]:
    """Tables 1-2: which configured variants stand in for the paper's preliminary models, and whether they
    are compared (analysis.mc_experiment; mc_experiment_comparability marks the cells)."""
    rows = {k: sorted(set(cells.loc[cells["key"] == k, "row"])) for k in ("mc_hard", "mc_soft", "human")} \
        if len(cells) else {}
    named = "; ".join(f"{k}: {', '.join(v)}" for k, v in rows.items() if v) or "none in this run"
    ours = params.get("mc_experiment")
    compared = ("compared with them" if ours == "3M" else
                f"shown beside them but not compared (this run reproduces the {ours} set, analysis.mc_experiment)"
                if ours else "compared with them only as far as this config's MC data resembles that set")
    return [("The paper's preliminary PRMs (Qwen2.5-Math-7B-PRM-MC-hard / -MC-soft) were trained on its "
             "preliminary MC set: ~500k queries with responses of Qwen2-Math-Instruct and Qwen2.5-Math-Instruct "
             "(7B and 72B), INFERRED to be the 3M set of its Sec. 3.1.4. This config's MC variants stand in, "
             f"trained on this config's own MC data (the same runs as Table 3's MC row), {compared}; the "
             f"PRM800K row is Table 3's human row. Rows here (paper key: this run's rows): {named}.")]


def build_fig5(bon, pb, sweep: Iterable | pd.DataFrame | None, pub, params):
    """Figure 5: the MC hard-label threshold sweep. `sweep` = [(threshold, variant), …] (the workflow
    passes plan.threshold_sweep_variants), or a trainsets.csv frame whose hard MC rows are
    used. Rows are matched to the paper's thresholds by value."""
    if isinstance(sweep, pd.DataFrame):
        ts = sweep[(sweep.get("source").astype(str) == "mc") & (sweep.get("label_type").astype(str) == "hard")]
        sweep = [(float(t), str(v)) for v, t in zip(ts["variant"], pd.to_numeric(ts["threshold"], errors="coerce"))
                 if pd.notna(t)]
    sweep = sorted((float(t), str(v)) for t, v in (sweep or []))
    if not sweep:
        log.warning("fig5: no threshold sweep configured (trainsets.mc_threshold_sweep); no rows")
        return finish_cells([], params)
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
        pv, plabel = lookup(pub_long, key, pc)
        rows.append({"row": row, "key": key, "label": plabel, "column": r["dataset"], "paper_column": pc,
                     "n": r["n_judged"], "value": r["rate"], "ci_low": r["ci_low"], "ci_high": r["ci_high"],
                     # the paper's policy bars are HUMAN annotations; an LLM judge's verdicts are another
                     # measurement (shown beside them, never differenced). ProcessBench's share is counted
                     # from its data the same way on both sides.
                     "published": pv, "comparable": key == "processbench"})
    return finish_cells(rows, params)


FIG8_STAGES = {"all": "all responses", "selected": "selected responses"}  # analysis.FIG8_POPULATIONS


def build_fig8(shares: pd.DataFrame, pub, params, bon_full: bool):
    """Figure 8 cells from analysis.min_at_last_shares output: one row per (PRM, population), `stage`
    naming the population. Only the pooled share over ALL responses is the paper's quantity (its caption:
    "among all Best of 8 responses"); the selected-only share is shown beside it, never compared."""
    pub_long = published_long(pub, "fig8")
    rows = []
    for _, r in shares.iterrows():
        key = paper_key(r["prm"], params)
        paper_pop = r["benchmark"] == "all" and r["population"] == "all"
        pv, plabel = lookup(pub_long, key, "min_at_last") if paper_pop else (np.nan, None)
        rows.append({"row": r["prm"], "key": key, "label": plabel, "stage": FIG8_STAGES[r["population"]],
                     "column": r["benchmark"],
                     "paper_column": "min_at_last" if r["benchmark"] == "all" else paper_column(r["benchmark"], params),
                     "n": r["n_scored"], "value": r["share"], "ci_low": r["ci_low"], "ci_high": r["ci_high"],
                     "published": pv, "comparable": paper_pop and bon_full})
    return finish_cells(rows, params)


def fig8_bon_full(scores: Mapping[tuple[str, str], pd.DataFrame], pub: Mapping, params: Mapping) -> bool:
    """Whether Figure 8's step-score tables cover the paper's Best-of-N setup (the paper's benchmarks,
    N responses per problem), the condition for comparing its pooled shares with the paper's."""
    benches = sorted({paper_column(b, params) for (_, b) in scores})
    paper_benches = sorted(c for c in pub["bon_columns"] if c != "average")
    ns = {len(df.groupby("problem_id").head(params.get("n") or 10**9)) // max(1, df["problem_id"].nunique())
          for df in scores.values()} if scores else set()
    return benches == paper_benches and ns == {pub.get("bon_n")}


def mc_experiment_comparability(aid: str, cells: pd.DataFrame, pub: Mapping, params: Mapping) -> pd.DataFrame:
    """Cells whose published row comes from another MC data set than the one this run reproduces
    (published.yaml `mc_experiments`, config `analysis.mc_experiment`) keep their published number but
    are not comparable (no diff): one MC run cannot stand for the paper's 860k and 3M experiments at once."""
    tags = (pub.get("mc_experiments") or {}).get(aid) or {}
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


# ------------------------------------------------------------------------------------------------
# Writing
# ------------------------------------------------------------------------------------------------

def write_cells(aid: str, cells: pd.DataFrame, outputs: Mapping, params: Mapping, inputs: Mapping) -> None:
    """An artifact's cells CSV and its provenance record (outputs `csv`, `provenance`)."""
    Path(outputs["csv"]).parent.mkdir(parents=True, exist_ok=True)
    cells.to_csv(outputs["csv"], index=False)
    write_json(provenance(aid, params.get("run") or {}, inputs), outputs["provenance"])
    n_pub = int(cells["published"].notna().sum()) if len(cells) else 0
    log.info("%s: %d cells (%d with a published number, %d comparable) → %s", aid, len(cells), n_pub,
             int(cells["comparable"].sum()) if len(cells) else 0, outputs["csv"])
