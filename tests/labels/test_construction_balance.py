"""The embedded ProcessBench-format set and the by-construction training labels carry no structural
shortcut: error positions spread over every step of solutions of every length (the answer step too),
erroneous and clean solutions of the same lengths, both generators, a keep-answer share; a rule that
sees only (subset, number of steps) stays far below what it scored on the old construction (0.51)."""
from __future__ import annotations

import itertools
import random
from collections import Counter

import pandas as pd
import pytest

from prm_lessons.data.problems import load_problems
from prm_lessons.data.processbench import build_constructed_processbench, constructed_balance, constructed_processbench
from prm_lessons.labels.construction import (
    CorruptionError,
    arithmetic_gold_steps,
    construction_plan,
    corrupt_solution,
    final_answer_text,
)
from prm_lessons.labels.human import construction_instances
from prm_lessons.metrics.processbench import processbench_metrics

ARITH = {"min_terms": 2, "max_terms": 4, "min_digits": 1, "max_digits": 1, "operators": ["+", "-", "*"],
         "allow_parentheses": False, "allow_negation": False}
CHAIN = {"min_terms": 2, "max_terms": 4, "min_digits": 1, "max_digits": 1}


def _spec(gen, size, seed):
    return {"source": "reasoning_gym", "generator": gen, "size": size, "seed": seed,
            "params": ARITH if gen == "basic_arithmetic" else CHAIN}


CON = {"n_per_subset": 200, "error_fraction": 0.5, "keep_answer_fraction": 0.3, "seed": 0,
       "subsets": {"arith": _spec("basic_arithmetic", 280, 2001), "chain_sum": _spec("chain_sum", 280, 2002)},
       "dev": {"n_per_subset": 60, "subsets": {"arith": _spec("basic_arithmetic", 90, 3001),
                                               "chain_sum": _spec("chain_sum", 90, 3002)}}}
TRAIN = {"train": _spec("basic_arithmetic", 40, 11)}


@pytest.fixture(scope="module")
def cases():
    return constructed_processbench(CON, TRAIN)


@pytest.mark.parametrize("expr,answer", [("3 + 4 - 2", "5"), ("2 * 3 + 4 - 1", "9"), ("7 - 5", "2")])
def test_error_placed_at_every_position_answer_step_included(expr, answer):
    gold = arithmetic_gold_steps(expr, answer)
    for pos in range(len(gold)):
        steps, err = corrupt_solution(gold, answer, 0, position=pos)
        assert err == pos and steps[:pos] == gold[:pos] and steps[pos] != gold[pos]
        assert final_answer_text(steps) != answer  # the error reaches the final answer
    last = len(gold) - 1
    with pytest.raises(CorruptionError, match="cannot keep the final answer"):
        corrupt_solution(gold, answer, 0, position=last, keep_final_answer=True)
    if last > 0:
        steps, err = corrupt_solution(gold, answer, 0, position=0, keep_final_answer=True)
        assert err == 0 and steps[0] != gold[0] and final_answer_text(steps) == answer
    with pytest.raises(CorruptionError, match="outside"):
        corrupt_solution(gold, answer, 0, position=len(gold))


# The default placement (position=None), recorded from the module before `position` existed (and
# checked identical to it on 2,688 reasoning-gym problems): other callers must not change.
PINNED = [
    ("3 + 4 - 2", "5", False, (["First, 3 + 4 = 0, so the expression becomes 0 - 2.", "Finally, 0 - 2 = -2.",
                                "Therefore, the final answer is $\\boxed{-2}$."], 0)),
    ("3 + 4 - 2", "5", True, (["First, 3 + 4 = 0, so the expression becomes 7 - 2.", "Finally, 7 - 2 = 5.",
                               "Therefore, the final answer is $\\boxed{5}$."], 0)),
    ("2 * 3 + 4 - 1", "9", False, (["First, 2 * 3 = 6, so the expression becomes 6 + 4 - 1.",
                                    "Next, 6 + 4 = 10, so the expression becomes 10 - 1.", "Finally, 10 - 1 = 8.",
                                    "Therefore, the final answer is $\\boxed{8}$."], 2)),
    ("2 * 3 + 4 - 1", "9", True, (["First, 2 * 3 = 6, so the expression becomes 6 + 4 - 1.",
                                   "Next, 6 + 4 = 10, so the expression becomes 10 - 1.", "Finally, 10 - 1 = 8.",
                                   "Therefore, the final answer is $\\boxed{9}$."], 2)),
    ("17 - 5 * 3", "2", False, (["First, 5 * 3 = 12, so the expression becomes 17 - 12.", "Finally, 17 - 12 = 5.",
                                 "Therefore, the final answer is $\\boxed{5}$."], 0)),
    ("17 - 5 * 3", "2", True, (["First, 5 * 3 = 12, so the expression becomes 17 - 15.", "Finally, 17 - 15 = 2.",
                                "Therefore, the final answer is $\\boxed{2}$."], 0)),
]


@pytest.mark.parametrize("expr,answer,keep,expected", PINNED)
def test_default_placement_unchanged(expr, answer, keep, expected):
    gold = arithmetic_gold_steps(expr, answer)
    assert corrupt_solution(gold, answer, random.Random(7), keep_final_answer=keep) == expected


def test_plan_balances_positions_and_kinds_within_each_length():
    lengths = [2] * 40 + [3] * 60 + [4] * 80
    plan = construction_plan(lengths, 0.5, 0.3, random.Random(0))
    for n in (2, 3, 4):
        slots = [p for p, L in zip(plan, lengths) if L == n]
        err = [s for s in slots if s[0] != "clean"]
        assert len(err) == len(slots) // 2
        pos = Counter(p for _, p in err)
        assert set(pos) == set(range(n)) and max(pos.values()) - min(pos.values()) <= 1
        for p in range(n - 1):  # keep-answer share at every position before the last
            at = [k for k, q in err if q == p]
            assert abs(at.count("keep") - 0.3 * len(at)) <= 1
        assert all(k == "error" for k, q in err if q == n - 1)
    # shares apportioned over the whole plan: totals exact, every length within one slot of its half
    odd = [2] * 5 + [3] * 5 + [4] * 5
    plan = construction_plan(odd, 0.5, 0.3, random.Random(1))
    errs = [(k, p) for k, p in plan if k != "clean"]
    assert len(errs) == round(15 * 0.5)
    for n in (2, 3, 4):
        assert sum(1 for (k, _), L in zip(plan, odd) if L == n and k != "clean") in (2, 3)
    early = [k for (k, p), L in zip(plan, odd) if k != "clean" and p < L - 1]
    keeps = sum(k == "keep" for k, _ in errs)
    assert keeps == round(len(early) * 0.3) and keeps >= 1  # a small plan still gets its keeps
    assert plan == construction_plan(odd, 0.5, 0.3, random.Random(1))  # deterministic


def test_failed_slot_takes_the_next_problem_never_another_kind_or_position():
    """Problems where no error fits (no equation, a non-numeric answer) come first: their error slots go to
    the next problems of the same length, with the planned kind and position; clean slots keep them."""
    real = load_problems("c", _spec("chain_sum", 80, 5))
    real = real[real["gold_steps"].map(lambda s: s is not None and len(s) == 2)].reset_index(drop=True)
    stuck = pd.DataFrame([{"problem_id": f"stuck-{i}", "dataset": "c", "question": f"stuck {i}", "answer": "x",
                           "gold_steps": ["We look at it.", "Therefore, the final answer is $\\boxed{x}$."]}
                          for i in range(6)])
    problems = pd.concat([stuck, real], ignore_index=True)
    cases = build_constructed_processbench(problems, n_per_subset=12, seed=3, keep_answer_fraction=0.5)
    assert len(cases) == 12 and list(cases["id"]) == [f"c-{k}" for k in range(12)]
    plan = construction_plan([2] * 12, 0.5, 0.5, random.Random(3))
    got = [("clean" if lab < 0 else "keep" if fac else "error", lab)
           for lab, fac in zip(cases["label"], cases["final_answer_correct"])]
    assert got == plan
    used_stuck = cases[cases["problem_id"].str.startswith("stuck")]
    assert len(used_stuck) and (used_stuck["label"] == -1).all()
    assert cases["problem_id"].is_unique
    pd.testing.assert_frame_equal(cases, build_constructed_processbench(problems, 12, 3, keep_answer_fraction=0.5))


def test_constructed_set_is_balanced(cases):
    assert set(cases["subset"]) == {"arith", "chain_sum"}
    assert (cases["subset"].value_counts() == 200).all()
    bal = constructed_balance(cases)
    for (subset, n), g in bal.groupby(["subset", "n_steps"]):
        clean = int(g.loc[g["label"] == -1, "n"].sum())
        err = g[g["label"] >= 0]
        assert abs(clean - int(err["n"].sum())) <= 1, (subset, n)
        by_pos = err.groupby("label")["n"].sum()
        assert set(by_pos.index) == set(range(n)), (subset, n, by_pos.to_dict())
        assert by_pos.max() - by_pos.min() <= 1, (subset, n, by_pos.to_dict())
    keep = cases[(cases["label"] >= 0) & cases["final_answer_correct"]]
    early = cases[(cases["label"] >= 0) & (cases["label"] < cases["steps"].map(len) - 1)]
    assert 0.2 <= len(keep) / len(early) <= 0.4
    last = cases[cases["label"] == cases["steps"].map(len) - 1]
    assert len(last) and not last["final_answer_correct"].any()


def test_structure_alone_does_not_solve_it(cases):
    """The best (subset, n_steps) -> prediction rule, chosen on the evaluation cases themselves by brute
    force, stays far below the 0.51 of the old construction."""
    view = cases.assign(n_steps=cases["steps"].map(len))
    strata = sorted(set(zip(view["subset"], view["n_steps"])))
    best = 0.0
    for choice in itertools.product(*[range(-1, n) for _, n in strata]):
        rule = dict(zip(strata, choice))
        preds = {i: rule[(s, n)] for i, s, n in zip(view["id"], view["subset"], view["n_steps"])}
        best = max(best, processbench_metrics(cases, preds)["average_f1"])
    assert best < 0.45, best


def test_dev_split_is_disjoint_and_named(cases):
    dev = constructed_processbench(CON, TRAIN, split="dev")
    assert set(dev["problem"]).isdisjoint(cases["problem"])
    train_q = set(load_problems("train", TRAIN["train"])["question"])
    assert set(dev["problem"]).isdisjoint(train_q) and set(cases["problem"]).isdisjoint(train_q)
    assert dev["id"].str.startswith("dev-").all() and not set(dev["id"]) & set(cases["id"])
    with pytest.raises(ValueError, match="processbench.constructed.dev"):
        constructed_processbench({k: v for k, v in CON.items() if k != "dev"}, split="dev")


def test_construction_instances_spread_errors_and_keep_answers():
    problems = pd.concat([load_problems("h_a", _spec("basic_arithmetic", 120, 21)),
                          load_problems("h_c", _spec("chain_sum", 120, 22))], ignore_index=True)
    inst, counts = construction_instances(problems, 1, True, 0, keep_answer_fraction=0.3)
    corrupted = [i for i in inst if i["error_index"] >= 0]
    gold = [i for i in inst if i["error_index"] < 0]
    assert len(gold) >= len(corrupted) > 0.9 * len(gold)
    ds_of = dict(zip(problems["problem_id"], problems["dataset"]))
    made_from = {ds_of[i["instance_id"].rsplit("-", 1)[0]] for i in corrupted}
    assert made_from == {"h_a", "h_c"}  # both generators
    by_len: dict[int, Counter] = {}
    for key, n in counts["by_position"].items():
        length, pos, _ = key.split(":")
        by_len.setdefault(int(length), Counter())[int(pos)] += n
    for length, pos in by_len.items():
        assert set(pos) == set(range(length)), (length, pos)
        # cycled evenly; a failed placement (no error fits, or a duplicate) drops one (more problems have gold
        # steps since answers follow precedence)
        assert max(pos.values()) - min(pos.values()) <= 3, (length, pos)
    # the same read off the instances themselves: error index against the gold solution's length
    gold_len = {i["instance_id"].rsplit("-", 1)[0]: len(i["steps"]) for i in gold}
    seen = Counter((gold_len[i["instance_id"].rsplit("-", 1)[0]], i["error_index"]) for i in corrupted)
    assert seen == Counter({(L, p): n for L, c in by_len.items() for p, n in c.items()})
    keeps = sum(n for k, n in counts["by_position"].items() if k.endswith(":keep"))
    early = sum(n for k, n in counts["by_position"].items() if int(k.split(":")[1]) < int(k.split(":")[0]) - 1)
    assert 0.2 <= keeps / early <= 0.4
    for i in corrupted:  # truncated after the first error, labels [1]*e + [0]
        assert len(i["steps"]) == i["error_index"] + 1 and i["labels"] == [1.0] * i["error_index"] + [0.0]
