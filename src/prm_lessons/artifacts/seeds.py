"""Seed spread of a table's cells (analysis.seeds): the same cells built from each seed replica's inputs
(run.seed: sampling, MC, judge and training drawn again), and per cell the sample standard deviation over
this run and the replicas, beside the problem-resampling interval (ci_low / ci_high), which holds the
samples and the PRMs fixed."""
from __future__ import annotations

from typing import Mapping

import pandas as pd

# the cells that are the same quantity in every run (aggregation: a table may hold several per row)
_KEY = ["row", "aggregation", "column"]


def seed_spread(cells: pd.DataFrame, replicas: list[pd.DataFrame]) -> pd.DataFrame:
    """`cells` with `seed_sd` (sample s.d., ddof 1, of `value` over this run's cell and each replica's cell
    of the same row, aggregation and column, in the cells' unit) and `n_seeds` (how many runs have the cell;
    seed_sd is NaN below 2). No replicas: the cells as they are."""
    if not replicas or cells.empty:
        return cells
    key = [k for k in _KEY if k in cells.columns]

    def ident(df: pd.DataFrame) -> pd.Series:  # one string per cell: None / NaN aggregations compare equal
        return pd.Series(["|".join(map(str, t)) for t in df[key].itertuples(index=False)], index=df.index,
                         dtype=object)

    values = pd.concat([pd.DataFrame({"_k": ident(df), "value": df["value"].to_numpy()})
                        for df in [cells, *replicas] if not df.empty], ignore_index=True).dropna(subset=["value"])
    grouped = values.groupby("_k")["value"]
    sd, n = grouped.std(ddof=1), grouped.count()
    k = ident(cells)
    out = cells.copy()
    out["seed_sd"] = k.map(sd).where(k.map(n) > 1).to_numpy(dtype=float)
    out["n_seeds"] = k.map(n).fillna(0).astype(int).to_numpy()
    return out


def seed_notes(params: Mapping) -> list[str]:
    """The table note on the seed spread (params `seed_runs`: this run's seed and its replicas)."""
    runs = params["seed_runs"]
    reps = runs["replicas"]
    if not reps:
        return ["Intervals resample problems only (the samples and the PRMs are one draw); analysis.seeds "
                "repeats sampling and training over seeds for a seed spread."]
    seeds = ", ".join(str(s) for s in [runs["seed"]] + [r["seed"] for r in reps])
    return [f"Seed spread: 'seed s.d.' under each row is the sample standard deviation of each cell over seeds "
            f"{seeds} (this run and the replicas {', '.join(r['name'] for r in reps)}: policy samples, MC and "
            "judge labels and PRM training drawn again; analysis.seeds), beside the problem-resampling 95% "
            "interval of this run's cells (ci_low, ci_high in the CSV), which holds samples and PRMs fixed."]
