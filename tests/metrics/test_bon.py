"""Best-of-N metrics (prm_lessons.metrics.bon): tie rules, the definitions and the unweighted average,
first-N samples, the ORM column, and the harness's maj/rm/pass on real samples (../shared)."""
from __future__ import annotations

import json
import unicodedata
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import shared_data_dir
from metric_inputs import bon_rows
from prm_lessons.errors import InputError
from prm_lessons.metrics import bon as m_bon
from prm_lessons.metrics.rows import check_bon_rows


def test_best_of_n_ties_pick_lowest_sample_idx():
    # rows given out of order: sample 2 and sample 0 tie on product; sample 0 (wrong) must be chosen
    rows = bon_rows("b", "p1", ["1", "2", "3"], [False, True, True], [[0.5], [0.4], [0.5]])
    df = pd.DataFrame(rows[::-1])
    m = m_bon.bon_metrics(df, ["product"], bootstrap=0)
    assert m["benchmarks"]["b"]["prm_product"] == 0.0
    probs, _ = m_bon.bon_problem_table(df, ["product"])
    assert probs.loc[0, "prm_product_sample_idx"] == 0


def test_bon_metrics_definitions_and_unweighted_average():
    rows = (bon_rows("a", "p1", ["1", "2", "2"], [False, True, True], [[0.9, 0.9], [0.2], [0.95]])
            + bon_rows("a", "p2", ["4", "4", "5"], [True, True, False], [[0.1], [0.2], [0.3, 0.99]])
            + bon_rows("b", "q1", ["x", "y", "z"], [False, False, False], [[1.0], [1.0], [1.0]]))
    m = m_bon.bon_metrics(pd.DataFrame(rows), ["product", "min", "last"], bootstrap=200, seed=1)
    a = m["benchmarks"]["a"]
    assert a["n_problems"] == 2 and a["n"] == 3
    assert a["pass"] == 1.0 and a["maj"] == 1.0
    # p1: product 0.81 / 0.2 / 0.95 → s2 (correct); p2: 0.1 / 0.2 / 0.297 → s2 (wrong)
    assert a["prm_product"] == 0.5
    # last: p1 0.9/0.2/0.95 → s2 correct; p2 0.1/0.2/0.99 → s2 wrong
    assert a["prm_last"] == 0.5
    assert m["benchmarks"]["b"]["pass"] == 0.0
    assert m["average"]["pass"] == pytest.approx(0.5)  # unweighted over benchmarks, not problems
    for bench in ("a", "b"):
        for key in ("pass", "maj", "prm_product", "prm_min", "prm_last"):
            lo, hi = m["benchmarks"][bench]["ci"][key]
            assert lo <= m["benchmarks"][bench][key] <= hi
    again = m_bon.bon_metrics(pd.DataFrame(rows), ["product", "min", "last"], bootstrap=200, seed=1)
    assert again["average"]["ci"] == m["average"]["ci"]  # fixed seed → same intervals


def test_first_n_samples_and_n_mismatch_errors():
    rows = (bon_rows("a", "p1", ["1"] * 4, [True, False, False, False], [[0.1], [0.9], [0.9], [0.9]])
            + bon_rows("a", "p2", ["1"] * 4, [False] * 4, [[0.1]] * 4))
    m = m_bon.bon_metrics(pd.DataFrame(rows), ["last"], n=1, bootstrap=0)
    assert m["benchmarks"]["a"]["prm_last"] == 0.5 and m["benchmarks"]["a"]["n"] == 1
    short = rows + bon_rows("a", "p3", ["1"] * 2, [False] * 2, [[0.1]] * 2)
    with pytest.raises(ValueError, match=r"a/p3 \(2\)"):
        m_bon.bon_metrics(pd.DataFrame(short), ["last"], n=4, bootstrap=0)
    with pytest.raises(ValueError, match=r"benchmark 'a'.*p3 \(2\)"):
        m_bon.bon_metrics(pd.DataFrame(short), ["last"], bootstrap=0)
    dup = rows + rows[:1]
    with pytest.raises(ValueError, match="duplicate response"):
        m_bon.bon_metrics(pd.DataFrame(dup), ["last"], bootstrap=0)


def test_orm_column():
    rows = bon_rows("a", "p1", ["1", "2"], [False, True], [None, None])
    for r, s in zip(rows, [0.3, 2.5]):
        r["orm_score"] = s
    m = m_bon.bon_metrics(pd.DataFrame(rows), [], orm_column="orm_score", bootstrap=0)
    assert m["benchmarks"]["a"]["orm"] == 1.0 and "prm_product" not in m["benchmarks"]["a"]


def _check_bon(path: Path, k: int = 8) -> dict:
    """maj@k, rm@k (the harness's `pred_score`, an ORM) and pass@k recomputed the Qwen2.5-Math harness's way
    (rm_maj_eval.py: Counter.most_common on the exact `pred` strings, index of the first max score), and
    ours through the `prm-lessons eval bon` code path with maj_grouping=exact."""
    rows = [json.loads(line) for line in open(path)]
    maj = rm = pas = 0
    for r in rows:  # rm_maj_eval.py, verbatim in logic
        preds, score = r["pred"][:k], r["score"][:k]
        majority = Counter(preds).most_common(1)[0][0]
        maj += score[preds.index(majority)]
        rs = [s for sc in r["pred_score"][:k] for s in sc]
        rm += score[rs.index(max(rs))]
        pas += any(score)
    harness = {"maj": maj / len(rows), "orm": rm / len(rows), "pass": pas / len(rows)}
    flat = [{"benchmark": "math", "problem_id": str(r["idx"]), "sample_idx": j, "pred": r["pred"][j],
             "correct": bool(r["score"][j]), "step_scores": None, "orm_score": r["pred_score"][j][0]}
            for r in rows for j in range(len(r["pred"]))]
    m = m_bon.bon_metrics(pd.DataFrame(flat), [], n=k, maj_grouping="exact", orm_column="orm_score", bootstrap=1000)
    b = m["benchmarks"]["math"]
    return {"harness": harness, "ours": {"maj": b["maj"], "orm": b["orm"], "pass": b["pass"]},
            "ci": b["ci"], "n_problems": b["n_problems"]}


def test_harness_maj_rm_pass_on_real_samples():
    """Best-of-8 on math_cot_100_samples.jsonl (100 MATH problems × 8 responses from the Qwen2.5-Math
    harness): maj@8, rm@8 and pass@8 the harness's way equal ours."""
    res = _check_bon(shared_data_dir("bon", "math_cot_100_samples.jsonl"))
    assert res["ours"] == res["harness"]


# -- keys that print alike or as nothing, and the reserved name of the mean ---------------------------------

_HIDDEN = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) in ("Cc", "Cf")]


def _bon_rows(col: str, value) -> pd.DataFrame:
    rows = [{"benchmark": "b", "problem_id": "p", "sample_idx": i, "pred": "2", "correct": True, "step_scores": [0.5]}
            for i in range(2)]
    rows[1][col] = value
    return pd.DataFrame(rows)


@given(col=st.sampled_from(["benchmark", "problem_id"]), ch=st.sampled_from(_HIDDEN),
       text=st.sampled_from(["", "gsm8k", "12"]), at=st.integers(min_value=0, max_value=5))
def test_a_key_with_a_control_or_format_character_or_nothing_visible_is_refused(col, ch, text, at):
    value = text[:at] + ch + text[at:]
    with pytest.raises(InputError, match=rf"row 2 .*: {col} (is empty|holds the control or format character)"):
        check_bon_rows(_bon_rows(col, value))


def test_a_benchmark_named_like_the_mean_is_refused():
    with pytest.raises(InputError, match="benchmark 'average' is the name of the mean"):
        check_bon_rows(_bon_rows("benchmark", "average"))
