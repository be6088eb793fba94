"""Comparability told honestly (issue 15 item 8): a cell is compared with the paper's only when it is
the same quantity: the MC data set the run stands for (analysis.mc_experiment), Table 5's case counts,
and Figure 6's judge (the paper used human annotation)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis_synth import analysis_params
from prm_lessons.artifacts.cells import mc_experiment_comparability
from prm_lessons.artifacts.defs.fig6_flawed_process import build_fig6
from prm_lessons.artifacts.defs.table5_prm_tolerance import build_table5
from prm_lessons.artifacts.published import load_published


def _cells(keys, published=60.0):
    return pd.DataFrame({"key": keys, "value": [61.0] * len(keys), "published": [published] * len(keys),
                         "comparable": [True] * len(keys), "diff": [1.0] * len(keys)})


def test_cells_of_the_other_mc_data_set_are_shown_but_not_compared():
    pub = load_published()
    cells = _cells(["mc_hard", "mc_hard_3m", "mc_soft", "human"])
    got = mc_experiment_comparability("fig9", cells, pub, {"mc_experiment": "860k"}).set_index("key")
    assert got.loc["mc_hard", "comparable"] and got.loc["human", "comparable"]   # 860k row; untagged row
    assert not got.loc["mc_hard_3m", "comparable"] and not got.loc["mc_soft", "comparable"]
    assert np.isnan(got.loc["mc_soft", "diff"]) and got.loc["mc_soft", "published"] == 60.0
    flipped = mc_experiment_comparability("fig9", cells, pub, {"mc_experiment": "3M"}).set_index("key")
    assert not flipped.loc["mc_hard", "comparable"] and flipped.loc["mc_hard_3m", "comparable"]
    # Figure 5's sweep is the 3M set throughout ("*")
    fig5 = mc_experiment_comparability("fig5", _cells(["t0", "t0.5"]), pub, {"mc_experiment": "860k"})
    assert not fig5["comparable"].any()
    # every tagged artifact names a known data set
    assert {t for tags in pub["mc_experiments"].values() for t in tags.values()} <= {"860k", "3M"}


def _tolerance(ns):
    rows = [{"prm": "human", "subset": s, "n": n, "n_correct": n // 2, "accuracy": 100 * (n // 2) / n}
            for s, n in ns.items()]
    rows.append({"prm": "human", "subset": "average", "n": sum(ns.values()), "n_correct": 0,
                 "accuracy": float(np.mean([r["accuracy"] for r in rows]))})
    return pd.DataFrame(rows)


def test_table5_compares_only_on_the_papers_case_counts(caplog):
    pub = load_published()
    paper = {"gsm8k": 7, "math": 94, "olympiadbench": 161, "omnimath": 259}
    assert pub["tables"]["table5"]["n"] == paper
    ok = build_table5(_tolerance(paper), pub, analysis_params()).set_index("column")
    assert ok["comparable"].all()
    fewer = build_table5(_tolerance({**paper, "math": 93}), pub, analysis_params()).set_index("column")
    assert not fewer.loc["math", "comparable"] and not fewer.loc["average", "comparable"]
    assert fewer.loc["gsm8k", "comparable"]
    assert "case counts differ" in caplog.text and "'math': 93" in caplog.text


def test_fig6_judge_bars_are_not_compared_with_human_annotation():
    rates = pd.DataFrame([
        {"source": "policy_judge", "dataset": "gsm8k", "n_judged": 50, "rate": 8.0, "ci_low": 3.0, "ci_high": 19.0},
        {"source": "processbench", "dataset": "gsm8k", "n_judged": 200, "rate": 3.5, "ci_low": 1.7, "ci_high": 7.0}])
    cells = build_fig6(rates, load_published(), analysis_params()).set_index("key")
    assert cells.loc["policy", "published"] == 5.1 and not cells.loc["policy", "comparable"]
    assert np.isnan(cells.loc["policy", "diff"])
    assert cells.loc["processbench", "comparable"] and cells.loc["processbench", "diff"] == 0.0


def test_figure6_judges_a_benchmarks_first_n_samples_only():
    # paper.yaml samples OlympiadBench at 64 for Table 10; Figure 6 (the paper: 8 samples per query) and
    # rule judge read only the first bon.n of them, problem sets all of theirs
    from prm_lessons import plan
    cfg = {"benchmarks": {"olympiadbench": {}}, "problems": {"train": {}}, "bon": {"n": 8},
           "sampling": {"n": 4}}
    assert plan.judge_sample_cap(cfg, "olympiadbench") == 8
    assert plan.judge_sample_cap(cfg, "train") is None


LABELLED = {"mc", "judge", "consensus"}  # label sources whose rows the run trains on its own labelled data


def _labelled_variants(files) -> set[str]:
    from prm_lessons import plan
    from prm_lessons.config import load_config

    return {name for name, spec in plan.variants(load_config(*files)).items() if spec.get("source") in LABELLED}


@pytest.mark.parametrize("files", [["config/config.yaml"], ["config/paper.yaml"]], ids=["embedded", "paper"])
def test_every_published_row_of_a_self_labelled_variant_is_tagged_and_sized(files, monkeypatch):
    """The Δ rule for every artifact with published numbers: a row that the run trains on its own MC, judge
    or consensus labels is compared with the paper's only where published.yaml names the paper's data set
    (`mc_experiments`) and size (`data_sizes`) for it; a row without them would print a Δ whatever data
    the run trained it on (as Figure 9's judge row once did)."""
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    pub, variants = load_published(), _labelled_variants(files)
    missing = []
    for aid, table in pub["tables"].items():
        tags = pub.get("mc_experiments", {}).get(aid, {})
        sizes = pub.get("data_sizes", {}).get(aid, {})
        for row in table.get("rows") or []:
            key = row["key"]
            if key in variants and not ((key in tags or "*" in tags) and (key in sizes or "*" in sizes)):
                missing.append(f"{aid}:{key}")
    assert not missing, f"published rows of self-labelled variants without a data tag or size: {missing}"
