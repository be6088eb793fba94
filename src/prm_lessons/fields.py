"""The checked readers of input fields: one function per kind of field (question, steps, gold answer,
choice gold and its options, id, ProcessBench error index and answer flag, step labels, a plain text, and
the two label cells of an annotation sheet: a yes/no mark and a 1-based step number) that every loader
and exporter calls. Each checks type and meaning and never casts: a step or a question is text (an object
or a number is not stringified, null is not "None"), a text is never decoded ("[0,1]" stays that text), a
list-valued gold only where the caller's field says so, a choice gold among the options. A bad value raises
:class:`FieldError` naming ``where`` (the caller's row and field; the loader adds its file).

Every reader is registered in :data:`READERS` with the value shapes it takes; tests/test_fields.py feeds
each shape (object, number, null, bool, bracketed text, …) to every registered reader, so a reader added
without the checks fails there, and tests/test_fields_loaders.py feeds them to every field of every
loader and exporter.
"""
from __future__ import annotations

import math
import numbers
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Callable

from .errors import as_bool01, as_int, is_bool, json_type

# how pandas, Python and JSON exports write a missing value as text; no benchmark's gold is one of these
MISSING_WORDS = ("nan", "none", "null")
CHOICE_LETTERS = "ABCDEFGHIJ"


class FieldError(ValueError):
    """A field value its kind does not take; the message names where. `blank`: the value is of the right type
    but empty (a caller may count or drop those apart from wrong types)."""

    def __init__(self, where: str, why: str, blank: bool = False):
        super().__init__(f"{where}: {why}" if where else why)
        self.blank = blank


@dataclass(frozen=True)
class Reader:
    """A registered reader: `read(value, where, **context)`; `accepts` names the shapes of
    tests/support/field_shapes.py that it reads as valid (the rest must raise FieldError), and
    `items` those it takes as an element of a list-valued field. `parses`: the reader takes the text a
    spreadsheet writes and returns what it means (a mark's truth value, a step's number), not the text."""

    read: Callable
    accepts: frozenset
    items: frozenset = frozenset()
    context: dict = field(default_factory=dict)
    parses: bool = False


READERS: dict[str, Reader] = {}


def _register(kind: str, accepts: set, items: set = frozenset(), parses: bool = False, **context):
    def deco(fn):
        READERS[kind] = Reader(fn, frozenset(accepts), frozenset(items), context, parses)
        return fn
    return deco


SHOWN_MAX = 60  # characters of a value a message shows: a 100,000-character field is not printed whole


def _shown(value) -> str:
    """A value as a message shows it: its repr, cut to SHOWN_MAX characters with its length after."""
    text = repr(value.tolist() if type(value).__name__ == "ndarray" else value)
    return text if len(text) <= SHOWN_MAX else f"{text[:SHOWN_MAX - 20]}…({len(text):,} characters)"


def _listlike(value) -> list | None:
    """A JSON array, tuple or numpy/arrow array (a parquet list column) as a list; None for anything else
    (a string is never a list, whatever it looks like)."""
    if isinstance(value, (list, tuple)):
        return list(value)
    if type(value).__name__ == "ndarray":
        return list(value.tolist())
    return None


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


# Characters that show nothing, beyond what str.strip removes: format characters (zero-width space and
# joiners, bidi marks and overrides, the BOM, word joiner, tags), control characters, and the letters
# Unicode lists as default-ignorable (Hangul fillers, the combining grapheme joiner, variation selectors)
_INVISIBLE_CATEGORIES = ("Cc", "Cf", "Zs", "Zl", "Zp")
_INVISIBLE_LETTERS = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u3164\uffa0"
                               + "".join(map(chr, range(0x180B, 0x1810))) + "".join(map(chr, range(0xFE00, 0xFE10)))
                               + "".join(map(chr, range(0xE0100, 0xE01F0))))


def invisible(ch: str) -> bool:
    """Whether one character shows nothing (whitespace, a format or control character, a filler)."""
    return ch.isspace() or ch in _INVISIBLE_LETTERS or unicodedata.category(ch) in _INVISIBLE_CATEGORIES


def blank_text(text: str) -> bool:
    """Whether a text shows nothing: empty, or only invisible characters ("\\u200b" is as empty as "")."""
    head = text.strip()
    if head and not invisible(head[0]):  # the common case: one look
        return False
    return all(map(invisible, head))


def _text(value, where: str, what: str) -> str:
    if _missing(value):
        raise FieldError(where, f"{what} is null")
    if not isinstance(value, str):
        raise FieldError(where, f"{what} is a JSON {json_type(value)}, not a string")
    if blank_text(value):
        raise FieldError(where, f"empty {what}" + (" (only invisible characters)" if value.strip() else ""),
                         blank=True)
    return str(value)


@_register("text", {"text", "bracketed_text"})
@_register("optional_text", {"text", "bracketed_text", "null", "nan"}, optional=True)
def read_text(value, where: str, what: str = "text", optional: bool = False) -> str | None:
    """A text field that is neither a question nor a step (Math-Shepherd's `input` and `label`): non-blank
    text, as given. `optional`: null (or NaN, a parquet column's missing value) is absent and read as None;
    any other value that is not text is refused all the same (a number is never a text's absence)."""
    if optional and _missing(value):
        return None
    return _text(value, where, what)


@_register("question", {"text", "bracketed_text"})
def read_question(value, where: str, what: str = "question") -> str:
    """A question (problem, prompt): non-blank text, as given."""
    return _text(value, where, what)


@_register("steps", {"list"}, items={"text", "bracketed_text"})
def read_steps(value, where: str, what: str = "steps", blank: str = "error", empty_ok: bool = False) -> list[str]:
    """Steps: a list (a JSON array or a parquet list) of texts, kept as given. `blank`: error (a blank step
    is an error) or drop (blank steps left out, as a worked solution's blank paragraphs). An empty list is
    an error unless `empty_ok` (a TRL row without completions is counted, not refused)."""
    drop = blank == "drop"
    steps = _listlike(value)
    if steps is None:
        if _missing(value):
            raise FieldError(where, f"{what} is null")
        raise FieldError(where, f"{what} is a JSON {json_type(value)}, not a list of strings")
    out = []
    for k, s in enumerate(steps):
        if drop and isinstance(s, str) and blank_text(s):
            continue
        out.append(read_step(s, where, f"{what}[{k}]"))
    if not out and not empty_ok:
        raise FieldError(where, f"empty {what}", blank=True)
    return out


@_register("step", {"text", "bracketed_text"})
def read_step(value, where: str, what: str = "step") -> str:
    """One step: non-blank text, as given."""
    return _text(value, where, what)


def _gold_scalar(value, where: str, what: str):
    if _missing(value):
        raise FieldError(where, f"{what} is null")
    if is_bool(value):
        raise FieldError(where, f"{what} {_shown(value)} is a boolean, not an answer")
    if isinstance(value, numbers.Real):
        if not math.isfinite(float(value)):
            raise FieldError(where, f"{what} {_shown(value)} is not a finite number")
        return value
    if isinstance(value, str):
        if blank_text(value):
            raise FieldError(where, f"{what} is blank", blank=True)
        if value.strip().lower() in MISSING_WORDS:
            raise FieldError(where, f"{what} {_shown(value)} is what a missing value is written as, not an answer")
        return value
    if isinstance(value, numbers.Number):  # a parquet decimal column's Decimal, a complex: not a float's value
        raise FieldError(where, f"{what} {_shown(value)} is a {type(value).__name__}, not text, an integer or a "
                                "float (write the column as text to keep its digits)")
    raise FieldError(where, f"{what} is a JSON {json_type(value)}, not an answer (text or a number)")


@_register("gold", {"text", "bracketed_text", "integer", "fraction"})
@_register("gold_list", {"text", "bracketed_text", "integer", "fraction", "list"},
           items={"text", "bracketed_text", "integer", "fraction"}, list_ok=True)
def read_gold(value, where: str, what: str = "gold answer", list_ok: bool = False):
    """A gold answer: text (never decoded: "[0,1]" is the interval, not a list) or a finite number; a
    non-empty list of those only with `list_ok` (a field that says it holds a list, OlympiadBench's
    final_answer). Returned as given (a list as a list)."""
    items = _listlike(value)
    if items is None:
        return _gold_scalar(value, where, what)
    if not list_ok:
        raise FieldError(where, f"{what} is a JSON array; this field holds one answer (a list only where the "
                                "dataset's fields.answer_list says so)")
    if not items:
        raise FieldError(where, f"{what} is an empty list", blank=True)
    return [_gold_scalar(v, where, f"{what}[{k}]") for k, v in enumerate(items)]


@_register("options", {"list"}, items={"text", "bracketed_text", "integer", "fraction"})
def read_options(value, where: str, what: str = "options"):
    """Answer options: a list of texts or numbers (lettered A, B, …), or an object letter -> text; at most
    ten, none blank."""
    if isinstance(value, dict):
        pairs = list(value.items())
        bad = [k for k, _ in pairs if not (isinstance(k, str) and len(k) == 1 and k.upper() in CHOICE_LETTERS)]
        if bad:
            raise FieldError(where, f"{what}: key {_shown(bad[0])} is not an option letter A-J")
        twice = [k for i, (k, _) in enumerate(pairs) if k.upper() in (j.upper() for j, _ in pairs[:i])]
        if twice:  # 'a' and 'A': a gold 'A' would name two options
            raise FieldError(where, f"{what}: letter {twice[0].upper()!r} names two options (letters are read in "
                                    "any case)")
        items = [v for _, v in pairs]
    else:
        items = _listlike(value)
        if items is None:
            if _missing(value):
                raise FieldError(where, f"{what} is null")
            raise FieldError(where, f"{what} is a JSON {json_type(value)}, not a list of options")
    if not 1 <= len(items) <= len(CHOICE_LETTERS):
        raise FieldError(where, f"{what}: {len(items)} options (1 to {len(CHOICE_LETTERS)})")
    for k, v in enumerate(items):
        if is_bool(v) or not isinstance(v, (str, numbers.Real)) or (isinstance(v, float) and not math.isfinite(v)):
            raise FieldError(where, f"{what}[{k}] is a JSON {json_type(v)}, not text or a number")
        if isinstance(v, str) and blank_text(v):
            raise FieldError(where, f"{what}[{k}] is blank", blank=True)
    return dict(value) if isinstance(value, dict) else items


def option_letters(options) -> list[str]:
    return [k.upper() for k in options] if isinstance(options, dict) else list(CHOICE_LETTERS[:len(options)])


@_register("choice_gold", {"integer"}, options=["a", "b", "c", "d", "e"])
def read_choice_gold(value, options, where: str, what: str = "gold answer") -> str:
    """A multiple-choice gold as its letter: an option's 0-based index (an integer) or its letter (any case),
    among the options read by :func:`read_options`."""
    letters = option_letters(options)
    if isinstance(value, str) and value.strip().upper() in letters:
        return value.strip().upper()
    index = None if is_bool(value) else as_int(value)
    if index is not None and 0 <= index < len(letters):
        return letters[index]
    if index is not None or isinstance(value, str):
        raise FieldError(where, f"{what} {_shown(value)} is not one of the options ({', '.join(letters)}, or an "
                                f"index 0-{len(letters) - 1})")
    raise FieldError(where, f"{what} is a JSON {json_type(value)}, not an option's letter or index")


def id_text_problem(text: str) -> str | None:
    """Why a text cannot be an id (None when it can): it shows nothing, or it holds a control or format
    character (a NUL, a bidi override, a zero-width space: two ids that print alike, or a message that
    prints reordered)."""
    if blank_text(text):
        return "is empty" + (" (only invisible characters)" if text.strip() else "")
    bad = next((ch for ch in text if unicodedata.category(ch) in ("Cc", "Cf")), None)
    return None if bad is None else f"holds the control or format character U+{ord(bad):04X}"


@_register("id", {"text", "bracketed_text", "integer"})
def read_id(value, where: str, what: str = "id") -> str:
    """An id: non-blank text without control or format characters (a NUL, a bidi override, a zero-width
    space would make two ids that print alike, or a message that prints reordered), or an integer (an
    integral float from a parquet column too) written as one."""
    if isinstance(value, str):
        text = _text(value, where, what)
        why = id_text_problem(text)
        if why:
            raise FieldError(where, f"{what} {_shown(text)} {why}")
        return text
    n = None if is_bool(value) else as_int(value)
    if n is None:
        raise FieldError(where, f"{what} {_shown(value)} is a JSON {json_type(value)}, not a string or an integer")
    return str(n)


@_register("error_index", {"integer"}, n_steps=5)
def read_error_index(value, where: str, n_steps: int | None = None, what: str = "label") -> int:
    """A ProcessBench label: the 0-based index of the first wrong step, or -1 (none); an integer (an
    integral float from a parquet column too) in -1..n_steps-1, never a cast of 1.7, "2" or true."""
    n = None if is_bool(value) else as_int(value)
    if n is None:
        kind = "a boolean" if is_bool(value) else "" if isinstance(value, numbers.Real) else \
            f"a JSON {json_type(value)}"
        raise FieldError(where, f"{what} {_shown(value)} is {kind + ', ' if kind else ''}not an integer")
    if n_steps is not None and not -1 <= n < n_steps:
        raise FieldError(where, f"{what} {n} outside -1..{n_steps - 1}")
    return n


@_register("flag", {"bool", "integer"})  # the integer shape is 1
def read_flag(value, where: str, what: str = "final_answer_correct") -> bool:
    """A truth value: a boolean, or 0/1 (bool("False") would be True)."""
    flag = as_bool01(value)
    if flag is None:
        raise FieldError(where, f"{what} {_shown(value)} is a JSON {json_type(value)}, not a boolean")
    return flag


@_register("step_flags", {"list"}, items={"bool"})
def read_step_flags(value, where: str, what: str = "labels") -> list[bool]:
    """Per-step truth values (TRL's stepwise `labels`): a list of booleans only (0/1 and "true" are not)."""
    items = _listlike(value)
    if items is None:
        raise FieldError(where, f"{what} is a JSON {json_type(value)}, not a list of booleans")
    bad = [k for k, v in enumerate(items) if not is_bool(v)]
    if bad:
        raise FieldError(where, f"{what}[{bad[0]}] is {_shown(items[bad[0]])}, not a boolean")
    return [bool(v) for v in items]


@_register("step_labels", {"list"}, items={"integer", "fraction"})
def read_step_labels(value, where: str, what: str = "labels") -> list[float]:
    """Per-step labels of a training set: a list of finite numbers in [0, 1] (a hard label 0/1 or a soft
    one); a string or a boolean is not cast."""
    items = _listlike(value)
    if items is None:
        raise FieldError(where, f"{what} is a JSON {json_type(value)}, not a list of numbers")
    out = []
    for k, v in enumerate(items):
        if is_bool(v) or not isinstance(v, numbers.Real) or not math.isfinite(float(v)) or not 0 <= v <= 1:
            raise FieldError(where, f"{what}[{k}] is {_shown(v)}, not a number in [0, 1]")
        out.append(float(v))
    return out


# -- the cells of an annotation sheet: a CSV read as text (every cell a string; an empty cell is "") --------
YES_MARKS = frozenset({"yes", "y", "1", "true"})
NO_MARKS = frozenset({"no", "n", "0", "false"})
_STEP_NUMBER = re.compile(r"[0-9]+")  # ASCII digits: str.isdigit() also takes "²", which int() refuses


def _cell(value, where: str, what: str) -> str:
    if not isinstance(value, str):  # a sheet read as text has no other value: never cast one
        kind = "null" if _missing(value) else f"a JSON {json_type(value)}"
        raise FieldError(where, f"{what} is {kind}, not the text of a spreadsheet cell")
    return value.strip()


@_register("mark", {"blank"}, parses=True)
def read_mark(value, where: str, what: str = "process_flawed") -> bool | None:
    """A yes/no cell as a spreadsheet writes it: yes, y, 1 or true -> True; no, n, 0 or false -> False (any
    case, spaces around ignored); a blank cell -> None (not filled in). Only text: 1, True or null are not
    cells of a sheet read as text and are refused, not cast."""
    mark = _cell(value, where, what).lower()
    if not mark:
        return None
    if mark in YES_MARKS:
        return True
    if mark in NO_MARKS:
        return False
    raise FieldError(where, f"{what} {_shown(value)}, expected yes or no (blank: unlabelled)")


@_register("step_number", {"blank"}, parses=True, n_steps=5)
def read_step_number(value, where: str, n_steps: int | None = None, what: str = "first_error_step") -> int | None:
    """A 1-based step number cell as a spreadsheet writes it: ASCII digits naming a step 1..n_steps (spaces
    around ignored), or a blank cell -> None. "2.0", "-1", "²" and a number that is not a cell's text are
    refused, not cast."""
    step = _cell(value, where, what)
    if not step:
        return None
    # at most 18 digits: int() refuses a text of over 4300 digits with its own ValueError
    n = int(step) if _STEP_NUMBER.fullmatch(step) and len(step) <= 18 else None
    if n is None or n < 1 or (n_steps is not None and n > n_steps):
        upper = "" if n_steps is None else f"..{n_steps}"
        raise FieldError(where, f"{what} {_shown(step)}, expected a step number 1{upper}")
    return n
