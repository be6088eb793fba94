"""Hostile data files (issue 17 item 3; review 2026-11 hostile-input.md section 2, defects 5, 10, 11):
every row is validated where it enters. Problem loaders (local / url files, Hub, reasoning-gym), the
ProcessBench loaders, and questions too long for the policy at sampling time. Each case asserts the
exact outcome: an error naming the file, line, row or id, or a documented keep / skip with its count."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from conftest import ROOT, tiny_tokenizer
from fakes import SAMPLING, SYSTEM, LimitedEngine, four_problems
from prm_lessons.config import ConfigError, load_config
from prm_lessons.data import problems as data_problems
from prm_lessons.data.problems import load_problems
from prm_lessons.data.processbench import load_processbench, load_processbench_cases
from prm_lessons.errors import InputError
from prm_lessons.generation.engine import render_chat
from prm_lessons.generation.sampling import sample_problems
from prm_lessons.rules.data import problems as rule_problems
from prm_lessons.tables import read_table, table_meta, write_table


def _jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _local(path: Path, **fields) -> dict:
    return {"source": "local", "path": str(path), **({"fields": fields} if fields else {})}


# ======================================================================================== problems

def test_repeated_source_ids_are_an_error_naming_each_id_and_its_rows(tmp_path):
    """Review: a repeated `fields.id` was silently kept (renumbered by row index)."""
    f = _jsonl(tmp_path / "p.jsonl", [{"id": "p1", "question": "1+1?", "answer": "2"},
                                      {"id": "p2", "question": "2+2?", "answer": "4"},
                                      {"id": "p1", "question": "3+3?", "answer": "6"},
                                      {"id": 7, "question": "4+4?", "answer": "8"},
                                      {"id": "7", "question": "5+5?", "answer": "10"}])
    with pytest.raises(InputError) as exc:
        load_problems("loc", _local(f, id="id"))
    assert exc.value.problems == [
        f"dataset 'loc' ({f}): id 'p1' (fields.id 'id') repeats in rows loc-00000, loc-00002; "
        "source ids must be unique",
        f"dataset 'loc' ({f}): id '7' (fields.id 'id') repeats in rows loc-00003, loc-00004; "
        "source ids must be unique"]


def test_repeated_id_in_a_hub_source_is_an_error(monkeypatch):
    import datasets

    rows = [{"uid": "a", "problem": "1+1?", "answer": "2"}, {"uid": "a", "problem": "2+2?", "answer": "4"}]
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **k: rows)
    with pytest.raises(InputError, match=r"^dataset 'h': id 'a' \(fields.id 'uid'\) repeats in rows h-00000, h-00001"):
        load_problems("h", {"source": "hub", "id": "org/set", "fields": {"question": "problem", "id": "uid"}})


def test_repeated_problems_are_kept_counted_and_recorded_in_the_table(tmp_path, caplog):
    """Duplicate rows without ids: kept as the source has them (the harness's mmlu_stem repeats 12 rows
    in its 3,018), but counted in the log and recorded in the problems table's metadata."""
    f = _jsonl(tmp_path / "p.jsonl", [{"question": "1+1?", "answer": "2"}, {"question": "2+2?", "answer": "4"},
                                      {"question": "1+1?", "answer": "2"}, {"question": "1+1?", "answer": "3"},
                                      {"question": "1+1?", "answer": "2"}])
    df = load_problems("loc", _local(f))
    assert len(df) == 5
    assert df.attrs["repeated"] == {"loc-00002": "loc-00000", "loc-00004": "loc-00000"}
    assert "3 of 5 problems" not in caplog.text and "2 of 5 problems repeat an earlier one" in caplog.text
    out = tmp_path / "problems.parquet"
    rule_problems(inputs={}, outputs={"problems": str(out)}, params={"spec": _local(f)},
                  wildcards={"dataset": "loc"}, threads=1)
    meta = table_meta(out)
    assert meta["n_repeated"] == 2 and meta["repeated"] == {"loc-00002": "loc-00000", "loc-00004": "loc-00000"}


@pytest.mark.parametrize("question, kind", [({"text": "hi"}, "object"), (["What", "is"], "array"),
                                            (42, "number"), (True, "boolean")])
def test_a_question_that_is_not_a_string_names_the_row(tmp_path, question, kind):
    """Review: a dict question was silently stringified to "{'text': 'hi'}"."""
    f = _jsonl(tmp_path / "p.jsonl", [{"uid": "ok", "q": "1+1?", "a": "2"}, {"uid": "u9", "q": question, "a": "2"}])
    with pytest.raises(InputError) as exc:
        load_problems("loc", _local(f, question="q", answer="a", id="uid"))
    assert exc.value.problems == [
        f"dataset 'loc' ({f}): row loc-00001 (id u9): question (field 'q') is a JSON {kind}, not a string"]


def test_every_bad_row_is_reported_one_line_each(tmp_path):
    f = _jsonl(tmp_path / "p.jsonl", [{"question": {"a": 1}, "answer": "2"}, {"question": "ok?", "answer": "1"},
                                      {"question": "  ", "answer": "2"}, {"question": "x?", "answer": None},
                                      {"question": 3.5, "answer": "2"}])
    with pytest.raises(InputError) as exc:
        load_problems("loc", _local(f))
    assert [p.split(": ", 1)[1] for p in exc.value.problems] == [
        "row loc-00000: question (field 'question') is a JSON object, not a string",
        "row loc-00002: empty question (field 'question')",
        "row loc-00003: missing answer (field 'answer')",
        "row loc-00004: question (field 'question') is a JSON number, not a string"]


def test_reasoning_gym_question_that_is_not_a_string_is_an_error(monkeypatch):
    rows = [{"source_id": "g:0:0", "question": "What is 1 + 1?", "answer": "2", "gold_steps": None},
            {"source_id": "g:0:1", "question": {"expr": "1 + 2"}, "answer": "3", "gold_steps": None}]
    monkeypatch.setattr(data_problems, "_reasoning_gym_rows", lambda spec: rows)
    with pytest.raises(InputError) as exc:
        load_problems("rg", {"source": "reasoning_gym", "generator": "g", "size": 2})
    assert exc.value.problems == ["dataset 'rg': row rg-00001 (g:0:1): question is a JSON object, not a string"]


# The file readers (tables.read_records, b9ac113) already name the file and line; these cases pin that
# the problem loader reads through them (the review's tracebacks came from data.py's own reader).

def test_a_jsonl_row_that_is_not_an_object_names_file_and_line(tmp_path):
    f = tmp_path / "p.jsonl"
    f.write_text('{"question": "1+1?", "answer": "2"}\n["question", "answer"]\n')
    with pytest.raises(ValueError, match=rf"^{f}: line 2 is a JSON list, not an object$"):
        load_problems("loc", _local(f))


def test_a_json_list_holding_a_string_names_the_element(tmp_path):
    f = tmp_path / "p.json"
    f.write_text(json.dumps([{"question": "1+1?", "answer": "2"}, "what is 2+2?"]))
    with pytest.raises(ValueError, match=rf"^{f}: element\(s\) 1 of the list is not an object"):
        load_problems("loc", _local(f))


@pytest.mark.parametrize("suffix, line", [(".jsonl", 2), (".json", 3)])  # .json: "[" is line 1
def test_non_utf8_bytes_name_file_and_line(tmp_path, suffix, line):
    f = tmp_path / f"p{suffix}"
    rows = [{"question": "1+1?", "answer": "2"}, {"question": "QQ", "answer": "4"}]
    text = ("".join(json.dumps(r) + "\n" for r in rows) if suffix == ".jsonl"
            else "[\n" + ",\n".join(json.dumps(r) for r in rows) + "\n]\n")
    f.write_bytes(text.encode().replace(b"QQ", b"Q\xffQ"))
    with pytest.raises(ValueError, match=rf"^{f}: line {line} is not UTF-8 \(byte 0xff"):
        load_problems("loc", _local(f))


# ==================================================================================== ProcessBench

def _pb_dir(tmp_path: Path, cases: list[dict], subset: str = "gsm8k") -> Path:
    d = tmp_path / "pb"
    d.mkdir(exist_ok=True)
    (d / f"{subset}.json").write_text(json.dumps(cases))
    return d


def _case(cid="gsm8k-0", **kw):
    return {"id": cid, "generator": "g", "problem": "P?", "steps": ["a", "b"], "final_answer_correct": False,
            "label": 1, **kw}


@pytest.mark.parametrize("label, why", [
    ("two", "label 'two' is a JSON string, not an integer"),
    (1.7, "label 1.7 is not an integer"),
    (True, "label True is a boolean, not an integer"),
    (None, "label None is a JSON null, not an integer"),
    (5, "label 5 outside -1..1"),
    (-2, "label -2 outside -1..1"),
])
def test_processbench_label_must_be_an_integer_in_range_naming_case_and_file(tmp_path, label, why):
    """Review: "two" gave a bare int() error, 1.7 was truncated to 1, true was read as 1."""
    d = _pb_dir(tmp_path, [_case("gsm8k-0", label=-1), _case("gsm8k-1", label=label)])
    with pytest.raises(InputError) as exc:
        load_processbench({"source": "local", "path": str(d), "subsets": ["gsm8k"]})
    assert exc.value.problems == [f"{d / 'gsm8k.json'}: ProcessBench case gsm8k-1: {why}"]


def test_processbench_integral_float_label_is_read_as_its_integer(tmp_path):
    d = _pb_dir(tmp_path, [_case("gsm8k-0", label=1.0), _case("gsm8k-1", label=-1, final_answer_correct=1)])
    df = load_processbench({"source": "local", "path": str(d), "subsets": ["gsm8k"]})
    assert df["label"].tolist() == [1, -1] and df["final_answer_correct"].tolist() == [False, True]
    # the same file through the CLI's loader, then one bad case: both name the case and the file
    (d / "gsm8k.json").write_text(json.dumps([_case("gsm8k-0", label=0.5)]))
    with pytest.raises(InputError, match=r"gsm8k\.json: ProcessBench case gsm8k-0: label 0\.5 is not an integer"):
        load_processbench_cases(str(d))


@pytest.mark.parametrize("field, value, why", [
    ("steps", ["a", {"text": "b"}], "steps[1] is a JSON object, not a string"),
    ("steps", ["a", 2], "steps[1] is a JSON number, not a string"),
    ("steps", "a", "steps is a JSON string, not a list of strings"),
    ("problem", {"text": "P"}, "problem is a JSON object, not a string"),
    ("final_answer_correct", "False", "final_answer_correct 'False' is a JSON string, not a boolean"),
    ("final_answer_correct", 2, "final_answer_correct 2 is a JSON number, not a boolean"),
    ("steps", [], "empty steps"), ("steps", ["a", " "], "empty steps[1]"), ("problem", "", "empty problem"),
])
def test_processbench_fields_are_checked_not_cast(tmp_path, field, value, why):
    """Steps, problem and final_answer_correct were str()/bool() cast (bool("False") is True), and empty
    ones accepted; each error names the file and the case."""
    d = _pb_dir(tmp_path, [_case("gsm8k-3", **{field: value})])
    with pytest.raises(InputError) as exc:
        load_processbench({"source": "local", "path": str(d), "subsets": ["gsm8k"]})
    assert exc.value.problems == [f"{d / 'gsm8k.json'}: ProcessBench case gsm8k-3: {why}"]


def test_processbench_duplicate_ids_are_all_named(tmp_path):
    d = _pb_dir(tmp_path, [_case("a"), _case("b"), _case("a"), _case("b"), _case("c")])
    _pb_dir(tmp_path, [_case("c")], subset="math")
    with pytest.raises(InputError) as exc:
        load_processbench({"source": "local", "path": str(d), "subsets": ["gsm8k", "math"]})
    assert exc.value.problems == ["duplicate ProcessBench case id a: 2 cases (subsets gsm8k)",
                                  "duplicate ProcessBench case id b: 2 cases (subsets gsm8k)",
                                  "duplicate ProcessBench case id c: 2 cases (subsets gsm8k, math)"]


def test_processbench_cases_table_is_checked_like_the_files(tmp_path):
    """A cases.parquet given to `eval processbench --data` was read unchecked (labels cast later)."""
    f = tmp_path / "cases.parquet"
    write_table(pd.DataFrame({"id": ["x-0", "x-1", "x-2"], "subset": "x", "label": [0, 1.5, 7.0]}), f, None)
    with pytest.raises(InputError) as exc:
        load_processbench_cases(str(f))
    assert exc.value.problems == [f"{f}: ProcessBench case x-1: label 1.5 is not an integer"]
    cases = pd.DataFrame({"id": ["x-0", "x-1"], "subset": "x", "generator": "", "problem": "P?",
                          "steps": [["a"], ["a", "b"]], "final_answer_correct": True, "label": [-1, 2]})
    write_table(cases, f, "processbench")
    with pytest.raises(InputError, match=r"^\S+cases\.parquet: ProcessBench case x-1: label 2 outside -1\.\.1$"):
        load_processbench_cases(str(f))


# =================================================================== over-long questions at sampling

def _tokens(question: str) -> int:
    tok = tiny_tokenizer()
    return len(tok.encode(render_chat(tok, SYSTEM, question)))


def test_long_question_error_names_the_problem_before_any_generation():
    probs = four_problems()
    n_long, limit = _tokens(probs["question"][2]), 256
    assert _tokens(probs["question"][0]) + 16 <= limit < n_long  # the case is what it claims to be
    engine = LimitedEngine(limit)
    with pytest.raises(InputError) as exc:
        sample_problems(engine, probs, n=2, sampling={**SAMPLING, "long_questions": "error"},
                        max_model_len=limit, model_name="smollm2")
    assert exc.value.problems == [
        "dataset 'd': 1 problem(s) too long for the policy: shorten or drop them, raise "
        "models.smollm2.max_model_len or lower sampling.max_tokens, or set sampling.long_questions: skip",
        f"dataset 'd': problem d-00002: prompt of {n_long} tokens + sampling.max_tokens 16 > "
        f"models.smollm2.max_model_len {limit}"]
    assert engine.prompts == []  # nothing generated: the error comes before the first engine call
    # without the check the engine kills the whole batch, naming no problem (the review's dead shard)
    with pytest.raises(ValueError, match="decoder prompt"):
        sample_problems(engine, probs, n=2, sampling=SAMPLING)


def test_long_question_error_counts_the_generation_budget():
    """A prompt that fits but leaves less than sampling.max_tokens is refused too (its responses would
    be cut short of the configured budget)."""
    probs = four_problems(long_at=())
    n = _tokens(probs["question"][0])
    with pytest.raises(InputError, match=rf"problem d-00000: prompt of {n} tokens \+ sampling.max_tokens 16 > "
                                         rf"models.policy.max_model_len {n + 15}"):
        sample_problems(LimitedEngine(n + 15), probs, n=1, sampling=SAMPLING,
                        max_model_len=n + 15)
    out = sample_problems(LimitedEngine(n + 16), probs, n=1, sampling=SAMPLING,
                          max_model_len=n + 16)
    assert len(out) == 4 and out.attrs["long_questions"]["n_skipped"] == 0


def test_long_question_skip_keeps_the_shard_alive_and_counts_the_skip(monkeypatch, tmp_path):
    """sampling.long_questions: skip through rules `sample`, `merge_samples` and `grade_samples`: the other
    problems are sampled, the skipped ids and their count are in every table's metadata and the job log."""
    from prm_lessons.generation import engine as generation
    from prm_lessons.rules.sampling import grade_samples, merge_samples, sample

    probs = four_problems(long_at=(0, 3))
    limit = 256
    engine = LimitedEngine(limit)
    monkeypatch.setattr(generation, "load_engine", lambda *a, **k: engine)
    pfile = tmp_path / "problems.parquet"
    write_table(probs, pfile, "problems", meta={"spec": {"answer_format": "plain"}})
    params = {"sampling": {**SAMPLING, "long_questions": "skip"},
              "model": {"name": "smollm2", "max_model_len": limit}, "model_dir": "x", "n": 2}
    shards = [tmp_path / f"shard{i}of2.parquet" for i in range(2)]
    for i, shard in enumerate(shards):
        sample(inputs={"problems": str(pfile)}, outputs={"responses": str(shard)}, params=params,
               wildcards={"shard": str(i), "nshards": "2"}, threads=1)
    first = read_table(shards[0], "responses")
    assert first["problem_id"].unique().tolist() == ["d-00001"] and len(first) == 2
    skipped = {"d-00000": _tokens(probs["question"][0]), "d-00003": _tokens(probs["question"][3])}
    assert table_meta(shards[0])["long_questions"] == {
        "policy": "skip", "max_model_len": limit, "max_tokens": 16, "n_skipped": 1,
        "skipped": {"d-00000": skipped["d-00000"]}}
    assert table_meta(shards[1])["long_questions"]["skipped"] == {"d-00003": skipped["d-00003"]}
    merged = tmp_path / "d.parquet"
    merge_samples(inputs={"shards": [str(s) for s in shards]}, outputs={"responses": str(merged)}, params={},
                  wildcards={"dataset": "d"}, threads=1)
    assert sorted(read_table(merged, "responses")["problem_id"].unique()) == ["d-00001", "d-00002"]
    assert table_meta(merged)["long_questions"] == {"n_skipped": 2, "skipped": skipped}
    graded = tmp_path / "graded.parquet"
    grade_samples(inputs={"responses": str(merged), "problems": str(pfile)}, outputs={"samples": str(graded)},
                  params={"grading": {"timeout_s": 5}}, wildcards={"dataset": "d"}, threads=1)
    assert len(read_table(graded, "samples")) == 4
    assert table_meta(graded)["long_questions"] == {"n_skipped": 2, "skipped": skipped}
    # every problem of a shard too long: an empty shard, not a dead job
    write_table(four_problems(long_at=(0, 1, 2, 3)), pfile, "problems", meta={"spec": {}})
    sample(inputs={"problems": str(pfile)}, outputs={"responses": str(shards[0])}, params=params,
           wildcards={"shard": "0", "nshards": "1"}, threads=1)
    assert len(read_table(shards[0], "responses")) == 0
    assert table_meta(shards[0])["long_questions"]["n_skipped"] == 4


def test_long_question_error_through_the_rule_writes_no_table(monkeypatch, tmp_path):
    from prm_lessons.generation import engine as generation
    from prm_lessons.rules.sampling import sample

    engine = LimitedEngine(256)
    monkeypatch.setattr(generation, "load_engine", lambda *a, **k: engine)
    pfile, out = tmp_path / "problems.parquet", tmp_path / "shard0of1.parquet"
    write_table(four_problems(), pfile, "problems", meta={"spec": {}})
    params = {"sampling": SAMPLING, "model": {"name": "smollm2", "max_model_len": 256},
              "model_dir": "x", "n": 2}  # long_questions absent: the default, error
    with pytest.raises(InputError, match=r"problem d-00002: prompt of \d+ tokens"):
        sample(inputs={"problems": str(pfile)}, outputs={"responses": str(out)}, params=params,
               wildcards={"shard": "0", "nshards": "1"}, threads=1)
    assert not out.exists() and engine.prompts == []


def test_long_questions_config_key():
    cfg = load_config(ROOT / "config/config.yaml")
    assert cfg["sampling"]["long_questions"] == "error"
    assert load_config(ROOT / "config/config.yaml",
                       overrides={"sampling": {"long_questions": "skip"}})["sampling"]["long_questions"] == "skip"
    with pytest.raises(ConfigError, match="sampling.long_questions"):
        load_config(ROOT / "config/config.yaml", overrides={"sampling": {"long_questions": "truncate"}})


# ======================================================================================== golds (by class)

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

# values that are not answers: non-finite numbers, booleans, null, objects, and lists that are empty or
# hold any of these or a blank string
NOT_SCALAR_ANSWERS = st.one_of(st.sampled_from([float("inf"), float("-inf"), float("nan")]), st.booleans(),
                               st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
BLANK = st.text(alphabet=" \t\n\r\u00a0\u3000", max_size=4)
NOT_ANSWERS = st.one_of(
    NOT_SCALAR_ANSWERS,
    st.just([]),
    st.lists(st.one_of(st.none(), BLANK, NOT_SCALAR_ANSWERS), min_size=1, max_size=3),
    st.tuples(st.text(min_size=1, max_size=3).filter(str.strip), st.one_of(st.none(), BLANK)).map(list),
    st.sampled_from(["nan", "NaN", "None", " null "]),
)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(gold=NOT_ANSWERS, fmt=st.sampled_from(["jsonl", "parquet"]))
def test_a_gold_that_is_not_an_answer_is_refused_with_its_row(tmp_path_factory, gold, fmt):
    """`[null]`, `["", ""]`, Infinity (a Parquet float or a Python row) loaded as golds and could be graded
    correct; each is an error naming the row."""
    d = tmp_path_factory.mktemp("gold")
    rows = [{"question": "1+1?", "answer": "2"}, {"question": "2+2?", "answer": gold}]
    if fmt == "jsonl":
        try:
            text = "".join(json.dumps(r, allow_nan=True) + "\n" for r in rows)
        except TypeError:
            return
        f = d / "p.jsonl"
        f.write_text(text)
    else:  # a number or boolean column as such (a list's JSON text is a text gold: not decoded, so not here)
        f = d / "p.parquet"
        if isinstance(gold, (dict, list)):
            return
        col = [type(gold)(2), gold] if isinstance(gold, (bool, float)) else ["2", gold]
        pd.DataFrame({"question": ["1+1?", "2+2?"], "answer": col}).to_parquet(f)
    with pytest.raises((InputError, ValueError)) as exc:
        load_problems("b", _local(f, answer_list=True))  # a list field: its items are checked as golds
    text = str(exc.value)
    assert "b-00001" in text or "line 2" in text, text


@pytest.mark.parametrize("gold", ["2", 2, 2.5, ["1", "2"], [3, "x"], "\\infty"])
def test_answers_of_every_shape_still_load(tmp_path, gold):
    f = _jsonl(tmp_path / "p.jsonl", [{"question": "q?", "answer": gold}])
    assert len(load_problems("b", _local(f, answer_list=isinstance(gold, list)))) == 1


@pytest.mark.parametrize("token", ["Infinity", "-Infinity", "NaN", "[Infinity]"])
def test_a_json_constant_gold_names_its_row(tmp_path, token):
    f = tmp_path / "p.jsonl"
    f.write_text('{"question": "q?", "answer": "1"}\n{"question": "q?", "answer": %s}\n' % token)
    with pytest.raises((InputError, ValueError), match=r"b-00001"):
        load_problems("b", _local(f))


def test_a_row_with_a_repeated_key_names_the_file_and_line(tmp_path):
    f = tmp_path / "p.jsonl"
    f.write_text('{"question": "q?", "answer": "1"}\n{"question": "q?", "answer": "1", "answer": "2"}\n')
    with pytest.raises(ValueError, match=r"line 2: key 'answer' appears twice"):
        load_problems("b", _local(f))
