"""Every loader and exporter reads its fields through the checked readers (prm_lessons.fields): each value
shape of tests/test_fields.py (object, numbers, null, NaN, bool, bracketed text, blank, "None") is put into
every field of every loader, in a row after a valid one; a shape the field's kind does not take must stop the
load with an error naming the file (or source) and the row, and one it takes must load as given (text is
text: "[0, 1]" is never decoded, null never becomes "None"). The loaders are enumerated in LOADERS; the field
kinds are the registry's, so the expectations follow the readers."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from field_shapes import SHAPES, declared
from prm_lessons import fields as F
from prm_lessons.data.problems import load_problems
from prm_lessons.data.processbench import load_processbench, load_processbench_cases
from prm_lessons.grading.rows import check_grade_rows
from prm_lessons.labels import annotation
from prm_lessons.labels.human import convert_prm800k, eval_questions
from prm_lessons.labels.math_shepherd import convert_math_shepherd
from prm_lessons.labels.stepwise import convert_stepwise, to_stepwise
from prm_lessons.rehearsal.math_shepherd_file import shepherd_row
from prm_lessons.scoring.score_file import parse_rows


def _jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r, allow_nan=True) + "\n" for r in rows))
    return path


def _problems(spec_extra: dict, field: str, valid: dict, fields: dict | None = None):
    def run(tmp: Path, value):
        f = _jsonl(tmp / "p.jsonl", [valid, {**valid, field: value}])
        spec = {"source": "local", "path": str(f), **spec_extra,
                "fields": {"question": "q", "answer": "a", **(fields or {})}}
        return load_problems("x", spec).iloc[1]
    return run, ("p.jsonl", ("x-00001", "line 2"))


def _pb(field: str):
    def run(tmp: Path, value):
        d = tmp / "pb"
        d.mkdir()
        ok = {"id": "c-0", "generator": "g", "problem": "P?", "steps": ["a", "b"], "final_answer_correct": False,
              "label": 1}
        (d / "gsm8k.json").write_text(json.dumps([ok, {**ok, "id": "c-1", field: value}], allow_nan=True))
        return load_processbench({"source": "local", "path": str(d), "subsets": ["gsm8k"]}).iloc[1]
    return run, ("gsm8k.json", "c-1" if field != "id" else "row 2")


def _cases_table(field: str):
    def run(tmp: Path, value):
        row = {"id": "c-1", "subset": "s", "generator": "g", "problem": "P?", "steps": [["a", "b"]],
               "final_answer_correct": False, "label": 1}
        f = tmp / "cases.parquet"
        pd.DataFrame({**row, field: [value]}).to_parquet(f)
        return load_processbench_cases(str(f)).iloc[0]
    return run, ("cases.parquet", "c-1" if field != "id" else "row 1")


def _trl(field: str):
    def run(tmp: Path, value):
        ok = {"prompt": "P?", "completions": ["a", "b"], "labels": [True, False]}
        out, _ = convert_stepwise([ok, {**ok, field: value}], "trl")
        return pd.Series(out[1])
    return run, ("trl", "row 1")


def _prm800k(path: tuple):
    def run(tmp: Path, value):
        rec = {"question": {"problem": "P?"}, "label": {"finish_reason": "solution", "steps": [
            {"completions": [{"text": "a", "rating": 1}], "chosen_completion": 0}]}}
        bad = json.loads(json.dumps(rec))
        node = bad
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value
        out, _ = convert_prm800k([rec, bad])
        return pd.Series({"question": out[1]["question"], "step": out[1]["steps"][0]})
    return run, ("prm800k", "line 2")


def _export(field: str):
    def run(tmp: Path, value):
        ok = {"instance_id": "i0", "question": "Q?", "steps": ["a"], "labels": [1.0]}
        df = pd.DataFrame([ok, {**ok, "instance_id": "i1", field: value}])
        rows = to_stepwise(df, where="t.parquet")
        return pd.Series({"question": rows[1]["prompt"], "steps": rows[1]["completions"]})
    return run, ("t.parquet", "instance i1")


def _grade_rows(answer_format: str = "plain"):
    def run(tmp: Path, value):
        ok = "B" if answer_format == "choice" else "2"
        rows = [{"response": "\\boxed{2}", "answer": ok}, {"id": "r1", "response": "\\boxed{2}", "answer": value}]
        check_grade_rows(rows, answer_format=answer_format)
        return pd.Series({"answer": rows[1]["answer"]})
    return run, ("row 2 (id r1)",)


def _score_rows(field: str):
    def run(tmp: Path, value):
        ok = {"id": "a", "problem": "P?", "steps": ["x", "y"]}
        out = parse_rows([ok, {**ok, "id": "b", field: value}])
        return pd.Series({"problem": out[1][0], "steps": out[1][1]})
    return run, ("row 2",)


def _eval_questions():
    def run(tmp: Path, value):
        f = tmp / "e.parquet"
        pd.DataFrame({"question": [value]}).to_parquet(f)
        return pd.Series({"question": eval_questions([str(f)])[0]})
    return run, ("e.parquet", "row 1")


VALID = {"q": "1+1?", "a": "2"}
CHOICE = {"q": "Pick", "a": 0, "opts": ["4", "5"]}
# (loader, field): (the run and what its error names, the field's reader kind, the output column, shapes the
# loader takes besides the kind's, and why)
LOADERS = {
    ("problems", "question"): (_problems({}, "q", VALID), "question", "question", set()),
    ("problems", "answer"): (_problems({}, "a", VALID), "gold", "answer", set()),
    ("problems", "answer list"): (_problems({}, "a", VALID, {"answer_list": True}), "gold_list", "answer", set()),
    ("problems", "choice answer"): (_problems({"answer_format": "choice"}, "a", CHOICE, {"choices": "opts"}),
                                    "choice_gold", "answer", set()),
    ("problems", "choices"): (_problems({"answer_format": "choice"}, "opts", CHOICE, {"choices": "opts"}),
                              "options", None, set()),
    # a worked solution may be a text (split on blank lines); none given is no gold steps
    ("problems", "gold steps"): (_problems({}, "s", {**VALID, "s": ["a"]}, {"gold_steps": "s"}), "steps",
                                 "gold_steps", {"text", "bracketed_text", "none_text", "null", "nan", "blank"}),
    ("problems", "id"): (_problems({}, "i", {**VALID, "i": "a"}, {"id": "i"}), "id", "source_id", set()),
    ("processbench", "problem"): (_pb("problem"), "question", "problem", set()),
    ("processbench", "steps"): (_pb("steps"), "steps", "steps", set()),
    ("processbench", "label"): (_pb("label"), "error_index", "label", set()),
    ("processbench", "final_answer_correct"): (_pb("final_answer_correct"), "flag", None, set()),
    ("processbench", "id"): (_pb("id"), "id", "id", set()),
    ("processbench", "generator"): (_pb("generator"), "question", "generator", {"null", "nan"}),  # none given
    ("cases.parquet", "problem"): (_cases_table("problem"), "question", "problem", set()),
    ("cases.parquet", "steps"): (_cases_table("steps"), "steps", "steps", set()),
    ("cases.parquet", "label"): (_cases_table("label"), "error_index", "label", set()),
    ("cases.parquet", "id"): (_cases_table("id"), "id", "id", set()),
    ("trl", "prompt"): (_trl("prompt"), "question", "question", set()),
    ("trl", "completions"): (_trl("completions"), "steps", "steps", set()),
    ("trl", "labels"): (_trl("labels"), "step_flags", None, set()),
    ("prm800k", "question"): (_prm800k(("question", "problem")), "question", "question", set()),
    # a blank text is kept (clean_steps drops it later); none ends the trajectory: no instance, not an error
    ("prm800k", "completion text"): (_prm800k(("label", "steps", 0, "completions", 0, "text")), "step", "step",
                                     {"blank"}),
    ("export-trl", "question"): (_export("question"), "question", "question", set()),
    ("export-trl", "steps"): (_export("steps"), "steps", "steps", set()),
    ("export-trl", "labels"): (_export("labels"), "step_labels", None, set()),
    ("eval questions", "question"): (_eval_questions(), "question", "question", set()),
    # the grade CLI's rows: a list is a multi-part answer there (its documented input)
    ("grade rows", "answer"): (_grade_rows(), "gold_list", "answer", set()),
    # the score CLI's rows ({id?, problem, steps}; TRL's form goes through the same checks)
    ("score rows", "problem"): (_score_rows("problem"), "question", "problem", set()),
    ("score rows", "steps"): (_score_rows("steps"), "steps", "steps", set()),
    ("score rows", "id"): (_score_rows("id"), "id", None, set()),
    # --answer-format choice: a letter A-E or its index, as the problems loader reads a choice set
    ("grade rows", "choice answer"): (_grade_rows("choice"), "choice_gold", "answer", set()),
}


@pytest.mark.parametrize("loader, field, shape", [(*k, s) for k in LOADERS for s in SHAPES])
def test_each_shape_in_each_field_of_each_loader(tmp_path, loader, field, shape):
    (run, names), kind, column, extra = LOADERS[(loader, field)]
    value = SHAPES[shape]
    if loader in ("problems", "processbench", "trl", "prm800k") and shape == "numpy_bool":
        value = False  # JSON has one boolean
    if loader == "prm800k" and field == "completion text" and shape in ("null",):
        with pytest.raises(IndexError):  # no step: the record gives no instance
            run(tmp_path, value)
        return
    if declared(kind, shape) or shape in extra:
        out = run(tmp_path, value)
        if column is not None and isinstance(value, str) and kind not in ("choice_gold",) and value.strip():
            got = out[column]
            got = got[0] if isinstance(got, list) else got
            assert got.strip() == value.strip()
        return
    with pytest.raises(ValueError) as exc:
        run(tmp_path, value)
    text = str(exc.value)
    assert all(any(alt in text for alt in ((n,) if isinstance(n, str) else n)) for n in names), text


# -- Math-Shepherd: a bad row is never an error; it is counted under its field's reason and named by id ---------
# field: (its reader kind, the malformed reason a refusal is counted under)
SHEPHERD_FIELDS = {"input": ("text", "missing_field"), "label": ("text", "missing_field"),
                   "task": ("optional_text", "bad_task")}
SHEPHERD_ROW = shepherd_row("What is 1 + 1?", ["1 + 1 = 2.", "The answer is: 2"], "+-", task="GSM8K")


@pytest.mark.parametrize("field, shape", [(f, s) for f in SHEPHERD_FIELDS for s in SHAPES])
def test_each_shape_in_each_field_of_math_shepherd(field, shape):
    kind, reason = SHEPHERD_FIELDS[field]
    value = SHAPES[shape]
    out, rep = convert_math_shepherd([SHEPHERD_ROW, {**SHEPHERD_ROW, field: value}, SHEPHERD_ROW])
    ids = [x["instance_id"] for x in out]
    assert rep["rows"] == 3 and ids[0] == "math_shepherd-0000000" and ids[-1] == "math_shepherd-0000002"  # goes on
    if not declared(kind, shape):
        assert rep["malformed_by_reason"] == {reason: 1} and len(out) == 2
        assert rep["malformed_ids"] == {reason: ["math_shepherd-0000001"]}
        return
    assert reason not in rep["malformed_by_reason"]  # refused, if at all, for what the text says
    if field == "task":
        assert out[1]["instance_id"] == "math_shepherd-0000001"
        assert out[1]["dataset"] == (value if isinstance(value, str) else None)  # null is no task, not "None"


@pytest.mark.parametrize("field", list(SHEPHERD_FIELDS))
def test_an_absent_math_shepherd_field(field):
    out, rep = convert_math_shepherd([{k: v for k, v in SHEPHERD_ROW.items() if k != field}])
    if field == "task":  # optional: no task
        assert len(out) == 1 and out[0]["dataset"] is None
    else:
        assert rep["malformed_ids"] == {"missing_field": ["math_shepherd-0000000"]}


# -- Figure 6's annotation sheet: a CSV read as text; a cell holds what a spreadsheet writes of a value ----------
# field: (its reader kind, the shapes whose written text the sheet takes: blank cells, and 1, True and False
# as marks, 1 as a step number; no shape's text is an exported id)
BLANK_CELLS = {"null", "nan", "blank"}
SHEET_FIELDS = {"id": ("id", set()), "process_flawed": ("mark", BLANK_CELLS | {"integer", "bool", "numpy_bool"}),
                "first_error_step": ("step_number", BLANK_CELLS | {"integer"})}


def _written(value) -> str:
    """A value as a spreadsheet writes its cell: its text, a missing value as an empty cell."""
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


@pytest.mark.parametrize("field, shape", [(f, s) for f in SHEET_FIELDS for s in SHAPES])
def test_each_shape_in_each_cell_of_the_annotation_sheet(tmp_path, field, shape):
    kind, takes = SHEET_FIELDS[field]
    samples = pd.DataFrame([{"problem_id": f"p{p}", "sample_idx": 0, "question": "Q?", "steps": ["a", "b"],
                             "correct": True} for p in range(2)])
    sheet = annotation.sample_sheet({"gsm8k": samples}, 2, 0, None)
    filled = sheet.astype(str).copy()
    filled.loc[0, ["process_flawed", "first_error_step"]] = ["yes", "1"]  # a valid row before it
    filled.loc[1, ["process_flawed", "first_error_step"]] = ["yes" if field == "first_error_step" else "no", ""]
    cell = _written(SHAPES[shape])
    filled.loc[1, field] = cell
    filled.to_csv(tmp_path / "filled.csv", index=False)
    assert F.READERS[kind].accepts <= takes | {"text", "bracketed_text", "integer"}  # the registry agrees
    if shape not in takes:
        with pytest.raises(ValueError) as exc:
            annotation.read_labels(tmp_path / "filled.csv", sheet)
        rid = cell.strip() if field == "id" else sheet["id"].iloc[1]
        assert f"row id {rid!r} (line 3): " in str(exc.value) and "1 bad row(s)" in str(exc.value)
        return
    got = annotation.read_labels(tmp_path / "filled.csv", sheet).to_dict("records")[1]
    if field == "process_flawed":
        flawed = {"1": True, "True": True, "False": False}.get(cell.strip())
        assert (got["flawed"] is None) if flawed is None else (got["flawed"] == flawed)
        assert got["labelled"] == bool(cell.strip())
    elif cell.strip():
        assert got["first_error_step"] == int(cell)
    else:
        assert pd.isna(got["first_error_step"]) and got["flawed"]


def test_the_loaders_cover_every_reader_kind():
    used = {kind for (_, kind, _, _) in LOADERS.values()}
    used |= {kind for kind, _ in SHEPHERD_FIELDS.values()} | {kind for kind, _ in SHEET_FIELDS.values()}
    assert used == set(F.READERS), sorted(set(F.READERS) - used)


def test_a_bracketed_gold_is_graded_as_its_text(tmp_path):
    f = _jsonl(tmp_path / "p.jsonl", [{"question": "Interval?", "answer": "[0,1]"}])
    assert load_problems("x", {"source": "local", "path": str(f)})["answer"][0] == "[0,1]"


def test_nan_gold_in_parquet_names_the_row(tmp_path):
    f = tmp_path / "p.parquet"
    pd.DataFrame({"question": ["a?", "b?"], "answer": [1.0, math.nan]}).to_parquet(f)
    with pytest.raises(ValueError, match="x-00001"):
        load_problems("x", {"source": "local", "path": str(f)})
