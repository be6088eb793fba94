"""The three Best-of-N bias analyses (prm_lessons.evaluation.bias_analysis): definitions, edge cases, real data."""
import math

import pandas as pd
import pytest

from conftest import shared_data_dir
from prm_lessons.evaluation import bias_analysis as A


def test_wilson_interval():
    lo, hi = A.wilson_interval(5, 10)
    assert lo == pytest.approx(23.66, abs=0.01) and hi == pytest.approx(76.34, abs=0.01)
    assert A.wilson_interval(0, 10)[0] == 0.0
    assert A.wilson_interval(10, 10)[1] == pytest.approx(100.0)
    assert all(math.isnan(x) for x in A.wilson_interval(0, 0))


# ---------------------------------------------------------------- 1. unreliable policy (Figure 6)

def _samples(correct):
    return pd.DataFrame({"problem_id": [f"p{i // 2}" for i in range(len(correct))],
                         "sample_idx": [i % 2 for i in range(len(correct))], "correct": correct})


def test_policy_flaw_rate_counts_only_correct_answers_and_reports_unparsable():
    s = _samples([True, True, True, False, True, None])
    j = s[["problem_id", "sample_idx"]].copy()
    j["first_error"] = pd.array([-1, 2, None, 0, 1, 0], dtype="Int64")
    j["parsed"] = [True, True, False, True, True, True]
    j = j.drop(index=4)  # the 5th response (correct) has no verdict at all
    r = A.policy_flaw_rate(s, j, "ds")
    # correct: rows 0,1,2,4 (None counts as not correct); row 2 unparsable; row 4 unjudged
    assert (r["n_correct"], r["n_judged"], r["n_unparsed"], r["n_unjudged"], r["n_flawed"]) == (4, 2, 1, 1, 1)
    assert r["rate"] == pytest.approx(50.0)
    assert r["ci_low"] < 50 < r["ci_high"]


def test_policy_flaw_rate_bad_columns_name_them():
    with pytest.raises(ValueError, match="first_error"):
        A.policy_flaw_rate(_samples([True]), pd.DataFrame({"problem_id": ["p0"], "sample_idx": [0]}), "ds")


def test_flaw_rates_skips_dataset_without_judge_and_adds_processbench(caplog):
    s = _samples([True, True])
    j = s[["problem_id", "sample_idx"]].assign(first_error=[-1, 1], parsed=True)
    cases = pd.DataFrame({"id": list("abcd"), "subset": ["x"] * 4, "final_answer_correct": [True, True, True, False],
                          "label": [-1, 2, -1, 0]})
    out = A.flaw_rates({"a": s, "b": s}, {"a": j}, cases)
    assert list(out["source"]) == ["policy_judge", "processbench_annotation"]
    assert out.iloc[1]["rate"] == pytest.approx(100 / 3)   # 1 flawed of 3 answer-correct cases
    assert "no judge labels for dataset 'b'" in caplog.text


def test_processbench_annotated_rates_on_real_data():
    """ProcessBench's own flawed-process rate among answer-correct cases: 3.5/18.8/32.2/51.8 %
    (research notes §3.1: 7/200, 94/500, 161/500, 259/500)."""
    frames = []
    for subset in ("gsm8k", "math", "olympiadbench", "omnimath"):
        d = pd.read_json(shared_data_dir("processbench", f"{subset}.json"))
        d["subset"] = subset
        frames.append(d)
    r = A.processbench_flaw_rates(pd.concat(frames)).set_index("dataset")
    assert r.loc[["gsm8k", "math", "olympiadbench", "omnimath"], "n_flawed"].tolist() == [7, 94, 161, 259]
    assert r.loc[["gsm8k", "math", "olympiadbench", "omnimath"], "rate"].round(1).tolist() == [3.5, 18.8, 32.2, 51.8]
    assert r.loc["gsm8k", "n_correct"] == 200


# ---------------------------------------------------------------- 2. PRM tolerance (Table 5)

def test_tolerance_accuracy_definition():
    df = pd.DataFrame({
        "id": range(8), "subset": ["a"] * 4 + ["b"] * 4,
        "label": [2, 1, -1, 0, 3, 3, 1, -1],
        "final_answer_correct": [True, True, True, False, True, True, True, True],
        "prediction": pd.array([2, -1, -1, 0, 3, None, 0, -1], dtype="Int64"),
    })
    t = A.tolerance_accuracy({"p": df}).set_index("subset")
    # a: cases 0,1 qualify (2 is label -1, 3 answer wrong) → 1/2; b: 4,5,6 → case 4 right, None wrong, 6 wrong → 1/3
    assert t.loc["a", "n"] == 2 and t.loc["a", "accuracy"] == pytest.approx(50.0)
    assert t.loc["b", "n"] == 3 and t.loc["b", "accuracy"] == pytest.approx(100 / 3)
    assert t.loc["average", "accuracy"] == pytest.approx((50 + 100 / 3) / 2)  # unweighted over subsets


def test_tolerance_skips_predictions_without_final_answer_flags(caplog):
    df = pd.DataFrame({"subset": ["a"], "label": [1], "final_answer_correct": [pd.NA], "prediction": [1]})
    assert A.tolerance_accuracy({"p": df}).empty
    assert "carry no final_answer_correct" in caplog.text
    with pytest.raises(ValueError, match="prediction"):
        A.tolerance_accuracy({"q": df.drop(columns="prediction")})


# ---------------------------------------------------------------- 3. where the minimum falls (Figure 8)

@pytest.mark.parametrize("scores,expected", [
    ([0.9, 0.8, 0.1], True), ([0.1, 0.8, 0.9], False), ([0.5], True), ([1.0, 1.0, 1.0], False),
    ([0.3, 0.3], False), ([], None), (None, None), ([0.5, float("nan")], None)])
def test_min_at_last(scores, expected):
    assert A.min_at_last(scores) is expected


def test_selection_follows_bon_rule_ties_to_lowest_sample_idx():
    df = pd.DataFrame({"problem_id": ["p"] * 3 + ["q"] * 2, "sample_idx": [2, 0, 1, 0, 1],
                       "step_scores": [[0.9, 0.1], [0.5, 0.5], [0.25], [0.5], [0.5]]})
    sel = A.selected_responses(df, "product").set_index("problem_id")
    assert sel.loc["p", "sample_idx"] == 0   # products 0.09, 0.25, 0.25 → tie between idx 0 and 1 → 0
    assert sel.loc["q", "sample_idx"] == 0
    assert A.selected_responses(df, "last").set_index("problem_id").loc["p", "sample_idx"] == 0
    assert A.selected_responses(df, "min", n=1).set_index("problem_id").loc["p", "sample_idx"] == 0


def test_min_at_last_shares_per_benchmark_and_pooled():
    a = pd.DataFrame({"problem_id": ["p", "q"], "sample_idx": [0, 0], "step_scores": [[0.9, 0.2], [0.2, 0.9]]})
    b = pd.DataFrame({"problem_id": ["r", "s"], "sample_idx": [0, 0], "step_scores": [[0.7], []]})
    out = A.min_at_last_shares({("prm", "a"): a, ("prm", "b"): b})
    out = out[out["population"] == "all"].set_index("benchmark")
    assert out.loc["a", "share"] == pytest.approx(50.0)
    assert out.loc["b", "n_scored"] == 1 and out.loc["b", "n_single_step"] == 1
    assert out.loc["all", "n_min_at_last"] == 2 and out.loc["all", "n_scored"] == 3
    assert out.loc["all", "share"] == pytest.approx(200 / 3)


def test_fig8_counts_all_responses_not_only_the_selected_one():
    # the paper's population is every Best-of-N response; selection favours high minima, so the two differ
    df = pd.DataFrame({"problem_id": ["p"] * 4 + ["q"] * 4, "sample_idx": [0, 1, 2, 3] * 2,
                       "step_scores": [[0.9, 0.9], [0.8, 0.1], [0.7, 0.2], [0.6, 0.3],
                                       [0.2, 0.9], [0.9, 0.05], [0.9, 0.1], [0.3, 0.4]]})
    out = A.min_at_last_shares({("prm", "x"): df}, "product").set_index(["benchmark", "population"])
    every, chosen = out.loc[("all", "all")], out.loc[("all", "selected")]
    assert every["n_responses"] == 8 and every["n_min_at_last"] == 5   # [0.9,0.9] and two rising ones are not
    assert every["share"] == pytest.approx(62.5)
    # selected (product): p → idx 0 (0.81; its last step only ties the minimum), q → idx 0 (0.18; minimum first)
    assert chosen["n_responses"] == 2 and chosen["n_min_at_last"] == 0 and chosen["share"] == 0.0
    # N = 2 keeps the first two responses of each problem: the prefix, as Best-of-2 sees them
    two = A.min_at_last_shares({("prm", "x"): df}, "product", n=2).set_index(["benchmark", "population"])
    assert two.loc[("all", "all"), "n_responses"] == 4 and two.loc[("all", "all"), "n_min_at_last"] == 2


def test_fig8_reports_final_steps_that_only_tie_the_minimum():
    df = pd.DataFrame({"problem_id": ["p", "q", "r"], "sample_idx": [0, 0, 0],
                       "step_scores": [[1.0, 1.0, 1.0], [0.5, 0.2, 0.2], [0.5, 0.2, 0.1]]})
    out = A.min_at_last_shares({("prm", "x"): df}).set_index(["benchmark", "population"])
    row = out.loc[("all", "all")]
    assert row["n_min_tied"] == 2 and row["n_min_at_last"] == 1   # ties are located at their first step
    assert A.min_tie([0.3]) is False and A.min_tie([0.2, 0.2]) is True and A.min_tie([0.1, 0.2]) is False


def test_named_inputs_skip_missing_files(tmp_path, caplog):
    f = tmp_path / "x.parquet"
    f.write_text("")
    got = A.named_inputs({"scores__a__b": str(f), "scores__c__d": str(tmp_path / "nope"), "bon": "x"}, "scores")
    assert got == {"a__b": str(f)}
    assert "does not exist" in caplog.text
