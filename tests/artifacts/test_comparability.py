"""analysis.not_compared (prm_lessons.artifacts.comparability): a published cell whose setting this run
does not match is shown, never compared; checked on the paper plan's own entries (EurusPRM product,
the Chinese GaoKao column) through the table rules' emit path."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from prm_lessons.artifacts.cells import BON_FRAME
from prm_lessons.artifacts.comparability import apply_not_compared
from prm_lessons.artifacts.defs.fig1_overview import build_fig1
from prm_lessons.artifacts.defs.table6_bon_main import build_table6
from prm_lessons.artifacts.defs.table13_scoring_strategies import build_table13
from prm_lessons.artifacts.published import load_published
from prm_lessons.artifacts.registry import ARTIFACT_PARAMS, artifact_paths
from prm_lessons.artifacts.render import emit_table
from prm_lessons.config import load_config
from prm_lessons.plan.analysis import analysis_settings

ROOT = Path(__file__).resolve().parents[2]
BON7 = ["gsm8k", "math", "minerva_math", "gaokao2023en", "olympiadbench", "college_math", "mmlu_stem"]
ZH = ["cmath", "cn_middle_school24", "gaokao_math_cloze", "gaokao_math_qa"]
EURUS = ["eurus_prm_stage1", "eurus_prm_stage2"]


def paper_params(aid: str) -> dict:
    """What the workflow passes the artifact rule under config/paper.yaml (workflow/rules/analysis.smk)."""
    settings = analysis_settings(load_config(ROOT / "config/paper.yaml"))
    return {**{k: settings[k] for k in ARTIFACT_PARAMS[aid]}, "run": {"name": "paper", "label": "paper plan"}}


def bon(prms, benches, n=8, acc=50.0) -> pd.DataFrame:
    """load_bon's frame (percent): every scorer on every benchmark at every aggregation, plus pass/maj."""
    rows = []
    for p in prms:
        metrics = ["prm_product", "prm_min", "prm_last"] + (["pass", "maj"] if p == prms[0] else [])
        for m in metrics:
            for b in (*benches, "average"):
                rows.append(dict(prm=p, benchmark=b, metric=m, n=n, accuracy=acc, ci_low=acc - 1, ci_high=acc + 1,
                                 policy=None))
    return pd.DataFrame(rows, columns=BON_FRAME)


def emitted(aid: str, cells: pd.DataFrame, params: dict, tmp_path) -> tuple[pd.DataFrame, str]:
    outputs = {k: str(tmp_path / v) for k, v in artifact_paths(aid).items()}
    emit_table(aid, cells, outputs, params, {})
    return pd.read_csv(outputs["csv"]), Path(outputs["tex"]).read_text()


def test_paper_plan_never_compares_eurus_product_cells(tmp_path):
    params = paper_params("table6")
    assert params["aggregation"] == "product" and params["not_compared"]
    cells, tex = emitted("table6", build_table6(bon(["qwen25_math_prm_7b", *EURUS], BON7), load_published(), params),
                         params, tmp_path)
    eurus = cells[cells["row"].isin(EURUS)]
    assert eurus["published"].notna().all() and len(eurus) == 2 * 8      # shown beside the paper's numbers
    assert not eurus["comparable"].any() and eurus["diff"].isna().all()  # never compared
    other = cells[cells["row"] == "qwen25_math_prm_7b"]
    assert other["comparable"].all() and other["diff"].notna().all()
    assert r"Not compared with the paper (analysis.not\_compared): EurusPRM product cells" in tex

    # Table 13: Eurus last and min are compared, product is not
    params13 = paper_params("table13")
    cells13, _ = emitted("table13", build_table13(bon(["qwen25_math_prm_7b", *EURUS], BON7), load_published(),
                                                  params13), params13, tmp_path)
    e13 = cells13[cells13["row"].isin(EURUS)]
    assert set(e13["aggregation"]) == {"last", "product", "min"}
    assert not e13.loc[e13["aggregation"] == "product", "comparable"].any()
    assert e13.loc[e13["aggregation"] != "product", "comparable"].all()


def test_paper_plan_never_compares_the_gaokao_column_or_its_average(tmp_path):
    params = paper_params("table15")
    own = {**{k: params.get(k) for k in ("run", "aggregations", "n", "paper_rows", "paper_columns")},
           "benchmarks": list(params["chinese_benchmarks"])}
    assert own["benchmarks"] == ZH
    cells, tex = emitted("table15", build_table13(bon(["qwen25_math_prm_7b"], ZH), load_published(), own,
                                                  tid="table15"), params, tmp_path)
    prm = cells[cells["row"] == "qwen25_math_prm_7b"]
    gaokao = prm[prm["column"].isin(["gaokao_zh", "average"])]   # the members keep no published number
    assert len(gaokao) == 2 * 3 and gaokao["published"].notna().all()
    assert not gaokao["comparable"].any() and gaokao["diff"].isna().all()
    kept = prm[prm["paper_column"].isin(["cmath", "cn_middle_school24"])]
    assert kept["comparable"].all() and kept["diff"].notna().all()
    assert "GaoKao column" in tex and "UNVERIFIED" in tex


def test_figure1_drops_only_eurus_best_of_n_average():
    params = paper_params("fig1")
    pb = pd.DataFrame([{"prm": p, "subset": s, "n": 10, "error_acc": 40.0, "correct_acc": 40.0, "f1": 40.0}
                       for p in EURUS for s in ("gsm8k", "math", "olympiadbench", "omnimath")])
    cells = build_fig1(bon(EURUS, BON7), pb, None, load_published(), params)
    got, _ = apply_not_compared("fig1", cells, params)
    got = got[got["row"].isin(EURUS)].set_index(["row", "column"])
    assert not got.loc[("eurus_prm_stage1", "bon_average"), "comparable"]
    assert got.loc[("eurus_prm_stage1", "processbench_f1"), "comparable"]   # ProcessBench is not a product


def test_an_entry_matches_only_when_every_field_it_gives_matches():
    cells = pd.DataFrame({"row": ["a", "a", "b", "a"], "key": ["a", "a", "b", "a"],
                          "aggregation": ["product", "min", "product", "product"],
                          "paper_column": ["x", "x", "x", "average"], "published": [1.0, 1.0, 1.0, np.nan],
                          "comparable": [True] * 4, "diff": [0.5] * 4})
    got, notes = apply_not_compared("t", cells, {"not_compared": [{"rows": ["a"], "aggregations": ["product"],
                                                                   "why": "because"}]})
    assert got["comparable"].tolist() == [False, True, True, True]   # no published number: nothing to compare
    assert notes == ["Not compared with the paper (analysis.not_compared): because"]
    same, none = apply_not_compared("t", cells, {"not_compared": [{"rows": ["zzz"], "why": "never"}]})
    assert same["comparable"].all() and none == []
