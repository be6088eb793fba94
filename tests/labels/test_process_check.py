"""The arithmetic process checker on hand-written steps and on constructed solutions (exact truth)."""
from __future__ import annotations

import random

import pytest

from prm_lessons.labels.arith import equations
from prm_lessons.labels.construction import arithmetic_gold_steps, corrupt_solution
from prm_lessons.labels.process_check import check_response, check_step


def test_correct_step_is_true():
    assert check_step("First, 7 * 8 = 56, so the expression becomes 56 + 3.").verdict is True


def test_wrong_product_is_false_and_named():
    chk = check_step("First, 7 * 8 = 54, so the expression becomes 54 + 3.")
    assert chk.verdict is False and chk.wrong == ("7 * 8 = 54",)


def test_nothing_checkable_is_none():
    assert check_step("Let us add the numbers from left to right.").verdict is None
    assert check_step("x = 5").verdict is None  # no operation on the left


def test_precedence_of_multiplication():
    assert check_step("3 + 4 * 2 = 11").verdict is True
    assert check_step("3 + 4 * 2 = 14").verdict is False  # left to right ignores precedence


def test_negative_numbers():
    assert check_step("Finally, -4 - 15 = -19.").verdict is True
    assert check_step("Finally, -4 - 15 = -11.").verdict is False
    assert check_step("So 3 - 9 = -6 and -6 * -2 = 12.").verdict is True


def test_fractions_and_decimals():
    assert check_step("1/2 + 1/4 = 3/4").verdict is True
    assert check_step("1/2 + 1/4 = 2/6").verdict is False
    assert check_step("7 / 4 = 1.75").verdict is True
    assert check_step("2 / 3 = 0.67").verdict is True  # a decimal holds at its written precision
    assert check_step("2 / 3 = 0.76").verdict is False
    # the error injection reads a fraction's numerator only (token by token): unchanged behaviour
    assert equations("1/2 + 1/4 = 3/4")[0]["rhs_value"] == 3


def test_wrong_final_answer_contradicts_the_last_computed_value():
    steps = ["First, 2 + 3 = 5, so the expression becomes 5 * 4.", "Finally, 5 * 4 = 20.",
             "Therefore, the final answer is $\\boxed{24}$."]
    chk = check_response(steps)
    assert chk.verdicts == [True, True, False] and chk.first_error == 2
    steps[2] = "Therefore, the final answer is $\\boxed{20}$."
    assert check_response(steps).first_error == -1


def test_first_error_and_coverage():
    chk = check_response(["We compute step by step.", "2 + 2 = 5", "5 + 1 = 6", "\\boxed{6}"])
    assert chk.verdicts == [None, False, True, True]
    assert chk.first_error == 1 and chk.n_checkable == 3
    assert check_response(["Just a thought.", "Another one."]).first_error == -1


def _constructed(n: int, keep: bool, seed: int):
    """Corrupted solutions of random 2-4 term expressions: (steps, error index, the erroneous step's
    equations as the injection left them)."""
    rnd = random.Random(seed)
    out = []
    while len(out) < n:
        terms = [str(rnd.randint(1, 9)) for _ in range(rnd.randint(2, 4))]
        expr = terms[0] + "".join(f" {rnd.choice('+-*')} {t}" for t in terms[1:])
        gold = arithmetic_gold_steps(expr)
        try:
            steps, idx = corrupt_solution(gold, gold[-1].split("{")[1].split("}")[0], rnd, keep_final_answer=keep)
        except ValueError:
            continue
        out.append((gold, steps, idx))
    return out


@pytest.mark.parametrize("keep", [False, True])
def test_recall_on_injected_arithmetic_errors(keep):
    """Every injected miscalculation (the erroneous step writes a false equation) is found at its step; the
    only misses are operation swaps (+ for -, computed consistently), which no equation check can see."""
    cases = _constructed(150, keep, seed=7)
    n_arith = n_swap = 0
    for gold, steps, idx in cases:
        assert check_response(gold).first_error == -1  # no false alarm on gold
        chk = check_response(steps)
        if any(not e["holds"] for e in equations(steps[idx])):
            n_arith += 1
            assert chk.first_error == idx, (steps, idx, chk.verdicts)
        else:
            n_swap += 1
            assert all(e["holds"] for e in equations(steps[idx]))
            assert chk.verdicts[idx] is True
    assert n_arith > 100 and n_swap > 0  # both kinds occur, so both assertions ran
