"""The paper's published numbers (src/prm_lessons/published.yaml) and the mapping of the workflow's rows
and columns onto the paper's (config `analysis.paper_rows` / `analysis.paper_columns`)."""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
import yaml

PUBLISHED_PATH = Path(__file__).resolve().parents[1] / "published.yaml"
EXTRA_FIELDS = ("threshold", "stage", "labels")
PB_METRIC_LABELS = {"error_acc": "err", "correct_acc": "cor", "f1": "F1"}


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


def published_row(tid: str, key: str, pub: Mapping | None = None) -> dict:
    """Row `key` of the paper's table/figure `tid` (published.yaml: label, values, ...); KeyError naming it."""
    row = next((r for r in (pub or load_published())["tables"][tid]["rows"] if str(r["key"]) == key), None)
    if row is None:
        raise KeyError(f"published.yaml: {tid} has no row {key!r}")
    return row


def published_value(tid: str, key: str, column: str, pub: Mapping | None = None) -> float:
    """One number as the paper prints it: table/figure `tid`, row `key`, column `column` (published.yaml).
    A row or column the paper does not have is a KeyError naming it."""
    columns = (pub or load_published())["tables"][tid]["columns"]
    if column not in columns:
        raise KeyError(f"published.yaml: {tid} has no column {column!r}")
    return float(published_row(tid, key, pub)["values"][columns.index(column)])


def published_text(tid: str, key: str, column: str = "average", pub: Mapping | None = None) -> str:
    """A published number as the paper prints it (one decimal): 40.1."""
    return f"{published_value(tid, key, column, pub):.1f}"


def published_range(tid: str, keys: Sequence[str], column: str, pub: Mapping | None = None) -> str:
    """The range of published numbers over rows `keys`, in whole points: 9–27."""
    values = [published_value(tid, k, column, pub) for k in keys]
    return f"{min(values):.0f}–{max(values):.0f}"


def published_size(tid: str, key: str, pub: Mapping | None = None) -> str:
    """The paper's training-set size of a row (published.yaml `data_sizes`) as it prints it: 350k, 1.5M, 3M."""
    sizes = (pub or load_published())["data_sizes"][tid]
    n = sizes.get(key, sizes.get("*"))
    return f"{n / 1e6:g}M" if n >= 1_000_000 else f"{n / 1e3:g}k"


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


def paper_key(name: str, params: Mapping) -> str:
    """The paper row a workflow row (PRM / training-set variant) reproduces (`analysis.paper_rows`)."""
    return str(params["paper_rows"].get(name, name))


def paper_column(name: str, params: Mapping) -> str:
    """The paper column a workflow benchmark / subset maps to (`analysis.paper_columns`)."""
    return str(params["paper_columns"].get(name, name))


def lookup(pub_long: pd.DataFrame, key: str, column: str, aggregation: str | None = None,
           **extra) -> tuple[float, str | None]:
    """(published number, paper row label) of one cell of `published_long`; (NaN, None) when the paper
    has none. An aggregation-specific row wins over one without aggregation."""
    m = (pub_long["key"] == key) & (pub_long["column"] == column)
    if aggregation is not None and pub_long["aggregation"].notna().any():
        sub = m & (pub_long["aggregation"] == aggregation)
        m = sub if sub.any() else m & pub_long["aggregation"].isna()
    hit = pub_long[m]
    if hit.empty:
        return np.nan, None
    return float(hit["published"].iloc[0]), str(hit["label"].iloc[0])


def prmbench_published(pub: Mapping | None = None) -> dict[str, dict]:
    """PRMBench's published PRMScores (published.yaml `prmbench`: another paper's numbers, with its own
    citation): row key -> {label, column -> percent}; a row whose values do not match the columns raises."""
    sec = (pub or load_published()).get("prmbench") or {}
    cols = sec.get("columns") or []
    out = {}
    for r in sec.get("rows") or []:
        if len(r["values"]) != len(cols):
            raise ValueError(f"published.yaml: prmbench row '{r['key']}' has {len(r['values'])} values for "
                             f"{len(cols)} columns")
        out[str(r["key"])] = {"label": r["label"], **dict(zip(cols, r["values"]))}
    return out
