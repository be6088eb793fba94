"""Labels by construction: worked solutions of arithmetic expressions and the injection of one real
error at a known step (prm_lessons.labels.construction)."""
from __future__ import annotations

import random

import pytest

from prm_lessons.data.problems import load_problems
from prm_lessons.labels.construction import (
    CorruptionError,
    _checkable_equations,
    arithmetic_gold_steps,
    corrupt_solution,
    eval_arith,
    final_answer_text,
)

ARITH = {"source": "reasoning_gym", "generator": "basic_arithmetic", "size": 12, "seed": 3,
         "params": {"min_terms": 2, "max_terms": 4, "min_digits": 1, "max_digits": 2}}
CHAIN = {"source": "reasoning_gym", "generator": "chain_sum", "size": 12, "seed": 4,
         "params": {"min_terms": 2, "max_terms": 4, "min_digits": 1, "max_digits": 2}}


# ---------------------------------------------------------------------------------------- gold steps

def test_arithmetic_gold_steps_one_step_per_operation_and_boxed_answer():
    steps = arithmetic_gold_steps("-( 32 / 8 ) - 15", "-19")
    assert steps == ["First, 32 / 8 = 4, so the expression becomes -4 - 15.",
                     "Finally, -4 - 15 = -19.",
                     "Therefore, the final answer is $\\boxed{-19}$."]
    # precedence: multiplication before the addition on its left
    steps = arithmetic_gold_steps("2 + 3 * 4", "14")
    assert steps[0].startswith("First, 3 * 4 = 12")
    assert len(steps) == 3


def test_arithmetic_gold_steps_every_step_is_a_true_equation():
    for expr in ["( -4 - -29 / 1 )", "-( 67 - -42 - -81 )", "3 * (4 + 5) - 2 / 1", "94 - 77 + 95"]:
        value = eval_arith(expr)
        steps = arithmetic_gold_steps(expr)
        for step in steps[:-1]:
            eqs = _checkable_equations(step)
            assert len(eqs) == 1, step  # each operation step holds one checkable equation
        assert final_answer_text(steps) == str(value.numerator)


def test_arithmetic_gold_steps_rejects_wrong_answer():
    with pytest.raises(ValueError, match="not the answer"):
        arithmetic_gold_steps("2 + 2", "5")


# ---------------------------------------------------------------------------------- error injection

def _errors_in(step: str) -> bool:
    """True when the step holds an equation whose sides differ (a visible miscalculation)."""
    import re
    for m in re.finditer(r"(-?\d+) ([-+*/]) (-?\d+) = (-?\d+(?:\.\d+)?)", step):
        a, op, b, c = m.groups()
        if eval_arith(f"{a} {op} {b}") != eval_arith(c):
            return True
    return False


@pytest.mark.parametrize("spec", [ARITH, CHAIN], ids=["basic_arithmetic", "chain_sum"])
def test_corrupt_solution_propagates_to_a_wrong_final_answer(spec):
    df = load_problems("t", spec)
    for seed, row in enumerate(df.itertuples()):
        gold = list(row.gold_steps)
        steps, k = corrupt_solution(gold, row.answer, random.Random(seed))
        assert len(steps) == len(gold)
        assert steps[:k] == gold[:k]                       # earlier steps untouched
        assert steps[k] != gold[k]                         # the error is at k
        final = final_answer_text(steps)
        assert eval_arith(final) != eval_arith(row.answer)  # propagated to the final answer
        # later steps carry the wrong value consistently: no further miscalculation after k
        assert not any(_errors_in(s) for s in steps[k + 1:]), steps


@pytest.mark.parametrize("spec", [ARITH, CHAIN], ids=["basic_arithmetic", "chain_sum"])
def test_corrupt_solution_keep_final_answer(spec):
    df = load_problems("t", spec)
    for seed, row in enumerate(df.itertuples()):
        gold = list(row.gold_steps)
        steps, k = corrupt_solution(gold, row.answer, seed, keep_final_answer=True)
        assert steps[:k] == gold[:k] and steps[k] != gold[k] and steps[k + 1:] == gold[k + 1:]
        assert final_answer_text(steps) == final_answer_text(gold)  # correct answer, flawed process


def test_corrupt_solution_step_is_really_wrong():
    """A miscalculation leaves a false equation; an operation swap computes the wrong operation."""
    gold = arithmetic_gold_steps("67 + 75 + 85", "227")
    kinds = set()
    for seed in range(60):
        steps, k = corrupt_solution(gold, "227", random.Random(seed))
        if _errors_in(steps[k]):
            kinds.add("miscalculation")
        else:
            assert " - " in steps[k].split("=")[0], steps[k]  # + became -: consistent but the wrong operation
            kinds.add("operation")
    assert kinds == {"miscalculation", "operation"}


def test_corrupt_solution_gsm_style_text_with_units():
    gold = ["James's youth club will pay 950 * 1/2 = €475 for his science fair.",
            "In total James has covered 475 + 70 = €545 for his science fair.",
            "Therefore, James needs 950 - 545 = €405 more.",
            "The final answer is $\\boxed{405}$."]
    for seed in range(10):
        steps, k = corrupt_solution(gold, "405", seed)
        assert steps[:k] == gold[:k]
        assert final_answer_text(steps) != "405"


def test_corrupt_solution_is_deterministic_and_accepts_numpy_rng():
    import numpy as np

    gold = arithmetic_gold_steps("12 + 30 - 7", "35")
    assert corrupt_solution(gold, "35", random.Random(5)) == corrupt_solution(gold, "35", random.Random(5))
    steps, k = corrupt_solution(gold, "35", np.random.default_rng(0))
    assert 0 <= k < len(gold)


def test_corrupt_solution_without_checkable_step_raises():
    with pytest.raises(CorruptionError):
        corrupt_solution(["Let $x$ be the number of apples.", "So $\\boxed{x}$."], "x", 0)
    with pytest.raises(ValueError):  # CorruptionError is a ValueError
        corrupt_solution([], "1", 0)
