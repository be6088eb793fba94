"""maj@N's answer keys are computed once per distinct answer (hostile input, round 3, item 6): generated
problems with repeated, missing and look-alike answers give the same keys, winners and Best-of-N metrics
as keying every response on its own, with the normaliser called once per distinct (answer, units rule).
The speed itself: bench/maj_cache.py (no wall-clock bound here)."""
from __future__ import annotations

import json

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from prm_lessons.grading import answer_key
from prm_lessons.metrics import bon as m_bon
from prm_lessons.metrics import select
from prm_lessons.metrics import vote as m_vote


@pytest.fixture(scope="module")
def monkeypatch_session():
    """A MonkeyPatch for @given tests (the function-scoped one is not reset between examples)."""
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


ANSWERS = st.one_of(st.none(), st.sampled_from(["4", " 4 ", "4.", "$4$", "\\frac{1}{2}", "\\dfrac12", "5 cm",
                                                "5\\text{ cm}", "x=3", "1", "1.0", "infinity", ""]),
                    st.text(max_size=8))
PROBLEMS = st.lists(st.lists(ANSWERS, min_size=1, max_size=8), min_size=1, max_size=12)
UNCACHED = {"harness": lambda p, k: answer_key.harness_key(answer_key.harness_key(p, skip_unit=k), skip_unit=k),
            "normalized": lambda p, k: select.normalize_answer(p), "exact": lambda p, k: select.exact_key(p)}


@given(PROBLEMS, st.sampled_from(sorted(UNCACHED)), st.data())
def test_cached_keys_equal_per_response_keys_and_each_answer_is_keyed_once(monkeypatch_session, preds, grouping, data):
    keep = data.draw(st.lists(st.booleans(), min_size=len(preds), max_size=len(preds)))
    want = [[UNCACHED[grouping](p, k) for p in ps] for ps, k in zip(preds, keep)]
    calls = []
    name, module = {"harness": ("normalise_pred", m_vote), "normalized": ("normalize_answer", m_vote),
                    "exact": ("exact_key", m_vote)}[grouping]
    real = getattr(module, name)

    def counted(p, *a, **kw):
        calls.append((type(p), p, kw.get("keep_units", False) if grouping == "harness" else None))
        return real(p, *a, **kw)

    monkeypatch_session.setattr(module, name, counted)
    try:
        keys, _ = m_vote.vote_keys(preds, grouping, keep_units=keep)
    finally:
        monkeypatch_session.undo()
    assert keys == want
    assert [select.majority_winner(k) for k in keys] == [select.majority_winner(k) for k in want]
    distinct = {(type(p), p, k if grouping == "harness" else None) for ps, k in zip(preds, keep) for p in ps}
    assert len(calls) == len(distinct) and set(calls) == distinct


@given(PROBLEMS, st.sampled_from(["harness", "normalized", "exact"]))
def test_bon_metrics_are_those_of_uncached_keys(monkeypatch_session, preds, grouping):
    """The whole of bon_metrics with the cache and with every response keyed on its own: identical."""
    n = max(len(ps) for ps in preds)
    rows = [{"benchmark": "minerva_math" if q % 2 else "math", "problem_id": f"p{q}", "sample_idx": i,
             "pred": ps[i % len(ps)], "correct": (q + i) % 3 == 0, "step_scores": [0.1 + 0.8 * ((q * 7 + i) % 5) / 5]}
            for q, ps in enumerate(preds) for i in range(n)]
    df = pd.DataFrame(rows)
    cached = m_bon.bon_metrics(df, ["product", "min"], maj_grouping=grouping, bootstrap=20, seed=1)
    monkeypatch_session.setattr(m_vote, "_memo_keys", lambda lists, keep, keyf: [
        [keyf(p, k) for p in ps] for ps, k in zip(lists, keep)])
    try:
        plain = m_bon.bon_metrics(df, ["product", "min"], maj_grouping=grouping, bootstrap=20, seed=1)
    finally:
        monkeypatch_session.undo()
    assert json.dumps(cached, sort_keys=True) == json.dumps(plain, sort_keys=True)


def test_look_alike_values_are_keyed_apart():
    """1, 1.0 and True are one dict key; as answers they are three."""
    keys, _ = m_vote.vote_keys([[1, 1.0, True, "1"]], "exact")
    assert keys == [["1", "1.0", "True", "1"]]
