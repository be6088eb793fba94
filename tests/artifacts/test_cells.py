"""Published-vs-reproduced cells (prm_lessons.artifacts.cells and the builders of artifacts/defs): the
published column and the difference, comparability, the paper's rows and columns, display frames."""

import numpy as np
import pandas as pd
import pytest

from analysis_synth import BON7, SWEEP, analysis_params, bon_frame, processbench_frame
from prm_lessons.artifacts import cells as C
from prm_lessons.artifacts import published
from prm_lessons.artifacts.defs.fig5_mc_threshold import build_fig5
from prm_lessons.artifacts.defs.table3_data_sources_bon import build_table3
from prm_lessons.artifacts.defs.table4_data_sources_processbench import build_table4
from prm_lessons.artifacts.defs.table6_bon_main import build_table6
from prm_lessons.artifacts.defs.table13_scoring_strategies import build_table13
from prm_lessons.artifacts.render import display_frame

PUB = published.load_published()


# ---------------------------------------------------------------- cells: published column and difference

def _bon_paper(prms=("human", "maj"), n=8, benches=BON7, acc=0.5):
    rows = []
    for p in prms:
        for b in benches + ["average"]:
            for m in ("pass", "maj", "prm_product", "prm_min", "prm_last"):
                rows.append(dict(prm=p, benchmark=b, metric=m, n=n, accuracy=acc, ci_low=acc - .01, ci_high=acc + .01))
    return C.load_bon(_csv(pd.DataFrame(rows)))


def _csv(df):
    import tempfile

    f = tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False)
    df.to_csv(f.name, index=False)
    return f.name


def test_bon_cells_paper_setup_gives_published_and_diff():
    bon = _bon_paper(("human",))
    cells = build_table3(bon, PUB, analysis_params()).set_index("column")
    assert cells.loc["gsm8k", "value"] == pytest.approx(50.0)           # fractions → percent
    assert cells.loc["gsm8k", "published"] == 96.9
    assert cells.loc["gsm8k", "diff"] == pytest.approx(50.0 - 96.9)
    assert cells.loc["average", "published"] == 64.9 and cells.loc["average", "comparable"]
    assert cells.loc["average", "label"] == "Human annotation (PRM800K), 264k"


def test_bon_cells_not_comparable_with_other_n_or_benchmarks():
    cells = build_table3(_bon_paper(("human",), n=4), PUB, analysis_params()).set_index("column")
    assert cells["published"].notna().all() and not cells["comparable"].any() and cells["diff"].isna().all()
    emb = build_table3(C.load_bon(_csv(bon_frame(["human"]))), PUB, analysis_params()).set_index("column")
    assert emb.loc["average", "published"] == 64.9          # shown for orientation …
    assert np.isnan(emb.loc["average", "diff"])              # … never diffed: different benchmarks
    assert emb.loc["arith", "published"] != emb.loc["arith", "published"]  # NaN: no such column in the paper


def test_subset_of_benchmarks_changes_average_and_drops_ci():
    bon = C.load_bon(_csv(bon_frame(["human"])))
    cells = build_table3(bon, PUB, analysis_params(benchmarks=["arith"])).set_index("column")
    assert set(cells.index) == {"arith", "average"}
    assert cells.loc["average", "value"] == pytest.approx(cells.loc["arith", "value"])
    assert np.isnan(cells.loc["average", "ci_low"])


def test_paper_rows_and_columns_mapping_from_config():
    bon = C.load_bon(_csv(bon_frame(["my_prm"], benches=("g8k",))))
    none = build_table6(bon, PUB, analysis_params())
    assert none.loc[none["row"] == "my_prm", "published"].isna().all()
    mapped = build_table6(bon, PUB, analysis_params(paper_rows={"my_prm": "qwen25_math_prm_7b"},
                                                    paper_columns={"g8k": "gsm8k"}))
    cell = mapped[(mapped["row"] == "my_prm") & (mapped["column"] == "g8k")].iloc[0]
    assert cell["paper_column"] == "gsm8k" and cell["published"] == 97.1


def test_table6_has_baselines_and_orm_uses_orm_metric():
    bon = C.load_bon(_csv(pd.concat([bon_frame(["human"]), pd.DataFrame([
        dict(prm="qwen25_math_rm_72b", benchmark=b, metric="orm", n=4, accuracy=.3, ci_low=.2, ci_high=.4)
        for b in ("arith", "chain_sum", "average")])])))
    cells = build_table6(bon, PUB, analysis_params())
    assert list(dict.fromkeys(cells["row"]))[:2] == ["pass@4", "maj@4"]
    orm = cells[cells["row"] == "qwen25_math_rm_72b"].set_index("column")
    assert orm.loc["arith", "value"] == pytest.approx(30.0)
    assert orm.loc["average", "published"] == 68.9


def test_table13_rows_per_aggregation_with_their_published_numbers():
    bon = _bon_paper(("human",))
    cells = build_table13(bon, PUB, analysis_params())
    avg = cells[(cells["row"] == "human") & (cells["column"] == "average")].set_index("aggregation")
    assert avg.loc["last", "published"] == 64.7 and avg.loc["min", "published"] == 65.6


def test_processbench_cells_and_average_comparability():
    pb = C.load_processbench_table(_csv(processbench_frame(["judge"], subsets=("gsm8k", "math"))))
    cells = build_table4(pb, PUB, analysis_params()).set_index("column")
    assert cells.loc["gsm8k/f1", "published"] == 60.9 and cells.loc["gsm8k/f1", "comparable"]
    assert cells.loc["average/f1", "published"] == 46.5 and not cells.loc["average/f1", "comparable"]


def test_fig5_rows_matched_to_paper_thresholds():
    bon = C.load_bon(_csv(bon_frame()))
    pb = C.load_processbench_table(_csv(processbench_frame()))
    cells = build_fig5(bon, pb, SWEEP, PUB, analysis_params())
    by = cells.drop_duplicates("row").set_index("row")
    assert by.loc["mc_hard", "key"] == "t0" and by.loc["mc_hard_t1of2", "key"] == "t4/8"
    pubs = cells.set_index(["row", "column"])["published"]
    assert pubs[("mc_hard_t1of2", "processbench_f1")] == 36.6
    # a trainsets.csv frame works too; no sweep at all gives no rows, not an error
    ts = pd.DataFrame({"variant": ["mc_hard", "mc_hard_t1of2", "judge"], "source": ["mc", "mc", "judge"],
                       "label_type": ["hard", "hard", "hard"], "threshold": [0.0, 0.5, np.nan]})
    assert len(build_fig5(bon, pb, ts, PUB, analysis_params())) == len(cells)
    assert build_fig5(bon, pb, [], PUB, analysis_params()).empty


def test_summary_figures_select_rows_by_paper_key():
    bon = C.load_bon(_csv(bon_frame()))
    pb = C.load_processbench_table(_csv(processbench_frame()))
    fig2 = C.build_summary_figure("fig2", bon, pb, PUB, analysis_params())
    assert set(fig2["row"]) == {"mc_hard", "judge", "consensus_hard"}
    fig3 = C.build_summary_figure("fig3", bon, pb, PUB, analysis_params())
    stage = fig3.drop_duplicates("row").set_index("row")[["stage", "labels"]]
    assert tuple(stage.loc["consensus_soft"]) == ("after", "soft") and tuple(stage.loc["mc_hard"]) == ("before", "hard")


def test_display_frame_has_paper_and_delta_rows():
    cells = build_table3(_bon_paper(("human",)), PUB, analysis_params())
    d = display_frame(cells, "table3", PUB)
    assert list(d["row"]) == ["human", "paper: Human annotation (PRM800K), 264k", "Δ"]
    assert list(d.columns)[1:3] == ["GSM8K", "MATH"] and d.columns[-1] == "Avg."
    assert d.iloc[2, 1] == "-46.9"


def test_table10_comparable_only_at_the_papers_n_and_benchmarks(tmp_path, monkeypatch):
    bench = ["math500", "aime24", "amc23", "minerva_math", "gaokao2023en", "olympiadbench"]
    rows = [dict(policy="p", prm="qwen25_math_prm_72b", benchmark=b, metric=m, n=n, accuracy=0.5, ci_low=.4,
                 ci_high=.6) for n in (8, 64) for b in [*bench, "gsm8k", "average"]
            for m in ("pass", "maj", "prm_product")]
    bon = C.load_bon(_csv(pd.DataFrame(rows)))
    for n, comparable in ((64, True), (8, False)):
        own = analysis_params(n=n, benchmarks=bench)
        cells = build_table6(C.select_rows(bon, "p", n), PUB, own, tid="table10").set_index(["row", "column"])
        prm = cells.loc["qwen25_math_prm_72b"]
        assert prm.loc["math500", "published"] == 87.8 and bool(prm.loc["average", "comparable"]) is comparable
        assert prm.loc["average", "published"] == 59.2 and "gsm8k" not in prm.index


def test_benchmarks_mapped_to_one_paper_column_are_averaged_into_it():
    """config/paper.yaml maps the harness's gaokao_math_cloze and gaokao_math_qa to the paper's Chinese
    "GaoKao" column: that column is their unweighted mean, and the row's Avg. counts it once."""
    rows = [dict(prm="human", benchmark=b, metric="prm_product", n=8, accuracy=acc, ci_low=0, ci_high=1)
            for b, acc in (("cmath", .9), ("cn_middle_school24", .8), ("gaokao_math_cloze", .6),
                           ("gaokao_math_qa", .7))]
    bon = C.load_bon(_csv(pd.DataFrame(rows)))
    params = analysis_params(benchmarks=["cmath", "cn_middle_school24", "gaokao_math_cloze", "gaokao_math_qa"],
                             paper_columns={"gaokao_math_cloze": "gaokao_zh", "gaokao_math_qa": "gaokao_zh"})
    cells = build_table13(bon, PUB, params, tid="table15").set_index("column")
    assert cells.loc["gaokao_zh", "value"] == pytest.approx(65.0) and cells.loc["gaokao_zh", "published"] == 68.9
    assert np.isnan(cells.loc["gaokao_math_qa", "published"]) and not cells.loc["gaokao_math_qa", "comparable"]
    assert cells.loc["average", "value"] == pytest.approx((90 + 80 + 65) / 3)
    assert cells.loc["average", "published"] == 79.6 and cells.loc["average", "comparable"]
    header = list(display_frame(cells.reset_index(), "table15", PUB).columns)
    assert header == ["row", "CMATH", "CN Middle School 24", "gaokao_math_cloze", "gaokao_math_qa", "GaoKao", "Avg."]
    # one of the two has no rows: no GaoKao cell, the other set is not compared with it, nor the average
    part = build_table13(bon[bon["benchmark"] != "gaokao_math_qa"], PUB, params, tid="table15").set_index("column")
    assert "gaokao_zh" not in part.index and np.isnan(part.loc["gaokao_math_cloze", "published"])
    assert not part.loc["average", "comparable"]
