"""prm_lessons.scoring.score_file without a model: the row forms and their checks (one line per bad row,
naming it), and which adapter scores a directory (a trained PRM's prm.json, or the caller's --adapter).
The command end to end on real models: tests/test_cli_score.py."""
from __future__ import annotations

import json

import pytest

from prm_lessons.errors import InputError
from prm_lessons.scoring import score_file as SF


def test_both_row_forms_give_problem_and_steps():
    rows = [{"id": "x", "problem": "p", "steps": ["a", "b"]}, {"prompt": "q", "completions": ["c"], "labels": [True]},
            {"problem": "r", "steps": []}]
    assert SF.parse_rows(rows) == [("p", ["a", "b"]), ("q", ["c"]), ("r", [])]


@pytest.mark.parametrize("row,needle", [
    ({"problem": "p"}, "row 1: lacks field(s) ['steps']"),
    ({"prompt": "p", "completions": "a"}, "row 1: `completions` is a JSON string"),
    ({"problem": 3, "steps": ["a"]}, "row 1: `problem` is a JSON number"),
    ({"id": [1], "problem": "p", "steps": ["a"]}, "`id` is a JSON array"),
    ({"problem": "p", "steps": ["a"], "completions": ["a"]}, "has both"),
    ({"problem": "p", "steps": [None, None]}, "`steps[0]` is a JSON null, not a string (2 such steps)"),
])
def test_bad_row_names_it(row, needle):
    with pytest.raises(InputError) as e:
        SF.parse_rows([row])
    assert needle in str(e.value)


def test_every_bad_row_is_reported_and_empty_input_is_an_error():
    with pytest.raises(InputError) as e:
        SF.parse_rows([{"problem": "p", "steps": 1}, {"problem": "p", "steps": ["a"]}, {"steps": []}])
    assert [p.split(":")[0] for p in e.value.problems] == ["row 1", "row 3"]
    with pytest.raises(InputError, match="no rows"):
        SF.parse_rows([])


def test_adapter_of_a_directory(tmp_path):
    trained, released = tmp_path / "t", tmp_path / "r"
    trained.mkdir()
    released.mkdir()
    (trained / "prm.json").write_text("{}")
    (released / "config.json").write_text(json.dumps({"num_labels": 2}))
    assert SF.prm_spec(str(trained))["adapter"] == "trained"
    with pytest.raises(ValueError, match="scored with adapter trained"):
        SF.prm_spec(str(trained), "qwen_prm")
    with pytest.raises(ValueError, match="name its family with --adapter"):
        SF.prm_spec(str(released))
    with pytest.raises(ValueError, match="has no prm.json"):
        SF.prm_spec(str(released), "trained")
    with pytest.raises(ValueError, match="unknown"):
        SF.prm_spec(str(released), "qwen")
    assert SF.prm_spec(str(released), "qwen_prm", dtype="float32")["dtype"] == "float32"
    # token_classification's options are checked against the checkpoint's labels before it is loaded
    with pytest.raises(ValueError, match="--params.positive_label: 2 is not a label of this checkpoint"):
        SF.prm_spec(str(released), "token_classification", {"positive_label": 2})
    with pytest.raises(ValueError, match="--ref-model"):
        SF.prm_spec(str(released), "eurus")


def test_declared_options_are_checked_before_loading(tmp_path):
    released = tmp_path / "r"
    released.mkdir()
    (released / "config.json").write_text(json.dumps({"num_labels": 2}))
    ok = {"model_class": "token_classification", "step_tag": "\n", "readout": {"class_index": 0}}
    assert SF.prm_spec(str(released), "declared", ok)["params"] == ok
    with pytest.raises(ValueError, match=r"--params\.readout\.class_index: 2 is not a label of this head"):
        SF.prm_spec(str(released), "declared", {**ok, "readout": {"class_index": 2}})
    with pytest.raises(ValueError, match=r"--params\.readout\.class_index: 2 .*num_labels 2"):  # the head built here
        SF.prm_spec(str(released), "declared", {"model_class": "process_reward", "prompt": "chat",
                                                "step_tag": "<extra_0>", "readout": {"class_index": 2}})
    with pytest.raises(ValueError, match=r"--params\.model_class: required"):
        SF.prm_spec(str(released), "declared", {"step_tag": "\n"})


def test_a_path_that_is_neither_a_directory_nor_a_hub_id(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a Hub id"):
        SF.resolve_prm(str(tmp_path / "a" / "b" / "c"))
    f = tmp_path / "f.txt"
    f.write_text("x")
    with pytest.raises(ValueError, match="not a directory"):
        SF.resolve_prm(str(f))


def test_parquet_rows_and_nan_fields(tmp_path):
    import numpy as np
    import pandas as pd

    from prm_lessons.tables import read_records

    path = tmp_path / "rows.parquet"
    pd.DataFrame({"id": ["a", "b"], "problem": ["p", "q"], "steps": [["s1", "s2"], ["t"]],
                  "extra": [1.5, np.nan]}).to_parquet(path)
    rows = read_records(path)
    assert SF.parse_rows(rows) == [("p", ["s1", "s2"]), ("q", ["t"])]
    out, counts = SF.output_rows(rows, SF.parse_rows(rows), [[0.5, float("nan")], [0.25]], outcome=False)
    assert counts["nonfinite"] == 1
    SF.write_jsonl(out, str(tmp_path / "o.jsonl"))
    got = [json.loads(line) for line in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert got[0]["step_scores"] == [0.5, None] and got[1]["extra"] is None and got[0]["steps"] == ["s1", "s2"]
