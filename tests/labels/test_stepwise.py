"""TRL's stepwise-supervision format {prompt, completions, labels}: every malformed row is an error naming
the row (or, with `skip`, counted by id), labels cut after the first false step, rows without steps
counted, parquet input (arrow booleans), and the export back to the format (hard labels, soft labels with a
threshold) reading back to the same instances."""
import json
import sys
import types

import pandas as pd
import pytest

from prm_lessons.labels.math_shepherd import iter_rows
from prm_lessons.labels.stepwise import (
    MALFORMED_REASONS,
    StepwiseRowError,
    convert_stepwise,
    malformed_lines,
    stepwise_rows,
    to_stepwise,
    write_stepwise,
)

Q1 = "Janet has 16 eggs. She eats 3 and bakes with 4. How many are left?"
Q2 = "What is $2 + 3 \\cdot 4$?"
GOOD = [
    {"prompt": Q1, "completions": ["16 - 3 = 13.", "13 - 4 = 9.", "The answer is 9."], "labels": [True, True, True]},
    # TRL's PRM800K converter keeps the steps after a false one: cut after the first false
    {"prompt": Q2, "completions": ["2 + 3 = 5.", "5 * 4 = 20.", "The answer is 20."], "labels": [True, False, True],
     "extra": "ignored"},
    {"prompt": Q2, "completions": [], "labels": []},  # no steps: no instance, counted
]
BAD = {  # reason -> a row that breaks the format only that way
    "not_an_object": ["a", "list"],
    "missing_field": {"prompt": Q1, "completions": ["a."]},
    "prompt_not_text": {"prompt": [{"role": "user", "content": Q1}], "completions": ["a."], "labels": [True]},
    "completions_not_list": {"prompt": Q1, "completions": "a. b.", "labels": [True]},
    "labels_not_list": {"prompt": Q1, "completions": ["a."], "labels": True},
    "label_not_bool": {"prompt": Q1, "completions": ["a.", "b."], "labels": [1, 0]},
    "length_mismatch": {"prompt": Q1, "completions": ["a.", "b."], "labels": [True]},
    "empty_step": {"prompt": Q1, "completions": ["a.", "  "], "labels": [True, True]},
}


def test_rows_become_instances_cut_after_the_first_false_step():
    inst, report = convert_stepwise(GOOD, "mine")
    assert [x["instance_id"] for x in inst] == ["mine-0000000", "mine-0000001"]
    assert inst[0] == {"instance_id": "mine-0000000", "question": Q1, "steps": GOOD[0]["completions"],
                       "labels": [1.0, 1.0, 1.0]}
    assert inst[1]["steps"] == ["2 + 3 = 5.", "5 * 4 = 20."] and inst[1]["labels"] == [1.0, 0.0]
    assert report["rows"] == 3 and report["instances"] == 2 and report["truncated"] == 1
    assert report["no_steps"] == 1 and report["malformed"] == 0


@pytest.mark.parametrize("reason", sorted(BAD))
def test_a_malformed_row_is_an_error_naming_the_row(reason):
    rows = GOOD[:2] + [BAD[reason]]
    with pytest.raises(StepwiseRowError, match=r"mine: row 2 \(0-based, id mine-0000002\)") as err:
        convert_stepwise(rows, "mine")
    assert err.value.reason == reason and MALFORMED_REASONS[reason] in str(err.value)


def test_the_error_says_which_label_or_step():
    with pytest.raises(StepwiseRowError, match=r"labels\[0\] is 1, not a boolean"):
        convert_stepwise([BAD["label_not_bool"]], "x")
    with pytest.raises(StepwiseRowError, match="1 labels, 2 completions"):
        convert_stepwise([BAD["length_mismatch"]], "x")
    with pytest.raises(StepwiseRowError, match=r"empty completions\[1\]"):
        convert_stepwise([BAD["empty_step"]], "x")
    with pytest.raises(StepwiseRowError, match="missing: labels"):
        convert_stepwise([BAD["missing_field"]], "x")


def test_skip_counts_malformed_rows_by_reason_and_id():
    rows = list(GOOD) + [BAD[r] for r in sorted(BAD)]
    inst, report = convert_stepwise(rows, "mine", malformed="skip")
    assert len(inst) == 2 and report["malformed"] == len(BAD)
    assert report["malformed_ids"] == {r: [f"mine-{3 + i:07d}"] for i, r in enumerate(sorted(BAD))}
    lines = malformed_lines("mine", report)
    assert len(lines) == len(BAD) and any("mine-0000005" in x and "label is not a boolean" in x for x in lines)
    with pytest.raises(ValueError, match="malformed must be one of"):
        convert_stepwise(GOOD, "mine", malformed="ignore")


def test_limit_and_deduplicate():
    rows = [GOOD[0], GOOD[0], GOOD[1]]
    inst, report = convert_stepwise(rows, "d", dedupe=True)
    assert [x["instance_id"] for x in inst] == ["d-0000000", "d-0000002"] and report["duplicates"] == 1
    inst, report = convert_stepwise(rows, "d", limit=1)
    assert len(inst) == 1 and report["rows"] == 1


def test_parquet_and_jsonl_files_read_the_same(tmp_path):
    pd.DataFrame(GOOD[:2]).to_parquet(tmp_path / "d.parquet")  # arrow list<bool> columns
    lines = [json.dumps(r) for r in GOOD[:2]] + ["{not json"]
    (tmp_path / "d.jsonl").write_text("\n".join(lines) + "\n")
    from_parquet, _ = convert_stepwise(iter_rows(tmp_path / "d.parquet"), "f")
    assert from_parquet == convert_stepwise(GOOD[:2], "f")[0]
    with pytest.raises(StepwiseRowError, match="row 2 .*not an object"):  # the line that is not JSON
        convert_stepwise(iter_rows(tmp_path / "d.jsonl"), "f")


def _trainset(labels):
    return pd.DataFrame({"instance_id": [f"i{k}" for k in range(len(labels))],
                         "question": [Q1] * len(labels),
                         "steps": [[f"step {j}." for j in range(len(lab))] for lab in labels],
                         "labels": labels})


def test_export_hard_labels_as_booleans_and_read_back(tmp_path):
    df = _trainset([[1.0, 1.0], [1.0, 0.0], [0.0]])
    rows = to_stepwise(df)
    assert rows[1] == {"prompt": Q1, "completions": ["step 0.", "step 1."], "labels": [True, False]}
    assert all(isinstance(v, bool) for r in rows for v in r["labels"])
    for suffix in ("jsonl", "parquet"):
        write_stepwise(rows, tmp_path / f"x.{suffix}")
        back, _ = convert_stepwise(iter_rows(tmp_path / f"x.{suffix}"), "x")
        assert [(b["question"], b["steps"], b["labels"]) for b in back] == \
            [(q, list(s), list(lab)) for q, s, lab in zip(df["question"], df["steps"], df["labels"])]


def test_soft_labels_need_a_threshold():
    df = _trainset([[1.0, 0.5], [0.25]])
    with pytest.raises(ValueError, match="instance i0: soft label 0.5"):
        to_stepwise(df)
    assert [r["labels"] for r in to_stepwise(df, soft_threshold=0.0)] == [[True, True], [True]]
    assert [r["labels"] for r in to_stepwise(df, soft_threshold=0.5)] == [[True, False], [False]]


def test_export_refuses_other_suffixes(tmp_path):
    with pytest.raises(ValueError, match=r"\.jsonl or \.parquet"):
        write_stepwise([], tmp_path / "x.csv")


def test_the_hub_source_loads_the_pinned_split_through_datasets(monkeypatch):
    """No network: a stand-in `datasets` module records the call (the id, config, split and the commit)."""
    calls = []

    def load_dataset(path, name=None, split=None, revision=None):
        calls.append((path, name, split, revision))
        return GOOD[:2]

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    spec = {"source": "hub", "id": "trl-lib/prm800k", "revision": "0" * 40, "config": None, "split": "test"}
    inst, _ = convert_stepwise(stepwise_rows(spec), "hub")
    assert calls == [("trl-lib/prm800k", None, "test", "0" * 40)] and len(inst) == 2
