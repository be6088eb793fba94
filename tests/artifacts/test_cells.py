"""Published-vs-reproduced tables and the paper's figures (prm_lessons.artifacts and the artifact rules
of prm_lessons.rules.analysis)."""
import json

import numpy as np
import pandas as pd
import pytest

from analysis_synth import PRMS, SWEEP, analysis_params, bon_frame, processbench_frame, rule_inputs, write_upstream
from prm_lessons.artifacts import cells as C
from prm_lessons.artifacts import published
from prm_lessons.artifacts.defs.fig1_overview import O1_MINI_ROW
from prm_lessons.artifacts.defs.fig5_mc_threshold import build_fig5
from prm_lessons.artifacts.defs.table3_data_sources_bon import build_table3
from prm_lessons.artifacts.defs.table4_data_sources_processbench import build_table4
from prm_lessons.artifacts.defs.table6_bon_main import build_table6
from prm_lessons.artifacts.defs.table13_scoring_strategies import build_table13
from prm_lessons.artifacts.registry import ARTIFACT_PARAMS, ARTIFACTS, artifact_paths
from prm_lessons.artifacts.render import display_frame
from prm_lessons.rules import analysis as rules

PUB = published.load_published()
BON7 = ["gsm8k", "math", "minerva_math", "gaokao2023en", "olympiadbench", "college_math", "mmlu_stem"]


# ---------------------------------------------------------------- the published numbers as data

def test_published_has_every_reproduced_artifact_and_citation():
    assert set(ARTIFACTS) <= set(PUB["tables"])
    assert "2501.07301" in PUB["citation"]["url"] and PUB["citation"]["text"]
    assert PUB["bon_n"] == 8


def test_registry_lists_every_artifact_module_and_reads_what_the_module_holds():
    """One file per artifact: every module in artifacts/defs/ is registered (one not listed would silently
    get no rule), and the constants the registry reads from its syntax tree are the module's own."""
    import importlib

    from prm_lessons.artifacts.registry import ARTIFACT_INPUTS, DEFS, MODULES

    assert sorted(MODULES) == sorted(f.stem for f in DEFS.glob("*.py") if f.stem != "__init__")
    for aid, a in ARTIFACTS.items():
        mod = importlib.import_module(f"prm_lessons.artifacts.defs.{a['stem']}")
        assert (mod.ID, mod.KIND, mod.SOURCE, mod.TITLE, mod.SECTION) == (aid, a["kind"], a["source"], a["title"],
                                                                           a["section"])
        assert (mod.PARAMS, mod.INPUTS) == (ARTIFACT_PARAMS[aid], ARTIFACT_INPUTS[aid])
        assert callable(mod.run) and getattr(rules, a["stem"]) is mod.run


@pytest.mark.parametrize("tid", ["table3", "table6", "table13"])
def test_published_bon_average_is_mean_of_seven_benchmarks(tid):
    """The paper's Avg. column is the unweighted mean of the 7 benchmarks (a transcription check)."""
    for r in PUB["tables"][tid]["rows"]:
        vals = dict(zip(PUB["tables"][tid]["columns"], r["values"]))
        assert abs(np.mean([vals[b] for b in BON7]) - vals["average"]) <= 0.051, (tid, r["label"], r.get("aggregation"))


# cells the research notes flag as typos in the paper (kept as printed)
TYPOS = {("table7", "llama33_70b_instruct", "math"), ("table7", "skywork_prm_7b", "math"),
         ("table7", "rlhflow_prm_deepseek_8b", "omnimath"), ("table7", "human", "omnimath")}


@pytest.mark.parametrize("tid", ["table4", "table7"])
def test_published_processbench_f1_is_harmonic_mean_and_average_is_mean(tid):
    t = PUB["tables"][tid]
    for r in t["rows"]:
        vals = dict(zip(t["columns"], r["values"]))
        f1s = []
        for sub in ("gsm8k", "math", "olympiadbench", "omnimath"):
            e, c, f = vals[f"{sub}/error_acc"], vals[f"{sub}/correct_acc"], vals[f"{sub}/f1"]
            f1s.append(f)
            if (tid, r["key"], sub) not in TYPOS:
                assert abs(2 * e * c / (e + c) - f) <= 0.11, (tid, r["label"], sub)
        assert abs(np.mean(f1s) - vals["average/f1"]) <= 0.051, (tid, r["label"])


def test_published_table5_average_and_figure_consistency():
    t5 = PUB["tables"]["table5"]
    for r in t5["rows"]:
        assert abs(np.mean(r["values"][:4]) - r["values"][4]) <= 0.051, r["label"]
    # Figure 7's tolerance values are Table 5 averages; its BoN values are Table 3's
    t5avg = {r["key"]: r["values"][-1] for r in t5["rows"]}
    t3avg = {r["key"]: r["values"][-1] for r in PUB["tables"]["table3"]["rows"]}
    for r in PUB["tables"]["fig7"]["rows"]:
        bon, tol = r["values"]
        assert bon == t3avg[r["key"]]
        if r["key"] in t5avg:
            assert tol == t5avg[r["key"]]


def test_published_row_length_mismatch_is_an_error(tmp_path):
    bad = {"citation": {}, "tables": {"x": {"columns": ["a", "b"], "rows": [{"key": "k", "label": "K", "values": [1]}]}}}
    p = tmp_path / "p.yaml"
    p.write_text(json.dumps(bad))
    with pytest.raises(ValueError, match="x row 'k' has 1 values for 2 columns"):
        published.load_published(p)


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


# ---------------------------------------------------------------- rule functions end to end

def _run_all(tmp_path, monkeypatch, prms=PRMS, only=None, **params):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PRM_LESSONS_CONFIG_MD5", "0123456789abcdef")
    inputs = rule_inputs(prms)
    for aid in only or ARTIFACTS:
        getattr(rules, ARTIFACTS[aid]["stem"])(inputs=inputs, outputs=artifact_paths(aid),
                                               params=analysis_params(**params), wildcards={}, threads=1)
    return inputs


def test_every_artifact_written_with_provenance(tmp_path, monkeypatch):
    write_upstream(tmp_path)
    _run_all(tmp_path, monkeypatch)
    for aid in ARTIFACTS:
        for kind, path in artifact_paths(aid).items():
            assert (tmp_path / path).stat().st_size > 0, (aid, kind)
        prov = json.loads((tmp_path / artifact_paths(aid)["provenance"]).read_text())
        assert prov["config_md5"] == "0123456789abcdef" and prov["run"]["name"] == "synthetic"
        assert all(f["sha256"] for f in prov["inputs"] if f["bytes"])
        cells = pd.read_csv(tmp_path / artifact_paths(aid)["csv"])
        assert {"published", "diff", "run"} <= set(cells.columns)
    tex = (tmp_path / artifact_paths("table3")["tex"]).read_text()
    assert "Synthetic test run" in tex and "config 01234567" in tex and r"\toprule" in tex


def test_missing_variants_and_inputs_never_crash(tmp_path, monkeypatch, caplog):
    """Only two PRMs were evaluated and several inputs are absent: every artifact is still written."""
    write_upstream(tmp_path, prms=["judge", "other"])
    (tmp_path / "results/tables/processbench.csv").unlink()
    (tmp_path / "results/labels/judge/train.parquet").unlink()
    _run_all(tmp_path, monkeypatch, prms=PRMS + ["other"], only=["table4", "table5", "fig2", "fig5", "fig6"])
    fig5 = pd.read_csv(tmp_path / artifact_paths("fig5")["csv"])
    assert fig5.empty
    assert "(no rows in this run)" in (tmp_path / artifact_paths("table4")["tex"]).read_text()
    assert "does not exist; skipped" in caplog.text
    assert (tmp_path / artifact_paths("fig2")["png"]).exists()


class _RecordingParams(dict):
    """Params that remember which keys a rule function read."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.read = set()

    def get(self, key, default=None):
        self.read.add(key)
        return super().get(key, default)

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)


@pytest.mark.parametrize("over", [{}, {"benchmarks": ["arith"], "n": 4}], ids=["all", "subset"])
def test_each_artifact_rule_reads_only_the_params_the_workflow_gives_it(tmp_path, monkeypatch, over):
    """workflow/rules/analysis.smk passes each artifact rule `run` and its ARTIFACT_PARAMS keys (fig5 also
    `threshold_sweep`); a key read but not passed would silently fall back to its default. Tables never
    get `figure`, so an `analysis.figure` edit redraws figures only."""
    write_upstream(tmp_path)
    monkeypatch.chdir(tmp_path)
    for aid, a in ARTIFACTS.items():
        given = {"run", *ARTIFACT_PARAMS[aid], *(["threshold_sweep"] if aid == "fig5" else [])}
        params = _RecordingParams(analysis_params(**over))
        getattr(rules, a["stem"])(inputs=rule_inputs(), outputs=artifact_paths(aid), params=params, wildcards={},
                                  threads=1)
        assert params.read <= given, (aid, params.read - given)
        assert ("figure" in given) == (a["kind"] == "figure"), aid


# ---------------------------------------------------------------- Figure 1, Tables 1, 2, 9, 10, 12, 14-16

# Best-of-N tables whose Avg. is the unweighted mean of their benchmark columns (research notes §1.6, §2.21)
NEW_BON = ["table1", "table9", "table10", "table12", "table14", "table15", "table16"]


@pytest.mark.parametrize("tid", NEW_BON)
def test_published_new_tables_average_is_mean_of_their_columns(tid):
    t = PUB["tables"][tid]
    assert t["columns"][-1] == "average"
    for r in t["rows"]:
        vals = r["values"]
        assert abs(np.mean(vals[:-1]) - vals[-1]) <= 0.051, (tid, r["label"], r.get("aggregation"))


def test_published_table2_f1_and_average():
    t = PUB["tables"]["table2"]
    for r in t["rows"]:
        vals = dict(zip(t["columns"], r["values"]))
        f1s = [vals[f"{s}/f1"] for s in ("gsm8k", "math", "olympiadbench", "omnimath")]
        assert abs(np.mean(f1s) - vals["average/f1"]) <= 0.051, r["label"]
        for s in ("gsm8k", "math", "olympiadbench", "omnimath"):
            e, c = vals[f"{s}/error_acc"], vals[f"{s}/correct_acc"]
            assert abs(2 * e * c / (e + c) - vals[f"{s}/f1"]) <= 0.11, (r["label"], s)


@pytest.mark.parametrize("tid, key, column, agg, value", [
    # spot checks against ../shared/research/paper_reference.md §2.1-2.3, §2.17-2.19b
    ("fig1", "o1_mini", "processbench_f1", None, 87.9),
    ("fig1", "eurus_prm_stage1", "processbench_f1", None, 31.3),  # as printed (Table 7: 31.2)
    ("table1", "mc_hard", "minerva_math", None, 40.1),
    ("table1", "mc_soft", "average", None, 64.4),
    ("table2", "mc_soft", "omnimath/f1", None, 19.6),
    ("table2", "human", "omnimath/correct_acc", None, 86.1),  # a typo kept as printed (86.3 in Table 4)
    ("table9", "skywork_prm_1_5b", "gsm8k", None, 96.5),
    ("table9", "qwen25_math_rm_72b", "olympiadbench", None, 54.5),
    ("table10", "pass", "aime24", None, 50.0),
    ("table10", "qwen25_math_prm_72b", "math500", None, 87.8),
    ("table12", "pairwise-qwq_32b_preview", "math", None, 90.9),
    ("table14", "eurus_prm_stage1", "mmlu_stem", "min", 83.7),
    ("table15", "qwen25_math_prm_72b", "gaokao_zh", "product", 73.5),
    ("table16", "human", "cn_middle_school24", "product", 82.2),
])
def test_published_new_cells_transcribed(tid, key, column, agg, value):
    assert published.lookup(published.published_long(PUB, tid), key, column, agg)[0] == value


def test_published_fig1_is_table6_and_table7_averages():
    t6 = {r["key"]: r["values"][-1] for r in PUB["tables"]["table6"]["rows"]}
    t7 = {r["key"]: r["values"][-1] for r in PUB["tables"]["table7"]["rows"]}
    for r in PUB["tables"]["fig1"]["rows"]:
        bon, pb = r["values"]
        if bon is not None:
            assert bon == t6[r["key"]], r["label"]
        if pb is not None and r["key"] not in ("eurus_prm_stage1", "eurus_prm_stage2"):  # swapped in the PDF
            assert pb == t7[r["key"]], r["label"]
    assert PUB["tables"]["table10"]["bon_n"] == 64


def _policy_upstream(tmp_path, monkeypatch, policy_column=True, judges=None):
    from analysis_synth import policy_bon_frame

    write_upstream(tmp_path, prms=["human", "mc_hard", "mc_soft"])
    policy_bon_frame(policy_column=policy_column).to_csv(tmp_path / "results/tables/bon.csv", index=False)
    if judges is not None:
        judges.to_csv(tmp_path / "results/tables/judge_bon.csv", index=False)
    monkeypatch.chdir(tmp_path)


def _rule(aid, **over):
    getattr(rules, ARTIFACTS[aid]["stem"])(inputs={**rule_inputs(["human", "mc_hard", "mc_soft"]),
                                                   "judges": "results/tables/judge_bon.csv"},
                                           outputs=artifact_paths(aid), params=analysis_params(**over),
                                           wildcards={}, threads=1)
    return C.load_cells(artifact_paths(aid)["csv"])


def test_policy_and_n_select_the_rows_of_each_table(tmp_path, monkeypatch):
    """bon.csv holds the primary policy at N = 4 (20%) and 2 (50%), the second policy at N = 4 (80%): each
    table shows only its own policy and N."""
    _policy_upstream(tmp_path, monkeypatch)
    for aid, want in (("table6", 20.0), ("table3", 20.0), ("table13", 20.0), ("table1", 20.0),
                      ("table9", 80.0), ("table14", 80.0), ("table10", 50.0)):
        cells = _rule(aid, n=4)
        assert len(cells) and (cells["value"] == want).all(), (aid, sorted(set(cells["value"])))
    t10 = _rule("table10", n=4)
    assert set(t10["column"]) == {"arith", "average"} and set(t10["n"]) == {2}  # analysis.table10's benchmarks, N
    assert set(_rule("table9", n=4)["row"]) >= {"pass@4", "maj@4", "human"}
    tex = (tmp_path / artifact_paths("table9")["tex"]).read_text()
    assert "SmolLM2, T 1.0 (policy setting 'smollm2\\_t1'" in tex


def test_second_policy_tables_are_empty_without_a_policy_column(tmp_path, monkeypatch):
    """A bon.csv written before bon.policies holds the primary policy only."""
    _policy_upstream(tmp_path, monkeypatch, policy_column=False)
    assert _rule("table9", n=4).empty and _rule("table14", n=4).empty
    t6 = _rule("table6", n=4)
    assert len(t6) and (t6["value"] == 20.0).all()


def test_table10_comparable_only_at_the_papers_n_and_benchmarks(tmp_path, monkeypatch):
    bench = ["math500", "aime24", "amc23", "minerva_math", "gaokao2023en", "olympiadbench"]
    rows = [dict(policy="p", prm="qwen25_math_prm_72b", benchmark=b, metric=m, n=n, accuracy=0.5, ci_low=.4,
                 ci_high=.6) for n in (8, 64) for b in [*bench, "gsm8k", "average"] for m in ("pass", "maj", "prm_product")]
    bon = C.load_bon(_csv(pd.DataFrame(rows)))
    for n, comparable in ((64, True), (8, False)):
        own = analysis_params(n=n, benchmarks=bench)
        cells = build_table6(C.select_rows(bon, "p", n), PUB, own, tid="table10").set_index(["row", "column"])
        prm = cells.loc["qwen25_math_prm_72b"]
        assert prm.loc["math500", "published"] == 87.8 and bool(prm.loc["average", "comparable"]) is comparable
        assert prm.loc["average", "published"] == 59.2 and "gsm8k" not in prm.index


def test_table12_judges_of_the_second_policy_or_a_note(tmp_path, monkeypatch):
    judge_rows = [dict(prm="pairwise-j", judge="j", mode="pairwise", model="m", benchmark=b, metric=m, n=4,
                       accuracy=acc, ci_low=acc - .1, ci_high=acc + .1, n_problems=5, n_unparsable=0, policy=pol)
                  for pol, acc in (("smollm2", 0.1), ("smollm2_t1", 0.9)) for b in ("arith", "chain_sum", "average")
                  for m in ("pass", "maj", "judge")]
    judges = pd.DataFrame(judge_rows)
    _policy_upstream(tmp_path, monkeypatch, judges=judges)
    t12, t11 = _rule("table12", n=4), _rule("table11", n=4)
    assert (t12.loc[t12["row"] == "pairwise-j", "value"] == 90.0).all()
    assert (t11.loc[t11["row"] == "pairwise-j", "value"] == 10.0).all()
    assert (t12.loc[t12["row"] == "human", "value"] == 80.0).all()  # PRM rows: the second policy's bon.csv rows
    # a judge_bon.csv without a policy column (before bon.policies) holds the primary policy's rows only
    judges[judges["policy"] == "smollm2"].drop(columns="policy").to_csv("results/tables/judge_bon.csv", index=False)
    t12 = _rule("table12", n=4)
    assert "pairwise-j" not in set(t12["row"]) and (t12["value"] == 80.0).all()
    assert "judges ran on the primary policy only" in (tmp_path / artifact_paths("table12")["tex"]).read_text()


def test_chinese_tables_read_only_their_benchmarks(tmp_path, monkeypatch):
    from analysis_synth import policy_bon_frame

    monkeypatch.chdir(tmp_path)
    write_upstream(tmp_path, prms=["human"])
    policy_bon_frame(prms=("human",), benches=("arith", "cmath")).to_csv("results/tables/bon.csv", index=False)
    t15 = _rule("table15", n=4, chinese_benchmarks=["cmath"])
    assert set(t15["column"]) == {"cmath", "average"} and (t15["value"] == 20.0).all()
    pub = t15[(t15["row"] == "human") & (t15["column"] == "cmath")].set_index("aggregation")["published"]
    assert pub["last"] == 92.8 and pub["min"] == 93.0
    t16 = _rule("table16", n=4, chinese_benchmarks=["cmath"])
    assert (t16["value"] == 80.0).all()
    assert _rule("table15", n=4).empty  # chinese_benchmarks empty: no rows (the workflow does not plan it)


def test_fig1_bars_reference_lines_and_o1_mini_not_reproduced(tmp_path, monkeypatch):
    _policy_upstream(tmp_path, monkeypatch)
    pd.DataFrame([dict(policy=pol, run="x", benchmark=b, n_problems=5, n=n, **{"pass": p, "maj": m, "mean_acc": 0.01})
                  for pol, n, p, m in (("smollm2", 4, 0.7, 0.4), ("smollm2", 2, 0.01, 0.01), ("smollm2_t1", 4, 0.02, 0.02))
                  for b in ("arith", "chain_sum", "average")]).to_csv("results/tables/bon_baselines.csv", index=False)
    cells = _rule("fig1", n=4).set_index(["row", "column"])
    assert cells.loc[("human", "bon_average"), "value"] == pytest.approx(20.0)
    assert cells.loc[("human", "bon_average"), "published"] == 64.9
    assert ("human", "processbench_f1") in cells.index
    assert cells.loc[("pass@4", "bon_average"), "value"] == 70.0 and cells.loc[("pass@4", "bon_average"), "published"] == 74.7
    assert cells.loc[("maj@4", "bon_average"), "value"] == 40.0
    o1 = cells.loc[(O1_MINI_ROW, "processbench_f1")]
    assert np.isnan(o1["value"]) and o1["published"] == 87.9 and not o1["comparable"]
    assert (tmp_path / artifact_paths("fig1")["png"]).stat().st_size > 0


def test_preliminary_tables_name_their_stand_ins(tmp_path, monkeypatch):
    _policy_upstream(tmp_path, monkeypatch)
    t1 = _rule("table1", n=4)
    assert list(dict.fromkeys(t1["row"]))[:2] == ["pass@4", "maj@4"] and {"human", "mc_hard", "mc_soft"} <= set(t1["row"])
    assert t1.loc[(t1["row"] == "mc_hard") & (t1["column"] == "average"), "published"].iloc[0] == 65.5
    tex = (tmp_path / artifact_paths("table1")["tex"]).read_text()
    assert "INFERRED to be the 3M set" in tex and "mc\\_hard: mc\\_hard" in tex
    t2 = _rule("table2")
    assert t2.loc[(t2["row"] == "mc_soft") & (t2["column"] == "average/f1"), "published"].iloc[0] == 40.2


def test_benchmarks_mapped_to_one_paper_column_are_averaged_into_it():
    """config/paper.yaml maps the harness's gaokao_math_cloze and gaokao_math_qa to the paper's Chinese
    "GaoKao" column: that column is their unweighted mean, and the row's Avg. counts it once."""
    rows = [dict(prm="human", benchmark=b, metric="prm_product", n=8, accuracy=acc, ci_low=0, ci_high=1)
            for b, acc in (("cmath", .9), ("cn_middle_school24", .8), ("gaokao_math_cloze", .6), ("gaokao_math_qa", .7))]
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
