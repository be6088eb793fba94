"""Table 5: what it reads, its params, its cells builder, its notes and its rule function `run`."""
from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from prm_lessons.artifacts.cells import finish_cells
from prm_lessons.artifacts.published import load_published, lookup, paper_column, paper_key, published_long
from prm_lessons.artifacts.render import emit_table
from prm_lessons.evaluation import bias_analysis as analysis
from prm_lessons.tables import read_table

ID = "table5"
KIND = "table"
SOURCE = "Table 5"
TITLE = "PRM tolerance: accuracy (%) on ProcessBench cases whose final answer is correct but a step is wrong"
SECTION = "Best-of-N bias"
# what the rule reads: input groups of workflow/rules/analysis.smk (ARTIFACT_INPUT_GROUPS)
INPUTS = ("predictions",)
# the config `analysis.*` keys the rule receives as params (besides `run`)
PARAMS = ("paper_rows", "paper_columns")

log = logging.getLogger(__name__)


def build_table5(tol: pd.DataFrame, pub, params):
    """Table 5 cells from analysis.tolerance_accuracy output (prm, subset, n, n_correct, accuracy). A
    subset cell is comparable only on the paper's cases: as many as the published n (7/94/161/259 on
    ProcessBench as released in Dec 2024); the average only when all four subsets are."""
    pub_long = published_long(pub, "table5")
    paper_subsets = sorted(c for c in pub["tables"]["table5"]["columns"] if c != "average")
    paper_n = pub["tables"]["table5"]["n"]
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
            lo, hi = (analysis.wilson_interval(int(r["n_correct"]), int(r["n"])) if r["subset"] != "average"
                      else (np.nan, np.nan))
            rows.append({"row": prm, "key": key, "label": plabel, "column": r["subset"], "paper_column": pc,
                         "n": r["n"], "value": r["accuracy"], "ci_low": lo, "ci_high": hi, "published": pv,
                         "comparable": same_n[r["subset"]] if r["subset"] != "average"
                         else sorted(mapped) == paper_subsets and all(same_n.values())})
    if off:
        log.warning("table5: case counts differ from the paper's n %s: %s (another ProcessBench revision, a "
                    "limit, or constructed cases); those cells are not compared", paper_n, off)
    return finish_cells(rows, params)


def run(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 5 from every PRM's ProcessBench predictions."""
    preds = {name: read_table(path, None) for name, path in analysis.named_inputs(inputs, "predictions").items()}
    tol = analysis.tolerance_accuracy(preds)
    emit_table("table5", build_table5(tol, load_published(), params), outputs, params, inputs)
