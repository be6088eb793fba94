"""Human labels: PRM800K conversion from the official jsonl format (fixtures/prm800k_sample.jsonl,
written for these tests), the neutral-rating policy, truncation, decontamination, the expansion of
rated alternatives with deduplication, and labels by
construction (gold solutions with injected errors, untouched gold solutions all positive)."""
import json

import pandas as pd
import pytest

from conftest import FIXTURES
from prm_lessons.labels.construction import arithmetic_gold_steps
from prm_lessons.labels.human import (
    construction_instances,
    convert_prm800k,
    convert_prm800k_record,
    decontaminate,
    deduplicate,
    normalize_question,
)
from prm_lessons.rules.labels import human_labels as rule_human
from prm_lessons.tables import iter_records, read_table, table_meta

FIXTURE = FIXTURES / "prm800k_sample.jsonl"


def records():
    return list(iter_records(FIXTURE))


def test_prm800k_default_policy_neutral_positive():
    inst, counts = convert_prm800k(records())
    assert counts == {"records": 7, "finish_reason": 2, "quality_control": 1, "no_steps": 0}
    by_q = {x["question"]: x for x in inst}
    first = by_q["What is $3 + 4 \\cdot 2$?"]
    # chosen neutral alternative, then the human-written step (+1), then the answer step
    assert first["steps"] == ["Multiplication comes first: $4 \\cdot 2 = 8$.", "Now I add 3.", "$3 + 8 = 11$.",
                              "# Answer\n\n11"]
    assert first["labels"] == [1.0, 1.0, 1.0, 1.0]
    # phase 2 "found_error": the step rated -1 ends the trajectory with a negative label
    second = by_q["How many positive divisors does 12 have?"]
    assert second["steps"][-1] == "There are 5 of them." and second["labels"] == [1.0, 1.0, 0.0]
    # an unrated step ends the trajectory before it
    assert by_q["What is $10 - 3$?"]["labels"] == [1.0]


def test_prm800k_neutral_negative_truncates_after_first_negative():
    inst, _ = convert_prm800k(records(), neutral="negative")
    by_q = {x["question"]: x for x in inst}
    assert by_q["What is $3 + 4 \\cdot 2$?"]["labels"] == [1.0, 0.0]
    assert by_q["How many positive divisors does 12 have?"]["labels"] == [1.0, 0.0]


def test_prm800k_keep_everything_when_asked():
    inst, counts = convert_prm800k(records(), keep_finish_reasons=(), skip_quality_control=False)
    assert counts["finish_reason"] == counts["quality_control"] == 0 and len(inst) == 7


def test_prm800k_bad_input_names_the_line():
    with pytest.raises(ValueError, match="line 1: not a PRM800K record"):
        convert_prm800k([{"foo": 1}])
    bad = records()[0]
    bad["label"]["steps"][0]["completions"][0]["rating"] = 5
    with pytest.raises(ValueError, match="rating must be -1, 0 or \\+1"):
        convert_prm800k_record(bad)
    with pytest.raises(ValueError, match="human.neutral"):
        convert_prm800k_record(records()[0], neutral="skip")


def test_normalize_and_decontaminate():
    assert normalize_question("What is the  greatest common factor of $20 !$ and $200,\\!000$?") == \
        normalize_question("what is the greatest common factor of 20! and 200,000?")
    inst, _ = convert_prm800k(records())
    kept, removed = decontaminate(inst, ["What is the greatest\ncommon factor of 20 ! and 200,000?", "unrelated"])
    assert removed == 1 and len(kept) == len(inst) - 1
    assert all("greatest common factor" not in x["question"] for x in kept)


def problems_table():
    exprs = ["3 + 4 * 5 - 6", "12 + 7", "8 * 9 - 10"]
    from prm_lessons.labels.construction import eval_arith

    return pd.DataFrame({"problem_id": [f"train-{i:05d}" for i in range(4)], "dataset": "train",
                         "question": [f"Calculate {e}." for e in exprs] + ["No steps here."],
                         "answer": [str(eval_arith(e)) for e in exprs] + ["1"],
                         "gold_steps": [arithmetic_gold_steps(e) for e in exprs] + [None]})


def test_labels_by_construction():
    inst, counts = construction_instances(problems_table(), corrupted_per_problem=1, include_gold=True, seed=0)
    assert counts["no_gold_steps"] == 1
    gold = [x for x in inst if x["error_index"] == -1]
    bad = [x for x in inst if x["error_index"] >= 0]
    assert len(gold) == 3 and len(bad) == 3
    for x in gold:
        assert x["labels"] == [1.0] * len(x["steps"])
    for x in bad:
        e = x["error_index"]
        assert x["labels"] == [1.0] * e + [0.0] and len(x["steps"]) == e + 1
        src = next(g for g in gold if g["question"] == x["question"])
        assert x["steps"][:e] == src["steps"][:e] and x["steps"][e] != src["steps"][e]
    again, _ = construction_instances(problems_table(), corrupted_per_problem=1, include_gold=True, seed=0)
    assert again == inst  # deterministic


def test_rule_human_construction_decontaminates_against_eval_sets(tmp_path):
    probs = problems_table()
    probs.to_parquet(tmp_path / "train.parquet")
    pd.DataFrame({"question": ["calculate 12 + 7."], "answer": ["19"]}).to_parquet(tmp_path / "bench.parquet")
    pd.DataFrame({"problem": ["unrelated"]}).to_parquet(tmp_path / "pb.parquet")
    cfg = {"source": "construction", "construction": {"corrupted_per_problem": 1, "include_gold": True, "seed": 0,
                                                      "keep_final_answer": False}}
    rule_human(inputs={"problems": str(tmp_path / "train.parquet"),
                       "eval_sets": [str(tmp_path / "bench.parquet"), str(tmp_path / "pb.parquet")]},
               outputs={"table": str(tmp_path / "human.parquet")}, params={"human": cfg}, wildcards={}, threads=1)
    df = read_table(tmp_path / "human.parquet", "trainset")
    meta = table_meta(tmp_path / "human.parquet")
    assert meta["summary"]["removed_by_decontamination"] == 2  # gold + corrupted copy of "12 + 7"
    assert len(df) == 4 and meta["n_candidates"] == 6
    assert not any("12 + 7" in q for q in df["question"])


def test_rule_human_prm800k_local(tmp_path):
    cfg = {"source": "prm800k", "neutral": "positive", "keep_finish_reasons": ["solution", "found_error"],
           "skip_quality_control": True,
           "prm800k": {"source": "local", "path": str(FIXTURE.parent), "phases": [1],
                       "file_pattern": "prm800k_sample.jsonl", "split": "train"}}
    rule_human(inputs={"eval_sets": []}, outputs={"table": str(tmp_path / "h.parquet")}, params={"human": cfg},
               wildcards={}, threads=1)
    df = read_table(tmp_path / "h.parquet", "trainset")
    assert len(df) == 4 and df["instance_id"].is_unique


def test_prm800k_expand_alternatives_counts_and_truncation():
    inst, counts = convert_prm800k(records(), expand="alternatives")
    assert counts["alternatives"] == 3 and len(inst) == 4 + 3
    alts = {x["instance_id"]: x for x in inst if "-s" in x["instance_id"]}
    # the chosen prefix + the alternative rated -1 at step 1 (the instance ends at it)
    a = alts["prm800k-0000000-s1c0"]
    assert a["steps"] == ["Multiplication comes first: $4 \\cdot 2 = 8$.", "So the sum is $3 + 8 = 12$."]
    assert a["labels"] == [1.0, 0.0]
    # the rated completion beside a human-written step, and beside phase 2's erroneous step (+1)
    assert alts["prm800k-0000000-s2c0"]["labels"] == [1.0, 1.0, 0.0]
    assert alts["prm800k-0000001-s2c1"]["steps"][-1] == "There are 6 of them."
    assert alts["prm800k-0000001-s2c1"]["labels"] == [1.0, 1.0, 1.0]
    # an unrated chosen step ends the trajectory and gives no alternative; `chosen` is unchanged
    assert not any(k.startswith("prm800k-0000006-") for k in alts)
    assert convert_prm800k(records())[0] == [x for x in inst if "-s" not in x["instance_id"]]
    # neutral negative: the trajectory stops at the neutral step 1, so step 2's alternatives are not reached
    neg, counts = convert_prm800k(records(), neutral="negative", expand="alternatives")
    assert counts["alternatives"] == 1 and [x["labels"] for x in neg if "-s" in x["instance_id"]] == [[1.0, 0.0]]
    with pytest.raises(ValueError, match="human.prm800k.expand"):
        convert_prm800k(records(), expand="all")


def test_prm800k_deduplicate():
    recs = records()
    again = json.loads(json.dumps(recs[5]))  # the same solution labelled twice
    other = json.loads(json.dumps(recs[5]))  # ... and once more, rated otherwise
    other["label"]["steps"][1]["completions"][0]["rating"] = -1
    inst, _ = convert_prm800k(recs + [again, other], expand="alternatives")
    kept, dup = deduplicate(inst)
    assert dup == {"duplicates": 2, "label_conflicts": 1} and len(kept) == len(inst) - 2
    assert len({(x["question"], tuple(x["steps"])) for x in kept}) == len(kept)
    assert kept == inst[: len(kept)]  # the first copy is kept, in order


def test_rule_human_prm800k_expanded_and_deduplicated_across_files(tmp_path):
    # both phases read the same file: every instance twice, kept once
    cfg = {"source": "prm800k", "neutral": "positive", "keep_finish_reasons": ["solution", "found_error"],
           "skip_quality_control": True,
           "prm800k": {"source": "local", "path": str(FIXTURE.parent), "phases": [1, 2], "expand": "alternatives",
                       "file_pattern": "prm800k_sample.jsonl", "split": "train"}}
    rule_human(inputs={"eval_sets": []}, outputs={"table": str(tmp_path / "h.parquet")}, params={"human": cfg},
               wildcards={}, threads=1)
    df = read_table(tmp_path / "h.parquet", "trainset")
    summary = table_meta(tmp_path / "h.parquet")["summary"]
    assert len(df) == 7 and summary["duplicates"] == 7 and summary["expand"] == "alternatives"
    assert summary["prm800k_sample.alternatives"] == 3


# -- PRM800K integers are checked, never cast (generated members of the class) ----------------------------

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

NOT_INTEGERS = st.one_of(st.floats(allow_nan=True, allow_infinity=True).filter(lambda x: not float(x).is_integer()),
                         st.booleans(), st.text(max_size=3), st.lists(st.integers(), max_size=2),
                         st.dictionaries(st.text(max_size=2), st.integers(), max_size=1))


@given(value=NOT_INTEGERS, field=st.sampled_from(["rating", "chosen_completion", "other_rating"]))
def test_prm800k_ratings_and_indices_that_are_not_integers_are_refused(value, field):
    """int(1.7) made a rating of 1.7 a positive label and a completion index of 0.5 the first completion."""
    rec = records()[0]
    step = rec["label"]["steps"][0]
    if field == "rating":
        step["completions"][step["chosen_completion"]]["rating"] = value
    elif field == "chosen_completion":
        step["chosen_completion"] = value
    else:  # an alternative's rating, read when the chosen one is absent or with expand
        step["chosen_completion"] = None
        step["human_completion"] = None
        step["completions"][0]["rating"] = value
    with pytest.raises(ValueError, match="is not an integer") as exc:
        convert_prm800k_record(rec, where="line 7")
    assert "line 7 step 0" in str(exc.value)


@pytest.mark.parametrize("steps", ["oops", [1], [{"completions": "x"}], [{"completions": [3]}]])
def test_prm800k_steps_of_the_wrong_shape_name_the_record(steps):
    rec = records()[0]
    rec["label"]["steps"] = steps
    with pytest.raises(ValueError, match="line 3"):
        convert_prm800k_record(rec, where="line 3")


def test_prm800k_integral_floats_are_integers():
    """A Parquet copy stores integers beside a missing value as floats: 1.0 is the rating 1."""
    rec = records()[0]
    step = rec["label"]["steps"][0]
    step["chosen_completion"] = float(step["chosen_completion"])
    assert convert_prm800k_record(rec) == convert_prm800k_record(records()[0])
