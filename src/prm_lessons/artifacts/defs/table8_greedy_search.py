"""Table 8: what it reads, its params, its cells builder, its notes and its rule function `run`."""
from __future__ import annotations

import pandas as pd

from prm_lessons.artifacts.cells import bon_cells, grader_notes, load_bon
from prm_lessons.artifacts.inputs import csv_or_empty, empty_bon
from prm_lessons.artifacts.published import load_published
from prm_lessons.artifacts.render import emit_table

ID = "table8"
KIND = "table"
SOURCE = "Table 8"
TITLE = "PRM-guided greedy search: accuracy (%) beside pass@1, pass@N, maj@N and orm@N of the same policy"
SECTION = "Greedy search"
# what the rule reads: input groups of workflow/rules/analysis.smk (ARTIFACT_INPUT_GROUPS)
INPUTS = ("search",)
# the config `analysis.*` keys the rule receives as params (besides `run`)
PARAMS = ("paper_rows", "paper_columns", "grader", "search_pass1")


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


PASS1_TEXT = {
    "greedy": "pass@1: one greedy response per problem (temperature 0; search.pass1: greedy). The paper does not "
              "say how it measured pass@1; its published cells all lie on the one-sample-per-problem grid, which "
              "favours greedy (INFERRED).",
    "mean": "pass@1: the mean correctness of the N sampled responses at the sampling settings (the expected "
            "pass@1; search.pass1: mean). The paper does not say how it measured pass@1; its published cells "
            "favour one greedy response per problem (INFERRED), so this row is the project's choice.",
}
# the search policy's prompt (search.SearchSettings, rule search_samples): sampling.system_prompt
PROMPT_NOTE = ("Prompt: the search policy gets sampling.system_prompt as its system turn (by default the "
               "Qwen2.5-Math chain-of-thought prompt, also for Qwen2.5-7B-Instruct), the project's choice: the "
               "paper does not state the search policy's prompt (UNVERIFIED).")


def table8_notes(params) -> list[str]:
    """How pass@1 was measured and which prompt the policy got (both the project's choices)."""
    mode = params.get("search_pass1")
    return ([PASS1_TEXT[mode]] if mode in PASS1_TEXT else []) + [PROMPT_NOTE]


def run(*, inputs, outputs, params, wildcards, threads) -> None:
    """Table 8 (PRM-guided greedy search beside the same policy's baselines) from results/tables/search.csv."""
    search = csv_or_empty(inputs, "search", lambda p: load_bon(p, "search_csv"))
    emit_table("table8", build_table8(search if search is not None else empty_bon(), load_published(), params),
                outputs, params, inputs, notes=grader_notes(params) + table8_notes(params))
