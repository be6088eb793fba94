"""The checked field readers (prm_lessons.fields), enumerated through their registry: every registered reader
gets every value shape (object, numbers, null, NaN, bool, bracketed text, blank, a list, …) as its whole value
and, for a list-valued kind, as an element; a shape it does not declare must raise FieldError naming `where`,
one it declares must come back as given (text unchanged: "[0, 1]" is never decoded). A public read_* function
that is not registered fails here, so a new reader cannot skip these checks."""
from __future__ import annotations

import decimal
import inspect
import math
import unicodedata

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from field_shapes import SHAPES
from field_shapes import declared as _declared
from prm_lessons import fields as F

WHERE = "data.jsonl line 7 (field 'x')"

def _call(reader: F.Reader, value):
    return reader.read(value, where=WHERE, **reader.context)


def _sample_item(reader: F.Reader):
    return SHAPES[sorted(reader.items)[0]]


CASES = [(kind, shape) for kind in sorted(F.READERS) for shape in SHAPES]
LIST_CASES = [(kind, shape) for kind in sorted(F.READERS) if F.READERS[kind].items for shape in SHAPES]


def test_every_public_reader_is_registered():
    public = {name for name, fn in inspect.getmembers(F, inspect.isfunction)
              if name.startswith("read_") and fn.__module__ == F.__name__}
    registered = {r.read.__name__ for r in F.READERS.values()}
    assert public == registered, f"not registered: {sorted(public - registered)}"
    assert {"question", "steps", "gold", "gold_list", "choice_gold", "id", "error_index"} <= set(F.READERS)


@pytest.mark.parametrize("kind, shape", CASES)
def test_each_shape_to_each_reader(kind, shape):
    reader, value = F.READERS[kind], SHAPES[shape]
    if not _declared(kind, shape):
        with pytest.raises(F.FieldError) as exc:
            _call(reader, value)
        assert str(exc.value).startswith(WHERE + ": ")
        return
    out = _call(reader, value)
    if reader.parses:
        assert not isinstance(out, str)  # a cell's meaning (a mark, a step number), never its text
    elif isinstance(value, str) and kind not in ("choice_gold",):
        assert out == value  # text as given, never decoded or stripped
    elif value is None or (isinstance(value, float) and math.isnan(value)):
        assert out is None  # an optional field's absence: never "None", never NaN
    elif isinstance(value, float) and not isinstance(out, str):
        assert out == value or (math.isnan(out) and math.isnan(value))


@pytest.mark.parametrize("kind", sorted(F.READERS))
def test_a_list_only_where_the_kind_takes_one(kind):
    reader = F.READERS[kind]
    value = [_sample_item(reader)] if reader.items else ["a text"]
    if "list" not in reader.accepts:
        with pytest.raises(F.FieldError, match=r"^data\.jsonl line 7"):
            _call(reader, value)
        with pytest.raises(F.FieldError, match=r"^data\.jsonl line 7"):
            _call(reader, np.array(value, dtype=object))  # a parquet list column
    else:
        assert list(_call(reader, value)) == value
        assert list(_call(reader, np.array(value, dtype=object))) == value


@pytest.mark.parametrize("kind, shape", LIST_CASES)
def test_each_shape_as_an_element(kind, shape):
    reader, value = F.READERS[kind], SHAPES[shape]
    if not _declared(kind, shape, items=True):
        with pytest.raises(F.FieldError) as exc:
            _call(reader, [value] if kind != "options" else ["x", value])
        assert str(exc.value).startswith(WHERE + ": ")
    else:
        out = _call(reader, [value])
        assert out[0] == value or out[0] == float(value)


# -- meaning, beyond the type --------------------------------------------------------------------------

@pytest.mark.parametrize("gold, options, letter", [
    (0, ["4", "5"], "A"), (1, ["4", "5"], "B"), ("b", ["4", "5"], "B"), (" C ", {"A": "x", "B": "y", "C": "z"}, "C"),
    (np.int64(2), ["1", "2", "3"], "C"), (2.0, ["1", "2", "3"], "C"),
])
def test_a_choice_gold_is_an_option(gold, options, letter):
    assert F.read_choice_gold(gold, F.read_options(options, WHERE), WHERE) == letter


@pytest.mark.parametrize("gold, options", [
    (2, ["4", "5"]), (-1, ["4", "5"]), ("C", ["4", "5"]), ("D", {"A": "x", "B": "y", "C": "z"}), ("AB", ["x", "y"]),
    (True, ["x", "y"]), (1.5, ["x", "y", "z"]), ("1", ["x", "y"]),
])
def test_a_choice_gold_outside_the_options_is_refused(gold, options):
    with pytest.raises(F.FieldError, match=r"^data\.jsonl line 7"):
        F.read_choice_gold(gold, options, WHERE)


@pytest.mark.parametrize("value", [["a", "b"], ["a"], [1, "x"]])
def test_a_list_gold_only_where_the_field_says_so(value):
    with pytest.raises(F.FieldError, match="answer_list"):
        F.read_gold(value, WHERE)
    assert F.read_gold(value, WHERE, list_ok=True) == value
    assert F.read_gold(str(value), WHERE) == str(value)  # its text is text


@pytest.mark.parametrize("value", [[], ["a", " "], ["a", None], ["a", ["b"]], ["a", True], ["nan"]])
def test_a_list_gold_holds_answers(value):
    with pytest.raises(F.FieldError):
        F.read_gold(value, WHERE, list_ok=True)


@pytest.mark.parametrize("label, n, ok", [(-1, 3, True), (2, 3, True), (3, 3, False), (-2, 3, False),
                                          (2.0, 3, True), (np.int64(0), 1, True), (0, 0, False)])
def test_an_error_index_is_a_step_or_none(label, n, ok):
    if ok:
        assert F.read_error_index(label, WHERE, n) == int(label)
    else:
        with pytest.raises(F.FieldError, match="outside"):
            F.read_error_index(label, WHERE, n)


@pytest.mark.parametrize("value, out", [(3, "3"), (3.0, "3"), (np.int64(7), "7"), ("x-1", "x-1"), (" 5 ", " 5 ")])
def test_an_id_is_text_or_an_integer(value, out):
    assert F.read_id(value, WHERE) == out


def test_blank_steps_are_dropped_or_refused():
    assert F.read_steps(["a", " ", "b"], WHERE, blank="drop") == ["a", "b"]
    with pytest.raises(F.FieldError, match=r"empty steps\[1\]"):
        F.read_steps(["a", " ", "b"], WHERE)
    with pytest.raises(F.FieldError, match="empty steps"):
        F.read_steps([], WHERE)
    assert F.read_steps([], WHERE, empty_ok=True) == []


@pytest.mark.parametrize("labels", [[0.5, 1.1], [-0.1], ["1"], [True], [float("nan")]])
def test_step_labels_are_numbers_in_0_1(labels):
    with pytest.raises(F.FieldError, match=r"labels\[\d\]"):
        F.read_step_labels(labels, WHERE)


@pytest.mark.parametrize("value, out", [("a", "a"), (" [1] ", " [1] "), (None, None), (float("nan"), None)])
def test_an_optional_text_is_text_or_absent(value, out):
    assert F.read_text(value, WHERE, optional=True) == out
    if out is None:
        with pytest.raises(F.FieldError, match="is null"):
            F.read_text(value, WHERE)


@pytest.mark.parametrize("value", [0, 1, True, {"t": "x"}, ["x"], " ", ""])
def test_an_optional_text_given_is_text(value):
    with pytest.raises(F.FieldError, match=r"^data\.jsonl line 7"):
        F.read_text(value, WHERE, optional=True)


@pytest.mark.parametrize("cell, mark", [("yes", True), (" Y ", True), ("1", True), ("TRUE", True), ("no", False),
                                        ("N", False), ("0", False), ("False", False), ("", None), (" \t", None)])
def test_a_mark_is_yes_no_or_blank(cell, mark):
    assert F.read_mark(cell, WHERE) is mark


@pytest.mark.parametrize("cell", ["maybe", "yes!", "2", "1.0", "t", "oui", "None", "nan", 1, 0, True, None])
def test_a_mark_is_refused_otherwise(cell):
    with pytest.raises(F.FieldError, match=r"^data\.jsonl line 7 \(field 'x'\): process_flawed"):
        F.read_mark(cell, WHERE)


@pytest.mark.parametrize("cell, n, step", [("1", 3, 1), (" 3 ", 3, 3), ("02", 3, 2), ("", 3, None), ("  ", 0, None),
                                           ("7", None, 7)])
def test_a_step_number_is_1_based_within_the_steps(cell, n, step):
    assert F.read_step_number(cell, WHERE, n) == step


@pytest.mark.parametrize("cell, n", [("0", 3), ("4", 3), ("-1", 3), ("+1", 3), ("2.0", 3), ("1e0", 3), ("²", 3),
                                     ("١", 3), ("9" * 5000, None), ("two", 3), ("1", 0), (2, 3), (2.0, 3),
                                     (True, 3), (None, 3), (float("nan"), 3)])
def test_a_step_number_is_refused_otherwise(cell, n):
    with pytest.raises(F.FieldError, match=r"^data\.jsonl line 7 \(field 'x'\): first_error_step"):
        F.read_step_number(cell, WHERE, n)


# -- text that shows nothing, ids that print alike, a letter that names two options ----------------------

# every character Unicode says shows nothing as text: white space, control and format characters (zero-width
# space and joiners, bidi marks and overrides, the BOM, tags), derived from the character database
INVISIBLE = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) in ("Cc", "Cf", "Zs", "Zl", "Zp")]
TEXT_KINDS = sorted(k for k, r in F.READERS.items() if "text" in r.accepts)


@settings(max_examples=300)
@given(kind=st.sampled_from(TEXT_KINDS), text=st.text(alphabet=st.sampled_from(INVISIBLE), min_size=1, max_size=6))
def test_text_of_only_invisible_characters_is_blank_in_every_text_reader(kind, text):
    """str.strip keeps U+200B, U+2060, U+FEFF, U+202E: a question or a gold of those is as empty as ""."""
    with pytest.raises(F.FieldError) as info:
        _call(F.READERS[kind], text)
    assert info.value.blank and str(info.value).startswith(WHERE), info.value


@given(kind=st.sampled_from(sorted(set(TEXT_KINDS) - {"id"})), pad=st.text(alphabet=st.sampled_from(INVISIBLE),
                                                                            max_size=4),
       visible=st.characters(exclude_categories=("Cc", "Cf", "Cs", "Zs", "Zl", "Zp", "Mn", "Me", "Co", "Cn"))
       .filter(lambda c: not F.invisible(c)))
def test_one_visible_character_makes_text_not_blank(kind, pad, visible):
    text = pad + visible + pad
    if kind.startswith("gold") and text.strip().lower() in F.MISSING_WORDS:
        return
    assert _call(F.READERS[kind], text) == text


@given(ch=st.sampled_from([c for c in INVISIBLE if unicodedata.category(c) in ("Cc", "Cf")]),
       at=st.integers(min_value=0, max_value=4))
def test_an_id_with_a_control_or_format_character_is_refused(ch, at):
    text = "gsm8k-12"[:at] + ch + "gsm8k-12"[at:]
    with pytest.raises(F.FieldError, match=f"U\\+{ord(ch):04X}"):
        F.read_id(text, WHERE)


@pytest.mark.parametrize("letter", list(F.CHOICE_LETTERS))
@pytest.mark.parametrize("first_upper", [True, False])
def test_an_option_letter_given_twice_in_any_case_is_refused(letter, first_upper):
    a, b = (letter, letter.lower()) if first_upper else (letter.lower(), letter)
    with pytest.raises(F.FieldError, match=f"letter '{letter}' names two options"):
        F.read_options({a: "4", b: "5"}, WHERE)


@settings(max_examples=120, deadline=None)
@given(kind=st.sampled_from(sorted(F.READERS)), n=st.integers(min_value=F.SHOWN_MAX, max_value=200_000),
       wrap=st.sampled_from(["text", "list", "key", "nested list"]), tail=st.sampled_from(["Z", "\x00", " "]))
def test_a_long_value_is_cut_in_every_readers_message(kind, n, wrap, tail):
    """Each reader's error shows the value it refuses by its start and length: a 200,000-character field
    (one per row, twenty rows listed) is not printed whole."""
    big = "Z" * n + tail
    value = {"text": big, "list": [big], "key": {big: "x"}, "nested list": [[big]]}[wrap]
    try:
        _call(F.READERS[kind], value)
    except F.FieldError as exc:
        assert len(str(exc)) <= len(WHERE) + 300, (kind, wrap, len(str(exc)))


@pytest.mark.parametrize("value", [decimal.Decimal("1.50"), 1 + 2j])
def test_a_number_that_is_no_float_is_refused_as_a_gold_by_its_type(value):
    with pytest.raises(F.FieldError, match=rf"is a {type(value).__name__}, not text, an integer or a float"):
        F.read_gold(value, WHERE)
