"""Published-only rows (published.yaml `published_only`): Table 7's GPT-4o and o1-mini appear as the paper's
numbers, labelled so, with no reproduced value and no Δ (prm_lessons.artifacts.render)."""
from __future__ import annotations

import pandas as pd

from analysis_synth import analysis_params
from prm_lessons.artifacts.defs.table7_processbench_main import build_table7
from prm_lessons.artifacts.published import load_published
from prm_lessons.artifacts.render import display_frame, markdown_table, table_tex

SUBSETS = ("gsm8k", "math", "olympiadbench", "omnimath")


def pb(names=("qwen25_math_prm_7b",)) -> pd.DataFrame:
    return pd.DataFrame([{"prm": p, "subset": s, "n": 10, "error_acc": 50.0, "correct_acc": 50.0, "f1": 50.0}
                         for p in names for s in SUBSETS])


def test_table7_shows_gpt4o_and_o1_mini_as_published_only():
    pub = load_published()
    assert pub["tables"]["table7"]["published_only"] == ["gpt4o_0806", "o1_mini"]
    cells = build_table7(pb(), pub, analysis_params())
    assert not cells["key"].isin(["gpt4o_0806", "o1_mini"]).any()   # nothing reproduced for them
    shown = display_frame(cells, "table7", pub).set_index("row")
    gpt = shown.loc["paper only: GPT-4o-0806"]
    assert gpt["GSM8K err"] == "70.0" and gpt["Omni-MATH F1"] == "53.5" and gpt["Avg. F1"] == "61.9"
    assert shown.loc["paper only: o1-mini", "Avg. F1"] == "87.9"
    # the reproduced row keeps its paper line and Δ; the published-only rows have neither
    assert list(shown.index[:3]) == ["qwen25_math_prm_7b", "paper: Qwen2.5-Math-PRM-7B", "Δ"]
    assert list(shown.index).count("Δ") == 1
    md = markdown_table(display_frame(cells, "table7", pub))
    assert "| paper only: o1-mini |" in md
    tex = table_tex("table7", cells, pub, {"name": "t"})
    assert r"\textit{paper only: GPT-4o-0806}" in tex and "proprietary API critics" in tex


def test_a_published_only_row_this_run_reproduces_is_not_repeated():
    pub = load_published()
    cells = build_table7(pb(("qwen25_math_prm_7b", "o1_mini")), pub, analysis_params())
    rows = list(display_frame(cells, "table7", pub)["row"])
    assert "paper only: o1-mini" not in rows and "paper: o1-mini" in rows
    assert "paper only: GPT-4o-0806" in rows
    # a table without published_only rows renders as before
    t6 = display_frame(cells.iloc[0:0], "table6", pub)
    assert t6.empty
