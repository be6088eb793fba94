"""Table 11: what it reads, its params, its cells builder, its notes and its rule function `run`."""
from __future__ import annotations

import pandas as pd

from prm_lessons.artifacts.cells import (
    baseline_selections,
    bon_cells,
    grader_notes,
    load_bon,
    policy_notes,
    prm_metric,
    scorer_names,
    select_rows,
)
from prm_lessons.artifacts.inputs import csv_or_empty, empty_bon, read_bon
from prm_lessons.artifacts.published import load_published
from prm_lessons.artifacts.render import emit_table
from prm_lessons.tables import read_csv

ID = "table11"
KIND = "table"
SOURCE = "Table 11"
TITLE = "LLMs as Best-of-N verifiers: accuracy (%) of pointwise and pairwise judges beside pass@N, maj@N and PRMs"
SECTION = "LLM judges"
# what the rule reads: input groups of workflow/rules/analysis.smk (ARTIFACT_INPUT_GROUPS)
INPUTS = ("bon", "judges")
# the config `analysis.*` keys the rule receives as params (besides `run`)
PARAMS = ("aggregation", "n", "benchmarks", "paper_rows", "paper_columns", "policy", "policy_labels", "grader")


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
    sels += [{"row": p, "prm": p, "metric": prm_metric(bon, p, agg)} for p in scorer_names(bon)]
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


def _judge_rows(inputs, params, policy_key: str) -> tuple[pd.DataFrame, pd.DataFrame | None, list[str]]:
    """results/tables/judge_bon.csv restricted to the table's policy: (rows as load_bon reads them, the raw
    rows for judge_table_notes, notes). A table without a `policy` column holds the primary policy's judges
    only, so the second policy's table gets no judge rows and a note saying why."""
    judges = csv_or_empty(inputs, "judges", lambda p: load_bon(p, "judge_bon_csv"))
    raw = csv_or_empty(inputs, "judges", lambda p: read_csv(p, "judge_bon_csv"))
    if judges is None or raw is None:
        return empty_bon(), None, []
    name = params.get(policy_key)
    if "policy" in raw.columns and raw["policy"].notna().any():
        raw = raw[raw["policy"].astype(str) == str(name)]
    elif policy_key != "policy":
        return empty_bon(), None, [
            "The LLM judges ran on the primary policy only (results/tables/judge_bon.csv names no policy), so "
            "this table has no judge rows; its pass@N, maj@N and PRM rows are this policy's."]
    return select_rows(judges, name, None, primary=policy_key == "policy"), raw, []


def judge_table(aid: str, inputs, outputs, params, policy_key: str) -> None:
    judges, raw, notes = _judge_rows(inputs, params, policy_key)
    cells = build_table11(read_bon(inputs, params, policy_key), judges, load_published(), params, tid=aid)
    emit_table(aid, cells, outputs, params, inputs,
                notes=judge_table_notes(raw) + notes + policy_notes(params, policy_key) + grader_notes(params))


def run(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 11 (LLMs as Best-of-N verifiers, pointwise and pairwise) from results/tables/judge_bon.csv and
    bon.csv; the notes say the prompts are the project's and which problems the judge rows cover."""
    judge_table("table11", inputs, outputs, params, "policy")
