"""The few-shot demonstrations file (a JSON list or the harness's examples.py, read as data) names itself
and the line in every error: a cut JSON file, a key repeated in it, Python that does not parse, a list that
is not a literal (a call, a name, an f-string, ...), bytes that are not UTF-8."""
from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from prm_lessons.generation.fewshot import read_demos

DEMOS = {"gaokao": [["1+1?", "2"], ["2+2?", "4"]], "mmlu_stem": [["x?", "y"]]}
JSON_TEXT = json.dumps(DEMOS)


def _file(tmp_path_factory, name: str, data: bytes):
    path = tmp_path_factory.mktemp("fs") / name
    path.write_bytes(data)
    return path


@given(cut=st.integers(min_value=0, max_value=len(JSON_TEXT) - 1))
def test_a_cut_json_file_names_the_file_and_line(tmp_path_factory, cut):
    path = _file(tmp_path_factory, "demos.json", JSON_TEXT[:cut].encode())
    with pytest.raises(ValueError, match=r"^" + str(path).replace("\\", "\\\\") + r": not valid JSON at line 1"):
        read_demos(path, "gaokao", 1)


@given(key=st.sampled_from(["gaokao", "mmlu_stem", "other"]), nested=st.booleans())
def test_a_repeated_key_is_refused(tmp_path_factory, key, nested):
    inner = f'{{"{key}": 1, "{key}": 2}}'
    text = ('{"gaokao": [["q", "a"]], "meta": ' + inner + "}") if nested else inner[:-1] + ', "gaokao": [["q", "a"]]}'
    path = _file(tmp_path_factory, "demos.json", text.encode())
    with pytest.raises(ValueError, match=f"{key!r} appears twice"):
        read_demos(path, "gaokao", 1)


# expressions that are no literal: the file is read as data, so each is an error naming its line
NOT_LITERAL = ['[("q", open("x").read())]', "[(q, a)]", '[("q", f"{a}")]', '[("q", "a" * 2)]', "[(1).real]",
               '[("q", lambda: 0)]', '[(x, y) for x, y in z]', '__import__("os").listdir()', '[("q", a.b)]']


@given(expr=st.sampled_from(NOT_LITERAL), before=st.integers(min_value=0, max_value=5))
def test_a_list_that_is_not_a_literal_names_the_file_and_line(tmp_path_factory, expr, before):
    text = "examples = {}\n" + "# a comment\n" * before + f'examples["gaokao"] = {expr}\n'
    path = _file(tmp_path_factory, "examples.py", text.encode())
    with pytest.raises(ValueError, match=rf"^{path}: line {before + 2}: examples\['gaokao'\] is not a literal"):
        read_demos(path, "gaokao", 1)


@given(broken=st.sampled_from(['examples["gaokao"] = [("q", "a")\n', 'examples["gaokao"] = [("q", "a\x00")]\n',
                                "def (\n", 'examples["gaokao"] = [("q", "a")]\n  x = 1\n']))
def test_python_that_does_not_parse_names_the_file(tmp_path_factory, broken):
    path = _file(tmp_path_factory, "examples.py", broken.encode())
    with pytest.raises(ValueError, match=rf"^{path}: line [\d?]+: not Python"):
        read_demos(path, "gaokao", 1)


@given(suffix=st.sampled_from([".json", ".py"]), bad=st.sampled_from([b"\xff\xfe", b"\xc3", b"\x80", b"\xed\xa0\x80"]))
def test_bytes_that_are_not_utf8_name_the_file(tmp_path_factory, suffix, bad):
    path = _file(tmp_path_factory, "demos" + suffix, b'{"gaokao": ' + bad)
    with pytest.raises(ValueError, match=rf"^{path}: byte \d+ is not UTF-8"):
        read_demos(path, "gaokao", 1)


def test_valid_files_read(tmp_path_factory):
    assert read_demos(_file(tmp_path_factory, "d.json", JSON_TEXT.encode()), "gaokao", 2) == [("1+1?", "2"),
                                                                                              ("2+2?", "4")]
    py = 'examples = {}\nexamples["gaokao"] = [("1+1?", "2"), ("2+2?", "4")]\n'
    assert read_demos(_file(tmp_path_factory, "e.py", py.encode()), "gaokao", 1) == [("1+1?", "2")]
