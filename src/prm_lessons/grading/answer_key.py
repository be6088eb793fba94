"""The Qwen2.5-Math harness's answer normalisation, as maj@N groups answers (`bon.maj_grouping: harness`).

The harness (QwenLM/Qwen2.5-Math a45202b, evaluation/parser.py `strip_string`, rm_maj_eval.py) groups
the extracted answers of a problem by their normalised string, and an empty answer is a vote like any
other. This module re-implements that normalisation step by step from a reading of parser.py (it is not
packaged anywhere we could import it from); `grading.strip_answer` is the lighter subset used to compare
an answer with its gold, where math-verify does the rest.

The order of the steps matters and follows parser.py: e.g. unit words are removed before `\\text{}` is
unwrapped, and "a/b" becomes "\\frac{a}{b}" only at the end.
"""
from __future__ import annotations

import re

from word2number import w2n  # what the harness uses for "five" → "5"

# Unit words the harness removes as whole words (its `unit_texts`, "mainly from MathQA"), plural forms
# added as it does. Data, not logic: this is the list as read in parser.py at a45202b. Single letters
# ("a", "t", "s", "m", ...) are on it, so e.g. "5 m" → "5 " and "a" alone stays (an empty result is
# never taken).
_UNITS = (
    "east", "degree", "mph", "kmph", "ft", "m sqaure", " m east", "sq m", "deg", "mile", "q .", "monkey",
    "prime", "ratio", "profit of rs", "rd", "o", "gm", "p . m", "lb", "tile", "per", "dm", "lt", "gain",
    "ab", "way", "west", "a .", "b .", "c .", "d .", "e .", "f .", "g .", "h .", "t", "a", "h", "no change",
    "men", "soldier", "pie", "bc", "excess", "st", "inches", "noon", "percent", "by", "gal", "kmh", "c",
    "acre", "rise", "a . m", "th", "π r 2", "sq", "mark", "l", "toy", "coin", "sq . m", "gallon", "° f",
    "profit", "minw", "yr", "women", "feet", "am", "pm", "hr", "cu cm", "square", "v â € ™", "are", "rupee",
    "rounds", "cubic", "cc", "mtr", "s", "ohm", "number", "kmph", "day", "hour", "minute", "min", "second",
    "man", "woman", "sec", "cube", "mt", "sq inch", "mp", "∏ cm ³", "hectare", "more", "sec", "unit",
    "cu . m", "cm 2", "rs .", "rs", "kg", "g", "month", "km", "m", "cm", "mm", "apple", "liter", "loss",
    "yard", "pure", "year", "increase", "decrease", "d", "less", "Surface", "litre", "pi sq m", "s .",
    "metre", "meter", "inch",
)
# the unit is spliced into the pattern unescaped, as parser.py does ("q ." matches "q" + any character)
_UNIT_RES = [re.compile(r"(^|\W)" + u + r"($|\W)") for u in (*_UNITS, *(u + "s" for u in _UNITS))]
# benchmarks whose answers keep their units (parser.extract_answer's skip_unit)
KEEP_UNITS = frozenset({"carp_en", "minerva_math"})


def _word_number(s: str) -> str:
    try:
        return str(w2n.word_to_num(s))
    except Exception:  # noqa: BLE001 - anything that is not a number phrase stays as it is
        return s


def _braces_for_fracs(s: str) -> str:
    r"""\frac12 → \frac{1}{2}, \frac1{72} → \frac{1}{72}; a \frac with fewer than two characters after it
    leaves the whole string unchanged."""
    head, *parts = s.split("\\frac")
    out = [head]
    for p in parts:
        if p.startswith("{"):
            out.append("\\frac" + p)
        elif len(p) < 2:
            return s
        elif p[1] == "{":
            out.append("\\frac{" + p[0] + "}" + p[1:])
        else:
            out.append("\\frac{" + p[0] + "}{" + p[1] + "}" + p[2:])
    return "".join(out)


def _int_slash_int(s: str) -> str:
    """'3/4' → '\\frac{3}{4}' when both sides are integers written canonically (sqrt sides allowed)."""
    parts = s.split("/")
    if len(parts) != 2:
        return s
    try:
        a, b = (p if "sqrt" in p else int(p) for p in parts)
    except ValueError:
        return s
    return f"\\frac{{{a}}}{{{b}}}" if s == f"{a}/{b}" else s


def harness_key(answer, skip_unit: bool = False) -> str:
    """The harness's normalised form of an extracted answer (None → "", an empty answer's vote)."""
    if answer is None or (isinstance(answer, float) and answer != answer):
        return ""
    s = str(answer).strip().replace("\n", "").rstrip(".").replace("\\!", "")
    s = re.sub(r"\\begin\{array\}\{.*?\}", r"\\begin{pmatrix}", s)
    s = s.replace("\\end{array}", "\\end{pmatrix}").replace("bmatrix", "pmatrix")
    s = s.replace("tfrac", "frac").replace("dfrac", "frac")
    s = s.replace("\\neq", "\\ne").replace("\\leq", "\\le").replace("\\geq", "\\ge")
    s = s.replace("\\left", "").replace("\\right", "").replace("\\{", "{").replace("\\}", "}")
    no_unit = re.sub(r"\\text{.*?}$", "", s).strip()
    if no_unit:
        s = no_unit
    if not skip_unit:
        for _ in range(2):
            for rx in _UNIT_RES:
                s = rx.sub(r"\1\2", s) or s
    s = s.replace("^{\\circ}", "").replace("^\\circ", "")
    s = s.replace("\\$", "").replace("$", "").replace("\\(", "").replace("\\)", "")
    s = _word_number(s)
    s = re.sub(r"\\text\{(.*?)\}", r"\1", s)
    for var in ("x=", "y=", "z=", "x\\in", "y\\in", "z\\in", "x\\to", "y\\to", "z\\to"):
        s = s.replace(var, "")
    s = s.replace("\\emptyset", "{}").replace("(-\\infty,\\infty)", "\\mathbb{R}")
    s = s.replace("\\%", "").replace("%", "")
    s = s.replace(" .", " 0.").replace("{.", "{0.")
    # (parser.py's bracket unwrapping here needs an alphanumeric string that starts with a bracket: never)
    s = s.replace("infinity", "\\infty")
    if "\\infty" not in s:
        s = s.replace("inf", "\\infty")
    s = s.replace("+\\inity", "\\infty").replace("and", "").replace("\\mathbf", "")
    s = re.sub(r"\\mbox{.*?}", "", s)
    if "j" in s and "i" not in s:
        s = s.replace("j", "i")
    s = re.sub(r"(\d+)\.0*([^\d])", r"\1\2", s)
    s = re.sub(r"(\d+)\.0*$", r"\1", s)
    if not s:
        return s
    if s[0] == ".":
        s = "0" + s
    if len(s.split("=")) == 2 and len(s.split("=")[0]) <= 2:
        s = s.split("=")[1]
    s = re.sub(r"\\sqrt(\w+)", r"\\sqrt{\1}", s).replace(" ", "")
    return _int_slash_int(_braces_for_fracs(s))
