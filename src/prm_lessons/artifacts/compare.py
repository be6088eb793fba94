"""Named runs side by side: one table of every run's headline numbers (Best-of-N accuracy at each N,
ProcessBench F1, averaged over benchmarks / subsets), a column per run, for `run.compare`."""
from __future__ import annotations

import pandas as pd

KEYS = ["table", "policy", "prm", "metric", "n"]


def run_rows(bon: pd.DataFrame, processbench: pd.DataFrame) -> pd.DataFrame:
    """One run's rows: its bon.csv averages (not the paired '-maj' differences) and processbench.csv's
    average F1, as (table, policy, prm, metric, n) → value."""
    b = bon[(bon["benchmark"] == "average") & ~bon["metric"].astype(str).str.endswith("-maj")]
    b = b.assign(table="bon", value=b["accuracy"], n=b["n"].map(lambda x: "" if pd.isna(x) else str(int(x))))
    if "policy" not in b:
        b = b.assign(policy="")
    p = processbench[processbench["subset"] == "average"]
    p = p.assign(table="processbench", policy="", metric="f1", n="", value=p["f1"])  # n: no N (its cases)
    out = pd.concat([b[KEYS + ["value"]], p[KEYS + ["value"]]], ignore_index=True)
    out[KEYS] = out[KEYS].fillna("").astype(str)
    return out


def comparison(runs: dict[str, tuple[pd.DataFrame, pd.DataFrame]]) -> pd.DataFrame:
    """Every run's rows side by side (a column per run name, in the given order; a row missing from a run
    is empty there), ordered by table, policy, PRM, metric and N."""
    if not runs:
        raise ValueError("run.compare names no run")
    long = pd.concat([run_rows(*t).assign(run=name) for name, t in runs.items()], ignore_index=True)
    wide = long.pivot_table(index=KEYS, columns="run", values="value", aggfunc="first", dropna=False)
    wide = wide.reindex(columns=list(runs)).reset_index()
    wide.columns.name = None
    return wide.dropna(subset=list(runs), how="all").sort_values(KEYS).reset_index(drop=True)


def comparison_markdown(table: pd.DataFrame) -> str:
    """The comparison as a Markdown table (values to three decimals)."""
    return table.to_markdown(index=False, floatfmt=".3f") + "\n"
