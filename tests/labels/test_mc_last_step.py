"""The step that states the final answer is judged by that answer (mc.last_step, default "answer"): a wrong
final answer's step is negative even when every completion from it would reach the gold answer (the
laptop policy's "The answer is 2." with gold 5 got 1 success of 8 under `rollout`, so a positive label at
t=0); a correct final answer's step is positive."""
import pytest

from fakes import SeededCompleter, boxed_grade
from prm_lessons.labels.mc import MCInput, Needs, first_error, hard_labels, run_mc, soft_labels

STEPS = ["We add 2 and 3.", "2 + 3 = 5.", "The answer is 2."]


def label(correct, *, needs=Needs(), protocol="early", **kw):
    item = MCInput("p-000", 0, "What is 2 + 3?", "5", list(STEPS), correct=correct)
    engine = SeededCompleter(answer="5", p_ok=1.0)  # every completion from every step writes the gold answer
    rows = run_mc([item], engine, k=8, needs=needs, protocol=protocol, seed=0,
                  prompt_fn=lambda q, p: f"Q: {q}\nA: {p}", grade_fn=boxed_grade, **kw)
    return rows[0], engine


@pytest.mark.parametrize("protocol", ["early", "naive"])
def test_wrong_final_answer_step_is_negative_by_default(protocol):
    row, engine = label(False, protocol=protocol)
    s, n = row["n_success"], row["n_total"]
    assert s[-1] == 0 and n[-1] == 8  # no completion asked for the answer step: its label is the grade
    assert hard_labels(s, n, 8, 0) == [1.0, 1.0, 0.0]
    assert first_error(s, n, 8, 0) == 2
    if protocol == "naive":  # all K of every step: soft labels are readable
        assert soft_labels(s, n, 8) == [1.0, 1.0, 0.0]
    assert sum(engine.calls) == (2 if protocol == "early" else 16)  # steps 0 and 1 only


def test_correct_final_answer_step_is_positive_by_default():
    row, engine = label(True)
    assert row["n_success"][-1] == 8
    assert hard_labels(row["n_success"], row["n_total"], 8, 0) == [1.0, 1.0, 1.0]
    assert first_error(row["n_success"], row["n_total"], 8, 0) == -1


@pytest.mark.parametrize("correct", [True, False])
def test_kept_outcomes_of_the_answer_step_are_its_grade_k_times(correct):
    # the label audit reads every K' and threshold from the outcomes: the answer step's must be there too
    row, _ = label(correct, needs=Needs(soft=True), keep_outcomes=True)
    assert row["outcomes"][-1] == [int(correct)] * 8
    assert all(len(o) == 8 for o in row["outcomes"])


def test_rollout_labels_the_wrong_answer_step_by_its_completions():
    """What the default guards against: completing the answer step again rewards a completer that
    overwrites the stated wrong answer."""
    row, _ = label(False, last_step="rollout")
    assert hard_labels(row["n_success"], row["n_total"], 8, 0) == [1.0, 1.0, 1.0]


def test_ungraded_response_is_rolled_out():
    row, engine = label(None)
    assert row["n_success"][-1] == 1 and sum(engine.calls) == 3  # t=0 early: one success per step
