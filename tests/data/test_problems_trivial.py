"""exclude_trivial on reasoning_gym sets: which expressions are identity-trivial (readable without
computing: `7 * 1`, `2 + 9 - 9`, `3 + 7 * 0`), and the loader that skips them by continuing the
generator's index stream, deterministically and within TRIVIAL_RESERVE x size indices."""
import pytest

from prm_lessons.data.problems import TRIVIAL_RESERVE, identity_trivial, load_problems, reasoning_gym_index_range

ARITH = {"min_terms": 2, "max_terms": 4, "min_digits": 1, "max_digits": 1, "operators": ["+", "-", "*"],
         "allow_parentheses": False, "allow_negation": False}
CHAIN = {"min_terms": 2, "max_terms": 4, "min_digits": 1, "max_digits": 1}


@pytest.mark.parametrize("expression,trivial", [
    # an operand 1 in a product or as a divisor
    ("7 * 1", True), ("1 * 7", True), ("7 / 1", True), ("3 + 1 * 4", True), ("1 / 7", False),
    ("7 - 1", False), ("1 + 6", False), ("10 - 1", False), ("-1 * 3", False),
    # an operand 0 anywhere
    ("3 + 7 * 0", True), ("3 + 7 - 0", True), ("0 + 4", True), ("5 + 1 + 1 - 0", True), ("0 / 5", True),
    ("10 + 3", False),
    # additive terms that cancel
    ("2 + 9 - 9", True), ("9 - 9 + 2", True), ("5 - 3 + 3", True), ("2 * 3 + 4 - 2 * 3", True),
    ("3 + -3", True), ("-3 + 3", True),
    ("4 - 2 - 2", False), ("3 + 3", False), ("2 * 3 - 3 * 2", False), ("3 - -3", False), ("6 - 3 * 2", False),
    ("4 + 2", False), ("5 * 2 - 7 - 9", False),
    # parentheses: rules 1 and 2 by the operator beside the operand; no cancelling rule
    ("(2 + 3) * 1", True), ("(4 + 1) * 3", False), ("(2 - 2) * 5", False),
])
def test_identity_trivial(expression, trivial):
    assert identity_trivial(expression) is trivial


def test_unreadable_expression_is_an_error():
    with pytest.raises(ValueError, match="cannot read"):
        identity_trivial("2 ^ 3")


@pytest.mark.parametrize("generator,params", [("basic_arithmetic", ARITH), ("chain_sum", CHAIN)])
def test_exclude_trivial_keeps_size_problems_from_the_continued_stream(generator, params):
    import reasoning_gym

    size, seed = 24, 70
    spec = {"source": "reasoning_gym", "generator": generator, "size": size, "seed": seed, "params": params}
    plain = load_problems("s", spec)
    kept = load_problems("s", {**spec, "exclude_trivial": True})
    assert len(kept) == size and kept["problem_id"].tolist() == [f"s-{i:05d}" for i in range(size)]
    # without the key the set is what it always was: indices 0..size-1
    assert plain["source_id"].tolist() == [f"{generator}:{seed}:{i}" for i in range(size)]
    # the kept problems are the non-trivial items of the index stream, in order, none skipped wrongly
    stream = reasoning_gym.create_dataset(generator, size=TRIVIAL_RESERVE * size, seed=seed, **params)
    idx = [int(s.rsplit(":", 1)[1]) for s in kept["source_id"]]
    expected = [i for i in range(TRIVIAL_RESERVE * size) if not identity_trivial(stream[i]["metadata"]["expression"])]
    assert idx == expected[:size]
    assert idx[-1] >= size  # this stream has trivial items, so the set reached past index size-1
    assert kept["question"].tolist() == [stream[i]["question"] for i in idx]
    # deterministic, and a larger set extends a smaller one
    again = load_problems("s", {**spec, "exclude_trivial": True})
    assert again.equals(kept)
    more = load_problems("s", {**spec, "size": size + 5, "exclude_trivial": True})
    assert more["question"].tolist()[:size] == kept["question"].tolist()


def test_too_few_non_trivial_problems_in_the_reserve_is_an_error(monkeypatch):
    from prm_lessons.data import problems

    monkeypatch.setattr(problems, "identity_trivial", lambda e: not e.startswith("8"))
    spec = {"source": "reasoning_gym", "generator": "chain_sum", "size": 20, "seed": 0, "params": CHAIN,
            "exclude_trivial": True}
    with pytest.raises(ValueError, match=r"of 20 problems are not identity-trivial among the 80 generator indices"):
        load_problems("s", spec)


def test_exclude_trivial_needs_expressions(monkeypatch):
    import reasoning_gym

    monkeypatch.setattr(reasoning_gym, "create_dataset",
                        lambda name, size, seed, **kw: [{"question": "q", "answer": "1", "metadata": {}}] * size)
    spec = {"source": "reasoning_gym", "generator": "leg_counting", "size": 2, "exclude_trivial": True}
    with pytest.raises(ValueError, match="exclude_trivial needs items with metadata.expression"):
        load_problems("s", spec)
    assert len(load_problems("s", {**spec, "exclude_trivial": False})) == 2


def test_index_range():
    spec = {"source": "reasoning_gym", "generator": "chain_sum", "size": 16, "seed": 30000}
    assert reasoning_gym_index_range(spec) == range(30000, 30016)
    assert reasoning_gym_index_range({**spec, "exclude_trivial": True}) == range(30000, 30064)
    assert reasoning_gym_index_range({"size": 3}) == range(0, 3)
