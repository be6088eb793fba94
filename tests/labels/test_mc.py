"""Monte Carlo labels: label rules (threshold, truncation, soft vs hard), the early-stopping
equivalence with the naive protocol under per-completion seeds, binary search, batching across
responses, and odd input (no steps, whitespace steps, one step, completions that never finish)."""
from fractions import Fraction

import pytest

from fakes import SeededCompleter, boxed_grade
from prm_lessons.labels import clean_steps, labels_from_first_error
from prm_lessons.labels.mc import LabelError, MCInput, Needs, decide, first_error, hard_labels, run_mc, soft_labels


def prompt_fn(q, prefix):
    return f"Q: {q}\nA: {prefix}"


def items(n=12, seed=0):
    """Responses with 1-5 steps; some carry a BAD step after which no completion can succeed."""
    import random

    rnd = random.Random(seed)
    out = []
    for i in range(n):
        n_steps = rnd.randint(1, 5)
        bad = rnd.choice([None, None] + list(range(n_steps)))
        steps = [("BAD step" if bad is not None and j == bad else f"step {j} of {i}") for j in range(n_steps)]
        out.append(MCInput(f"p-{i:03d}", i % 3, f"question {i}", "42", steps, correct=False))
    return out


def run(protocol, needs, k=8, round_size=1, engine=None, its=None, **kw):
    engine = engine or SeededCompleter()
    rows = run_mc(its or items(), engine, k=k, needs=needs, protocol=protocol, round_size=round_size, seed=3,
                  prompt_fn=prompt_fn, grade_fn=boxed_grade, **kw)
    return rows, engine


# -- label rules ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("s,n,k,t,expected", [
    (1, 1, 8, 0, True),            # first success decides t=0
    (0, 7, 8, 0, None),            # one completion left: still undecided
    (0, 8, 8, 0, False),
    (1, 8, 8, Fraction(1, 8), False),   # 1/8 is not > 1/8
    (2, 2, 8, Fraction(1, 8), True),
    (3, 4, 8, Fraction(1, 2), None),
    (0, 5, 8, Fraction(1, 2), False),   # at most 3 more: 3/8 ≤ 1/2
    (8, 8, 8, Fraction(7, 8), True),
    (7, 7, 8, Fraction(7, 8), None),
])
def test_decide(s, n, k, t, expected):
    assert decide(s, n, k, t) is expected


def test_hard_labels_threshold_and_truncation():
    s, n = [3, 1, 0, 4], [4, 4, 4, 4]
    assert hard_labels(s, n, 4, 0) == [1.0, 1.0, 0.0]          # steps after the first negative dropped
    assert hard_labels(s, n, 4, 0.25) == [1.0, 0.0]             # 1/4 is not > 1/4
    assert hard_labels(s, n, 4, 0.75) == [0.0]
    assert first_error(s, n, 4, 0) == 2
    assert first_error([4, 4], [4, 4], 4, 0) == -1
    assert first_error([], [], 4, 0) is None


def test_soft_labels_keep_values_up_to_first_zero():
    assert soft_labels([3, 1, 0, 4], [4, 4, 4, 4], 4) == [0.75, 0.25, 0.0]
    assert soft_labels([4, 2], [4, 4], 4) == [1.0, 0.5]
    with pytest.raises(LabelError, match="needs all K=4"):
        soft_labels([1], [1], 4)  # early-stopped counts cannot give soft labels


def test_undecided_label_is_a_clear_error():
    with pytest.raises(LabelError, match="p#0: MC hard label of step 0 at threshold 0.5"):
        hard_labels([1], [1], 8, 0.5, where="p#0")


def test_first_error_to_labels():
    assert labels_from_first_error(-1, 3) == [1.0, 1.0, 1.0]
    assert labels_from_first_error(1, 3) == [1.0, 0.0]
    assert labels_from_first_error(3, 3) is None and labels_from_first_error(None, 3) is None
    assert labels_from_first_error(-1, 0) is None


def test_clean_steps():
    assert clean_steps(["a", "  ", "", None, "b"]) == ["a", "b"]
    assert clean_steps(None) == []


# -- protocols -----------------------------------------------------------------------------------------

def test_early_stopping_equals_naive_at_threshold_zero_and_costs_less():
    naive, _ = run("naive", Needs.from_params({"thresholds": [0]}))
    early, eng = run("early", Needs.from_params({"thresholds": [0]}))
    for a, b in zip(naive, early):
        assert hard_labels(a["n_success"], a["n_total"], 8, 0) == hard_labels(b["n_success"], b["n_total"], 8, 0)
    assert sum(r["tokens_generated"] for r in early) < sum(r["tokens_generated"] for r in naive)


def test_early_stop_rolls_out_until_first_success_and_never_past_first_negative():
    early, _ = run("early", Needs.from_params({"thresholds": [0]}))
    for r in early:
        labels = hard_labels(r["n_success"], r["n_total"], 8, 0)
        for i, (s, n) in enumerate(zip(r["n_success"], r["n_total"])):
            if i < len(labels) - 1 or labels[-1] == 1.0:
                assert s == 1  # positive steps stop at their first success
            if i >= len(labels):
                assert n is None  # nothing rolled out after the first negative


@pytest.mark.parametrize("round_size", [1, 3, 8])
def test_several_thresholds_and_soft_equal_naive(round_size):
    needs = Needs.from_params({"thresholds": [0, 0.125, 0.5, 0.875], "soft": True})
    naive, _ = run("naive", needs)
    early, _ = run("early", needs, round_size=round_size)
    for a, b in zip(naive, early):
        for t in (0, 0.125, 0.5, 0.875):
            assert hard_labels(a["n_success"], a["n_total"], 8, t) == hard_labels(b["n_success"], b["n_total"], 8, t)
        assert soft_labels(a["n_success"], a["n_total"], 8) == soft_labels(b["n_success"], b["n_total"], 8)


def test_binary_search_finds_the_same_first_error_on_monotone_labels():
    # monotone by construction: once the prefix holds BAD no completion succeeds; elsewhere p_ok = 1
    its = items(30, seed=5)
    eng = SeededCompleter(p_ok=1.0)
    naive, _ = run("naive", Needs(), its=its, engine=SeededCompleter(p_ok=1.0))
    binary, _ = run("binary", Needs(), its=its, engine=eng)
    for a, b in zip(naive, binary):
        assert first_error(a["n_success"], a["n_total"], 8, 0) == \
            first_error(b["n_success"], b["n_total"], 8, 0, b["inferred"])
    assert any(any(b["inferred"]) for b in binary)  # some steps were inferred, not rolled out


def test_binary_rejects_soft_labels():
    with pytest.raises(ValueError, match="binary"):
        run("binary", Needs.from_params({"thresholds": [0], "soft": True}))


def test_one_engine_call_per_round_batches_across_responses():
    _, eng = run("early", Needs(), round_size=2, last_step="rollout")  # every step of every response is rolled out
    assert len(eng.calls) <= 5 * 4  # at most steps × ceil(K / round_size) rounds
    assert eng.calls[0] == 2 * len(items())  # the first round holds every response


# -- odd input -----------------------------------------------------------------------------------------

def test_empty_and_whitespace_steps_and_one_step_responses():
    its = [MCInput("p-a", 0, "q", "42", [], False), MCInput("p-b", 0, "q", "42", ["  ", "\n"], False),
           MCInput("p-c", 0, "q", "42", ["only step"], False),
           MCInput("p-d", 0, "q", "42", ["one", " ", "two"], False)]
    rows, eng = run("early", Needs(), its=its, k=4)
    assert rows[0]["n_steps"] == 0 and rows[0]["n_success"] == [] and rows[0]["tokens_generated"] == 0
    assert rows[1]["n_steps"] == 0
    assert hard_labels(rows[0]["n_success"], rows[0]["n_total"], 4, 0) is None
    assert rows[2]["n_steps"] == 1 and rows[2]["n_total"][0] >= 1
    assert rows[3]["n_steps"] == 2  # the whitespace step is not a step


def test_no_responses_no_engine_call():
    rows, eng = run("early", Needs(), its=[MCInput("p", 0, "q", "1", [], None)])
    assert eng.calls == [] and rows[0]["n_completions"] == 0


def test_completions_that_never_finish_count_as_failures_and_are_reported():
    eng = SeededCompleter(never_finish=True)
    rows, _ = run("early", Needs(), engine=eng, k=4, last_step="rollout")  # one-step responses get completions too
    for r in rows:
        assert first_error(r["n_success"], r["n_total"], 4, 0) == 0
        assert r["n_truncated"] == r["n_completions"] == 4


def test_last_step_by_answer_needs_no_generation():
    its = [MCInput("p", 0, "q", "42", ["a", "b"], correct=True)]
    rows, eng = run("early", Needs(), its=its, engine=SeededCompleter(p_ok=1.0), k=4, last_step="answer")
    assert rows[0]["n_success"] == [1, 4] and rows[0]["n_total"] == [1, 4]
    assert sum(eng.calls) == 1


def test_bad_protocol_is_rejected():
    with pytest.raises(ValueError, match="mc.protocol"):
        run("greedy", Needs())


def test_with_soft_labels_the_thresholds_change_no_rollout():
    """Why plan.label_needs drops the thresholds when soft labels are needed: the early protocol then rolls
    out every step up to the first zero step K times, which decides every threshold, so the counts (and
    the engine's work) are the same for any set of thresholds."""
    one, e1 = run("early", Needs.from_params({"thresholds": [0], "soft": True}), round_size=3)
    many, e2 = run("early", Needs.from_params({"thresholds": [0, 0.25, 0.5, 0.75, 0.875], "soft": True}), round_size=3)
    assert [(r["n_success"], r["n_total"]) for r in one] == [(r["n_success"], r["n_total"]) for r in many]
    hard_only, _ = run("early", Needs.from_params({"thresholds": [0, 0.875], "soft": False}), round_size=3)
    assert [r["n_total"] for r in hard_only] != [r["n_total"] for r in one]  # without soft they do matter


# -- grading overlapped with generation (mc.lanes) -----------------------------------------------------

class _SlowGrader:
    """boxed_grade that takes `delay` seconds per call (a CPU grader's round)."""

    def __init__(self, delay=0.0):
        self.delay = delay

    def __call__(self, texts, golds):
        import time

        time.sleep(self.delay)
        return boxed_grade(texts, golds)


@pytest.mark.parametrize("protocol, needs, round_size", [
    ("early", Needs(), 1),
    ("early", Needs.from_params({"thresholds": [0, 0.5], "soft": True}), 3),
    ("naive", Needs.from_params({"thresholds": [0, 0.5], "soft": True}), 1),
    ("binary", Needs(), 2),
])
@pytest.mark.parametrize("lanes", [2, 3, 5])
def test_overlapped_grading_gives_the_sequential_labels(protocol, needs, round_size, lanes):
    """Every column (counts, outcomes in completion order, tokens) is the same with grading pipelined across
    responses as with the sequential rounds, for every protocol."""
    its = items(n=17, seed=4)
    seq, e1 = run(protocol, needs, round_size=round_size, its=its, keep_outcomes=True, last_step="rollout")
    lanes_rows, e2 = run(protocol, needs, round_size=round_size, its=its, keep_outcomes=True, last_step="rollout",
                         lanes=lanes)
    assert lanes_rows == seq
    assert sum(e2.calls) == sum(e1.calls)  # the same completions, in more, smaller calls
    assert len(e2.calls) > len(e1.calls)


def test_labels_do_not_depend_on_when_grading_finishes():
    """A grader that is slow (the engine runs ahead on the other lane) and one that is instant give the
    same labels and the same call sequence: the pipeline waits on specific calls, it never polls."""
    its = items(n=15, seed=9)
    rows = {}
    calls = {}
    for delay in (0.0, 0.02):
        eng = SeededCompleter()
        rows[delay] = run_mc(its, eng, k=4, needs=Needs(), protocol="early", seed=3, prompt_fn=prompt_fn,
                             grade_fn=_SlowGrader(delay), lanes=2, keep_outcomes=True)
        calls[delay] = eng.calls
    assert rows[0.0] == rows[0.02] and calls[0.0] == calls[0.02]


def test_a_grader_that_changes_the_order_of_its_flags_changes_the_labels():
    """The test above can fail: flags handed back in another order than the completions (what a
    completion-order mix-up in the pipeline would do) give other labels."""
    its = items(n=15, seed=9)
    common = dict(k=4, needs=Needs.from_params({"thresholds": [0], "soft": True}), protocol="early", seed=3,
                  prompt_fn=prompt_fn, lanes=2, keep_outcomes=True)
    good = run_mc(its, SeededCompleter(), grade_fn=_SlowGrader(), **common)
    shuffled = run_mc(its, SeededCompleter(),
                      grade_fn=lambda t, g: list(reversed(boxed_grade(t, g))), **common)
    assert good != shuffled


def test_overlap_timing_is_reported():
    """lanes 2: the engine waits less for grading than grading takes (the next call generates meanwhile);
    lanes 1: it waits for every round's grading."""
    import time

    class SlowCompleter(SeededCompleter):
        def generate(self, prompts, spec, seeds=None):
            time.sleep(0.03)
            return super().generate(prompts, spec, seeds)

    its = items(n=16, seed=2)
    timing = {1: {}, 2: {}}
    for lanes in (1, 2):
        run_mc(its, SlowCompleter(), k=4, needs=Needs(), protocol="early", seed=3, prompt_fn=prompt_fn,
               grade_fn=_SlowGrader(0.02), lanes=lanes, timing=timing[lanes], last_step="rollout")
    seq, par = timing[1], timing[2]
    assert seq["lanes"] == 1 and par["lanes"] == 2
    assert seq["wait_seconds"] >= seq["grade_seconds"] * 0.99  # sequential: grading is all waiting
    assert par["wait_seconds"] < par["grade_seconds"]
    for t in (seq, par):
        assert 0 <= t["engine_idle_share"] <= 1 and t["calls"] > 0
        assert t["wall_seconds"] >= t["generate_seconds"]


def test_grading_errors_surface_from_the_background_thread():
    def broken(texts, golds):
        raise RuntimeError("grader exploded")

    with pytest.raises(RuntimeError, match="grader exploded"):
        run_mc(items(), SeededCompleter(), k=4, needs=Needs(), seed=3, prompt_fn=prompt_fn, grade_fn=broken, lanes=2)


def test_bad_lanes_are_rejected():
    with pytest.raises(ValueError, match="mc.lanes"):
        run("early", Needs(), lanes=0)


def test_grade_fn_keeps_one_grading_pool_across_rounds(monkeypatch):
    """make_grade_fn starts its worker pool once (each worker start imports math-verify and SymPy, on the
    cores the engine generates on), hands it to every grade_many call, and close() stops it."""
    from prm_lessons.grading import pool as grading_pool
    from prm_lessons.labels import mc as mc_mod

    made, used = [], []

    class FakePool:
        def __init__(self, size):
            self.size, self.closed = size, False
            made.append(self)

        def close(self):
            self.closed = True

    def fake_grade_many(texts, golds, timeout_s, pool):
        used.append(pool)
        return [t.endswith(g) for t, g in zip(texts, golds)]

    monkeypatch.setattr(grading_pool, "GradingPool", FakePool)
    monkeypatch.setattr(grading_pool, "grade_many", fake_grade_many)
    grade = mc_mod.make_grade_fn(5.0, 3)
    assert made == []  # nothing started before the first round
    assert grade(["x 42", "x 7"], ["42", "42"]) == [True, False]
    assert grade(["y 42"], ["42"]) == [True]
    assert len(made) == 1 and made[0].size == 3 and used == [made[0], made[0]]
    grade.close()
    assert made[0].closed
