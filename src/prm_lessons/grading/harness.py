"""The Qwen2.5-Math evaluation harness's answer equivalence (``grading.grader: harness``), re-implemented.

Semantics followed: ``math_equal`` of ``evaluation/grader.py`` in QwenLM/Qwen2.5-Math at commit
a45202bd16f1ec06f433442dc1152d0074773465 (MIT), applied as that harness applies it (math_eval.py, then
evaluate.py): the prediction normalised by the harness's ``strip_string``
(:func:`prm_lessons.grading.answer_key.harness_key`, units kept for the benchmarks in ``KEEP_UNITS``)
twice, as the harness does (:func:`normalise_pred`), the gold once, twice or not at all by how the harness
reads it (:func:`normalise_gold`), then compared. Written for this project from a reading of
that file, not copied. In the harness's order, two answers are equal when

1. their stripped, lower-cased strings are equal, or the gold is a letter A–E and the prediction's last
   standalone letter A–E is that letter;
2. both read as numbers (commas dropped; a trailing ``%``/``\\%`` divides by 100): equal within relative
   tolerance 1e-4 to the gold, the gold / 100 or the gold × 100 (percentage variants). Two numbers that
   differ on all three are unequal, whatever follows;
3. an empty prediction equals nothing;
4. (a prediction holding a ``pmatrix`` against a gold without one: the gold's ``{a,b}`` groups are read as
   column vectors, and a gold without such a group becomes empty, as there)
   the two strings are equal once brackets are dropped (outer ``[]()`` when the prediction is bracketed and
   the gold is not bracketed the other way, then every ``{}()``);
5. both start with ``(`` or ``[`` and close: a tuple or interval, split on commas, equal element-wise with
   the same count (the bracket kinds are not compared: ``[1,2)`` equals ``(1,2]``, as there);
6. both are ``pmatrix``/``bmatrix`` environments: equal entry by entry (rows on ``\\\\``, entries on ``&``);
7. equations: both ``lhs = rhs`` → ``lhs - (rhs)`` symbolically equal up to sign; only one an equation with a
   left side of at most two characters (``x = 3``) → its right side against the other;
8. symbolic equality with SymPy (:func:`symbolic_equal`): equal strings or objects, ``a.equals(b)`` or
   ``simplify(a - b) == 0``, equal ``|lhs - rhs|`` for equations, numeric values within 1e-4, or matrices
   of the same shape equal after rounding entries to 3 places.

Parsing (step 8). The harness tries SymPy's ANTLR ``parse_latex`` (which needs antlr4 4.11), then
``parse_expr``, then its vendored ``latex2sympy2`` (grader.py:277-286); math-verify pins antlr4 4.13, so
SymPy's ANTLR parser cannot load beside it. Here :func:`to_sympy` tries ``latex2sympy2_extended`` (the
maintained fork of the same grammar, installed with math-verify) set to the bare grammar, then
``parse_expr``; a string that neither parses stays a string, as there. Aligned with ``parse_latex``'s
readings (measured against the harness's own code, bench/harness_agreement.py): a number written before a
factor is a product (``12\\frac{1}{2}`` is 6 there, not 12.5; that fork's mixed-number reading ignores its
own switch, so one branch of its converter is overridden), ``\\pi``, a bare ``e`` and ``I`` are plain
symbols (so ``3.14159`` ≠ ``\\pi`` and ``2.718281828`` ≠ ``e``, as there), a text with a comma outside
brackets is read up to that comma (``parse_latex`` stops there: ``\\frac{1}{2},3`` equals ``\\frac{1}{2},4``
there and here), a comma inside a group sends the text to ``parse_expr`` first (a tuple, as there), and a
union (``\\cup``), which none of the harness's parsers reads, stays a string (a reordered union is unequal,
as there).

Known remaining differences (listed in docs/measurements.md with the pairs that show them):
- an equation with a matrix side: latex2sympy2_extended reads ``[M] = H^{-1}`` as an equation and finds it
  equal to ``H^{-1} = [M]`` (step 7), while none of the harness's parsers reads an equation beside a
  bracketed matrix (its latex2sympy2 reads ``x = M`` as ``M`` alone), so there the verdict rests on the
  strings: unequal (bench/harness_agreement.py: 1 perturbed pair of 553, 1 edge pair of 63);
- readings of strings the two parsers read differently but where no pair of the comparison changed a
  verdict: ``parse_latex`` reads ``\\boxed{5}``, ``\\mathbb{R}`` or ``\\text{yes}`` as products of letters,
  latex2sympy2_extended as 5, a symbol, a text; a text with both a bare ``e`` and ``\\exp``/``\\ln``/``\\log``
  keeps Euler's number here (a symbol there);
- speed: SymPy 1.14 here against the harness's 1.12, so a comparison close to the 3 s limit can time out on
  one side only (2 of 553 perturbed pairs take 1.5-3.7 s on either side).

No timeout here: every comparison runs in a grading worker (prm_lessons.grading.pool) killed after
``grading.timeout_s``, as the harness runs each comparison in a pebble process with a 3 s timeout
(evaluate.py:37; config/paper.yaml sets ``timeout_s: 3``); a comparison that times out counts as unequal
there and here (both limits cover ``math_equal`` alone).
"""
from __future__ import annotations

import functools
import math
import re

from .answer_key import harness_key

CHOICE_LETTERS = ("A", "B", "C", "D", "E")
REL_TOL = 1e-4  # grader.py numeric_equal
_LETTER_RE = re.compile(r"\b(A|B|C|D|E)\b")
_BRACKETED_RE = re.compile(r"(\(|\[).+(\)|\])")  # re.match: anchored at the start only, as there
_BRACE_GROUP_RE = re.compile(r"\{.*,.*\}")
_MATRIX_OPEN = ("\\begin{pmatrix}", "\\begin{bmatrix}")
_MATRIX_CLOSE = ("\\end{pmatrix}", "\\end{bmatrix}")


def read_number(text) -> float | None:
    """The answer as a number (grader.py ``parse_digits``): commas dropped, then ``float``; failing that a
    trailing ``%`` (or ``\\%``) reads as a percentage (/100). None when it is not a number."""
    s = str(text).replace(",", "")
    try:
        return float(s)
    except ValueError:
        pass
    if s.endswith("%"):
        s = s[:-1].removesuffix("\\")
        try:
            return float(s) / 100
        except ValueError:
            return None
    return None


def numbers_close(pred: float, gold: float) -> bool:
    return math.isclose(gold, pred, rel_tol=REL_TOL)


def last_choice_letter(pred: str) -> str:
    """grader.py's own choice cleaning: the last standalone A–E of the (upper-cased) answer, else the answer."""
    s = pred.strip("\n").rstrip(".").rstrip("/").strip(" ").lstrip(":")
    letters = _LETTER_RE.findall(s.upper())
    s = letters[-1] if letters else s.strip().strip(".")
    return s.rstrip(".").rstrip("/")


def _braces_as_columns(gold: str) -> str:
    """``{1,2}`` groups of a gold → ``\\begin{pmatrix}1\\2\\end{pmatrix}``, comma-joined (grader.py
    ``str_to_pmatrix``; its single-backslash row separator is kept, and no group gives "")."""
    groups = _BRACE_GROUP_RE.findall(gold.strip())
    return ", ".join("\\begin{pmatrix}" + g.strip("{}").replace(",", "\\") + "\\end{pmatrix}" for g in groups)


def _matrix_rows(s: str) -> list[list[str]]:
    body = s[len(_MATRIX_OPEN[0]):-len(_MATRIX_CLOSE[0])]  # both environments' markers have these lengths
    return [line.strip().split("&") for line in body.split("\\\\") if line.strip()]


def _is_matrix(s: str) -> bool:
    return s.startswith(_MATRIX_OPEN) and s.endswith(_MATRIX_CLOSE)


def _all_equal(preds: list[str], golds: list[str]) -> bool:
    return len(preds) == len(golds) and all(math_equal(p, g) for p, g in zip(preds, golds))


def math_equal(pred, gold) -> bool:
    """Whether the harness counts answer ``pred`` equal to gold ``gold`` (both already normalised as the
    harness normalises them: :func:`normalise`). The steps are the module docstring's."""
    if pred is None or gold is None:
        return False
    pred, gold = str(pred), str(gold)
    if pred.strip().lower() == gold.strip().lower():
        return True
    if gold in CHOICE_LETTERS and last_choice_letter(pred) == gold:
        return True
    p_num, g_num = read_number(pred), read_number(gold)
    if p_num is not None and g_num is not None:
        return any(numbers_close(p_num, g) for g in (g_num / 100, g_num, g_num * 100))
    if not pred:
        return False
    pred, gold = pred.strip(), gold.strip()
    if "pmatrix" in pred and "pmatrix" not in gold:
        gold = _braces_as_columns(gold)
    p, g = pred, gold
    if (pred.startswith("[") and pred.endswith("]") and not gold.startswith("(")) or \
            (pred.startswith("(") and pred.endswith(")") and not gold.startswith("[")):
        p, g = p.strip("[]()"), g.strip("[]()")
    p, g = re.sub(r"[{}()]", "", p), re.sub(r"[{}()]", "", g)
    if p.lower() == g.lower():
        return True
    if _BRACKETED_RE.match(pred) and _BRACKETED_RE.match(gold) \
            and _all_equal(pred[1:-1].split(","), gold[1:-1].split(",")):
        return True
    if _is_matrix(pred) and _is_matrix(gold):
        p_rows, g_rows = _matrix_rows(pred), _matrix_rows(gold)
        if len(p_rows) == len(g_rows) and all(_all_equal(pr, gr) for pr, gr in zip(p_rows, g_rows)):
            return True
    if pred.count("=") == 1 and gold.count("=") == 1:
        p_zero, g_zero = (" - (".join(x.strip() for x in s.split("=")) + ")" for s in (pred, gold))
        if symbolic_equal(p_zero, g_zero) or symbolic_equal(f"-({p_zero})", g_zero):
            return True
    elif pred.count("=") == 1 and len(pred.split("=")[0].strip()) <= 2 and "=" not in gold:
        if math_equal(pred.split("=")[1], gold):
            return True
    elif gold.count("=") == 1 and len(gold.split("=")[0].strip()) <= 2 and "=" not in pred:
        if math_equal(pred, gold.split("=")[1]):
            return True
    return symbolic_equal(pred, gold)


_HARNESS_FAILS = ("\\cup",)  # SymPy's parse_latex, parse_expr and the harness's latex2sympy2 all raise on these
_LOG_OR_EXP = ("\\exp", "\\ln", "\\log")  # where the harness's reading is Euler's number too


@functools.cache
def _product_converter_class():
    """latex2sympy2_extended's converter with a number written before a factor read as a product, as SymPy's
    ``parse_latex`` reads it (``12\\frac{1}{2}`` → 6, ``2(3)`` → 6). Version 1.11 applies its mixed-number
    reading (12 + 1/2) to every integer followed by a positive rational whatever ``interpret_as_mixed_fractions``
    says, so that one branch is overridden here, in a subclass used by this module only (math-verify keeps
    the library's own)."""
    from latex2sympy2_extended.latex2sympy2 import ConversionConfig, _Latex2Sympy  # lazy: heavy (SymPy, ANTLR)

    class _AsProduct(_Latex2Sympy):
        def convert_postfix_list(self, arr, i=0):
            if i < len(arr) - 1 and arr[i].getText().isdigit():  # an integer literal, then more factors
                res, rh = self.convert_postfix(arr[i]), self.convert_postfix_list(arr, i + 1)
                return self.mat_mul_flat(res, rh) if getattr(rh, "is_Matrix", False) else self.mul_flat(res, rh)
            return super().convert_postfix_list(arr, i)

    return _AsProduct, ConversionConfig


def _as_harness_symbols(expr, text: str):
    """The constants SymPy's ``parse_latex`` (the harness's first parser) reads as plain symbols: ``\\pi`` →
    Symbol('pi') (so 3.14159 ≠ π there), a bare ``e`` → Symbol('e') (unless the text holds ``\\exp``/``\\ln``/
    ``\\log``, which it reads with Euler's number), ``I`` → Symbol('I') (not the imaginary unit)."""
    from sympy import E, I, Symbol, exp, pi  # lazy: heavy

    if not hasattr(expr, "xreplace"):
        return expr
    swap = {pi: Symbol("pi"), I: Symbol("I")}
    bare_e = not any(f in text for f in _LOG_OR_EXP)
    if bare_e:
        swap[E] = Symbol("e")
    try:
        expr = expr.xreplace(swap)
        return expr.replace(exp, lambda x: Symbol("e") ** x) if bare_e else expr  # e^{2}: a power of e there
    except Exception:  # noqa: BLE001 - an object SymPy cannot rebuild: keep it as parsed
        return expr


def _head_before_comma(text: str) -> str | None:
    """The text before its first comma outside any bracket, None without one. SymPy's ``parse_latex`` reads
    the longest leading expression and ignores the rest, so there ``3,5`` is 3 and ``-3,0dollars`` is -3,
    while a comma inside a group (``(2,3)``, ``[1,3]``) fails there, and ``parse_expr`` reads a tuple."""
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            return text[:i]
    return None


def to_sympy(text: str):
    """``text`` as a SymPy object, read in the harness's order (grader.py:277-286: ``parse_latex``, then
    ``parse_expr``, then its latex2sympy2; each parser on the text with ``\\\\`` read as ``\\`` first, then as
    it is): latex2sympy2_extended on the text, or on its part before a top-level comma where ``parse_latex``
    stops there (:func:`_head_before_comma`; not at all with a comma inside a group), then ``parse_expr``,
    then latex2sympy2_extended on the whole text; the text itself when none parses, or when it holds a
    construct none of the harness's parsers reads (``\\cup``)."""
    from latex2sympy2_extended import NormalizationConfig  # lazy: heavy (SymPy, ANTLR)
    from latex2sympy2_extended.math_normalization import normalize_latex  # lazy: heavy
    from sympy.parsing.sympy_parser import parse_expr  # lazy: heavy (SymPy)

    if any(c in text for c in _HARNESS_FAILS):
        return text
    # the bare grammar, as the harness's parsers read LaTeX: no clean-up of the string (strip_string did it)
    raw = NormalizationConfig(basic_latex=False, units=False, malformed_operators=False, nits=False,
                              boxed="none", equations=False)
    cls, config = _product_converter_class()

    def latex(s: str):
        # letters kept in their case, as parse_latex keeps them (one converter per text, as latex2sympy makes)
        converter = cls(config=config(interpret_as_mixed_fractions=False, lowercase_symbols=False))
        return _as_harness_symbols(converter.parse(normalize_latex(s, raw)), s)

    def latex_head(s: str):  # parse_latex: the part before a top-level comma; a comma in a group fails there
        head = _head_before_comma(s)
        if "," in (s if head is None else head):
            raise ValueError("parse_latex reads no comma inside a group")
        return latex(s if head is None else head)

    for parse in (latex_head, parse_expr, latex):
        for candidate in (text.replace("\\\\", "\\"), text):
            try:
                return parse(candidate)
            except Exception:  # noqa: BLE001 - any parser failure: try the next reading, as the harness does
                continue
    return text


def symbolic_equal(a: str, b: str) -> bool:
    """grader.py ``symbolic_equal``: the first of its tests that holds (module docstring, step 8); every
    test that raises counts as not holding."""
    from sympy import N, simplify  # lazy: heavy

    x, y = to_sympy(a), to_sympy(b)
    tests = (
        lambda: str(x) == str(y) or x == y,
        lambda: x.equals(y) or simplify(x - y) == 0,
        lambda: abs(x.lhs - x.rhs).equals(abs(y.lhs - y.rhs)),
        lambda: numbers_close(float(N(x)), float(N(y))),
        lambda: x.shape == y.shape and x.applyfunc(lambda v: round(v, 3)).equals(y.applyfunc(lambda v: round(v, 3))),
    )
    for test in tests:
        try:
            if test():
                return True
        except Exception:  # noqa: BLE001 - SymPy raises many kinds on mismatched objects: not equal, as there
            continue
    return False


def normalise(answer, keep_units: bool = False) -> str:
    """One pass of the harness's ``strip_string`` (parser.py:212-350) over an answer (``keep_units``: the
    benchmarks it strips with ``skip_unit``, answer_key.KEEP_UNITS). ``strip_string`` is not idempotent
    (``x \\in [1,3]``, nested ``\\text{}``, ``(-\\infty, \\infty)`` change again on a second pass), so how many
    passes an answer gets matters: :func:`normalise_pred`, :func:`normalise_gold`."""
    return harness_key(answer, skip_unit=keep_units)


def normalise_pred(pred, keep_units: bool = False) -> str:
    """An extracted answer as the harness hands it to ``math_equal``: ``strip_string`` twice, once inside
    ``extract_answer`` (parser.py:568) and again in ``run_execute`` (parser.py:736), both with the units kept
    for ``keep_units`` (its STRIP_EXCEPTIONS, parser.py:572)."""
    return normalise(normalise(pred, keep_units), keep_units)


def normalise_gold(gold, answer_format: str = "plain", keep_units: bool = False) -> str:
    """A gold answer as the harness hands it to ``math_equal`` (``evaluate.py:30`` parses the gold again over
    the one ``math_eval.py:179`` parsed at load, parser.py:575-651):

    * ``answer_format: boxed`` (math, minerva_math: the gold is the last ``\\boxed{}`` of a solution):
      ``strip_string`` once, inside ``extract_answer`` (the re-parse extracts it from the solution again,
      parser.py:577-578);
    * a set whose answers keep their units and are not extracted (carp_en): no pass, only
      ``\\neq``/``\\leq``/``\\geq`` shortened (parser.py:646-650, kept as is by the re-parse, :579-580);
    * every other set: ``strip_string`` twice, at load (parser.py:644) and in the re-parse (:581-582)."""
    if answer_format == "boxed":
        return normalise(gold, keep_units)
    if keep_units:
        return str(gold).replace("\\neq", "\\ne").replace("\\leq", "\\le").replace("\\geq", "\\ge")
    return normalise(normalise(gold))
