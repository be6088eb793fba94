"""PRMBench loader (prm_lessons.data.prmbench) on the project's fixture in the benchmark's format, and the
constructed stand-in."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from prm_lessons.data.prmbench import (
    CORRECT,
    STANDIN_CLASSES,
    build_standin,
    cases_from_records,
    is_standin,
    load_prmbench,
    prmbench_path,
)
from prm_lessons.data.sources import file_digests
from prm_lessons.errors import InputError
from prm_lessons.labels.construction import arithmetic_gold_steps

FIXTURE = Path(__file__).resolve().parents[1] / "support" / "fixtures" / "prmbench" / "prmbench_fixture.jsonl"


def _records():
    return [json.loads(line) for line in FIXTURE.read_text().splitlines()]


def test_fixture_cases_follow_the_repository_task():
    df = load_prmbench({"source": "local", "path": str(FIXTURE), "rows": 6})
    # six modified processes + the original process of the one `redundency` record
    assert len(df) == 7
    assert df["id"].is_unique
    correct = df[df["classification"] == CORRECT]
    assert correct["pair_id"].tolist() == ["redundency_fixture_0"]
    assert correct["error_steps"].iloc[0] == []
    circ = df[df["classification"] == "circular"].iloc[0]
    assert circ["error_steps"] == [0, 1]  # the file's 1-based steps 1 and 2
    assert df[df["classification"] == "multi_solutions"].iloc[0]["error_steps"] == []
    assert not is_standin(df)


def test_checksum_and_row_count_are_checked(tmp_path):
    good = file_digests(FIXTURE)["sha256"]
    load_prmbench({"source": "local", "path": str(FIXTURE), "sha256": good})
    with pytest.raises(ValueError, match="sha256"):
        load_prmbench({"source": "local", "path": str(FIXTURE), "sha256": "0" * 64})
    with pytest.raises(ValueError, match="6"):
        load_prmbench({"source": "local", "path": str(FIXTURE), "rows": 7})


def test_url_source_reads_the_pinned_copy(tmp_path):
    spec = {"source": "url", "url": "https://example.org/rev/prmbench_preview.jsonl"}
    assert prmbench_path(spec) == "resources/data/prmbench/prmbench.jsonl"
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(FIXTURE.read_bytes())
    assert len(load_prmbench(spec, file=copy)) == 7


def test_limit_keeps_the_first_records_of_each_classification(tmp_path):
    recs = _records()
    extra = dict(recs[2], idx="counterfactual_fixture_1")
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs + [extra]))
    df = load_prmbench({"source": "local", "path": str(path), "limit": 1})
    assert (df["classification"] == "counterfactual").sum() == 1


@pytest.mark.parametrize("bad, why", [
    ({"error_steps": [0]}, "not a step number"),      # 1-based: 0 is no step
    ({"error_steps": [9]}, "not a step number"),
    ({"error_steps": [True]}, "not a step number"),   # a boolean is refused, never cast
    ({"error_steps": "2"}, "not a list"),
    ({"modified_process": []}, "empty PRMBench case .*: modified_process"),
    ({"modified_process": "[\"a\", \"b\"]"}, "not a list of strings"),  # a string is never decoded
    ({"modified_process": ["a", 3]}, "modified_process\\[1\\] is a JSON"),
    ({"modified_question": " "}, "empty modified_question"),
])
def test_bad_records_are_refused_naming_the_case(bad, why):
    rec = {**_records()[2], **bad}
    with pytest.raises(InputError, match=why) as err:
        cases_from_records([rec], "f.jsonl")
    assert "counterfactual_fixture_0" in str(err.value)


def test_missing_fields_and_duplicates_are_refused():
    rec = _records()[2]
    with pytest.raises(InputError, match="missing field"):
        cases_from_records([{k: v for k, v in rec.items() if k != "error_steps"}])
    with pytest.raises(InputError, match="duplicate"):
        cases_from_records([rec, rec])


def _problems(n=12):
    rows = []
    for k in range(n):
        expr = f"{k + 2} * 3 + {k + 1}"
        answer = str((k + 2) * 3 + k + 1)
        rows.append({"problem_id": f"p{k}", "dataset": "arith", "question": f"What is {expr}?", "answer": answer,
                     "gold_steps": arithmetic_gold_steps(expr, answer)})
    return pd.DataFrame(rows)


def test_standin_pairs_a_gold_solution_with_its_corrupted_copy():
    df = build_standin(_problems(), n_cases=6, seed=3, keep_answer_fraction=0.5)
    assert is_standin(df)
    assert df["id"].is_unique
    assert set(df["classification"]) <= {CORRECT, *STANDIN_CLASSES}
    for pid, pair in df.groupby("pair_id"):
        assert len(pair) == 2, pid
        orig = pair[pair["classification"] == CORRECT].iloc[0]
        mod = pair[pair["classification"] != CORRECT].iloc[0]
        assert orig["error_steps"] == [] and len(mod["error_steps"]) == 1
        e = mod["error_steps"][0]
        assert mod["steps"][:e] == orig["steps"][:e] and mod["steps"][e] != orig["steps"][e]
    assert df.equals(build_standin(_problems(), n_cases=6, seed=3, keep_answer_fraction=0.5))  # deterministic
