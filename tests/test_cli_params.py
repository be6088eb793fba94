"""`score --params` is read by the rows' strict JSON reader (tables.loads_strict): a key repeated in any
object of it, nesting past the bound and bytes that are not UTF-8 (lone surrogates in argv) are errors
naming the flag, before any row or model is read; json.loads kept the last key silently and ended deep
nesting in a RecursionError."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cli_run import run_cli
from prm_lessons.tables import MAX_JSON_DEPTH

pytest.importorskip("torch")  # `score` imports the scoring code before it reads --params

NAMES = st.text(alphabet="abcdefgh_", min_size=1, max_size=6)


def _score(tmp_path, params: str) -> tuple[int, str]:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"problem": "p", "steps": ["a"]}) + "\n")
    out = tmp_path / "out.jsonl"
    code, _, err = run_cli(["score", "--prm", str(tmp_path / "no-prm"), "--adapter", "token_classification",
                            "--input", str(rows), "--output", str(out), "--params", params])
    assert not out.exists()
    return code, err


@settings(max_examples=40, deadline=None)
@given(path=st.lists(NAMES, max_size=5), key=NAMES, first=st.integers(), second=st.integers())
def test_a_repeated_key_at_any_depth_is_refused(tmp_path_factory, path, key, first, second):
    inner = f"{{{json.dumps(key)}: {first}, {json.dumps(key)}: {second}}}"
    for name in reversed(path):
        inner = f"{{{json.dumps(name)}: {inner}}}"
    code, err = _score(tmp_path_factory.mktemp("p"), inner)
    assert code == 2 and f"--params: key {key!r} appears twice in one object" in err, err


@settings(max_examples=20, deadline=None)
@given(extra=st.integers(min_value=1, max_value=100_000), brackets=st.sampled_from(["[]", "{}"]))
def test_nesting_past_the_bound_is_refused(tmp_path_factory, extra, brackets):
    depth = MAX_JSON_DEPTH + extra
    body = '{"a": ' * depth + "1" + "}" * depth if brackets == "{}" else "[" * depth + "]" * depth
    code, err = _score(tmp_path_factory.mktemp("p"), body)
    assert code == 2 and "--params: nested more than" in err and "RecursionError" not in err, err[-300:]


@settings(max_examples=20, deadline=None)
@given(byte=st.integers(min_value=0x80, max_value=0xFF))
def test_bytes_that_are_not_utf8_are_refused(tmp_path_factory, byte):
    """argv holds an undecodable byte as a lone surrogate (U+DC80..U+DCFF): no tokenizer can take it."""
    code, err = _score(tmp_path_factory.mktemp("p"), '{"step_separator": "' + chr(0xDC00 + byte) + '"}')
    assert code == 2 and f"U+{0xDC00 + byte:04X}" in err and "no Unicode text" in err, err
