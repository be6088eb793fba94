"""Cells this run's settings make a different quantity from the paper's (config `analysis.not_compared`):
shown beside the published number, never compared (no Δ), with the reason as a table note.

Each entry names the cells it covers by any of `rows` (workflow row names or paper keys), `aggregations`
(Best-of-N scoring) and `columns` (paper columns), and says `why`. A cell matches when every field the
entry gives matches. A cell without an aggregation of its own (Tables 6/9/10, Figure 1's Best-of-N average)
is scored with the artifact's `aggregation` param. An average ("average", "average/f1", "bon_average")
includes every column of its row, so a row whose column is excluded loses its average's Δ as well.
"""
from __future__ import annotations

import logging
from typing import Mapping

import numpy as np
import pandas as pd

log = logging.getLogger(__name__)

AVERAGES = ("average", "average/f1")
# summary columns that are not Best-of-N scores: they take no aggregation from the artifact's param
NOT_BON = ("processbench_f1", "tolerance_average", "min_at_last")


def _aggregations(cells: pd.DataFrame, params: Mapping) -> pd.Series:
    own = cells["aggregation"] if "aggregation" in cells.columns else pd.Series(None, index=cells.index, dtype=object)
    # only an artifact given `aggregation` (Tables 6/9/10, Figure 1) has one for cells without their own
    fallback = params["aggregation"] if "aggregation" in params else None
    pcol = cells["paper_column"].astype(str)
    bon = ~pcol.str.contains("/") & ~pcol.isin(NOT_BON)
    return own.where(own.notna(), pd.Series(np.where(bon, fallback, None), index=cells.index, dtype=object))


def apply_not_compared(aid: str, cells: pd.DataFrame, params: Mapping) -> tuple[pd.DataFrame, list[str]]:
    """(cells with the entries' cells made not comparable, one note per entry that matched a published cell).
    Only artifacts whose params include `not_compared` get entries (artifacts/defs PARAMS)."""
    if "not_compared" not in params:  # an artifact not given the key: never read (its rule's params are exact)
        return cells, []
    entries = list(params["not_compared"] or [])
    if not entries or cells.empty:
        return cells, []
    cells = cells.copy()
    aggs = _aggregations(cells, params)
    notes = []
    for e in entries:
        hit = pd.Series(True, index=cells.index)
        if e.get("rows"):
            rows = {str(r) for r in e["rows"]}
            hit &= cells["row"].astype(str).isin(rows) | cells["key"].astype(str).isin(rows)
        if e.get("aggregations"):
            hit &= aggs.isin(list(e["aggregations"]))
        if e.get("columns"):
            col_hit = hit & cells["paper_column"].astype(str).isin([str(c) for c in e["columns"]])
            ident = [c for c in ("row", "aggregation") if c in cells.columns]
            rows_hit = {tuple(r) for r in cells.loc[col_hit, ident].astype(str).itertuples(index=False)}
            in_row = pd.Series([tuple(r) in rows_hit for r in cells[ident].astype(str).itertuples(index=False)],
                               index=cells.index)
            hit = col_hit | (hit & in_row & cells["paper_column"].isin(AVERAGES))
        hit &= cells["published"].notna()
        if not hit.any():
            continue
        cells.loc[hit, "comparable"] = False
        cells.loc[hit, "diff"] = np.nan
        notes.append(f"Not compared with the paper (analysis.not_compared): {' '.join(str(e['why']).split())}")
        log.info("%s: %d cells not compared (analysis.not_compared: %s)", aid, int(hit.sum()), e["why"])
    return cells, notes
