"""The artifact rule functions (prm_lessons.rules.analysis) end to end on synthetic upstream tables:
provenance, missing inputs, the params each reads, policy and N rows, notes for what is not reproduced."""
import json

import numpy as np
import pandas as pd
import pytest

from analysis_synth import PRMS, analysis_params, rule_inputs, write_upstream
from prm_lessons.artifacts import cells as C
from prm_lessons.artifacts.defs.fig1_overview import O1_MINI_ROW
from prm_lessons.artifacts.registry import ARTIFACT_PARAMS, ARTIFACTS, artifact_paths
from prm_lessons.rules import analysis as rules

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
                  for pol, n, p, m in (("smollm2", 4, 0.7, 0.4), ("smollm2", 2, 0.01, 0.01),
                                       ("smollm2_t1", 4, 0.02, 0.02))
                  for b in ("arith", "chain_sum", "average")]).to_csv("results/tables/bon_baselines.csv", index=False)
    cells = _rule("fig1", n=4).set_index(["row", "column"])
    assert cells.loc[("human", "bon_average"), "value"] == pytest.approx(20.0)
    assert cells.loc[("human", "bon_average"), "published"] == 64.9
    assert ("human", "processbench_f1") in cells.index
    assert cells.loc[("pass@4", "bon_average"), "value"] == 70.0
    assert cells.loc[("pass@4", "bon_average"), "published"] == 74.7
    assert cells.loc[("maj@4", "bon_average"), "value"] == 40.0
    o1 = cells.loc[(O1_MINI_ROW, "processbench_f1")]
    assert np.isnan(o1["value"]) and o1["published"] == 87.9 and not o1["comparable"]
    assert (tmp_path / artifact_paths("fig1")["png"]).stat().st_size > 0


def test_preliminary_tables_name_their_stand_ins(tmp_path, monkeypatch):
    _policy_upstream(tmp_path, monkeypatch)
    t1 = _rule("table1", n=4)
    assert list(dict.fromkeys(t1["row"]))[:2] == ["pass@4", "maj@4"]
    assert {"human", "mc_hard", "mc_soft"} <= set(t1["row"])
    assert t1.loc[(t1["row"] == "mc_hard") & (t1["column"] == "average"), "published"].iloc[0] == 65.5
    tex = (tmp_path / artifact_paths("table1")["tex"]).read_text()
    assert "INFERRED to be the 3M set" in tex and "mc\\_hard: mc\\_hard" in tex
    t2 = _rule("table2")
    assert t2.loc[(t2["row"] == "mc_soft") & (t2["column"] == "average/f1"), "published"].iloc[0] == 40.2


def test_every_best_of_n_table_names_its_grader(tmp_path, monkeypatch):
    """Every table whose correctness comes from grading (the Best-of-N tables and Table 8's search) gets
    `grader` (grading.grader) and names it in its notes."""
    from prm_lessons.artifacts.registry import ARTIFACT_INPUTS

    graded = [aid for aid, a in ARTIFACTS.items()
              if a["kind"] == "table" and {"bon", "search"} & set(ARTIFACT_INPUTS[aid])]
    assert {"table1", "table3", "table6", "table8", "table9", "table10", "table11", "table13", "table15"} <= set(graded)
    assert [aid for aid in graded if "grader" not in ARTIFACT_PARAMS[aid]] == []
    _policy_upstream(tmp_path, monkeypatch)
    for aid in ("table6", "table3", "table13", "table1", "table9", "table14", "table10"):
        _rule(aid, n=4, grader="harness")
        tex = (tmp_path / artifact_paths(aid)["tex"]).read_text()
        assert "math\\_equal" in tex and "grading.grader: harness" in tex, aid
    _rule("table6", n=4, grader="math_verify")
    assert "(grading.grader: math\\_verify)" in (tmp_path / artifact_paths("table6")["tex"]).read_text()
